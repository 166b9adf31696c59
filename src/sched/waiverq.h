/*
 * waiverq.h - Lesser Bear's Waiver Queue: a bounded single-producer single-consumer ring of
 * void * (header-only, standard C11 atomics only).
 *
 * Protocol
 *   In Lesser Bear (Oguma and Nakayama) each VP owns a Waiver Queue into which it gives away
 *   ready threads, and the VPs are linked in a ring: VP i pops from the queue of VP i-1.  Each
 *   queue has exactly one producer (its owner) and one consumer (the next VP), so neither side
 *   takes a lock or does a read-modify-write.
 *
 *   head and tail are free-running uint32 positions: slot of position p is buf[p & mask], the
 *   queue holds tail - head items (unsigned difference, correct across the wrap at UINT32_MAX).
 *   The producer writes buf[tail] and then publishes it with a release store of tail+1; the
 *   consumer reads buf[head] and then frees the slot with a release store of head+1.  Each side
 *   reads the other's position with an acquire load, and only when its cached copy (head_cache
 *   for the producer, tail_cache for the consumer) says full or empty, so while the ring is
 *   neither nearly full nor nearly empty the two sides do not touch each other's cache line.
 *
 * Invariants
 *   - 0 <= tail - head <= mask + 1 (capacity, a power of two, 2 <= capacity <= 2^31).
 *   - Slots of positions head .. tail-1 hold pushed, not yet popped items; the others are free.
 *   - head_cache lags head and tail_cache lags tail: both only make a side think the queue is
 *     fuller (producer) or emptier (consumer) than it is, never the reverse.
 *
 * Who may call what
 *   ursa__wq_push, and the batch (ursa__wq_room, _stage, _publish): the producer only (one
 *   thread at a time).  ursa__wq_pop: the consumer only.
 *   ursa__wq_len, ursa__wq_empty: any thread; a snapshot that may be stale when it returns.
 *   ursa__wq_init, ursa__wq_destroy: with no push or pop running.
 *   The struct should be 64-byte aligned (automatic and static storage are; memory from malloc
 *   needs aligned_alloc) for the layout to keep head and tail on separate cache lines.
 */
#ifndef URSA_SCHED_WAIVERQ_H
#define URSA_SCHED_WAIVERQ_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef URSA__CACHELINE
#define URSA__CACHELINE 64
#endif

struct ursa__wq {
  /* read-only after init: shared by both sides without coherence traffic */
  _Alignas(URSA__CACHELINE) void **buf;           /* mask + 1 slots */
  uint32_t mask;                                  /* capacity - 1 */
  /* the consumer's line */
  _Alignas(URSA__CACHELINE) _Atomic uint32_t head;    /* next position to pop; stored by it only */
  uint32_t tail_cache;                            /* consumer-private: the last tail it loaded */
  /* the producer's line */
  _Alignas(URSA__CACHELINE) _Atomic uint32_t tail;    /* next position to push; stored by it only */
  uint32_t head_cache;                            /* producer-private: the last head it loaded */
};

/* Sets up an empty queue of capacity rounded up to a power of two >= 2.  Returns 0, -EINVAL when
 * capacity > 2^31 (positions are uint32), or -ENOMEM.  Not concurrent with anything on q. */
static inline int ursa__wq_init(struct ursa__wq *q, uint32_t capacity) {
  uint32_t cap = 2;
  if (capacity > (UINT32_C(1) << 31)) return -EINVAL;
  while (cap < capacity) cap <<= 1;
#if SIZE_MAX <= UINT32_MAX                      /* 32-bit size_t: 2^31 slots do not fit */
  if (cap > SIZE_MAX / sizeof(void *)) return -ENOMEM;
#endif
  q->buf = (void **)malloc((size_t)cap * sizeof(void *));
  if (q->buf == NULL) return -ENOMEM;
  q->mask = cap - 1;
  atomic_init(&q->head, 0);
  atomic_init(&q->tail, 0);
  q->tail_cache = 0;
  q->head_cache = 0;
  return 0;
}

/* Frees the ring (items still in it are dropped).  Not concurrent with anything on q. */
static inline void ursa__wq_destroy(struct ursa__wq *q) {
  free(q->buf);
  q->buf = NULL;
}

