/* Synchronization objects: semaphores, mutexes, condition variables, barriers, rwlocks, once, keys, I- and M-structures. */
#include "task.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

#define MS 1000000ull

static const int clocks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };

/* An absolute deadline ns from now on clock. */

static uint64_t blocks_now(void) {
  ursa_stats_t s;
  ASSERT_OK(ursa_stats(&s));
  return s.blocks;
}

/* State shared by the scenarios of one test (each test runs in its own process). */
static int g_nwaiting, g_done;
static int g_arrival[32], g_narrival;     /* order in which threads reached the blocking call */
static int g_order[32], g_norder;         /* order in which they came out of it             */
static int g_go[32];                      /* per-thread release flags                        */

/* Thread i yields (n - 1 - i) times before it arrives, so arrival order is the reverse of
 * creation order: FIFO checks then compare against the real arrival order. */
static void arrive_reversed(int id, int n) {
  int k;
  for (k = 0; k < n - 1 - id; k++) ursa_yield();
  g_arrival[g_narrival++] = id;
  g_nwaiting++;
}

/* ============================================================================================
 * Semaphores
 * ========================================================================================== */

TEST_IMPL(sync_sem_basic) {
  ursa_sem_t s;
  int v, i;
  uint64_t b0;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 2));
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 2);
  ASSERT_OK(ursa_sem_wait(&s));
  ASSERT_OK(ursa_sem_trywait(&s));
  ASSERT_ERR(ursa_sem_trywait(&s), -EAGAIN);
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 0);
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 3);
  b0 = blocks_now();
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_sem_wait(&s));   /* units available: no blocking */
  ASSERT_EQ(blocks_now(), b0);
  ASSERT_ERR(ursa_sem_trywait(&s), -EAGAIN);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_sem_init(&s, URSA_SEM_VALUE_MAX));
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, INT_MAX);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_sem_t g_sem;

static void *sem_fifo_waiter(void *arg) {
  int id = (int)(intptr_t)arg;
  arrive_reversed(id, 6);
  ASSERT_OK(ursa_sem_wait(&g_sem));
  g_order[g_norder++] = id;
  return NULL;
}

TEST_IMPL(sync_sem_fifo_wakeup) {
  ursa_thread_t t[6];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&g_sem, 0));
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_create(&t[i], NULL, sem_fifo_waiter, (void *)(intptr_t)i));
  URSA_WAITFOR(g_nwaiting == 6);             /* all six are now blocked in sem_wait */
  ASSERT_EQ(g_arrival[0], 5);                /* arrival is reversed */
  for (i = 0; i < 6; i++) {
    ASSERT_OK(ursa_sem_post(&g_sem));
    URSA_WAITFOR(g_norder == i + 1);
    ASSERT_EQ(g_order[i], g_arrival[i]);     /* exactly one wakes, the longest waiter */
    ursa_yield();
    ASSERT_EQ(g_norder, i + 1);
  }
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_sem_destroy(&g_sem));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *sem_plain_waiter(void *arg) {
  (void)arg;
  g_nwaiting++;
  return (void *)(intptr_t)ursa_sem_wait(&g_sem);
}

TEST_IMPL(sync_sem_post_hands_unit_to_waiter) {
  ursa_thread_t t;
  void *r;
  int v;
  struct timespec past = { 0, 0 };
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&g_sem, 0));
  ASSERT_OK(ursa_create(&t, NULL, sem_plain_waiter, NULL));
  URSA_WAITFOR(g_nwaiting == 1);             /* t is blocked on the semaphore */
  ASSERT_OK(ursa_sem_post(&g_sem));          /* does not switch: t is ready, holding the unit */
  ASSERT_ERR(ursa_sem_trywait(&g_sem), -EAGAIN);
  ASSERT_ERR(ursa_sem_timedwait(&g_sem, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
  ASSERT_OK(ursa_sem_getvalue(&g_sem, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_EQ((intptr_t)r, 0);
  ASSERT_OK(ursa_sem_getvalue(&g_sem, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(ursa_sem_destroy(&g_sem));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_sem_timedwait_timeout) {
  ursa_sem_t s;
  struct timespec ts, past = { 0, 0 };
  uint64_t t0, el;
  int c, v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  for (c = 0; c < 2; c++) {
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[c], 30 * MS);
    ASSERT_ERR(ursa_sem_timedwait(&s, clocks[c], &ts), -ETIMEDOUT);
    el = test_now_ns() - t0;
    ASSERT_GE(el, 29 * MS);
    ASSERT_LT(el, 2000 * MS);
    ASSERT_OK(ursa_sem_getvalue(&s, &v));
    ASSERT_EQ(v, 0);
  }
  /* A deadline in the past still tries once. */
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_REALTIME, &past), -ETIMEDOUT);
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &past));
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_sem_timedwait(&s, CLOCK_REALTIME, &past));
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *sem_post_after_10ms(void *arg) {
  ASSERT_OK(ursa_sleep_ns(10 * MS));
  ASSERT_OK(ursa_sem_post(arg));
  return NULL;
}

TEST_IMPL(sync_sem_timedwait_success) {
  ursa_sem_t s;
  ursa_thread_t t;
  struct timespec ts;
  uint64_t t0, el;
  int c, v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  for (c = 0; c < 2; c++) {
    ASSERT_OK(ursa_create(&t, NULL, sem_post_after_10ms, &s));
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[c], 5000 * MS);
    ASSERT_OK(ursa_sem_timedwait(&s, clocks[c], &ts));
    el = test_now_ns() - t0;
    ASSERT_GE(el, 9 * MS);
    ASSERT_LT(el, 2000 * MS);                /* woken by the post, not by the deadline */
    ASSERT_OK(ursa_join(t, NULL));
    ASSERT_OK(ursa_sem_getvalue(&s, &v));
    ASSERT_EQ(v, 0);
  }
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *sem_timed_waiter_20ms(void *arg) {
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 20 * MS);
  (void)arg;
  g_nwaiting++;
  return (void *)(intptr_t)ursa_sem_timedwait(&g_sem, CLOCK_MONOTONIC, &ts);
}

