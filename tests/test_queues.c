/* The lock-free queues of the SMP scheduler (src/sched/waiverq.h, src/sched/deque.h), on plain
 * POSIX threads: single-thread behaviour, then stress with a fixed, printed seed where it matters.
 * Every item is checked for loss, duplication and order, and the payload an item points to is
 * written by the pusher and read by the taker, so that ThreadSanitizer checks the hand-off. */
#include "task.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../src/sched/deque.h"
#include "../src/sched/waiverq.h"

/* ---- helpers (the seed and the generator are task.h's) ---------------------------------------- */

/* Valgrind runs one thread at a time: spinning there only burns the time slice. */
static int g_valgrind;

/* Called on every failed attempt: yields now and then (always under Valgrind), since this VM has
 * two cores and the tests run up to four threads. */
static void backoff(unsigned *spins) {
  if (g_valgrind || ++*spins >= 32) {
    *spins = 0;
    sched_yield();
  }
}

/* n scaled down for sanitizer and Valgrind runs (at least min). */
static uint64_t scaled(uint64_t n, uint64_t min) {
  n /= TEST_TIME_FACTOR;
  return n < min ? min : n;
}

#define START(fn, arg, th) ASSERT_EQ(pthread_create(&(th), NULL, (fn), (arg)), 0)
#define JOIN(th) ASSERT_EQ(pthread_join((th), NULL), 0)

/* An SPSC item: (producer id, sequence number) packed in a pointer, never NULL. */
#define ID_SHIFT (sizeof(uintptr_t) * CHAR_BIT - 8)
static void *enc(unsigned id, uint64_t seq) { return (void *)(((uintptr_t)id << ID_SHIFT) | (uintptr_t)(seq + 1)); }
static unsigned enc_id(void *p) { return (unsigned)((uintptr_t)p >> ID_SHIFT); }
static uint64_t enc_seq(void *p) { return (uint64_t)((uintptr_t)p & (((uintptr_t)1 << ID_SHIFT) - 1)) - 1; }

/* ============================================================================================
 * Waiver Queue, one thread: empty, full at exactly the capacity, FIFO, positions across the wrap.
 * ========================================================================================== */

TEST_IMPL(queues_wq_fifo_basic) {
  static const uint32_t caps[][2] = { {0, 2}, {1, 2}, {2, 2}, {3, 4}, {5, 8}, {8, 8}, {1000, 1024} };
  struct ursa__wq q;
  uint32_t start = UINT32_MAX - 20, in = 0, out = 0, n = 0, cap, k, i;
  unsigned c;
  for (c = 0; c < sizeof caps / sizeof caps[0]; c++) {
    ASSERT_EQ(ursa__wq_init(&q, caps[c][0]), 0);
    cap = caps[c][1];
    ASSERT(ursa__wq_pop(&q) == NULL);
    ASSERT(ursa__wq_empty(&q));
    ASSERT_EQ(ursa__wq_len(&q), 0);
    for (i = 0; i < cap; i++) {
      ASSERT(ursa__wq_push(&q, enc(1, i)));
      ASSERT_EQ(ursa__wq_len(&q), i + 1);
    }
    ASSERT(!ursa__wq_push(&q, enc(2, 0)));         /* full exactly at the rounded capacity */
    ASSERT_EQ(ursa__wq_len(&q), cap);
    ASSERT(!ursa__wq_empty(&q));
    for (i = 0; i < cap; i++) {
      void *p = ursa__wq_pop(&q);
      ASSERT_PTR_EQ(p, enc(1, i));                  /* FIFO, and the refused item is not there */
      if (i == 0) ASSERT(ursa__wq_push(&q, enc(3, 0)));   /* room again after one pop */
    }
    ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(3, 0));
    ASSERT(ursa__wq_pop(&q) == NULL);
    ASSERT(ursa__wq_empty(&q));
    ursa__wq_destroy(&q);
  }
  ASSERT_EQ(ursa__wq_init(&q, (UINT32_C(1) << 31) + 1), -EINVAL);

  /* Positions start 20 below UINT32_MAX and run past the wrap: many cycles of pushing a few
   * (refused exactly when full) and popping a few (NULL exactly when empty), against a count. */
  ASSERT_EQ(ursa__wq_init(&q, 8), 0);
  atomic_store(&q.head, start);
  atomic_store(&q.tail, start);
  q.head_cache = q.tail_cache = start;
  for (c = 0; c < 100000; c++) {
    for (k = 1 + c % 8; k > 0; k--) {
      if (n == 8) { ASSERT(!ursa__wq_push(&q, enc(1, in))); break; }
      ASSERT(ursa__wq_push(&q, enc(1, in)));
      in++, n++;
    }
    ASSERT_EQ(ursa__wq_len(&q), n);
    for (k = 1 + (c * 5) % 9; k > 0; k--) {
      void *p = ursa__wq_pop(&q);
      if (n == 0) { ASSERT(p == NULL); break; }
      if (p != enc(1, out)) FAIL("cycle %u: popped seq %llu, expected %u", c, (unsigned long long)enc_seq(p), out);
      out++, n--;
    }
    ASSERT_EQ(ursa__wq_empty(&q), n == 0);
  }
  ASSERT_GT(in, 100000);
  ASSERT_LT(atomic_load(&q.tail), start);          /* the positions did wrap */
  ASSERT_EQ((uint32_t)(atomic_load(&q.tail) - start), in);
  ursa__wq_destroy(&q);
  return 0;
}

