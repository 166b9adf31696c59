/*
 * sched.h - the scheduler's interface to the layers above it (src/model/, src/sync/, src/pt/,
 * src/runtime/): wait queues, the run queue, switch, block and wake, thread life, timers and
 * regions.  Below it is src/core/ (data types, stacks, trace); nothing here calls upward.
 */
#ifndef URSA_SCHED_H
#define URSA_SCHED_H

#include "../core/vp.h"
#include "../core/trace.h"
#include "../core/stack.h"
#include "../core/backtrace.h"
#include "waiter.h"

#include <string.h>                               /* memcpy (ursa__smp_runs_here) */

/* ---- wait queues (queue.h-style inline helpers) -----------------------------------------------
 * A wait queue holds waiters (core/thread.h): a thread's (&t->w) or a call waiter.  An object of
 * src/sync/ has one operation per kind of wait that takes the caller's unit or queues a waiter,
 * and the blocking call and the call-waiter entry (the waiter interface, src/sched/waiter.h) both
 * use it: the wait is written once. */
static inline bool ursa__q_empty(const struct ursa__waitq *q) { return q->head == NULL; }

/* Appends w.  w->waitq is left as it was: it is read only for a thread whose wait has a timer (to
 * leave its queue on timeout), and every timed wait records it first (ursa__q_push_wait, or NULL
 * for a sleep or a park), so an untimed wait spends no store on it. */
static inline void ursa__q_push(struct ursa__waitq *q, struct ursa__waiter *w) {
  w->qnext = NULL;
  w->qprev = q->tail;
  if (q->tail) q->tail->qnext = w; else q->head = w;
  q->tail = w;
}
/* Appends w for a wait that ends at deadline (0: none, and nothing more than ursa__q_push). */
static inline void ursa__q_push_wait(struct ursa__waitq *q, struct ursa__waiter *w, uint64_t deadline) {
  ursa__q_push(q, w);
  if (deadline != 0) w->waitq = q;
}

/* Pop and remove leave w->waitq as it was (see ursa__q_push). */
static inline struct ursa__waiter *ursa__q_pop(struct ursa__waitq *q) {
  struct ursa__waiter *w = q->head;
  if (w) {
    q->head = w->qnext;
    if (q->head) q->head->qprev = NULL; else q->tail = NULL;
  }
  return w;
}

/* Takes the first waiter of q that the caller may wake, NULL when none; the caller holds the
 * object's lock.  With several VPs a thread's timed wait may have been claimed by its timer (which
 * then removes it from q itself and wakes it with -ETIMEDOUT): such a waiter is passed over, so a
 * post, unlock or put goes to a waiter that will see it.  A call waiter has no timer of the core.
 * Claim protocol: src/sched/vp.c. */
URSA_HIDDEN bool ursa__claim_for_waker(struct ursa__thread *t);
static inline struct ursa__waiter *ursa__q_take_m(int mode, struct ursa__waitq *q) {
  struct ursa__waiter *w;
  if (ursa_likely(mode != URSA__SMPMODE)) return ursa__q_pop(q);   /* one VP: timers fire here, in order */
  while ((w = ursa__q_pop(q)) != NULL) {
    if (ursa_unlikely(ursa__waiter_is_call(w))) return w;
    if (ursa_likely(ursa__thread_of(w)->timer_vp == NULL) || ursa__claim_for_waker(ursa__thread_of(w)))
      return w;
  }
  return NULL;
}
static inline struct ursa__waiter *ursa__q_take(const struct ursa__vp *vp, struct ursa__waitq *q) {
  return ursa__q_take_m(vp->mode, q);
}

static inline void ursa__q_remove(struct ursa__waitq *q, struct ursa__waiter *w) {
  if (w->qprev) w->qprev->qnext = w->qnext; else q->head = w->qnext;
  if (w->qnext) w->qnext->qprev = w->qprev; else q->tail = w->qprev;
}

/* ---- run queue --------------------------------------------------------------------------------- */

/* The run queue's order is `next` (when set) and then the ring.  `next` is filled only while the
 * ring is empty, so it always holds the oldest ready thread and FIFO order is kept; a hand-off
 * between two threads (a post and a wait, a ping-pong of yields) then never touches the ring. */

