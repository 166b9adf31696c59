/*
 * pthread_ring_sem.c - peer of ursa_ring_sem: thread-ring of 503 POSIX threads, one sem_t each.
 *
 * Same protocol as ursa_ring_sem: a thread woken with token t reports its 1-based id when t is 0,
 * else posts t - 1 to the next thread and waits again.  Every pass wakes a kernel thread through
 * the kernel.  A barrier makes sure all 503 threads have started before the clock starts; main
 * reads the clock before its first post and after the done semaphore wakes it.
 * For N = 1,000,000 the answer is 37.
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Threads get 64 KiB stacks (ursa's default) to keep 503 of them small.
 *
 * The same unmodified binary also runs under `ursa-run -n 1` (issue #17: impl ursa-run; it
 * detects libursa-pthread.so through dlsym, as pthread_ring_mutex does, only to label its
 * RESULT line), so `make bench` compares POSIX semaphores natively, under ursa-run and ursa's
 * own semaphore ring (ursa_ring_sem) in the same run.
 *
 * Usage: pthread_ring_sem [N = 1,000,000 passes]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>

#define RING 503

static sem_t sems[RING];
static sem_t done;
static pthread_t threads[RING];
static pthread_barrier_t started;
static uint64_t token;            /* handed over through the semaphores (they order memory) */
static long long answer = -1;
static int stopping;

static void sem_wait_nointr(sem_t *s) {
  while (sem_wait(s) != 0)
    if (errno != EINTR) bench_die("sem_wait", errno);
}

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  pthread_barrier_wait(&started);
  for (;;) {
    sem_wait_nointr(&sems[me]);
    if (stopping) return NULL;
    if (token == 0) {
      answer = me + 1;
      if (sem_post(&done) != 0) bench_die("sem_post", errno);
      continue;
    }
    token--;
    if (sem_post(&sems[next]) != 0) bench_die("sem_post", errno);
  }
}

int main(int argc, char **argv) {
  void *(*ursa_self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  const char *impl = ursa_self && ursa_self() ? "ursa-run" : "pthread";
  uint64_t n = bench_arg(argc, argv, 1000000), t0, t1;
  pthread_attr_t attr;
  unsigned i;
  BENCH_CHECK(pthread_attr_init(&attr));
  BENCH_CHECK(pthread_attr_setstacksize(&attr, 65536));
  BENCH_CHECK(pthread_barrier_init(&started, NULL, RING + 1));
  if (sem_init(&done, 0, 0) != 0) bench_die("sem_init", errno);
  for (i = 0; i < RING; i++) {
    if (sem_init(&sems[i], 0, 0) != 0) bench_die("sem_init", errno);
    BENCH_CHECK(pthread_create(&threads[i], &attr, member, (void *)(uintptr_t)i));
  }
  pthread_barrier_wait(&started);

  token = n;
  t0 = bench_now_ns();
  if (sem_post(&sems[0]) != 0) bench_die("sem_post", errno);
  sem_wait_nointr(&done);
  t1 = bench_now_ns();

  bench_result("ring-sem", impl, (double)(t1 - t0) / (double)n, "ns/pass", answer, n);

  stopping = 1;
  for (i = 0; i < RING; i++)
    if (sem_post(&sems[i]) != 0) bench_die("sem_post", errno);
  for (i = 0; i < RING; i++) BENCH_CHECK(pthread_join(threads[i], NULL));
  return answer == bench_ring_answer(n, RING) ? 0 : 1;
}