/* ============================================================================================
 * Waiver Queue, one producer and one consumer: millions of (id, seq) items, with a third thread
 * sampling len and empty.
 * ========================================================================================== */

struct spsc {
  struct ursa__wq q;
  uint32_t cap;
  unsigned id;
  uint64_t n;
  uint64_t full, empty;                    /* failed pushes (producer), empty pops (consumer) */
  unsigned batch;                          /* 0: ursa__wq_push; else batches of 1..batch items */
  atomic_int done;
};

static void *spsc_producer(void *arg) {
  struct spsc *s = arg;
  unsigned spins = 0;
  uint64_t seq, rng = 0x9e3779b97f4a7c15u ^ s->id;
  if (s->batch != 0) {                     /* room, stage, publish: runs of 1..batch items */
    for (seq = 0; seq < s->n;) {
      uint32_t want, room, i;
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      want = 1 + (uint32_t)(rng % s->batch);
      if (want > s->n - seq) want = (uint32_t)(s->n - seq);
      room = ursa__wq_room(&s->q, want);
      ASSERT_LE(room, s->cap);
      if (room == 0) {
        s->full++;
        backoff(&spins);
        continue;
      }
      if (want > room) want = room;
      for (i = 0; i < want; i++) ursa__wq_stage(&s->q, i, enc(s->id, seq + i));
      ursa__wq_publish(&s->q, want);
      seq += want;
    }
    return NULL;
  }
  for (seq = 0; seq < s->n; seq++)
    while (!ursa__wq_push(&s->q, enc(s->id, seq))) {
      s->full++;
      backoff(&spins);
    }
  return NULL;
}

static void *spsc_consumer(void *arg) {
  struct spsc *s = arg;
  unsigned spins = 0;
  uint64_t expect = 0;
  while (expect < s->n) {
    void *p = ursa__wq_pop(&s->q);
    if (p == NULL) {
      s->empty++;
      backoff(&spins);
      continue;
    }
    if (enc_id(p) != s->id || enc_seq(p) != expect)
      FAIL("capacity %u: got (id %u, seq %llu), expected (id %u, seq %llu)", s->cap, enc_id(p),
           (unsigned long long)enc_seq(p), s->id, (unsigned long long)expect);
    expect++;
  }
  ASSERT(ursa__wq_pop(&s->q) == NULL);     /* nothing made up after the last item */
  atomic_store(&s->done, 1);
  return NULL;
}

