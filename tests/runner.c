/*
 * runner.c - the test runner.  `ursa_tests NAME` runs one test in this process (CTest runs each
 * test that way: one process each, under CTest's timeout).  `ursa_tests` alone runs every test in
 * its own forked child, kills it after a timeout (30 s x URSA_TEST_TIMEOUT_MULTIPLIER) and prints
 * TAP.  `ursa_tests --list` prints the names of the list (tests/test-list.h), `--list-defined`
 * those of every TEST_IMPL compiled in, and `--check-registered FILE` (the CTest test
 * tests_registered; FILE is what tests/CMakeLists.txt registered with CTest, one name a line)
 * fails, naming the test, when a TEST_IMPL has no TEST line or CTest and the list disagree.
 * `ursa_tests --each SECONDS NAME...` runs the named tests one after another, each in its own
 * forked child killed after SECONDS, and prints a TAP line for each with its time ("ok - NAME
 * 1.25 s of 300 s", "# SKIP" after a skip): what CTest runs under Valgrind, where a process per
 * test paid Valgrind's start (~0.4 s here) ~300 times per configuration (tests/CMakeLists.txt;
 * scripts/run-tests.sh reports each test of a batch as its own).  Exit 0 when none failed,
 * TEST_SKIP_CODE when every one skipped, 1 otherwise.
 */
#include "task.h"

#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST(name) int test_##name(void);
#include "test-list.h"
#undef TEST

struct entry { const char *name; int (*fn)(void); };
static const struct entry tests[] = {
#define TEST(name) { #name, test_##name },
#include "test-list.h"
#undef TEST
};
#define NTESTS (sizeof tests / sizeof tests[0])

/* Every TEST_IMPL's name, NUL-terminated, one after the other in the section ursa_test_defs
 * (task.h); the linker defines its bounds.  Zero bytes of alignment padding may come between. */
extern const char __start_ursa_test_defs[], __stop_ursa_test_defs[];

/* The next name of the section at or after *at, or NULL at its end. */
static const char *next_defined(const char **at) {
  const char *p = *at, *name;
  while (p < __stop_ursa_test_defs && *p == '\0') p++;
  if (p >= __stop_ursa_test_defs) return NULL;
  name = p;
  *at = p + strlen(p) + 1;
  return name;
}

static int listed(const char *name) {
  size_t i;
  for (i = 0; i < NTESTS; i++)
    if (strcmp(tests[i].name, name) == 0) return 1;
  return 0;
}

/* --check-registered FILE: the runner's list, the TEST_IMPLs compiled in and the names CMake
 * registered with CTest (FILE, one a line) must be the same set.  Prints each difference. */
static int check_registered(const char *path) {
  char line[256], *names = NULL;
  size_t len = 0, cap = 0, i;
  int bad = 0, ndefined = 0;
  const char *at = __start_ursa_test_defs, *name;
  FILE *f = fopen(path, "r");
  if (f == NULL) { perror(path); return 1; }
  while (fgets(line, sizeof line, f) != NULL) {       /* names, each followed by '\0' */
    size_t n = strcspn(line, " \t\r\n");
    if (n == 0) continue;
    if (len + n + 1 > cap) {
      cap = 2 * (len + n + 1) + 4096;
      names = realloc(names, cap);
      if (names == NULL) { perror("realloc"); fclose(f); return 1; }
    }
    memcpy(names + len, line, n);
    names[len + n] = '\0';
    len += n + 1;
  }
  fclose(f);
  while ((name = next_defined(&at)) != NULL) {
    ndefined++;
    if (!listed(name)) {
      printf("unregistered: TEST_IMPL(%s) is defined, but no TEST(%s) line in tests/test-list.h "
             "or tests/list-*.h lists it: it never runs\n", name, name);
      bad++;
    }
  }
  for (i = 0; i < NTESTS; i++) {
    size_t off = 0;
    int found = 0;
    for (off = 0; off < len && !found; off += strlen(names + off) + 1)
      found = strcmp(names + off, tests[i].name) == 0;
    if (!found) {
      printf("unregistered: TEST(%s) is in the runner's list, but CMake did not register it with "
             "CTest (tests/CMakeLists.txt reads lines \"TEST(name)\"; is the line inside a "
             "macro or split?)\n", tests[i].name);
      bad++;
    }
  }
  {
    size_t off;
    for (off = 0; off < len; off += strlen(names + off) + 1)
      if (!listed(names + off)) {
        printf("unregistered: CTest runs %s, but the runner's list has no TEST(%s) (under #if?)\n",
               names + off, names + off);
        bad++;
      }
  }
  free(names);
  if (bad) {
    printf("tests_registered: %d problem%s (runner list %zu, TEST_IMPLs %d, CTest %s)\n", bad,
           bad == 1 ? "" : "s", NTESTS, ndefined, path);
    return 1;
  }
  printf("tests_registered: the %zu tests of the list, the %d TEST_IMPLs and CTest agree\n",
         NTESTS, ndefined);
  return 0;
}

uint64_t test_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec test_deadline_in(int clock, uint64_t ns) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_sec += (time_t)(ns / 1000000000u);
  ts.tv_nsec += (long)(ns % 1000000000u);
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  return ts;
}

/* Linux 6.13 added MADV_GUARD_INSTALL: from then on a guard page costs no VMA (tests/task.h). */
int test_expect_free_guards(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major > 6 || (major == 6 && minor >= 13);
}

