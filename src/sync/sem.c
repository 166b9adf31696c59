/*
 * sem.c - counting semaphores (P = wait, V = post).
 *
 * Protocol: a post with waiters hands its unit straight to the first waiter (FIFO) and makes it
 * READY; the value is not incremented, so the woken thread never has to check again and a later
 * P cannot overtake it.  A post never switches.  A timed-out waiter has been removed from the
 * queue by its timer (sched.c), so no unit is ever lost to it.
 * With several VPs every operation holds the semaphore's lock (src/core/vp.h, ursa__olock: not
 * written while every other VP sleeps; the solo wait and post below do not even note it).
 * The wait is one "take or queue" step, shared by ursa_sem_wait and the waiter interface
 * (waiter.h), which queues a call waiter in the place of the calling thread.
 * Executed only by ursa threads.
 */
#include "sync.h"
#include "waiter.h"

#define URSA__SEM_MAGIC 0x53454d31u

struct ursa__sem {
  uint32_t           magic;
  uint32_t           value;
  struct ursa__waitq q;                     /* waiters, FIFO */
  ursa__spin_t       lock;                  /* several VPs: guards value and q */
};
URSA__STATIC_ASSERT_FITS(struct ursa__sem, ursa_sem_t);

#define SEM_OR_RETURN(x, s) URSA__OBJ_OR_RETURN(struct ursa__sem, x, s, URSA__SEM_MAGIC, false)

int ursa_sem_init(ursa_sem_t *s, unsigned value) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__sem *x = (struct ursa__sem *)s;
  if (x == NULL || value > URSA_SEM_VALUE_MAX) return -EINVAL;
  x->magic = URSA__SEM_MAGIC;
  x->value = value;
  x->q.head = x->q.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_sem_destroy(ursa_sem_t *s) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  SEM_OR_RETURN(x, s);
  ursa__olock(ursa__tls_vp, &x->lock);
  if (!ursa__q_empty(&x->q)) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EBUSY; }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

/* The one wait (ursa_sem_wait, ursa__sem_wait_waiter): 0 when a unit was taken, or 1 with w
 * queued and x's lock still held (a post hands w its unit).  w NULL: the calling thread's (read
 * only when it queues, which keeps the fast path's registers free). */
static URSA__ALWAYS_INLINE int sem_take_or_queue(struct ursa__vp *vp, struct ursa__sem *x, struct ursa__waiter *w,
                                                 uint64_t deadline, const bool smp) {
  vp->stats.p_ops++;
  if (smp) ursa__olock_smp(vp, &x->lock);
  if (ursa_likely(x->value > 0)) {
    x->value--;
    if (smp) ursa__ounlock_smp(vp, &x->lock);
    return 0;
  }
  vp->stats.p_blocking++;
  ursa__q_push_wait(&x->q, w ? w : &vp->cur->w, deadline);
  return 1;
}

static URSA__ALWAYS_INLINE int sem_wait_(struct ursa__vp *vp, struct ursa__sem *x, uint64_t deadline, const int mode) {
  if (ursa_likely(sem_take_or_queue(vp, x, NULL, deadline, mode == URSA__SMPMODE) == 0)) return 0;
  return ursa__block_m(mode, vp, URSA__W_SEM, x, &x->lock, deadline);   /* 0: a post handed us its unit */
}

/* One VP, traced, cp-ts or explored: a unit taken without waiting ends in a preemption point (a
 * scheduling point of the exploration).  Apart from the SMP copy, whose code it left unchanged
 * (inline there, it cost the 2-VP ring 6 instructions per pass). */
static URSA_NOINLINE int sem_wait_checked(struct ursa__vp *vp, struct ursa__sem *x, uint64_t deadline) {
  if (sem_take_or_queue(vp, x, NULL, deadline, false) == 0) {
    ursa__preempt_point(vp);
    return 0;
  }
  return ursa__block_m(URSA__CHECKED, vp, URSA__W_SEM, x, &x->lock, deadline);
}

