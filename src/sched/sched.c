/*
 * sched.c - the scheduler of one virtual processor (VP): run queue, switch, block and wake,
 * yield and named yield, timers, the idle wait, and the deadlock report.
 *
 * Protocol
 *   The running thread schedules itself: there is no scheduler thread.  A thread that yields puts
 *   itself at the tail of the run queue and switches to the head; a thread that blocks has already
 *   put itself on the wait queue of the object (or on none), and switches to the head.  ursa__wake
 *   only moves a thread to the run queue: it never switches, so a post, unlock or put returns to
 *   its caller at once (the woken thread runs when the running one yields or blocks).
 *
 *   When the run queue is empty the blocking thread itself waits in the kernel (clock_nanosleep)
 *   until the earliest timer, on its own stack: SplitThreads' idle thread, without the extra
 *   switch.  With no timer armed nothing can ever make a thread ready again (only ursa threads of
 *   this VP call ursa), so every remaining thread is blocked for good: that is a deadlock, and
 *   ursa__deadlock_report prints each blocked thread and what it waits on, then exits with status 3.
 *
 *   Each switch saves the running thread's errno value and installs the next one's, so errno is a
 *   per-ursa-thread value.  A detached thread that finishes cannot free the stack it runs on: its
 *   handle goes stale at once, and it leaves its stack in vp->zombie for the next create or
 *   finish on this VP to release (ursa__reap): nothing runs after a jump, so switches stay tail
 *   calls.
 *
 * Several VPs (URSA__SMPMODE): the paths here hand over to src/sched/ (vp.c describes that protocol):
 *   the object's lock is released by ursa__block_slow once the thread is marked BLOCKED, the next
 *   thread is chosen by the policy, and a VP with nothing to run switches to its idle context
 *   instead of sleeping on the blocked thread's stack (another VP may resume that thread).  Timer
 *   heaps are then guarded by vp->tlock, because a waker on another VP cancels the timer.
 *
 * Invariants
 *   - vp->cur is RUNNING; with one VP a READY thread has exactly one valid entry in vp->runq.
 *   - A thread has a timer armed (heap_idx != 0) only while BLOCKED.
 *   - vp->timers_cap > number of live threads, so arming a timer never allocates.
 * Everything here is executed only by the VP's own kernel thread, on behalf of its running thread.
 */
#define _GNU_SOURCE
#include "sched_smp.h"
#include "../core/heap.h"

#include <sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* The VP after a switch (core/vp.h, URSA__VP_AFTER_SWITCH).  Defined here, beside its callers on
 * the thread-entry and finish paths: in the same file the compiler knows it clobbers no register
 * (measured: one spill fewer in ursa__thread_entry, 1 instruction per create+join). */
struct ursa__vp *ursa__vp_current(void) {
  __asm__ volatile("" ::: "memory");          /* not a pure function: never merged across calls */
  return ursa__tls_vp;
}

/* The one place that sets a VP's mode (core/vp.h): several VPs once its SMP state exists (vp->x),
 * else checked when traced or time-sliced, else fast.  Called when vp->x is made or freed and by
 * ursa_init once the model and the trace are known; never while the VP's threads run. */
void ursa__vp_mode_set(struct ursa__vp *vp) {
  if (vp->x != NULL) vp->mode = URSA__SMPMODE;
  else if (URSA__TRACING() || ursa__g.model == URSA_MODEL_CP_TS) vp->mode = URSA__CHECKED;
  else vp->mode = URSA__FAST;
  /* (the trace is only ever switched off while VPs run, which leaves the solo copies off) */
  vp->solo_path = vp->mode == URSA__SMPMODE && ursa__g.smp_handoff && !ursa__g.region_balance &&
                  !URSA__TRACING();
}

/* The execution model's hooks (sched.h), filled by src/model/ at ursa_init. */
struct ursa__model_hooks ursa__model_hooks;
/* The I/O layer's hooks (sched.h), filled by src/io/ at ursa_init. */
struct ursa__io_hooks ursa__io_hooks;

bool ursa__vp_has_ready(struct ursa__vp *vp) {
  if (vp->mode == URSA__SMPMODE) return ursa__smp_has_work(vp);
  return !ursa__runq_empty(vp);
}

