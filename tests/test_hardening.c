/*
 * test_hardening.c - issue #22's hardening items: a dump that reads descriptors while another VP
 * unmaps their stacks (item 2), the region registry in ursa-owned memory (item 3), fork from an
 * ursa thread (item 4), and the contract of a few error paths (item 9).
 */
#include "task.h"
#include "../src/sched/waiter.h"   /* ursa__forget_others */

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void init_vps(unsigned vps) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = vps;
  ASSERT_OK(ursa_init(&c));
}

/* ursa_fini, once the detached threads still finishing on another VP have been released: -EBUSY
 * until then (a bounded number of yields, not a time). */
static void fini_when_detached_done(void) {
  long tries = 0;
  int r;
  while ((r = ursa_fini()) == -EBUSY && tries++ < 1000000) ursa_yield();
  ASSERT_OK(r);
}

/* ---- item 2: a dump while another VP releases threads ---------------------------------------- */

/* Threads with a stack of a size other than the default: never pooled, so releasing one unmaps
 * its stack (and the descriptor at its top) at once. */
#define BIG_STACK (1024 * 1024)
#define CHURN_BATCH 8

static atomic_int churn_stop;

static void *churn_child(void *arg) {
  int i, n = (int)(intptr_t)arg;
  for (i = 0; i < n; i++) ursa_yield();      /* READY a while: the dump reads it, backtrace too */
  return NULL;
}

/* Creates batches of big-stack threads and joins (or detaches) them until told to stop, or for
 * `rounds` batches. */
static void *churn(void *arg) {
  int rounds = (int)(intptr_t)arg, r, i;
  ursa_attr_t a;
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setstacksize(&a, BIG_STACK));
  for (r = 0; r < rounds && !atomic_load(&churn_stop); r++) {
    ursa_thread_t t[CHURN_BATCH];
    for (i = 0; i < CHURN_BATCH; i++) ASSERT_OK(ursa_create(&t[i], &a, churn_child, (void *)(intptr_t)(i % 3)));
    for (i = 0; i < CHURN_BATCH; i++) {
      if ((r + i) % 4 == 0) ASSERT_OK(ursa_detach(t[i]));
      else ASSERT_OK(ursa_join(t[i], NULL));
    }
  }
  for (i = 0; i < 4; i++) ursa_yield();      /* the detached ones finish and are reaped */
  ASSERT_OK(ursa_attr_destroy(&a));
  return (void *)(intptr_t)r;
}

TEST_IMPL(hardening_dump_while_vp_releases) {
  ursa_attr_t a;
  ursa_thread_t c;
  FILE *devnull = fopen("/dev/null", "w");
  int i;
  void *rounds;
#if defined(__SANITIZE_THREAD__)
  RETURN_SKIP("ursa_dump reads other VPs' threads racily, by design (a snapshot); not under TSan");
#endif
  ASSERT(devnull != NULL);
  init_vps(2);
  atomic_store(&churn_stop, 0);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setvp(&a, 1));
  ASSERT_OK(ursa_attr_setbound(&a, 1));      /* the churn on VP 1, the dumps on VP 0 (main) */
  ASSERT_OK(ursa_create(&c, &a, churn, (void *)(intptr_t)100000));
  for (i = 0; i < 300; i++) ASSERT_OK(ursa_dump(devnull));
  atomic_store(&churn_stop, 1);
  ASSERT_OK(ursa_join(c, &rounds));
  printf("%d dumps while VP 1 ran %d batches of %d threads\n", i, (int)(intptr_t)rounds, CHURN_BATCH);
  ASSERT_OK(ursa_attr_destroy(&a));
  fini_when_detached_done();
  fclose(devnull);
  return 0;
}