/* The checked copies are separate functions, so the fast path needs no stack frame. */
static URSA_NOINLINE int sem_wait_slow(struct ursa__vp *vp, struct ursa__sem *x, uint64_t deadline) {
  if (vp->mode == URSA__SMPMODE) return sem_wait_(vp, x, deadline, URSA__SMPMODE);
  return sem_wait_checked(vp, x, deadline);
}

/* Every mode but the fast one comes here first (the fast path keeps its one test).  Several VPs
 * while this one is solo (every other VP sleeps until this one kicks it: core/vp.h): the wait
 * without a deadline, with the semaphore's lock not even noted.  ursa__olock_smp notes a
 * lock it elides so that a kick inside the critical section can make it real (ursa__solo_end);
 * here nothing between the elided lock and the release (ursa__smp_block_solo, before its pick) can
 * kick, so there is nothing to make real.  The instructions of the noting and of its release are
 * what the 2-VP thread-ring spent on the lock (issue #20).  Frameless: every call is a tail call. */
static URSA_NOINLINE URSA_HOT_ALIGN int sem_wait_solo(struct ursa__vp *vp, struct ursa__sem *x) {
  struct ursa__thread *cur;
  if (ursa_unlikely(!vp->solo_path || !ursa__solo()))   /* (core/vp.h) */
    return sem_wait_slow(vp, x, 0);
  vp->stats.p_ops++;
  if (ursa_likely(x->value > 0)) {
    x->value--;
    return 0;
  }
  vp->stats.p_blocking++;
  cur = vp->cur;
  ursa__q_push(&x->q, &cur->w);
  cur->timer_vp = NULL;                                /* (ursa__block_m's SMP path, no deadline) */
  return ursa__smp_block_solo(vp, URSA__W_SEM, x);     /* no lock to release */
}

/* The untimed wait's solo copy takes no deadline: no argument to set, none to test. */
URSA_HOT_ALIGN int ursa_sem_wait(ursa_sem_t *s) {
  SEM_OR_RETURN(x, s);
  URSA_VP_OR_RETURN(vp);
  if (ursa_unlikely(vp->mode != URSA__FAST)) return sem_wait_solo(vp, x);   /* or slow */
  return sem_wait_(vp, x, 0, URSA__FAST);
}

int ursa_sem_timedwait(ursa_sem_t *s, int clock, const struct timespec *abstime) {
  uint64_t d;
  int err = ursa__deadline(clock, abstime, &d);
  if (err) return err;
  {
    SEM_OR_RETURN(x, s);
    URSA_VP_OR_RETURN(vp);
    if (ursa_unlikely(vp->mode != URSA__FAST)) return sem_wait_slow(vp, x, d);
    return sem_wait_(vp, x, d, URSA__FAST);
  }
}

/* The waiter interface (waiter.h). */
int ursa__sem_wait_waiter(ursa_sem_t *s, struct ursa__waiter_call *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  const bool smp = vp->mode == URSA__SMPMODE;
  SEM_OR_RETURN(x, s);
  c->w.wait_obj = x;
  if (sem_take_or_queue(vp, x, &c->w, 0, smp) == 0) return 0;
  if (smp) ursa__ounlock_smp(vp, &x->lock);
  return 1;
}

int ursa_sem_trywait(ursa_sem_t *s) {
  SEM_OR_RETURN(x, s);
  URSA_VP_OR_RETURN(vp);
  vp->stats.p_ops++;
  ursa__olock(vp, &x->lock);
  if (x->value == 0) { ursa__ounlock(vp, &x->lock); return -EAGAIN; }
  x->value--;
  ursa__ounlock(vp, &x->lock);
  return 0;
}