static int spsc_stress(unsigned batch) {
  static const uint32_t caps[] = { 2, 64, 1024 };
  static const uint64_t items[] = { 4000, 60000, 75000 };     /* capacity 2 ping-pongs: slow.  Sized for
     a machine that other programs keep busy: beside two CPU hogs every sched_yield of its three
     kernel threads waits out a hog's slice (8x these sizes took 27 s of 60 there, 1.3 s quiet;
     2x 12.5 s in a fresh-clone run beside two hogs) */
  static struct spsc s;
  uint64_t t0 = test_now_ns();
  unsigned c;
  g_valgrind = TEST_UNDER_VALGRIND;
  for (c = 0; c < sizeof caps / sizeof caps[0]; c++) {
    pthread_t prod, cons;
    uint64_t samples = 0, t1 = test_now_ns();
    ASSERT_EQ(ursa__wq_init(&s.q, caps[c]), 0);
    s.cap = caps[c];
    s.id = 10 + c;
    /* (the floor never above the size: capacity 2 ran 10,000 items instead of its 4,000, 11-21 s
     * of 60 beside two busy loops with CTest running three tests at a time) */
    s.n = scaled(items[c], items[c] < 10000 ? items[c] : 10000);
    s.full = s.empty = 0;
    s.batch = batch ? (batch < caps[c] ? batch : caps[c]) : 0;
    atomic_store(&s.done, 0);
    START(spsc_consumer, &s, cons);
    START(spsc_producer, &s, prod);
    while (!atomic_load(&s.done)) {        /* an observer: snapshots stay within [0, capacity] */
      uint32_t len = ursa__wq_len(&s.q);
      ASSERT_LE(len, s.cap);
      if (len > 0 && ursa__wq_empty(&s.q)) ASSERT_LE(len, s.cap);   /* may change in between */
      samples++;
      sched_yield();
    }
    JOIN(prod);
    JOIN(cons);
    ASSERT(ursa__wq_empty(&s.q));
    printf("capacity %u: %llu items, %llu full pushes, %llu empty pops, %llu len samples; %.0f ms\n",
           s.cap, (unsigned long long)s.n, (unsigned long long)s.full, (unsigned long long)s.empty,
           (unsigned long long)samples, (double)(test_now_ns() - t1) / 1e6);
    ursa__wq_destroy(&s.q);
  }
  printf("%.0f ms\n", (double)(test_now_ns() - t0) / 1e6);
  return 0;
}

TEST_IMPL(queues_wq_spsc_stress) { return spsc_stress(0); }

/* The same with a producer that publishes runs of up to 48 items at once (the rotator's pass_on). */
TEST_IMPL(queues_wq_batch_stress) { return spsc_stress(48); }

/* The batch, one thread: staged items are invisible until published, then come out in order;
 * the room is exact (the cached head is refreshed when it shows too little), also across the
 * wrap of the positions. */
TEST_IMPL(queues_wq_batch_basic) {
  struct ursa__wq q;
  uint32_t i, round;
  ASSERT_EQ(ursa__wq_init(&q, 8), 0);
  ASSERT_EQ(ursa__wq_room(&q, 8), 8);
  for (i = 0; i < 3; i++) ursa__wq_stage(&q, i, enc(1, i));
  ASSERT(ursa__wq_empty(&q));                     /* staged: not visible */
  ASSERT(ursa__wq_pop(&q) == NULL);
  ursa__wq_publish(&q, 3);
  ASSERT_EQ(ursa__wq_len(&q), 3);
  ASSERT_EQ(ursa__wq_room(&q, 1), 5);
  ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(1, 0));
  ASSERT_EQ(ursa__wq_room(&q, 1), 5);             /* the cached head still says 5: enough */
  ASSERT_EQ(ursa__wq_room(&q, 6), 6);             /* asked for more: the head is loaded again */
  for (i = 0; i < 6; i++) ursa__wq_stage(&q, i, enc(2, i));
  ursa__wq_publish(&q, 6);
  ASSERT_EQ(ursa__wq_len(&q), 8);
  ASSERT_EQ(ursa__wq_room(&q, 1), 0);             /* full */
  ASSERT(!ursa__wq_push(&q, enc(3, 0)));
  ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(1, 1));
  ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(1, 2));
  for (i = 0; i < 6; i++) ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(2, i));
  ASSERT(ursa__wq_pop(&q) == NULL);
  ursa__wq_publish(&q, 0);                        /* nothing staged: nothing appears */
  ASSERT(ursa__wq_empty(&q));
  ursa__wq_destroy(&q);

  /* across the wrap of the uint32 positions: batches of 5 into a ring of 8, mixed with pushes */
  ASSERT_EQ(ursa__wq_init(&q, 8), 0);
  atomic_store(&q.head, UINT32_MAX - 20);
  atomic_store(&q.tail, UINT32_MAX - 20);
  q.head_cache = q.tail_cache = UINT32_MAX - 20;
  for (round = 0; round < 10; round++) {
    ASSERT_EQ(ursa__wq_room(&q, 5), 8);
    for (i = 0; i < 5; i++) ursa__wq_stage(&q, i, enc(4, round * 8 + i));
    ursa__wq_publish(&q, 5);
    ASSERT(ursa__wq_push(&q, enc(4, round * 8 + 5)));
    ASSERT_EQ(ursa__wq_len(&q), 6);
    for (i = 0; i < 6; i++) ASSERT_PTR_EQ(ursa__wq_pop(&q), enc(4, round * 8 + i));
    ASSERT(ursa__wq_empty(&q));
  }
  ursa__wq_destroy(&q);
  return 0;
}