TEST_IMPL(hardening_dump_signal_while_vp_releases) {
  /* The dump thread of URSA_DUMP_SIGNAL reads while VP 0 (main) creates and releases threads. */
  int saved, devnull, i;
#if defined(__SANITIZE_THREAD__)
  RETURN_SKIP("the signal dump reads the thread table racily, by design; not under TSan");
#endif
  setenv("URSA_DUMP_SIGNAL", "SIGUSR2", 1);
  fflush(stderr);
  saved = dup(2);
  devnull = open("/dev/null", O_WRONLY);
  ASSERT(saved >= 0 && devnull >= 0);
  ASSERT_EQ(dup2(devnull, 2), 2);            /* the dumps go to stderr */
  init_vps(1);
  atomic_store(&churn_stop, 0);
  for (i = 0; i < 2000; i++) {
    ASSERT_EQ(kill(getpid(), SIGUSR2), 0);   /* several posts may make one dump: fine */
    churn((void *)(intptr_t)4);
  }
  ASSERT_OK(ursa_fini());                    /* waits for the dump in progress */
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(devnull);
  unsetenv("URSA_DUMP_SIGNAL");
  return 0;
}

/* ---- item 3: the region registry ------------------------------------------------------------- */

static void *report_vp(void *arg) { (void)arg; return (void *)(intptr_t)ursa_vp_self(); }

TEST_IMPL(hardening_region_init_twice_refused) {
  /* contract: region-init-live */
  ursa_region_t r;
  ursa_attr_t a;
  ursa_thread_t t;
  void *where;
  init_vps(2);
  ASSERT_OK(ursa_region_init(&r, 0));
  ASSERT_ERR(ursa_region_init(&r, 1), -EBUSY);   /* a live region: refused, unchanged */
  ASSERT_EQ(ursa_region_vp(&r), 0);
  ASSERT_OK(ursa_region_move(&r, 1));            /* (a registry linked to itself spun here) */
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r));
  ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
  ASSERT_OK(ursa_join(t, &where));
  ASSERT_EQ((intptr_t)where, 1);
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_ERR(ursa_region_destroy(&r), -EINVAL);
  ASSERT_OK(ursa_region_init(&r, 1));            /* destroyed: may be initialized again */
  ASSERT_EQ(ursa_region_vp(&r), 1);
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(hardening_region_freed_storage_isolated) {
  /* A region whose storage is reused without ursa_region_destroy (it never had threads) must not
   * take the other regions down. */
  ursa_region_t *lost = malloc(sizeof *lost), r2;
  ursa_attr_t a;
  ursa_thread_t t;
  void *where;
  int i;
  ASSERT(lost != NULL);
  init_vps(2);
  ASSERT_OK(ursa_region_init(lost, 0));
  ASSERT_OK(ursa_region_init(&r2, 0));
  memset(lost, 0xa5, sizeof *lost);              /* the storage, reused by other code */
  ASSERT_ERR(ursa_region_destroy(lost), -EINVAL);
  ASSERT_ERR(ursa_region_move(lost, 1), -EINVAL);
  free(lost);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r2));
  for (i = 0; i < 4; i++) {
    int to = (i + 1) % 2;
    ASSERT_OK(ursa_region_move(&r2, to));
    ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
    ASSERT_OK(ursa_join(t, &where));
    ASSERT_EQ((intptr_t)where, to);
  }
  ASSERT_OK(ursa_region_destroy(&r2));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(hardening_create_in_destroyed_region) {
  /* contract: create-destroyed-region */
  ursa_region_t r;
  ursa_attr_t a;
  ursa_thread_t t;
  init_vps(1);
  ASSERT_OK(ursa_region_init(&r, 0));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r));
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_ERR(ursa_create(&t, &a, report_vp, NULL), -EINVAL);
  ASSERT_OK(ursa_region_init(&r, 0));            /* the same storage, a new region: still not */
  ASSERT_ERR(ursa_create(&t, &a, report_vp, NULL), -EINVAL);
  ASSERT_OK(ursa_attr_setregion(&a, &r));        /* named again: fine */
  ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- item 4: fork ------------------------------------------------------------------------------- */

/* Waits for the child pid at most `seconds` (scaled for slow builds): its status, or a failure
 * naming `what` when it has not ended by then (it is killed). */
