/*
 * task.h - the test vocabulary: typed assertions that print both operands, skipping, and running
 * a scenario in a child process to check what it prints and how it exits.
 */
#ifndef URSA_TEST_TASK_H
#define URSA_TEST_TASK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ursa.h"

/* Time bounds in tests are scaled in sanitizer builds, whose runtimes start and exit slowly. */
#if defined(__has_feature) && !defined(__SANITIZE_ADDRESS__)       /* clang spells it this way */
#  if __has_feature(address_sanitizer)
#    define __SANITIZE_ADDRESS__ 1
#  endif
#endif
#if defined(__has_feature) && !defined(__SANITIZE_THREAD__)
#  if __has_feature(thread_sanitizer)
#    define __SANITIZE_THREAD__ 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#define TEST_BUILD_TIME_FACTOR 10u
#else
#define TEST_SANITIZED 0
#define TEST_BUILD_TIME_FACTOR 1u
#endif

/* Under Valgrind (tests run there by scripts/run-tests.sh valgrind), some checks cannot hold:
 * it ignores the FP rounding mode and has its own limit on memory segments. */
#if defined(__has_include)
#  if __has_include(<valgrind/valgrind.h>)
#    include <valgrind/valgrind.h>
#    define TEST_UNDER_VALGRIND (RUNNING_ON_VALGRIND != 0)
#  endif
#endif
#ifndef TEST_UNDER_VALGRIND
#  define TEST_UNDER_VALGRIND 0
#endif
#define TEST_TIME_FACTOR (TEST_UNDER_VALGRIND ? 30u : TEST_BUILD_TIME_FACTOR)

/* The hard build's scheduler chaos places every woken thread on a random VP, so nearly every
 * hand-off crosses VPs and, on a loaded machine, waits for the other VP's kernel thread to get a
 * CPU: SMP storms scale their work down by this much more there (smp_storm_sync_objects took 30 s
 * of its 60 beside three copies of itself with 1). */
#if defined(URSA_TEST_HARD)
#define TEST_CHAOS_FACTOR 4u
#else
#define TEST_CHAOS_FACTOR 1u
#endif

/* A test: TEST_IMPL(name) { ...; return 0; }, listed once as TEST(name) in tests/test-list.h or a
 * tests/list-*.h.  Each definition also leaves its name in the section ursa_test_defs, so that the
 * runner knows every test compiled in, listed or not (`ursa_tests --list-defined`), and the CTest
 * test tests_registered (`ursa_tests --check-registered`) fails on one that no TEST line lists. */
#define TEST_IMPL(name)                                                           \
  __attribute__((used, section("ursa_test_defs")))                                \
  static const char test_defined_##name[] = #name;                                \
  int test_##name(void); int test_##name(void)
#define TEST_SKIP_CODE 77

/* ---- what this build must support ------------------------------------------------------------
 * A test may skip because ursa refused a feature only where the build declares the feature absent
 * (issue #23): elsewhere the refusal is a failure, so a feature cannot vanish into a skip.
 *   TEST_EXPECT_PREEMPT  cp-ts and the rotator's interval timer work: tests/CMakeLists.txt sets it
 *                        to 0 for ThreadSanitizer (handlers run late) and clang's AddressSanitizer
 *                        (its runtime, malloc included, is linked into the executable), 1 elsewhere.
 *   test_expect_free_guards()  MADV_GUARD_INSTALL works: Linux 6.13 or later. */
#ifndef TEST_EXPECT_PREEMPT
#  define TEST_EXPECT_PREEMPT 1
#endif
#define SKIP_IF_ABSENT(expected, why)                                                   \
  do {                                                                                  \
    if (expected) FAIL("%s, but this build must support it (tests/task.h)", why);       \
    RETURN_SKIP(why);                                                                   \
  } while (0)
int test_expect_free_guards(void);

#define FAIL(...)                                                                 \
  do {                                                                            \
    fprintf(stderr, "Assertion failed in %s on line %d: ", __FILE__, __LINE__);   \
    fprintf(stderr, __VA_ARGS__);                                                 \
    fprintf(stderr, "\n");                                                        \
    fflush(stderr);                                                               \
    abort();                                                                      \
  } while (0)

#define ASSERT(c) do { if (!(c)) FAIL("`%s`", #c); } while (0)
#define ASSERT_BASE(a, op, b, type, fmt)                                          \
  do {                                                                            \
    type a_ = (type)(a); type b_ = (type)(b);                                       \
    if (!(a_ op b_)) FAIL("`%s %s %s` (" fmt " %s " fmt ")", #a, #op, #b, a_, #op, b_); \
  } while (0)
#define ASSERT_EQ(a, b) ASSERT_BASE(a, ==, b, long long, "%lld")
#define ASSERT_NE(a, b) ASSERT_BASE(a, !=, b, long long, "%lld")
#define ASSERT_GE(a, b) ASSERT_BASE(a, >=, b, long long, "%lld")
#define ASSERT_LE(a, b) ASSERT_BASE(a, <=, b, long long, "%lld")
#define ASSERT_LT(a, b) ASSERT_BASE(a, <, b, long long, "%lld")
#define ASSERT_GT(a, b) ASSERT_BASE(a, >, b, long long, "%lld")
#define ASSERT_PTR_EQ(a, b) ASSERT_BASE(a, ==, b, const void *, "%p")
#define ASSERT_OK(call)                                                           \
  do {                                                                            \
    int r_ = (call);                                                              \
    if (r_ != 0) FAIL("`%s` returned %d (%s)", #call, r_, ursa_strerror(r_));     \
  } while (0)
#define ASSERT_ERR(call, err)                                                     \
  do {                                                                            \
    int r_ = (call);                                                              \
    if (r_ != (err)) FAIL("`%s` returned %d (%s), expected %d (%s)", #call, r_,   \
                          ursa_strerror(r_), (int)(err), ursa_strerror(err));     \
  } while (0)
#define ASSERT_STR_CONTAINS(hay, needle)                                          \
  do {                                                                            \
    if (strstr((hay), (needle)) == NULL)                                          \
      FAIL("output does not contain \"%s\"; it was:\n%s", (needle), (hay));       \
  } while (0)
#define RETURN_SKIP(why) do { fprintf(stderr, "SKIP: %s\n", why); return TEST_SKIP_CODE; } while (0)

/* ---- deterministic randomness for the stress tests ----------------------------------------- */

#define TEST_DEFAULT_SEED 0x5eed2024c0ffee11ull

/* The seed (URSA_STRESS_SEED overrides it, to replay a failure), printed once per test. */
static inline uint64_t stress_seed(const char *test) {
  const char *e = getenv("URSA_STRESS_SEED");
  uint64_t s = e && *e ? strtoull(e, NULL, 0) : TEST_DEFAULT_SEED;
  if (s == 0) s = TEST_DEFAULT_SEED;
  printf("%s: seed 0x%016llx (set URSA_STRESS_SEED to replay another)\n", test, (unsigned long long)s);
  fflush(stdout);
  return s;
}

static inline uint64_t rng_next(uint64_t *s) {     /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

static inline unsigned rnd(uint64_t *s, unsigned n) { return (unsigned)(rng_next(s) % n); }

/* Runs fn in a forked child with stderr (and stdout) captured.  Fills *status with the waitpid
 * status and out with up to size-1 bytes of what the child printed. */
void run_child(void (*fn)(void), int *status, char *out, size_t size);

/* Monotonic nanoseconds. */
uint64_t test_now_ns(void);

/* The absolute deadline ns nanoseconds from now on clock, for the timed functions. */
struct timespec test_deadline_in(int clock, uint64_t ns);

#endif
