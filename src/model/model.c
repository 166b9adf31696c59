/*
 * model.c - which execution model runs (URSA_MODEL), iteration counting (ursa_tick), the
 * no-preemption section, and the deferred preemption every model-aware path ends in.
 *
 * The models (the journal paper's, section 3.1):
 *   cm     one VP, no preemption: a thread runs until it yields, waits or blocks.
 *   pcm    N VPs, no preemption; regions (src/sched/region.c) keep one thread per region running.
 *   cp-ts  N VPs, time-slicing: preempt.c's per-VP timer signal switches a thread out after a
 *          whole quantum, at a safe point only.
 *   cp-ic  N VPs, iteration counting: ursa_tick() (inline in ursa.h) calls ursa__tick while
 *          ursa__tick_flag is nonzero, and every switch_count-th call on a VP switches.
 *
 * ursa__tick_flag.  Bit 30 is set for the whole run under cp-ic; under cp-ts the low bits count
 * the VPs with a deferred preemption (vp->pre_pending), so ursa_tick becomes a safe point while
 * one waits and costs a load and a branch otherwise.  Written with atomic read-modify-writes (by
 * signal handlers too); ursa_tick reads it relaxed: a stale zero only delays a deferred
 * preemption to the next safe point.
 *
 * Involuntary switches keep the thread on its VP (ursa__preempt_switch pins it across the yield):
 * the code it was interrupted in may hold the address of this kernel thread's errno or __thread
 * variables at any instruction.  A region member may still move with its region.
 *
 * Who calls what: ursa__tick, ursa_preempt_* and the API from ursa threads; ursa__preempt_switch
 * and ursa__pending_set also from the cp-ts signal handler, on the VP's own kernel thread.
 */
#define _GNU_SOURCE
#include "model.h"
#include "../sched/sched_smp.h"
#include "../sched/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URSA__TICK_IC (1 << 30)

int ursa__tick_flag;

static const char *const names[] = { "?", "cm", "pcm", "cp-ts", "cp-ic" };

const char *ursa_model_name(int model) {
  return model >= URSA_MODEL_CM && model <= URSA_MODEL_CP_IC ? names[model] : names[0];
}

int ursa_model(void) { return ursa__g.initialized ? ursa__g.model : 0; }

int32_t ursa__ic_start(void) { return ursa__g.model == URSA_MODEL_CP_IC ? ursa__g.switch_count : 1; }

/* ---- configuration ---------------------------------------------------------------------------- */

static int env_model(void) {
  static const char *const words[] = { NULL, "cm", "pcm", "cp-ts", "cp-ic" };   /* URSA_MODEL_* */
  return ursa__env_word("URSA_MODEL", words, URSA_MODEL_CP_IC + 1, 0);
}

/* A number in [lo, hi] from the environment, 0 when unset or (with a warning) bad. */
#define QUANTUM_MIN_US 100ul
#define QUANTUM_MAX_US 10000000ul
#define SWITCH_COUNT_MAX 2147483647ul

int ursa__model_config(ursa_config_t *c, const ursa_config_t *given) {
  unsigned long q = c->quantum_us, n = c->switch_count;
  if (c->model == 0) c->model = env_model();
  else if (c->model < URSA_MODEL_CM || c->model > URSA_MODEL_CP_IC) return -EINVAL;
  if (q == 0) q = ursa__env_number("URSA_QUANTUM_US", QUANTUM_MIN_US, QUANTUM_MAX_US, 0);
  else if (q < QUANTUM_MIN_US || q > QUANTUM_MAX_US) return -EINVAL;
  if (n == 0) n = ursa__env_number("URSA_SWITCH_COUNT", 1, SWITCH_COUNT_MAX, 0);
  if (c->model == URSA_MODEL_CM) {
    if (c->vps > 1) {
      fprintf(stderr, "ursa: the cm model runs one VP, but %s asks for %u\n",
              given && given->vps ? "ursa_config_t.vps" : "URSA_VPS", c->vps);
      return -EINVAL;
    }
    c->vps = 1;
  }
  if (c->model == URSA_MODEL_CP_TS && !ursa__g.explore && ursa__ts_check() != 0) return -ENOTSUP;
  ursa__g.quantum_ns = (q ? q : 10000ul) * 1000u;
  ursa__g.switch_count = (int32_t)(n ? n : 10000ul);
  return 0;
}

/* The scheduler's hooks (sched.h): what a VP 1..N-1 does at its start and stop, and around its
 * waits in the kernel. */