static int wait_child(pid_t pid, unsigned seconds, const char *what) {
  int status = 0;
  uint64_t end = test_now_ns() + (uint64_t)seconds * TEST_TIME_FACTOR * 1000000000ull;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return status;
    ASSERT(w == 0);
    if (test_now_ns() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("%s: the child did not end within %u s", what, seconds * TEST_TIME_FACTOR);
    }
    usleep(1000);
  }
}

static ursa_mutex_t fork_m;
static ursa_sem_t fork_held, fork_release;

static void *hold_mutex(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_mutex_lock(&fork_m));
  ASSERT_OK(ursa_sem_post(&fork_held));
  ASSERT_OK(ursa_sem_wait(&fork_release));
  ASSERT_OK(ursa_mutex_unlock(&fork_m));
  return NULL;
}

static void *nothing(void *arg) { return arg; }

/* The child's checks: exits 0 when each call gave `want` at once (alarm: a call that hangs). */
static void child_refused(void) {
  ursa_sem_t s;
  ursa_thread_t t;
  alarm(10 * TEST_TIME_FACTOR);
  if (ursa_mutex_lock(&fork_m) != -ECHILD) _exit(10);
  if (ursa_sem_post(&fork_held) != -ECHILD) _exit(11);
  if (ursa_sem_init(&s, 0) != -ECHILD) _exit(12);
  if (ursa_create(&t, NULL, nothing, NULL) != -ECHILD) _exit(13);
  if (ursa_yield() != -ECHILD) _exit(14);
  if (ursa_self() != URSA_THREAD_NULL) _exit(15);
  if (ursa_init(NULL) != -ECHILD) _exit(16);
  if (ursa_fini() != -ECHILD) _exit(17);
  _exit(0);
}

TEST_IMPL(hardening_fork_several_vps_child_refused) {
  /* contract: fork-child */
  ursa_attr_t a;
  ursa_thread_t h;
  pid_t pid;
  int status;
  init_vps(2);
  ASSERT_OK(ursa_mutex_init(&fork_m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_sem_init(&fork_held, 0));
  ASSERT_OK(ursa_sem_init(&fork_release, 0));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setvp(&a, 1));
  ASSERT_OK(ursa_attr_setbound(&a, 1));
  ASSERT_OK(ursa_create(&h, &a, hold_mutex, NULL));   /* VP 1 holds the mutex across the fork */
  ASSERT_OK(ursa_sem_wait(&fork_held));
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) child_refused();
  status = wait_child(pid, 10, "fork at 2 VPs");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL("the child of a fork at 2 VPs: status 0x%x (exit code 10+k: the k-th call did not return -ECHILD)", status);
  ASSERT_OK(ursa_sem_post(&fork_release));            /* the parent is unchanged */
  ASSERT_OK(ursa_join(h, NULL));
  ASSERT_OK(ursa_mutex_lock(&fork_m));
  ASSERT_OK(ursa_mutex_unlock(&fork_m));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *fork_from_pthread(void *arg) {
  pid_t pid;
  (void)arg;
  pid = fork();
  if (pid == 0) {
    alarm(10 * TEST_TIME_FACTOR);
    _exit(ursa_mutex_lock(&fork_m) == -ECHILD && ursa_init(NULL) == -ECHILD ? 0 : 20);
  }
  return (void *)(intptr_t)pid;
}

static void child_continues(void) {
  ursa_thread_t t;
  void *r;
  alarm(10 * TEST_TIME_FACTOR);
  if (ursa_create(&t, NULL, nothing, (void *)7) != 0) _exit(30);
  if (ursa_join(t, &r) != 0 || r != (void *)7) _exit(31);
  if (ursa_mutex_lock(&fork_m) != 0 || ursa_mutex_unlock(&fork_m) != 0) _exit(32);
  if (ursa_sem_post(&fork_held) != 0 || ursa_sem_wait(&fork_held) != 0) _exit(33);
  if (ursa_fini() != 0) _exit(34);                    /* no dump thread to stop in the child */
  _exit(0);
}