TEST_IMPL(sync_sem_timeout_loses_no_unit) {
  ursa_thread_t a, b;
  ursa_stats_t st;
  void *ra, *rb;
  int v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&g_sem, 0));
  ASSERT_OK(ursa_create(&a, NULL, sem_timed_waiter_20ms, NULL));   /* first in the queue, timed */
  ASSERT_OK(ursa_create(&b, NULL, sem_plain_waiter, NULL));        /* second, untimed */
  URSA_WAITFOR(g_nwaiting == 2);
  ASSERT_OK(ursa_sleep_ns(40 * MS));         /* a times out and leaves the queue */
  ASSERT_OK(ursa_join(a, &ra));
  ASSERT_EQ((intptr_t)ra, -ETIMEDOUT);
  ASSERT_OK(ursa_sem_post(&g_sem));          /* must go to b, not to the timed-out a */
  ASSERT_ERR(ursa_sem_trywait(&g_sem), -EAGAIN);
  ASSERT_OK(ursa_join(b, &rb));
  ASSERT_EQ((intptr_t)rb, 0);
  ASSERT_OK(ursa_sem_getvalue(&g_sem, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(ursa_stats(&st));
  ASSERT_GE(st.timers, 2);                   /* a's timeout and main's sleep */
  ASSERT_OK(ursa_sem_destroy(&g_sem));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Mutexes
 * ========================================================================================== */

static void *trylock_other(void *m) {
  int r = ursa_mutex_trylock(m);
  if (r == 0) ASSERT_OK(ursa_mutex_unlock(m));
  return (void *)(intptr_t)r;
}

/* What ursa_mutex_trylock returns in another thread (which unlocks again when it got the lock). */
static int try_in_other_thread(ursa_mutex_t *m) {
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_create(&t, NULL, trylock_other, m));
  ASSERT_OK(ursa_join(t, &r));
  return (int)(intptr_t)r;
}

TEST_IMPL(sync_mutex_recursive_counts) {
  ursa_mutex_t m;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_RECURSIVE));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_OK(ursa_mutex_trylock(&m));         /* the owner's trylock counts too */
  ASSERT_EQ(try_in_other_thread(&m), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_EQ(try_in_other_thread(&m), -EBUSY);  /* one level still held */
  ASSERT_ERR(ursa_mutex_destroy(&m), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_ERR(ursa_mutex_unlock(&m), -EPERM);
  ASSERT_EQ(try_in_other_thread(&m), 0);
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_mutex_errorcheck_relock) {
  ursa_mutex_t m;
  struct timespec ts;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);
  ts = test_deadline_in(CLOCK_MONOTONIC, 1000 * MS);
  ASSERT_ERR(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts), -EDEADLK);
  ASSERT_EQ(try_in_other_thread(&m), -EBUSY); /* still held once */
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_ERR(ursa_mutex_unlock(&m), -EPERM);
  ASSERT_EQ(try_in_other_thread(&m), 0);
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ursa.h: trylock is "-EBUSY when held", tryrdlock and trywrlock are "-EBUSY" (POSIX: the lock is
 * "currently locked (by any thread, including the current thread)"); -EDEADLK belongs to the
 * blocking lock calls.  Only a recursive mutex (and a recursive read lock) counts instead. */
TEST_IMPL(sync_trylocks_by_holder_ebusy) {
  /* contract: trylock-held */
  ursa_mutex_t m;
  ursa_rwlock_t l;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_ERR(ursa_mutex_trylock(&m), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_rwlock_init(&l));
  ASSERT_OK(ursa_rwlock_rdlock(&l));
  ASSERT_OK(ursa_rwlock_tryrdlock(&l));      /* recursive read */
  ASSERT_ERR(ursa_rwlock_trywrlock(&l), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_OK(ursa_rwlock_wrlock(&l));
  ASSERT_ERR(ursa_rwlock_trywrlock(&l), -EBUSY);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&l), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_ERR(ursa_mutex_trylock(&m), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_mutex_normal_timed_relock_times_out) {
  ursa_mutex_t m;
  struct timespec ts;
  uint64_t t0;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_mutex_lock(&m));
  t0 = test_now_ns();
  ts = test_deadline_in(CLOCK_MONOTONIC, 20 * MS);
  ASSERT_ERR(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);  /* POSIX: relock waits */
  ASSERT_GE(test_now_ns() - t0, 19 * MS);
  ASSERT_EQ(try_in_other_thread(&m), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&m));          /* still the owner, once */
  ASSERT_ERR(ursa_mutex_unlock(&m), -EPERM);
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_mutex_trylock_busy_every_type) {
  /* contract: trylock-held */
  ursa_mutex_t m;
  int type;
  ASSERT_OK(ursa_init(NULL));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    ASSERT_OK(ursa_mutex_init(&m, type));
    ASSERT_EQ(try_in_other_thread(&m), 0);
    ASSERT_OK(ursa_mutex_trylock(&m));
    ASSERT_EQ(try_in_other_thread(&m), -EBUSY);
    ASSERT_OK(ursa_mutex_unlock(&m));
    ASSERT_EQ(try_in_other_thread(&m), 0);
    ASSERT_OK(ursa_mutex_destroy(&m));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

struct holder {
  ursa_mutex_t *m;
  uint64_t      ns;
  int           held;
};

static void *hold_mutex_for(void *arg) {
  struct holder *h = arg;
  ASSERT_OK(ursa_mutex_lock(h->m));
  h->held = 1;
  ASSERT_OK(ursa_sleep_ns(h->ns));
  h->held = 0;
  ASSERT_OK(ursa_mutex_unlock(h->m));
  return NULL;
}

TEST_IMPL(sync_mutex_timedlock) {
  ursa_mutex_t m;
  ursa_thread_t t;
  struct holder h;
  struct timespec ts;
  uint64_t t0, el;
  int c;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  for (c = 0; c < 2; c++) {
    h.m = &m; h.ns = 200 * MS; h.held = 0;
    ASSERT_OK(ursa_create(&t, NULL, hold_mutex_for, &h));
    URSA_WAITFOR(h.held);
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[c], 20 * MS);
    ASSERT_ERR(ursa_mutex_timedlock(&m, clocks[c], &ts), -ETIMEDOUT);
    el = test_now_ns() - t0;
    ASSERT_GE(el, 19 * MS);
    ASSERT_EQ(h.held, 1);                    /* timed out before the holder let go */
    ts = test_deadline_in(clocks[c], 5000 * MS);
    ASSERT_OK(ursa_mutex_timedlock(&m, clocks[c], &ts));   /* handed over at the holder's unlock */
    ASSERT_EQ(h.held, 0);
    ASSERT_LT(test_now_ns() - t0, 2000 * MS);
    ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);              /* we own it */
    ASSERT_OK(ursa_mutex_unlock(&m));
    ASSERT_OK(ursa_join(t, NULL));
  }
  /* Free mutex, past deadline: tries once and gets it. */
  ts.tv_sec = 0; ts.tv_nsec = 0;
  ASSERT_OK(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts));
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_mutex_t g_mx;
static int g_inside;

static void *mutex_fifo_locker(void *arg) {
  int id = (int)(intptr_t)arg;
  arrive_reversed(id, 5);
  ASSERT_OK(ursa_mutex_lock(&g_mx));
  ASSERT_EQ(g_inside, 0);
  g_inside = 1;
  g_order[g_norder++] = id;
  ursa_yield();                              /* others run meanwhile: none may get in */
  ursa_yield();
  g_inside = 0;
  ASSERT_OK(ursa_mutex_unlock(&g_mx));
  return NULL;
}

