/*
 * deque.h - a Chase-Lev work-stealing deque of void * with a fixed power-of-two capacity
 * (header-only, standard C11 atomics only).
 *
 * Protocol
 *   The algorithm of Chase and Lev (SPAA 2005) in the C11 formulation of Le, Pop, Cohen and
 *   Zappa Nardelli ("Correct and Efficient Work-Stealing for Weak Memory Models", PPoPP 2013),
 *   without the resizing: push returns false when the ring is full.
 *
 *   The owner pushes and pops at bottom (LIFO end); any other thread steals at top (FIFO end).
 *   bottom is stored only by the owner; top only ever grows, by a CAS, from a thief or from the
 *   owner when it takes the last item.  The items are positions top .. bottom-1, slot of
 *   position p at buf[p & mask].
 *
 *   pop first lowers bottom to claim position b = bottom-1, then reads top; steal reads top,
 *   then bottom.  A seq_cst fence between the two accesses on each side (the StoreLoad order the
 *   algorithm needs) makes sure that either the thief sees the lowered bottom (and backs off) or
 *   the owner sees the thief's top (and does not take that item), except when exactly one item
 *   is left (top == b): then both race with a CAS of top from b to b+1, and the loser returns
 *   NULL.  A thief that loses a CAS to another thief also returns NULL: steal may fail
 *   spuriously and the caller decides whether to retry.
 *
 *   The slots are atomic (relaxed): a thief may read buf[t & mask] while the owner, having seen
 *   top move past t, overwrites that slot with a new push; the thief's CAS then fails, so the
 *   value it read is thrown away, but the read itself must not be a data race.
 *
 * Invariants
 *   - top only increases; outside the window of a pop, 0 <= bottom - top <= capacity.
 *   - Inside pop, bottom may be one below top for a moment (empty deque); int64 positions keep
 *     that from wrapping (at 2^63 positions they never overflow).
 *   - Capacity is a power of two, 2 <= capacity <= 2^31.
 *
 * Who may call what
 *   ursa__deque_push, ursa__deque_pop: the owner only (one thread at a time).
 *   ursa__deque_steal: any other thread, any number of them at once.
 *   ursa__deque_len: any thread; a snapshot that may be stale when it returns.
 *   ursa__deque_init, ursa__deque_destroy: with no other operation running.
 *   The struct should be 64-byte aligned for top and bottom to sit on separate cache lines.
 */
#ifndef URSA_SCHED_DEQUE_H
#define URSA_SCHED_DEQUE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef URSA__CACHELINE
#define URSA__CACHELINE 64
#endif

struct ursa__deque {
  /* read-only after init */
  _Alignas(URSA__CACHELINE) _Atomic(void *) *buf;     /* mask + 1 slots */
  int64_t mask;                                       /* capacity - 1 */
  /* the thieves' line: CAS'd by every thief, and by the owner taking the last item */
  _Alignas(URSA__CACHELINE) _Atomic int64_t top;      /* the oldest item's position */
  /* the owner's line: only the owner stores bottom */
  _Alignas(URSA__CACHELINE) _Atomic int64_t bottom;   /* the next free position */
};

/* Sets up an empty deque of capacity rounded up to a power of two >= 2.  Returns 0, -EINVAL when
 * capacity > 2^31, or -ENOMEM.  Not concurrent with anything on d. */
static inline int ursa__deque_init(struct ursa__deque *d, uint32_t capacity) {
  uint32_t cap = 2, i;
  if (capacity > (UINT32_C(1) << 31)) return -EINVAL;
  while (cap < capacity) cap <<= 1;
#if SIZE_MAX <= UINT32_MAX                      /* 32-bit size_t: 2^31 slots do not fit */
  if (cap > SIZE_MAX / sizeof(_Atomic(void *))) return -ENOMEM;
#endif
  d->buf = (_Atomic(void *) *)malloc((size_t)cap * sizeof(_Atomic(void *)));
  if (d->buf == NULL) return -ENOMEM;
  for (i = 0; i < cap; i++) atomic_init(&d->buf[i], NULL);
  d->mask = (int64_t)cap - 1;
  atomic_init(&d->top, 0);
  atomic_init(&d->bottom, 0);
  return 0;
}

/* Frees the ring (items still in it are dropped).  Not concurrent with anything on d. */
static inline void ursa__deque_destroy(struct ursa__deque *d) {
  free((void *)(uintptr_t)d->buf);                /* drops the _Atomic qualifier */
  d->buf = NULL;
}

/* Pushes p at the bottom.  Returns false, changing nothing, when the deque is full.
 * Executed only by the owner. */