/* Appends p (any value, NULL included, though pop cannot tell a NULL item from empty).
 * Returns false, changing nothing, when the queue is full.  Executed only by the producer. */
static inline bool ursa__wq_push(struct ursa__wq *q, void *p) {
  /* relaxed: tail is stored by this thread only */
  uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  if (t - q->head_cache > q->mask) {
    /* acquire: pairs with the release store of head in pop, so the consumer's read of the slot
     * we are about to reuse happens before our write to it */
    q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
    if (t - q->head_cache > q->mask) return false;
  }
  q->buf[t & q->mask] = p;
  /* release: publishes buf[t] to the consumer's acquire load of tail in pop (and len) */
  atomic_store_explicit(&q->tail, t + 1, memory_order_release);
  return true;
}

/* A batch: the producer stages items into free slots past the tail, which the consumer cannot
 * see, and publishes them with one release store of tail (ursa__wq_publish), so a batch of n
 * costs the consumer's cache line one transfer instead of n (the rotator passes runs of threads:
 * src/sched/policy.c, pass_on).  ursa__wq_room, ursa__wq_stage and ursa__wq_publish: executed
 * only by the producer, in that order, with no push in between.
 *
 * The free slots, at least `want` of them if the queue has that many: the cached head is loaded
 * afresh only when it shows fewer. */
static inline uint32_t ursa__wq_room(struct ursa__wq *q, uint32_t want) {
  /* relaxed: tail is stored by this thread only */
  uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint32_t room = q->mask + 1 - (t - q->head_cache);
  if (room < want) {
    /* acquire: as in push, pairs with pop's release store of head (the slots are free to reuse) */
    q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
    room = q->mask + 1 - (t - q->head_cache);
  }
  return room;
}

/* Writes p into the slot i places past the tail (i < the room ursa__wq_room returned); not
 * visible to the consumer until ursa__wq_publish. */
static inline void ursa__wq_stage(struct ursa__wq *q, uint32_t i, void *p) {
  uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);   /* (this thread's) */
  q->buf[(t + i) & q->mask] = p;
}

/* Makes the n items staged visible, in stage order. */
static inline void ursa__wq_publish(struct ursa__wq *q, uint32_t n) {
  uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  /* release: publishes buf[t .. t+n-1] to the consumer's acquire load of tail in pop (and len) */
  atomic_store_explicit(&q->tail, t + n, memory_order_release);
}

/* Removes and returns the oldest item, or NULL when the queue is empty.  Executed only by the
 * consumer. */
static inline void *ursa__wq_pop(struct ursa__wq *q) {
  void *p;
  /* relaxed: head is stored by this thread only */
  uint32_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (h == q->tail_cache) {
    /* acquire: pairs with the release store of tail in push, so buf[h] as written by the
     * producer is visible below */
    q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
    if (h == q->tail_cache) return NULL;
  }
  p = q->buf[h & q->mask];
  /* release: orders the read of buf[h] before the producer's acquire load of head in push,
   * which then may overwrite the slot */
  atomic_store_explicit(&q->head, h + 1, memory_order_release);
  return p;
}

/* The number of items, clamped to [0, capacity].  Any thread; a snapshot, stale at once. */
static inline uint32_t ursa__wq_len(const struct ursa__wq *q) {
  /* acquire: pairs with the release store of head in pop.  The consumer had loaded a tail >= h
   * before storing h, so that tail store happens before this load and the load of tail below
   * (read-read coherence) returns it or a later one: t - h never goes negative. */
  uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  /* relaxed: only a count is wanted, no slot is read (ordering argued above) */
  uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint32_t n = t - h;
  /* between the two loads the consumer may pop and the producer refill: clamp */
  return n > q->mask + 1 ? q->mask + 1 : n;
}

/* Whether the queue holds no item.  Any thread; a snapshot. */
static inline bool ursa__wq_empty(const struct ursa__wq *q) {
  /* wq_len == 0 without its clamp, which never turns a count that is not 0 into 0 (the same two
   * loads, the same ordering) */
  uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
  return atomic_load_explicit(&q->tail, memory_order_relaxed) == h;
}

#endif
