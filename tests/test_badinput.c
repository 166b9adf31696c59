/* Bad input (anchors/bad-input.md C.1): each misuse returns ursa.h's documented error code and the object loses nothing. */
#include "task.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#define MS 1000000ull


static int g_go[8], g_ready, g_counter;

static void *ret_arg(void *arg) { return arg; }

static void *wait_go0(void *arg) {
  g_ready++;
  URSA_WAITFOR(g_go[0]);
  g_counter++;
  return arg;
}

/* Creates a thread and joins it: the runtime still works. */
static void check_threads_work(void) {
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_create(&t, NULL, ret_arg, (void *)77));
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_PTR_EQ(r, (void *)77);
}

/* ---- row 1: join oneself ------------------------------------------------------------------- */

static void *join_self(void *arg) {
  (void)arg;
  return (void *)(intptr_t)ursa_join(ursa_self(), NULL);
}

TEST_IMPL(badinput_join_self) {
  /* contract: join-deadlock */
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_ERR(ursa_join(ursa_self(), NULL), -EDEADLK);
  ASSERT_OK(ursa_create(&t, NULL, join_self, NULL));
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_EQ((intptr_t)r, -EDEADLK);
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 2: join a detached, live thread ----------------------------------------------------- */

TEST_IMPL(badinput_join_detached) {
  /* contract: join-not-joinable join-stale */
  ursa_thread_t t1, t2;
  ursa_attr_t a;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setdetached(&a, 1));
  ASSERT_OK(ursa_create(&t1, &a, wait_go0, NULL));      /* detached from the start */
  ASSERT_OK(ursa_create(&t2, NULL, wait_go0, NULL));
  ASSERT_OK(ursa_detach(t2));                           /* detached later */
  URSA_WAITFOR(g_ready == 2);
  ASSERT_ERR(ursa_join(t1, NULL), -EINVAL);
  ASSERT_ERR(ursa_join(t2, NULL), -EINVAL);
  g_go[0] = 1;                                          /* both still run to the end */
  URSA_WAITFOR(g_counter == 2);
  ursa_yield();
  ASSERT_ERR(ursa_join(t1, NULL), -ESRCH);              /* finished and released */
  ASSERT_ERR(ursa_join(t2, NULL), -ESRCH);
  ASSERT_OK(ursa_attr_destroy(&a));
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 3: join an already-joined handle ---------------------------------------------------- */

TEST_IMPL(badinput_join_already_joined) {
  /* contract: join-stale */
  ursa_thread_t t, t2;
  char name[URSA_NAME_MAX];
  void *r;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t, NULL, ret_arg, (void *)5));
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_PTR_EQ(r, (void *)5);
  ASSERT_ERR(ursa_join(t, &r), -ESRCH);
  ASSERT_ERR(ursa_detach(t), -ESRCH);
  ASSERT_ERR(ursa_yield_to(t), -ESRCH);
  ASSERT_ERR(ursa_thread_getname(t, name, sizeof name), -ESRCH);
  ASSERT_EQ(ursa_thread_id(t), 0);
  /* The slot is reused by new threads: the old handle must stay stale. */
  for (i = 0; i < 10; i++) {
    ASSERT_OK(ursa_create(&t2, NULL, wait_go0, (void *)6));
    ASSERT(t2 != t);
    ASSERT_ERR(ursa_join(t, NULL), -ESRCH);
    ASSERT_ERR(ursa_detach(t), -ESRCH);
    g_go[0] = 1;
    ASSERT_OK(ursa_join(t2, &r));
    ASSERT_PTR_EQ(r, (void *)6);
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 4: garbage handles ------------------------------------------------------------------ */

TEST_IMPL(badinput_join_garbage_handles) {
  /* contract: join-stale */
  ursa_thread_t t, bad[6];
  uint64_t h;
  char name[URSA_NAME_MAX];
  void *r;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t, NULL, wait_go0, (void *)9));
  h = (uint64_t)(uintptr_t)t;
  bad[0] = (ursa_thread_t)0x12345;
  bad[1] = URSA_THREAD_NULL;
  bad[2] = (ursa_thread_t)(uintptr_t)(h + (1ull << 32));       /* valid index, next generation */
  bad[3] = (ursa_thread_t)(uintptr_t)(h + (5ull << 32));       /* valid index, a later generation */
  bad[4] = (ursa_thread_t)(uintptr_t)UINT64_MAX;
  bad[5] = (ursa_thread_t)(uintptr_t)(h & 0xffffffffu);        /* generation 0 */
  for (i = 0; i < 6; i++) {
    ASSERT_ERR(ursa_join(bad[i], &r), -ESRCH);
    ASSERT_ERR(ursa_detach(bad[i]), -ESRCH);
    ASSERT_ERR(ursa_yield_to(bad[i]), -ESRCH);
    ASSERT_ERR(ursa_thread_getname(bad[i], name, sizeof name), -ESRCH);
    ASSERT_EQ(ursa_thread_id(bad[i]), 0);
  }
  g_go[0] = 1;                                          /* the real thread is undisturbed */
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_PTR_EQ(r, (void *)9);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 5: two joiners ---------------------------------------------------------------------- */

static ursa_thread_t g_target;

static void *join_target(void *arg) {
  void *r = NULL;
  (void)arg;
  g_ready++;
  ASSERT_OK(ursa_join(g_target, &r));
  return r;
}

static void *second_joiner(void *arg) {
  (void)arg;
  return (void *)(intptr_t)ursa_join(g_target, NULL);
}

TEST_IMPL(badinput_two_joiners) {
  /* contract: join-not-joinable */
  ursa_thread_t j1, j2;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&g_target, NULL, wait_go0, (void *)33));
  ASSERT_OK(ursa_create(&j1, NULL, join_target, NULL));
  URSA_WAITFOR(g_ready == 2);                           /* j1 now blocks in join */
  ASSERT_ERR(ursa_join(g_target, NULL), -EINVAL);        /* main is the second joiner */
  ASSERT_OK(ursa_create(&j2, NULL, second_joiner, NULL));
  ASSERT_OK(ursa_join(j2, &r));
  ASSERT_EQ((intptr_t)r, -EINVAL);                       /* so is j2 */
  ASSERT_ERR(ursa_detach(g_target), -EINVAL);            /* being joined */
  g_go[0] = 1;
  ASSERT_OK(ursa_join(j1, &r));
  ASSERT_PTR_EQ(r, (void *)33);                          /* the first joiner got the result */
  ASSERT_ERR(ursa_join(g_target, NULL), -ESRCH);
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_thread_t g_t1, g_t2;

static void *cycle_a(void *arg) {
  void *r = NULL;
  (void)arg;
  ASSERT_OK(ursa_join(g_t2, &r));
  return r;
}

static void *cycle_b(void *arg) {
  int r;
  (void)arg;
  r = ursa_join(g_t1, NULL);                            /* g_t1 is joining us */
  g_ready = 1;
  return (void *)(intptr_t)r;
}

TEST_IMPL(badinput_join_cycle_edeadlk) {
  /* contract: join-deadlock */
  void *r;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&g_t1, NULL, cycle_a, NULL));
  ASSERT_OK(ursa_create(&g_t2, NULL, cycle_b, NULL));
  URSA_WAITFOR(g_ready);                                /* nobody else joins g_t1 meanwhile */
  ASSERT_OK(ursa_join(g_t1, &r));
  ASSERT_EQ((intptr_t)r, -EDEADLK);
  ASSERT_ERR(ursa_join(g_t2, NULL), -ESRCH);             /* g_t1 joined it */
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 6: detach twice --------------------------------------------------------------------- */

TEST_IMPL(badinput_detach_twice) {
  ursa_thread_t t, t2;
  ursa_attr_t a;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t, NULL, wait_go0, NULL));
  ASSERT_OK(ursa_detach(t));
  ASSERT_ERR(ursa_detach(t), -EINVAL);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setdetached(&a, 1));
  ASSERT_OK(ursa_create(&t2, &a, wait_go0, NULL));
  ASSERT_ERR(ursa_detach(t2), -EINVAL);
  ASSERT_OK(ursa_attr_destroy(&a));
  g_go[0] = 1;
  URSA_WAITFOR(g_counter == 2);                          /* both still run */
  ursa_yield();
  ASSERT_ERR(ursa_detach(t), -ESRCH);
  ASSERT_ERR(ursa_detach(t2), -ESRCH);
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 7: stack size below the minimum ----------------------------------------------------- */

TEST_IMPL(badinput_attr_stacksize_too_small) {
  ursa_attr_t a;
  ursa_thread_t t;
  size_t sz, sz0;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz0));
  ASSERT_ERR(ursa_attr_setstacksize(&a, 1024), -EINVAL);
  ASSERT_ERR(ursa_attr_setstacksize(&a, 0), -EINVAL);
  ASSERT_ERR(ursa_attr_setstacksize(&a, URSA_STACK_MIN - 1), -EINVAL);
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_EQ(sz, sz0);                                    /* unchanged */
  ASSERT_OK(ursa_attr_setstacksize(&a, URSA_STACK_MIN));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_GE(sz, URSA_STACK_MIN);
  ASSERT_OK(ursa_create(&t, &a, ret_arg, (void *)3));
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_PTR_EQ(r, (void *)3);
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 8: a stack that cannot be mapped ---------------------------------------------------- */

