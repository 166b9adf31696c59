/* Stress with a fixed, printed seed: random mixes of sync operations with invariant checks, create/join/detach churn, timed waits racing with posts.  Written for one VP and run on two
 * as well (tests/CMakeLists.txt, the torture configuration), so the tests' own bookkeeping is
 * C11 atomics wherever two threads may touch it without a lock of the test ordering them (and
 * where it is the detector of a broken lock: the count inside a critical section). */
#include "task.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#define MS 1000000ull

/* ---- deterministic randomness (stress_seed, rng_next, rnd: task.h) ----------------------------- */

static uint64_t thread_seed(uint64_t seed, int id) {
  uint64_t s = seed ^ ((uint64_t)(id + 1) * 0x9e3779b97f4a7c15ull);
  return s ? s : 1;
}


static void yield_n(unsigned n) {
  while (n--) ursa_yield();
}


static const int clocks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };

/* ============================================================================================
 * 1,000 threads, random mixes of mutex / semaphore / condition / rwlock / I- and M-structure
 * operations, with the invariants checked at every step.
 * ========================================================================================== */

#define MIX_THREADS 1000
#define MIX_OPS 320
#define MIX_MVAR_EVERY 8                    /* every thread does MIX_OPS / 8 mvar operations */
#define MIX_MVAR_EACH (MIX_OPS / MIX_MVAR_EVERY)
/* On several VPs (the torture configuration) a quarter of the operations per thread: there the
 * threads pile up on the condition variable (3 units for 1,000 threads) and each broadcast wakes
 * hundreds of them to wait again, ~22 million blocks where one VP has 170,000 (11 s of 60 in the
 * debug build beside two copies of itself).  Under ThreadSanitizer also a quarter of the threads:
 * each is a TSan fiber, TSan's vector clocks grow with their number and every hand-off between
 * VPs acquires and releases whole clocks, so the cost grows with the square of the threads
 * (1,000 took over 180 s; 250: 7.4 s alone). */
#define MIX_OPS_SMP (MIX_OPS / 4)
#if defined(__SANITIZE_THREAD__)
#define MIX_THREADS_SMP (MIX_THREADS / 4)
#else
#define MIX_THREADS_SMP MIX_THREADS
#endif
static int mix_threads = MIX_THREADS, mix_ops = MIX_OPS;   /* this run's: set before any worker */
#define mix_mvar_each (mix_ops / MIX_MVAR_EVERY)
#define MIX_SEM_UNITS 5
#define MIX_COND_UNITS 3
#define MIX_IVARS 10

static uint64_t g_seed;

static ursa_mutex_t g_mx;                    /* recursive */
static atomic_int g_mx_in;                   /* threads inside g_mx: 0 or 1 */

static ursa_sem_t g_sem;
static atomic_int g_sem_holders, g_sem_max;  /* threads holding a unit of g_sem (up to 5 at once) */

static ursa_mutex_t g_cmx = URSA_MUTEX_INITIALIZER;
static ursa_cond_t g_ccv = URSA_COND_INITIALIZER;
static int g_cond_avail = MIX_COND_UNITS;    /* guarded by g_cmx */
static atomic_int g_cond_in;

static ursa_rwlock_t g_rw;
static atomic_int g_rd_in, g_wr_in, g_rd_max;

static ursa_mvar_t g_mv;
static atomic_uchar g_mv_seen[(MIX_THREADS / 2) * MIX_MVAR_EACH];
static atomic_int g_mv_puts, g_mv_takes;

static ursa_ivar_t g_iv[MIX_IVARS];
static atomic_int g_iv_reads;

static atomic_long g_ops[7];

/* *max = the larger of *max and v. */
static void atomic_max(atomic_int *max, int v) {
  int m = atomic_load(max);
  while (v > m && !atomic_compare_exchange_weak(max, &m, v)) {}
}

/* A try-operation, retried after a yield a few times, then the blocking one. */
#define TRY_OR_BLOCK(try_call, busy, block_call)                                      \
  do {                                                                                \
    int tries_ = 0, t_;                                                               \
    while ((t_ = (try_call)) == (busy) && ++tries_ < 3) ursa_yield();                 \
    if (t_ == (busy)) ASSERT_OK(block_call);                                          \
    else ASSERT_OK(t_);                                                               \
  } while (0)

