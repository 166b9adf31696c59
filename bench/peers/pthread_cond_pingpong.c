/*
 * pthread_cond_pingpong.c - a mutex + condition-variable ping-pong between two POSIX threads
 * (issue #17 item 7), the hand-off that most pthread programs use rather than semaphores.
 *
 * One default mutex, one condition variable per thread and a shared turn: thread i (0 or 1)
 * locks the mutex, waits on its condition until the turn is its own, checks the hand-off's
 * sequence number (even for thread 0, odd for thread 1: no hand-off lost, none seen twice),
 * advances it, gives the turn to the other thread, signals the other's condition and unlocks.
 * Both threads are started and parked before the clock starts (a barrier, then a short sleep);
 * main reads the clock, gives thread 0 the first turn, joins both and reads the clock again.
 *   value = ns per hand-off = interval / (2 N)                              unit ns/pass
 * The process exits 1 when the sequence number is wrong anywhere or does not end at 2 N.
 *
 * The same unmodified binary runs natively (impl pthread: every hand-off wakes a kernel thread
 * through a futex) and under `ursa-run -n 1` (impl ursa-run; it detects libursa-pthread.so
 * through dlsym only to label its RESULT line), so `make bench` reports both and their ratio.
 *
 * Usage: pthread_cond_pingpong [N = 100,000 round trips = 200,000 hand-offs]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond[2] = {PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
static pthread_barrier_t started;
static int turn = -1;             /* whose turn: -1 before the start, then 0 or 1 */
static uint64_t seq;              /* hand-offs so far; thread i moves it when seq % 2 == i */
static uint64_t n_rounds;
static int bad;                   /* a thread saw a wrong sequence number */

static void *player(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t i;
  pthread_barrier_wait(&started);
  BENCH_CHECK(pthread_mutex_lock(&lock));
  for (i = 0; i < n_rounds; i++) {
    while (turn != me) BENCH_CHECK(pthread_cond_wait(&cond[me], &lock));
    if (seq != 2 * i + (uint64_t)me) bad = 1;
    seq++;
    turn = 1 - me;
    BENCH_CHECK(pthread_cond_signal(&cond[1 - me]));
  }
  BENCH_CHECK(pthread_mutex_unlock(&lock));
  return NULL;
}

int main(int argc, char **argv) {
  void *(*ursa_self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  const char *impl = ursa_self && ursa_self() ? "ursa-run" : "pthread";
  struct timespec settle = {0, 10 * 1000 * 1000};
  pthread_t t[2];
  uint64_t t0, t1;
  int i;
  n_rounds = bench_arg(argc, argv, 100000);
  BENCH_CHECK(pthread_barrier_init(&started, NULL, 3));
  for (i = 0; i < 2; i++) BENCH_CHECK(pthread_create(&t[i], NULL, player, (void *)(intptr_t)i));
  pthread_barrier_wait(&started);
  nanosleep(&settle, NULL);       /* let both park in pthread_cond_wait */

  t0 = bench_now_ns();
  BENCH_CHECK(pthread_mutex_lock(&lock));
  turn = 0;
  BENCH_CHECK(pthread_cond_signal(&cond[0]));
  BENCH_CHECK(pthread_mutex_unlock(&lock));
  for (i = 0; i < 2; i++) BENCH_CHECK(pthread_join(t[i], NULL));
  t1 = bench_now_ns();

  if (bad || seq != 2 * n_rounds) {
    fprintf(stderr, "pthread_cond_pingpong: %llu hand-offs (expected %llu)%s\n", (unsigned long long)seq,
            (unsigned long long)(2 * n_rounds), bad ? ", out of order" : "");
    return 1;
  }
  bench_result("cond-pingpong", impl, (double)(t1 - t0) / (double)(2 * n_rounds), "ns/pass", -1,
               2 * n_rounds);
  return 0;
}