static long proc_status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  ASSERT(f != NULL);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') { v = atol(line + n + 1); break; }
  fclose(f);
  return v;
}

static int count_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  int c, n = 0;
  ASSERT(f != NULL);
  while ((c = fgetc(f)) != EOF) if (c == '\n') n++;
  fclose(f);
  return n;
}

/* Caps the address space a few GiB above what is mapped now, so that mapping a huge stack fails
 * for certain (MAP_NORESERVE could otherwise map even terabytes). */
static void cap_address_space(struct rlimit *old) {
  struct rlimit lim;
  long vm_kb = proc_status_kb("VmSize");
  ASSERT_GT(vm_kb, 0);
  ASSERT_OK(getrlimit(RLIMIT_AS, old));
  lim = *old;
  lim.rlim_cur = (rlim_t)vm_kb * 1024 + ((rlim_t)4 << 30);
  if (old->rlim_max != RLIM_INFINITY && lim.rlim_cur > old->rlim_max) lim.rlim_cur = old->rlim_max;
  ASSERT_OK(setrlimit(RLIMIT_AS, &lim));
}

TEST_IMPL(badinput_create_huge_stack) {
  /* contract: create-stack-unmappable */
  ursa_attr_t a;
  ursa_thread_t t = URSA_THREAD_NULL;
  ursa_stats_t s0, s1;
  struct rlimit old;
  int maps0, i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setstacksize(&a, (size_t)1 << 40));       /* 1 TiB */
  cap_address_space(&old);
  for (i = 0; i < 3; i++) {
    ASSERT_OK(ursa_stats(&s0));
    maps0 = count_maps();
    ASSERT_ERR(ursa_create(&t, &a, ret_arg, NULL), -EAGAIN);
    ASSERT_EQ(count_maps(), maps0);                              /* no mapping left behind */
    ASSERT_OK(ursa_stats(&s1));
    ASSERT_EQ(s1.created, s0.created);
  }
  ASSERT_OK(setrlimit(RLIMIT_AS, &old));
  /* Nothing leaked: threads are made and joined as before, and fini finds no stray thread. */
  ASSERT_OK(ursa_attr_setstacksize(&a, (size_t)8 << 20));
  ASSERT_OK(ursa_create(&t, &a, ret_arg, (void *)1));
  ASSERT_OK(ursa_join(t, NULL));
  for (i = 0; i < 100; i++) check_threads_work();
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* bad-input.md row 8 (64 TiB).  ursa.h: ursa_attr_setstacksize is -EINVAL only "when smaller than
 * URSA_STACK_MIN"; "A size the system cannot map makes ursa_create fail with -EAGAIN". */
TEST_IMPL(badinput_create_64tib_stack) {
  /* contract: create-stack-unmappable */
  ursa_attr_t a;
  ursa_thread_t t;
  struct rlimit old;
  int maps0;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setstacksize(&a, (size_t)64 << 40));      /* no upper limit in ursa.h */
  cap_address_space(&old);
  maps0 = count_maps();
  ASSERT_ERR(ursa_create(&t, &a, ret_arg, NULL), -EAGAIN);
  ASSERT_EQ(count_maps(), maps0);
  ASSERT_OK(setrlimit(RLIMIT_AS, &old));
  check_threads_work();
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- mutexes: rows 9, 11-14 ------------------------------------------------------------------ */

static void *unlock_other(void *m) { return (void *)(intptr_t)ursa_mutex_unlock(m); }

static void *trylock_other(void *m) {
  int r = ursa_mutex_trylock(m);
  if (r == 0) ASSERT_OK(ursa_mutex_unlock(m));
  return (void *)(intptr_t)r;
}

static int in_other_thread(void *(*fn)(void *), void *arg) {
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_create(&t, NULL, fn, arg));
  ASSERT_OK(ursa_join(t, &r));
  return (int)(intptr_t)r;
}

TEST_IMPL(badinput_mutex_errorcheck_relock) {
  /* contract: relock-deadlock */
  ursa_mutex_t m;
  struct timespec ts;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);
  ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_ERR(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts), -EDEADLK);
  ASSERT_EQ(in_other_thread(trylock_other, &m), -EBUSY);   /* still held, once */
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_EQ(in_other_thread(trylock_other, &m), 0);
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* Rows 11 and 12: every type knows its owner. */
TEST_IMPL(badinput_mutex_unlock_not_owner) {
  /* contract: unlock-not-held */
  ursa_mutex_t m;
  int type;
  ASSERT_OK(ursa_init(NULL));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    ASSERT_OK(ursa_mutex_init(&m, type));
    ASSERT_ERR(ursa_mutex_unlock(&m), -EPERM);                /* unlocked */
    ASSERT_EQ(in_other_thread(unlock_other, &m), -EPERM);
    ASSERT_EQ(in_other_thread(trylock_other, &m), 0);         /* the failed unlocks changed nothing */
    ASSERT_OK(ursa_mutex_lock(&m));
    ASSERT_EQ(in_other_thread(unlock_other, &m), -EPERM);     /* held by main: foreign unlock */
    ASSERT_EQ(in_other_thread(trylock_other, &m), -EBUSY);    /* still held */
    ASSERT_OK(ursa_mutex_unlock(&m));                         /* the real owner still can */
    ASSERT_ERR(ursa_mutex_unlock(&m), -EPERM);
    ASSERT_OK(ursa_mutex_lock(&m));
    ASSERT_OK(ursa_mutex_unlock(&m));
    ASSERT_OK(ursa_mutex_destroy(&m));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *lock_and_count(void *m) {
  g_ready++;
  ASSERT_OK(ursa_mutex_lock(m));
  g_counter++;
  ASSERT_OK(ursa_mutex_unlock(m));
  return NULL;
}

TEST_IMPL(badinput_mutex_destroy_locked) {
  /* contract: destroy-busy */
  ursa_mutex_t m;
  ursa_thread_t t;
  int type;
  ASSERT_OK(ursa_init(NULL));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    g_ready = g_counter = 0;
    ASSERT_OK(ursa_mutex_init(&m, type));
    ASSERT_OK(ursa_mutex_lock(&m));
    ASSERT_ERR(ursa_mutex_destroy(&m), -EBUSY);
    ASSERT_OK(ursa_create(&t, NULL, lock_and_count, &m));
    URSA_WAITFOR(g_ready == 1);                               /* a waiter too */
    ASSERT_ERR(ursa_mutex_destroy(&m), -EBUSY);
    ASSERT_OK(ursa_mutex_unlock(&m));                         /* still a working mutex */
    ASSERT_OK(ursa_join(t, NULL));
    ASSERT_EQ(g_counter, 1);
    ASSERT_OK(ursa_mutex_destroy(&m));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_mutex_use_after_destroy) {
  /* contract: use-destroyed */
  ursa_mutex_t m;
  ursa_cond_t c;
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  int type;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_cond_init(&c));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    ASSERT_OK(ursa_mutex_init(&m, type));
    ASSERT_OK(ursa_mutex_destroy(&m));
    ASSERT_ERR(ursa_mutex_lock(&m), -EINVAL);
    ASSERT_ERR(ursa_mutex_trylock(&m), -EINVAL);
    ASSERT_ERR(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts), -EINVAL);
    ASSERT_ERR(ursa_mutex_unlock(&m), -EINVAL);
    ASSERT_ERR(ursa_cond_wait(&c, &m), -EINVAL);
    ASSERT_ERR(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &ts), -EINVAL);
    ASSERT_ERR(ursa_mutex_destroy(&m), -EINVAL);
    ASSERT_OK(ursa_mutex_init(&m, type));                     /* can be made again */
    ASSERT_OK(ursa_mutex_lock(&m));
    ASSERT_OK(ursa_mutex_unlock(&m));
    ASSERT_OK(ursa_mutex_destroy(&m));
  }
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- barriers: rows 15, 16 ------------------------------------------------------------------- */

