/* Context switch (registers, FP state, fresh-stack alignment), stacks (overflow report, sizes,
 * pool, VMA limit), deadlock reports and process exit with live threads. */
#include "task.h"

#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- context switch ---------------------------------------------------------------------------- */

#if defined(__x86_64__)
long ursa_test_regs(void (*fn)(void), long seed);
static void yield_void(void) { ursa_yield(); }
static void *regs_worker(void *arg) {
  long bad = 0;
  int i;
  for (i = 0; i < 1000; i++) bad |= ursa_test_regs(yield_void, (long)(intptr_t)arg);
  return (void *)(intptr_t)bad;
}
#endif

TEST_IMPL(context_callee_saved_registers) {
#if defined(__x86_64__)
  ursa_thread_t t[3];
  void *r;
  int i;
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 3; i++) ASSERT_OK(ursa_create(&t[i], NULL, regs_worker, (void *)(intptr_t)(0x1000 * (i + 1))));
  for (i = 0; i < 3; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    ASSERT_EQ((intptr_t)r, 0);              /* bit mask of clobbered registers */
  }
  ASSERT_OK(ursa_fini());
  return 0;
#else
  RETURN_SKIP("x86-64 only (AArch64: tests/arch/arm64_regs.c)");
#endif
}

static const int rounding[2] = { FE_UPWARD, FE_DOWNWARD };
static volatile double one = 1.0, three = 3.0;
/* Out of line and reading volatiles, so that the division happens under the current mode. */
__attribute__((noinline)) static double third(void) { return one / three; }
static void *fp_worker(void *arg) {
  int me = (int)(intptr_t)arg, i, bad = 0;
  double up, down;
  fesetround(rounding[me]);
  for (i = 0; i < 200; i++) {
    ursa_yield();
    if (fegetround() != rounding[me]) { bad++; if (getenv("URSA_TEST_DEBUG")) fprintf(stderr, "me %d round %x\n", me, fegetround()); }
    /* the rounding really applies to SSE arithmetic after the switch */
    down = third();
    fesetround(FE_UPWARD); up = third(); fesetround(rounding[me]);
    if (me == 1 && !(down < up)) bad++;
#if defined(__x86_64__)
    {
      unsigned short cw;
      __asm__ volatile("fnstcw %0" : "=m"(cw));
      if (((cw >> 10) & 3) != (me == 0 ? 2u : 1u)) { bad++; if (getenv("URSA_TEST_DEBUG")) fprintf(stderr, "me %d cw %x\n", me, cw); }  /* x87 RC: 2 up, 1 down */
    }
#endif
  }
  return (void *)(intptr_t)bad;
}

TEST_IMPL(context_fp_control_state) {
  ursa_thread_t t[2];
  void *r;
  int i;
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("Valgrind does not emulate FP rounding modes");
  ASSERT_OK(ursa_init(NULL));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_create(&t[i], NULL, fp_worker, (void *)(intptr_t)i));
  fesetround(FE_TOWARDZERO);
  for (i = 0; i < 2; i++) {
    ASSERT_OK(ursa_join(t[i], &r));
    ASSERT_EQ((intptr_t)r, 0);
  }
  ASSERT_EQ(fegetround(), FE_TOWARDZERO);   /* main's own mode survived too */
  fesetround(FE_TONEAREST);
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *printf_worker(void *arg) {
  char *buf = arg;
  _Alignas(32) double v[4] = { 1.5, 2.5, 3.5, 4.5 };
  volatile double s = 0;
  int i;
  snprintf(buf, 64, "%f %.3e %g", 3.14159, 2.5e-10, sqrt(2.0));
  for (i = 0; i < 4; i++) s += v[i];
  if ((uintptr_t)v % 32 != 0 || s != 12.0) buf[0] = '!';
  return NULL;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void *avx_worker(void *arg) {
  typedef double v4d __attribute__((vector_size(32)));
  _Alignas(32) v4d a = { 1, 2, 3, 4 }, b = { 10, 20, 30, 40 };
  volatile v4d c;
  ursa_yield();
  c = a * b + a;                            /* 256-bit aligned loads and stores on a fresh stack */
  *(double *)arg = c[0] + c[1] + c[2] + c[3];
  return NULL;
}
#endif

TEST_IMPL(context_fresh_stack_printf_and_simd) {
  char buf[64];
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t, NULL, printf_worker, buf));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT(strcmp(buf, "3.141590 2.500e-10 1.41421") == 0);
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    double sum = 0;
    ASSERT_OK(ursa_create(&t, NULL, avx_worker, &sum));
    ASSERT_OK(ursa_join(t, NULL));
    ASSERT(sum == 310.0);
  }