static void vp_start(struct ursa__vp *vp) {
  vp->ic_left = ursa__ic_start();                      /* ursa__tick's countdown */
  if (ursa__g.model == URSA_MODEL_CP_TS && ursa__sigtimer_start(vp, URSA__SIGTIMER_TS) != 0)
    fprintf(stderr, "ursa: cp-ts: VP %u has no timer (timer_create failed): its threads are not "
                    "time-sliced\n", vp->index);
  if (ursa__g.rotate_ns && ursa__sigtimer_start(vp, URSA__SIGTIMER_ROT) != 0)   /* URSA_ROTATE_US */
    fprintf(stderr, "ursa: URSA_ROTATE_US: VP %u has no interval timer (timer_create failed)\n", vp->index);
}
static void vp_stop(struct ursa__vp *vp) {
  ursa__sigtimer_stop(vp, URSA__SIGTIMER_ROT);
  ursa__sigtimer_stop(vp, URSA__SIGTIMER_TS);
}
static void vp_idle(struct ursa__vp *vp, int sleep) {
  ursa__sigtimer_idle(vp, sleep);
}

int ursa__model_start(struct ursa__vp *vp0) {
  ursa__model_hooks.vp_start = vp_start;
  ursa__model_hooks.vp_stop = vp_stop;
  ursa__model_hooks.idle = vp_idle;
  ursa__model_hooks.deferred = ursa__preempt_deferred;
  if (ursa__g.model == 0) ursa__g.model = ursa__g.nvps > 1 ? URSA_MODEL_PCM : URSA_MODEL_CM;
  __atomic_store_n(&ursa__tick_flag, ursa__g.model == URSA_MODEL_CP_IC ? URSA__TICK_IC : 0, __ATOMIC_RELAXED);
  vp0->ic_left = ursa__ic_start();
  if (ursa__g.model == URSA_MODEL_CP_TS && !ursa__g.explore) {   /* exploration: no signals (explore.c) */
    int err = ursa__sigtimer_install(URSA__SIGTIMER_TS);
    if (err != 0) return err;
  }
  return ursa__g.rotate_ns ? ursa__sigtimer_install(URSA__SIGTIMER_ROT) : 0;   /* URSA_ROTATE_US */
}

int ursa__model_go(struct ursa__vp *vp0) {
  int err;
  if (ursa__g.model == URSA_MODEL_CP_TS && !ursa__g.explore && (err = ursa__sigtimer_start(vp0, URSA__SIGTIMER_TS)) != 0) return err;
  if (ursa__g.rotate_ns && (err = ursa__sigtimer_start(vp0, URSA__SIGTIMER_ROT)) != 0) return err;
  if ((ursa__g.model == URSA_MODEL_CP_TS && !ursa__g.explore) || ursa__g.rotate_ns)
    __atomic_store_n(&ursa__g.preempt_live, 1, __ATOMIC_RELAXED);   /* the handlers act */
  return 0;
}

/* fork, one VP: the child keeps the runtime but not the parent's POSIX timers (fork does not
 * inherit them): forget their ids (they may name the child's own timers later) and make cp-ts's
 * timer again for the child's kernel thread.  Runs in the child's fork handler. */
void ursa__model_atfork_child(struct ursa__vp *vp) {
  uint8_t on = vp->timers_on;
  __atomic_store_n(&vp->timers_on, (uint8_t)0, __ATOMIC_RELAXED);
  if (on & (1u << URSA__SIGTIMER_TS)) (void)ursa__sigtimer_start(vp, URSA__SIGTIMER_TS);
}

void ursa__model_stop(struct ursa__vp *vp0) {
  __atomic_store_n(&ursa__g.preempt_live, 0, __ATOMIC_RELAXED);
  ursa__sigtimer_stop(vp0, URSA__SIGTIMER_ROT);
  ursa__sigtimer_uninstall(URSA__SIGTIMER_ROT);
  ursa__sigtimer_stop(vp0, URSA__SIGTIMER_TS);
  ursa__sigtimer_uninstall(URSA__SIGTIMER_TS);
  __atomic_store_n(&ursa__tick_flag, 0, __ATOMIC_RELAXED);
}

/* ---- preemption ------------------------------------------------------------------------------- */

void ursa__pending_set(struct ursa__vp *vp, int on) {
  /* exchanges: the signal handler may set it between this thread's load and store */
  if (on) {
    if (__atomic_exchange_n(&vp->pre_pending, 1, __ATOMIC_RELAXED) == 0) {
      vp->pending_sw = __atomic_load_n(&vp->stats.switches, __ATOMIC_RELAXED);
      __atomic_add_fetch(&ursa__tick_flag, 1, __ATOMIC_RELAXED);
    }
  } else if (__atomic_exchange_n(&vp->pre_pending, 0, __ATOMIC_RELAXED) != 0) {
    __atomic_sub_fetch(&ursa__tick_flag, 1, __ATOMIC_RELAXED);
  }
}

/* With another VP idle (src/sched/vp.c, "Spread"): the ready threads go there and the running one
 * goes on here; or, when they cannot move (pinned: preempted before), the running one goes there
 * itself if the preemption came at a call site; in a signal handler it cannot (see top), so the
 * preemption is deferred once to the thread's next call site.  Whether the preemption is done. */