TEST_IMPL(badinput_barrier_init_zero) {
  ursa_barrier_t b;
  ASSERT_OK(ursa_init(NULL));
  memset(&b, 0, sizeof b);
  ASSERT_ERR(ursa_barrier_init(&b, 0), -EINVAL);
  ASSERT_ERR(ursa_barrier_wait(&b), -EINVAL);               /* not made: unusable, no crash */
  ASSERT_ERR(ursa_barrier_destroy(&b), -EINVAL);
  ASSERT_OK(ursa_barrier_init(&b, 1));
  ASSERT_EQ(ursa_barrier_wait(&b), URSA_BARRIER_SERIAL_THREAD);
  ASSERT_OK(ursa_barrier_destroy(&b));
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_barrier_t g_bar;

static void *barrier_waiter(void *arg) {
  (void)arg;
  g_ready++;
  return (void *)(intptr_t)ursa_barrier_wait(&g_bar);
}

TEST_IMPL(badinput_barrier_destroy_with_waiters) {
  /* contract: destroy-busy */
  ursa_thread_t t[2];
  void *r;
  int serial = 0, x, i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_barrier_init(&g_bar, 3));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_create(&t[i], NULL, barrier_waiter, NULL));
  URSA_WAITFOR(g_ready == 2);
  ASSERT_ERR(ursa_barrier_destroy(&g_bar), -EBUSY);
  x = ursa_barrier_wait(&g_bar);                              /* the round still completes */
  ASSERT(x == 0 || x == URSA_BARRIER_SERIAL_THREAD);
  serial += x == URSA_BARRIER_SERIAL_THREAD;
  for (i = 0; i < 2; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    serial += (intptr_t)r == URSA_BARRIER_SERIAL_THREAD;
  }
  ASSERT_EQ(serial, 1);
  ASSERT_OK(ursa_barrier_destroy(&g_bar));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- rwlocks: rows 17-20 --------------------------------------------------------------------- */

static ursa_rwlock_t g_rw;
static int g_rd_in, g_wr_in;

static void *rw_hold(void *arg) {
  int id = (int)(intptr_t)arg & 0xff, writer = ((int)(intptr_t)arg & 0x100) != 0;
  g_ready++;
  ASSERT_OK(writer ? ursa_rwlock_wrlock(&g_rw) : ursa_rwlock_rdlock(&g_rw));
  if (writer) g_wr_in++; else g_rd_in++;
  URSA_WAITFOR(g_go[id]);
  if (writer) g_wr_in--; else g_rd_in--;
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  return NULL;
}
#define RD(id) ((void *)(intptr_t)(id))
#define WR(id) ((void *)(intptr_t)((id) | 0x100))

static void *rw_unlock_other(void *arg) { (void)arg; return (void *)(intptr_t)ursa_rwlock_unlock(&g_rw); }

static void *rw_try_other(void *arg) {
  int r = arg ? ursa_rwlock_trywrlock(&g_rw) : ursa_rwlock_tryrdlock(&g_rw);
  if (r == 0) ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  return (void *)(intptr_t)r;
}
#define TRY_RD() in_other_thread(rw_try_other, NULL)
#define TRY_WR() in_other_thread(rw_try_other, (void *)1)

TEST_IMPL(badinput_rwlock_unlock_not_held) {
  /* contract: unlock-not-held */
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);             /* free */
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  ASSERT_EQ(TRY_WR(), 0);                                     /* unchanged: glibc would hang here */
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));

  ASSERT_OK(ursa_create(&t, NULL, rw_hold, RD(0)));           /* read-held by another thread */
  URSA_WAITFOR(g_rd_in == 1);
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  ASSERT_EQ(in_other_thread(rw_unlock_other, NULL), -EPERM);
  ASSERT_EQ(TRY_WR(), -EBUSY);                                /* the holder still holds it */
  g_go[0] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_EQ(TRY_WR(), 0);

  g_go[1] = 0;
  ASSERT_OK(ursa_create(&t, NULL, rw_hold, WR(1)));           /* write-held by another thread */
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  ASSERT_EQ(TRY_RD(), -EBUSY);
  g_go[1] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));                       /* no hang */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_rwlock_relock_edeadlk) {
  /* contract: relock-deadlock */
  struct timespec ts;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_wrlock(&g_rw), -EDEADLK);
  ASSERT_ERR(ursa_rwlock_rdlock(&g_rw), -EDEADLK);          /* "-EDEADLK if write-held by caller" */
  ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_ERR(ursa_rwlock_timedwrlock(&g_rw, CLOCK_MONOTONIC, &ts), -EDEADLK);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&g_rw, CLOCK_MONOTONIC, &ts), -EDEADLK);
  ASSERT_EQ(TRY_RD(), -EBUSY);                              /* still write-held, once */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_unlock(&g_rw), -EPERM);
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_wrlock(&g_rw), -EDEADLK);          /* "-EDEADLK if held by caller" */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_EQ(TRY_WR(), 0);
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_rwlock_destroy_held) {
  /* contract: destroy-busy */
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_destroy(&g_rw), -EBUSY);
  ASSERT_OK(ursa_create(&t, NULL, rw_hold, WR(0)));           /* and with a waiter */
  URSA_WAITFOR(g_ready == 1);
  ASSERT_ERR(ursa_rwlock_destroy(&g_rw), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_ERR(ursa_rwlock_destroy(&g_rw), -EBUSY);             /* write-held */
  g_go[0] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_rwlock_wrlock(&g_rw));
  ASSERT_ERR(ursa_rwlock_destroy(&g_rw), -EBUSY);
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_rwlock_try_contended) {
  ursa_thread_t t, w;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_rwlock_init(&g_rw));
  ASSERT_OK(ursa_create(&t, NULL, rw_hold, WR(0)));
  URSA_WAITFOR(g_wr_in == 1);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&g_rw), -EBUSY);
  ASSERT_ERR(ursa_rwlock_trywrlock(&g_rw), -EBUSY);
  g_go[0] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_create(&t, NULL, rw_hold, RD(1)));
  URSA_WAITFOR(g_rd_in == 1);
  ASSERT_ERR(ursa_rwlock_trywrlock(&g_rw), -EBUSY);
  ASSERT_OK(ursa_rwlock_tryrdlock(&g_rw));                    /* readers share */
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_create(&w, NULL, rw_hold, WR(2)));           /* a writer waits */
  URSA_WAITFOR(g_ready == 3);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&g_rw), -EBUSY);
  ASSERT_ERR(ursa_rwlock_trywrlock(&g_rw), -EBUSY);
  g_go[1] = 1;
  URSA_WAITFOR(g_wr_in == 1);
  g_go[2] = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_join(w, NULL));
  ASSERT_OK(ursa_rwlock_trywrlock(&g_rw));
  ASSERT_OK(ursa_rwlock_unlock(&g_rw));
  ASSERT_OK(ursa_rwlock_destroy(&g_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* URSA_RWLOCK_READ_MAX: read locks on at most that many rwlocks at once, -EAGAIN beyond. */
TEST_IMPL(badinput_rwlock_read_max) {
  ursa_rwlock_t l[URSA_RWLOCK_READ_MAX + 1];
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i <= URSA_RWLOCK_READ_MAX; i++) ASSERT_OK(ursa_rwlock_init(&l[i]));
  for (i = 0; i < URSA_RWLOCK_READ_MAX; i++) ASSERT_OK(ursa_rwlock_rdlock(&l[i]));
  ASSERT_ERR(ursa_rwlock_rdlock(&l[URSA_RWLOCK_READ_MAX]), -EAGAIN);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&l[URSA_RWLOCK_READ_MAX]), -EAGAIN);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&l[URSA_RWLOCK_READ_MAX], CLOCK_MONOTONIC, &ts), -EAGAIN);
  ASSERT_OK(ursa_rwlock_wrlock(&l[URSA_RWLOCK_READ_MAX]));   /* writing is not limited */
  ASSERT_OK(ursa_rwlock_unlock(&l[URSA_RWLOCK_READ_MAX]));
  ASSERT_OK(ursa_rwlock_rdlock(&l[3]));                       /* recursion on a held one is fine */
  ASSERT_OK(ursa_rwlock_unlock(&l[3]));
  ASSERT_OK(ursa_rwlock_unlock(&l[0]));
  ASSERT_OK(ursa_rwlock_rdlock(&l[URSA_RWLOCK_READ_MAX]));   /* room again */
  ASSERT_OK(ursa_rwlock_unlock(&l[URSA_RWLOCK_READ_MAX]));
  for (i = 1; i < URSA_RWLOCK_READ_MAX; i++) ASSERT_OK(ursa_rwlock_unlock(&l[i]));
  for (i = 0; i <= URSA_RWLOCK_READ_MAX; i++) {
    ASSERT_ERR(ursa_rwlock_unlock(&l[i]), -EPERM);
    ASSERT_OK(ursa_rwlock_destroy(&l[i]));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 21: timed waits with a bad deadline ------------------------------------------------- */

TEST_IMPL(badinput_timed_bad_timespec) {
  /* contract: deadline-bad-nsec */
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_rwlock_t l;
  struct timespec bad[4], good;
  int i, k, v;
  const int clks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
  ASSERT_OK(ursa_init(NULL));
  good = test_deadline_in(CLOCK_MONOTONIC, 0);
  for (i = 0; i < 4; i++) bad[i] = good;
  bad[0].tv_nsec = 1000000000L;
  bad[1].tv_nsec = -1;
  bad[2].tv_nsec = LONG_MAX;
  bad[3].tv_nsec = LONG_MIN;
  ASSERT_OK(ursa_sem_init(&s, 1));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&c));
  ASSERT_OK(ursa_rwlock_init(&l));
  for (k = 0; k < 2; k++) {
    for (i = 0; i < 4; i++) {
      /* on free objects: the deadline is checked even when no wait is needed */
      ASSERT_ERR(ursa_sem_timedwait(&s, clks[k], &bad[i]), -EINVAL);
      ASSERT_ERR(ursa_mutex_timedlock(&m, clks[k], &bad[i]), -EINVAL);
      ASSERT_ERR(ursa_rwlock_timedrdlock(&l, clks[k], &bad[i]), -EINVAL);
      ASSERT_ERR(ursa_rwlock_timedwrlock(&l, clks[k], &bad[i]), -EINVAL);
      ASSERT_OK(ursa_mutex_lock(&m));
      ASSERT_ERR(ursa_cond_timedwait(&c, &m, clks[k], &bad[i]), -EINVAL);
      ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);              /* never released meanwhile */
      ASSERT_OK(ursa_mutex_unlock(&m));
    }
  }
  /* Nothing was taken: the unit is still there, the locks are free. */
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 1);
  ASSERT_EQ(in_other_thread(trylock_other, &m), 0);
  ASSERT_OK(ursa_rwlock_trywrlock(&l));
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_ERR(ursa_rwlock_unlock(&l), -EPERM);
  ASSERT_OK(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &good));
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* A clock other than CLOCK_MONOTONIC and CLOCK_REALTIME is a bad value: -EINVAL. */
TEST_IMPL(badinput_timed_bad_clock) {
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_rwlock_t l;
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  const int bad_clocks[3] = { CLOCK_PROCESS_CPUTIME_ID, -1, 12345 };
  int i, v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 1));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&c));
  ASSERT_OK(ursa_rwlock_init(&l));
  for (i = 0; i < 3; i++) {
    ASSERT_ERR(ursa_sem_timedwait(&s, bad_clocks[i], &ts), -EINVAL);
    ASSERT_ERR(ursa_mutex_timedlock(&m, bad_clocks[i], &ts), -EINVAL);
    ASSERT_ERR(ursa_rwlock_timedrdlock(&l, bad_clocks[i], &ts), -EINVAL);
    ASSERT_ERR(ursa_rwlock_timedwrlock(&l, bad_clocks[i], &ts), -EINVAL);
    ASSERT_OK(ursa_mutex_lock(&m));
    ASSERT_ERR(ursa_cond_timedwait(&c, &m, bad_clocks[i], &ts), -EINVAL);
    ASSERT_OK(ursa_mutex_unlock(&m));
  }
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, 1);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- condition variables: rows 22, 23 -------------------------------------------------------- */

