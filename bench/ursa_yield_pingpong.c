/*
 * ursa_yield_pingpong.c - yield ping-pong: two ursa threads alternate ursa_yield().
 *
 * main creates A and B and joins them, so while they run the run queue holds just the other one
 * and every ursa_yield() is exactly one switch.  A reads the clock before its first yield and
 * after its last: that interval holds A's N yields and B's N yields.
 *   value = ns per yield = interval / (2 N)                                 unit ns/switch
 * Each thread checks, before yielding, that the other one ran since its previous turn (a shared
 * `turn` variable); any miss, or a wrong yield count, fails the program (exit 1).
 *
 * Usage: ursa_yield_pingpong [N = 10,000,000 yields per thread]
 */
#include "bench_common.h"
#include "ursa.h"

static uint64_t n_yields;         /* per thread */
static int turn;                  /* 0: A's turn, 1: B's */
static uint64_t misses;           /* times a thread found it was not its turn */
static uint64_t done[2];          /* yields each thread made */
static uint64_t t_start, t_end;

static void *player(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t i;
  if (me == 0) t_start = bench_now_ns();
  for (i = 0; i < n_yields; i++) {
    if (turn != me) misses++;
    turn = !me;
    BENCH_CHECK(ursa_yield());
  }
  if (me == 0) t_end = bench_now_ns();
  done[me] = i;
  return NULL;
}

int main(int argc, char **argv) {
  ursa_thread_t a, b;
  n_yields = bench_arg(argc, argv, 10000000);
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_create(&a, NULL, player, (void *)(intptr_t)0));
  BENCH_CHECK(ursa_create(&b, NULL, player, (void *)(intptr_t)1));
  BENCH_CHECK(ursa_join(a, NULL));
  BENCH_CHECK(ursa_join(b, NULL));
  if (misses != 0 || done[0] != n_yields || done[1] != n_yields) {
    fprintf(stderr, "ursa_yield_pingpong: threads did not alternate: %llu misses, %llu + %llu yields\n",
            (unsigned long long)misses, (unsigned long long)done[0], (unsigned long long)done[1]);
    return 1;
  }
  bench_result("yield-pingpong", "ursa", (double)(t_end - t_start) / (double)(2 * n_yields),
               "ns/switch", -1, 2 * n_yields);
  BENCH_CHECK(ursa_fini());
  return 0;
}
