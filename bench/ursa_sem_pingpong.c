/*
 * ursa_sem_pingpong.c - semaphore hand-off ping-pong between two ursa threads.
 *
 * Two semaphores, sa and sb, both 0.  A posts sb and waits on sa; B waits on sb and posts sa.  A
 * post only makes the waiter ready (it never switches), so each hand-off is: post, block, one
 * switch to the other thread.  A reads the clock around its N round trips (2 N hand-offs).
 *   value = ns per hand-off = interval / (2 N)                              unit ns/pass
 * A counter checks that B ran exactly once between two of A's waits.
 *
 * Usage: ursa_sem_pingpong [N = 5,000,000 round trips]
 */
#include "bench_common.h"
#include "ursa.h"

static uint64_t n_rounds;
static ursa_sem_t sa, sb;
static uint64_t b_count;          /* hand-offs B has received */
static uint64_t misses;
static uint64_t t_start, t_end;

static void *ping(void *arg) {
  uint64_t i;
  (void)arg;
  t_start = bench_now_ns();
  for (i = 0; i < n_rounds; i++) {
    BENCH_CHECK(ursa_sem_post(&sb));
    BENCH_CHECK(ursa_sem_wait(&sa));
    if (b_count != i + 1) misses++;
  }
  t_end = bench_now_ns();
  return NULL;
}

static void *pong(void *arg) {
  uint64_t i;
  (void)arg;
  for (i = 0; i < n_rounds; i++) {
    BENCH_CHECK(ursa_sem_wait(&sb));
    b_count++;
    BENCH_CHECK(ursa_sem_post(&sa));
  }
  return NULL;
}

int main(int argc, char **argv) {
  ursa_thread_t a, b;
  n_rounds = bench_arg(argc, argv, 5000000);
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_sem_init(&sa, 0));
  BENCH_CHECK(ursa_sem_init(&sb, 0));
  BENCH_CHECK(ursa_create(&a, NULL, ping, NULL));
  BENCH_CHECK(ursa_create(&b, NULL, pong, NULL));
  BENCH_CHECK(ursa_join(a, NULL));
  BENCH_CHECK(ursa_join(b, NULL));
  if (misses != 0 || b_count != n_rounds) {
    fprintf(stderr, "ursa_sem_pingpong: lost hand-offs: %llu misses, B got %llu of %llu\n",
            (unsigned long long)misses, (unsigned long long)b_count, (unsigned long long)n_rounds);
    return 1;
  }
  bench_result("sem-pingpong", "ursa", (double)(t_end - t_start) / (double)(2 * n_rounds), "ns/pass",
               -1, 2 * n_rounds);
  BENCH_CHECK(ursa_sem_destroy(&sa));
  BENCH_CHECK(ursa_sem_destroy(&sb));
  BENCH_CHECK(ursa_fini());
  return 0;
}
