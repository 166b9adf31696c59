/*
 * forget.c - ursa__forget_others: the child of a fork keeps the calling thread only (POSIX's fork,
 * for the POSIX-threads layer; ursa's own API keeps every thread, include/ursa.h "fork").
 *
 * Contract.  Called by an ursa thread, with one VP (the child of a fork at 1 VP keeps the runtime,
 * src/runtime/runtime.c), typically from a fork handler in the child.  Every other thread the
 * handle table holds that has not finished (READY or BLOCKED) becomes URSA__GONE: it never runs
 * again.  It is taken off the run queue, its timer is dropped, it is taken off the wait queue of a
 * wait that recorded its queue (w.waitq: a timed wait, ursa__park_queued), and a thread that
 * joined the caller is no longer its joiner; the I/O layer drops their descriptor waits and
 * offload requests (ursa__io_hooks.forget).  A layer that still names a gone thread must claim
 * it before an unpark: ursa__park_claim_thread answers false (it is not BLOCKED); an unpark of a
 * gone thread is a misuse, caught by the debug build's assertion (ursa__unpark_thread).
 * A wait on one of ursa's own objects that did not record its queue (an untimed ursa_sem_wait,
 * say) leaves the thread in that queue, where a post or unlock would be given to it and lost: the
 * caller's layer must not use such waits (the POSIX layer at 1 VP does not).  Finished threads
 * (ZOMBIE) stay as they are.  Gone threads keep their handles, descriptors and stacks (mapped for
 * the life of the process), and what they held stays held.  The VP then counts one live thread,
 * so the process exits with status 0 when the caller (and the threads it makes later) finish.
 * Returns how many threads were forgotten, -EPERM outside an ursa thread (-ECHILD in a child
 * without the runtime), -EINVAL with several VPs.
 */
#define _GNU_SOURCE
#include "sched.h"

int ursa__forget_others(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *cur;
  uint32_t i;
  int n = 0;
  if (vp == NULL) return ursa__novp();
  if (ursa__g.nvps != 1 || vp->mode == URSA__SMPMODE) return -EINVAL;
  cur = vp->cur;
  for (i = 1; i <= vp->ntimers; i++) vp->timers[i]->w.heap_idx = 0;   /* (only others are timed) */
  vp->ntimers = 0;
  vp->runq.next = NULL;
  vp->runq.head = vp->runq.tail;
  for (i = 0; i < ursa__g.slots.nslots; i++) {
    struct ursa__thread *t = ursa__g.slots.slot[i].t;
    uint8_t s;
    if (t == NULL || t == cur) continue;
    s = ursa__get_state(t);
    if (s != URSA__READY && s != URSA__BLOCKED) continue;
    if (s == URSA__BLOCKED && t->w.waitq != NULL) {
      ursa__q_remove(t->w.waitq, &t->w);
      t->w.waitq = NULL;
    }
    ursa__set_state(t, URSA__GONE);
    if (cur->joiner == &t->w) cur->joiner = NULL;
    n++;
  }
  vp->nthreads = 1;
  if (ursa__io_hooks.forget) ursa__io_hooks.forget(vp);
  return n;
}
