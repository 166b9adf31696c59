/*
 * pthread_rss_blocked.c - peer of ursa_rss_blocked: resident memory per live POSIX thread
 * blocked on a shared sem_t, with 16 KiB stacks.
 *
 * Creates K threads; each posts `ready` and blocks on `gate` (never posted); main waits for K
 * readies, then reads VmRSS.  Kernel-side memory (task_struct, kernel stack: ~10-20 KiB per
 * thread) is NOT in VmRSS, so this understates what a kernel thread really costs.
 *   value = (VmRSS after - VmRSS before) / K                                unit KiB/thread
 * main then exits with the threads blocked (exit ends them all).
 *
 * Usage: pthread_rss_blocked [K = 10,000]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <pthread.h>
#include <semaphore.h>

static sem_t gate, ready;

static void *blocker(void *arg) {
  (void)arg;
  if (sem_post(&ready) != 0) bench_die("sem_post", errno);
  while (sem_wait(&gate) != 0)
    if (errno != EINTR) bench_die("sem_wait", errno);
  return NULL;
}

int main(int argc, char **argv) {
  uint64_t k = bench_arg(argc, argv, 10000), i;
  long before, after;
  pthread_attr_t attr;
  pthread_t t;
  BENCH_CHECK(pthread_attr_init(&attr));
  BENCH_CHECK(pthread_attr_setstacksize(&attr, 16384));
  BENCH_CHECK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED));
  if (sem_init(&gate, 0, 0) != 0 || sem_init(&ready, 0, 0) != 0) bench_die("sem_init", errno);
  before = bench_vmrss_kib();
  for (i = 0; i < k; i++) BENCH_CHECK(pthread_create(&t, &attr, blocker, NULL));
  for (i = 0; i < k; i++)
    while (sem_wait(&ready) != 0)
      if (errno != EINTR) bench_die("sem_wait", errno);
  after = bench_vmrss_kib();
  bench_result(bench_count_name("rss-blocked", k).s, "pthread", (double)(after - before) / (double)k,
               "KiB/thread", -1, k);
  return 0;
}