static URSA__ALWAYS_INLINE int sem_post_(struct ursa__vp *vp, struct ursa__sem *x, const int mode) {
  const bool smp = mode == URSA__SMPMODE;
  if (smp) ursa__olock_smp(vp, &x->lock);
  if (ursa__q_wake_first_m(mode, &x->q, 0)) {
    if (smp) ursa__ounlock_smp(vp, &x->lock);
    return 0;
  }
  if (x->value >= URSA_SEM_VALUE_MAX) { if (smp) ursa__ounlock_smp(vp, &x->lock); return -EOVERFLOW; }
  x->value++;
  if (smp) ursa__ounlock_smp(vp, &x->lock);
  return 0;
}

/* The checked copies (several VPs, tracing, cp-ts) end in the preemption point (src/model/). */
static URSA_NOINLINE int sem_post_slow(struct ursa__sem *x, struct ursa__vp *vp) {
  int r = (vp->mode == URSA__SMPMODE) ? sem_post_(vp, x, URSA__SMPMODE) : sem_post_(vp, x, URSA__CHECKED);
  ursa__preempt_point(vp);
  return r;
}

/* Several VPs while this one is solo: the post whose waiter takes the common hand-off (or that
 * finds no waiter), with the lock not even noted, as sem_wait_solo says; everything else (a call
 * waiter, a timed waiter, a wake-up that ready_slow decides, which may kick another VP while the
 * lock is held, tracing, a deferred preemption) goes to sem_post_slow.  A deferred preemption
 * flagged after the test is taken at the next preemption point. */
/* (x first: the entry has it in the first argument's register already) */
static URSA_NOINLINE URSA_HOT_ALIGN int sem_post_solo(struct ursa__sem *x, struct ursa__vp *vp) {
  struct ursa__waiter *w;
  struct ursa__thread *t;
  if (ursa_unlikely(!vp->solo_path || !ursa__solo() || __atomic_load_n(&vp->pre_pending, __ATOMIC_RELAXED)))
    return sem_post_slow(x, vp);                       /* (solo_path: SMP, hand-off, no trace) */
  w = x->q.head;
  if (w == NULL) {
    if (ursa_unlikely(x->value >= URSA_SEM_VALUE_MAX)) return sem_post_slow(x, vp);
    x->value++;
    return 0;
  }
  /* heap_idx != 0: a call waiter (URSA__WAITER_CALL) or a thread whose timer is armed.  While
   * this VP is solo that is every waiter with a timer, so timer_vp (on a colder line of the
   * descriptor) need not be read: a VP whose heap holds a timer sleeps with a deadline and is not
   * counted in sleepers (src/sched/vp.c, "Solo"), and a timer that fired on this VP took its
   * thread off the queue and cleared timer_vp in the same step (ursa__smp_timers_fire). */
  if (ursa_unlikely(__atomic_load_n(&w->heap_idx, __ATOMIC_RELAXED) != 0)) return sem_post_slow(x, vp);
  t = ursa__thread_of(w);
  URSA_ASSERT(t->timer_vp == NULL);
  if (ursa_unlikely(!ursa__smp_handoff_fits(vp, t))) return sem_post_slow(x, vp);   /* (layout: the hand-off falls through) */
  x->q.head = w->qnext;                                /* ursa__q_pop, with w known */
  if (x->q.head) x->q.head->qprev = NULL; else x->q.tail = NULL;
  t->w.wake_result = 0;                                /* as ursa__smp_wake_fast */
  ursa__set_state(t, URSA__READY);
  ursa__smp_handoff(vp, t);
  return 0;
}

URSA_HOT_ALIGN int ursa_sem_post(ursa_sem_t *s) {
  SEM_OR_RETURN(x, s);
  URSA_VP_OR_RETURN(vp);
  if (ursa_unlikely(vp->mode != URSA__FAST)) return sem_post_solo(x, vp);   /* or slow */
  return sem_post_(vp, x, URSA__FAST);
}

int ursa_sem_getvalue(ursa_sem_t *s, int *value) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  SEM_OR_RETURN(x, s);
  if (value == NULL) return -EINVAL;
  ursa__olock(ursa__tls_vp, &x->lock);        /* value changes under the lock (plain, hot) */
  *value = (int)x->value;                       /* a snapshot, stale once the lock is let go */
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}