TEST_IMPL(hardening_fork_one_vp_child_continues) {
  /* contract: fork-child */
  pid_t pid;
  pthread_t k;
  void *kpid;
  int status, saved, devnull;
  setenv("URSA_DUMP_SIGNAL", "SIGUSR2", 1);           /* a dump thread, which the child has not */
  fflush(stderr);
  saved = dup(2);
  devnull = open("/dev/null", O_WRONLY);
  ASSERT(saved >= 0 && devnull >= 0);
  init_vps(1);
  ASSERT_OK(ursa_mutex_init(&fork_m, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_sem_init(&fork_held, 0));
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) child_continues();
  status = wait_child(pid, 10, "fork at 1 VP");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL("the child of a fork at 1 VP: status 0x%x (exit code 30+k: step k failed)", status);
  /* forked by a kernel thread that is not the VP: the child has no VP, so the runtime is gone */
  ASSERT_EQ(pthread_create(&k, NULL, fork_from_pthread, NULL), 0);
  ASSERT_EQ(pthread_join(k, &kpid), 0);
  ASSERT((pid_t)(intptr_t)kpid > 0);
  status = wait_child((pid_t)(intptr_t)kpid, 10, "fork from a plain pthread");
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_OK(ursa_fini());
  fflush(stderr);
  close(saved);
  close(devnull);
  unsetenv("URSA_DUMP_SIGNAL");
  return 0;
}

/* ursa__forget_others (src/sched/forget.c), the POSIX layer's fork: in the child of a fork at 1 VP
 * every thread but the caller never runs again, whatever would have resumed it (the run queue, a
 * sleep's timer, a timed wait's post), and the process ends with status 0 when the caller ends. */
static volatile int fg_ticks, fg_woken, fg_stop;
static ursa_sem_t fg_sem;
static void *fg_sleeper(void *a) { while (!fg_stop) { fg_ticks++; ursa_sleep_ns(200000); } return a; }
static void *fg_yielder(void *a) { while (!fg_stop) { fg_ticks++; ursa_yield(); } return a; }
static void *fg_timed(void *a) {
  struct timespec d;
  clock_gettime(CLOCK_MONOTONIC, &d);
  d.tv_sec += 600;
  if (ursa_sem_timedwait(&fg_sem, CLOCK_MONOTONIC, &d) == 0) fg_woken++;
  return a;
}
static void *fg_from_pthread(void *a) { (void)a; return (void *)(intptr_t)ursa__forget_others(); }

static void fg_child(void) {
  int t0;
  alarm(10 * TEST_TIME_FACTOR);
  if (ursa__forget_others() != 3) _exit(40);         /* the sleeper, the yielder, the waiter */
  t0 = fg_ticks;
  if (ursa_sem_post(&fg_sem) != 0 || ursa_sem_trywait(&fg_sem) != 0) _exit(41);  /* nobody took it */
  for (int i = 0; i < 20; i++) { ursa_yield(); ursa_sleep_ns(100000); }
  if (fg_ticks != t0) _exit(42);
  if (fg_woken != 0) _exit(43);
  if (ursa__forget_others() != 0) _exit(44);          /* nobody left to forget */
  ursa_exit(NULL);                                    /* the last thread: the process ends, 0 */
}