#endif
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- stacks ------------------------------------------------------------------------------------ */

static int recurse(int depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  return depth > 1000000 ? pad[0] : recurse(depth + 1) + pad[0];
}
static void *overflow_worker(void *arg) { (void)arg; return (void *)(intptr_t)recurse(0); }

static void overflow_scenario(void) {
  ursa_attr_t a;
  ursa_thread_t t;
  ursa_init(NULL);
  ursa_attr_init(&a);
  ursa_attr_setname(&a, "deep");
  ursa_create(&t, &a, overflow_worker, NULL);
  ursa_join(t, NULL);
  printf("not reached\n");
}

TEST_IMPL(stack_overflow_report) {
  char out[4096];
  int status;
  run_child(overflow_scenario, &status, out, sizeof out);
#if defined(__SANITIZE_ADDRESS__)
  /* ASan's own SIGSEGV handler may report the overflow first; either report names the fault. */
  if (strstr(out, "ursa: stack overflow") == NULL) {
    ASSERT_STR_CONTAINS(out, "AddressSanitizer");
    ASSERT(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
    return 0;
  }
#endif
  ASSERT_STR_CONTAINS(out, "ursa: stack overflow in thread 2 (deep): stack [0x");
  ASSERT_STR_CONTAINS(out, ") 65536 bytes, fault at 0x");
  ASSERT(strstr(out, "not reached") == NULL);
  ASSERT(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGABRT);
  return 0;
}

static void null_deref_scenario(void) {
  ursa_init(NULL);
  volatile uintptr_t addr = 16;
  *(volatile int *)addr = 1;                /* an ordinary crash, not an overflow */
}

TEST_IMPL(stack_other_faults_keep_default_action) {
  char out[4096];
  int status;
  run_child(null_deref_scenario, &status, out, sizeof out);
  ASSERT(strstr(out, "stack overflow") == NULL);
  if (TEST_SANITIZED) {                       /* the sanitizer reports the SEGV and exits */
    ASSERT(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
  } else {
    ASSERT(WIFSIGNALED(status));
    ASSERT_EQ(WTERMSIG(status), SIGSEGV);
  }
  return 0;
}

static void *use_stack(void *arg) {
  size_t n = (size_t)(uintptr_t)arg;
  volatile char *p = __builtin_alloca(n);
  size_t i;
  for (i = 0; i < n; i += 4096) p[i] = 1;
  return (void *)(uintptr_t)__builtin_frame_address(0);
}

TEST_IMPL(stack_sizes_and_pool) {
  ursa_attr_t a;
  ursa_thread_t t;
  size_t sz;
  void *r1, *r2, *r3;
  ursa_config_t cfg = { 0 };
  cfg.stack_size = 128 * 1024;
  ASSERT_OK(ursa_init(&cfg));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_EQ(sz, 128 * 1024);
  ASSERT_OK(ursa_create(&t, NULL, use_stack, (void *)(uintptr_t)(100 * 1024)));  /* fits 128 KiB */
  ASSERT_OK(ursa_join(t, &r1));
  ASSERT_OK(ursa_create(&t, NULL, use_stack, (void *)(uintptr_t)1024));
  ASSERT_OK(ursa_join(t, &r2));
  ASSERT_PTR_EQ(r1, r2);                    /* the same pooled stack, the same frame address */
  ASSERT_OK(ursa_attr_setstacksize(&a, 1024 * 1024));
  ASSERT_OK(ursa_create(&t, &a, use_stack, (void *)(uintptr_t)(900 * 1024)));
  ASSERT_OK(ursa_join(t, &r3));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  ASSERT_ERR(ursa_init(&(ursa_config_t){ .stack_size = 1000 }), -EINVAL);
  return 0;
}

static void *block_forever(void *arg) { ursa_sem_wait(arg); return NULL; }

/* A thread that ends with ursa_exit deep in its own calls, on a stack that every thread reuses.
 * Under TSan the stack's fiber serves them all (stack.c), and a finished thread's open frames
 * must not stay on its shadow stack (sched.c, ursa__thread_entry): with them, 2000 threads of
 * 100 frames would overrun its 65536 entries. */
static char *deep_top[2];
static volatile int deep_exits = 1;                /* (a path that returns, for the compiler) */

static __attribute__((noinline)) int exit_deep(int depth, intptr_t result) {
  volatile char frame[32];
  frame[0] = (char)depth;
  if (depth == 0) {
    if (deep_exits) ursa_exit((void *)result);
    return 0;
  }
  return exit_deep(depth - 1, result) + frame[0];     /* not a tail call: the frames stay */
}

static void *exits_deep(void *arg) {
  char here;
  deep_top[1] = &here;
  return (void *)(intptr_t)exit_deep(100, (intptr_t)arg);
}

TEST_IMPL(stack_reuse_after_deep_exit) {
  ursa_config_t cfg = { 0 };
  ursa_thread_t t;
  void *r;
  intptr_t i, n = 20000 / TEST_TIME_FACTOR;
  cfg.vps = 1;                                     /* one pool: the same stack every time */
  ASSERT_OK(ursa_init(&cfg));
  for (i = 0; i < n; i++) {
    ASSERT_OK(ursa_create(&t, NULL, exits_deep, (void *)i));
    ASSERT_OK(ursa_join(t, &r));
    ASSERT_EQ((intptr_t)r, i);
    if (i > 0) ASSERT_PTR_EQ(deep_top[1], deep_top[0]);
    deep_top[0] = deep_top[1];
  }
  ASSERT_OK(ursa_fini());
  return 0;
}

static void vma_limit_scenario(void) {
  ursa_config_t cfg = { 0 };
  ursa_sem_t s;
  ursa_thread_t t;
  int n = 0, r;
  cfg.guard = 1;                            /* mprotect guards: two VMAs per stack */
  ursa_init(&cfg);
  ursa_sem_init(&s, 0);
  while ((r = ursa_create(&t, NULL, block_forever, &s)) == 0) n++;
  printf("created %d, then %d\n", n, r);
  ursa_yield();                              /* every thread runs and blocks: nothing crashed */
  r = ursa_create(&t, NULL, block_forever, &s);
  printf("again %d\n", r);
  exit(n > 1000 && r == -EAGAIN ? 0 : 1);
}

TEST_IMPL(stack_vma_limit_is_an_error) {
  /* contract: create-stack-unmappable */
  char out[8192];
  int status;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  RETURN_SKIP("sanitizer runtimes fail themselves once the VMA limit is reached");
#endif
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("Valgrind runs out of its own memory segments first");
  run_child(vma_limit_scenario, &status, out, sizeof out);
  ASSERT_STR_CONTAINS(out, "vm.max_map_count");
  ASSERT_STR_CONTAINS(out, "then -11");    /* -EAGAIN */
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  return 0;
}

TEST_IMPL(stack_guard_costs_no_vma) {
  /* With MADV_GUARD_INSTALL (Linux 6.13+), more guarded threads than vm.max_map_count / 2 fit. */
  ursa_sem_t s;
  ursa_thread_t t;
  int i, r = 0;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  int maxmap = 65530;
  if (f) { if (fscanf(f, "%d", &maxmap) != 1) maxmap = 65530; fclose(f); }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  RETURN_SKIP("sanitizer runtimes map memory of their own");
#endif
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("tens of thousands of threads take minutes under Valgrind");
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  for (i = 0; i < maxmap / 2 + 5000 && r == 0; i++) r = ursa_create(&t, NULL, block_forever, &s);
  if (r == -EAGAIN)
    SKIP_IF_ABSENT(test_expect_free_guards(), "the kernel has no MADV_GUARD_INSTALL: guards cost a VMA each");
  ASSERT_OK(r);
  exit(0);                                   /* leaving with live threads is allowed */
}

/* ---- deadlock ---------------------------------------------------------------------------------- */

static ursa_mutex_t ma = URSA_MUTEX_INITIALIZER, mb = URSA_MUTEX_INITIALIZER;
static ursa_sem_t dsem;
static void *lock_ab(void *arg) {
  ursa_mutex_t *first = arg, *second = first == &ma ? &mb : &ma;
  ursa_mutex_lock(first);
  ursa_yield();
  ursa_mutex_lock(second);
  return NULL;
}
static void deadlock_abba(void) {
  ursa_thread_t t1, t2;
  ursa_init(NULL);
  ursa_create(&t1, NULL, lock_ab, &ma);
  ursa_create(&t2, NULL, lock_ab, &mb);
  ursa_join(t1, NULL);
}

/* A 3-cycle: a 2-cycle is refused at once with -EDEADLK (see test_badinput). */
static ursa_thread_t jt[3];
static void *join_next(void *arg) { ursa_yield(); ursa_join(jt[((intptr_t)arg + 1) % 3], NULL); return NULL; }
static void deadlock_join_cycle(void) {
  intptr_t i;
  ursa_init(NULL);
  for (i = 0; i < 3; i++) ursa_create(&jt[i], NULL, join_next, (void *)i);
  ursa_sem_init(&dsem, 0);
  ursa_sem_wait(&dsem);
}

static void deadlock_mvar(void) {
  ursa_mvar_t m;
  void *v;
  ursa_init(NULL);
  ursa_mvar_init(&m);
  ursa_mvar_take(&m, &v);
}

static void deadlock_ivar(void) {
  ursa_ivar_t iv;
  void *v;
  ursa_init(NULL);
  ursa_ivar_init(&iv);
  ursa_ivar_get(&iv, &v);
}

static ursa_barrier_t bar;
static void *at_barrier(void *arg) { (void)arg; ursa_barrier_wait(&bar); return NULL; }
static void deadlock_barrier(void) {
  ursa_thread_t t;
  ursa_init(NULL);
  ursa_barrier_init(&bar, 3);
  ursa_create(&t, NULL, at_barrier, NULL);
  ursa_barrier_wait(&bar);                  /* 2 of 3 arrive */
}

static void deadlock_normal_relock(void) {
  ursa_mutex_t m;
  ursa_init(NULL);
  ursa_mutex_init(&m, URSA_MUTEX_NORMAL);
  ursa_mutex_lock(&m);
  ursa_mutex_lock(&m);                      /* POSIX: deadlock */
}

static void check_deadlock(void (*scenario)(void), const char *head, const char *line) {
  char out[4096];
  int status;
  uint64_t t0 = test_now_ns();
  run_child(scenario, &status, out, sizeof out);
  ASSERT_STR_CONTAINS(out, head);
  ASSERT_STR_CONTAINS(out, line);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);
  ASSERT_LT(test_now_ns() - t0, 1000000000ull * TEST_TIME_FACTOR);   /* reported within a second */
}

TEST_IMPL(deadlock_reports) {
  check_deadlock(deadlock_abba, "ursa: deadlock: all 3 user threads blocked",
                 "thread 2 (): ursa_mutex_lock on mutex 0x");
  check_deadlock(deadlock_abba, "thread 1 (main): ursa_join on thread 2 ()",
                 "thread 3 (): ursa_mutex_lock on mutex 0x");
  check_deadlock(deadlock_abba, "ursa: wait-for cycle: thread 2 () waits in ursa_mutex_lock on mutex 0x",
                 " held by thread 2 ().\n");
  check_deadlock(deadlock_join_cycle, "all 4 user threads blocked",
                 "thread 2 (): ursa_join on thread 3 ()");
  check_deadlock(deadlock_join_cycle, "ursa: wait-for cycle: thread 2 () waits in ursa_join on thread 3 ();",
                 " thread 4 () waits in ursa_join on thread 2 ().\n");
  check_deadlock(deadlock_join_cycle, "thread 4 (): ursa_join on thread 2 ()",
                 "thread 1 (main): ursa_sem_wait on semaphore 0x");
  check_deadlock(deadlock_mvar, "all 1 user threads blocked",
                 "thread 1 (main): ursa_mvar_take on M-structure 0x");
  check_deadlock(deadlock_ivar, "all 1 user threads blocked",
                 "thread 1 (main): ursa_ivar_get on I-structure 0x");
  check_deadlock(deadlock_barrier, "all 2 user threads blocked",
                 "ursa_barrier_wait on barrier 0x");
  check_deadlock(deadlock_normal_relock, "all 1 user threads blocked",
                 "thread 1 (main): ursa_mutex_lock on mutex 0x");
  return 0;
}

TEST_IMPL(deadlock_partial_found_by_dump) {
  /* Two threads deadlock while main goes on: no report by itself, but ursa_dump names the cycle. */
  ursa_thread_t t1, t2;
  char buf[4096];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  ASSERT(f != NULL);
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t1, NULL, lock_ab, &ma));
  ASSERT_OK(ursa_create(&t2, NULL, lock_ab, &mb));
  ASSERT_OK(ursa_yield());
  ASSERT_OK(ursa_yield());                  /* both hold one mutex and wait for the other */
  ASSERT_OK(ursa_dump(f));
  fclose(f);
  ASSERT_STR_CONTAINS(buf, "thread 1 (main): running");
  ASSERT_STR_CONTAINS(buf, "ursa: wait-for cycle: thread 2 () waits in ursa_mutex_lock on mutex 0x");
  ASSERT_STR_CONTAINS(buf, "held by thread 3 (); thread 3 () waits in ursa_mutex_lock on mutex 0x");
  exit(0);                                  /* the two stay deadlocked: leave */
}

