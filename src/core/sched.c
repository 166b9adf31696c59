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
 * Several VPs (vp->smp): the paths here hand over to src/sched/ (vp.c describes that protocol):
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
#include "internal.h"
#include "../model/model.h"
#include "../sched/sched_smp.h"

#include <sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


__thread struct ursa__vp *ursa__tls_vp __attribute__((tls_model("initial-exec")));

struct ursa__vp *ursa__vp_current(void) {
  __asm__ volatile("" ::: "memory");          /* not a pure function: never merged across calls */
  return ursa__tls_vp;
}

/* ---- spin locks ------------------------------------------------------------------------------ */

void ursa__spin_lock_slow(ursa__spin_t *l) {
  unsigned spins = 0;
  do {
    while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0) {   /* read-only wait: no line ping-pong */
      if (++spins < 128) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
      } else {
        sched_yield();                                 /* the holder may be preempted */
      }
    }
  } while (__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE) != 0);   /* pairs with ursa__spin_unlock */
}

/* ---- time ------------------------------------------------------------------------------------- */

uint64_t ursa__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ursa__deadline(int clock, const struct timespec *abstime, uint64_t *out) {
  struct timespec now;
  int64_t delta;
  uint64_t mono;
  if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L || abstime->tv_sec < 0)
    return -EINVAL;
  if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return -EINVAL;
  if (clock_gettime(clock, &now) != 0) return -EINVAL;
  delta = ((int64_t)abstime->tv_sec - (int64_t)now.tv_sec) * 1000000000LL +
          (abstime->tv_nsec - now.tv_nsec);
  mono = ursa__now();
  *out = delta <= 0 ? 1 : mono + (uint64_t)delta;            /* 1: passed already */
  return 0;
}

/* ---- timer heap (1-based binary min-heap on deadline) ----------------------------------------- */

static void heap_set(struct ursa__vp *vp, uint32_t i, struct ursa__thread *t) {
  vp->timers[i] = t;
  t->heap_idx = i;
}

static void heap_up(struct ursa__vp *vp, uint32_t i) {
  struct ursa__thread *t = vp->timers[i];
  while (i > 1 && vp->timers[i / 2]->deadline > t->deadline) {
    heap_set(vp, i, vp->timers[i / 2]);
    i /= 2;
  }
  heap_set(vp, i, t);
}

static void heap_down(struct ursa__vp *vp, uint32_t i) {
  struct ursa__thread *t = vp->timers[i];
  uint32_t n = vp->ntimers;
  for (;;) {
    uint32_t c = 2 * i;
    if (c > n) break;
    if (c + 1 <= n && vp->timers[c + 1]->deadline < vp->timers[c]->deadline) c++;
    if (vp->timers[c]->deadline >= t->deadline) break;
    heap_set(vp, i, vp->timers[c]);
    i = c;
  }
  heap_set(vp, i, t);
}

void ursa__timer_arm(struct ursa__vp *vp, struct ursa__thread *t, uint64_t deadline) {
  URSA_ASSERT(t->heap_idx == 0 && vp->ntimers + 1 < vp->timers_cap);
  t->deadline = deadline;
  vp->timers[vp->ntimers + 1] = t;
  __atomic_store_n(&vp->ntimers, vp->ntimers + 1, __ATOMIC_RELAXED);   /* read unlocked by its owner */
  heap_up(vp, vp->ntimers);
}