static void mix_mutex(uint64_t *s) {
  struct timespec ts;
  unsigned how = rnd(s, 3), depth = 1 + rnd(s, 2), k;
  if (how == 0) ASSERT_OK(ursa_mutex_lock(&g_mx));
  else if (how == 1) { ts = test_deadline_in(clocks[rnd(s, 2)], 10000 * MS); ASSERT_OK(ursa_mutex_timedlock(&g_mx, CLOCK_MONOTONIC, &ts)); }
  else TRY_OR_BLOCK(ursa_mutex_trylock(&g_mx), -EBUSY, ursa_mutex_lock(&g_mx));
  ASSERT_EQ(atomic_exchange(&g_mx_in, 1), 0);   /* mutual exclusion */
  for (k = 1; k < depth; k++) ASSERT_OK(ursa_mutex_lock(&g_mx));   /* recursion */
  yield_n(rnd(s, 3));
  ASSERT_EQ(atomic_load(&g_mx_in), 1);
  for (k = 1; k < depth; k++) ASSERT_OK(ursa_mutex_unlock(&g_mx));
  ASSERT_EQ(atomic_exchange(&g_mx_in, 0), 1);
  ASSERT_OK(ursa_mutex_unlock(&g_mx));
  atomic_fetch_add(&g_ops[0], 1);
}

static void mix_sem(uint64_t *s) {
  struct timespec ts;
  unsigned how = rnd(s, 3);
  int h;
  if (how == 0) ASSERT_OK(ursa_sem_wait(&g_sem));
  else if (how == 1) { int c = clocks[rnd(s, 2)]; ts = test_deadline_in(c, 10000 * MS); ASSERT_OK(ursa_sem_timedwait(&g_sem, c, &ts)); }
  else TRY_OR_BLOCK(ursa_sem_trywait(&g_sem), -EAGAIN, ursa_sem_wait(&g_sem));
  h = atomic_fetch_add(&g_sem_holders, 1) + 1;
  ASSERT_LE(h, MIX_SEM_UNITS);               /* never more holders than units */
  atomic_max(&g_sem_max, h);
  yield_n(rnd(s, 4));
  ASSERT_GE(atomic_fetch_sub(&g_sem_holders, 1), 1);
  ASSERT_OK(ursa_sem_post(&g_sem));
  atomic_fetch_add(&g_ops[1], 1);
}

static void mix_cond(uint64_t *s) {
  ASSERT_OK(ursa_mutex_lock(&g_cmx));
  while (g_cond_avail == 0) ASSERT_OK(ursa_cond_wait(&g_ccv, &g_cmx));
  g_cond_avail--;
  ASSERT_LE(atomic_fetch_add(&g_cond_in, 1) + 1, MIX_COND_UNITS);
  ASSERT_OK(ursa_mutex_unlock(&g_cmx));
  yield_n(rnd(s, 3));
  ASSERT_OK(ursa_mutex_lock(&g_cmx));
  g_cond_avail++;
  ASSERT_GE(atomic_fetch_sub(&g_cond_in, 1), 1);
  if (rnd(s, 2)) ASSERT_OK(ursa_cond_signal(&g_ccv));
  else ASSERT_OK(ursa_cond_broadcast(&g_ccv));
  ASSERT_OK(ursa_mutex_unlock(&g_cmx));
  atomic_fetch_add(&g_ops[2], 1);
}

static void mix_read(uint64_t *s) {
  struct timespec ts;
  unsigned how = rnd(s, 3);
  if (how == 0) ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  else if (how == 1) { ts = test_deadline_in(CLOCK_MONOTONIC, 10000 * MS); ASSERT_OK(ursa_rwlock_timedrdlock(&g_rw, CLOCK_MONOTONIC, &ts)); }
  else TRY_OR_BLOCK(ursa_rwlock_tryrdlock(&g_rw), -EBUSY, ursa_rwlock_rdlock(&g_rw));
  ASSERT_EQ(atomic_load(&g_wr_in), 0);       /* holds it the moment it returns */
  atomic_max(&g_rd_max, atomic_fetch_add(&g_rd_in, 1) + 1);
  if (rnd(s, 4) == 0) {                      /* recursive read, even with a writer waiting */
    ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
    yield_n(rnd(s, 2));
    ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  }
  yield_n(rnd(s, 3));
  ASSERT_EQ(atomic_load(&g_wr_in), 0);
  ASSERT_GE(atomic_fetch_sub(&g_rd_in, 1), 1);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  atomic_fetch_add(&g_ops[3], 1);
}