TEST_IMPL(sync_mutex_fifo_handoff) {
  ursa_thread_t t[5];
  int i, type;
  ASSERT_OK(ursa_init(NULL));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    g_nwaiting = g_narrival = g_norder = 0;
    ASSERT_OK(ursa_mutex_init(&g_mx, type));
    ASSERT_OK(ursa_mutex_lock(&g_mx));
    for (i = 0; i < 5; i++) ASSERT_OK(ursa_create(&t[i], NULL, mutex_fifo_locker, (void *)(intptr_t)i));
    URSA_WAITFOR(g_nwaiting == 5);           /* all five are blocked in lock */
    ASSERT_OK(ursa_mutex_unlock(&g_mx));     /* ownership goes to the first waiter now */
    ASSERT_ERR(ursa_mutex_trylock(&g_mx), -EBUSY);   /* the unlocker cannot barge back in */
    ASSERT_EQ(try_in_other_thread(&g_mx), -EBUSY);
    for (i = 0; i < 5; i++) ASSERT_OK(ursa_join(t[i], NULL));
    ASSERT_EQ(g_norder, 5);
    for (i = 0; i < 5; i++) ASSERT_EQ(g_order[i], g_arrival[i]);
    ASSERT_OK(ursa_mutex_destroy(&g_mx));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_mutex_t g_static_mx = URSA_MUTEX_INITIALIZER;
static int g_static_count;

static void *static_mutex_user(void *arg) {
  int i, v;
  (void)arg;
  for (i = 0; i < 100; i++) {
    ASSERT_OK(ursa_mutex_lock(&g_static_mx));
    ASSERT_EQ(g_inside, 0);
    g_inside = 1;
    v = g_static_count;
    ursa_yield();
    g_static_count = v + 1;
    g_inside = 0;
    ASSERT_OK(ursa_mutex_unlock(&g_static_mx));
  }
  return NULL;
}

TEST_IMPL(sync_mutex_static_initializer) {
  ursa_thread_t t[4];
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&t[i], NULL, static_mutex_user, NULL));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_static_count, 400);
  /* It is a NORMAL mutex that knows its owner. */
  ASSERT_OK(ursa_mutex_lock(&g_static_mx));
  ASSERT_EQ(try_in_other_thread(&g_static_mx), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&g_static_mx));
  ASSERT_ERR(ursa_mutex_unlock(&g_static_mx), -EPERM);
  ASSERT_OK(ursa_mutex_destroy(&g_static_mx));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Condition variables
 * ========================================================================================== */

static ursa_mutex_t g_cm;
static ursa_cond_t g_cv;
static int g_tokens, g_returns, g_woken;

static void *cond_token_waiter(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  g_nwaiting++;
  while (g_tokens == 0) {
    ASSERT_OK(ursa_cond_wait(&g_cv, &g_cm));
    g_returns++;                             /* every return from cond_wait, spurious or not */
  }
  g_tokens--;
  g_woken++;
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  return NULL;
}

TEST_IMPL(sync_cond_signal_wakes_one) {
  ursa_thread_t t[5];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_cm, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&g_cv));
  ASSERT_OK(ursa_cond_signal(&g_cv));        /* nobody waits: no effect, not remembered */
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&t[i], NULL, cond_token_waiter, NULL));
  URSA_WAITFOR(g_nwaiting == 4);
  for (i = 0; i < 10; i++) ursa_yield();
  ASSERT_EQ(g_returns, 0);
  for (i = 1; i <= 3; i++) {
    ASSERT_OK(ursa_mutex_lock(&g_cm));
    g_tokens++;
    ASSERT_OK(ursa_cond_signal(&g_cv));
    ASSERT_OK(ursa_mutex_unlock(&g_cm));
    URSA_WAITFOR(g_woken == i);
    {
      int k;
      for (k = 0; k < 10; k++) ursa_yield();
    }
    ASSERT_EQ(g_returns, i);                 /* exactly one waiter woke per signal */
    ASSERT_EQ(g_woken, i);
  }
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  g_tokens++;
  ASSERT_OK(ursa_cond_signal(&g_cv));
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_returns, 4);
  ASSERT_OK(ursa_cond_destroy(&g_cv));
  ASSERT_OK(ursa_mutex_destroy(&g_cm));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_cond_broadcast_wakes_all) {
  ursa_thread_t t[6];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_cm, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_cond_init(&g_cv));
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_create(&t[i], NULL, cond_token_waiter, NULL));
  URSA_WAITFOR(g_nwaiting == 6);
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  g_tokens = 6;
  ASSERT_OK(ursa_cond_broadcast(&g_cv));
  ASSERT_EQ(g_returns, 0);                   /* broadcast does not switch */
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_returns, 6);                   /* each waiter woke exactly once */
  ASSERT_EQ(g_woken, 6);
  ASSERT_OK(ursa_cond_broadcast(&g_cv));     /* no waiters: fine */
  ASSERT_OK(ursa_cond_destroy(&g_cv));
  ASSERT_OK(ursa_mutex_destroy(&g_cm));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *lock_then_hold_60ms(void *arg) {
  ursa_mutex_t *m = arg;
  ASSERT_OK(ursa_mutex_lock(m));             /* gets it while main waits on the condition */
  g_go[0] = 1;
  ASSERT_OK(ursa_sleep_ns(60 * MS));         /* main's deadline passes meanwhile */
  g_go[0] = 2;
  ASSERT_OK(ursa_mutex_unlock(m));
  return NULL;
}

TEST_IMPL(sync_cond_timedwait_timeout_reholds_mutex) {
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_thread_t t;
  struct timespec ts;
  uint64_t t0, el;
  int k;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&c));
  for (k = 0; k < 2; k++) {
    ASSERT_OK(ursa_mutex_lock(&m));
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[k], 20 * MS);
    ASSERT_ERR(ursa_cond_timedwait(&c, &m, clocks[k], &ts), -ETIMEDOUT);
    el = test_now_ns() - t0;
    ASSERT_GE(el, 19 * MS);
    ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);   /* we hold it again */
    ASSERT_EQ(try_in_other_thread(&m), -EBUSY);
    ASSERT_OK(ursa_mutex_unlock(&m));
  }
  /* The mutex is held by someone else when the deadline passes: the timed-out waiter returns only
   * once it holds the mutex again. */
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_OK(ursa_create(&t, NULL, lock_then_hold_60ms, &m));
  t0 = test_now_ns();
  ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_ERR(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
  el = test_now_ns() - t0;
  ASSERT_EQ(g_go[0], 2);                     /* the other thread had it, and released it */
  ASSERT_GE(el, 59 * MS);
  ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

static int g_flag;

static void *signal_after_10ms(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_sleep_ns(10 * MS));
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  g_flag = 1;
  ASSERT_OK(ursa_cond_signal(&g_cv));
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  return NULL;
}

TEST_IMPL(sync_cond_timedwait_success) {
  ursa_thread_t t;
  struct timespec ts;
  uint64_t t0;
  int k;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_cm, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&g_cv));
  for (k = 0; k < 2; k++) {
    g_flag = 0;
    ASSERT_OK(ursa_create(&t, NULL, signal_after_10ms, NULL));
    t0 = test_now_ns();
    ASSERT_OK(ursa_mutex_lock(&g_cm));
    ts = test_deadline_in(clocks[k], 5000 * MS);
    while (!g_flag) ASSERT_OK(ursa_cond_timedwait(&g_cv, &g_cm, clocks[k], &ts));
    ASSERT_ERR(ursa_mutex_lock(&g_cm), -EDEADLK);
    ASSERT_OK(ursa_mutex_unlock(&g_cm));
    ASSERT_LT(test_now_ns() - t0, 2000 * MS);
    ASSERT_OK(ursa_join(t, NULL));
  }
  ASSERT_OK(ursa_cond_destroy(&g_cv));
  ASSERT_OK(ursa_mutex_destroy(&g_cm));
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_mutex_t g_pp_mx = URSA_MUTEX_INITIALIZER;
static ursa_cond_t g_pp_cv = URSA_COND_INITIALIZER;
static int g_turn, g_pp_log[400], g_pp_n;