/* Schedule exploration's hook (sched.h), filled by src/explore/ at ursa_init. */
struct ursa__explore_hooks ursa__explore_hooks;

/* The whole switch when URSA_TRACE records or exploration chooses (URSA__SWITCH_RETURN, and
 * ursa__thread_finish): exploration's choice, the event, then the switch.  The explorer may keep
 * `from` running when it is READY (a yield or a preemption point): then nothing switches. */
int ursa__switch_traced(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to) {
  if (URSA__EXPLORING()) {
    to = ursa__explore_hooks.pick(vp, from, to);
    if (to == from) {
      ursa__set_state(from, URSA__RUNNING);
      return from->w.wake_result;
    }
  }
  if (URSA__RECORDING()) ursa__trace_switch(vp, from, to);
  URSA__SWITCH_RETURN_RAW(vp, from, to);
}

/* ---- timer heap (1-based binary min-heap on deadline) ----------------------------------------- */

#define THREAD_KEY(t)      ((t)->deadline)
#define THREAD_MOVED(t, i) __atomic_store_n(&(t)->w.heap_idx, (i), __ATOMIC_RELAXED)   /* read by ursa__waiter_is_call */
URSA__HEAP(theap, struct ursa__thread *, THREAD_KEY, THREAD_MOVED)

void ursa__timer_arm(struct ursa__vp *vp, struct ursa__thread *t, uint64_t deadline) {
  URSA_ASSERT(t->w.heap_idx == 0 && vp->ntimers + 1 < vp->timers_cap);
  URSA_ASSERT(vp->mode != URSA__SMPMODE || ursa__spin_held(&vp->tlock));   /* wakers cancel */
  t->deadline = deadline;
  vp->timers[vp->ntimers + 1] = t;
  __atomic_store_n(&vp->ntimers, vp->ntimers + 1, __ATOMIC_RELAXED);   /* read unlocked by its owner */
  theap_up(vp->timers, vp->ntimers);
}

void ursa__timer_cancel(struct ursa__vp *vp, struct ursa__thread *t) {
  uint32_t n = vp->ntimers;
  URSA_ASSERT(t->w.heap_idx != 0 && t->w.heap_idx <= n && vp->timers[t->w.heap_idx] == t);
  URSA_ASSERT(vp->mode != URSA__SMPMODE || ursa__spin_held(&vp->tlock));
  __atomic_store_n(&vp->ntimers, n - 1, __ATOMIC_RELAXED);             /* read unlocked by its owner */
  theap_remove(vp->timers, n, t->w.heap_idx);
  __atomic_store_n(&t->w.heap_idx, 0u, __ATOMIC_RELAXED);             /* read by ursa__waiter_is_call */
}

int ursa__timers_reserve(struct ursa__vp *vp, uint64_t nthreads) {
  if (nthreads + 2 > vp->timers_cap) {
    size_t cap = vp->timers_cap ? (size_t)vp->timers_cap * 2 : 64;
    struct ursa__thread **n;
    while (cap < nthreads + 2) cap *= 2;
    if (cap > UINT32_MAX) return -ENOMEM;
    if (URSA__FAIL() || (n = realloc(vp->timers, cap * sizeof *n)) == NULL) return -ENOMEM;
    vp->timers = n;
    vp->timers_cap = (uint32_t)cap;
  }
  return 0;
}

int ursa__sched_reserve(struct ursa__vp *vp, uint64_t nthreads) {
  int err = ursa__timers_reserve(vp, nthreads);
  if (err) return err;
  if (vp->mode == URSA__SMPMODE && vp->runq.buf) return 0;       /* SMP: a full ring overflows into a list (vp.c) */
  if (nthreads + 2 > (uint64_t)vp->runq.mask + 1 || vp->runq.buf == NULL) {
    struct ursa__runq *q = &vp->runq;
    size_t cap = q->buf ? ((size_t)q->mask + 1) * 2 : 128, i;
    struct ursa__thread **n;
    while (cap < nthreads + 2) cap *= 2;
    if (cap > ((size_t)1 << 31)) return -ENOMEM;
    if (URSA__FAIL() || (n = malloc(cap * sizeof *n)) == NULL) return -ENOMEM;
    for (i = 0; q->head + i != q->tail; i++) {             /* re-file at the same positions */
      uint32_t pos = q->head + (uint32_t)i;
      n[pos & (cap - 1)] = q->buf[pos & q->mask];
    }
    free(q->buf);
    q->buf = n;
    q->mask = (uint32_t)cap - 1;
  }
  return 0;
}