static void mix_write(uint64_t *s) {
  struct timespec ts;
  unsigned how = rnd(s, 3);
  if (how == 0) ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  else if (how == 1) { ts = test_deadline_in(CLOCK_REALTIME, 10000 * MS); ASSERT_OK(ursa_rwlock_timedwrlock(&g_rw, CLOCK_REALTIME, &ts)); }
  else TRY_OR_BLOCK(ursa_rwlock_trywrlock(&g_rw), -EBUSY, ursa_rwlock_wrlock(&g_rw));
  ASSERT_EQ(atomic_exchange(&g_wr_in, 1), 0);
  ASSERT_EQ(atomic_load(&g_rd_in), 0);
  yield_n(rnd(s, 3));
  ASSERT_EQ(atomic_load(&g_rd_in), 0);
  ASSERT_EQ(atomic_exchange(&g_wr_in, 0), 1);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  atomic_fetch_add(&g_ops[4], 1);
}

static void mix_ivar(uint64_t *s) {
  void *v;
  unsigned i = rnd(s, MIX_IVARS);
  ASSERT_OK(ursa_ivar_get(&g_iv[i], &v));    /* may wait for its writer */
  ASSERT_PTR_EQ(v, (void *)(intptr_t)(1000 + i));
  atomic_fetch_add(&g_iv_reads, 1);
  atomic_fetch_add(&g_ops[5], 1);
}

/* Even threads put their values, odd threads take as many: every value is taken exactly once. */
static void mix_mvar(int id, int nth) {
  if (id % 2 == 0) {
    int val = (id / 2) * mix_mvar_each + nth;
    ASSERT_OK(ursa_mvar_put(&g_mv, (void *)(intptr_t)(val + 1)));
    atomic_fetch_add(&g_mv_puts, 1);
  } else {
    void *v;
    int val;
    ASSERT_OK(ursa_mvar_take(&g_mv, &v));
    val = (int)(intptr_t)v - 1;
    ASSERT(val >= 0 && val < (mix_threads / 2) * mix_mvar_each);
    ASSERT_EQ(atomic_exchange(&g_mv_seen[val], 1), 0);   /* taken once */
    atomic_fetch_add(&g_mv_takes, 1);
  }
  atomic_fetch_add(&g_ops[6], 1);
}

static void *mix_worker(void *arg) {
  int id = (int)(intptr_t)arg, i, nth = 0;
  uint64_t s = thread_seed(g_seed, id);
  if (id % (mix_threads / MIX_IVARS) == 0) {  /* ten threads each write one I-structure first */
    int k = id / (mix_threads / MIX_IVARS);
    ASSERT_OK(ursa_ivar_put(&g_iv[k], (void *)(intptr_t)(1000 + k)));
  }
  for (i = 0; i < mix_ops; i++) {
    switch (rnd(&s, 6)) {
    case 0: mix_mutex(&s); break;
    case 1: mix_sem(&s); break;
    case 2: mix_cond(&s); break;
    case 3: mix_read(&s); break;
    case 4: mix_write(&s); break;
    default: mix_ivar(&s); break;
    }
    if (i % MIX_MVAR_EVERY == id % MIX_MVAR_EVERY) mix_mvar(id, nth++);
    yield_n(rnd(&s, 2));
  }
  ASSERT_EQ(nth, mix_mvar_each);
  return (void *)(intptr_t)(id + 1);
}