static void *ping_pong(void *arg) {
  int me = (int)(intptr_t)arg, i;
  for (i = 0; i < 200; i++) {
    ASSERT_OK(ursa_mutex_lock(&g_pp_mx));
    while (g_turn != me) ASSERT_OK(ursa_cond_wait(&g_pp_cv, &g_pp_mx));
    g_pp_log[g_pp_n++] = me;
    g_turn = 1 - me;
    ASSERT_OK(ursa_cond_signal(&g_pp_cv));
    ASSERT_OK(ursa_mutex_unlock(&g_pp_mx));
  }
  return NULL;
}

TEST_IMPL(sync_cond_static_initializer) {
  ursa_thread_t t[2];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t[0], NULL, ping_pong, (void *)(intptr_t)1));   /* waits first */
  ASSERT_OK(ursa_create(&t[1], NULL, ping_pong, (void *)(intptr_t)0));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_pp_n, 400);
  for (i = 0; i < 400; i++) ASSERT_EQ(g_pp_log[i], i % 2);
  ASSERT_OK(ursa_cond_destroy(&g_pp_cv));
  ASSERT_OK(ursa_mutex_destroy(&g_pp_mx));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *lock_set_signal(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_mutex_lock(&g_cm));         /* possible only if cond_wait released every level */
  g_flag = 1;
  ASSERT_OK(ursa_cond_signal(&g_cv));
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  return NULL;
}

TEST_IMPL(sync_cond_wait_recursive_mutex) {
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_cm, URSA_MUTEX_RECURSIVE));
  ASSERT_OK(ursa_cond_init(&g_cv));
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  ASSERT_OK(ursa_mutex_lock(&g_cm));
  ASSERT_OK(ursa_create(&t, NULL, lock_set_signal, NULL));
  while (!g_flag) ASSERT_OK(ursa_cond_wait(&g_cv, &g_cm));
  ASSERT_EQ(try_in_other_thread(&g_cm), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&g_cm));       /* the three levels are back */
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  ASSERT_EQ(try_in_other_thread(&g_cm), -EBUSY);
  ASSERT_OK(ursa_mutex_unlock(&g_cm));
  ASSERT_ERR(ursa_mutex_unlock(&g_cm), -EPERM);
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_cond_destroy(&g_cv));
  ASSERT_OK(ursa_mutex_destroy(&g_cm));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Barriers
 * ========================================================================================== */

#define BAR_N 7
#define BAR_ROUNDS 300
static ursa_barrier_t g_bar;
static int g_bar_arrived[BAR_ROUNDS], g_bar_left[BAR_ROUNDS], g_bar_serial[BAR_ROUNDS];

static void *barrier_worker(void *arg) {
  int id = (int)(intptr_t)arg, r, k, x;
  for (r = 0; r < BAR_ROUNDS; r++) {
    for (k = 0; k < (id * 7 + r * 3) % 4; k++) ursa_yield();    /* vary the arrival order */
    g_bar_arrived[r]++;
    x = ursa_barrier_wait(&g_bar);
    ASSERT(x == 0 || x == URSA_BARRIER_SERIAL_THREAD);
    if (x == URSA_BARRIER_SERIAL_THREAD) g_bar_serial[r]++;
    ASSERT_EQ(g_bar_arrived[r], BAR_N);      /* nobody leaves before everybody arrived */
    g_bar_left[r]++;
  }
  return NULL;
}

TEST_IMPL(sync_barrier_rounds) {
  ursa_thread_t t[BAR_N];
  ursa_barrier_t one;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_barrier_init(&g_bar, BAR_N));
  for (i = 0; i < BAR_N; i++) ASSERT_OK(ursa_create(&t[i], NULL, barrier_worker, (void *)(intptr_t)i));
  for (i = 0; i < BAR_N; i++) ASSERT_OK(ursa_join(t[i], NULL));
  for (i = 0; i < BAR_ROUNDS; i++) {
    ASSERT_EQ(g_bar_serial[i], 1);           /* exactly one serial thread per round */
    ASSERT_EQ(g_bar_left[i], BAR_N);
  }
  ASSERT_OK(ursa_barrier_destroy(&g_bar));
  /* A barrier of one never blocks and always makes its caller the serial thread. */
  ASSERT_OK(ursa_barrier_init(&one, 1));
  for (i = 0; i < 5; i++) ASSERT_EQ(ursa_barrier_wait(&one), URSA_BARRIER_SERIAL_THREAD);
  ASSERT_OK(ursa_barrier_destroy(&one));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Reader-writer locks
 * ========================================================================================== */

static ursa_rwlock_t g_rw;
static int g_rd_in, g_wr_in;
static int g_rw_log[32], g_rw_nlog;

/* Takes g_rw (write when arg has bit 8 set), checks that it holds it the moment it resumes,
 * waits for g_go[id], releases. */
static void *rw_holder(void *arg) {
  int id = (int)(intptr_t)arg & 0xff, writer = ((int)(intptr_t)arg & 0x100) != 0;
  g_nwaiting++;
  if (writer) {
    ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
    ASSERT_EQ(g_rd_in, 0);                   /* resumed holding it: nobody else inside */
    ASSERT_EQ(g_wr_in, 0);
    g_wr_in++;
  } else {
    ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
    ASSERT_EQ(g_wr_in, 0);
    g_rd_in++;
  }
  g_rw_log[g_rw_nlog++] = id;
  URSA_WAITFOR(g_go[id]);                    /* yields only: no blocking while held */
  if (writer) g_wr_in--; else g_rd_in--;
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  g_done++;
  return NULL;
}
#define RD(id) ((void *)(intptr_t)(id))
#define WR(id) ((void *)(intptr_t)((id) | 0x100))

static void *try_rw_other(void *arg) {
  int wr = (int)(intptr_t)arg, r;
  r = wr ? ursa_rwlock_trywrlock(&g_rw) : ursa_rwlock_tryrdlock(&g_rw);
  if (r == 0) ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  return (void *)(intptr_t)r;
}

static int rw_try_in_other_thread(int wr) {
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_create(&t, NULL, try_rw_other, (void *)(intptr_t)wr));
  ASSERT_OK(ursa_join(t, &r));
  return (int)(intptr_t)r;
}

