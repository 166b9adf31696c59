/*
 * model_tick.c - what ursa_tick() costs at a loop back-edge: the same loop of dependent
 * multiply-adds with and without the call, per iteration, on one thread.  Run under each model
 * (URSA_MODEL): issue #4 asks for <= 1 ns outside cp-ic; under cp-ic it is the iteration-counting
 * overhead (the paper's SRIC column of Table I).
 *
 *   model_tick [iters]
 *
 * Prints RESULT bench=tick_cost impl=<model> value=<ns per ursa_tick> unit=ns n=<iters>
 * (the difference of the two loops' times per iteration, the median of 5 alternating pairs).
 */
#include "../bench_common.h"
#include "ursa.h"

static volatile uint64_t sink;

static __attribute__((noinline)) uint64_t plain(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

static __attribute__((noinline)) uint64_t ticked(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));
    ursa_tick();
  }
  return x;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 100000000ull);
  double d[5];
  BENCH_CHECK(ursa_init(NULL));
  for (int r = 0; r < 5; r++) {
    uint64_t t0 = bench_now_ns(), t1, t2;
    sink += plain(n, (uint64_t)r);
    t1 = bench_now_ns();
    sink += ticked(n, (uint64_t)r);
    t2 = bench_now_ns();
    d[r] = ((double)(t2 - t1) - (double)(t1 - t0)) / (double)n;
  }
  qsort(d, 5, sizeof d[0], cmp);
  printf("RESULT bench=tick_cost impl=%s value=%.3f unit=ns n=%llu\n", ursa_model_name(ursa_model()),
         d[2], (unsigned long long)n);
  BENCH_CHECK(ursa_fini());
  return 0;
}
