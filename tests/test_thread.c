/* Threads: create, join, detach, exit, self, names, yield order, named yield, errno. */
#include "task.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__has_include)
#  if __has_include(<valgrind/valgrind.h>)
#    include <valgrind/valgrind.h>
#  endif
#endif

static void *ret_arg(void *arg) { return arg; }

TEST_IMPL(thread_create_join) {
  ursa_thread_t t[100];
  int i;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 100; i++) ASSERT_OK(ursa_create(&t[i], NULL, ret_arg, (void *)(intptr_t)(i + 1)));
  for (i = 0; i < 100; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    ASSERT_EQ((intptr_t)r, i + 1);
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

static int order[16], norder;
static void *record_and_yield(void *arg) {
  int id = (int)(intptr_t)arg;
  order[norder++] = id;
  ursa_yield();
  order[norder++] = id;
  return NULL;
}

TEST_IMPL(thread_fifo_yield) {
  ursa_thread_t t[3];
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_create(&t[i], NULL, record_and_yield, (void *)(intptr_t)i));
  ASSERT_EQ(norder, 0);                     /* create does not switch */
  ASSERT_OK(ursa_yield());                  /* main goes behind 0, 1, 2 */
  ASSERT_EQ(norder, 3);
  ASSERT_EQ(order[0], 0); ASSERT_EQ(order[1], 1); ASSERT_EQ(order[2], 2);
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(norder, 6);
  ASSERT_EQ(order[3], 0); ASSERT_EQ(order[4], 1); ASSERT_EQ(order[5], 2);
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_thread_t ring[3];
static int visits[3], ring_log[32], nlog;
static void *named(void *arg) {
  int id = (int)(intptr_t)arg;
  while (nlog < 30) {
    ring_log[nlog++] = id;
    visits[id]++;
    ursa_yield_to(ring[(id + 1) % 3]);
  }
  return NULL;
}

TEST_IMPL(thread_yield_to) {
  int i;
  ASSERT_OK(ursa_init(NULL));
  /* created in the order 2, 1, 0 so that plain FIFO would visit 2 first */
  for (i = 2; i >= 0; i--) ASSERT_OK(ursa_create(&ring[i], NULL, named, (void *)(intptr_t)i));
  ASSERT_OK(ursa_yield_to(ring[0]));
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_join(ring[i], NULL));
  for (i = 0; i < 30; i++) ASSERT_EQ(ring_log[i], i % 3);   /* 0,1,2,0,1,2...: named order */
  ASSERT_OK(ursa_yield_to(ursa_self()));                    /* to oneself: returns at once */
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *blocked_target(void *arg) {
  ursa_sem_wait(arg);
  return NULL;
}

TEST_IMPL(thread_yield_to_blocked_is_plain_yield) {
  ursa_sem_t s;
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  ASSERT_OK(ursa_create(&t, NULL, blocked_target, &s));
  ASSERT_OK(ursa_yield());                  /* t blocks on s */
  ASSERT_OK(ursa_yield_to(t));              /* not ready: a plain yield, returns */
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *errno_worker(void *arg) {
  int i, mine = (int)(intptr_t)arg;
  errno = mine;
  for (i = 0; i < 1000; i++) {
    ursa_yield();
    if (errno != mine) return (void *)1;
    errno = mine;
  }
  return NULL;
}

TEST_IMPL(thread_errno_per_thread) {
  ursa_thread_t t[4];
  int i;
  void *r;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&t[i], NULL, errno_worker, (void *)(intptr_t)(100 + i)));
  errno = 7;
  for (i = 0; i < 4; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    ASSERT_PTR_EQ(r, NULL);
    ASSERT_EQ(errno, 7);
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *exits_early(void *arg) {
  ursa_exit(arg);
}

static void *detached_worker(void *arg) {
  ++*(int *)arg;
  return NULL;
}

TEST_IMPL(thread_exit_detach_self) {
  ursa_thread_t t;
  ursa_attr_t a;
  void *r;
  int counter = 0, i;
  char name[URSA_NAME_MAX];
  ASSERT_OK(ursa_init(NULL));
  ASSERT_EQ(ursa_thread_id(ursa_self()), 1);
  ASSERT_OK(ursa_thread_getname(ursa_self(), name, sizeof name));
  ASSERT(strcmp(name, "main") == 0);
  ASSERT_OK(ursa_create(&t, NULL, exits_early, (void *)42));
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_EQ((intptr_t)r, 42);

  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setdetached(&a, 1));
  ASSERT_OK(ursa_attr_setname(&a, "worker"));
  for (i = 0; i < 50; i++) ASSERT_OK(ursa_create(NULL, &a, detached_worker, &counter));
  ASSERT_OK(ursa_create(&t, &a, detached_worker, &counter));
  ASSERT_OK(ursa_thread_getname(t, name, sizeof name));
  ASSERT(strcmp(name, "worker") == 0);
  ASSERT_OK(ursa_attr_destroy(&a));
  while (counter < 51) ursa_yield();
  ursa_yield();                              /* the last one is released after its switch */
  ASSERT_ERR(ursa_join(t, NULL), -ESRCH);     /* finished and released */

  ASSERT_OK(ursa_create(&t, NULL, detached_worker, &counter));
  ASSERT_OK(ursa_detach(t));
  ASSERT_OK(ursa_yield());
  ASSERT_EQ(counter, 52);
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *sleeper(void *arg) {
  ursa_sleep_ns((uint64_t)(uintptr_t)arg);
  return NULL;
}

TEST_IMPL(thread_sleep) {
  ursa_thread_t t[3];
  uint64_t t0 = test_now_ns();
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_create(&t[i], NULL, sleeper, (void *)(uintptr_t)(20000000u * (3 - i))));
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_GE(test_now_ns() - t0, 60000000u);  /* the longest sleep, not the sum */
  ASSERT_OK(ursa_sleep_ns(1000000));
  ASSERT_OK(ursa_sleep_ns(0));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(thread_stats) {
  ursa_stats_t s;
  ursa_thread_t t;
  ursa_sem_t sem;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&sem, 1));
  ASSERT_OK(ursa_create(&t, NULL, blocked_target, &sem));
  ASSERT_OK(ursa_sem_wait(&sem));            /* takes the unit: no block */
  ASSERT_OK(ursa_yield());                   /* t blocks */
  ASSERT_OK(ursa_sem_post(&sem));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_stats(&s));
  ASSERT_EQ(s.created, 1);
  ASSERT_EQ(s.yields, 1);
  ASSERT_EQ(s.p_ops, 2);
  ASSERT_EQ(s.p_blocking, 1);
  ASSERT_EQ(s.switches, 4);                  /* main->t, t->main, main->t, t->main */
  ASSERT_EQ(ursa_vp_count(), 1);
  ASSERT_ERR(ursa_stats_vp(1, &s), -EINVAL);
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(thread_init_fini_again) {
  int i;
  ursa_thread_t t;
  for (i = 0; i < 3; i++) {
    ASSERT_OK(ursa_init(NULL));
    ASSERT_ERR(ursa_init(NULL), -EBUSY);
    ASSERT_OK(ursa_create(&t, NULL, ret_arg, NULL));
    ASSERT_ERR(ursa_fini(), -EBUSY);        /* t not joined yet */
    ASSERT_OK(ursa_join(t, NULL));
    ASSERT_OK(ursa_fini());
  }
  ASSERT_ERR(ursa_yield(), -EPERM);          /* not initialized */
  ASSERT_ERR(ursa_fini(), -EPERM);
  return 0;
}