static ursa_mutex_t g_m;
static ursa_cond_t g_c;
static int g_flag;

static void *hold_m_until_go1(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_mutex_lock(&g_m));
  g_ready++;
  URSA_WAITFOR(g_go[1]);
  ASSERT_OK(ursa_mutex_unlock(&g_m));
  return NULL;
}

static void *cond_wait_flag(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_mutex_lock(&g_m));
  g_ready++;
  while (!g_flag) ASSERT_OK(ursa_cond_wait(&g_c, &g_m));
  g_counter++;
  ASSERT_OK(ursa_mutex_unlock(&g_m));
  return NULL;
}

TEST_IMPL(badinput_cond_wait_without_mutex) {
  ursa_thread_t t;
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  int type;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_cond_init(&g_c));
  for (type = URSA_MUTEX_NORMAL; type <= URSA_MUTEX_RECURSIVE; type++) {
    g_ready = 0; g_go[1] = 0; g_flag = 0; g_counter = 0;
    ASSERT_OK(ursa_mutex_init(&g_m, type));
    ASSERT_ERR(ursa_cond_wait(&g_c, &g_m), -EPERM);                          /* unlocked */
    ASSERT_ERR(ursa_cond_timedwait(&g_c, &g_m, CLOCK_MONOTONIC, &ts), -EPERM);
    ASSERT_OK(ursa_create(&t, NULL, hold_m_until_go1, NULL));
    URSA_WAITFOR(g_ready == 1);
    ASSERT_ERR(ursa_cond_wait(&g_c, &g_m), -EPERM);                          /* someone else's */
    ASSERT_ERR(ursa_cond_timedwait(&g_c, &g_m, CLOCK_MONOTONIC, &ts), -EPERM);
    ASSERT_EQ(in_other_thread(trylock_other, &g_m), -EBUSY);                 /* owner unchanged */
    g_go[1] = 1;
    ASSERT_OK(ursa_join(t, NULL));
    /* The condition variable still works. */
    g_ready = 0;
    ASSERT_OK(ursa_create(&t, NULL, cond_wait_flag, NULL));
    URSA_WAITFOR(g_ready == 1);
    ASSERT_OK(ursa_mutex_lock(&g_m));
    g_flag = 1;
    ASSERT_OK(ursa_cond_signal(&g_c));
    ASSERT_OK(ursa_mutex_unlock(&g_m));
    ASSERT_OK(ursa_join(t, NULL));
    ASSERT_EQ(g_counter, 1);
    ASSERT_OK(ursa_mutex_destroy(&g_m));
  }
  ASSERT_OK(ursa_cond_destroy(&g_c));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_cond_destroy_with_waiters) {
  /* contract: destroy-busy */
  ursa_thread_t t[2];
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_init(&g_m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_cond_init(&g_c));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_create(&t[i], NULL, cond_wait_flag, NULL));
  URSA_WAITFOR(g_ready == 2);
  ASSERT_ERR(ursa_cond_destroy(&g_c), -EBUSY);
  ASSERT_OK(ursa_mutex_lock(&g_m));
  g_flag = 1;
  ASSERT_OK(ursa_cond_broadcast(&g_c));                       /* still works: both wake */
  ASSERT_OK(ursa_mutex_unlock(&g_m));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(g_counter, 2);
  ASSERT_OK(ursa_cond_destroy(&g_c));
  ASSERT_OK(ursa_mutex_destroy(&g_m));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- keys: rows 24, 25 ----------------------------------------------------------------------- */

TEST_IMPL(badinput_key_delete_twice) {
  ursa_key_t k, k2;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_key_create(&k, NULL));
  ASSERT_OK(ursa_setspecific(k, (void *)1));
  ASSERT_OK(ursa_key_delete(k));
  ASSERT_ERR(ursa_key_delete(k), -EINVAL);
  ASSERT_OK(ursa_key_create(&k2, NULL));                      /* may reuse the slot ... */
  ASSERT_ERR(ursa_key_delete(k), -EINVAL);                    /* ... the stale key stays stale */
  ASSERT_OK(ursa_setspecific(k2, (void *)2));                 /* and k2 is untouched */
  ASSERT_PTR_EQ(ursa_getspecific(k2), (void *)2);
  ASSERT_OK(ursa_key_delete(k2));
  ASSERT_ERR(ursa_key_delete(k2), -EINVAL);
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_setspecific_bogus_key) {
  const ursa_key_t bogus[6] = { 0, 1, 127, 128, 0xffffffffu, (77u << 8) | 5u };
  ursa_key_t k;
  int i;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_key_create(&k, NULL));
  ASSERT_OK(ursa_setspecific(k, (void *)3));
  for (i = 0; i < 6; i++) {
    if (bogus[i] == k) continue;
    ASSERT_ERR(ursa_setspecific(bogus[i], (void *)9), -EINVAL);
    ASSERT_PTR_EQ(ursa_getspecific(bogus[i]), NULL);
    ASSERT_ERR(ursa_key_delete(bogus[i]), -EINVAL);
  }
  ASSERT_PTR_EQ(ursa_getspecific(k), (void *)3);              /* the real key lost nothing */
  ASSERT_OK(ursa_key_delete(k));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_key_create_full) {
  ursa_key_t k[URSA_KEYS_MAX + 1];
  int i, n;
  ASSERT_OK(ursa_init(NULL));
  for (n = 0; n < URSA_KEYS_MAX; n++) ASSERT_OK(ursa_key_create(&k[n], NULL));
  ASSERT_ERR(ursa_key_create(&k[n], NULL), -EAGAIN);
  for (i = 0; i < URSA_KEYS_MAX; i++) ASSERT_OK(ursa_setspecific(k[i], (void *)(intptr_t)(i + 1)));
  for (i = 0; i < URSA_KEYS_MAX; i++) ASSERT_PTR_EQ(ursa_getspecific(k[i]), (void *)(intptr_t)(i + 1));
  ASSERT_OK(ursa_key_delete(k[10]));
  ASSERT_OK(ursa_key_create(&k[10], NULL));                   /* room again */
  ASSERT_PTR_EQ(ursa_getspecific(k[10]), NULL);
  for (i = 0; i < URSA_KEYS_MAX; i++) ASSERT_OK(ursa_key_delete(k[i]));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- semaphores: rows 26, 27 ----------------------------------------------------------------- */

TEST_IMPL(badinput_sem_init_above_max) {
  ursa_sem_t s;
  int v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_ERR(ursa_sem_init(&s, URSA_SEM_VALUE_MAX + 1u), -EINVAL);
  ASSERT_ERR(ursa_sem_init(&s, UINT_MAX), -EINVAL);
  ASSERT_OK(ursa_sem_init(&s, URSA_SEM_VALUE_MAX));
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, (long long)URSA_SEM_VALUE_MAX);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_sem_post_overflow) {
  ursa_sem_t s;
  int v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, URSA_SEM_VALUE_MAX - 1));
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_ERR(ursa_sem_post(&s), -EOVERFLOW);
  ASSERT_ERR(ursa_sem_post(&s), -EOVERFLOW);
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, (long long)URSA_SEM_VALUE_MAX);               /* unchanged */
  ASSERT_OK(ursa_sem_trywait(&s));
  ASSERT_OK(ursa_sem_post(&s));                               /* room for one again */
  ASSERT_ERR(ursa_sem_post(&s), -EOVERFLOW);
  ASSERT_OK(ursa_sem_getvalue(&s, &v));
  ASSERT_EQ(v, (long long)URSA_SEM_VALUE_MAX);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- cells: rows 28, 30 ---------------------------------------------------------------------- */

