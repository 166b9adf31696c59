/*
 * ursa_rss_blocked.c - resident memory per live, blocked ursa thread.
 *
 * Creates K threads with the default attributes (ursa_init(NULL): 64 KiB stacks) that each block
 * on one shared ursa_sem_t, then reads VmRSS from /proc/self/status.  main yields once after the
 * creates, so every thread has run and blocked before the second reading.
 *   value = (VmRSS after - VmRSS before) / K                                unit KiB/thread
 * main then returns with the K threads still blocked (the process exits at once; ursa supports
 * that), so no clean-up time is spent.
 *
 * Usage: ursa_rss_blocked [K = 100,000]
 */
#include "bench_common.h"
#include "ursa.h"

static ursa_sem_t gate;           /* never posted */
static uint64_t started;

static void *blocker(void *arg) {
  (void)arg;
  started++;
  BENCH_CHECK(ursa_sem_wait(&gate));
  return NULL;
}

int main(int argc, char **argv) {
  uint64_t k = bench_arg(argc, argv, 100000), i;
  long before, after;
  ursa_thread_t t;                /* never joined: one variable for every handle */
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_sem_init(&gate, 0));
  before = bench_vmrss_kib();
  for (i = 0; i < k; i++) BENCH_CHECK(ursa_create(&t, NULL, blocker, NULL));
  BENCH_CHECK(ursa_yield());
  after = bench_vmrss_kib();
  if (started != k) {
    fprintf(stderr, "ursa_rss_blocked: only %llu of %llu threads ran\n", (unsigned long long)started,
            (unsigned long long)k);
    return 1;
  }
  bench_result(bench_count_name("rss-blocked", k).s, "ursa", (double)(after - before) / (double)k,
               "KiB/thread", -1, k);
  return 0;
}