/* Whether ursa_dump prints frames here: libunwind's header at build time on x86-64 (or with the
 * ucontext switch), and not under Valgrind (src/core/backtrace.c says why). */
static int expect_backtraces(void) {
#if defined(__has_include)
#  if __has_include(<libunwind.h>) && (defined(__x86_64__) || defined(URSA_CONTEXT_UCONTEXT))
#    if __has_include(<valgrind/valgrind.h>)
  if (RUNNING_ON_VALGRIND) return 0;
#    endif
  return 1;
#  endif
#endif
  return 0;
}

static void *dump_sleeper(void *arg) { (void)arg; ursa_sleep_ns(1000000000); return NULL; }
static void *dump_sem_waiter(void *arg) { ursa_sem_wait(arg); return NULL; }

TEST_IMPL(thread_dump) {
  ursa_thread_t t[3];
  ursa_attr_t a;
  ursa_sem_t s;
  static char buf[65536];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  ASSERT(f != NULL);
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setname(&a, "napper"));
  ASSERT_OK(ursa_create(&t[0], &a, dump_sleeper, NULL));
  ASSERT_OK(ursa_attr_setname(&a, "waiter"));
  ASSERT_OK(ursa_create(&t[1], &a, dump_sem_waiter, &s));
  ASSERT_OK(ursa_attr_setname(&a, "idle"));
  ASSERT_OK(ursa_create(&t[2], &a, dump_sleeper, NULL));
  ASSERT_OK(ursa_yield());                  /* all three block */
  ASSERT_OK(ursa_dump(f));
  fclose(f);
  ASSERT_STR_CONTAINS(buf, "ursa: 4 threads; dumped by thread 1 on VP 0 (1 VPs)");
  ASSERT_STR_CONTAINS(buf, "thread 1 (main): running");
  ASSERT_STR_CONTAINS(buf, "thread 2 (napper): ursa_sleep_ns, until ");
  ASSERT_STR_CONTAINS(buf, " s from now");
  ASSERT_STR_CONTAINS(buf, "thread 3 (waiter): ursa_sem_wait on semaphore 0x");
  if (expect_backtraces()) {   /* src/core/backtrace.c: the parked threads' functions, the caller's */
    ASSERT_STR_CONTAINS(buf, " dump_sem_waiter+0x");
    ASSERT_STR_CONTAINS(buf, " dump_sleeper+0x");
    ASSERT_STR_CONTAINS(buf, " ursa_dump+0x");
    ASSERT(strstr(buf, "backtrace unavailable") == NULL);
  }
  ASSERT_ERR(ursa_dump(NULL), -EINVAL);
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_join(t[1], NULL));
  exit(0);                                  /* the sleepers need not be waited for */
}