static ursa_ivar_t g_iv;

static void *ivar_get_thread(void *arg) {
  void *v = NULL;
  (void)arg;
  g_ready++;
  ASSERT_OK(ursa_ivar_get(&g_iv, &v));
  return v;
}

TEST_IMPL(badinput_ivar_second_put) {
  /* contract: ivar-second-put */
  ursa_thread_t t;
  void *v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_ivar_init(&g_iv));
  ASSERT_OK(ursa_create(&t, NULL, ivar_get_thread, NULL));
  URSA_WAITFOR(g_ready == 1);
  ASSERT_OK(ursa_ivar_put(&g_iv, (void *)1));
  ASSERT_ERR(ursa_ivar_put(&g_iv, (void *)2), -EBUSY);        /* before the reader ran */
  ASSERT_ERR(ursa_ivar_put(&g_iv, NULL), -EBUSY);
  ASSERT_OK(ursa_join(t, &v));
  ASSERT_PTR_EQ(v, (void *)1);                                /* the first value */
  ASSERT_OK(ursa_ivar_get(&g_iv, &v));
  ASSERT_PTR_EQ(v, (void *)1);
  ASSERT_OK(ursa_ivar_tryget(&g_iv, &v));
  ASSERT_PTR_EQ(v, (void *)1);
  ASSERT_OK(ursa_ivar_destroy(&g_iv));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(badinput_mvar_try_full_empty) {
  /* contract: mvar-try-full-empty */
  ursa_mvar_t mv;
  void *v = (void *)0x55;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mvar_init(&mv));
  ASSERT_ERR(ursa_mvar_trytake(&mv, &v), -EAGAIN);
  ASSERT_PTR_EQ(v, (void *)0x55);                             /* out-parameter untouched */
  ASSERT_OK(ursa_mvar_tryput(&mv, (void *)1));
  ASSERT_ERR(ursa_mvar_tryput(&mv, (void *)2), -EAGAIN);
  ASSERT_OK(ursa_mvar_trytake(&mv, &v));
  ASSERT_PTR_EQ(v, (void *)1);                                /* the first value, not the refused one */
  ASSERT_ERR(ursa_mvar_trytake(&mv, &v), -EAGAIN);
  ASSERT_OK(ursa_mvar_destroy(&mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- row 31: operations on destroyed (and never-initialized) objects ------------------------- */

TEST_IMPL(badinput_use_destroyed_objects) {
  /* contract: use-destroyed */
  ursa_sem_t s;
  ursa_mutex_t m, mok;
  ursa_cond_t c;
  ursa_barrier_t b;
  ursa_rwlock_t l;
  ursa_ivar_t iv;
  ursa_mvar_t mv;
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  void *v;
  int iv_out;
  ASSERT_OK(ursa_init(NULL));

  ASSERT_OK(ursa_sem_init(&s, 3));
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_ERR(ursa_sem_wait(&s), -EINVAL);
  ASSERT_ERR(ursa_sem_trywait(&s), -EINVAL);
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_sem_post(&s), -EINVAL);
  ASSERT_ERR(ursa_sem_getvalue(&s, &iv_out), -EINVAL);
  ASSERT_ERR(ursa_sem_destroy(&s), -EINVAL);

  ASSERT_OK(ursa_mutex_init(&mok, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_cond_init(&c));
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_ERR(ursa_cond_signal(&c), -EINVAL);
  ASSERT_ERR(ursa_cond_broadcast(&c), -EINVAL);
  ASSERT_OK(ursa_mutex_lock(&mok));
  ASSERT_ERR(ursa_cond_wait(&c, &mok), -EINVAL);
  ASSERT_ERR(ursa_cond_timedwait(&c, &mok, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_OK(ursa_mutex_unlock(&mok));                         /* the mutex was kept throughout */
  ASSERT_ERR(ursa_mutex_unlock(&mok), -EPERM);
  ASSERT_ERR(ursa_cond_destroy(&c), -EINVAL);

  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_RECURSIVE));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_ERR(ursa_mutex_lock(&m), -EINVAL);
  ASSERT_ERR(ursa_mutex_unlock(&m), -EINVAL);

  ASSERT_OK(ursa_barrier_init(&b, 2));
  ASSERT_OK(ursa_barrier_destroy(&b));
  ASSERT_ERR(ursa_barrier_wait(&b), -EINVAL);
  ASSERT_ERR(ursa_barrier_destroy(&b), -EINVAL);

  ASSERT_OK(ursa_rwlock_init(&l));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_ERR(ursa_rwlock_rdlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&l, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_rwlock_wrlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_trywrlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedwrlock(&l, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_rwlock_unlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_destroy(&l), -EINVAL);

  ASSERT_OK(ursa_ivar_init(&iv));
  ASSERT_OK(ursa_ivar_put(&iv, (void *)1));
  ASSERT_OK(ursa_ivar_destroy(&iv));
  ASSERT_ERR(ursa_ivar_put(&iv, (void *)2), -EINVAL);
  ASSERT_ERR(ursa_ivar_get(&iv, &v), -EINVAL);
  ASSERT_ERR(ursa_ivar_tryget(&iv, &v), -EINVAL);
  ASSERT_ERR(ursa_ivar_destroy(&iv), -EINVAL);

  ASSERT_OK(ursa_mvar_init(&mv));
  ASSERT_OK(ursa_mvar_put(&mv, (void *)1));
  ASSERT_OK(ursa_mvar_destroy(&mv));                          /* full but nobody waits: allowed */
  ASSERT_ERR(ursa_mvar_put(&mv, (void *)2), -EINVAL);
  ASSERT_ERR(ursa_mvar_take(&mv, &v), -EINVAL);
  ASSERT_ERR(ursa_mvar_tryput(&mv, (void *)2), -EINVAL);
  ASSERT_ERR(ursa_mvar_trytake(&mv, &v), -EINVAL);
  ASSERT_ERR(ursa_mvar_destroy(&mv), -EINVAL);

  /* Each can be made again in the same storage. */
  ASSERT_OK(ursa_sem_init(&s, 0));
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_sem_wait(&s));
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_rwlock_init(&l));
  ASSERT_OK(ursa_rwlock_wrlock(&l));
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_OK(ursa_mvar_init(&mv));
  ASSERT_OK(ursa_mvar_tryput(&mv, (void *)4));
  ASSERT_OK(ursa_mvar_take(&mv, &v));
  ASSERT_PTR_EQ(v, (void *)4);
  ASSERT_OK(ursa_mvar_destroy(&mv));
  ASSERT_OK(ursa_mutex_destroy(&mok));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void dummy_once(void) {}

/* ursa_strerror(-EINVAL): "uninitialized or destroyed object".  Objects full of garbage, and
 * all-zero objects of the kinds that have no static initializer, are rejected, never used. */
TEST_IMPL(badinput_uninitialized_objects) {
  /* contract: use-destroyed */
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_barrier_t b;
  ursa_rwlock_t l;
  ursa_ivar_t iv;
  ursa_mvar_t mv;
  ursa_once_t o;
  ursa_attr_t a;
  ursa_thread_t t;
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  void *v;
  int iv_out, pass;
  ASSERT_OK(ursa_init(NULL));
  for (pass = 0; pass < 2; pass++) {
    int fill = pass == 0 ? 0xa5 : 0x00;
    memset(&s, fill, sizeof s);
    memset(&b, fill, sizeof b);
    memset(&iv, fill, sizeof iv);
    memset(&mv, fill, sizeof mv);
    ASSERT_ERR(ursa_sem_wait(&s), -EINVAL);
    ASSERT_ERR(ursa_sem_trywait(&s), -EINVAL);
    ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &ts), -EINVAL);
    ASSERT_ERR(ursa_sem_post(&s), -EINVAL);
    ASSERT_ERR(ursa_sem_getvalue(&s, &iv_out), -EINVAL);
    ASSERT_ERR(ursa_sem_destroy(&s), -EINVAL);
    ASSERT_ERR(ursa_barrier_wait(&b), -EINVAL);
    ASSERT_ERR(ursa_barrier_destroy(&b), -EINVAL);
    ASSERT_ERR(ursa_ivar_put(&iv, NULL), -EINVAL);
    ASSERT_ERR(ursa_ivar_get(&iv, &v), -EINVAL);
    ASSERT_ERR(ursa_ivar_tryget(&iv, &v), -EINVAL);
    ASSERT_ERR(ursa_ivar_destroy(&iv), -EINVAL);
    ASSERT_ERR(ursa_mvar_put(&mv, NULL), -EINVAL);
    ASSERT_ERR(ursa_mvar_take(&mv, &v), -EINVAL);
    ASSERT_ERR(ursa_mvar_tryput(&mv, NULL), -EINVAL);
    ASSERT_ERR(ursa_mvar_trytake(&mv, &v), -EINVAL);
    ASSERT_ERR(ursa_mvar_destroy(&mv), -EINVAL);
  }
  /* Kinds with a static initializer: garbage (not zero) is rejected. */
  memset(&m, 0xa5, sizeof m);
  memset(&c, 0xa5, sizeof c);
  memset(&l, 0xa5, sizeof l);
  memset(&o, 0xa5, sizeof o);
  memset(&a, 0xa5, sizeof a);
  ASSERT_ERR(ursa_mutex_lock(&m), -EINVAL);
  ASSERT_ERR(ursa_mutex_trylock(&m), -EINVAL);
  ASSERT_ERR(ursa_mutex_unlock(&m), -EINVAL);
  ASSERT_ERR(ursa_mutex_destroy(&m), -EINVAL);
  ASSERT_ERR(ursa_cond_signal(&c), -EINVAL);
  ASSERT_ERR(ursa_cond_broadcast(&c), -EINVAL);
  ASSERT_ERR(ursa_cond_destroy(&c), -EINVAL);
  ASSERT_ERR(ursa_rwlock_rdlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_wrlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_unlock(&l), -EINVAL);
  ASSERT_ERR(ursa_rwlock_destroy(&l), -EINVAL);
  ASSERT_ERR(ursa_once(&o, dummy_once), -EINVAL);
  ASSERT_ERR(ursa_create(&t, &a, ret_arg, NULL), -EINVAL);
  ASSERT_ERR(ursa_attr_setstacksize(&a, 65536), -EINVAL);
  ASSERT_ERR(ursa_attr_destroy(&a), -EINVAL);
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* Every object with waiters refuses destroy and keeps working (sem, mutex, ivar, mvar). */
static ursa_sem_t g_sem;
static ursa_mvar_t g_mv;
static void *sem_wait_thread(void *arg) { (void)arg; g_ready++; ASSERT_OK(ursa_sem_wait(&g_sem)); return NULL; }
static void *mvar_take_thread(void *arg) {
  void *v = NULL;
  (void)arg;
  g_ready++;
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  return v;
}
static void *mvar_put_thread(void *arg) { g_ready++; ASSERT_OK(ursa_mvar_put(&g_mv, arg)); return NULL; }

TEST_IMPL(badinput_destroy_with_waiters) {
  /* contract: destroy-busy */
  ursa_thread_t t;
  void *v;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&g_sem, 0));
  ASSERT_OK(ursa_create(&t, NULL, sem_wait_thread, NULL));
  URSA_WAITFOR(g_ready == 1);
  ASSERT_ERR(ursa_sem_destroy(&g_sem), -EBUSY);
  ASSERT_OK(ursa_sem_post(&g_sem));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_sem_destroy(&g_sem));

  g_ready = 0;
  ASSERT_OK(ursa_ivar_init(&g_iv));
  ASSERT_OK(ursa_create(&t, NULL, ivar_get_thread, NULL));
  URSA_WAITFOR(g_ready == 1);
  ASSERT_ERR(ursa_ivar_destroy(&g_iv), -EBUSY);
  ASSERT_OK(ursa_ivar_put(&g_iv, (void *)8));
  ASSERT_OK(ursa_join(t, &v));
  ASSERT_PTR_EQ(v, (void *)8);
  ASSERT_OK(ursa_ivar_destroy(&g_iv));

  g_ready = 0;
  ASSERT_OK(ursa_mvar_init(&g_mv));
  ASSERT_OK(ursa_create(&t, NULL, mvar_take_thread, NULL));
  URSA_WAITFOR(g_ready == 1);
  ASSERT_ERR(ursa_mvar_destroy(&g_mv), -EBUSY);               /* a taker waits */
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)9));
  ASSERT_OK(ursa_join(t, &v));
  ASSERT_PTR_EQ(v, (void *)9);
  g_ready = 0;
  ASSERT_OK(ursa_mvar_put(&g_mv, (void *)10));
  ASSERT_OK(ursa_create(&t, NULL, mvar_put_thread, (void *)11));
  URSA_WAITFOR(g_ready == 1);
  ASSERT_ERR(ursa_mvar_destroy(&g_mv), -EBUSY);               /* a putter waits */
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)10);
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_mvar_take(&g_mv, &v));
  ASSERT_PTR_EQ(v, (void *)11);
  ASSERT_OK(ursa_mvar_destroy(&g_mv));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- NULL pointers --------------------------------------------------------------------------- */

