/* Schedule exploration (src/explore/, src/runtime/explore_run.c; docs/GUIDE.md, "Finding
 * concurrency bugs"): the same seed gives the same schedule, each planted bug of
 * examples/explore/cases.inc is found by pct and by random, a failure replays from its seed and
 * from its trace file, the correct programs pass, bad input is refused, time is virtual, the
 * program sees the VPs it asked for, and real I/O is refused.  Each run of a program is a forked
 * child (ursa_explore's, or child() below), so nothing depends on timing. */
#include "task.h"
#include "../examples/explore/cases.inc"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ThreadSanitizer makes a forked child's exit wait a second (its atexit_sleep_ms, also on _exit):
 * the tests that run hundreds of children skip there, saying so.  Under exploration one kernel
 * thread runs everything and every switch synchronizes (sched.h: __tsan_switch_to_fiber with no
 * flag), so TSan has nothing to add that the other builds do not check. */
#if defined(__SANITIZE_THREAD__)
#  define SLOW_EXIT 1
#  define SKIP_UNDER_TSAN() RETURN_SKIP("ThreadSanitizer: each forked schedule's exit waits 1 s (atexit_sleep_ms); run in the other builds")
#else
#  define SLOW_EXIT 0
#  define SKIP_UNDER_TSAN() ((void)0)
#endif

static const struct explore_case *case_named(const char *name) {
  size_t i;
  for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++)
    if (strcmp(explore_cases[i].name, name) == 0) return &explore_cases[i];
  FAIL("no case %s", name);
}

/* Runs case `name` once in a child under strategy/seed (strategy NULL: from the environment, which
 * `env` adds to: "NAME=VALUE" or "-NAME" to unset), writing its schedule to `trace` (NULL: not
 * set).  Returns the wait status. */
static int child(const char *name, const char *strategy, uint64_t seed, const char *trace, const char *const *env) {
  const struct explore_case *c = case_named(name);
  int status;
  pid_t pid;
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    ursa_config_t cfg;
    int r;
    for (; env && *env; env++) {
      char kv[512];
      snprintf(kv, sizeof kv, "%s", *env);
      if (kv[0] == '-') { unsetenv(kv + 1); continue; }
      *strchr(kv, '=') = '\0';
      setenv(kv, kv + strlen(kv) + 1, 1);
    }
    if (trace) setenv("URSA_EXPLORE_TRACE", trace, 1);
    else unsetenv("URSA_EXPLORE_TRACE");
    memset(&cfg, 0, sizeof cfg);
    cfg.explore = strategy;
    cfg.seed = seed;
    if ((r = ursa_init(&cfg)) != 0) { fprintf(stderr, "ursa_init: %s\n", ursa_strerror(r)); _exit(20); }
    r = c->fn(NULL);
    exit(r != 0);
  }
  ASSERT(waitpid(pid, &status, 0) == pid);
  return status;
}

static char *slurp(const char *path) {
  static char buf[4][1 << 16];
  static int which;
  char *b = buf[which++ & 3];
  int fd = open(path, O_RDONLY);
  ssize_t n;
  if (fd < 0) FAIL("%s: %s", path, strerror(errno));
  n = read(fd, b, sizeof buf[0] - 1);
  close(fd);
  ASSERT(n > 0);
  b[n] = '\0';
  return b;
}

static void tmp_path(char *out, size_t n, const char *what) {
  const char *t = getenv("TMPDIR");
  snprintf(out, n, "%s/ursa-test-explore-%d-%s.trace", t && *t ? t : "/tmp", (int)getpid(), what);
}