TEST_IMPL(stress_mixed_sync_1000_threads) {
  static ursa_thread_t t[MIX_THREADS];
  ursa_stats_t st;
  uint64_t t0 = test_now_ns();
  long total = 0;
  void *r;
  int i, v;
  g_seed = stress_seed("stress_mixed_sync_1000_threads");
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_mx, URSA_MUTEX_RECURSIVE));
  ASSERT_OK(ursa_sem_init(&g_sem, MIX_SEM_UNITS));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  for (i = 0; i < MIX_IVARS; i++) ASSERT_OK(ursa_ivar_init(&g_iv[i]));
  if (ursa_vp_count() > 1) {
    mix_threads = MIX_THREADS_SMP;
    mix_ops = MIX_OPS_SMP;
  }
  for (i = 0; i < mix_threads; i++) ASSERT_OK(ursa_create(&t[i], NULL, mix_worker, (void *)(intptr_t)i));
  for (i = 0; i < mix_threads; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    ASSERT_EQ((intptr_t)r, i + 1);
  }
  /* Conservation and final states. */
  ASSERT_OK(ursa_sem_getvalue(&g_sem, &v));
  ASSERT_EQ(v, MIX_SEM_UNITS);               /* no unit lost or made up */
  ASSERT_EQ(atomic_load(&g_sem_holders), 0);
  ASSERT_EQ(atomic_load(&g_sem_max), MIX_SEM_UNITS);   /* and the semaphore was really contended */
  ASSERT_EQ(g_cond_avail, MIX_COND_UNITS);
  ASSERT_EQ(atomic_load(&g_cond_in), 0);
  ASSERT_EQ(atomic_load(&g_mx_in), 0);
  ASSERT_EQ(atomic_load(&g_rd_in) + atomic_load(&g_wr_in), 0);
  ASSERT_GT(atomic_load(&g_rd_max), 1);      /* readers did share */
  ASSERT_EQ(atomic_load(&g_mv_puts), (mix_threads / 2) * mix_mvar_each);
  ASSERT_EQ(atomic_load(&g_mv_takes), atomic_load(&g_mv_puts));
  for (i = 0; i < (mix_threads / 2) * mix_mvar_each; i++) ASSERT_EQ(atomic_load(&g_mv_seen[i]), 1);
  for (i = 0; i < 7; i++) total += atomic_load(&g_ops[i]);
  ASSERT_EQ(total, (long)mix_threads * mix_ops + (long)mix_threads * mix_mvar_each);
  ASSERT_EQ(atomic_load(&g_iv_reads), atomic_load(&g_ops[5]));
  ASSERT_OK(ursa_mutex_trylock(&g_mx));      /* everything is free again */
  ASSERT_OK(ursa_mutex_unlock(&g_mx));
  ASSERT_OK(ursa_rwlock_trywrlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  {
    void *x;
    ASSERT_ERR(ursa_mvar_trytake(&g_mv, &x), -EAGAIN);
  }
  ASSERT_OK(ursa_mutex_destroy(&g_mx));
  ASSERT_OK(ursa_sem_destroy(&g_sem));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_cond_destroy(&g_ccv));
  ASSERT_OK(ursa_mutex_destroy(&g_cmx));
  for (i = 0; i < MIX_IVARS; i++) ASSERT_OK(ursa_ivar_destroy(&g_iv[i]));
  ASSERT_OK(ursa_stats(&st));
  printf("%d threads on %u VP(s); ops: mutex %ld sem %ld cond %ld read %ld write %ld ivar %ld mvar %ld; "
         "switches %llu blocks %llu; %.0f ms\n", mix_threads, ursa_vp_count(),
         atomic_load(&g_ops[0]), atomic_load(&g_ops[1]), atomic_load(&g_ops[2]), atomic_load(&g_ops[3]),
         atomic_load(&g_ops[4]), atomic_load(&g_ops[5]), atomic_load(&g_ops[6]),
         (unsigned long long)st.switches, (unsigned long long)st.blocks,
         (double)(test_now_ns() - t0) / 1e6);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Thread churn: thousands of create / join / detach cycles, in random orders.
 * ========================================================================================== */

#define CHURN_ROUNDS 80
#define CHURN_BATCH 250
/* Counted from threads that may run on any VP (with the rotator's interval timer they do move):
 * atomics, not CM-style plain counters. */
static atomic_int g_detached_done, g_children;

static void *churn_leaf(void *arg) {
  uintptr_t v = (uintptr_t)arg;
  if (v & 1) ursa_yield();
  return (void *)(v * 3);
}

static void *churn_detached(void *arg) {
  if ((uintptr_t)arg & 1) ursa_yield();
  atomic_fetch_add(&g_detached_done, 1);
  return NULL;
}

static void *churn_exit(void *arg) {
  ursa_yield();
  ursa_exit((void *)((uintptr_t)arg * 3));
}

