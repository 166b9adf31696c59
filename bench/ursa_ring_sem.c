/*
 * ursa_ring_sem.c - thread-ring with one semaphore per thread (the Computer Language Benchmarks
 * Game's thread-ring): 503 ursa threads in a ring, each blocked on its own ursa_sem_t.
 *
 * main puts token N in the ring by posting thread 1's semaphore.  A thread woken with token t
 * reports its 1-based id when t is 0; otherwise it hands t - 1 to the next thread (post its
 * semaphore) and waits on its own again: one pass = post + block + one switch.  The thread that
 * receives 0 prints its id: for N = 10,000,000 the answer is 361.
 *
 * Before the clock starts main yields once, so every ring thread has run and blocked on its
 * semaphore (no thread start-up inside the measured interval).  main reads the clock before its
 * post and after the done semaphore wakes it.
 *   value = ns per pass = interval / N                                      unit ns/pass
 *
 * Usage: ursa_ring_sem [N = 10,000,000 passes]
 */
#include "bench_common.h"
#include "ursa.h"

#define RING 503

static ursa_sem_t sems[RING];
static ursa_sem_t done;           /* posted by the thread that receives token 0 */
static ursa_thread_t threads[RING];
static uint64_t token;
static long long answer = -1;
static int stopping;              /* set after the measurement: every thread returns */

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  for (;;) {
    BENCH_CHECK(ursa_sem_wait(&sems[me]));
    if (stopping) return NULL;
    if (token == 0) {
      answer = me + 1;
      BENCH_CHECK(ursa_sem_post(&done));
      continue;                   /* wait again: main wakes everyone to stop */
    }
    token--;
    BENCH_CHECK(ursa_sem_post(&sems[next]));
  }
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 10000000), t0, t1;
  unsigned i;
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_sem_init(&done, 0));
  for (i = 0; i < RING; i++) {
    BENCH_CHECK(ursa_sem_init(&sems[i], 0));
    BENCH_CHECK(ursa_create(&threads[i], NULL, member, (void *)(uintptr_t)i));
  }
  BENCH_CHECK(ursa_yield());      /* every member runs and blocks on its semaphore */

  token = n;
  t0 = bench_now_ns();
  BENCH_CHECK(ursa_sem_post(&sems[0]));
  BENCH_CHECK(ursa_sem_wait(&done));
  t1 = bench_now_ns();

  bench_result("ring-sem", "ursa", (double)(t1 - t0) / (double)n, "ns/pass", answer, n);

  stopping = 1;
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_sem_post(&sems[i]));
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_join(threads[i], NULL));
  BENCH_CHECK(ursa_fini());
  return answer == bench_ring_answer(n, RING) ? 0 : 1;
}