/* ============================================================================================
 * Waiver Queues in a ring, as Lesser Bear's rotator uses them: thread i owns (pushes into) wq[i]
 * and pops from wq[i-1].  Tokens carry (origin, seq, lap); each origin injects its tokens in seq
 * order, and re-emits each one when it comes back until it has done its laps.  What a thread
 * cannot push goes to a local FIFO overflow list, flushed first.  Every hop is FIFO, so each
 * thread must see the tokens of each origin exactly in the order lap * T + seq = 0, 1, 2, ...
 * ========================================================================================== */

#define RING_N 3

struct token {
  unsigned origin;
  uint32_t seq, lap;                       /* lap: bumped by the origin each time it comes back */
  uint32_t hops;                           /* bumped by every holder: checks the hand-off */
};

struct ring_thread {
  unsigned id;
  pthread_t th;
  struct ursa__wq *in, *out;
  struct token *mine;                      /* this origin's tokens */
  uint64_t expect[RING_N];                 /* next lap * T + seq of each origin */
  struct token **over;                     /* overflow FIFO, a ring of RING_N * T entries */
  size_t over_head, over_len, over_max;
  uint64_t hops, overflowed;
};

static struct {
  struct ursa__wq wq[RING_N];
  struct ring_thread t[RING_N];
  uint32_t ntok, laps, cap;
  unsigned char *retired;                  /* [origin * ntok + seq], written by the origin only */
  atomic_uint_fast64_t nretired;
} g_ring;

static void ring_emit(struct ring_thread *rt, struct token *tok) {
  size_t size = (size_t)RING_N * g_ring.ntok;
  if (rt->over_len == 0 && ursa__wq_push(rt->out, tok)) return;
  ASSERT_LT(rt->over_len, size);
  rt->over[(rt->over_head + rt->over_len++) % size] = tok;
  if (rt->over_len > rt->over_max) rt->over_max = rt->over_len;
  rt->overflowed++;
}

static void ring_flush(struct ring_thread *rt) {
  size_t size = (size_t)RING_N * g_ring.ntok;
  while (rt->over_len > 0 && ursa__wq_push(rt->out, rt->over[rt->over_head])) {
    rt->over_head = (rt->over_head + 1) % size;
    rt->over_len--;
  }
}