static void *churn_parent(void *arg) {
  ursa_thread_t c[3];
  void *r;
  int i;
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_create(&c[i], NULL, churn_leaf, (void *)(uintptr_t)(i + 1)));
  for (i = 2; i >= 0; i--) {
    ASSERT_OK(ursa_join(c[i], &r));
    ASSERT_EQ((uintptr_t)r, (uintptr_t)(i + 1) * 3);
    atomic_fetch_add(&g_children, 1);
  }
  return (void *)((uintptr_t)arg * 3);
}

TEST_IMPL(stress_create_join_detach_churn) {
  static ursa_thread_t t[CHURN_BATCH];
  static int kind[CHURN_BATCH], perm[CHURN_BATCH];
  ursa_attr_t det, small;
  ursa_stats_t st;
  uint64_t s = stress_seed("stress_create_join_detach_churn"), t0 = test_now_ns();
  long joined = 0, detached = 0, created = 0;
  int round, i;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&det));
  ASSERT_OK(ursa_attr_setdetached(&det, 1));
  ASSERT_OK(ursa_attr_init(&small));
  ASSERT_OK(ursa_attr_setstacksize(&small, URSA_STACK_MIN));   /* not from the pool: map/unmap */
  for (round = 0; round < CHURN_ROUNDS; round++) {
    for (i = 0; i < CHURN_BATCH; i++) {
      uintptr_t arg = (uintptr_t)(round * CHURN_BATCH + i + 1);
      kind[i] = (int)rnd(&s, 6);
      switch (kind[i]) {
      case 0: ASSERT_OK(ursa_create(&t[i], NULL, churn_leaf, (void *)arg)); break;
      case 1: ASSERT_OK(ursa_create(i % 2 ? NULL : &t[i], &det, churn_detached, (void *)arg)); detached++; break;
      case 2: ASSERT_OK(ursa_create(&t[i], NULL, churn_detached, (void *)arg));
              ASSERT_OK(ursa_detach(t[i])); detached++; break;
      case 3: ASSERT_OK(ursa_create(&t[i], NULL, churn_parent, (void *)arg)); created += 3; break;
      case 4: ASSERT_OK(ursa_create(&t[i], NULL, churn_exit, (void *)arg)); break;
      default: ASSERT_OK(ursa_create(&t[i], &small, churn_leaf, (void *)arg)); break;
      }
      created++;
      if (rnd(&s, 8) == 0) ursa_yield();    /* let some finish before the batch is complete */
    }
    for (i = 0; i < CHURN_BATCH; i++) perm[i] = i;              /* join in a random order */
    for (i = CHURN_BATCH - 1; i > 0; i--) {
      int j = (int)rnd(&s, (unsigned)i + 1), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    for (i = 0; i < CHURN_BATCH; i++) {
      int k = perm[i];
      if (kind[k] == 1 || kind[k] == 2) continue;
      ASSERT_OK(ursa_join(t[k], &r));
      ASSERT_EQ((uintptr_t)r, (uintptr_t)(round * CHURN_BATCH + k + 1) * 3);
      joined++;
    }
    URSA_WAITFOR(atomic_load(&g_detached_done) == detached);
    ursa_yield();                           /* the last detached one is released by the next switch */
    for (i = 0; i < CHURN_BATCH; i++) {     /* every handle of the round is stale now */
      if (kind[i] == 1 && i % 2) continue;
      if ((kind[i] == 1 || kind[i] == 2) && ursa_vp_count() > 1) {
        /* several VPs: a detached thread that counted itself may still be finishing on another
         * VP; until its handle is released, join says it is detached (-EINVAL) */
        int rj = ursa_join(t[i], NULL), rd = ursa_detach(t[i]);
        if ((rj != -ESRCH && rj != -EINVAL) || (rd != -ESRCH && rd != -EINVAL))
          FAIL("a detached thread's handle: join %d, detach %d (-ESRCH or -EINVAL)", rj, rd);
        continue;
      }
      ASSERT_ERR(ursa_join(t[i], NULL), -ESRCH);
      ASSERT_ERR(ursa_detach(t[i]), -ESRCH);
    }
  }
  ASSERT_EQ(atomic_load(&g_children), (int)(created - joined - detached));
  ASSERT_OK(ursa_stats(&st));
  ASSERT_EQ(st.created, (uint64_t)created);
  printf("%ld threads: %ld joined, %ld detached, %d grandchildren; %.0f ms\n", created, joined,
         detached, atomic_load(&g_children), (double)(test_now_ns() - t0) / 1e6);
  ASSERT_OK(ursa_attr_destroy(&det));
  ASSERT_OK(ursa_attr_destroy(&small));
  ASSERT_OK(ursa_fini());                    /* -EBUSY if any thread were left over */
  return 0;
}