static bool preempt_spread(struct ursa__vp *vp, struct ursa__thread *cur, bool at_call) {
  struct ursa__vp *to;
  if (vp->mode != URSA__SMPMODE || ursa__smp_idle_vp(vp) == NULL) return false;
  ursa__pol_spread(vp, false);
  if (!ursa__smp_has_work(vp) && __atomic_load_n(&vp->ntimers, __ATOMIC_RELAXED) == 0) {
    cur->hog = 1;                                    /* nothing waits here any more: go on */
    return true;
  }
  if (cur->region != NULL || cur->pinned || (to = ursa__smp_idle_vp(vp)) == NULL) return false;
  if (!at_call) {
    if (vp->spread_deferred) { vp->spread_deferred = 0; return false; }   /* once: no starving */
    vp->spread_deferred = 1;
    ursa__pending_set(vp, 1);                        /* at its next ursa call or ursa_tick */
    return true;
  }
  vp->spread_deferred = 0;
  cur->hog = 1;
  vp->stats.preemptions++;
  if (URSA__TRACING()) ursa__trace_preempt(vp, cur);
  ursa__smp_yield_away(vp, to);
  return true;
}

struct ursa__vp *ursa__preempt_switch(struct ursa__vp *vp, bool at_call) {
  struct ursa__thread *cur = vp->cur;
  uint8_t pinned = cur->pinned;
  struct ursa__vp *home = cur->home, *now;
  uint64_t sw = vp->stats.switches;
  if (preempt_spread(vp, cur, at_call)) return ursa__vp_current();
  if (!pinned) { cur->pinned = URSA__PIN_WHILE; cur->home = vp; }  /* resume on this kernel thread (see top) */
  if (URSA__TRACING()) ursa__trace_preempt(vp, cur);   /* URSA_TRACE: the slice ends by preemption */
  ursa__yield_involuntary(vp);
  now = ursa__vp_current();                          /* vp, unless cur's region moved */
  if (!pinned) { cur->pinned = URSA__PIN_NONE; cur->home = home; }
  if (now != vp || now->stats.switches != sw) now->stats.preemptions++;   /* another thread ran */
  if (now->mode == URSA__SMPMODE) cur->hog = 1;      /* a whole quantum or count: a long runner */
  return now;
}

void ursa__preempt_deferred(struct ursa__vp *vp) {
  struct ursa__thread *cur = vp->cur;
  ursa__pending_set(vp, 0);
  if (vp->stats.switches != vp->pending_sw) return;   /* it has switched since: nothing is owed */
  if (cur->preempt_off) { ursa__pending_set(vp, 1); return; }   /* at ursa_preempt_enable */
  ursa__preempt_switch(vp, true);
}

/* The fast part is the countdown: under cp-ic vp->ic_left starts at switch_count; under the other
 * models it stays 1, so the rare calls (a preemption is pending) all reach the rest.  Aligned to a
 * cache line, so that the countdown (36 bytes of x86-64) never straddles two: under cp-ic a
 * program calls it at every loop back-edge, and where the linker happened to place it decided
 * ~8% of the CP producer/consumer's time at one VP (0.1816 -> 0.1965 s, 8 interleaved runs, for
 * a change elsewhere that moved it by 32 bytes, across a line). */
URSA_HOT_ALIGN void ursa__tick(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (ursa_unlikely(vp == NULL)) return;
  if (ursa_likely(--vp->ic_left > 0)) return;
  if (ursa__g.model != URSA_MODEL_CP_IC || ursa__g.explore) {   /* exploration: every tick is a point */
    vp->ic_left = 1;
    ursa__preempt_point(vp);
    return;
  }
  vp->ic_left = ursa__g.switch_count;
  vp->stats.ticks += (uint64_t)ursa__g.switch_count;  /* counted a whole round at a time */
  if (vp->cur->preempt_off) { ursa__pending_set(vp, 1); return; }   /* at ursa_preempt_enable */
  ursa__preempt_switch(vp, true);
}

int ursa_preempt_disable(void) {
  URSA_VP_OR_RETURN(vp);
  vp->cur->preempt_off++;
  return 0;
}

int ursa_preempt_enable(void) {
  struct ursa__thread *cur;
  URSA_VP_OR_RETURN(vp);
  cur = vp->cur;
  if (cur->preempt_off == 0) return -EPERM;
  if (--cur->preempt_off == 0) ursa__preempt_point(vp);
  return 0;
}

int ursa_require_cooperative(void) {
  if (ursa__tls_vp == NULL) return ursa__novp();     /* before ursa_init, or not an ursa thread */
  if (ursa__g.model == URSA_MODEL_CP_TS || ursa__g.model == URSA_MODEL_CP_IC) {
    fprintf(stderr, "ursa: this program is written for cooperative execution (shared variables "
                    "without locks) and must not run under the preemptive model %s; run it with "
                    "URSA_MODEL=cm or URSA_MODEL=pcm\n", ursa_model_name(ursa__g.model));
    return -ENOTSUP;
  }
  return 0;
}