void ursa__wake_slow(struct ursa__waiter *w, int res) {
  struct ursa__thread *t;
  if (w->heap_idx == URSA__WAITER_CALL) {                    /* a call waiter (core/thread.h) */
    ursa__waiter_call_of(w)->wake(ursa__waiter_call_of(w), res);
    return;
  }
  t = ursa__thread_of(w);
  if (t->w.heap_idx) ursa__timer_cancel(t->vp, t);
  if (URSA__TRACING()) ursa__trace_wake(t->vp, t, 0, res);   /* URSA_TRACE: one VP */
  ursa__wake_ready(t, res);
}

void ursa__timers_fire(struct ursa__vp *vp, uint64_t now) {
  if (vp->mode == URSA__SMPMODE) { ursa__smp_timers_fire(vp, now); return; }
  while (vp->ntimers && vp->timers[1]->deadline <= now) {
    struct ursa__thread *t = vp->timers[1];
    if (t->w.waitq) {                                           /* leave the object's queue */
      ursa__q_remove(t->w.waitq, &t->w);
      t->w.waitq = NULL;
    }
    vp->stats.timers++;
    ursa__wake_m(URSA__CHECKED, &t->w, -ETIMEDOUT);          /* cancels the timer too */
  }
}

/* ---- switch ----------------------------------------------------------------------------------- */

/* Releases the detached thread that finished last on this VP (its stack can be reused once some
 * other thread runs).  Called by create, finish and fini, never on the zombie's own stack. */
void ursa__reap(struct ursa__vp *vp) {
  struct ursa__thread *z = vp->zombie;
  if (z) {
    vp->zombie = NULL;
    ursa__thread_release_stack(vp, z);
  }
}

#if URSA_TSAN
/* ThreadSanitizer keeps, per fiber, a shadow call stack: every instrumented function pushes its
 * return address on entry and pops it on return.  A thread's TSan fiber belongs to its stack and
 * serves every thread that stack is given to (stack.c; creating and destroying a fiber per thread
 * cost 0.8 MB of memset and an munmap each).  But a finished thread never returns: the frames
 * open at its last switch (this entry, ursa__thread_finish, ursa__smp_finish, or any depth of
 * frames above ursa_exit) would stay on the fiber's shadow stack, under every later thread's
 * frames in the reports, a few more at each reuse until the fixed-size shadow stack overflows.
 *
 * So the last switch is made from here: the entry records its frame with setjmp, and the switch
 * of a ZOMBIE (URSA__TSAN_LAST_SWITCH) comes back with longjmp, which TSan's interceptor follows
 * by popping the shadow stack to the depth setjmp saw, that is to this frame.  The entry pops
 * its own frame too before it switches, so the fiber is left as deep as it was when the thread
 * started: empty, since a fresh fiber is and every thread leaves it so.  (The setjmp happens at
 * the same depth on every reuse; the idle context of VP 0, which never finishes, gives its stack
 * back with a new fiber: vp.c.) */
void __tsan_func_exit(void);                 /* the instrumentation's own pop (no public header) */

void ursa__tsan_last_switch(struct ursa__thread *from, struct ursa__thread *to) {
  from->tsan_to = to;
  longjmp(from->tsan_jb, 1);
}

static void tsan_last_switch_here(void) __attribute__((noreturn, always_inline));
static inline void tsan_last_switch_here(void) {
  struct ursa__vp *vp = ursa__vp_current();                   /* the longjmp kept the kernel thread */
  struct ursa__thread *self = vp->cur, *to = self->tsan_to;
  __tsan_func_exit();                                         /* this entry's frame */
  ursa__switch_prepare_raw(vp, self, to);
  ursa__ctx_switch(self, to, to->w.wake_result);
  URSA_PANIC("a finished thread was resumed");
}
#endif