/* ============================================================================================
 * Timed waits racing with posts, unlocks and signals: some time out, some succeed, nothing lost.
 * ========================================================================================== */

#define TS_WAITERS 300
#define TS_WAITS 5
#define TS_POSTERS 40
#define TS_POSTS 12
static atomic_int g_ts_ok, g_ts_timeout, g_ts_posted;

static void *ts_waiter(void *arg) {
  uint64_t s = thread_seed(g_seed, (int)(intptr_t)arg);
  int i;
  for (i = 0; i < TS_WAITS; i++) {
    int c = clocks[rnd(&s, 2)], r;
    struct timespec ts = test_deadline_in(c, rnd(&s, 3000) * 1000u);     /* 0 .. 3 ms, sometimes "now" */
    r = ursa_sem_timedwait(&g_sem, c, &ts);
    if (r == 0) atomic_fetch_add(&g_ts_ok, 1);
    else { ASSERT_EQ(r, -ETIMEDOUT); atomic_fetch_add(&g_ts_timeout, 1); }
    yield_n(rnd(&s, 2));
  }
  return NULL;
}

static void *ts_poster(void *arg) {
  uint64_t s = thread_seed(g_seed, 100000 + (int)(intptr_t)arg);
  int i;
  for (i = 0; i < TS_POSTS; i++) {
    ASSERT_OK(ursa_sleep_ns(rnd(&s, 1000) * 1000u));          /* 0 .. 1 ms */
    ASSERT_OK(ursa_sem_post(&g_sem));
    atomic_fetch_add(&g_ts_posted, 1);
  }
  return NULL;
}

TEST_IMPL(stress_timed_sem_races_post) {
  static ursa_thread_t w[TS_WAITERS], p[TS_POSTERS];
  ursa_stats_t st;
  uint64_t t0 = test_now_ns();
  int i, v;
  g_seed = stress_seed("stress_timed_sem_races_post");
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&g_sem, 0));
  for (i = 0; i < TS_WAITERS; i++) {
    ASSERT_OK(ursa_create(&w[i], NULL, ts_waiter, (void *)(intptr_t)i));
    if (i < TS_POSTERS) ASSERT_OK(ursa_create(&p[i], NULL, ts_poster, (void *)(intptr_t)i));
  }
  for (i = 0; i < TS_WAITERS; i++) ASSERT_OK(ursa_join(w[i], NULL));
  for (i = 0; i < TS_POSTERS; i++) ASSERT_OK(ursa_join(p[i], NULL));
  ASSERT_OK(ursa_sem_getvalue(&g_sem, &v));
  ASSERT_EQ(atomic_load(&g_ts_ok) + atomic_load(&g_ts_timeout), TS_WAITERS * TS_WAITS);
  ASSERT_EQ(atomic_load(&g_ts_posted), TS_POSTERS * TS_POSTS);
  ASSERT_EQ(atomic_load(&g_ts_ok) + v, atomic_load(&g_ts_posted));   /* every unit taken once or still there */
  ASSERT_GT(atomic_load(&g_ts_ok), 0);
  ASSERT_GT(atomic_load(&g_ts_timeout), 0);  /* more waits than posts: some must time out */
  ASSERT_OK(ursa_stats(&st));
  printf("%d waits succeeded, %d timed out, %d units left; %llu timers fired; %.0f ms\n",
         atomic_load(&g_ts_ok), atomic_load(&g_ts_timeout), v, (unsigned long long)st.timers, (double)(test_now_ns() - t0) / 1e6);
  ASSERT_OK(ursa_sem_destroy(&g_sem));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* Mutex, condition and rwlock timed waits against holders that sleep while holding. */
#define TL_THREADS 240
#define TL_ITERS 6
static ursa_mutex_t g_tm;                    /* errorcheck: shows who holds it */
static ursa_cond_t g_tc;
static atomic_int g_tm_in;                   /* threads inside g_tm: 0 or 1 */
static int g_tokens, g_tokens_made, g_tokens_used;   /* guarded by g_tm */
static atomic_int g_tl_ok[3], g_tl_to[3];