static void *nap(void *arg) { (void)arg; ursa_sleep_ns(30000000); return NULL; }
TEST_IMPL(deadlock_not_while_a_timer_is_pending) {
  ursa_thread_t t;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_create(&t, NULL, nap, NULL));
  ASSERT_OK(ursa_join(t, NULL));             /* everyone blocked for 30 ms: a sleep, not a deadlock */
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- exit -------------------------------------------------------------------------------------- */

static void *spin_yield(void *arg) { (void)arg; for (;;) ursa_yield(); return NULL; }

static void exit_with_live_threads(void) {
  ursa_thread_t t;
  ursa_sem_t s;
  int i;
  ursa_init(NULL);
  ursa_sem_init(&s, 0);
  for (i = 0; i < 100; i++) ursa_create(&t, NULL, block_forever, &s);
  for (i = 0; i < 3; i++) ursa_create(&t, NULL, spin_yield, NULL);
  ursa_yield();
  exit(7);                                   /* as returning 7 from main */
}

static void *exits_process(void *arg) { (void)arg; ursa_yield(); exit(5); }
static void exit_from_thread(void) {
  ursa_thread_t t;
  ursa_init(NULL);
  ursa_create(&t, NULL, exits_process, NULL);
  ursa_create(&t, NULL, spin_yield, NULL);
  ursa_join(t, NULL);
}

