/*
 * ursa_create_join.c - create + join of an empty ursa thread, N times one after another.
 *
 * Each iteration creates a thread running an empty function and joins it at once: create takes a
 * stack from the VP's pool and queues the thread, join blocks main, the thread runs and finishes,
 * main resumes and releases the thread (its stack goes back to the pool).  So the pool is warm:
 * no system call in the loop.  10,000 unmeasured iterations warm the pool and caches first.
 *   value = ns per create + join = interval / N                             unit ns/op
 *
 * Usage: ursa_create_join [N = 1,000,000]
 */
#include "bench_common.h"
#include "ursa.h"

#define WARMUP 10000

static void *empty(void *arg) { return arg; }

static void create_join(uint64_t count) {
  uint64_t i;
  for (i = 0; i < count; i++) {
    ursa_thread_t t;
    void *res = NULL;
    BENCH_CHECK(ursa_create(&t, NULL, empty, (void *)(uintptr_t)(i + 1)));
    BENCH_CHECK(ursa_join(t, &res));
    if (res != (void *)(uintptr_t)(i + 1)) bench_die("join returned a wrong result", 0);
  }
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 1000000), t0, t1;
  BENCH_CHECK(ursa_init(NULL));
  create_join(WARMUP);
  t0 = bench_now_ns();
  create_join(n);
  t1 = bench_now_ns();
  bench_result("create-join", "ursa", (double)(t1 - t0) / (double)n, "ns/op", -1, n);
  BENCH_CHECK(ursa_fini());
  return 0;
}