/* The first code of every new thread, on its own stack (called by the context trampoline). */
void ursa__thread_entry(void *arg) {
  struct ursa__thread *self;
  URSA_UNUSED(arg);
#if URSA_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  self = ursa__tls_vp->cur;
#if URSA_TSAN
  if (setjmp(self->tsan_jb) != 0) tsan_last_switch_here();
#endif
  {
    void *result = self->fn(self->arg);        /* may have moved to another VP */
    ursa__thread_finish(URSA__VP_AFTER_SWITCH(), result);
  }
}

/* The next thread to run: the head of the run queue after firing expired timers, waiting in the
 * kernel for the earliest timer while nothing is ready.  NULL when nothing ever can be. */
static struct ursa__thread *next_ready(struct ursa__vp *vp) {
  for (;;) {
    struct ursa__thread *t;
    if (vp->ntimers) ursa__timers_fire(vp, ursa__now());
    t = ursa__runq_pop(vp);
    if (t) return t;
    if (vp->io_nwait != 0) {                                  /* threads wait on I/O: in the engine */
      bool tr = URSA__TRACING();
      uint64_t t0 = ursa__now();
      vp->stats.idle_waits++;
      if (tr) ursa__trace_idle(vp, 1);
      ursa__preempt_idle(vp, 1);
      ursa__io_hooks.wait(vp, vp->ntimers ? vp->timers[1]->deadline : 0);
      ursa__preempt_idle(vp, 0);
      if (tr) ursa__trace_idle(vp, 0);
      vp->stats.idle_ns += ursa__now() - t0;
      continue;
    }
    if (vp->ntimers == 0) return NULL;
    if (ursa_unlikely(ursa__vclock.on)) {                    /* exploration: virtual time jumps */
      if (vp->timers[1]->deadline > ursa__vclock.now) ursa__vclock.now = vp->timers[1]->deadline;
      continue;
    }
    {
      uint64_t d = vp->timers[1]->deadline;
      struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
      bool tr = URSA__TRACING();
      uint64_t t0 = ursa__now();
      vp->stats.idle_waits++;
      if (tr) ursa__trace_idle(vp, 1);                      /* URSA_TRACE: idle slice */
      ursa__preempt_idle(vp, 1);                            /* cp-ts: no ticks while asleep */
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
      ursa__preempt_idle(vp, 0);
      if (tr) ursa__trace_idle(vp, 0);
      vp->stats.idle_ns += ursa__now() - t0;
    }
  }
}

int ursa__block_slow(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock, uint64_t deadline) {
  struct ursa__thread *cur = vp->cur, *next;
  if (deadline) {
    if (deadline <= ursa__now()) {                            /* passed: no wait at all */
      if (cur->w.waitq) ursa__q_remove(cur->w.waitq, &cur->w);
      if (lock) ursa__ounlock(vp, lock);
      return -ETIMEDOUT;
    }
    if (vp->mode == URSA__SMPMODE) {                   /* armed before a waker can see us: it may cancel it */
      cur->claim = 0;
      cur->timer_vp = vp;
      ursa__spin_lock(&vp->tlock);
      ursa__timer_arm(vp, cur, deadline);
      ursa__spin_unlock(&vp->tlock);
    } else {
      ursa__timer_arm(vp, cur, deadline);
    }
  } else {
    cur->timer_vp = NULL;
  }
  if (vp->mode == URSA__SMPMODE) return ursa__smp_block(vp, kind, obj, lock);
  ursa__set_blocked(cur, kind, obj);
  cur->wait_lock = lock;
  vp->stats.blocks++;
  next = next_ready(vp);
  if (ursa_unlikely(next == NULL)) ursa__deadlock_report(vp);
  if (ursa_unlikely(next == cur)) {                           /* our own timer woke us */
    ursa__set_state(cur, URSA__RUNNING);
    return cur->w.wake_result;
  }
  URSA__SWITCH_RETURN(vp, cur, next);
}

/* ---- park / unpark: the waiter interface's thread waits (waiter.h) ---------------------------- */

