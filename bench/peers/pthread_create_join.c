/*
 * pthread_create_join.c - peer of ursa_create_join: pthread_create + pthread_join of an empty
 * POSIX thread with a 16 KiB stack, N times one after another (glibc caches the stacks of joined
 * threads, so after the warm-up this is mostly clone + exit + the join's futex wait).
 *   value = ns per create + join = interval / N                             unit ns/op
 *
 * Usage: pthread_create_join [N = 50,000]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <pthread.h>

#define WARMUP 1000

static void *empty(void *arg) { return arg; }

static void create_join(const pthread_attr_t *attr, uint64_t count) {
  uint64_t i;
  for (i = 0; i < count; i++) {
    pthread_t t;
    void *res = NULL;
    BENCH_CHECK(pthread_create(&t, attr, empty, (void *)(uintptr_t)(i + 1)));
    BENCH_CHECK(pthread_join(t, &res));
    if (res != (void *)(uintptr_t)(i + 1)) bench_die("join returned a wrong result", 0);
  }
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 50000), t0, t1;
  pthread_attr_t attr;
  BENCH_CHECK(pthread_attr_init(&attr));
  BENCH_CHECK(pthread_attr_setstacksize(&attr, 16384));
  create_join(&attr, WARMUP);
  t0 = bench_now_ns();
  create_join(&attr, n);
  t1 = bench_now_ns();
  bench_result("create-join", "pthread", (double)(t1 - t0) / (double)n, "ns/op", -1, n);
  return 0;
}