void ursa__timer_cancel(struct ursa__vp *vp, struct ursa__thread *t) {
  uint32_t i = t->heap_idx;
  struct ursa__thread *last = vp->timers[vp->ntimers];
  __atomic_store_n(&vp->ntimers, vp->ntimers - 1, __ATOMIC_RELAXED);   /* read unlocked by its owner */
  t->heap_idx = 0;
  if (last != t) {
    heap_set(vp, i, last);
    if (i > 1 && vp->timers[i / 2]->deadline > last->deadline) heap_up(vp, i);
    else heap_down(vp, i);
  }
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
  if (vp->smp && vp->runq.buf) return 0;       /* SMP: a full ring overflows into a list (vp.c) */
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

void ursa__wake_slow(struct ursa__thread *t, int res) {
  if (t->heap_idx == URSA__HEAP_SHELL) { ursa__pts_shell_wake(t, res); return; }   /* src/pt/ */
  if (t->heap_idx) ursa__timer_cancel(t->vp, t);
  if (URSA__TRACING()) ursa__trace_wake(t->vp, t, 0, res);   /* URSA_TRACE: one VP */
  ursa__wake_ready(t, res);
}

void ursa__timers_fire(struct ursa__vp *vp, uint64_t now) {
  if (vp->smp) { ursa__smp_timers_fire(vp, now); return; }
  while (vp->ntimers && vp->timers[1]->deadline <= now) {
    struct ursa__thread *t = vp->timers[1];
    if (t->waitq) {                                           /* leave the object's queue */
      ursa__q_remove(t->waitq, t);
      t->waitq = NULL;
    }
    vp->stats.timers++;
    ursa__wake(t, -ETIMEDOUT);                                /* cancels the timer too */
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
  ursa__ctx_switch(&self->ctx, &to->ctx, to->wake_result);
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
    if (vp->ntimers == 0) return NULL;
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
      if (cur->waitq) ursa__q_remove(cur->waitq, cur);
      if (lock) ursa__ounlock(vp, lock);
      return -ETIMEDOUT;
    }
    if (vp->smp) {                   /* armed before a waker can see us: it may cancel it */
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
  if (vp->smp) return ursa__smp_block(vp, kind, obj, lock);
  ursa__set_state(cur, URSA__BLOCKED);
  __atomic_store_n(&cur->wait_kind, (uint8_t)kind, __ATOMIC_RELAXED);
  __atomic_store_n(&cur->wait_obj, obj, __ATOMIC_RELAXED);
  cur->wait_lock = lock;
  vp->stats.blocks++;
  next = next_ready(vp);
  if (ursa_unlikely(next == NULL)) ursa__deadlock_report(vp);
  if (ursa_unlikely(next == cur)) {                           /* our own timer woke us */
    ursa__set_state(cur, URSA__RUNNING);
    return cur->wake_result;
  }
  URSA__SWITCH_RETURN(vp, cur, next);
}

void ursa__wake_all(const struct ursa__vp *vp, struct ursa__waitq *q, int res) {
  struct ursa__thread *t;
  while ((t = ursa__q_take(vp, q)) != NULL) ursa__wake(t, res);
}

void ursa__thread_finish(struct ursa__vp *vp, void *result) {
  struct ursa__thread *cur = vp->cur, *next;
  if (cur->keys) {
    ursa__keys_run_destructors(cur);
    vp = URSA__VP_AFTER_SWITCH();                                  /* destructors may have switched */
  }
  if (cur->region) ursa__region_leave(cur->region);
  if (vp->smp) ursa__smp_finish(vp, cur, result);             /* never returns */
  cur->result = result;
  ursa__set_state(cur, URSA__ZOMBIE);
  vp->nthreads--;
  if (cur->detached) {
    ursa__reap(vp);                                           /* the previous zombie, if any */
    ursa__thread_release_handle(cur);                         /* the handle is stale at once */
    if (!cur->is_main) vp->zombie = cur;                      /* the stack: after the switch */
  } else if (cur->joiner) {
    next = cur->joiner;
    if (ursa_likely(vp->ntimers == 0 && ursa__runq_empty(vp) && next->heap_idx == 0)) {
      if (URSA__TRACING()) ursa__trace_wake(vp, next, vp->index, 0);   /* URSA_TRACE */
      next->wake_result = 0;                                  /* it would be next anyway: hand */
      goto run;                                               /* over without the run queue    */
    }
    ursa__wake(next, 0);
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
    ursa__switch_traced(vp, cur, next);                       /* URSA_TRACE (see internal.h) */
  } else {
    URSA__TSAN_LAST_SWITCH(cur, next);                        /* TSan: see ursa__thread_entry */
    ursa__switch_prepare_raw(vp, cur, next);
    ursa__ctx_switch(&cur->ctx, &next->ctx, next->wake_result);
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
  cur->wake_result = 0;
  ursa__runq_push(vp, cur);
  URSA__SWITCH_RETURN(vp, cur, next);
}

/* Out of line, so that the common yield keeps nothing live across a call and needs no frame. */
static URSA_NOINLINE int yield_timers(struct ursa__vp *vp) {
  ursa__timers_fire(vp, ursa__now());
  return yield_1(vp);
}

int ursa_yield(void) {
  URSA_VP_OR_RETURN(vp);
  vp->stats.yields++;
  if (ursa_unlikely(vp->smp)) return ursa__smp_yield(vp);
  if (ursa_unlikely(vp->ntimers != 0)) return yield_timers(vp);
  return yield_1(vp);
}

/* A yield the thread did not ask for (src/model/: a time slice or tick count ended): not counted
 * as a yield. */
int ursa__yield_involuntary(struct ursa__vp *vp) {
  if (vp->smp) return ursa__smp_yield(vp);
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
  if (vp->smp || t->state != URSA__READY || t->vp != vp) return ursa_yield();  /* SMP: see vp.c */
  ursa__prefetch_frame(t);
  vp->stats.yields++;
  ursa__set_state(cur, URSA__READY);
  cur->wake_result = 0;
  ursa__runq_replace(vp, t, cur);                 /* the caller takes t's place in the queue */
  URSA__SWITCH_RETURN(vp, cur, t);
}

int ursa_sleep_ns(uint64_t ns) {
  uint64_t now;
  URSA_VP_OR_RETURN(vp);
  if (ns == 0) return ursa_yield();
  now = ursa__now();
  vp->cur->waitq = NULL;                                      /* on no queue while asleep */
  ursa__block(vp, URSA__W_SLEEP, NULL, NULL, ns > UINT64_MAX - now ? UINT64_MAX : now + ns);
  return 0;
}

/* ---- deadlock report -------------------------------------------------------------------------- */

const char *ursa__wait_name(int kind) {
  switch (kind) {
  case URSA__W_SEM:       return "ursa_sem_wait on semaphore";
  case URSA__W_MUTEX:     return "ursa_mutex_lock on mutex";
  case URSA__W_COND:      return "ursa_cond_wait on condition variable";
  case URSA__W_BARRIER:   return "ursa_barrier_wait on barrier";
  case URSA__W_RDLOCK:    return "ursa_rwlock_rdlock on rwlock";
  case URSA__W_WRLOCK:    return "ursa_rwlock_wrlock on rwlock";
  case URSA__W_ONCE:      return "ursa_once on once";
  case URSA__W_IVAR:      return "ursa_ivar_get on I-structure";
  case URSA__W_MVAR_TAKE: return "ursa_mvar_take on M-structure";
  case URSA__W_MVAR_PUT:  return "ursa_mvar_put on M-structure";
  case URSA__W_JOIN:      return "ursa_join on thread";
  case URSA__W_SLEEP:     return "ursa_sleep_ns";
  default:                return "nothing";
  }
}

/* The wait-for graph: the thread that t waits for, when the object says who that is (a mutex's
 * owner, an rwlock's writer, a joined thread); NULL otherwise (semaphores, cells and barriers have
 * no owner).  Every thread has at most one such edge, so cycles are found in linear time. */
static struct ursa__thread *waits_for(const struct ursa__thread *t) {
  if (t->state != URSA__BLOCKED) return NULL;
  switch (t->wait_kind) {
  case URSA__W_MUTEX:  return ursa__mutex_owner(t->wait_obj);
  case URSA__W_RDLOCK:
  case URSA__W_WRLOCK: return ursa__rwlock_writer(t->wait_obj);
  case URSA__W_JOIN:   return t->wait_obj;
  default:             return NULL;
  }
}

/* Prints what t waits on, e.g. "ursa_mutex_lock on mutex 0x... held by thread 3 (b)". */
static void print_wait(FILE *f, const struct ursa__thread *t) {
  const struct ursa__thread *h = waits_for(t);
  if (t->wait_kind == URSA__W_JOIN) {
    fprintf(f, "%s %llu (%s)", ursa__wait_name(t->wait_kind), (unsigned long long)h->id, h->name);
    return;
  }
  if (t->wait_kind == URSA__W_SLEEP) fprintf(f, "%s", ursa__wait_name(t->wait_kind));
  else fprintf(f, "%s %p", ursa__wait_name(t->wait_kind), t->wait_obj);
  if (h) fprintf(f, " held by thread %llu (%s)", (unsigned long long)h->id, h->name);
}

/* Prints one thread as "thread <id> (<name>): <state or what it waits on>". */
static void print_thread(FILE *f, const struct ursa__thread *t) {
  fprintf(f, "ursa:   thread %llu (%s): ", (unsigned long long)t->id, t->name);
  switch (t->state) {
  case URSA__RUNNING: fprintf(f, "running on VP %u\n", t->vp ? t->vp->index : 0u); return;
  case URSA__READY:   fprintf(f, "ready\n"); return;
  case URSA__ZOMBIE:  fprintf(f, "finished, not yet joined\n"); return;
  default: break;
  }
  print_wait(f, t);
  if (t->heap_idx) fprintf(f, ", until %.3f s from now", (double)(int64_t)(t->deadline - ursa__now()) / 1e9);
  fprintf(f, "\n");
}

struct dump { FILE *f; int only_blocked; int n; int bt; struct ursa__thread *self; };

/* Whether t is suspended, so that its saved registers and stack can be read: never for a running
 * thread; with several VPs also not while its last switch is still saving it (on-CPU byte). */
/* With one VP a BLOCKED thread may still be the VP's current one: the VP sleeps in the kernel on
 * that thread's stack (a timed wait with nothing else to run), and its saved registers are old. */
static bool suspended(struct ursa__thread *t) {
  uint8_t s = __atomic_load_n(&t->state, __ATOMIC_RELAXED);
  if (s != URSA__READY && s != URSA__BLOCKED) return false;
  if (ursa__g.nvps == 1) return __atomic_load_n(&ursa__g.vp0.cur, __ATOMIC_RELAXED) != t;
  return !ursa__oncpu(t);
}

static void dump_one(struct ursa__thread *t, void *arg) {
  struct dump *d = arg;
  if (d->only_blocked && t->state != URSA__BLOCKED) return;
  d->n++;
  if (d->f == NULL) return;
  print_thread(d->f, t);
  if (!d->bt) return;
  if (t == d->self) ursa__print_backtrace(d->f, t, true);
  else if (suspended(t)) {
    uint8_t s = __atomic_load_n(&t->state, __ATOMIC_RELAXED);
    ursa__print_backtrace(d->f, t, false);
    if (!suspended(t) || __atomic_load_n(&t->state, __ATOMIC_RELAXED) != s)
      fprintf(d->f, "ursa:       (it was resumed while this was read: the frames may be wrong)\n");
  }
}

/* Cycle search: walk from each unvisited thread along waits_for, stamping the walk's number in
 * mark; meeting the current walk's stamp again closes a cycle, which is then printed once. */
struct cycles { FILE *f; uint64_t walk; int n; };

static void clear_mark(struct ursa__thread *t, void *arg) { URSA_UNUSED(arg); t->mark = 0; }

static void find_cycle(struct ursa__thread *t, void *arg) {
  struct cycles *c = arg;
  struct ursa__thread *u = t, *v;
  c->walk++;
  while (u && u->mark == 0) {
    u->mark = c->walk;
    u = waits_for(u);
  }
  if (u == NULL || u->mark != c->walk) return;  /* ended, or joined an earlier walk */
  c->n++;
  fprintf(c->f, "ursa: wait-for cycle:");
  v = u;
  do {
    fprintf(c->f, " thread %llu (%s) waits in ", (unsigned long long)v->id, v->name);
    print_wait(c->f, v);
    v = waits_for(v);
    fprintf(c->f, v == u ? ".\n" : ";");
  } while (v != u);
}

/* Prints every cycle of the wait-for graph; returns how many. */
static int print_cycles(FILE *f) {
  struct cycles c = { f, 0, 0 };
  ursa__thread_foreach(clear_mark, NULL);
  ursa__thread_foreach(find_cycle, &c);
  return c.n;
}

void ursa__deadlock_report(struct ursa__vp *vp) {
  /* one VP: called by the thread that blocks last, still on its own stack (self) */
  struct dump count = { NULL, 1, 0, 0, NULL }, print = { stderr, 1, 0, 1, vp->cur };
  ursa__thread_foreach(dump_one, &count);
  fprintf(stderr, "ursa: deadlock: all %d user threads blocked, no timer pending\n", count.n);
  ursa__thread_foreach(dump_one, &print);
  print_cycles(stderr);
  fflush(stderr);
  exit(3);
}

void ursa__dump_all(FILE *f, struct ursa__vp *vp, struct ursa__thread *self) {
  struct dump count = { NULL, 0, 0, 0, NULL }, print = { f, 0, 0, 1, self };
  ursa__thread_foreach(dump_one, &count);
  if (vp)
    fprintf(f, "ursa: %d threads; dumped by thread %llu on VP %u (%u VPs); %u ready on it, %u timers armed\n",
            count.n, (unsigned long long)self->id, vp->index, ursa__g.nvps, ursa__runq_len(vp), vp->ntimers);
  else
    fprintf(f, "ursa: %d threads on %u VPs; dumped on signal (URSA_DUMP_SIGNAL) while they run\n", count.n,
            ursa__g.nvps);
  ursa__thread_foreach(dump_one, &print);
  print_cycles(f);                                            /* a partial deadlock, on demand */
  fflush(f);
}

int ursa_dump(FILE *f) {
  URSA_VP_OR_RETURN(vp);
  if (f == NULL) return -EINVAL;
  ursa__dump_all(f, vp, vp->cur);
  return 0;
}