int ursa__park(int kind, void *obj, ursa__spin_t *lock, uint64_t deadline) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *cur = vp->cur;
  cur->w.waitq = NULL;                               /* on no wait queue: a timeout removes nothing */
  if (vp->mode == URSA__SMPMODE && deadline) {
    /* Should ursa__block find the deadline passed, it returns without arming a timer and leaves
     * timer_vp and claim as they were: make them say "the timer owns it", so that no claim
     * succeeds for a thread that is running (a real arming resets both). */
    cur->timer_vp = vp;
    __atomic_store_n(&cur->claim, 1, __ATOMIC_RELAXED);
  }
  return ursa__block(vp, kind, obj, lock, deadline);
}

bool ursa__park_claim_thread(struct ursa__thread *t, bool timed) {
  URSA_ASSERT(t != NULL);
  if (ursa__tls_vp->mode != URSA__SMPMODE) return ursa__get_state(t) == URSA__BLOCKED;   /* else its timer woke it */
  /* Several VPs, a timed park: the waker and the timer race for the claim (src/sched/vp.c).  Not
   * by t->timer_vp: a timer that won writes it outside the caller's lock. */
  return !timed || ursa__claim_for_waker(t);
}

bool ursa__park_claim(ursa_thread_t h, bool timed) {
  return ursa__park_claim_thread(ursa__thread_get(h), timed);
}

void ursa__unpark_thread(struct ursa__thread *t, int res) {
  URSA_ASSERT(t != NULL && ursa__get_state(t) == URSA__BLOCKED);   /* (never a GONE one: forget.c) */
  ursa__wake_thread(t, res);
}

void ursa__unpark(ursa_thread_t h, int res) {
  ursa__unpark_thread(ursa__thread_get(h), res);
}

int ursa__park_queued(int kind, void *obj, struct ursa__waitq *q, ursa__spin_t *lock, uint64_t deadline) {
  struct ursa__vp *vp = ursa__tls_vp;
  ursa__q_push(q, &vp->cur->w);
  vp->cur->w.waitq = q;                              /* (ursa__unpark_queued and a timeout read it) */
  if (ursa_likely(vp->mode == URSA__FAST)) return ursa__block_m(URSA__FAST, vp, kind, obj, lock, deadline);
  return ursa__block(vp, kind, obj, lock, deadline);
}

bool ursa__unpark_first(struct ursa__waitq *q, int res) {
  const int mode = ursa__tls_vp->mode;
  if (ursa_likely(mode == URSA__FAST)) return ursa__q_wake_first_m(URSA__FAST, q, res);
  if (mode == URSA__SMPMODE) return ursa__q_wake_first_m(URSA__SMPMODE, q, res);
  return ursa__q_wake_first_m(URSA__CHECKED, q, res);
}

/* The other modes out of line, so that the one-VP path needs no stack frame. */
static URSA_NOINLINE bool unpark_first_to_slow(int mode, struct ursa__waitq *q, int res, struct ursa__thread **slot) {
  if (mode == URSA__SMPMODE) return ursa__q_wake_first_to_m(URSA__SMPMODE, q, res, slot);
  return ursa__q_wake_first_to_m(URSA__CHECKED, q, res, slot);
}

bool ursa__unpark_first_to(struct ursa__waitq *q, int res, struct ursa__thread **slot) {
  const struct ursa__vp *vp = ursa__tls_vp;
  int mode;
  if (ursa_unlikely(vp == NULL)) return false;       /* not on a VP (waiter.h) */
  mode = vp->mode;
  if (ursa_likely(mode == URSA__FAST)) return ursa__q_wake_first_to_m(URSA__FAST, q, res, slot);
  return unpark_first_to_slow(mode, q, res, slot);
}

void ursa__preempt_hold(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (vp != NULL && vp->cur != NULL) vp->cur->preempt_off++;
}

void ursa__preempt_release(bool point) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (vp == NULL || vp->cur == NULL) return;
  URSA_ASSERT(vp->cur->preempt_off > 0);
  if (--vp->cur->preempt_off == 0 && point) ursa__preempt_point(vp);
}

void ursa__obj_lock(ursa__spin_t *l) { ursa__spin_lock(l); }
void ursa__obj_unlock(ursa__spin_t *l) { ursa__spin_unlock(l); }