/* Appends the READY thread t.  Executed only by the owning VP. */
static inline void ursa__runq_push(struct ursa__vp *vp, struct ursa__thread *t) {
  struct ursa__runq *q = &vp->runq;
  URSA_ASSERT_OWNER(vp);
  if (q->next == NULL && q->head == q->tail) {
    q->next = t;
    return;
  }
  URSA_ASSERT(q->tail - q->head <= q->mask);
  t->w.rq_pos = q->tail;
  q->buf[q->tail++ & q->mask] = t;
}

/* Removes and returns the first thread, NULL when none.  Executed only by the owning VP. */
static inline struct ursa__thread *ursa__runq_pop(struct ursa__vp *vp) {
  struct ursa__runq *q = &vp->runq;
  URSA_ASSERT_OWNER(vp);
  struct ursa__thread *t = q->next;
  if (t != NULL) {
    q->next = NULL;
    return t;
  }
  if (q->head == q->tail) return NULL;
  return q->buf[q->head++ & q->mask];
}

static inline bool ursa__runq_empty(const struct ursa__vp *vp) {
  return vp->runq.next == NULL && vp->runq.head == vp->runq.tail;
}

static inline uint32_t ursa__runq_len(const struct ursa__vp *vp) {
  return (vp->runq.next != NULL) + (vp->runq.tail - vp->runq.head);
}

/* Puts the READY thread `in` where the READY thread `out` is, and takes `out` off the queue. */
static inline void ursa__runq_replace(struct ursa__vp *vp, struct ursa__thread *out, struct ursa__thread *in) {
  struct ursa__runq *q = &vp->runq;
  URSA_ASSERT_OWNER(vp);
  if (q->next == out) {
    q->next = in;
    return;
  }
  in->w.rq_pos = out->w.rq_pos;
  q->buf[out->w.rq_pos & q->mask] = in;
}

/* ---- scheduler (sched.c) ---------------------------------------------------------------------- */

#if URSA_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if URSA_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* Everything a switch from `from` (vp->cur) to `to` does before the jump.  `from` must already be
 * where it belongs (run queue, a wait queue, or ZOMBIE).  The _raw version leaves out the trace's
 * hook: URSA__SWITCH_RETURN tests the flag itself (see there).  Always inlined: under TSan an
 * out-of-line copy would pop its own shadow-stack frame after __tsan_switch_to_fiber, that is from
 * the target's fiber (GCC outlined it once sched.c had two callers). */
static inline __attribute__((always_inline)) void ursa__switch_prepare_raw(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to) {
  from->saved_errno = *vp->errno_p;                           /* errno is per ursa thread */
  *vp->errno_p = to->saved_errno;
#if URSA_TSAN
  __tsan_release(from);                      /* the switch's on-CPU clearing store, for TSan:
                                                pairs with __tsan_acquire in ursa__oncpu_wait */
#endif
  ursa__set_state(to, URSA__RUNNING);
  vp->cur = to;
  vp->stats.switches++;
#if URSA_ASAN
  __sanitizer_start_switch_fiber(from->state == URSA__ZOMBIE ? NULL : &from->asan_fake,
                                 to->stack_lo, to->stack_size);
#endif
#if URSA_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
}
static inline __attribute__((always_inline)) void ursa__switch_prepare(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to) {
  if (URSA__TRACING()) ursa__trace_switch(vp, from, to);     /* URSA_TRACE (trace.c) */
  ursa__switch_prepare_raw(vp, from, to);
}

/* TSan: the last switch of a finished thread (ZOMBIE, on an ursa stack) is made by
 * ursa__thread_entry, which is reached again by a longjmp (sched.c says why).  Never returns. */
#if URSA_TSAN
URSA_HIDDEN void ursa__tsan_last_switch(struct ursa__thread *from, struct ursa__thread *to)
  __attribute__((noreturn));
#  define URSA__TSAN_LAST_SWITCH(from, to)                                                \
     do {                                                                                 \
       if (ursa__get_state(from) == URSA__ZOMBIE && !(from)->own_stack)                   \
         ursa__tsan_last_switch(from, to);                                                \
     } while (0)
#else
#  define URSA__TSAN_LAST_SWITCH(from, to) ((void)0)
#endif