TEST_IMPL(explore_same_seed_same_schedule) {
  char a[256], b[256], c[256];
  const char *strategies[] = { "pct:3:100", "random" };
  int s, differs = 0;
  uint64_t seed;
  const int nstrat = TEST_UNDER_VALGRIND || SLOW_EXIT ? 1 : 2;   /* (Valgrind: a child costs ~0.3 s) */
  tmp_path(a, sizeof a, "a"); tmp_path(b, sizeof b, "b"); tmp_path(c, sizeof c, "c");
  if (nstrat == 1) printf("under Valgrind or ThreadSanitizer: pct only (each run of a child is slow there)\n");
  for (s = 0; s < nstrat; s++) {
    int st = child("prodcons", strategies[s], 5, a, NULL);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = child("prodcons", strategies[s], 5, b, NULL);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ASSERT_STR_CONTAINS(slurp(a), "decisions\n");
    if (strcmp(slurp(a), slurp(b)) != 0) FAIL("seed 5 under %s gave two schedules:\n%s\n%s", strategies[s], slurp(a), slurp(b));
    for (seed = 6; seed < 16 && !differs; seed++) {   /* and the seed matters */
      st = child("prodcons", strategies[s], seed, c, NULL);
      ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      differs = strcmp(strchr(slurp(a), 'd'), strchr(slurp(c), 'd')) != 0;   /* from "decisions" on */
    }
    ASSERT(differs);
    differs = 0;
  }
  unlink(a); unlink(b); unlink(c);
  return 0;
}

/* The failing children of ursa_explore write their trace where URSA_EXPLORE_TRACE says: one file
 * per test, removed at its end, instead of one per failure in $TMPDIR. */
static char trace_env[256];
static void trace_here(void) {
  tmp_path(trace_env, sizeof trace_env, "runs");
  setenv("URSA_EXPLORE_TRACE", trace_env, 1);
}
static void trace_gone(void) {
  unsetenv("URSA_EXPLORE_TRACE");
  unlink(trace_env);
}

TEST_IMPL(explore_finds_each_planted_bug) {
  const char *strategies[] = { "pct:3", "random" };
  const int nstrat = TEST_UNDER_VALGRIND ? 1 : 2;
  size_t i;
  int s;
  SKIP_UNDER_TSAN();
  trace_here();
  if (nstrat == 1) printf("under Valgrind: pct only (each schedule's child is slow there)\n");
  for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++) {
    if (explore_cases[i].buggy != 1) continue;
    for (s = 0; s < nstrat; s++) {
      ursa_explore_opts_t o;
      memset(&o, 0, sizeof o);
      o.strategy = strategies[s];
      o.seed = 1000;
      o.schedules = 1000;
      ASSERT_EQ(ursa_explore(explore_cases[i].fn, NULL, &o), 1);
      ASSERT(o.ran >= 1 && o.ran <= 1000 && o.failed_seed == 1000 + o.ran - 1);
      printf("%-12s %-7s found in %u schedules (seed %llu, %s)\n", explore_cases[i].name, strategies[s], o.ran,
             (unsigned long long)o.failed_seed, o.replay);
    }
  }
  trace_gone();
  return 0;
}

TEST_IMPL(explore_replay_reproduces_failure) {
  char first[256], again[256], fromfile[256], env_replay[300];
  const char *env[4];
  ursa_explore_opts_t o;
  int i, st;
  SKIP_UNDER_TSAN();
  tmp_path(first, sizeof first, "first"); tmp_path(again, sizeof again, "again"); tmp_path(fromfile, sizeof fromfile, "file");
  trace_here();
  memset(&o, 0, sizeof o);
  o.strategy = "pct:3";
  o.schedules = 1000;
  ASSERT_EQ(ursa_explore(case_lost_wakeup, NULL, &o), 1);
  st = child("lost-wakeup", o.replay, o.failed_seed, first, NULL);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  for (i = 0; i < (TEST_UNDER_VALGRIND ? 2 : 10); i++) { /* by seed */
    st = child("lost-wakeup", o.replay, o.failed_seed, again, NULL);
    ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    if (strcmp(slurp(first), slurp(again)) != 0) FAIL("replay %d differs:\n%s\n%s", i, slurp(first), slurp(again));
  }
  snprintf(env_replay, sizeof env_replay, "URSA_REPLAY=%s", first);   /* by trace file */
  env[0] = env_replay; env[1] = "-URSA_EXPLORE"; env[2] = "-URSA_SEED"; env[3] = NULL;
  st = child("lost-wakeup", NULL, 0, fromfile, env);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  if (strcmp(slurp(first), slurp(fromfile)) != 0) FAIL("replay from the file differs:\n%s\n%s", slurp(first), slurp(fromfile));
  /* a deadlock replays as a deadlock (ursa's report, exit status 3) */
  memset(&o, 0, sizeof o);
  o.strategy = "pct:3";
  ASSERT_EQ(ursa_explore(case_lock_order, NULL, &o), 1);
  st = child("lock-order", o.replay, o.failed_seed, again, NULL);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 3);
  unlink(first); unlink(again); unlink(fromfile);
  trace_gone();
  return 0;
}