bool ursa__unpark_queued(struct ursa__waitq *q, struct ursa__thread *t, int res) {
  struct ursa__vp *vp = ursa__tls_vp;
  URSA_ASSERT(vp->mode != URSA__SMPMODE);
  if (ursa__get_state(t) != URSA__BLOCKED || t->w.waitq != q) return false;   /* woken, timed out */
  ursa__q_remove(q, &t->w);
  ursa__wake(vp, &t->w, res);
  return true;
}

bool ursa__vp_others_ready(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp != NULL && ursa__vp_has_ready(vp);
}

struct ursa__thread *ursa__vp_running(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *t;
  if (vp == NULL) return NULL;
  t = vp->cur;
  if (t == NULL || (vp->mode == URSA__SMPMODE && t == vp->x->idle)) return NULL;
  return ursa__get_state(t) == URSA__RUNNING ? t : NULL;
}

bool ursa__thread_blocked(const struct ursa__thread *t) {
  return t != NULL && ursa__get_state(t) == URSA__BLOCKED;
}

/* Whether only daemons are left (main has called ursa_exit): live is what is left after a finish. */
static bool only_daemons(int64_t live) {
  int64_t d = __atomic_load_n(&ursa__g.daemons, __ATOMIC_ACQUIRE);
  return d != 0 && live == d;
}

void ursa__daemon(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  int64_t live;
  URSA_ASSERT(vp != NULL);
  if (vp->cur->daemon) return;
  vp->cur->daemon = 1;
  __atomic_add_fetch(&ursa__g.daemons, 1, __ATOMIC_ACQ_REL);
  live = vp->mode == URSA__SMPMODE ? __atomic_load_n(&ursa__g.live, __ATOMIC_ACQUIRE) : vp->nthreads;
  if (only_daemons(live)) { fflush(NULL); exit(0); }   /* (main is no daemon: it has exited) */
}

bool ursa__exploring(void) { return ursa__g.explore != 0; }

void ursa__sched_point(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (vp != NULL) ursa__preempt_point(vp);           /* exploration keeps pre_pending set */
}

struct ursa__thread *ursa__self_thread(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp ? vp->cur : NULL;
}

void ursa__wake_all(const struct ursa__vp *vp, struct ursa__waitq *q, int res) {
  struct ursa__waiter *w;
  while ((w = ursa__q_take(vp, q)) != NULL) ursa__wake(vp, w, res);
}

void ursa__thread_finish(struct ursa__vp *vp, void *result) {
  struct ursa__thread *cur = vp->cur, *next;
  if (cur->keys) {
    ursa__keys_run_destructors(cur);
    vp = URSA__VP_AFTER_SWITCH();                                  /* destructors may have switched */
  }
  if (cur->region) ursa__region_leave(cur->region);
  if (ursa_unlikely(cur->daemon)) {                          /* a daemon that finishes after all */
    cur->daemon = 0;
    __atomic_sub_fetch(&ursa__g.daemons, 1, __ATOMIC_ACQ_REL);
  }
  if (vp->mode == URSA__SMPMODE) ursa__smp_finish(vp, cur, result);             /* never returns */
  cur->result = result;
  ursa__set_state(cur, URSA__ZOMBIE);
  vp->nthreads--;
  if (ursa_unlikely(ursa__g.daemons != 0) && only_daemons(vp->nthreads)) {   /* ursa__daemon */
    fflush(NULL);
    exit(0);
  }
  if (cur->detached) {
    ursa__reap(vp);                                           /* the previous zombie, if any */
    ursa__thread_release_handle(cur);                         /* the handle is stale at once */
    if (!cur->own_stack) vp->zombie = cur;                      /* the stack: after the switch */
  } else if (cur->joiner) {
    struct ursa__waiter *j = cur->joiner;                     /* a thread's, or a call waiter */
    if (ursa_likely(vp->ntimers == 0 && ursa__runq_empty(vp) && j->heap_idx == 0)) {
      next = ursa__thread_of(j);                              /* a thread without a timer */
      if (URSA__TRACING()) ursa__trace_wake(vp, next, vp->index, 0);   /* URSA_TRACE */
      next->w.wake_result = 0;                                /* it would be next anyway: hand */
      goto run;                                               /* over without the run queue    */
    }
    ursa__wake_m(URSA__CHECKED, j, 0);                       /* one VP (several: smp_finish) */
  }
  if (vp->ntimers != 0 || (next = ursa__runq_pop(vp)) == NULL) next = next_ready(vp);
  if (next == NULL) {
    if (vp->nthreads == 0) {                                  /* main called ursa_exit and the */
      fflush(NULL);                                           /* last thread has finished      */
      exit(0);
    }
    ursa__deadlock_report(vp);
  }
run:
  if (URSA__TRACING()) {
    ursa__switch_traced(vp, cur, next);                       /* URSA_TRACE (see sched.h) */
  } else {
    URSA__TSAN_LAST_SWITCH(cur, next);                        /* TSan: see ursa__thread_entry */
    ursa__switch_prepare_raw(vp, cur, next);
    ursa__ctx_switch(cur, next, next->w.wake_result);
  }
  URSA_PANIC("a finished thread was resumed");
}

