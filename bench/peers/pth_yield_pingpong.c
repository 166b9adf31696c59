/*
 * pth_yield_pingpong.c - peer of ursa_yield_pingpong: two GNU Pth threads alternate pth_yield().
 *
 * main spawns A and B and joins them, so while they run the ready queue holds just the other one
 * and every pth_yield(NULL) hands the CPU to it (through Pth's scheduler thread: two machine
 * context switches and a pass of its event manager per yield).  A reads the clock before its
 * first yield and after its last: A's N yields and B's N yields.
 *   value = ns per yield = interval / (2 N)                                 unit ns/switch
 * Each thread checks, before yielding, that the other one ran since its previous turn (a shared
 * `turn` variable); any miss, or a wrong yield count, fails the program (exit 1).
 *
 * Usage: pth_yield_pingpong [N = 200,000 yields per thread]
 */
#include "../bench_common.h"

#include <pth.h>

static uint64_t n_yields;         /* per thread */
static int turn;                  /* 0: A's turn, 1: B's */
static uint64_t misses;
static uint64_t done[2];
static uint64_t t_start, t_end;

static void *player(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t i;
  if (me == 0) t_start = bench_now_ns();
  for (i = 0; i < n_yields; i++) {
    if (turn != me) misses++;
    turn = !me;
    pth_yield(NULL);
  }
  if (me == 0) t_end = bench_now_ns();
  done[me] = i;
  return NULL;
}

int main(int argc, char **argv) {
  pth_t a, b;
  n_yields = bench_arg(argc, argv, 200000);
  if (!pth_init()) bench_die("pth_init", errno);
  a = pth_spawn(PTH_ATTR_DEFAULT, player, (void *)(intptr_t)0);
  b = pth_spawn(PTH_ATTR_DEFAULT, player, (void *)(intptr_t)1);
  if (a == NULL || b == NULL) bench_die("pth_spawn", errno);
  if (!pth_join(a, NULL) || !pth_join(b, NULL)) bench_die("pth_join", errno);
  if (misses != 0 || done[0] != n_yields || done[1] != n_yields) {
    fprintf(stderr, "pth_yield_pingpong: threads did not alternate: %llu misses, %llu + %llu yields\n",
            (unsigned long long)misses, (unsigned long long)done[0], (unsigned long long)done[1]);
    return 1;
  }
  bench_result("yield-pingpong", "pth", (double)(t_end - t_start) / (double)(2 * n_yields),
               "ns/switch", -1, 2 * n_yields);
  pth_kill();
  return 0;
}