/* Switches from `from` to `to` and returns, from the function that uses it, the wake result of
 * `from` once something switches back.  The jump carries the resumed thread's wake result as its
 * arg, so nothing has to run after the jump: without sanitizers the jump is a tail call, and the
 * resumed thread returns straight to its caller.  (Measured: a switch that ends in a tail call
 * keeps the return-address predictor in step; one more return level after the jump cost ~2x.) */
#if URSA_ASAN
#  define URSA__SWITCH_RETURN_RAW(vp, from, to)                                           \
     do {                                                                                 \
       int r_;                                                                            \
       ursa__switch_prepare_raw(vp, from, to);                                                  \
       r_ = ursa__ctx_switch((from), (to), (to)->w.wake_result);           \
       __sanitizer_finish_switch_fiber((from)->asan_fake, NULL, NULL);                    \
       return r_;                                                                         \
     } while (0)
#else
#  define URSA__SWITCH_RETURN_RAW(vp, from, to)                                           \
     do {                                                                                 \
       URSA__TSAN_LAST_SWITCH(from, to);                                                  \
       ursa__switch_prepare_raw(vp, from, to);                                                  \
       return ursa__ctx_switch((from), (to), (to)->w.wake_result);         \
     } while (0)
#endif
/* The trace's hook on the tail-called switch paths: when tracing, the whole switch is done by
 * ursa__switch_traced (trace.c), itself tail-called.  A call to the recorder before the switch
 * would keep `from` and `to` live across it, and the compiler then saves two callee-saved
 * registers on every switch (measured: ursa_yield gained two pushes and two pops); this way the
 * untraced path pays only the load and the branch. */
URSA_HIDDEN int ursa__switch_traced(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to);
#define URSA__SWITCH_RETURN(vp, from, to)                                                 \
   do {                                                                                   \
     if (URSA__TRACING()) return ursa__switch_traced(vp, from, to);                       \
     URSA__SWITCH_RETURN_RAW(vp, from, to);                                               \
   } while (0)

/* URSA_PIN (src/sched/vp.c): a kernel thread that ursa starts for its own work (the offload
 * pool, src/io/) takes these CPUs, main's when the VPs started, rather than the one CPU of the
 * pinned VP that starts it; NULL when the VPs are not pinned.  Set before the VPs start. */