void run_child(void (*fn)(void), int *status, char *out, size_t size) {
  int p[2];
  pid_t pid;
  size_t n = 0;
  ssize_t r;
  fflush(NULL);
  if (pipe(p) != 0) FAIL("pipe");
  pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], STDERR_FILENO);
    dup2(p[1], STDOUT_FILENO);
    close(p[1]);
    fn();
    fflush(NULL);
    _exit(0);
  }
  close(p[1]);
  while (n + 1 < size && (r = read(p[0], out + n, size - 1 - n)) > 0) n += (size_t)r;
  out[n] = '\0';
  {
    char sink[4096];                         /* drain the rest so the child never blocks */
    while (read(p[0], sink, sizeof sink) > 0) {}
  }
  close(p[0]);
  if (waitpid(pid, status, 0) != pid) FAIL("waitpid");
}

static int run_one(const struct entry *e) {
  int r;
#if URSA_TEST_HARD
  /* The hard build randomizes the run-queue order with several VPs (src/sched/vp.c): the seed is
   * chosen here, once per test, and printed (CTest shows it with a failure), so that the library
   * prints nothing and the tests that check a child's stderr see only the child's output.
   * URSA_SEED=<n> replays it; URSA_SEED=off turns the chaos off. */
  if (getenv("URSA_SEED") == NULL) {
    char v[32];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(v, sizeof v, "%llu", (unsigned long long)(ts.tv_nsec ^ ((uint64_t)getpid() << 20) ^ ts.tv_sec) | 1u);
    setenv("URSA_SEED", v, 1);
  }
  fprintf(stderr, "# %s: URSA_SEED=%s\n", e->name, getenv("URSA_SEED"));   /* unbuffered: no
                                     allocation that the hard tests' leak checks would count */
#endif
  r = e->fn();
  fflush(NULL);
  return r;
}

static int run_forked(const struct entry *e, double timeout_s) {
  pid_t pid;
  int status = 0;
  uint64_t deadline = test_now_ns() + (uint64_t)(timeout_s * 1e9);
  fflush(NULL);
  pid = fork();
  if (pid == 0) _exit(run_one(e));
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (test_now_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fprintf(stderr, "# %s: timed out after %.0f s\n", e->name, timeout_s);
      return 1;
    }
    usleep(2000);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  fprintf(stderr, "# %s: killed by signal %d\n", e->name, WTERMSIG(status));
  return 1;
}

static int run_each(double timeout_s, int n, char **names) {
  int k, failed = 0, passed = 0, skipped = 0;
  size_t i;
  for (k = 0; k < n; k++) {
    const struct entry *e = NULL;
    uint64_t t0;
    double secs;
    int r;
    for (i = 0; i < NTESTS && e == NULL; i++)
      if (strcmp(names[k], tests[i].name) == 0) e = &tests[i];
    if (e == NULL) {
      printf("not ok - %s 0.00 s of %.0f s (no test of that name)\n", names[k], timeout_s);
      failed++;
      continue;
    }
    t0 = test_now_ns();
    r = run_forked(e, timeout_s);
    secs = (double)(test_now_ns() - t0) / 1e9;
    if (r == 0) passed++;
    else if (r == TEST_SKIP_CODE) skipped++;
    else failed++;
    printf("%s - %s %.2f s of %.0f s%s\n", r == 0 || r == TEST_SKIP_CODE ? "ok" : "not ok", e->name, secs,
           timeout_s, r == TEST_SKIP_CODE ? " # SKIP" : "");
    fflush(stdout);
  }
  return failed ? 1 : (passed == 0 && skipped > 0) ? TEST_SKIP_CODE : 0;
}

int main(int argc, char **argv) {
  size_t i;
  int failed = 0, passed = 0, skipped = 0;
  double mult = getenv("URSA_TEST_TIMEOUT_MULTIPLIER") ? atof(getenv("URSA_TEST_TIMEOUT_MULTIPLIER")) : 1.0;
  /* Tests that call ursa_init(NULL) test the cooperative core on one VP, whatever the machine;
   * the SMP tests ask for their VPs in ursa_config_t (which beats the environment).  Setting
   * URSA_VPS before running the tests overrides this. */
  setenv("URSA_VPS", "1", 0);
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (i = 0; i < NTESTS; i++) printf("%s\n", tests[i].name);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--list-defined") == 0) {
    const char *at = __start_ursa_test_defs, *name;
    while ((name = next_defined(&at)) != NULL) printf("%s\n", name);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "--check-registered") == 0) return check_registered(argv[2]);
  if (argc >= 4 && strcmp(argv[1], "--each") == 0 && atof(argv[2]) > 0)
    return run_each(atof(argv[2]), argc - 3, argv + 3);
  if (argc == 2) {
    for (i = 0; i < NTESTS; i++)
      if (strcmp(argv[1], tests[i].name) == 0) return run_one(&tests[i]);
    fprintf(stderr, "ursa_tests: no test named %s (try --list)\n", argv[1]);
    return 2;
  }
  printf("1..%zu\n", NTESTS);
  for (i = 0; i < NTESTS; i++) {
    int r = run_forked(&tests[i], 30.0 * (mult > 0 ? mult : 1.0));
    if (r == 0) { printf("ok %zu - %s\n", i + 1, tests[i].name); passed++; }
    else if (r == TEST_SKIP_CODE) { printf("ok %zu - %s # SKIP\n", i + 1, tests[i].name); skipped++; }
    else { printf("not ok %zu - %s\n", i + 1, tests[i].name); failed++; }
    fflush(stdout);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