TEST_IMPL(sync_rwlock_many_readers) {
  ursa_thread_t t[6];
  uint64_t b0;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  b0 = blocks_now();
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_create(&t[i], NULL, rw_holder, RD(i)));
  URSA_WAITFOR(g_rd_in == 6);                /* six readers and main inside at once */
  ASSERT_EQ(blocks_now(), b0);               /* none of them blocked */
  ASSERT_EQ(rw_try_in_other_thread(1), -EBUSY);
  ASSERT_EQ(rw_try_in_other_thread(0), 0);
  for (i = 0; i < 6; i++) g_go[i] = 1;
  URSA_WAITFOR(g_done == 6);
  ASSERT_EQ(rw_try_in_other_thread(1), -EBUSY);   /* main still reads */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_EQ(rw_try_in_other_thread(1), 0);
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_rwlock_writer_excludes) {
  ursa_thread_t t[3];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  ASSERT_EQ(rw_try_in_other_thread(0), -EBUSY);
  ASSERT_EQ(rw_try_in_other_thread(1), -EBUSY);
  ASSERT_OK(ursa_create(&t[0], NULL, rw_holder, RD(0)));
  ASSERT_OK(ursa_create(&t[1], NULL, rw_holder, RD(1)));
  ASSERT_OK(ursa_create(&t[2], NULL, rw_holder, WR(2)));
  URSA_WAITFOR(g_nwaiting == 3);
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_rd_in + g_wr_in, 0);           /* everybody waits for the writer */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  URSA_WAITFOR(g_rd_in == 2);
  ASSERT_EQ(g_wr_in, 0);
  g_go[0] = g_go[1] = 1;
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_EQ(g_rd_in, 0);
  ASSERT_EQ(rw_try_in_other_thread(0), -EBUSY);
  g_go[2] = 1;
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ursa.h: "An unlock wakes either one writer or all waiting readers, each of which then holds the
 * lock (no woken thread has to block again)."  rw_holder checks that it holds the lock the moment
 * it resumes; the block counter shows that nobody blocked a second time. */
TEST_IMPL(sync_rwlock_unlock_grants_without_reblocking) {
  ursa_thread_t t[5];
  uint64_t b0;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  /* queue: readers 0, 2, 4 and writers 1, 3 */
  for (i = 0; i < 5; i++) ASSERT_OK(ursa_create(&t[i], NULL, rw_holder, (i % 2) ? WR(i) : RD(i)));
  URSA_WAITFOR(g_nwaiting == 5);             /* all five blocked, once each */
  b0 = blocks_now();
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));      /* a writer's unlock: all waiting readers */
  URSA_WAITFOR(g_rd_in == 3);
  ASSERT_EQ(g_wr_in, 0);
  ASSERT_EQ(g_rw_log[0], 0);
  ASSERT_EQ(g_rw_log[1], 2);
  ASSERT_EQ(g_rw_log[2], 4);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&g_rw), -EBUSY);   /* a writer waits: new readers queue */
  ASSERT_ERR(ursa_rwlock_trywrlock(&g_rw), -EBUSY);
  g_go[0] = g_go[2] = g_go[4] = 1;           /* the last reader's unlock: one writer */
  URSA_WAITFOR(g_rw_nlog == 4);
  ASSERT_EQ(g_rw_log[3], 1);
  ASSERT_EQ(g_wr_in, 1);
  ASSERT_EQ(g_rd_in, 0);
  g_go[1] = 1;                               /* writer's unlock, no readers waiting: next writer */
  URSA_WAITFOR(g_rw_nlog == 5);
  ASSERT_EQ(g_rw_log[4], 3);
  g_go[3] = 1;
  URSA_WAITFOR(g_done == 5);
  ASSERT_EQ(blocks_now(), b0);               /* no woken thread blocked again */
  for (i = 0; i < 5; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_rwlock_readers_queue_behind_writer) {
  ursa_thread_t w, r;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_create(&w, NULL, rw_holder, WR(0)));
  ASSERT_OK(ursa_create(&r, NULL, rw_holder, RD(1)));
  URSA_WAITFOR(g_nwaiting == 2);
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_rd_in, 0);                     /* the lock is only read-held, yet the reader waits */
  ASSERT_EQ(rw_try_in_other_thread(0), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));      /* last reader out: the writer */
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_EQ(g_rd_in, 0);
  g_go[0] = 1;                               /* writer out: the waiting reader */
  URSA_WAITFOR(g_rd_in == 1);
  ASSERT_EQ(g_rw_log[0], 0);
  ASSERT_EQ(g_rw_log[1], 1);
  g_go[1] = 1;
  ASSERT_OK(ursa_join(w, NULL));
  ASSERT_OK(ursa_join(r, NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_rwlock_recursive_read) {
  ursa_thread_t w;
  uint64_t b0;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_create(&w, NULL, rw_holder, WR(0)));
  URSA_WAITFOR(g_nwaiting == 1);             /* a writer now waits */
  b0 = blocks_now();
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));      /* recursive: must not queue behind the writer */
  ASSERT_OK(ursa_rwlock_tryrdlock(&g_rw));
  ASSERT_EQ(blocks_now(), b0);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_wr_in, 0);                     /* one read hold left */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  g_go[0] = 1;
  ASSERT_OK(ursa_join(w, NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *set_go0_after_10ms(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_sleep_ns(10 * MS));
  g_go[0] = 1;
  return NULL;
}

TEST_IMPL(sync_rwlock_timed) {
  ursa_thread_t h, s;
  struct timespec ts;
  uint64_t t0, el;
  int c;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  for (c = 0; c < 2; c++) {
    /* write-held by another thread: both timed locks time out, then a timed write lock succeeds */
    g_nwaiting = 0; g_go[0] = 0; g_done = 0;
    ASSERT_OK(ursa_create(&h, NULL, rw_holder, WR(0)));
    URSA_WAITFOR(g_wr_in == 1);
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[c], 20 * MS);
    ASSERT_ERR(ursa_rwlock_timedrdlock(&g_rw, clocks[c], &ts), -ETIMEDOUT);
    ts = test_deadline_in(clocks[c], 20 * MS);
    ASSERT_ERR(ursa_rwlock_timedwrlock(&g_rw, clocks[c], &ts), -ETIMEDOUT);
    el = test_now_ns() - t0;
    ASSERT_GE(el, 38 * MS);
    ASSERT_EQ(g_wr_in, 1);
    ASSERT_OK(ursa_create(&s, NULL, set_go0_after_10ms, NULL));
    ts = test_deadline_in(clocks[c], 5000 * MS);
    ASSERT_OK(ursa_rwlock_timedwrlock(&g_rw, clocks[c], &ts));
    ASSERT_EQ(g_wr_in, 0);
    ASSERT_EQ(rw_try_in_other_thread(0), -EBUSY);
    ASSERT_OK(ursa_rwlock_unlock(&g_rw));
    ASSERT_OK(ursa_join(h, NULL));
    ASSERT_OK(ursa_join(s, NULL));

    /* read-held by another thread: a timed read lock succeeds at once, a timed write lock times out */
    g_go[0] = 0;
    ASSERT_OK(ursa_create(&h, NULL, rw_holder, RD(0)));
    URSA_WAITFOR(g_rd_in == 1);
    ts = test_deadline_in(clocks[c], 20 * MS);
    ASSERT_OK(ursa_rwlock_timedrdlock(&g_rw, clocks[c], &ts));
    ASSERT_OK(ursa_rwlock_unlock(&g_rw));
    t0 = test_now_ns();
    ts = test_deadline_in(clocks[c], 20 * MS);
    ASSERT_ERR(ursa_rwlock_timedwrlock(&g_rw, clocks[c], &ts), -ETIMEDOUT);
    ASSERT_GE(test_now_ns() - t0, 19 * MS);
    ASSERT_OK(ursa_create(&s, NULL, set_go0_after_10ms, NULL));
    ts = test_deadline_in(clocks[c], 5000 * MS);
    ASSERT_OK(ursa_rwlock_timedwrlock(&g_rw, clocks[c], &ts));
    ASSERT_EQ(g_rd_in, 0);
    ASSERT_OK(ursa_rwlock_unlock(&g_rw));
    ASSERT_OK(ursa_join(h, NULL));
    ASSERT_OK(ursa_join(s, NULL));
  }
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* A writer that waits at most arg milliseconds for the lock; returns the timed lock's result. */
static void *timed_writer(void *arg) {
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, (uint64_t)(uintptr_t)arg * MS);
  g_nwaiting++;
  return (void *)(intptr_t)ursa_rwlock_timedwrlock(&g_rw, CLOCK_MONOTONIC, &ts);
}