static void *tl_worker(void *arg) {
  int id = (int)(intptr_t)arg, i;
  uint64_t s = thread_seed(g_seed, 200000 + id);
  for (i = 0; i < TL_ITERS; i++) {
    int c = clocks[rnd(&s, 2)], r;
    struct timespec ts = test_deadline_in(c, rnd(&s, 2000) * 1000u);
    switch ((id + i) % 4) {
    case 0:                                  /* timed mutex against sleeping holders */
      r = ursa_mutex_timedlock(&g_tm, c, &ts);
      if (r == -ETIMEDOUT) { atomic_fetch_add(&g_tl_to[0], 1); break; }
      ASSERT_EQ(r, 0);
      ASSERT_EQ(atomic_exchange(&g_tm_in, 1), 0);
      atomic_fetch_add(&g_tl_ok[0], 1);
      ASSERT_OK(ursa_sleep_ns(rnd(&s, 300) * 1000u));
      ASSERT_EQ(atomic_exchange(&g_tm_in, 0), 1);
      ASSERT_OK(ursa_mutex_unlock(&g_tm));
      break;
    case 1:                                  /* producer: a token and a signal, half the time */
      if (rnd(&s, 2)) break;
      ASSERT_OK(ursa_mutex_lock(&g_tm));
      ASSERT_EQ(atomic_load(&g_tm_in), 0);
      g_tokens++;
      g_tokens_made++;
      ASSERT_OK(rnd(&s, 2) ? ursa_cond_signal(&g_tc) : ursa_cond_broadcast(&g_tc));
      ASSERT_OK(ursa_mutex_unlock(&g_tm));
      ASSERT_OK(ursa_sleep_ns(rnd(&s, 500) * 1000u));
      break;
    case 2:                                  /* consumer with a deadline */
      ASSERT_OK(ursa_mutex_lock(&g_tm));
      r = 0;
      while (g_tokens == 0 && r == 0) r = ursa_cond_timedwait(&g_tc, &g_tm, c, &ts);
      ASSERT_ERR(ursa_mutex_lock(&g_tm), -EDEADLK);   /* re-held, timed out or not */
      ASSERT_EQ(atomic_load(&g_tm_in), 0);
      if (g_tokens > 0) { g_tokens--; g_tokens_used++; atomic_fetch_add(&g_tl_ok[1], 1); }
      else { ASSERT_EQ(r, -ETIMEDOUT); atomic_fetch_add(&g_tl_to[1], 1); }
      ASSERT_OK(ursa_mutex_unlock(&g_tm));
      break;
    default:                                 /* timed rwlock against sleeping holders */
      if (rnd(&s, 3) == 0) {
        r = ursa_rwlock_timedwrlock(&g_rw, c, &ts);
        if (r == -ETIMEDOUT) { atomic_fetch_add(&g_tl_to[2], 1); break; }
        ASSERT_EQ(r, 0);
        ASSERT_EQ(atomic_exchange(&g_wr_in, 1), 0);
        ASSERT_EQ(atomic_load(&g_rd_in), 0);
        ASSERT_OK(ursa_sleep_ns(rnd(&s, 300) * 1000u));
        ASSERT_EQ(atomic_load(&g_rd_in), 0);
        ASSERT_EQ(atomic_exchange(&g_wr_in, 0), 1);
      } else {
        r = ursa_rwlock_timedrdlock(&g_rw, c, &ts);
        if (r == -ETIMEDOUT) { atomic_fetch_add(&g_tl_to[2], 1); break; }
        ASSERT_EQ(r, 0);
        ASSERT_EQ(atomic_load(&g_wr_in), 0);
        atomic_fetch_add(&g_rd_in, 1);
        ASSERT_OK(ursa_sleep_ns(rnd(&s, 300) * 1000u));
        ASSERT_EQ(atomic_load(&g_wr_in), 0);
        ASSERT_GE(atomic_fetch_sub(&g_rd_in, 1), 1);
      }
      atomic_fetch_add(&g_tl_ok[2], 1);
      ASSERT_OK(ursa_rwlock_unlock(&g_rw));
      break;
    }
    yield_n(rnd(&s, 2));
  }
  return NULL;
}

