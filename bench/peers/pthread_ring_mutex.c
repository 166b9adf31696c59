/*
 * pthread_ring_mutex.c - the thread-ring of the protothreads blog post (../shared/papers/004_...,
 * "POSIX threads, 28.7s"), written again from its description: 503 POSIX threads in a ring, one
 * default mutex each.  main locks every mutex, then starts the threads; thread l blocks locking its
 * own mutex, and when it gets it reads the token: 0 ends the run, else it stores token - 1 for
 * thread l + 1 and unlocks that thread's mutex, which it never locked (glibc allows it for a
 * default mutex; the ring relies on it), then blocks on its own again.
 *
 * The same unmodified binary runs natively (impl pthread: every pass wakes a kernel thread
 * through a futex) and under `ursa-run -n 1` (impl ursa-run: it detects libursa-pthread.so
 * through dlsym and says so), so `make bench` reports both and their ratio (issue #17).
 *
 * main waits until every thread has started (a counter, yielding) before it reads the clock and
 * unlocks thread 0's mutex; the thread that receives token 0 reads the clock, prints the result
 * and exits the process with 0, as in the blog (502 threads are still blocked then).
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Threads get PTHREAD_STACK_MIN-sized stacks, as in the blog.
 *
 * Usage: pthread_ring_mutex [N = 1,000,000 passes]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#define RING 503
#define STACK 16384               /* PTHREAD_STACK_MIN on Linux (not a constant with _GNU_SOURCE) */

static pthread_mutex_t mutex[RING];
static long data[RING];
static char stacks[RING][STACK] __attribute__((aligned(64)));
static int started;
static uint64_t n, t0;
static const char *impl;

static void *member(void *arg) {
  int l = (int)(intptr_t)arg, r = (l + 1) % RING;
  __atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
  for (;;) {
    pthread_mutex_lock(&mutex[l]);
    long token = data[l];
    if (token) {
      data[r] = token - 1;
      pthread_mutex_unlock(&mutex[r]);
    } else {
      uint64_t t1 = bench_now_ns();
      bench_result("ring-mutex", impl, (double)(t1 - t0) / (double)n, "ns/pass", l + 1, n);
      exit(l + 1 == bench_ring_answer(n, RING) ? 0 : 1);
    }
  }
}

int main(int argc, char **argv) {
  void *(*ursa_self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  pthread_attr_t attr;
  pthread_t t;
  int i;
  n = bench_arg(argc, argv, 1000000);
  impl = ursa_self && ursa_self() ? "ursa-run" : "pthread";
  data[0] = (long)n;
  pthread_attr_init(&attr);
  for (i = 0; i < RING; i++) {
    pthread_mutex_init(&mutex[i], NULL);
    pthread_mutex_lock(&mutex[i]);
    pthread_attr_setstack(&attr, stacks[i], STACK);
    if (pthread_create(&t, &attr, member, (void *)(intptr_t)i) != 0) bench_die("pthread_create", errno);
  }
  while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < RING) sched_yield();
  for (i = 0; i < 100; i++) sched_yield();        /* let them reach their lock */
  t0 = bench_now_ns();
  pthread_mutex_unlock(&mutex[0]);
  pthread_join(t, NULL);                          /* never returns: the ring calls exit */
  return 1;
}
