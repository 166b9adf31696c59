/*
 * pth_ring_yield_to.c - peer of ursa_ring_yield_to: thread-ring by named yield with 503 GNU Pth
 * threads, all always ready; the token holder decrements the token and calls pth_yield(next),
 * which makes `next` the favourite of the ready queue and enters Pth's scheduler: one pass = one
 * named yield, no condition variable (so none of the 503 threads sits in Pth's waiting queue,
 * which its scheduler walks on every pass: see pth_ring.c).
 *
 * As in ursa_ring_yield_to the token starts at N + 503 (the first lap starts every thread), the
 * clock runs from token N to token 0, and each thread checks it is the expected holder.  main
 * waits in pth_join meanwhile.  For N = 200,000 the answer is 310.
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Threads get 16 KiB stacks, like the other peers.
 *
 * Usage: pth_ring_yield_to [N = 200,000 passes]
 */
#include "../bench_common.h"

#include <pth.h>

#define RING 503

static pth_t threads[RING];
static uint64_t token, n_passes;
static unsigned holder;           /* index of the thread that must run next; RING: finished */
static uint64_t misses;
static long long answer = -1;
static uint64_t t_start, t_end;

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  for (;;) {
    if (holder != me) {
      if (holder == RING) return NULL;      /* the ring has finished */
      misses++;
    }
    if (token == n_passes) t_start = bench_now_ns();
    if (token == 0) break;
    token--;
    holder = next;
    pth_yield(threads[next]);
  }
  t_end = bench_now_ns();
  answer = me + 1;
  holder = RING;                  /* the others return when they next run */
  return NULL;
}

int main(int argc, char **argv) {
  pth_attr_t attr;
  unsigned i;
  n_passes = bench_arg(argc, argv, 200000);
  if (!pth_init()) bench_die("pth_init", errno);
  attr = pth_attr_new();
  pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)16384);
  token = n_passes + RING;
  holder = 0;
  /* Spawning does not run the new thread: every handle is in the table before any member runs. */
  for (i = 0; i < RING; i++) {
    threads[i] = pth_spawn(attr, member, (void *)(uintptr_t)i);
    if (threads[i] == NULL) bench_die("pth_spawn", errno);
  }
  for (i = 0; i < RING; i++)
    if (!pth_join(threads[i], NULL)) bench_die("pth_join", errno);
  if (misses != 0) {
    fprintf(stderr, "pth_ring_yield_to: %llu passes ran a thread other than the holder\n",
            (unsigned long long)misses);
    return 1;
  }
  bench_result("ring-direct", "pth", (double)(t_end - t_start) / (double)n_passes, "ns/pass", answer,
               n_passes);
  pth_attr_destroy(attr);
  pth_kill();
  return answer == bench_ring_answer(n_passes, RING) ? 0 : 1;
}