static void *ring_worker(void *arg) {
  struct ring_thread *rt = arg;
  uint64_t total = (uint64_t)RING_N * g_ring.ntok;
  unsigned spins = 0;
  uint32_t s;
  for (s = 0; s < g_ring.ntok; s++) {      /* inject, in seq order, before forwarding anything */
    struct token *tok = &rt->mine[s];
    tok->origin = rt->id;
    tok->seq = s;
    tok->lap = 0;
    tok->hops = 0;
    ring_emit(rt, tok);
  }
  while (atomic_load_explicit(&g_ring.nretired, memory_order_relaxed) < total) {
    struct token *tok;
    uint64_t key;
    ring_flush(rt);
    tok = ursa__wq_pop(rt->in);
    if (tok == NULL) {
      backoff(&spins);
      continue;
    }
    ASSERT_LT(tok->origin, RING_N);
    key = (uint64_t)tok->lap * g_ring.ntok + tok->seq;
    if (key != rt->expect[tok->origin])
      FAIL("capacity %u: thread %u got origin %u lap %u seq %u, expected lap %llu seq %llu",
           g_ring.cap, rt->id, tok->origin, tok->lap, tok->seq,
           (unsigned long long)(rt->expect[tok->origin] / g_ring.ntok),
           (unsigned long long)(rt->expect[tok->origin] % g_ring.ntok));
    rt->expect[tok->origin]++;
    tok->hops++;
    rt->hops++;
    if (tok->origin == rt->id && ++tok->lap == g_ring.laps) {   /* done: retire it, once */
      unsigned char *r = &g_ring.retired[(size_t)rt->id * g_ring.ntok + tok->seq];
      ASSERT_EQ(*r, 0);
      *r = 1;
      atomic_fetch_add_explicit(&g_ring.nretired, 1, memory_order_relaxed);
      continue;
    }
    ring_emit(rt, tok);
  }
  return NULL;
}

TEST_IMPL(queues_wq_ring_rotator) {
  static const uint32_t cfg[][2] = { {8, 64}, {128, 32} };    /* capacity, tokens per origin */
  uint64_t t0 = test_now_ns();
  unsigned c, i, o;
  g_valgrind = TEST_UNDER_VALGRIND;
  for (c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    uint64_t hops = 0;
    g_ring.cap = cfg[c][0];
    g_ring.ntok = cfg[c][1];
    /* 1500 took 32-60 s of 60 beside two CPU hogs; 250, 20 s with CTest running three tests at a
     * time beside them (session 22) */
    g_ring.laps = (uint32_t)scaled(160, 30);
    g_ring.retired = calloc((size_t)RING_N * g_ring.ntok, 1);
    ASSERT(g_ring.retired != NULL);
    atomic_store(&g_ring.nretired, 0);
    for (i = 0; i < RING_N; i++) ASSERT_EQ(ursa__wq_init(&g_ring.wq[i], g_ring.cap), 0);
    for (i = 0; i < RING_N; i++) {
      struct ring_thread *rt = &g_ring.t[i];
      memset(rt, 0, sizeof *rt);
      rt->id = i;
      rt->out = &g_ring.wq[i];
      rt->in = &g_ring.wq[(i + RING_N - 1) % RING_N];
      rt->mine = calloc(g_ring.ntok, sizeof *rt->mine);
      rt->over = calloc((size_t)RING_N * g_ring.ntok, sizeof *rt->over);
      ASSERT(rt->mine != NULL && rt->over != NULL);
    }
    for (i = 0; i < RING_N; i++) START(ring_worker, &g_ring.t[i], g_ring.t[i].th);
    for (i = 0; i < RING_N; i++) JOIN(g_ring.t[i].th);
    for (i = 0; i < RING_N; i++) {
      struct ring_thread *rt = &g_ring.t[i];
      ASSERT_EQ(rt->over_len, 0);
      ASSERT(ursa__wq_empty(&g_ring.wq[i]));
      for (o = 0; o < RING_N; o++)           /* every token went through every hop, each lap */
        ASSERT_EQ(rt->expect[o], (uint64_t)g_ring.laps * g_ring.ntok);
      for (o = 0; o < g_ring.ntok; o++) {
        ASSERT_EQ(g_ring.retired[(size_t)i * g_ring.ntok + o], 1);
        ASSERT_EQ(rt->mine[o].hops, (uint64_t)g_ring.laps * RING_N);
      }
      hops += rt->hops;
    }
    ASSERT_EQ(atomic_load(&g_ring.nretired), (uint64_t)RING_N * g_ring.ntok);
    ASSERT_EQ(hops, (uint64_t)RING_N * RING_N * g_ring.ntok * g_ring.laps);
    printf("capacity %u, %u tokens x %u threads, %u laps: %llu hops; overflowed %llu/%llu/%llu "
           "(max %zu/%zu/%zu)\n", g_ring.cap, g_ring.ntok, RING_N, g_ring.laps, (unsigned long long)hops,
           (unsigned long long)g_ring.t[0].overflowed, (unsigned long long)g_ring.t[1].overflowed,
           (unsigned long long)g_ring.t[2].overflowed, g_ring.t[0].over_max, g_ring.t[1].over_max,
           g_ring.t[2].over_max);
    for (i = 0; i < RING_N; i++) {
      ursa__wq_destroy(&g_ring.wq[i]);
      free(g_ring.t[i].mine);
      free(g_ring.t[i].over);
    }
    free(g_ring.retired);
  }
  printf("%.0f ms\n", (double)(test_now_ns() - t0) / 1e6);
  return 0;
}