/* ursa.h: "New readers wait while a writer waits."  Once the only waiting writer has timed out,
 * no writer waits: a reader that queued behind it must now share the read-held lock. */
TEST_IMPL(sync_rwlock_writer_timeout_admits_readers) {
  ursa_thread_t w, r;
  void *res;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_create(&w, NULL, timed_writer, (void *)(uintptr_t)20));
  ASSERT_OK(ursa_create(&r, NULL, rw_holder, RD(0)));
  URSA_WAITFOR(g_nwaiting == 2);
  ASSERT_EQ(g_rd_in, 0);                     /* queued behind the writer */
  ASSERT_OK(ursa_sleep_ns(50 * MS));         /* the writer times out */
  ASSERT_OK(ursa_join(w, &res));
  ASSERT_EQ((intptr_t)res, -ETIMEDOUT);
  ASSERT_EQ(rw_try_in_other_thread(0), 0);   /* a new reader gets in at once ... */
  for (i = 0; i < 10; i++) ursa_yield();
  ASSERT_EQ(g_rd_in, 1);                     /* ... and so must the one that queued */
  g_go[0] = 1;
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_join(r, NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* Two waiting writers: while the second still waits after the first timed out, the queued reader
 * keeps waiting; once no writer waits, it gets in.  And with an untimed writer behind a timed-out
 * one, the lock goes to that writer first, then to the reader. */
TEST_IMPL(sync_rwlock_writer_timeouts_keep_order) {
  ursa_thread_t w1, w2, r;
  void *res;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_create(&w1, NULL, timed_writer, (void *)(uintptr_t)20));
  ASSERT_OK(ursa_create(&w2, NULL, timed_writer, (void *)(uintptr_t)60));
  ASSERT_OK(ursa_create(&r, NULL, rw_holder, RD(0)));
  URSA_WAITFOR(g_nwaiting == 3);
  ASSERT_OK(ursa_join(w1, &res));            /* after ~20 ms */
  ASSERT_EQ((intptr_t)res, -ETIMEDOUT);
  for (i = 0; i < 10; i++) ursa_yield();
  ASSERT_EQ(g_rd_in, 0);                     /* w2 still waits: the reader stays behind it */
  ASSERT_EQ(rw_try_in_other_thread(0), -EBUSY);
  ASSERT_OK(ursa_join(w2, &res));            /* after ~60 ms */
  ASSERT_EQ((intptr_t)res, -ETIMEDOUT);
  URSA_WAITFOR(g_rd_in == 1);                /* no writer waits now */
  g_go[0] = 1;
  ASSERT_OK(ursa_join(r, NULL));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));

  /* timed-out writer ahead of an untimed one */
  g_nwaiting = 0; g_go[1] = g_go[2] = 0; g_rw_nlog = 0;
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_create(&w1, NULL, timed_writer, (void *)(uintptr_t)20));
  ASSERT_OK(ursa_create(&w2, NULL, rw_holder, WR(1)));
  ASSERT_OK(ursa_create(&r, NULL, rw_holder, RD(2)));
  URSA_WAITFOR(g_nwaiting == 3);
  ASSERT_OK(ursa_join(w1, &res));
  ASSERT_EQ((intptr_t)res, -ETIMEDOUT);
  for (i = 0; i < 10; i++) ursa_yield();
  ASSERT_EQ(g_rd_in + g_wr_in, 0);           /* both still wait: the reader behind the writer */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_EQ(g_rw_log[0], 1);
  g_go[1] = 1;
  URSA_WAITFOR(g_rd_in == 1);
  ASSERT_EQ(g_rw_log[1], 2);
  g_go[2] = 1;
  ASSERT_OK(ursa_join(w2, NULL));
  ASSERT_OK(ursa_join(r, NULL));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_rwlock_t g_static_rw = URSA_RWLOCK_INITIALIZER;