static void *say(void *arg) { ursa_yield(); printf("%s\n", (const char *)arg); return NULL; }
static void main_calls_ursa_exit(void) {
  ursa_thread_t t;
  ursa_init(NULL);
  ursa_create(&t, NULL, say, "first");
  ursa_create(&t, NULL, say, "second");
  ursa_exit(NULL);
}

static void stats_at_exit(void) {
  setenv("URSA_STATS", "1", 1);
  ursa_init(NULL);
  ursa_yield();
  exit(0);
}

TEST_IMPL(exit_with_live_threads_is_prompt) {
  char out[4096];
  int status;
  uint64_t t0 = test_now_ns();
  run_child(exit_with_live_threads, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 7);
  run_child(exit_from_thread, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 5);
  run_child(main_calls_ursa_exit, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT(strcmp(out, "first\nsecond\n") == 0);
  ASSERT_LT(test_now_ns() - t0, 2000000000ull * TEST_TIME_FACTOR);
  run_child(stats_at_exit, &status, out, sizeof out);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_STR_CONTAINS(out, "switches");
  ASSERT_STR_CONTAINS(out, "ursa: total");
  return 0;
}

/* ---- no system call on a warm pool; no busy waiting when idle; URSA_STACK_SIZE ------------------ */

#include <sys/resource.h>

static long vm_size_kib(void) {
  char line[256];
  long kib = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static void *nothing(void *arg) { return arg; }

/* ---- a huge stack costs what it touches ------------------------------------------------------- */

static long peak_rss_kib(void) {
  char line[256];
  long kib = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static void *touch_256k(void *arg) {
  volatile char buf[256 * 1024];
  size_t i;
  for (i = 0; i < sizeof buf; i += 4096) buf[i] = (char)i;
  return (void *)(uintptr_t)(buf[4096] + (arg != NULL));
}

TEST_IMPL(stack_huge_costs_what_it_touches) {
  /* A stack is mapped with MAP_NORESERVE, so a 1 TiB one may be asked for; with ASan, clearing
   * its shadow memory by memset touched an eighth of it (16 GB of RSS in 40 s, issue #22). The
   * peak RSS must grow by the pages used, far less than 64 MiB.  Where the system refuses such a
   * mapping (overcommit, address space) the largest of the smaller sizes that works is used. */
  static const size_t sizes[] = { (size_t)1 << 40, (size_t)64 << 30, (size_t)4 << 30, (size_t)1 << 30 };
  ursa_attr_t a;
  ursa_thread_t t;
  void *r;
  long before, after;
  size_t i;
  int err = -1;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  before = peak_rss_kib();
  ASSERT_GE(before, 0);
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    ASSERT_OK(ursa_attr_setstacksize(&a, sizes[i]));
    err = ursa_create(&t, &a, touch_256k, NULL);
    if (err == 0) break;
    ASSERT(err == -EAGAIN || err == -ENOMEM);
  }
  ASSERT_OK(err);
  ASSERT_OK(ursa_join(t, &r));
  after = peak_rss_kib();
  printf("stack of %zu GiB: peak RSS %ld -> %ld KiB\n", sizes[i] >> 30, before, after);
  ASSERT_LT(after - before, 64 * 1024);
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(stack_warm_pool_needs_no_mmap) {
  /* With the address space capped at its current size no new mapping can be made, so creates
   * that succeed took their stacks (and everything else) from what ursa already holds. */
  struct rlimit old, cap;
  ursa_thread_t t[8];
  ursa_sem_t s;
  int i, r = 0, made = 0;
  if (TEST_SANITIZED) RETURN_SKIP("sanitizer runtimes need to map memory of their own");
  /* Valgrind's own memory (its translations, in superblocks of ~90 KiB) counts against the same
   * cap: whether it needs a new one in the capped phase depends on how full the last one was
   * (with the I/O layer's code it did, on 2 VPs, every time) */
  if (TEST_UNDER_VALGRIND) RETURN_SKIP("Valgrind maps memory of its own under the address-space cap");
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_sem_init(&s, 0));
  ASSERT_OK(ursa_create(&t[0], NULL, nothing, NULL));           /* warm: slots, queues, pool */
  ASSERT_OK(ursa_join(t[0], NULL));
  ASSERT_OK(getrlimit(RLIMIT_AS, &old));
  cap = old;
  cap.rlim_cur = (rlim_t)vm_size_kib() * 1024 + 16 * 1024;        /* less than one more stack */
  ASSERT_OK(setrlimit(RLIMIT_AS, &cap));
  for (i = 0; i < 100000; i++) {                                  /* warm create + join */
    ASSERT_OK(ursa_create(&t[0], NULL, nothing, NULL));
    ASSERT_OK(ursa_join(t[0], NULL));
  }
  /* Live threads beyond the pool need new stacks: those creations fail cleanly. */
  for (i = 0; i < 64 && r == 0; i++) {
    r = ursa_create(&t[0], NULL, block_forever, &s);
    if (r == 0) made++;
  }
  ASSERT_ERR(r, -EAGAIN);
  ASSERT_GE(made, 1);
  ASSERT_OK(setrlimit(RLIMIT_AS, &old));
  exit(0);                                                        /* blocked threads stay */
}

static void *long_nap(void *arg) { (void)arg; ursa_sleep_ns(200000000); return NULL; }

TEST_IMPL(sched_idle_waits_in_kernel) {
  struct rusage ru0, ru1;
  ursa_thread_t t;
  ursa_stats_t st;
  uint64_t cpu_us;
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(getrusage(RUSAGE_SELF, &ru0));
  ASSERT_OK(ursa_create(&t, NULL, long_nap, NULL));
  ASSERT_OK(ursa_join(t, NULL));                                  /* 200 ms with nothing ready */
  ASSERT_OK(getrusage(RUSAGE_SELF, &ru1));
  cpu_us = (uint64_t)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000000u +
           (uint64_t)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
           (uint64_t)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
  ASSERT_LT(cpu_us, 50000u);                                      /* asleep, not spinning */
  ASSERT_OK(ursa_stats(&st));
  ASSERT_GE(st.idle_waits, 1);
  ASSERT_EQ(st.timers, 1);
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(stack_size_from_environment) {
  ursa_attr_t a;
  size_t sz;
  ursa_thread_t t;
  void *r;
  setenv("URSA_STACK_SIZE", "256K", 1);
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_EQ(sz, 256 * 1024);
  ASSERT_OK(ursa_create(&t, NULL, use_stack, (void *)(uintptr_t)(200 * 1024)));   /* fits */
  ASSERT_OK(ursa_join(t, &r));
  ASSERT_OK(ursa_fini());
  setenv("URSA_STACK_SIZE", "lots", 1);                           /* not a size: warned, ignored */
  ASSERT_OK(ursa_init(NULL));
  ASSERT_OK(ursa_attr_getstacksize(&a, &sz));
  ASSERT_EQ(sz, 65536);
  ASSERT_OK(ursa_fini());
  unsetenv("URSA_STACK_SIZE");
  return 0;
}