static inline bool ursa__deque_push(struct ursa__deque *d, void *p) {
  /* relaxed: bottom is stored by this thread only */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  /* acquire: pairs with the CAS of top in steal (its release half): the thief's read of the
   * slot of position t happens before we overwrite that slot for position t + capacity, so it
   * cannot return the new item for the old position */
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  if (b - t > d->mask) return false;
  /* relaxed: published by the release store of bottom below */
  atomic_store_explicit(&d->buf[b & d->mask], p, memory_order_relaxed);
  /* release: pairs with the acquire load of bottom in steal, publishing the slot (and whatever
   * p points to).  The paper writes a release fence and a relaxed store; a release store orders
   * the same writes before this one store and is what ThreadSanitizer understands. */
  atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
  return true;
}

/* ThreadSanitizer does not model fences, and GCC >= 12 warns about each seq_cst fence below under
 * -fsanitize=thread.  TSan still executes them, and no happens-before edge that it needs comes
 * from them (data is published by release/acquire on bottom and on top; the fences only order a
 * store before a load), so the warning is silenced rather than the algorithm changed there. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define URSA__DEQUE_NO_WTSAN 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif

/* Pops the newest item at the bottom, or returns NULL when the deque is empty (or its last item
 * went to a thief).  Executed only by the owner. */
static inline void *ursa__deque_pop(struct ursa__deque *d) {
  void *p;
  int64_t t;
  /* relaxed: bottom is stored by this thread only */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
  /* relaxed, ordered by the fence below.  It (like the two restoring stores further down) stays
   * in the release sequence of push's release store of bottom (C11 5.1.2.4: later stores by the
   * same thread), so a thief's acquire load that reads it still sees every pushed slot. */
  atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
  /* seq_cst: pairs with the seq_cst fence in steal.  Either ours comes first in the total order
   * S, and the thief's load of bottom sees the lowered bottom (or later), or the thief's comes
   * first, and our load of top below sees the top the thief had loaded (or later; see the acquire
   * in steal): never both missed (StoreLoad). */
  atomic_thread_fence(memory_order_seq_cst);
  /* relaxed: ordered by the fence above */
  t = atomic_load_explicit(&d->top, memory_order_relaxed);
  if (t > b) {                                                /* it was empty: undo */
    /* relaxed: only this thread stores bottom; see the release-sequence note above */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    return NULL;
  }
  /* relaxed: this thread wrote the slot in push */
  p = atomic_load_explicit(&d->buf[b & d->mask], memory_order_relaxed);
  if (t == b) {                                               /* the last item: race the thieves */
    /* seq_cst: the same CAS as in steal, which it pairs with; one of them wins position t.
     * failure relaxed: a thief took it and we return NULL without reading anything more */
    if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
      p = NULL;
    /* relaxed: only this thread stores bottom; top is now b + 1 either way, so the deque is
     * empty with bottom == top */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
  }
  return p;
}

/* Steals the oldest item at the top.  Returns NULL when the deque is empty or when this thief
 * lost a race for the item (to another thief or to the owner's pop); the caller may retry.
 * Any thread but the owner. */
static inline void *ursa__deque_steal(struct ursa__deque *d) {
  void *p;
  int64_t b;
  /* acquire: pairs with the release half of the seq_cst CAS that stored this top (another steal
   * or the owner's pop).  That CAS then happens before our fence below, so precedes it in S,
   * and a pop whose fence follows ours in S loads this top or a later one (C11 7.17.3 on
   * seq_cst fences).  It also makes what that thread had seen of bottom and slots visible. */
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  /* seq_cst: pairs with the seq_cst fence in pop (see there): either we see the owner's lowered
   * bottom below, or the owner sees the top we loaded above */
  atomic_thread_fence(memory_order_seq_cst);
  /* acquire: pairs with the release store of bottom in push (heading a release sequence that
   * also covers pop's stores), so the slot of position t is visible */
  b = atomic_load_explicit(&d->bottom, memory_order_acquire);
  if (t >= b) return NULL;                                    /* empty */
  /* relaxed: published by the acquire load of bottom; may race with an overwrite by push, in
   * which case the CAS below fails and the value is dropped */
  p = atomic_load_explicit(&d->buf[t & d->mask], memory_order_relaxed);
  /* seq_cst: claims position t against the other thieves and the owner's pop of the last item;
   * its release half pairs with the acquire load of top in push and in steal.
   * failure relaxed: we return at once */
  if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                               memory_order_relaxed))
    return NULL;                                              /* lost the race */
  return p;
}

#ifdef URSA__DEQUE_NO_WTSAN
#pragma GCC diagnostic pop
#undef URSA__DEQUE_NO_WTSAN
#endif

/* The number of items, clamped to [0, capacity].  Any thread; a snapshot, stale at once. */
static inline uint32_t ursa__deque_len(const struct ursa__deque *d) {
  /* acquire: pairs with the CAS of top (as in steal), so the load of bottom below is no older
   * than what the thread that moved top had seen */
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  /* acquire: pairs with the release store of bottom in push; only a count is wanted */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
  int64_t n = b - t;
  /* bottom may sit one below top inside a pop, and both may move between the two loads */
  if (n < 0) return 0;
  return n > d->mask + 1 ? (uint32_t)(d->mask + 1) : (uint32_t)n;
}

#endif