TEST_IMPL(sync_rwlock_static_initializer) {
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_rdlock(&g_static_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_static_rw));
  ASSERT_ERR(ursa_rwlock_wrlock(&g_static_rw), -EDEADLK);
  ASSERT_OK(ursa_rwlock_unlock(&g_static_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_static_rw));
  ASSERT_ERR(ursa_rwlock_unlock(&g_static_rw), -EPERM);
  ASSERT_OK(ursa_rwlock_wrlock(&g_static_rw));
  ASSERT_ERR(ursa_rwlock_destroy(&g_static_rw), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&g_static_rw));
  ASSERT_OK(ursa_rwlock_destroy(&g_static_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Once
 * ========================================================================================== */

static ursa_once_t g_once = URSA_ONCE_INIT;
static int g_once_runs, g_once_done;

static void once_fn(void) {
  g_once_runs++;
  ursa_yield();                              /* the other callers arrive while fn runs */
  ASSERT_OK(ursa_sleep_ns(2 * MS));
  ursa_yield();
  g_once_done = 1;
}

static void *once_caller(void *arg) {
  (void)arg;
  g_nwaiting++;
  ASSERT_OK(ursa_once(&g_once, once_fn));
  ASSERT_EQ(g_once_done, 1);                 /* returns only after fn has returned */
  return NULL;
}

TEST_IMPL(sync_once_concurrent) {
  ursa_thread_t t[8];
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 8; i++) ASSERT_OK(ursa_create(&t[i], NULL, once_caller, NULL));
  URSA_WAITFOR(g_nwaiting == 8);
  ASSERT_EQ(g_once_runs, 1);
  ASSERT_EQ(g_once_done, 0);                 /* fn is still running, seven callers wait */
  ASSERT_OK(ursa_once(&g_once, once_fn));    /* main waits too */
  ASSERT_EQ(g_once_done, 1);
  for (i = 0; i < 8; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_once(&g_once, once_fn));
  ASSERT_EQ(g_once_runs, 1);
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_once_t g_once_rec = URSA_ONCE_INIT, g_once_inner = URSA_ONCE_INIT;
static int g_rec_result = 1, g_rec_runs, g_inner_runs, g_inner_result = 1;

static void once_inner(void) { g_inner_runs++; }

static void once_recursive(void) {
  g_rec_runs++;
  g_rec_result = ursa_once(&g_once_rec, once_recursive);
  g_inner_result = ursa_once(&g_once_inner, once_inner);   /* another once object is fine */
}

TEST_IMPL(sync_once_recursion_edeadlk) {
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_once(&g_once_rec, once_recursive));
  ASSERT_EQ(g_rec_result, -EDEADLK);
  ASSERT_EQ(g_inner_result, 0);
  ASSERT_EQ(g_rec_runs, 1);
  ASSERT_EQ(g_inner_runs, 1);
  ASSERT_OK(ursa_once(&g_once_rec, once_recursive));
  ASSERT_OK(ursa_once(&g_once_inner, once_inner));
  ASSERT_EQ(g_rec_runs, 1);
  ASSERT_EQ(g_inner_runs, 1);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * Thread-specific data
 * ========================================================================================== */

static ursa_key_t g_key, g_key2;
static int g_dtor_calls;
static intptr_t g_dtor_sum;

static void sum_dtor(void *v) {
  g_dtor_calls++;
  g_dtor_sum += (intptr_t)v;
}

static void *key_user(void *arg) {
  intptr_t mine = (intptr_t)arg;
  int i;
  ASSERT_PTR_EQ(ursa_getspecific(g_key), NULL);   /* a new thread starts with NULL */
  if (mine == 0) return NULL;                     /* never sets: no destructor call */
  if (mine < 0) {                                 /* sets, then clears: no destructor call */
    ASSERT_OK(ursa_setspecific(g_key, (void *)mine));
    ASSERT_OK(ursa_setspecific(g_key, NULL));
    return NULL;
  }
  ASSERT_OK(ursa_setspecific(g_key, (void *)mine));
  for (i = 0; i < 5; i++) {
    ursa_yield();
    ASSERT_PTR_EQ(ursa_getspecific(g_key), (void *)mine);
  }
  return NULL;
}

TEST_IMPL(sync_key_values_and_destructors) {
  ursa_thread_t t[7];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_key_create(&g_key, sum_dtor));
  ASSERT_PTR_EQ(ursa_getspecific(g_key), NULL);
  ASSERT_OK(ursa_setspecific(g_key, (void *)1000));
  for (i = 0; i < 5; i++) ASSERT_OK(ursa_create(&t[i], NULL, key_user, (void *)(intptr_t)(i + 1)));
  ASSERT_OK(ursa_create(&t[5], NULL, key_user, (void *)0));
  ASSERT_OK(ursa_create(&t[6], NULL, key_user, (void *)-1));
  for (i = 0; i < 7; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_dtor_calls, 5);                /* once per thread that exited with a value */
  ASSERT_EQ(g_dtor_sum, 1 + 2 + 3 + 4 + 5);  /* each with its own value */
  ASSERT_PTR_EQ(ursa_getspecific(g_key), (void *)1000);
  ASSERT_OK(ursa_key_delete(g_key));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *set_key_wait_go(void *arg) {
  ASSERT_OK(ursa_setspecific(g_key, arg));
  g_nwaiting++;
  URSA_WAITFOR(g_go[0]);
  ASSERT_PTR_EQ(ursa_getspecific(g_key), NULL);   /* deleted meanwhile */
  return NULL;
}

TEST_IMPL(sync_key_delete_and_stale) {
  ursa_key_t k1, k2;
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_key_create(&k1, sum_dtor));
  ASSERT_OK(ursa_setspecific(k1, (void *)7));
  ASSERT_PTR_EQ(ursa_getspecific(k1), (void *)7);
  ASSERT_OK(ursa_key_delete(k1));
  ASSERT_PTR_EQ(ursa_getspecific(k1), NULL);
  ASSERT_ERR(ursa_setspecific(k1, (void *)8), -EINVAL);
  ASSERT_OK(ursa_key_create(&k2, sum_dtor));
  ASSERT_NE(k1, k2);                         /* a recreated key never equals the stale one */
  ASSERT_PTR_EQ(ursa_getspecific(k2), NULL); /* the old value does not show through */
  ASSERT_PTR_EQ(ursa_getspecific(k1), NULL);
  ASSERT_ERR(ursa_setspecific(k1, (void *)8), -EINVAL);
  ASSERT_OK(ursa_setspecific(k2, (void *)9));
  ASSERT_PTR_EQ(ursa_getspecific(k2), (void *)9);
  ASSERT_PTR_EQ(ursa_getspecific(k1), NULL);
  ASSERT_OK(ursa_key_delete(k2));

  /* A key deleted while a thread holds a value: no destructor call at that thread's exit. */
  ASSERT_OK(ursa_key_create(&g_key, sum_dtor));
  ASSERT_OK(ursa_create(&t, NULL, set_key_wait_go, (void *)5));
  URSA_WAITFOR(g_nwaiting == 1);
  ASSERT_OK(ursa_key_delete(g_key));
  g_go[0] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_EQ(g_dtor_calls, 0);
  ASSERT_OK(ursa_fini());
  return 0;
}

static int g_dtor_rounds, g_dtor_resets;

static void resetting_dtor(void *v) {
  g_dtor_rounds++;
  if (g_dtor_resets-- > 0) ASSERT_OK(ursa_setspecific(g_key2, v));
}

static void *set_key2(void *arg) {
  ASSERT_OK(ursa_setspecific(g_key2, arg));
  return NULL;
}

TEST_IMPL(sync_key_destructor_rounds) {
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_key_create(&g_key2, resetting_dtor));
  g_dtor_resets = 1;                         /* sets the value once more: a second round */
  ASSERT_OK(ursa_create(&t, NULL, set_key2, (void *)1));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_EQ(g_dtor_rounds, 2);
  g_dtor_rounds = 0;
  g_dtor_resets = 1000;                      /* always sets it again: stops after the limit */
  ASSERT_OK(ursa_create(&t, NULL, set_key2, (void *)1));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_EQ(g_dtor_rounds, URSA_KEY_DESTRUCTOR_ITERATIONS);
  ASSERT_OK(ursa_key_delete(g_key2));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * I-structures
 * ========================================================================================== */

static ursa_ivar_t g_iv;
static int g_nread;

static void *ivar_reader(void *arg) {
  void *v;
  (void)arg;
  g_nwaiting++;
  ASSERT_OK(ursa_ivar_get(&g_iv, &v));
  g_nread++;
  return v;
}

TEST_IMPL(sync_ivar_readers_wait_for_put) {
  ursa_thread_t t[5];
  void *v;
  uint64_t b0;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_ivar_init(&g_iv));
  ASSERT_ERR(ursa_ivar_tryget(&g_iv, &v), -EAGAIN);
  for (i = 0; i < 5; i++) ASSERT_OK(ursa_create(&t[i], NULL, ivar_reader, NULL));
  URSA_WAITFOR(g_nwaiting == 5);
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_nread, 0);                     /* all wait for the put */
  ASSERT_OK(ursa_ivar_put(&g_iv, (void *)42));
  ASSERT_EQ(g_nread, 0);                     /* put does not switch */
  for (i = 0; i < 5; i++) {
    ASSERT_OK(ursa_join(t[i], &v));
    ASSERT_PTR_EQ(v, (void *)42);
  }
  ASSERT_OK(ursa_ivar_tryget(&g_iv, &v));
  ASSERT_PTR_EQ(v, (void *)42);
  b0 = blocks_now();
  ASSERT_OK(ursa_ivar_get(&g_iv, &v));       /* full: no waiting */
  ASSERT_PTR_EQ(v, (void *)42);
  ASSERT_EQ(blocks_now(), b0);
  ASSERT_ERR(ursa_ivar_put(&g_iv, (void *)43), -EBUSY);
  ASSERT_OK(ursa_ivar_get(&g_iv, &v));
  ASSERT_PTR_EQ(v, (void *)42);
  ASSERT_OK(ursa_ivar_destroy(&g_iv));
  /* NULL is a value like any other */
  ASSERT_OK(ursa_ivar_init(&g_iv));
  ASSERT_OK(ursa_ivar_put(&g_iv, NULL));
  v = (void *)1;
  ASSERT_OK(ursa_ivar_tryget(&g_iv, &v));
  ASSERT_PTR_EQ(v, NULL);
  ASSERT_ERR(ursa_ivar_put(&g_iv, (void *)2), -EBUSY);
  ASSERT_OK(ursa_ivar_destroy(&g_iv));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ============================================================================================
 * M-structures
 * ========================================================================================== */

