/*
 * pthread_sem_pingpong.c - peer of ursa_sem_pingpong: the same hand-off ping-pong between two
 * POSIX threads (kernel threads) with two sem_t.
 *
 * A posts sb and waits on sa; B waits on sb and posts sa.  Every hand-off wakes a thread blocked
 * in the kernel (futex), so this is the cost of a kernel-mediated switch between threads, on one
 * or two CPUs as the kernel places them (no pinning).  A reads the clock around N round trips.
 *   value = ns per hand-off = interval / (2 N)                              unit ns/pass
 *
 * Usage: pthread_sem_pingpong [N = 100,000 round trips = 200,000 hand-offs]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <pthread.h>
#include <semaphore.h>

static uint64_t n_rounds;
static sem_t sa, sb;
static uint64_t b_count;          /* written by B before its post, read by A after its wait */
static uint64_t misses;
static uint64_t t_start, t_end;

static void sem_wait_nointr(sem_t *s) {
  while (sem_wait(s) != 0)
    if (errno != EINTR) bench_die("sem_wait", errno);
}

static void *ping(void *arg) {
  uint64_t i;
  (void)arg;
  t_start = bench_now_ns();
  for (i = 0; i < n_rounds; i++) {
    if (sem_post(&sb) != 0) bench_die("sem_post", errno);
    sem_wait_nointr(&sa);
    if (b_count != i + 1) misses++;
  }
  t_end = bench_now_ns();
  return NULL;
}

static void *pong(void *arg) {
  uint64_t i;
  (void)arg;
  for (i = 0; i < n_rounds; i++) {
    sem_wait_nointr(&sb);
    b_count++;
    if (sem_post(&sa) != 0) bench_die("sem_post", errno);
  }
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t a, b;
  n_rounds = bench_arg(argc, argv, 100000);
  if (sem_init(&sa, 0, 0) != 0 || sem_init(&sb, 0, 0) != 0) bench_die("sem_init", errno);
  BENCH_CHECK(pthread_create(&b, NULL, pong, NULL));
  BENCH_CHECK(pthread_create(&a, NULL, ping, NULL));
  BENCH_CHECK(pthread_join(a, NULL));
  BENCH_CHECK(pthread_join(b, NULL));
  if (misses != 0 || b_count != n_rounds) {
    fprintf(stderr, "pthread_sem_pingpong: lost hand-offs: %llu misses, B got %llu\n",
            (unsigned long long)misses, (unsigned long long)b_count);
    return 1;
  }
  bench_result("sem-pingpong", "pthread", (double)(t_end - t_start) / (double)(2 * n_rounds),
               "ns/pass", -1, 2 * n_rounds);
  return 0;
}
