/*
 * model_loop.c - the journal paper's simple loop (section 3.2.1, Tables I and II): `threads`
 * threads (4), each a loop of `iters` iterations (10^7 in the paper) with ursa_tick() at the
 * back-edge, where SR's iteration-counting compiler puts its check.  The same binary runs under
 * every model (URSA_MODEL, URSA_VPS); the threads are created with URSA_VP_ANY (SplitThreads'
 * arbitrated creation), so with several VPs they spread over them at once.
 *
 *   model_loop [iters] [threads] [self]     ("self": create on the creator's VP instead)
 *
 * Prints RESULT bench=simple_loop impl=<model>-<vps>vp value=<seconds> unit=s n=<iters>, and a
 * COUNTERS line (switches, preemptions, deferred, ticks).
 */
#include "../bench_common.h"
#include "ursa.h"

static uint64_t iters;
static volatile uint64_t sink;

static void *loop(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg + 1;
  for (uint64_t i = 0; i < iters; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;   /* one dependent multiply-add */
    ursa_tick();
  }
  sink += x;
  return NULL;
}

int main(int argc, char **argv) {
  unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 4;
  int self = argc > 3 && strcmp(argv[3], "self") == 0;
  ursa_thread_t t[64];
  ursa_attr_t attr;
  ursa_stats_t s;
  uint64_t t0, t1;
  iters = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
  if (iters == 0 || threads == 0 || threads > 64) {
    fprintf(stderr, "usage: %s [iters > 0] [threads 1..64] [self]\n", argv[0]);
    return 2;
  }
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_attr_init(&attr));
  if (!self) BENCH_CHECK(ursa_attr_setvp(&attr, URSA_VP_ANY));
  t0 = bench_now_ns();
  for (unsigned i = 0; i < threads; i++) BENCH_CHECK(ursa_create(&t[i], &attr, loop, (void *)(uintptr_t)i));
  for (unsigned i = 0; i < threads; i++) BENCH_CHECK(ursa_join(t[i], NULL));
  t1 = bench_now_ns();
  BENCH_CHECK(ursa_stats(&s));
  printf("RESULT bench=simple_loop impl=%s-%uvp value=%.6f unit=s n=%llu\n", ursa_model_name(ursa_model()),
         ursa_vp_count(), (double)(t1 - t0) / 1e9, (unsigned long long)iters);
  printf("COUNTERS switches=%llu preemptions=%llu deferred=%llu ticks=%llu\n",
         (unsigned long long)s.switches, (unsigned long long)s.preemptions,
         (unsigned long long)s.preempt_deferred, (unsigned long long)s.ticks);
  BENCH_CHECK(ursa_fini());
  return 0;
}
