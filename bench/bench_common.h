/*
 * bench_common.h - helpers shared by every benchmark program (ursa programs and the pthreads and
 * Boost.Context peers; valid C11 and C++): the monotonic clock, the process's VmRSS, argument
 * parsing, error exits, and the RESULT line that bench/run.py parses:
 *
 *   RESULT bench=<name> impl=<impl> value=<float> unit=<unit> [answer=<n>] [n=<iterations>]
 *
 * Nothing here depends on ursa, so it has no ursa calls; a program that fails prints one line on
 * stderr and exits with status 1 (run.py then reports the program as failed).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Prints "<prog>: <what>: <message>" and exits with status 1.  err is an errno value of either
 * sign (ursa returns negative ones, pthreads positive ones), or 0 when there is none. */
static inline void bench_die(const char *what, int err) {
  if (err != 0) fprintf(stderr, "bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
  else fprintf(stderr, "bench: %s\n", what);
  fflush(stdout);
  exit(1);
}

/* Evaluates a call returning 0 or an errno value (either sign); exits on anything else. */
#define BENCH_CHECK(call)                                  \
  do {                                                     \
    int bench_err_ = (call);                               \
    if (bench_err_ != 0) bench_die(#call, bench_err_);     \
  } while (0)

/* argv[1] as a positive integer, or dflt when absent.  Anything else is a usage error. */
static inline uint64_t bench_arg(int argc, char **argv, uint64_t dflt) {
  char *end = NULL;
  unsigned long long v;
  if (argc < 2) return dflt;
  errno = 0;
  v = strtoull(argv[1], &end, 10);
  if (argc > 2 || errno != 0 || end == argv[1] || *end != '\0' || v == 0) {
    fprintf(stderr, "usage: %s [count > 0]   (default %llu)\n", argv[0], (unsigned long long)dflt);
    exit(2);
  }
  return (uint64_t)v;
}

/* The VmRSS line of /proc/self/status in KiB; exits when it cannot be read. */
static inline long bench_vmrss_kib(void) {
  char line[256];
  long kib = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) bench_die("open /proc/self/status", errno);
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "VmRSS:", 6) == 0) {
      kib = strtol(line + 6, NULL, 10);
      break;
    }
  }
  fclose(f);
  if (kib < 0) bench_die("no VmRSS line in /proc/self/status", 0);
  return kib;
}

/* The RESULT line; answer < 0 leaves the answer field out.  Flushed at once, so that a program
 * which then returns with live threads, or is killed, has already reported. */
static inline void bench_result(const char *bench, const char *impl, double value, const char *unit,
                                long long answer, uint64_t n) {
  printf("RESULT bench=%s impl=%s value=%.4f unit=%s", bench, impl, value, unit);
  if (answer >= 0) printf(" answer=%lld", answer);
  printf(" n=%llu\n", (unsigned long long)n);
  fflush(stdout);
}

/* "<prefix>-<count>" with the count as 100k or 1M when it is a round number (bench names). */
struct bench_name { char s[64]; };
static inline struct bench_name bench_count_name(const char *prefix, uint64_t count) {
  struct bench_name r;
  unsigned long long c = (unsigned long long)count;
  if (c % 1000000 == 0) snprintf(r.s, sizeof r.s, "%s-%lluM", prefix, c / 1000000);
  else if (c % 1000 == 0) snprintf(r.s, sizeof r.s, "%s-%lluk", prefix, c / 1000);
  else snprintf(r.s, sizeof r.s, "%s-%llu", prefix, c);
  return r;
}

/* The thread-ring answer for n passes among `threads` threads: the 1-based id of the thread that
 * receives token 0 when thread 1 starts with token n and each pass hands token - 1 on. */
static inline long long bench_ring_answer(uint64_t n, unsigned threads) {
  return (long long)(n % threads) + 1;
}

#endif /* BENCH_COMMON_H */
