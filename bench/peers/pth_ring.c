/*
 * pth_ring.c - peer of ursa_ring_sem: thread-ring of 503 GNU Pth threads.
 *
 * Pth has no semaphore, so each member waits on its own pth_cond_t with a "has the token" flag,
 * under one pth_mutex_t (Pth runs every thread on one kernel thread: the mutex is never
 * contended, it is what pth_cond_await needs).  Same protocol as ursa_ring_sem: a member woken
 * with token t reports its 1-based id when t is 0, else hands t - 1 to the next member (sets its
 * flag, pth_cond_notify) and waits again.  main yields until every member has run and is waiting,
 * then reads the clock before handing token N to member 1 and after the done condition wakes it.
 * For N = 2,000 the answer is 492 (a pass costs ~0.5 ms: see below).
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Threads get 16 KiB stacks, like the other peers.
 *
 * Pth keeps waiting threads in one queue that its scheduler's event manager walks on every switch,
 * checking each waiter's event and, for each, every signal number: with 503 waiters that is most
 * of the cost of a pass.  That is Pth's design, measured as it is.
 *
 * Usage: pth_ring [N = 2,000 passes]
 */
#include "../bench_common.h"

#include <pth.h>

#define RING 503

static pth_mutex_t mu = PTH_MUTEX_INIT;
static pth_cond_t conds[RING];
static int has_token[RING];
static pth_cond_t done_cond = PTH_COND_INIT;
static int done;
static pth_t threads[RING];
static uint64_t token;
static unsigned waiting;          /* members waiting on their condition (start-up) */
static long long answer = -1;
static int stopping;

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  if (!pth_mutex_acquire(&mu, FALSE, NULL)) bench_die("pth_mutex_acquire", errno);
  for (;;) {
    waiting++;
    while (!has_token[me] && !stopping)
      if (!pth_cond_await(&conds[me], &mu, NULL)) bench_die("pth_cond_await", errno);
    waiting--;
    if (stopping) break;
    has_token[me] = 0;
    if (token == 0) {
      answer = me + 1;
      done = 1;
      pth_cond_notify(&done_cond, FALSE);
      continue;
    }
    token--;
    has_token[next] = 1;
    pth_cond_notify(&conds[next], FALSE);
  }
  pth_mutex_release(&mu);
  return NULL;
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 2000), t0, t1;
  pth_attr_t attr;
  unsigned i;
  if (!pth_init()) bench_die("pth_init", errno);
  attr = pth_attr_new();
  pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)16384);
  for (i = 0; i < RING; i++) {
    pth_cond_init(&conds[i]);
    threads[i] = pth_spawn(attr, member, (void *)(uintptr_t)i);
    if (threads[i] == NULL) bench_die("pth_spawn", errno);
  }
  while (waiting < RING) pth_yield(NULL);   /* every member is waiting on its condition */

  if (!pth_mutex_acquire(&mu, FALSE, NULL)) bench_die("pth_mutex_acquire", errno);
  token = n;
  t0 = bench_now_ns();
  has_token[0] = 1;
  pth_cond_notify(&conds[0], FALSE);
  while (!done)
    if (!pth_cond_await(&done_cond, &mu, NULL)) bench_die("pth_cond_await", errno);
  t1 = bench_now_ns();

  bench_result("ring-sem", "pth", (double)(t1 - t0) / (double)n, "ns/pass", answer, n);

  stopping = 1;
  for (i = 0; i < RING; i++) pth_cond_notify(&conds[i], FALSE);
  pth_mutex_release(&mu);
  for (i = 0; i < RING; i++)
    if (!pth_join(threads[i], NULL)) bench_die("pth_join", errno);
  pth_attr_destroy(attr);
  pth_kill();
  return answer == bench_ring_answer(n, RING) ? 0 : 1;
}