static ursa_mvar_t g_mv;

TEST_IMPL(sync_mvar_put_take_try) {
  void *v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)1));
  ASSERT_ERR(ursa_mvar_tryput(&g_mv, (void *)2), -EAGAIN);
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)1);
  ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);
  ASSERT_OK(ursa_mvar_tryput(&g_mv, (void *)3));
  ASSERT_OK(ursa_mvar_trytake(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)3);
  ASSERT_OK(ursa_mvar_tryput(&g_mv, NULL));  /* NULL is a value: the cell is full */
  ASSERT_ERR(ursa_mvar_tryput(&g_mv, (void *)4), -EAGAIN);
  v = (void *)5;
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  ASSERT_PTR_EQ(v, NULL);
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *mvar_taker(void *arg) {
  void *v;
  int id = (int)(intptr_t)arg;
  arrive_reversed(id, 4);
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  g_order[g_norder++] = id;
  g_done++;
  return v;
}

static void *mvar_putter(void *arg) {
  int id = (int)(intptr_t)arg;
  arrive_reversed(id, 4);
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)(intptr_t)(100 + id)));
  g_done++;
  return NULL;
}

TEST_IMPL(sync_mvar_take_blocks_until_put) {
  ursa_thread_t t[4];
  void *v;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&t[i], NULL, mvar_taker, (void *)(intptr_t)i));
  URSA_WAITFOR(g_nwaiting == 4);
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_done, 0);                      /* all four wait on the empty cell */
  for (i = 0; i < 4; i++) {
    ASSERT_OK(ursa_mvar_put(&g_mv, (void *)(intptr_t)(10 + i)));   /* straight to a taker */
    ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);             /* nothing left to steal */
  }
  ASSERT_EQ(g_done, 0);                      /* put does not switch */
  ASSERT_OK(ursa_mvar_tryput(&g_mv, (void *)99));                  /* the cell is still empty */
  ASSERT_OK(ursa_mvar_trytake(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)99);
  for (i = 0; i < 4; i++) {                  /* FIFO: the i-th value went to the i-th arrival */
    ASSERT_OK(ursa_join(t[g_arrival[i]], &v));
    ASSERT_PTR_EQ(v, (void *)(intptr_t)(10 + i));
  }
  for (i = 0; i < 4; i++) ASSERT_EQ(g_order[i], g_arrival[i]);
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(sync_mvar_put_blocks_until_take) {
  ursa_thread_t t[4];
  void *v;
  int i, k;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)1));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&t[i], NULL, mvar_putter, (void *)(intptr_t)i));
  URSA_WAITFOR(g_nwaiting == 4);
  for (i = 0; i < 5; i++) ursa_yield();
  ASSERT_EQ(g_done, 0);                      /* all four wait on the full cell */
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)1);
  for (i = 0; i < 4; i++) {
    ASSERT_ERR(ursa_mvar_tryput(&g_mv, (void *)7), -EAGAIN);   /* refilled by the first putter */
    ASSERT_OK(ursa_mvar_take(&g_mv, &v));                      /* FIFO over the putters */
    ASSERT_PTR_EQ(v, (void *)(intptr_t)(100 + g_arrival[i]));
  }
  ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);
  for (k = 0; k < 4; k++) ASSERT_OK(ursa_join(t[k], NULL));
  ASSERT_EQ(g_done, 4);
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* The try variants hand off too: tryput to a waiting taker, trytake refilled from a waiting putter. */
TEST_IMPL(sync_mvar_try_variants_hand_off) {
  ursa_thread_t t;
  void *v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  ASSERT_OK(ursa_create(&t, NULL, mvar_taker, (void *)(intptr_t)3));
  URSA_WAITFOR(g_nwaiting == 1);
  ASSERT_OK(ursa_mvar_tryput(&g_mv, (void *)21));     /* straight to the taker */
  ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);  /* the cell stayed empty */
  ASSERT_OK(ursa_join(t, &v));
  ASSERT_PTR_EQ(v, (void *)21);
  g_nwaiting = g_narrival = 0;
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)22));
  ASSERT_OK(ursa_create(&t, NULL, mvar_putter, (void *)(intptr_t)3));   /* puts 103 */
  URSA_WAITFOR(g_nwaiting == 1);
  ASSERT_OK(ursa_mvar_trytake(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)22);
  ASSERT_ERR(ursa_mvar_tryput(&g_mv, (void *)23), -EAGAIN);   /* refilled by the putter */
  ASSERT_OK(ursa_mvar_trytake(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)103);
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

#define MV_THREADS 6
#define MV_EACH 60
static int g_mv_seen[MV_THREADS * MV_EACH];
static int g_mv_taken;

static void *mvar_many_putter(void *arg) {
  int id = (int)(intptr_t)arg, i, k;
  for (i = 0; i < MV_EACH; i++) {
    for (k = 0; k < (id + i) % 3; k++) ursa_yield();
    ASSERT_OK(ursa_mvar_put(&g_mv, (void *)(intptr_t)(id * MV_EACH + i + 1)));
  }
  return NULL;
}

static void *mvar_many_taker(void *arg) {
  int id = (int)(intptr_t)arg, i, k;
  (void)id;
  for (i = 0; i < MV_EACH; i++) {
    void *v;
    int val;
    for (k = 0; k < (id * 2 + i) % 4; k++) ursa_yield();
    ASSERT_OK(ursa_mvar_take(&g_mv, &v));
    val = (int)(intptr_t)v - 1;
    ASSERT(val >= 0 && val < MV_THREADS * MV_EACH);
    g_mv_seen[val]++;
    g_mv_taken++;
  }
  return NULL;
}

TEST_IMPL(sync_mvar_exactly_one_take_per_put) {
  ursa_thread_t p[MV_THREADS], t[MV_THREADS];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&g_mv));
  for (i = 0; i < MV_THREADS; i++) {
    ASSERT_OK(ursa_create(&t[i], NULL, mvar_many_taker, (void *)(intptr_t)i));
    ASSERT_OK(ursa_create(&p[i], NULL, mvar_many_putter, (void *)(intptr_t)i));
  }
  for (i = 0; i < MV_THREADS; i++) {
    ASSERT_OK(ursa_join(p[i], NULL));
    ASSERT_OK(ursa_join(t[i], NULL));
  }
  ASSERT_EQ(g_mv_taken, MV_THREADS * MV_EACH);
  for (i = 0; i < MV_THREADS * MV_EACH; i++) ASSERT_EQ(g_mv_seen[i], 1);   /* each value once */
  {
    void *v;
    ASSERT_ERR(ursa_mvar_trytake(&g_mv, &v), -EAGAIN);
  }
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}
