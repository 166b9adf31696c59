/*
 * model.h - the execution models (CM, PCM, CP by time-slicing, CP by iteration counting) as the
 * rest of the core sees them: setup calls for ursa_init/ursa_fini and the VPs, and the preemption
 * points.  model.c chooses the model and implements ursa_tick and the disable/enable section;
 * preempt.c implements cp-ts (the per-VP timer and its signal handler).
 */
#ifndef URSA_MODEL_H
#define URSA_MODEL_H

#include "../sched/sched.h"

/* ---- model.c ---- */
/* Resolves c->model from the config and URSA_MODEL, checks it against c->vps (cm: one VP) and
 * fills quantum and switch count; sets c->vps when the model decides it.  -EINVAL for a bad
 * config value (a bad environment value is ignored with a warning), -ENOTSUP for cp-ts where
 * it cannot be safe (see preempt.c). */
URSA_HIDDEN int  ursa__model_config(ursa_config_t *c, const ursa_config_t *given);
/* After VP 0 exists (before VPs 1..N-1 start): installs the signal handler. */
URSA_HIDDEN int  ursa__model_start(struct ursa__vp *vp0);
/* At the end of ursa_init: starts VP 0's timer, and the handler starts acting on ticks (until
 * then, and from the start of ursa_fini, it ignores them: the VPs' state is not all there). */
URSA_HIDDEN int  ursa__model_go(struct ursa__vp *vp0);
/* The first value of vp->ic_left (ursa__tick's countdown) for a VP. */
URSA_HIDDEN int32_t ursa__ic_start(void);
/* ursa_fini, and a failing ursa_init. */
URSA_HIDDEN void ursa__model_stop(struct ursa__vp *vp0);
/* In the child of a fork at one VP (src/runtime/): the timers are the parent's; remakes cp-ts's. */
URSA_HIDDEN void ursa__model_atfork_child(struct ursa__vp *vp);

/* The hook behind ursa__preempt_point (sched.h): takes the deferred preemption. */
URSA_HIDDEN void ursa__preempt_deferred(struct ursa__vp *vp);
/* Switches the running thread out involuntarily (a time slice or a tick count ended): a yield that
 * keeps the thread on this VP, since the compiled code it was interrupted in may hold addresses
 * of this kernel thread's TLS (errno, __thread).  Counts a preemption when another thread ran.
 * With another VP idle it spreads instead (model.c, preempt_spread); at_call: the preemption
 * comes at a call into ursa (cp-ic's count, a deferred one), where the thread may move, as at any
 * ursa call; false in cp-ts's signal handler.
 * Returns the VP the thread runs on now (vp, unless its region moved meanwhile). */
URSA_HIDDEN struct ursa__vp *ursa__preempt_switch(struct ursa__vp *vp, bool at_call);
/* Sets or clears vp->pre_pending, keeping ursa__tick_flag's count of pending VPs. */
URSA_HIDDEN void ursa__pending_set(struct ursa__vp *vp, int on);

/* ---- preempt.c (cp-ts) ---- */
URSA_HIDDEN int  ursa__ts_check(void);                     /* -ENOTSUP with a message if unsafe  */
/* Sets ursa__g.rotate_ns (0: no tick) from the config's rotate_us (0: URSA_ROTATE_US, else the
 * default; URSA_ROTATE_OFF: none); -EINVAL / -ENOTSUP when the config asked for what cannot be had
 * (the default is quietly off where it cannot be had). */
URSA_HIDDEN int  ursa__rot_config(unsigned rotate_us, int given);
#define URSA__ROTATE_DEFAULT_US 1000u                /* the balancing tick's period by default */
/* The per-VP signal timers, one facility for both kinds (preempt.c says who calls what). */
enum { URSA__SIGTIMER_TS = 0, URSA__SIGTIMER_ROT = 1 };   /* index of vp->sigtimer, bit of timers_on */
URSA_HIDDEN int  ursa__sigtimer_install(int kind);        /* the handler, once per ursa_init    */
URSA_HIDDEN void ursa__sigtimer_uninstall(int kind);
URSA_HIDDEN int  ursa__sigtimer_start(struct ursa__vp *vp, int kind);   /* on vp's own kernel thread */
URSA_HIDDEN void ursa__sigtimer_stop(struct ursa__vp *vp, int kind);
URSA_HIDDEN void ursa__sigtimer_idle(struct ursa__vp *vp, int sleep);  /* every kind of vp       */

#endif
