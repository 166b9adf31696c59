/*
 * pth_rss_blocked.c - peer of ursa_rss_blocked: resident memory per live GNU Pth thread blocked
 * on a shared condition, with 16 KiB stacks.
 *
 * Spawns K threads; each counts itself and waits on one pth_cond_t (never signalled) under a
 * pth_mutex_t.  main yields until all K are waiting, then reads VmRSS.
 *   value = (VmRSS after - VmRSS before) / K                                unit KiB/thread
 * Pth's scheduler looks at every waiting thread's event on each of its passes, so start-up is
 * quadratic in K: K = 2,000 takes ~0.7 s, 10,000 (the pthread peer's K) 16 s.  main then exits
 * with the threads waiting (exit ends them all).
 *
 * Usage: pth_rss_blocked [K = 2,000]
 */
#include "../bench_common.h"

#include <pth.h>

static pth_mutex_t mu = PTH_MUTEX_INIT;
static pth_cond_t gate = PTH_COND_INIT;   /* never notified */
static uint64_t started;

static void *blocker(void *arg) {
  (void)arg;
  if (!pth_mutex_acquire(&mu, FALSE, NULL)) bench_die("pth_mutex_acquire", errno);
  started++;
  for (;;)
    if (!pth_cond_await(&gate, &mu, NULL)) bench_die("pth_cond_await", errno);
  return NULL;
}

int main(int argc, char **argv) {
  uint64_t k = bench_arg(argc, argv, 2000), i;
  long before, after;
  pth_attr_t attr;
  if (!pth_init()) bench_die("pth_init", errno);
  attr = pth_attr_new();
  pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)16384);
  pth_attr_set(attr, PTH_ATTR_JOINABLE, FALSE);
  before = bench_vmrss_kib();
  for (i = 0; i < k; i++)
    if (pth_spawn(attr, blocker, NULL) == NULL) bench_die("pth_spawn", errno);
  while (started < k) pth_yield(NULL);
  after = bench_vmrss_kib();
  bench_result(bench_count_name("rss-blocked", k).s, "pth", (double)(after - before) / (double)k,
               "KiB/thread", -1, k);
  _Exit(0);
}