URSA_HIDDEN const void *ursa__pin_cpus(void);             /* a cpu_set_t */
URSA_HIDDEN int  ursa__yield_involuntary(struct ursa__vp *vp);   /* src/model/ */
URSA_HIDDEN int  ursa__block_slow(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock, uint64_t deadline);
URSA_HIDDEN void ursa__timer_cancel(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__timer_arm(struct ursa__vp *vp, struct ursa__thread *t, uint64_t deadline);
/* Several VPs: the end of ursa__block once cur->timer_vp is set (its timer armed, or NULL):
 * marks the running thread BLOCKED on obj, releases lock (now a waker may make it READY, even
 * before it is saved: the on-CPU byte covers that) and switches out (src/sched/vp.c). */
URSA_HIDDEN int  ursa__smp_block(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock);
/* The same when vp is solo (core/vp.h, ursa__solo) and no lock is held: for the solo copies. */
URSA_HIDDEN int  ursa__smp_block_solo(struct ursa__vp *vp, int kind, void *obj);
/* Several VPs: finishing the running thread (src/sched/vp.c). */
URSA_HIDDEN void ursa__smp_finish(struct ursa__vp *vp, struct ursa__thread *cur, void *result) __attribute__((noreturn));

/* Blocks the running thread until ursa__wake; it must already be on the wait queue of obj (or on
 * none).  lock is obj's lock (NULL for none): held by the caller in SMP mode, released here once
 * the thread is marked BLOCKED.  deadline is CLOCK_MONOTONIC ns, 0 for none.  Returns the wake
 * result: 0, or -ETIMEDOUT when the deadline passed (the thread has then been removed from its
 * wait queue).  The common one-VP case (no deadline, no timers, a thread ready) is inline and ends
 * in the switch's tail call.  Executed only by the running thread of vp. */
/* The hottest paths take their VP's mode (core/vp.h) as a constant, so that each copy has no
 * test of the others left in it: ursa__block_m, ursa__wake_m, ursa__q_take_m.  The plain names
 * (ursa__block, ursa__wake, ursa__q_take) read the mode and take the checked or SMP copy. */
static inline int ursa__block_m(int mode, struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock,
                                uint64_t deadline) {
  struct ursa__thread *cur = vp->cur, *next;
  URSA_ASSERT_OWNER(vp);
  URSA_ASSERT(mode != URSA__SMPMODE || lock == NULL || ursa__oheld(vp, lock));   /* "held by the caller" */
  if (mode == URSA__SMPMODE && deadline == 0) {       /* several VPs, no deadline: src/sched */
    cur->timer_vp = NULL;
    return ursa__smp_block(vp, kind, obj, lock);
  }
  if (ursa_unlikely(deadline != 0 || mode == URSA__SMPMODE || vp->ntimers != 0 || ursa__runq_empty(vp)))
    return ursa__block_slow(vp, kind, obj, lock, deadline);
  next = ursa__runq_pop(vp);
  if (mode == URSA__FAST) {                  /* one VP (the dumps' order: ursa__set_blocked) */
    ursa__set_blocked(cur, kind, obj);         /* (wake_result: every waker sets it) */
    vp->stats.blocks++;
    URSA__SWITCH_RETURN_RAW(vp, cur, next);
  }
  ursa__set_blocked(cur, kind, obj);
  vp->stats.blocks++;
  URSA__SWITCH_RETURN(vp, cur, next);
}
static inline int ursa__block(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock, uint64_t deadline) {
  if (ursa_unlikely(vp->mode == URSA__SMPMODE)) return ursa__block_m(URSA__SMPMODE, vp, kind, obj, lock, deadline);
  return ursa__block_m(URSA__CHECKED, vp, kind, obj, lock, deadline);
}

/* Starts loading the frame a switch to t will restore (its saved registers and the frame they
 * return to): with hundreds of threads it is not in the cache, and the caller usually has some
 * bookkeeping left to overlap with the miss. */
static inline void ursa__prefetch_frame(const struct ursa__thread *t) {
  __builtin_prefetch(URSA__CTX_SP(&t->ctx));
#if URSA__CTX_WORDS == 1                     /* the saved registers are on the stack too */
  __builtin_prefetch((const char *)URSA__CTX_SP(&t->ctx) + 64);
#endif
}

/* Wakes the waiter w with wake result res; w must already be off every wait queue (taken by
 * ursa__q_take).  Never switches.  A thread's waiter: the BLOCKED thread becomes READY and its
 * timer is removed; one VP: at the tail of the run queue; several VPs: on the waker's VP unless it
 * is pinned (see vp.c).  A call waiter: its wake function runs here, on the waker's VP.
 * Several VPs, all but the inline hand-off (src/sched/vp.c); self is the waker's VP. */
URSA_HIDDEN void ursa__smp_wake(struct ursa__vp *self, struct ursa__waiter *w, int res);
/* One VP, t without a timer: READY at the tail of the run queue. */
static inline void ursa__wake_ready(struct ursa__thread *t, int res) {
  URSA_ASSERT(t->state == URSA__BLOCKED);
  t->w.wake_result = res;
  ursa__set_state(t, URSA__READY);                    /* wait_kind is read only while BLOCKED */
  ursa__runq_push(t->vp, t);
}
/* One VP, the rare cases: a thread with a timer (cancelled first), a call waiter, or URSA_TRACE
 * records the wake-up.  One out-of-line call for all keeps callers frameless (with two, GCC gave
 * sem_post a frame). */
URSA_HIDDEN void ursa__wake_slow(struct ursa__waiter *w, int res);
/* Several VPs: the owner's side of stealing (src/sched/vp.c, "Stealing").  Every access of a VP
 * to its own runq lies between ursa__pq_enter and ursa__pq_exit (they nest, also in a signal
 * handler).  The enter publishes the entry with a plain store and then reads pq_steal: no fence,
 * since a thief runs membarrier between its CAS of pq_steal and its read of pq_word, which turns
 * the compiler barrier here into a full one.  A thief's turn in progress makes the owner wait
 * outside (ursa__pq_enter_slow).  Executed only by vp's kernel thread. */
URSA_HIDDEN void ursa__pq_enter_slow(struct ursa__vp *vp);
static inline void ursa__pq_enter(struct ursa__vp *vp) {
  __atomic_store_n(&vp->pq_word, __atomic_load_n(&vp->pq_word, __ATOMIC_RELAXED) + 0x10001u, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);            /* the store above, then the load below */
  /* acquire: pairs with the release that ends a thief's turn, so its changes to runq are seen */
  if (ursa_unlikely(__atomic_load_n(&vp->pq_steal, __ATOMIC_ACQUIRE) != 0)) ursa__pq_enter_slow(vp);
}
static inline void ursa__pq_exit(struct ursa__vp *vp) {
  /* release: pairs with a thief's acquire load of pq_word, so what this VP wrote to runq inside
   * is seen by a thief that finds it outside */
  __atomic_store_n(&vp->pq_word, __atomic_load_n(&vp->pq_word, __ATOMIC_RELAXED) - 1u, __ATOMIC_RELEASE);
}

/* Several VPs: whether t, made READY by a thread of self, takes the common hand-off: t goes to
 * the front of self's Protect Queue, which is empty (ring, next and overflow list), so
 * it is below what any policy keeps (ursa__pol_keep >= 1) and no shared structure is involved.
 * t is unpinned or pinned to self, and not marked hog (a long runner whose idle VP may take it
 * back: vp.c, spread).  The policy is not global and the hard build's chaos is off
 * (ursa__g.smp_handoff).  Otherwise src/sched/vp.c's ready_slow decides.  Executed only by
 * self's running thread or idle context. */
/* The hand-off is the one owner access to runq outside ursa__pq_enter/exit (it is on the path of
 * every wake-up): a thief's turn only ever removes threads (it clears next and advances head), so
 * a queue found empty here stays empty, and the store of next races only with a thief's load of
 * it, which then takes t or leaves it.  Hence the atomic loads of next and head (a thief writes
 * them) and the release store of next (pairs with the thief's acquire load: t's fields are set). */
/* Whether t, not a region's member, may take the hand-off to self (below): unpinned and not a hog,
 * or pinned to self (main woken by a join, a bound thread at home, a thread pinned here for a
 * while), which runs nowhere else anyway.  (vp.c's pick_handoff_in takes such a thread from
 * runq.next on the same terms, without the hog test, which only a wake-up reads.)  The first
 * test is the common case's only one: pinned and hog, adjacent, in one 16-bit load. */
static inline bool ursa__smp_runs_here(const struct ursa__vp *self, const struct ursa__thread *t) {
  uint16_t pin_hog;                                    /* pinned and hog, adjacent (core/thread.h) */
  memcpy(&pin_hog, (const char *)t + offsetof(struct ursa__thread, pinned), sizeof pin_hog);
  return ursa_likely(pin_hog == 0) || (!t->hog && t->home == self);
}
/* (ursa__smp_handoff_fits: the tests of the queue and of t, for callers that know the policy's
 * part holds: self->solo_path, core/vp.h) */
static inline bool ursa__smp_handoff_fits(const struct ursa__vp *self, const struct ursa__thread *t) {
  const struct ursa__runq *q = &self->runq;
  return ursa_likely(__atomic_load_n(&q->next, __ATOMIC_RELAXED) == NULL) &&   /* (layout: the */
         __atomic_load_n(&q->head, __ATOMIC_RELAXED) == q->tail && q->xhead == NULL &&   /* hand-off */
         t->region == NULL && ursa__smp_runs_here(self, t);                           /* falls through) */
}
static inline bool ursa__smp_handoff_ok(const struct ursa__vp *self, const struct ursa__thread *t) {
  return ursa__smp_handoff_fits(self, t) && ursa__g.smp_handoff;
}
static inline void ursa__smp_handoff(struct ursa__vp *self, struct ursa__thread *t) {
  URSA_ASSERT_OWNER(self);
  t->vp = self;
  t->handed = 1;
  __atomic_store_n(&self->runq.next, t, __ATOMIC_RELEASE);   /* ursa__runq_push into an empty queue */
}
/* Several VPs, the common wake inline: the thread t (no timer to cancel: the caller holds the lock
 * t waited under, so timer_vp is stable) takes the hand-off when nothing is traced.  False when
 * ursa__smp_wake must decide. */
static inline bool ursa__smp_wake_fast(struct ursa__vp *self, struct ursa__thread *t, int res) {
  URSA_ASSERT(t->state == URSA__BLOCKED && t->timer_vp == NULL);
  if (ursa_likely(ursa__smp_handoff_ok(self, t)) && !URSA__TRACING()) {   /* (no bracket: above) */
    t->w.wake_result = res;
    ursa__set_state(t, URSA__READY);
    ursa__smp_handoff(self, t);
    return true;
  }
  return false;
}
static inline void ursa__wake_m(int mode, struct ursa__waiter *w, int res) {
  if (mode == URSA__SMPMODE) {               /* several VPs: src/sched decides where t runs */
    struct ursa__vp *self = ursa__tls_vp;
    if (ursa_likely(!ursa__waiter_is_call(w)) && ursa_likely(ursa__thread_of(w)->timer_vp == NULL) &&
        ursa__smp_wake_fast(self, ursa__thread_of(w), res))
      return;
    ursa__smp_wake(self, w, res);
    return;
  }
  /* one VP: heap_idx is 0 for a thread without a timer, URSA__WAITER_CALL for a call waiter */
  if (ursa_unlikely(w->heap_idx != 0) || (mode != URSA__FAST && URSA__TRACING())) {
    ursa__wake_slow(w, res);
    return;
  }
  ursa__wake_ready(ursa__thread_of(w), res);
}
/* ursa__q_take_m and ursa__wake_m in one, for the hottest waker (a semaphore's post): each test of
 * a waiter is made once.  True when a waiter of q was woken.  slot, when not NULL (a constant NULL
 * compiles away), receives the woken thread's descriptor before that thread can run: a mutex's
 * owner word (ursa__unpark_first_to, waiter.h).  Relaxed: the wake-up publishes it to the woken
 * thread (its queue's lock, or the hand-off on this VP); other VPs read it under the object's
 * lock, which the caller holds. */
static inline bool ursa__q_wake_first_to_m(int mode, struct ursa__waitq *q, int res, struct ursa__thread **slot) {
  struct ursa__waiter *w;
  if (mode != URSA__SMPMODE) {
    if ((w = ursa__q_pop(q)) == NULL) return false;
    if (slot && ursa_likely(!ursa__waiter_is_call(w))) *slot = ursa__thread_of(w);
    ursa__wake_m(mode, w, res);
    return true;
  }
  while ((w = ursa__q_pop(q)) != NULL) {
    struct ursa__thread *t;
    if (ursa_unlikely(ursa__waiter_is_call(w))) break;
    t = ursa__thread_of(w);
    if (ursa_likely(t->timer_vp == NULL)) {
      if (slot) __atomic_store_n(slot, t, __ATOMIC_RELAXED);
      if (ursa__smp_wake_fast(ursa__tls_vp, t, res)) return true;
      break;
    }
    if (ursa__claim_for_waker(t)) {          /* else its timer owns it: pass it over */
      if (slot) __atomic_store_n(slot, t, __ATOMIC_RELAXED);
      break;
    }
  }
  if (w == NULL) return false;
  ursa__smp_wake(ursa__tls_vp, w, res);
  return true;
}
static inline bool ursa__q_wake_first_m(int mode, struct ursa__waitq *q, int res) {
  return ursa__q_wake_first_to_m(mode, q, res, NULL);
}
/* The same, in the mode of vp, the waker's VP (every VP of a runtime has several-VP mode or none). */
static inline void ursa__wake(const struct ursa__vp *vp, struct ursa__waiter *w, int res) {
  if (ursa_unlikely(vp->mode == URSA__SMPMODE)) ursa__wake_m(URSA__SMPMODE, w, res);
  else ursa__wake_m(URSA__CHECKED, w, res);
}
/* A thread's wake, for the scheduler's own waits (a joiner, an executor): t's mode. */
static inline void ursa__wake_thread(struct ursa__thread *t, int res) { ursa__wake(t->vp, &t->w, res); }

/* Waits until t's on-CPU byte is 0 (its last switch saved it): spins, yielding to the kernel
 * after a while.  Then t's stack and descriptor are free for the caller.  Several VPs only. */
static inline bool ursa__oncpu(struct ursa__thread *t) {
  bool busy = __atomic_load_n(ursa__ctx_oncpu(&t->ctx), __ATOMIC_ACQUIRE) != 0;  /* pairs with the
                                                        switch's clearing store (context.h) */
#if URSA_TSAN
  if (!busy) __tsan_acquire(t);
#endif
  return busy;
}
URSA_HIDDEN void ursa__oncpu_wait(struct ursa__thread *t);

/* Wakes every waiter of q in order. */
URSA_HIDDEN void ursa__wake_all(const struct ursa__vp *vp, struct ursa__waitq *q, int res);

/* The entry of every new thread's context (runs fn, then finishes the thread). */
URSA_HIDDEN void ursa__thread_entry(void *from) __attribute__((noreturn));

/* Ends the running thread: never returns. */
URSA_HIDDEN void ursa__thread_finish(struct ursa__vp *vp, void *result) __attribute__((noreturn));

/* Wakes, with -ETIMEDOUT, every thread of the VP whose deadline is at or before now. */
URSA_HIDDEN void ursa__timers_fire(struct ursa__vp *vp, uint64_t now);

/* Releases a finished thread: handle (goes stale) and stack (back to the pool).  The two halves
 * are separate for detached threads, whose stack is still in use when the handle is released. */
URSA_HIDDEN void ursa__thread_release(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__thread_release_handle(struct ursa__thread *t);
URSA_HIDDEN void ursa__thread_release_stack(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__reap(struct ursa__vp *vp);
/* Grows the timer heap and the run queue for nthreads live threads.  -ENOMEM. */
URSA_HIDDEN int  ursa__sched_reserve(struct ursa__vp *vp, uint64_t nthreads);
URSA_HIDDEN int  ursa__timers_reserve(struct ursa__vp *vp, uint64_t nthreads);
/* Regions (src/sched/region.c) */
struct ursa__region;
URSA_HIDDEN struct ursa__vp *ursa__region_vp(const struct ursa__region *r);
URSA_HIDDEN void ursa__regions_apply(struct ursa__vp *vp, const struct ursa__region *stays);
URSA_HIDDEN void ursa__regions_balance(struct ursa__vp *vp, const struct ursa__region *stays);
URSA_HIDDEN struct ursa__region *ursa__region_of(ursa_region_t *r);
/* A region as an attribute keeps it: its record's id and generation (-EINVAL for no live region);
 * find gives the live record they name, NULL once it was destroyed. */
URSA_HIDDEN int ursa__region_name(ursa_region_t *r, uint32_t *id, uint32_t *gen);
URSA_HIDDEN struct ursa__region *ursa__region_find(uint32_t id, uint32_t gen);
URSA_HIDDEN void ursa__regions_fini(void);            /* ursa_fini: frees every record */
URSA_HIDDEN void ursa__region_join(struct ursa__region *r);
URSA_HIDDEN void ursa__region_leave(struct ursa__region *r);
/* Calls fn for every live thread (for reports).  Slow path. */
URSA_HIDDEN void ursa__thread_foreach(void (*fn)(struct ursa__thread *, void *), void *arg);
URSA_HIDDEN int  ursa__threads_init(void);
URSA_HIDDEN void ursa__threads_fini(void);

/* Sets vp->mode from what is known of the VP (core/vp.h says what each mode means). */
URSA_HIDDEN void ursa__vp_mode_set(struct ursa__vp *vp);

/* ---- the execution model's hooks ---------------------------------------------------------------- */
/* What the execution model (src/model/, a layer above) does at the scheduler's points.  Filled by
 * ursa__model_start (ursa_init) before VPs 1..N-1 start, read-only while they run; the scheduler
 * calls them only when the VP's flags say a model is active (pre_pending, the timer bytes). */
struct ursa__model_hooks {
  void (*vp_start)(struct ursa__vp *vp);          /* a VP 1..N-1 starts, on its kernel thread */
  void (*vp_stop)(struct ursa__vp *vp);           /* ... and stops, on its kernel thread      */
  void (*idle)(struct ursa__vp *vp, int sleep);   /* around a wait in the kernel (timers off)  */
  void (*deferred)(struct ursa__vp *vp);          /* a deferred preemption is due              */
};
URSA_HIDDEN extern struct ursa__model_hooks ursa__model_hooks;
/* A preemption that was deferred (vp->pre_pending) is taken here when the running thread may be
 * switched out: called by ursa calls that do not otherwise switch (post, unlock, signal, create),
 * at their end, with no lock held. */
static inline void ursa__preempt_point(struct ursa__vp *vp) {
  if (ursa_unlikely(__atomic_load_n(&vp->pre_pending, __ATOMIC_RELAXED))) ursa__model_hooks.deferred(vp);
}
/* Around a wait of the VP in the kernel: a sleeping VP takes no timer signals. */
static inline void ursa__preempt_idle(struct ursa__vp *vp, int sleep) {
  if (ursa_unlikely(vp->timers_on != 0)) ursa__model_hooks.idle(vp, sleep);
}

/* ---- schedule exploration's hook --------------------------------------------------------------
 * Filled by src/explore/ (a layer above) at ursa_init, before the flag's exploration bit
 * (URSA__TRACE_EXPLORE, core/trace.h) is set; exploration runs one VP.  Called by
 * ursa__switch_traced at every switch of the VP, on its kernel thread:
 *   pick(vp, from, to): `from` is vp->cur, already where it belongs (READY at the tail of the run
 *     queue for a yield or a preemption, BLOCKED, or ZOMBIE); `to` was taken from the head of the
 *     run queue (or is the joiner a finishing thread hands over to, still BLOCKED).  Returns the
 *     thread to run: `to`, another READY thread (which it takes off the run queue, putting `to`
 *     back READY), or `from` when that is READY (it takes it off the run queue: no switch). */
struct ursa__explore_hooks {
  struct ursa__thread *(*pick)(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to);
};
URSA_HIDDEN extern struct ursa__explore_hooks ursa__explore_hooks;

/* ---- the I/O layer's hooks -------------------------------------------------------------------------
 * How the idle paths reach the I/O engine of src/io/ (a layer above): filled by ursa__io_init
 * (ursa_init) before VPs 1..N-1 start, read-only while they run.  The scheduler calls them only
 * for a VP whose io_nwait is nonzero (a wait in the engine instead of the sleep) and for a VP
 * that sleeps in its engine (vp.c: sleeping == 4, the kick), so a program without I/O never
 * reaches them and no hot path tests anything new.
 *   wait(vp, deadline): on vp's kernel thread, with nothing to run: waits in vp's engine until an
 *     event, a kick or the deadline (CLOCK_MONOTONIC ns, 0: none), and wakes the threads whose
 *     waits ended (ursa__unpark).  It may return early (a spurious return is harmless).
 *   kick(vp): any kernel thread: makes a wait of vp's engine return (an eventfd write). */
struct ursa__io_hooks {
  void (*wait)(struct ursa__vp *vp, uint64_t deadline);
  void (*kick)(struct ursa__vp *vp);
  void (*forget)(struct ursa__vp *vp);   /* ursa__forget_others (forget.c): drop every wait of
                                            the threads other than the running one            */
  bool (*reap)(struct ursa__vp *v);      /* another VP's kernel thread, v stalled (vp.c,
                                            "Stealing"): handles the completions waiting in v's
                                            engine, readying their threads on the caller's VP
                                            (never v's kicks); whether it woke any            */
};
URSA_HIDDEN extern struct ursa__io_hooks ursa__io_hooks;
/* Whether vp has threads ready to run besides the running one (its run queue; with several VPs
 * also its inbox and what the policy would give it): the I/O poller's "others are ready". */
URSA_HIDDEN bool ursa__vp_has_ready(struct ursa__vp *vp);
/* Several VPs: the I/O poller of vp (an ursa thread on it) helps the VPs that look stalled, as an
 * idle VP does (vp.c, "Stealing"): their ready threads and their engines' completions come here.
 * Whether it took any.  False with one VP. */
URSA_HIDDEN bool ursa__smp_help_stalled(struct ursa__vp *vp);

/* ---- reports (report.c) ------------------------------------------------------------------------ */
URSA_HIDDEN const char *ursa__wait_name(int kind);
/* Prints every blocked thread and the wait-for cycles, then exits with status 3. */
URSA_HIDDEN void ursa__deadlock_report(struct ursa__vp *vp) __attribute__((noreturn));
/* Every thread, its state, wait object and backtrace, and the wait-for cycles, to f.  self is the
 * calling ursa thread, or NULL from the dump thread (src/runtime/dumpsig.c, URSA_DUMP_SIGNAL). */
URSA_HIDDEN void ursa__dump_all(FILE *f, struct ursa__vp *vp, struct ursa__thread *self);
/* sched's own kinds (join, sleep); ursa_init calls it first. */
URSA_HIDDEN void ursa__sched_register_kinds(void);

#endif /* URSA_SCHED_H */
