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
/* At every switch of vp (rotator: drain VP_backward's Waiver Queue). */
URSA_HIDDEN void ursa__pol_switch(struct ursa__vp *vp);
/* vp's Protect Queue is empty: a thread from the shared structures, or NULL. */
URSA_HIDDEN struct ursa__thread *ursa__pol_fetch(struct ursa__vp *vp);
/* Whether the shared structures hold work vp would take (for the sleep protocol). */
URSA_HIDDEN bool ursa__pol_has_work(struct ursa__vp *vp);
URSA_HIDDEN const char *ursa__pol_name(int policy);

/* The Protect Queue (vp.c) */
URSA_HIDDEN void ursa__pq_push(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN struct ursa__thread *ursa__pq_pop(struct ursa__vp *vp);
URSA_HIDDEN uint32_t ursa__pq_len(const struct ursa__vp *vp);

#endif