static void *noop(void *arg) { return arg; }

TEST_IMPL(badinput_null_pointers) {
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_rwlock_t l;
  ursa_ivar_t iv;
  ursa_mvar_t mv;
  ursa_once_t o = URSA_ONCE_INIT;
  ursa_attr_t a;
  ursa_thread_t t;
  size_t sz;
  int v;
  void *p;
  char buf[8];
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 1));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&c));
  ASSERT_OK(ursa_rwlock_init(&l));
  ASSERT_OK(ursa_ivar_init(&iv));
  ASSERT_OK(ursa_mvar_init(&mv));
  ASSERT_OK(ursa_attr_init(&a));

  ASSERT_ERR(ursa_attr_init(NULL), -EINVAL);
  ASSERT_ERR(ursa_attr_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_attr_setstacksize(NULL, 65536), -EINVAL);
  ASSERT_ERR(ursa_attr_getstacksize(NULL, &sz), -EINVAL);
  ASSERT_ERR(ursa_attr_getstacksize(&a, NULL), -EINVAL);
  ASSERT_ERR(ursa_attr_setname(NULL, "x"), -EINVAL);
  ASSERT_ERR(ursa_attr_setname(&a, NULL), -EINVAL);
  ASSERT_ERR(ursa_attr_setdetached(NULL, 1), -EINVAL);
  ASSERT_ERR(ursa_create(&t, NULL, NULL, NULL), -EINVAL);
  ASSERT_ERR(ursa_create(NULL, NULL, noop, NULL), -EINVAL);      /* joinable needs a handle */
  ASSERT_ERR(ursa_create(NULL, &a, noop, NULL), -EINVAL);
  ASSERT_ERR(ursa_thread_getname(ursa_self(), NULL, 8), -EINVAL);
  ASSERT_ERR(ursa_thread_getname(ursa_self(), buf, 0), -EINVAL);
  ASSERT_ERR(ursa_stats(NULL), -EINVAL);
  ASSERT_ERR(ursa_stats_vp(0, NULL), -EINVAL);
  ASSERT_ERR(ursa_stats_print(NULL), -EINVAL);

  ASSERT_ERR(ursa_sem_init(NULL, 0), -EINVAL);
  ASSERT_ERR(ursa_sem_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_sem_wait(NULL), -EINVAL);
  ASSERT_ERR(ursa_sem_trywait(NULL), -EINVAL);
  ASSERT_ERR(ursa_sem_timedwait(NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, NULL), -EINVAL);
  ASSERT_ERR(ursa_sem_post(NULL), -EINVAL);
  ASSERT_ERR(ursa_sem_getvalue(NULL, &v), -EINVAL);
  ASSERT_ERR(ursa_sem_getvalue(&s, NULL), -EINVAL);

  ASSERT_ERR(ursa_mutex_init(NULL, URSA_MUTEX_NORMAL), -EINVAL);
  ASSERT_ERR(ursa_mutex_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_mutex_lock(NULL), -EINVAL);
  ASSERT_ERR(ursa_mutex_trylock(NULL), -EINVAL);
  ASSERT_ERR(ursa_mutex_timedlock(NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, NULL), -EINVAL);
  ASSERT_ERR(ursa_mutex_unlock(NULL), -EINVAL);

  ASSERT_ERR(ursa_cond_init(NULL), -EINVAL);
  ASSERT_ERR(ursa_cond_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_cond_signal(NULL), -EINVAL);
  ASSERT_ERR(ursa_cond_broadcast(NULL), -EINVAL);
  ASSERT_OK(ursa_mutex_lock(&m));
  ASSERT_ERR(ursa_cond_wait(NULL, &m), -EINVAL);
  ASSERT_ERR(ursa_cond_wait(&c, NULL), -EINVAL);
  ASSERT_ERR(ursa_cond_timedwait(NULL, &m, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_cond_timedwait(&c, NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, NULL), -EINVAL);
  ASSERT_ERR(ursa_mutex_lock(&m), -EDEADLK);                  /* still held throughout */
  ASSERT_OK(ursa_mutex_unlock(&m));

  ASSERT_ERR(ursa_barrier_init(NULL, 2), -EINVAL);
  ASSERT_ERR(ursa_barrier_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_barrier_wait(NULL), -EINVAL);

  ASSERT_ERR(ursa_rwlock_init(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_rdlock(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_tryrdlock(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedrdlock(NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&l, CLOCK_MONOTONIC, NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_wrlock(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_trywrlock(NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedwrlock(NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
  ASSERT_ERR(ursa_rwlock_timedwrlock(&l, CLOCK_MONOTONIC, NULL), -EINVAL);
  ASSERT_ERR(ursa_rwlock_unlock(NULL), -EINVAL);

  ASSERT_ERR(ursa_once(NULL, dummy_once), -EINVAL);
  ASSERT_ERR(ursa_once(&o, NULL), -EINVAL);
  ASSERT_ERR(ursa_key_create(NULL, NULL), -EINVAL);

  ASSERT_ERR(ursa_ivar_init(NULL), -EINVAL);
  ASSERT_ERR(ursa_ivar_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_ivar_put(NULL, NULL), -EINVAL);
  ASSERT_ERR(ursa_ivar_get(NULL, &p), -EINVAL);
  ASSERT_ERR(ursa_ivar_get(&iv, NULL), -EINVAL);               /* empty: must not wait first */
  ASSERT_ERR(ursa_ivar_tryget(NULL, &p), -EINVAL);
  ASSERT_ERR(ursa_ivar_tryget(&iv, NULL), -EINVAL);

  ASSERT_ERR(ursa_mvar_init(NULL), -EINVAL);
  ASSERT_ERR(ursa_mvar_destroy(NULL), -EINVAL);
  ASSERT_ERR(ursa_mvar_put(NULL, NULL), -EINVAL);
  ASSERT_ERR(ursa_mvar_take(NULL, &p), -EINVAL);
  ASSERT_ERR(ursa_mvar_take(&mv, NULL), -EINVAL);              /* empty: must not wait first */
  ASSERT_ERR(ursa_mvar_tryput(NULL, NULL), -EINVAL);
  ASSERT_ERR(ursa_mvar_trytake(NULL, &p), -EINVAL);
  ASSERT_OK(ursa_mvar_put(&mv, (void *)1));
  ASSERT_ERR(ursa_mvar_trytake(&mv, NULL), -EINVAL);           /* full: the value stays */
  ASSERT_ERR(ursa_mvar_take(&mv, NULL), -EINVAL);

  /* Every object is intact. */
  ASSERT_OK(ursa_sem_trywait(&s));
  ASSERT_OK(ursa_mutex_trylock(&m));
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_rwlock_trywrlock(&l));
  ASSERT_OK(ursa_rwlock_unlock(&l));
  ASSERT_ERR(ursa_ivar_tryget(&iv, &p), -EAGAIN);
  ASSERT_OK(ursa_mvar_trytake(&mv, &p));
  ASSERT_PTR_EQ(p, (void *)1);
  ASSERT_OK(ursa_once(&o, dummy_once));
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_mutex_destroy(&m));
  ASSERT_OK(ursa_cond_destroy(&c));
  ASSERT_OK(ursa_rwlock_destroy(&l));
  ASSERT_OK(ursa_ivar_destroy(&iv));
  ASSERT_OK(ursa_mvar_destroy(&mv));
  ASSERT_OK(ursa_attr_destroy(&a));
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- contexts: before ursa_init, after ursa_fini, from another kernel thread ----------------- */

static ursa_mutex_t g_smx = URSA_MUTEX_INITIALIZER;
static ursa_cond_t g_scv = URSA_COND_INITIALIZER;
static ursa_rwlock_t g_srw = URSA_RWLOCK_INITIALIZER;
static ursa_once_t g_sonce = URSA_ONCE_INIT;
static int g_once_runs;
static void count_once(void) { g_once_runs++; }

TEST_IMPL(badinput_before_init_eperm) {
  /* contract: outside-ursa */
  ursa_thread_t t;
  ursa_key_t k = 0;
  char name[URSA_NAME_MAX];
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_ERR(ursa_mutex_lock(&g_smx), -EPERM);
  ASSERT_ERR(ursa_mutex_trylock(&g_smx), -EPERM);
  ASSERT_ERR(ursa_mutex_timedlock(&g_smx, CLOCK_MONOTONIC, &ts), -EPERM);
  ASSERT_ERR(ursa_mutex_unlock(&g_smx), -EPERM);
  ASSERT_ERR(ursa_cond_wait(&g_scv, &g_smx), -EPERM);
  ASSERT_ERR(ursa_cond_timedwait(&g_scv, &g_smx, CLOCK_MONOTONIC, &ts), -EPERM);
  ASSERT_ERR(ursa_cond_signal(&g_scv), -EPERM);
  ASSERT_ERR(ursa_cond_broadcast(&g_scv), -EPERM);
  ASSERT_ERR(ursa_rwlock_rdlock(&g_srw), -EPERM);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&g_srw), -EPERM);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&g_srw, CLOCK_MONOTONIC, &ts), -EPERM);
  ASSERT_ERR(ursa_rwlock_wrlock(&g_srw), -EPERM);
  ASSERT_ERR(ursa_rwlock_trywrlock(&g_srw), -EPERM);
  ASSERT_ERR(ursa_rwlock_timedwrlock(&g_srw, CLOCK_MONOTONIC, &ts), -EPERM);
  ASSERT_ERR(ursa_rwlock_unlock(&g_srw), -EPERM);
  ASSERT_ERR(ursa_once(&g_sonce, count_once), -EPERM);
  ASSERT_EQ(g_once_runs, 0);
  ASSERT_ERR(ursa_create(&t, NULL, noop, NULL), -EPERM);
  ASSERT_ERR(ursa_join((ursa_thread_t)(uintptr_t)0x100000001ull, NULL), -EPERM);
  ASSERT_ERR(ursa_detach((ursa_thread_t)(uintptr_t)0x100000001ull), -EPERM);
  ASSERT_ERR(ursa_yield(), -EPERM);
  ASSERT_ERR(ursa_yield_to((ursa_thread_t)(uintptr_t)0x100000001ull), -EPERM);
  ASSERT_ERR(ursa_sleep_ns(1000), -EPERM);
  ASSERT_ERR(ursa_thread_getname((ursa_thread_t)(uintptr_t)0x100000001ull, name, sizeof name), -EPERM);
  ASSERT_ERR(ursa_fini(), -EPERM);
  ASSERT_ERR(ursa_key_create(&k, NULL), -EPERM);
  ASSERT_ERR(ursa_key_delete(k), -EPERM);
  ASSERT_ERR(ursa_setspecific(k, (void *)1), -EPERM);
  ASSERT_PTR_EQ(ursa_getspecific(k), NULL);
  ASSERT(ursa_self() == URSA_THREAD_NULL);
  ASSERT_EQ(ursa_thread_id((ursa_thread_t)(uintptr_t)0x100000001ull), 0);
  ASSERT_EQ(ursa_vp_count(), 0);
  /* Nothing was damaged: after ursa_init the same static objects work. */
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_mutex_lock(&g_smx));
  ASSERT_OK(ursa_cond_signal(&g_scv));
  ASSERT_OK(ursa_mutex_unlock(&g_smx));
  ASSERT_OK(ursa_rwlock_wrlock(&g_srw));
  ASSERT_OK(ursa_rwlock_unlock(&g_srw));
  ASSERT_OK(ursa_once(&g_sonce, count_once));
  ASSERT_EQ(g_once_runs, 1);
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* The objects of one runtime, used from a context that is not an ursa thread. */
struct objs {
  ursa_sem_t     s;
  ursa_mutex_t   m;
  ursa_cond_t    c;
  ursa_barrier_t b;
  ursa_rwlock_t  l;
  ursa_ivar_t    iv;
  ursa_mvar_t    mv;
  ursa_key_t     k;
  ursa_thread_t  main_handle;
};

static void objs_init(struct objs *o) {
  ASSERT_OK(ursa_sem_init(&o->s, 1));
  ASSERT_OK(ursa_mutex_init(&o->m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_cond_init(&o->c));
  ASSERT_OK(ursa_barrier_init(&o->b, 2));
  ASSERT_OK(ursa_rwlock_init(&o->l));
  ASSERT_OK(ursa_ivar_init(&o->iv));
  ASSERT_OK(ursa_mvar_init(&o->mv));
  ASSERT_OK(ursa_key_create(&o->k, NULL));
  o->main_handle = ursa_self();
}

/* Every operation that needs the runtime returns -EPERM; returns the number of calls checked. */
static int objs_expect_eperm(struct objs *o) {
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ursa_thread_t t;
  void *v;
  int n = 0;
#define EPERM_CALL(call) do { ASSERT_ERR(call, -EPERM); n++; } while (0)
  EPERM_CALL(ursa_sem_wait(&o->s));
  EPERM_CALL(ursa_sem_trywait(&o->s));
  EPERM_CALL(ursa_sem_timedwait(&o->s, CLOCK_MONOTONIC, &ts));
  EPERM_CALL(ursa_sem_post(&o->s));
  EPERM_CALL(ursa_mutex_lock(&o->m));
  EPERM_CALL(ursa_mutex_trylock(&o->m));
  EPERM_CALL(ursa_mutex_timedlock(&o->m, CLOCK_MONOTONIC, &ts));
  EPERM_CALL(ursa_mutex_unlock(&o->m));
  EPERM_CALL(ursa_cond_wait(&o->c, &o->m));
  EPERM_CALL(ursa_cond_timedwait(&o->c, &o->m, CLOCK_MONOTONIC, &ts));
  EPERM_CALL(ursa_cond_signal(&o->c));
  EPERM_CALL(ursa_cond_broadcast(&o->c));
  EPERM_CALL(ursa_barrier_wait(&o->b));
  EPERM_CALL(ursa_rwlock_rdlock(&o->l));
  EPERM_CALL(ursa_rwlock_tryrdlock(&o->l));
  EPERM_CALL(ursa_rwlock_timedrdlock(&o->l, CLOCK_MONOTONIC, &ts));
  EPERM_CALL(ursa_rwlock_wrlock(&o->l));
  EPERM_CALL(ursa_rwlock_trywrlock(&o->l));
  EPERM_CALL(ursa_rwlock_timedwrlock(&o->l, CLOCK_MONOTONIC, &ts));
  EPERM_CALL(ursa_rwlock_unlock(&o->l));
  EPERM_CALL(ursa_ivar_put(&o->iv, (void *)1));
  EPERM_CALL(ursa_ivar_get(&o->iv, &v));
  EPERM_CALL(ursa_mvar_put(&o->mv, (void *)1));
  EPERM_CALL(ursa_mvar_take(&o->mv, &v));
  EPERM_CALL(ursa_mvar_tryput(&o->mv, (void *)1));
  EPERM_CALL(ursa_mvar_trytake(&o->mv, &v));
  EPERM_CALL(ursa_setspecific(o->k, (void *)1));
  EPERM_CALL(ursa_key_delete(o->k));
  EPERM_CALL(ursa_create(&t, NULL, noop, NULL));
  EPERM_CALL(ursa_join(o->main_handle, NULL));
  EPERM_CALL(ursa_detach(o->main_handle));
  EPERM_CALL(ursa_yield());
  EPERM_CALL(ursa_yield_to(o->main_handle));
  EPERM_CALL(ursa_sleep_ns(1000));
  EPERM_CALL(ursa_fini());
#undef EPERM_CALL
  ASSERT(ursa_self() == URSA_THREAD_NULL);
  ASSERT_PTR_EQ(ursa_getspecific(o->k), NULL);
  return n;
}

/* The objects lost nothing: check from an ursa thread. */
static void objs_check_intact(struct objs *o) {
  void *v;
  int sv;
  ASSERT_OK(ursa_sem_getvalue(&o->s, &sv));
  ASSERT_EQ(sv, 1);
  ASSERT_OK(ursa_sem_trywait(&o->s));
  ASSERT_OK(ursa_mutex_trylock(&o->m));
  ASSERT_OK(ursa_mutex_unlock(&o->m));
  ASSERT_OK(ursa_rwlock_trywrlock(&o->l));
  ASSERT_OK(ursa_rwlock_unlock(&o->l));
  ASSERT_ERR(ursa_ivar_tryget(&o->iv, &v), -EAGAIN);
  ASSERT_ERR(ursa_mvar_trytake(&o->mv, &v), -EAGAIN);
  ASSERT_OK(ursa_cond_signal(&o->c));
  ASSERT_OK(ursa_sem_destroy(&o->s));
  ASSERT_OK(ursa_mutex_destroy(&o->m));
  ASSERT_OK(ursa_cond_destroy(&o->c));
  ASSERT_OK(ursa_barrier_destroy(&o->b));
  ASSERT_OK(ursa_rwlock_destroy(&o->l));
  ASSERT_OK(ursa_ivar_destroy(&o->iv));
  ASSERT_OK(ursa_mvar_destroy(&o->mv));
}

TEST_IMPL(badinput_after_fini_eperm) {
  struct objs o;
  ASSERT_OK(ursa_init(NULL));
  objs_init(&o);
  ASSERT_OK(ursa_fini());
  ASSERT_GT(objs_expect_eperm(&o), 30);
  ASSERT_OK(ursa_init(NULL));
  objs_check_intact(&o);
  ASSERT_OK(ursa_key_delete(o.k));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *foreign_kernel_thread(void *arg) {
  return (void *)(intptr_t)objs_expect_eperm(arg);
}

TEST_IMPL(badinput_foreign_kernel_thread_eperm) {
  /* contract: outside-ursa */
  struct objs o;
  pthread_t pt;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  objs_init(&o);
  ASSERT_OK(pthread_create(&pt, NULL, foreign_kernel_thread, &o));
  ASSERT_OK(pthread_join(pt, &r));
  ASSERT_GT((intptr_t)r, 30);
  ASSERT(ursa_self() != URSA_THREAD_NULL);                    /* main is still an ursa thread */
  objs_check_intact(&o);
  ASSERT_OK(ursa_key_delete(o.k));
  check_threads_work();
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ursa.h, Contexts: "ursa functions may be called from ursa threads only ... Calls from another
 * kernel thread, or before ursa_init(), return -EPERM.  Exceptions, callable from anywhere:
 * ursa_init, ursa_strerror, the ursa_attr_* functions and the counters."  So the functions that
 * make, inspect and destroy objects are held to it too; every deviation is listed, then the test
 * fails once.  The exceptions must work from anywhere. */
static int g_strict_bad;
#define STRICT_EPERM(call)                                                                   \
  do {                                                                                       \
    int r_ = (call);                                                                         \
    if (r_ != -EPERM) {                                                                      \
      fprintf(stderr, "%s: `%s` returned %d (%s), expected -EPERM\n", where, #call, r_,      \
              ursa_strerror(r_));                                                            \
      g_strict_bad++;                                                                        \
    }                                                                                        \
  } while (0)

static void strict_calls(const char *where, struct objs *o) {
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_cond_t c;
  ursa_barrier_t b;
  ursa_rwlock_t l;
  ursa_ivar_t iv;
  ursa_mvar_t mv;
  ursa_stats_t st;
  ursa_attr_t a;
  size_t sz;
  void *v;
  int sv;
  /* the exceptions */
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setstacksize(&a, 1 << 20));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_EQ(sz, 1 << 20);
  ASSERT_OK(ursa_attr_setname(&a, "x"));
  ASSERT_OK(ursa_attr_setdetached(&a, 1));
  ASSERT_ERR(ursa_attr_setstacksize(&a, 1024), -EINVAL);
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_NE(ursa_stats(&st), -EPERM);       /* (before ursa_init VP 0 may not "exist") */
  ASSERT_NE(ursa_stats_vp(0, &st), -EPERM);
  ASSERT(ursa_strerror(-EPERM) != NULL);
  /* the rest */
  STRICT_EPERM(ursa_sem_init(&s, 1));
  STRICT_EPERM(ursa_mutex_init(&m, URSA_MUTEX_NORMAL));
  STRICT_EPERM(ursa_cond_init(&c));
  STRICT_EPERM(ursa_barrier_init(&b, 2));
  STRICT_EPERM(ursa_rwlock_init(&l));
  STRICT_EPERM(ursa_ivar_init(&iv));
  STRICT_EPERM(ursa_mvar_init(&mv));
  if (o) {
    STRICT_EPERM(ursa_sem_getvalue(&o->s, &sv));
    STRICT_EPERM(ursa_ivar_tryget(&o->iv, &v));
    STRICT_EPERM(ursa_sem_destroy(&o->s));
    STRICT_EPERM(ursa_mutex_destroy(&o->m));
    STRICT_EPERM(ursa_cond_destroy(&o->c));
    STRICT_EPERM(ursa_barrier_destroy(&o->b));
    STRICT_EPERM(ursa_rwlock_destroy(&o->l));
    STRICT_EPERM(ursa_ivar_destroy(&o->iv));
    STRICT_EPERM(ursa_mvar_destroy(&o->mv));
  }
}

static void *strict_foreign(void *arg) {
  strict_calls("another kernel thread", arg);
  return NULL;
}

TEST_IMPL(badinput_outside_ursa_every_call_eperm) {
  /* contract: outside-ursa */
  struct objs o;
  pthread_t pt;
  strict_calls("before ursa_init", NULL);
  ASSERT_EQ(ursa_vp_count(), 0);
  ASSERT_OK(ursa_init(NULL));
  objs_init(&o);
  ASSERT_OK(pthread_create(&pt, NULL, strict_foreign, &o));
  ASSERT_OK(pthread_join(pt, NULL));
  if (g_strict_bad) FAIL("%d calls from outside ursa did not return -EPERM (listed above)", g_strict_bad);
  ASSERT_OK(ursa_fini());
  return 0;
}