/* ============================================================================================
 * Work-stealing deque, owner and one thief taking turns: LIFO at the bottom, FIFO at the top,
 * full at exactly the capacity, NULL when empty, positions reused many times over.
 * ========================================================================================== */

struct steal_req {
  struct ursa__deque *d;
  unsigned n;
  void *got[16];
};

static void *steal_n(void *arg) {
  struct steal_req *r = arg;
  unsigned i;
  for (i = 0; i < r->n; i++) r->got[i] = ursa__deque_steal(r->d);
  return NULL;
}

/* Steals n items from another thread (the owner waits), into got[]. */
static void thief_steals(struct ursa__deque *d, unsigned n, struct steal_req *r) {
  pthread_t th;
  ASSERT_LE(n, 16);
  r->d = d;
  r->n = n;
  START(steal_n, r, th);
  JOIN(th);
}

#define V(i) ((void *)(uintptr_t)(i))

TEST_IMPL(queues_deque_basic) {
  struct ursa__deque d;
  struct steal_req r;
  uintptr_t model[64];                       /* the expected contents, model[lo .. hi-1] */
  unsigned lo = 0, hi = 0, c, k, i, next = 1;
  uint64_t seed = 0x9e3779b97f4a7c15ull;

  ASSERT_EQ(ursa__deque_init(&d, 0), 0);     /* rounded up to 2 */
  ASSERT(ursa__deque_push(&d, V(1)) && ursa__deque_push(&d, V(2)) && !ursa__deque_push(&d, V(3)));
  ursa__deque_destroy(&d);
  ASSERT_EQ(ursa__deque_init(&d, (UINT32_C(1) << 31) + 1), -EINVAL);

  ASSERT_EQ(ursa__deque_init(&d, 5), 0);     /* rounded up to 8 */
  ASSERT(ursa__deque_pop(&d) == NULL);
  thief_steals(&d, 1, &r);
  ASSERT(r.got[0] == NULL);
  ASSERT_EQ(ursa__deque_len(&d), 0);
  for (i = 1; i <= 8; i++) {
    ASSERT(ursa__deque_push(&d, V(i)));
    ASSERT_EQ(ursa__deque_len(&d), i);
  }
  ASSERT(!ursa__deque_push(&d, V(9)));       /* full exactly at the rounded capacity */
  ASSERT_EQ(ursa__deque_len(&d), 8);
  ASSERT_PTR_EQ(ursa__deque_pop(&d), V(8));  /* LIFO for the owner */
  ASSERT_PTR_EQ(ursa__deque_pop(&d), V(7));
  thief_steals(&d, 3, &r);                   /* FIFO for a thief */
  ASSERT_PTR_EQ(r.got[0], V(1));
  ASSERT_PTR_EQ(r.got[1], V(2));
  ASSERT_PTR_EQ(r.got[2], V(3));
  ASSERT_EQ(ursa__deque_len(&d), 3);         /* 4 5 6 */
  ASSERT_PTR_EQ(ursa__deque_pop(&d), V(6));
  thief_steals(&d, 1, &r);
  ASSERT_PTR_EQ(r.got[0], V(4));
  ASSERT_PTR_EQ(ursa__deque_pop(&d), V(5));  /* the last item, through the CAS */
  ASSERT(ursa__deque_pop(&d) == NULL);
  ASSERT(ursa__deque_pop(&d) == NULL);       /* twice: bottom was put back the first time */
  thief_steals(&d, 2, &r);
  ASSERT(r.got[0] == NULL && r.got[1] == NULL);
  ASSERT_EQ(ursa__deque_len(&d), 0);
  ASSERT(ursa__deque_push(&d, V(10)));       /* and it works again */
  thief_steals(&d, 2, &r);
  ASSERT_PTR_EQ(r.got[0], V(10));
  ASSERT(r.got[1] == NULL);

  /* Random turns against the model: the positions go round the 8 slots hundreds of times. */
  for (c = 0; c < 600; c++) {
    for (k = rnd(&seed, 10); k > 0; k--) {
      if (hi - lo == 8) { ASSERT(!ursa__deque_push(&d, V(next))); break; }
      ASSERT(ursa__deque_push(&d, V(next)));
      model[hi++ % 64] = next++;
    }
    for (k = rnd(&seed, 5); k > 0; k--) {
      void *p = ursa__deque_pop(&d);
      if (hi == lo) { ASSERT(p == NULL); break; }
      ASSERT_PTR_EQ(p, V(model[--hi % 64]));
    }
    ASSERT_EQ(ursa__deque_len(&d), hi - lo);
    k = rnd(&seed, 6);
    thief_steals(&d, k, &r);
    for (i = 0; i < k; i++) {
      if (hi == lo) { ASSERT(r.got[i] == NULL); continue; }
      ASSERT_PTR_EQ(r.got[i], V(model[lo++ % 64]));
    }
    ASSERT_EQ(ursa__deque_len(&d), hi - lo);
  }
  ASSERT_GT(atomic_load(&d.top), 100 * 8);
  ursa__deque_destroy(&d);
  return 0;
}