TEST_IMPL(explore_correct_programs_pass) {
  const char *strategies[] = { "pct:3", "random" };
  unsigned n = TEST_UNDER_VALGRIND ? 10 : TEST_SANITIZED ? 30 : 400;   /* (a fork under a sanitizer costs its shadow) */
  const int nstrat = TEST_UNDER_VALGRIND ? 1 : 2;
  size_t i;
  int s;
  SKIP_UNDER_TSAN();
  if (nstrat == 1) printf("under Valgrind: 10 schedules of pct only (each schedule's child is slow there)\n");
  for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++) {
    if (explore_cases[i].buggy != 0) continue;
    for (s = 0; s < nstrat; s++) {
      ursa_explore_opts_t o;
      memset(&o, 0, sizeof o);
      o.strategy = strategies[s];
      o.schedules = n;
      o.vps = 4;
      ASSERT_EQ(ursa_explore(explore_cases[i].fn, NULL, &o), 0);
      ASSERT_EQ(o.ran, n);
      ASSERT(o.steps >= (uint64_t)n * 10);
      printf("%-12s %-6s %u schedules passed, %llu steps\n", explore_cases[i].name, strategies[s], n, (unsigned long long)o.steps);
    }
  }
  return 0;
}

static int returns_zero(void *arg) { (void)arg; return 0; }

TEST_IMPL(explore_bad_input) {
  static const char *const bad[] = { "foo", "pct:0", "pct:17", "pct:", "pct:3:", "pct:3:0", "pct:x", "random:1", "pct3", "" };
  ursa_explore_opts_t o;
  ursa_config_t c;
  char path[256], kv[300];
  const char *env[5];
  size_t i;
  int st, fd;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&c, 0, sizeof c);
    c.explore = bad[i];
    ASSERT_ERR(ursa_init(&c), -EINVAL);
    memset(&o, 0, sizeof o);
    o.strategy = bad[i];
    ASSERT_ERR(ursa_explore(returns_zero, NULL, &o), -EINVAL);
  }
  memset(&o, 0, sizeof o);
  ASSERT_ERR(ursa_explore(NULL, NULL, &o), -EINVAL);
  ASSERT_ERR(ursa_explore(returns_zero, NULL, NULL), -EINVAL);
  ASSERT_OK(ursa_init(NULL));                            /* only before ursa_init */
  ASSERT_ERR(ursa_explore(returns_zero, NULL, &o), -EBUSY);
  ASSERT_OK(ursa_fini());
  /* the environment: each in a child, whose ursa_init fails (exit 20) */
  env[0] = "URSA_REPLAY=/nonexistent/ursa.trace"; env[1] = "-URSA_EXPLORE"; env[2] = NULL;
  st = child("prodcons", NULL, 0, NULL, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 20);
  env[0] = "URSA_REPLAY=7";                              /* a seed needs its strategy */
  st = child("prodcons", NULL, 0, NULL, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 20);
  env[0] = "URSA_EXPLORE=pct:3"; env[1] = "URSA_SEED=abc"; env[2] = "-URSA_REPLAY"; env[3] = NULL;
  st = child("prodcons", NULL, 0, NULL, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 20);
  tmp_path(path, sizeof path, "bad");                    /* not a trace file */
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT(fd >= 0 && write(fd, "hello\n", 6) == 6);
  close(fd);
  snprintf(kv, sizeof kv, "URSA_REPLAY=%s", path);
  env[0] = kv; env[1] = "-URSA_EXPLORE"; env[2] = NULL;
  st = child("prodcons", NULL, 0, NULL, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 20);
  trace_here();
  /* a trace the program does not follow: the replay says where it diverged (exit 5) */
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT(fd >= 0);
  {
    const char *t = "ursa-explore-trace 1\nstrategy pct:3:50\nseed 1\ndecisions\n1 99 99\n";
    ASSERT(write(fd, t, strlen(t)) == (ssize_t)strlen(t));
  }
  close(fd);
  st = child("prodcons", NULL, 0, trace_env, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
  unlink(path);
  /* a run beyond the step limit fails with status 4 */
  env[0] = "URSA_EXPLORE_MAX_STEPS=20"; env[1] = NULL;
  st = child("philosophers", "pct:3", 1, trace_env, env);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 4);
  trace_gone();
  return 0;
}

