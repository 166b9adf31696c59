/*
 * policy.h - the run-queue policies behind one interface (policy.c), called by vp.c.
 * Every function is executed by the VP `vp` itself (its running thread or its idle context).
 */
#ifndef URSA_SCHED_POLICY_H
#define URSA_SCHED_POLICY_H

#include "sched_smp.h"

URSA_HIDDEN int  ursa__pol_init(void);
URSA_HIDDEN void ursa__pol_fini(void);
URSA_HIDDEN int  ursa__pol_vp_init(struct ursa__vp *vp);
URSA_HIDDEN void ursa__pol_vp_fini(struct ursa__vp *vp);
/* Offers the READY, unpinned thread t, about to join vp's Protect Queue (pqlen threads long), to
 * the policy's shared structure.  True when the policy took it. */
URSA_HIDDEN bool ursa__pol_offer(struct ursa__vp *vp, struct ursa__thread *t, uint32_t pqlen);
/* The rotator's interval timer, from its signal handler at a safe point (policy.c).  keep_handed:
 * leave a thread handed off by a wake-up in runq.next where it is (the VP switched often in the
 * last period). */
URSA_HIDDEN void ursa__pol_timer(struct ursa__vp *vp, bool keep_handed);
/* Gives vp's unpinned ready threads to idle VPs, one each (vp.c, "Spread"); how many it gave.
 * keep_handed: as for ursa__pol_timer. */
URSA_HIDDEN unsigned ursa__pol_spread(struct ursa__vp *vp, bool keep_handed);
/* At every switch of vp (rotator: drain VP_backward's Waiver Queue).  len: vp's Protect Queue
 * length (ursa__pq_len), which the caller has just read. */
URSA_HIDDEN void ursa__pol_switch(struct ursa__vp *vp, uint32_t len);
/* vp's Protect Queue is empty: a thread from the shared structures, or NULL. */
URSA_HIDDEN struct ursa__thread *ursa__pol_fetch(struct ursa__vp *vp);
/* Whether threads vp passed on wait in a shared structure that another VP drains into its own
 * Protect Queue (rotator: vp's Waiver Queue; lb2: any Waiver Queue); read with acquire, so a
 * caller that finds it empty sees the taker's load (policy.c, load_before_intake). */
URSA_HIDDEN bool ursa__pol_passed_on(const struct ursa__vp *vp);
/* Whether the shared structures hold work vp would take (for the sleep protocol). */
URSA_HIDDEN bool ursa__pol_has_work(struct ursa__vp *vp);
URSA_HIDDEN const char *ursa__pol_name(int policy);

/* Ready threads vp keeps before it passes the rest on: the Protect Queue's capacity, or 1 while
 * another VP is idle, so that work spreads below the capacity too. */
static inline uint32_t ursa__pol_keep(const struct ursa__vp *vp) {
  int others = __atomic_load_n(&ursa__g.idle_vps, __ATOMIC_RELAXED) - (int)vp->x->in_idle;
  return others > 0 ? 1u : ursa__g.pq_cap;
}

/* Whether ursa__pol_switch has anything to do at this switch (vp's Protect Queue holds len). */
static inline bool ursa__pol_switch_needed(const struct ursa__vp *vp, uint32_t len) {
  switch (ursa__g.policy) {
  case URSA__POL_ROTATOR: return !ursa__wq_empty(&vp->x->bwd->x->wq) || len > ursa__pol_keep(vp);
  case URSA__POL_GLOBAL:  return false;
  default:                return len > ursa__pol_keep(vp);
  }
}

/* Long queues: whether the policy's step (ursa__pol_switch at a switch, ursa__pol_create_step at
 * ursa_create) runs now, once ursa__pol_switch_needed said it has something to do.  While vp
 * holds at least 4 x the Protect Queue's capacity and no VP is idle, only every 8th time: what
 * the step decides (pass half the difference to forward(i), take in what VP_backward passed)
 * changes by a few threads of a long queue from one switch to the next, and each step reads the
 * other VPs' lines (forward(i)'s load and Waiver Queue, VP_backward's Waiver Queue, the idle
 * count), a miss whenever that VP wrote them meanwhile; and the writer's next store to the line
 * waits for it in turn.  An idle VP, or a short queue, gets the step at every switch and create
 * as before.  Measured on the distribution experiment at 2 VPs, `smp_distribution rotator 2 12
 * 2000 repeat=200` linked against the library before and after, 11 rounds (the older first in 5,
 * then in the order new, old, old, new), medians of the rounds: distributed 4.353 -> 4.270 ms,
 * the 4,096 creates on VP 0 0.221 -> 0.208 ms.  With the gate at ursa_create only (a hand-made
 * copy of the program, 4 rounds) the creates did not change (0.199-0.252 ms against
 * 0.203-0.249): what they gain is VP 1's switches, which no longer read VP 0's queue lines at
 * each of them while VP 0 writes them. */
#define URSA__STEP_LONG  4u                /* x the Protect Queue's capacity */
#define URSA__STEP_EVERY 8u                /* a power of two */
static inline bool ursa__pol_step_due(struct ursa__vp *vp, uint32_t len) {
  struct ursa__smp *x = vp->x;
  if (ursa_likely(len < URSA__STEP_LONG * ursa__g.pq_cap) || ursa__pol_keep(vp) == 1) return true;
  return (++x->step_skip & (URSA__STEP_EVERY - 1)) == 0;
}

/* The policy's step at ursa_create (policy.c): ursa__pol_switch, but batches (rotator).  len:
 * vp's Protect Queue length (ursa__pq_len), which the caller has just read. */
URSA_HIDDEN void ursa__pol_create_step(struct ursa__vp *vp, uint32_t len);

/* The Protect Queue (vp.c) */
URSA_HIDDEN void ursa__pq_push(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN uint32_t ursa__pq_len(struct ursa__vp *vp);

#endif