/* URSA_DUMP_SIGNAL (src/core/dumpsig.c): stderr goes to a file while the signal is sent. */
static void *dump_sig_waiter(void *arg) { ursa_sem_wait(arg); return NULL; }

static void *send_usr2_later(void *arg) {
  (void)arg;
  usleep(50000);
  kill(getpid(), SIGUSR2);
  return NULL;
}

static size_t read_all(int fd, char *buf, size_t cap) {
  ssize_t n = pread(fd, buf, cap - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  return n > 0 ? (size_t)n : 0;
}

TEST_IMPL(thread_dump_signal) {
  static char buf[65536];
  ursa_sem_t s;
  ursa_thread_t w;
  ursa_attr_t a;
  FILE *f = tmpfile();
  int saved, i;
  size_t n = 0, last = 0;
#if defined(__SANITIZE_THREAD__)
  /* The dump thread reads the thread table while the VPs run (a documented snapshot, like
   * ursa_dump's with several VPs): ThreadSanitizer rightly calls those reads races. */
  RETURN_SKIP("the signal dump reads the thread table racily, by design; not under TSan");
#endif
  ASSERT(f != NULL);
  setenv("URSA_DUMP_SIGNAL", "SIGUSR2", 1);
  fflush(stderr);
  saved = dup(2);
  ASSERT(saved >= 0);
  ASSERT_EQ(dup2(fileno(f), 2), 2);
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setname(&a, "sigwaiter"));
  ASSERT_OK(ursa_create(&w, &a, dump_sig_waiter, &s));
  ASSERT_OK(ursa_sleep_ns(20000000));        /* the waiter blocks (on whichever VP) */
  {                                          /* a kernel thread signals while main sleeps below */
    pthread_t k;
    ASSERT_EQ(pthread_create(&k, NULL, send_usr2_later, NULL), 0);
    ASSERT_OK(ursa_sleep_ns(300000000));
    ASSERT_EQ(pthread_join(k, NULL), 0);
  }
  for (i = 0; i < 500; i++) {                /* until the listing is there and has stopped growing */
    ASSERT_OK(ursa_sleep_ns(10000000));
    n = read_all(fileno(f), buf, sizeof buf);
    if (n > 0 && n == last && strstr(buf, "sigwaiter") != NULL) break;
    last = n;
  }
  ASSERT_OK(ursa_sem_post(&s));
  ASSERT_OK(ursa_join(w, NULL));
  ASSERT_OK(ursa_fini());                    /* stops the dump thread, restores the handler */
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fprintf(stderr, "%s", buf);                /* what the dump printed, for the test log */
  ASSERT_STR_CONTAINS(buf, "dumped on signal (URSA_DUMP_SIGNAL)");
  ASSERT_STR_CONTAINS(buf, "thread 1 (main): ursa_sleep_ns");
  ASSERT_STR_CONTAINS(buf, "(sigwaiter): ursa_sem_wait on semaphore 0x");
  if (expect_backtraces()) {
    ASSERT_STR_CONTAINS(buf, " dump_sig_waiter+0x");
    /* main: from its saved context.  (With one VP the VP sleeps in the kernel on main's own
     * stack, as main is the thread that waits: main has no saved context to read then.) */
    if (strstr(buf, "on 1 VPs;") == NULL) ASSERT_STR_CONTAINS(buf, " test_thread_dump_signal+0x");
  }
  fclose(f);
  unsetenv("URSA_DUMP_SIGNAL");
  return 0;
}

TEST_IMPL(thread_dump_signal_bad_value) {
  /* a value that is no signal, or a signal ursa needs: a warning, and ursa_init goes on */
  static char buf[4096];
  static const char *bad[] = { "SEGV", "bogus", "RTMIN+4", "0", "KILL" };
  FILE *f = tmpfile();
  int saved;
  size_t i;
  ASSERT(f != NULL);
  fflush(stderr);
  saved = dup(2);
  ASSERT_EQ(dup2(fileno(f), 2), 2);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("URSA_DUMP_SIGNAL", bad[i], 1);
    ASSERT_OK(ursa_init(NULL));
    ASSERT_OK(ursa_fini());
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  read_all(fileno(f), buf, sizeof buf);
  fprintf(stderr, "%s", buf);
  ASSERT_STR_CONTAINS(buf, "ursa: ignoring URSA_DUMP_SIGNAL=SEGV: a signal that cannot be caught or that ursa uses itself");
  ASSERT_STR_CONTAINS(buf, "ursa: ignoring URSA_DUMP_SIGNAL=bogus: not a signal");
  ASSERT_STR_CONTAINS(buf, "ursa: ignoring URSA_DUMP_SIGNAL=RTMIN+4: a signal");
  ASSERT_STR_CONTAINS(buf, "ursa: ignoring URSA_DUMP_SIGNAL=0: not a signal");
  ASSERT_STR_CONTAINS(buf, "ursa: ignoring URSA_DUMP_SIGNAL=KILL: a signal");
  fclose(f);
  unsetenv("URSA_DUMP_SIGNAL");
  return 0;
}