static ursa_mutex_t vt_m;
static ursa_cond_t vt_c;
static void *vt_sleeper(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_sleep_ns(1000ull * 1000000000ull));    /* 1,000 s of virtual time */
  return NULL;
}

TEST_IMPL(explore_virtual_time) {
  ursa_config_t c;
  ursa_thread_t t;
  ursa_stats_t s;
  struct timespec ts;
  memset(&c, 0, sizeof c);
  c.explore = "pct:3";
  c.seed = 3;
  ASSERT_OK(ursa_init(&c));
  ASSERT_OK(ursa_create(&t, NULL, vt_sleeper, NULL));
  ASSERT_OK(ursa_mutex_init(&vt_m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_cond_init(&vt_c));
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += 500;                                      /* a deadline in 500 s */
  ASSERT_OK(ursa_mutex_lock(&vt_m));
  ASSERT_ERR(ursa_cond_timedwait(&vt_c, &vt_m, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
  ASSERT_OK(ursa_mutex_unlock(&vt_m));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_stats(&s));
  ASSERT_EQ(s.idle_waits, 0);                            /* no wait in the kernel: the clock jumped */
  ASSERT_EQ(s.timers, 2);
  ASSERT_OK(ursa_fini());
  return 0;
}

static void *vp_probe(void *arg) {
  *(int *)arg = ursa_vp_self();
  return NULL;
}

TEST_IMPL(explore_vps_seen_and_io_refused) {
  ursa_config_t c;
  ursa_attr_t a;
  ursa_thread_t t;
  int vp = -1, p[2];
  char byte = 'x';
  struct pollfd pf;
  memset(&c, 0, sizeof c);
  c.explore = "random";
  c.vps = 4;
  ASSERT_OK(ursa_init(&c));
  ASSERT_EQ(ursa_vp_count(), 4);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setvp(&a, 3));                     /* accepted; one kernel thread runs it */
  ASSERT_OK(ursa_create(&t, &a, vp_probe, &vp));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_EQ(vp, 0);
  ASSERT_OK(ursa_attr_setvp(&a, 4));
  ASSERT_ERR(ursa_create(&t, &a, vp_probe, &vp), -EINVAL);
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT(pipe(p) == 0);
  ASSERT_EQ(ursa_write(p[1], &byte, 1), -ENOTSUP);
  ASSERT_EQ(ursa_read(p[0], &byte, 1), -ENOTSUP);
  pf.fd = p[0]; pf.events = POLLIN; pf.revents = 0;
  ASSERT_EQ(ursa_poll(&pf, 1, 0), -ENOTSUP);
  ASSERT_EQ(ursa_fd_wait(p[0], POLLIN), -ENOTSUP);
  ASSERT_OK(ursa_close(p[0]));
  ASSERT_OK(ursa_close(p[1]));
  ASSERT_OK(ursa_fini());
  ASSERT_EQ(ursa_vp_count(), 0);
  ASSERT_OK(ursa_init(NULL));                            /* and off again afterwards */
  ASSERT(pipe(p) == 0);
  ASSERT_EQ(ursa_write(p[1], &byte, 1), 1);
  ASSERT_OK(ursa_close(p[0]));
  ASSERT_OK(ursa_close(p[1]));
  ASSERT_OK(ursa_fini());
  return 0;
}