TEST_IMPL(hardening_fork_forget_others) {
  ursa_thread_t t[3];
  pthread_t k;
  void *r;
  pid_t pid;
  int status;
  ASSERT_EQ(ursa__forget_others(), -EPERM);          /* before ursa_init: no ursa thread */
  init_vps(1);
  ASSERT_OK(ursa_sem_init(&fg_sem, 0));
  ASSERT_OK(ursa_create(&t[0], NULL, fg_sleeper, NULL));
  ASSERT_OK(ursa_create(&t[1], NULL, fg_yielder, NULL));
  ASSERT_OK(ursa_create(&t[2], NULL, fg_timed, NULL));
  for (int i = 0; i < 5; i++) ursa_yield();
  ASSERT(fg_ticks > 0);
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) fg_child();
  status = wait_child(pid, 10, "fork at 1 VP, ursa__forget_others");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL("the child that forgot the others: status 0x%x (exit code 40+k: step k failed)", status);
  ASSERT_EQ(pthread_create(&k, NULL, fg_from_pthread, NULL), 0);   /* a kernel thread: no */
  ASSERT_EQ(pthread_join(k, &r), 0);
  ASSERT_EQ((intptr_t)r, -EPERM);
  fg_stop = 1;                                        /* the parent's threads are all there */
  ASSERT_OK(ursa_sem_post(&fg_sem));
  for (int i = 0; i < 3; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_EQ(fg_woken, 1);
  ASSERT_OK(ursa_fini());
  init_vps(2);                                        /* several VPs: refused */
  ASSERT_EQ(ursa__forget_others(), -EINVAL);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- item 9: contract drift ------------------------------------------------------------------ */

static void *call_require_cooperative(void *arg) {
  (void)arg;
  return (void *)(intptr_t)ursa_require_cooperative();
}

TEST_IMPL(hardening_require_cooperative_from_pthread) {
  /* contract: outside-ursa */
  pthread_t k;
  void *r;
  init_vps(1);
  ASSERT_OK(ursa_require_cooperative());
  ASSERT_EQ(pthread_create(&k, NULL, call_require_cooperative, NULL), 0);
  ASSERT_EQ(pthread_join(k, &r), 0);
  ASSERT_EQ((intptr_t)r, -EPERM);                /* not an ursa thread */
  ASSERT_OK(ursa_fini());
  return 0;
}

/* The address space this process has mapped, in bytes (VmSize). */
static rlim_t vm_size(void) {
  char line[256];
  unsigned long long kb = 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "VmSize: %llu kB", &kb) == 1) break;
  fclose(f);
  return (rlim_t)kb * 1024;
}

TEST_IMPL(hardening_init_under_rlimit_as) {
  /* contract: init-no-memory */
  /* ursa_init under RLIMIT_AS (ulimit -v) a little above what the process has mapped, at several
   * margins and VP counts: it succeeds, or fails with the documented -ENOMEM. */
  static const unsigned margins_mib[] = { 0, 1, 2, 4, 8, 16, 32, 64, 128, 200, 256, 260, 270, 300, 400 };
  size_t i;
  unsigned vps;
  int seen_enomem = 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  RETURN_SKIP("sanitizer runtimes reserve terabytes of address space: RLIMIT_AS cannot be set low");
#endif
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("Valgrind does not apply RLIMIT_AS to the program's own mappings");
  for (vps = 1; vps <= 2; vps++) {
    for (i = 0; i < sizeof margins_mib / sizeof margins_mib[0]; i++) {
      int status;
      pid_t pid;
      fflush(NULL);
      pid = fork();
      ASSERT(pid >= 0);
      if (pid == 0) {
        ursa_config_t c;
        struct rlimit rl;
        int r;
        memset(&c, 0, sizeof c);
        c.vps = vps;
        rl.rlim_cur = rl.rlim_max = vm_size() + (rlim_t)margins_mib[i] * 1024 * 1024;
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(99);
        r = ursa_init(&c);
        if (r == 0) _exit(ursa_fini() == 0 ? 0 : 98);
        _exit(r == -ENOMEM ? 1 : 100 + (-r & 0x3f));
      }
      status = wait_child(pid, 20, "ursa_init under RLIMIT_AS");
      ASSERT(WIFEXITED(status));
      if (WEXITSTATUS(status) >= 98)
        FAIL("ursa_init with %u VPs under RLIMIT_AS = VmSize + %u MiB: exit %d (100+k: returned -k, "
             "not 0 or -ENOMEM)", vps, margins_mib[i], WEXITSTATUS(status));
      seen_enomem |= WEXITSTATUS(status) == 1;
    }
  }
  ASSERT(seen_enomem);                          /* the limit did bite at some margin */
  return 0;
}