/* ---- yield ------------------------------------------------------------------------------------ */

/* The one-VP yield, after its timers fired (yield_timers) or with none armed. */
static inline int yield_1(struct ursa__vp *vp) {
  struct ursa__thread *cur, *next;
  next = ursa__runq_pop(vp);
  if (next == NULL) return 0;
  cur = vp->cur;
  ursa__set_state(cur, URSA__READY);
  cur->w.wake_result = 0;
  ursa__runq_push(vp, cur);
  URSA__SWITCH_RETURN(vp, cur, next);
}

/* Out of line, so that the common yield keeps nothing live across a call and needs no frame. */
static URSA_NOINLINE int yield_timers(struct ursa__vp *vp) {
  ursa__timers_fire(vp, ursa__now());
  if (ursa_unlikely(ursa__vclock.on) && ursa__runq_empty(vp) && vp->ntimers != 0) {
    /* exploration: a yield with nothing else ready waits for the next timer (a loop that yields
     * until a sleeping thread acts would otherwise never see virtual time pass) */
    if (vp->timers[1]->deadline > ursa__vclock.now) ursa__vclock.now = vp->timers[1]->deadline;
    ursa__timers_fire(vp, ursa__vclock.now);
  }
  return yield_1(vp);
}

int ursa_yield(void) {
  URSA_VP_OR_RETURN(vp);
  vp->stats.yields++;
  if (ursa_unlikely(vp->mode == URSA__SMPMODE)) return ursa__smp_yield(vp);
  if (ursa_unlikely(vp->ntimers != 0)) return yield_timers(vp);
  return yield_1(vp);
}

/* A yield the thread did not ask for (src/model/: a time slice or tick count ended): not counted
 * as a yield. */
int ursa__yield_involuntary(struct ursa__vp *vp) {
  if (vp->mode == URSA__SMPMODE) return ursa__smp_yield(vp);
  if (vp->ntimers != 0) ursa__timers_fire(vp, ursa__now());
  return yield_1(vp);
}

int ursa_yield_to(ursa_thread_t h) {
  struct ursa__thread *cur, *t;
  URSA_VP_OR_RETURN(vp);
  t = ursa__thread_get(h);
  if (ursa_unlikely(t == NULL)) return -ESRCH;
  cur = vp->cur;
  if (t == cur) { vp->stats.yields++; return 0; }
  if (vp->mode == URSA__SMPMODE || t->state != URSA__READY || t->vp != vp) return ursa_yield();  /* SMP: see vp.c */
  ursa__prefetch_frame(t);
  vp->stats.yields++;
  ursa__set_state(cur, URSA__READY);
  cur->w.wake_result = 0;
  ursa__runq_replace(vp, t, cur);                 /* the caller takes t's place in the queue */
  URSA__SWITCH_RETURN(vp, cur, t);
}

int ursa_sleep_ns(uint64_t ns) {
  uint64_t now;
  URSA_VP_OR_RETURN(vp);
  if (ns == 0) return ursa_yield();
  now = ursa__now();
  vp->cur->w.waitq = NULL;                                      /* on no queue while asleep */
  ursa__block(vp, URSA__W_SLEEP, NULL, NULL, ns > UINT64_MAX - now ? UINT64_MAX : now + ns);
  return 0;
}
