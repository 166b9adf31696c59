/*
 * ursa_ring_yield_to.c - thread-ring by named yield: 503 ursa threads, all always ready; the
 * token holder decrements the token and calls ursa_yield_to(next).  ursa_yield_to switches
 * straight to a ready thread (and leaves the caller ready), so the thread that runs is always the
 * one holding the token: one pass = one named yield = one switch, no semaphore.
 * The thread that receives token 0 prints its 1-based id: for N = 10,000,000 the answer is 361.
 *
 * The token starts at N + 503: the first lap starts every thread, and the clock starts when the
 * token reaches N (at thread 1 again, so the answer is unchanged) and stops when it reaches 0,
 * both read by the thread holding the token.
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Each thread checks it is the expected holder (the previous holder names its successor);
 * a miss fails the program.
 *
 * Usage: ursa_ring_yield_to [N = 10,000,000 passes]
 */
#include "bench_common.h"
#include "ursa.h"

#define RING 503

static ursa_thread_t threads[RING];
static ursa_sem_t done;           /* main waits here while the ring runs */
static uint64_t token, n_passes;
static unsigned holder;           /* index of the thread that must run next */
static uint64_t misses;
static long long answer = -1;
static uint64_t t_start, t_end;

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  ursa_thread_t next_h = threads[next];
  for (;;) {
    if (holder != me) {
      if (holder == RING) return NULL;      /* the ring has finished */
      misses++;
    }
    if (token == n_passes) t_start = bench_now_ns();
    if (token == 0) break;
    token--;
    holder = next;
    BENCH_CHECK(ursa_yield_to(next_h));
  }
  t_end = bench_now_ns();
  answer = me + 1;
  holder = RING;                  /* nobody holds the token any more: the others return */
  BENCH_CHECK(ursa_sem_post(&done));
  return NULL;
}

int main(int argc, char **argv) {
  unsigned i;
  n_passes = bench_arg(argc, argv, 10000000);
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_sem_init(&done, 0));
  /* Create every thread before any runs: each reads its successor's handle on start. */
  for (i = 0; i < RING; i++)
    BENCH_CHECK(ursa_create(&threads[i], NULL, member, (void *)(uintptr_t)i));
  token = n_passes + RING;
  holder = 0;
  BENCH_CHECK(ursa_sem_wait(&done));
  /* The holder of token 0 has returned; the others see holder == RING when they next run. */
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_join(threads[i], NULL));
  if (misses != 0) {
    fprintf(stderr, "ursa_ring_yield_to: %llu passes ran a thread other than the holder\n",
            (unsigned long long)misses);
    return 1;
  }
  bench_result("ring-direct", "ursa", (double)(t_end - t_start) / (double)n_passes, "ns/pass",
               answer, n_passes);
  BENCH_CHECK(ursa_fini());
  return answer == bench_ring_answer(n_passes, RING) ? 0 : 1;
}