static void huge_stack_scenario(void) {
  ursa_attr_t a;
  ursa_thread_t t;
  int r;
  ursa_init(NULL);
  ursa_attr_init(&a);
  ursa_attr_setstacksize(&a, (size_t)1 << 50);   /* 1 PiB: more than the address space */
  r = ursa_create(&t, &a, nothing, NULL);
  printf("create: %d\n", r);
  exit(r == -EAGAIN ? 0 : 1);
}

TEST_IMPL(hardening_stack_too_large_message) {
  /* contract: create-stack-unmappable */
  char out[4096];
  int status;
#if defined(__SANITIZE_THREAD__)
  RETURN_SKIP("TSan's allocator reports the failed mapping itself");
#endif
  run_child(huge_stack_scenario, &status, out, sizeof out);
  fprintf(stderr, "%s", out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_STR_CONTAINS(out, "ursa: cannot map a stack of 1125899906842624 bytes");
  if (strstr(out, "max_map_count") != NULL)
    FAIL("the size is the cause, not vm.max_map_count; the message was:\n%s", out);
  return 0;
}

static void *exit_from_pthread(void *arg) {
  (void)arg;
  ursa_exit(NULL);
}

static void exit_outside_scenario(void) {
  pthread_t k;
  ursa_init(NULL);
  pthread_create(&k, NULL, exit_from_pthread, NULL);
  pthread_join(k, NULL);
  exit(0);
}

TEST_IMPL(hardening_exit_outside_ursa_thread) {
  /* contract: exit-outside-ursa */
  char out[4096];
  int status;
  run_child(exit_outside_scenario, &status, out, sizeof out);
  fprintf(stderr, "%s", out);
  ASSERT(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGABRT);
  ASSERT_STR_CONTAINS(out, "ursa: ursa_exit called from a thread that is not an ursa thread");
  if (strstr(out, "internal error") != NULL) FAIL("a misuse reported as an ursa bug:\n%s", out);
  return 0;
}

/* ---- item 10: large frames and the guard page ------------------------------------------------- */

/* A 128 KiB frame on a 64 KiB stack: without -fstack-clash-protection its first store lands below
 * the 4 KiB guard page (in another mapping, or none); with it, the frame's pages are probed from
 * the top and the first probe below the stack faults in the guard: the overflow report. */
static __attribute__((noinline)) int big_frame(int i) {
  volatile char big[128 * 1024];
  big[i] = (char)i;
  return big[i];
}
static void *big_frame_worker(void *arg) { return (void *)(intptr_t)big_frame((int)(intptr_t)arg); }

static void big_frame_scenario(void) {
  ursa_attr_t a;
  ursa_thread_t t;
  ursa_init(NULL);
  ursa_attr_init(&a);
  ursa_attr_setname(&a, "bigframe");
  ursa_create(&t, &a, big_frame_worker, NULL);
  ursa_join(t, NULL);
  printf("not reached\n");
  exit(0);
}

TEST_IMPL(hardening_large_frame_hits_guard) {
  char out[4096];
  int status;
#if !URSA_TEST_STACK_CLASH
  RETURN_SKIP("ursa offers no -fstack-clash-protection here (URSA_STACK_CLASH_PROTECTION=OFF, or the compiler lacks it)");
#endif
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("Valgrind reports the stores below the stack itself");
  run_child(big_frame_scenario, &status, out, sizeof out);
  fprintf(stderr, "%s", out);
#if defined(__SANITIZE_ADDRESS__)
  if (strstr(out, "ursa: stack overflow") == NULL) {   /* ASan's handler may report it first */
    ASSERT_STR_CONTAINS(out, "AddressSanitizer");
    return 0;
  }
#endif
  ASSERT_STR_CONTAINS(out, "ursa: stack overflow in thread 2 (bigframe)");
  ASSERT(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGABRT);
  return 0;
}