/* ============================================================================================
 * Work-stealing deque, one owner pushing and popping at random and 2-3 thieves stealing: every
 * item is taken exactly once (a flag per item), the takes add up to the pushes, each thief sees
 * increasing items (steals are FIFO), and the payload written before the push is read intact.
 * ========================================================================================== */

#define MAX_THIEVES 3

struct ditem {
  uint64_t idx;
  uint64_t check;                            /* idx * GOLD, written by the owner before the push */
};
#define GOLD 0x9e3779b97f4a7c15ull

static struct {
  struct ursa__deque d;
  uint32_t cap;
  uint64_t seed, n;
  struct ditem *items;
  atomic_uchar *taken;
  atomic_int done;
} g_ds;

struct thief {
  pthread_t th;
  unsigned id;
  uint64_t got, failed;
};

static void ds_take(struct ditem *it, unsigned who) {
  uint64_t idx = it->idx;
  if (idx >= g_ds.n || it->check != idx * GOLD)
    FAIL("capacity %u, seed 0x%016llx: %s %u took a torn item (idx %llu, check %llx)", g_ds.cap,
         (unsigned long long)g_ds.seed, who ? "thief" : "owner", who, (unsigned long long)idx,
         (unsigned long long)it->check);
  if (atomic_exchange(&g_ds.taken[idx], 1) != 0)
    FAIL("capacity %u, seed 0x%016llx: item %llu taken twice (the second time by %s %u)", g_ds.cap,
         (unsigned long long)g_ds.seed, (unsigned long long)idx, who ? "thief" : "owner", who);
}

static void *ds_thief(void *arg) {
  struct thief *t = arg;
  uint64_t last = 0;
  unsigned spins = 0;
  bool any = false;
  while (!atomic_load(&g_ds.done)) {
    struct ditem *it = ursa__deque_steal(&g_ds.d);
    if (it == NULL) {
      t->failed++;
      backoff(&spins);
      continue;
    }
    ds_take(it, t->id);
    if (any && it->idx <= last)
      FAIL("capacity %u, seed 0x%016llx: thief %u stole item %llu after item %llu", g_ds.cap,
           (unsigned long long)g_ds.seed, t->id, (unsigned long long)it->idx, (unsigned long long)last);
    last = it->idx;
    any = true;
    t->got++;
  }
  return NULL;
}