TEST_IMPL(stress_timed_locks_race_holders) {
  static ursa_thread_t t[TL_THREADS];
  uint64_t t0 = test_now_ns();
  int i;
  g_seed = stress_seed("stress_timed_locks_race_holders");
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_tm, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&g_tc));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  for (i = 0; i < TL_THREADS; i++) ASSERT_OK(ursa_create(&t[i], NULL, tl_worker, (void *)(intptr_t)i));
  for (i = 0; i < TL_THREADS; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_tokens_made, g_tokens_used + g_tokens);   /* no token lost or used twice */
  ASSERT_EQ(atomic_load(&g_tm_in), 0);
  ASSERT_EQ(atomic_load(&g_rd_in) + atomic_load(&g_wr_in), 0);
  for (i = 0; i < 3; i++) ASSERT_GT(atomic_load(&g_tl_ok[i]), 0);
  ASSERT_GT(atomic_load(&g_tl_to[1]), 0);   /* fewer tokens than consumers: some time out */
  ASSERT_GT(atomic_load(&g_tl_to[0]) + atomic_load(&g_tl_to[2]), 0);
  ASSERT_OK(ursa_mutex_trylock(&g_tm));
  ASSERT_OK(ursa_mutex_unlock(&g_tm));
  ASSERT_OK(ursa_rwlock_trywrlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  printf("mutex %d ok / %d timed out, cond %d ok / %d timed out, rwlock %d ok / %d timed out; "
         "tokens made %d used %d left %d; %.0f ms\n", atomic_load(&g_tl_ok[0]), atomic_load(&g_tl_to[0]),
         atomic_load(&g_tl_ok[1]), atomic_load(&g_tl_to[1]), atomic_load(&g_tl_ok[2]),
         atomic_load(&g_tl_to[2]), g_tokens_made, g_tokens_used, g_tokens,
         (double)(test_now_ns() - t0) / 1e6);
  ASSERT_OK(ursa_mutex_destroy(&g_tm));
  ASSERT_OK(ursa_cond_destroy(&g_tc));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * M-structure pipeline: a chain of cells, each stage takes from one and puts into the next.
 * ========================================================================================== */

#define PIPE_STAGES 50
#define PIPE_ITEMS 2000
static ursa_mvar_t g_pipe[PIPE_STAGES + 1];

static void *pipe_stage(void *arg) {
  int k = (int)(intptr_t)arg, i;
  for (i = 0; i < PIPE_ITEMS; i++) {
    void *v;
    ASSERT_OK(ursa_mvar_take(&g_pipe[k], &v));
    ASSERT_OK(ursa_mvar_put(&g_pipe[k + 1], (void *)((uintptr_t)v + 1)));
  }
  return NULL;
}

TEST_IMPL(stress_mvar_pipeline_fifo) {
  static ursa_thread_t t[PIPE_STAGES];
  uint64_t s = stress_seed("stress_mvar_pipeline_fifo"), t0 = test_now_ns();
  int i, put = 0, got = 0;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i <= PIPE_STAGES; i++) ASSERT_OK(ursa_mvar_init(&g_pipe[i]));
  for (i = 0; i < PIPE_STAGES; i++) ASSERT_OK(ursa_create(&t[i], NULL, pipe_stage, (void *)(intptr_t)i));
  while (got < PIPE_ITEMS) {                 /* feed and drain in random bursts */
    void *v;
    if (put < PIPE_ITEMS && rnd(&s, 2)) {
      if (ursa_mvar_tryput(&g_pipe[0], (void *)(uintptr_t)(put * 1000)) == 0) put++;
    } else if (ursa_mvar_trytake(&g_pipe[PIPE_STAGES], &v) == 0) {
      ASSERT_EQ((uintptr_t)v, (uintptr_t)got * 1000 + PIPE_STAGES);   /* in order, each once */
      got++;
    }
    yield_n(rnd(&s, 3));
  }
  for (i = 0; i < PIPE_STAGES; i++) ASSERT_OK(ursa_join(t[i], NULL));
  for (i = 0; i <= PIPE_STAGES; i++) ASSERT_OK(ursa_mvar_destroy(&g_pipe[i]));
  printf("%d items through %d stages; %.0f ms\n", PIPE_ITEMS, PIPE_STAGES, (double)(test_now_ns() - t0) / 1e6);
  ASSERT_OK(ursa_fini());
  return 0;
}