TEST_IMPL(queues_deque_steal_stress) {
  static const uint32_t cfg[][2] = { {4, 3}, {256, 2}, {64, 3} };   /* capacity, thieves */
  struct thief th[MAX_THIEVES];
  uint64_t t0 = test_now_ns();
  unsigned c, i;
  g_valgrind = TEST_UNDER_VALGRIND;
  g_ds.seed = stress_seed("queues_deque_steal_stress");
  for (c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    uint64_t s = g_ds.seed ^ ((uint64_t)(c + 1) * GOLD), next = 0, popped = 0, full = 0, stolen = 0;
    unsigned nth = cfg[c][1];
    if (s == 0) s = 1;
    g_ds.cap = cfg[c][0];
    g_ds.n = scaled(50000, 10000);                    /* sized for a busy machine, as above (300,000
                                                         took 23.5 s of 60 in the debug build there,
                                                         100,000 19.2 s in the plain build beside a
                                                         loaded fresh-clone run) */
    g_ds.items = calloc(g_ds.n, sizeof *g_ds.items);
    g_ds.taken = calloc(g_ds.n, sizeof *g_ds.taken);
    ASSERT(g_ds.items != NULL && g_ds.taken != NULL);
    for (i = 0; i < g_ds.n; i++) atomic_init(&g_ds.taken[i], 0);
    atomic_store(&g_ds.done, 0);
    ASSERT_EQ(ursa__deque_init(&g_ds.d, g_ds.cap), 0);
    for (i = 0; i < nth; i++) {
      th[i].id = i + 1;
      th[i].got = th[i].failed = 0;
      START(ds_thief, &th[i], th[i].th);
    }
    /* This thread is the owner: bursts of pushes (stopping when full), bursts of pops. */
    while (next < g_ds.n) {
      unsigned k, r = rnd(&s, 8);
      if (r < 5) {
        for (k = 1 + rnd(&s, 2 * g_ds.cap); k > 0 && next < g_ds.n; k--) {
          struct ditem *it = &g_ds.items[next];
          it->idx = next;
          it->check = next * GOLD;
          if (!ursa__deque_push(&g_ds.d, it)) {
            ASSERT_LE(ursa__deque_len(&g_ds.d), g_ds.cap);   /* thieves may have emptied it since */
            full++;
            break;
          }
          next++;
        }
      } else {
        for (k = 1 + rnd(&s, g_ds.cap); k > 0; k--) {
          struct ditem *it = ursa__deque_pop(&g_ds.d);
          if (it == NULL) break;
          ds_take(it, 0);
          popped++;
        }
      }
      if (r == 7) sched_yield();                       /* let the thieves at a fuller deque */
    }
    for (;;) {                                         /* drain: pop NULL means empty for good */
      struct ditem *it = ursa__deque_pop(&g_ds.d);
      if (it == NULL) break;
      ds_take(it, 0);
      popped++;
    }
    ASSERT_EQ(ursa__deque_len(&g_ds.d), 0);
    atomic_store(&g_ds.done, 1);
    for (i = 0; i < nth; i++) {
      JOIN(th[i].th);
      stolen += th[i].got;
    }
    if (popped + stolen != g_ds.n)
      FAIL("capacity %u, seed 0x%016llx: %llu popped + %llu stolen != %llu pushed", g_ds.cap,
           (unsigned long long)g_ds.seed, (unsigned long long)popped, (unsigned long long)stolen,
           (unsigned long long)g_ds.n);
    for (i = 0; i < g_ds.n; i++)
      if (atomic_load(&g_ds.taken[i]) != 1)
        FAIL("capacity %u, seed 0x%016llx: item %u never taken", g_ds.cap, (unsigned long long)g_ds.seed, i);
    printf("capacity %u, %u thieves: %llu items, %llu popped, %llu stolen (", g_ds.cap, nth,
           (unsigned long long)g_ds.n, (unsigned long long)popped, (unsigned long long)stolen);
    for (i = 0; i < nth; i++)
      printf("%s%llu/%llu failed", i ? ", " : "", (unsigned long long)th[i].got, (unsigned long long)th[i].failed);
    printf("), %llu full\n", (unsigned long long)full);
    ursa__deque_destroy(&g_ds.d);
    free(g_ds.items);
    free((void *)g_ds.taken);
  }
  printf("%.0f ms\n", (double)(test_now_ns() - t0) / 1e6);
  return 0;
}
