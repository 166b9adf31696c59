/*
 * thread.h - the thread descriptor, as every layer sees it, and its states.
 *
 * Ownership (see docs/ARCHITECTURE.md):
 *   - A thread is in exactly one of these states, and the state says who owns its stack and link:
 *       URSA__RUNNING  it is vp->cur of one VP; it owns its stack; q links unused.
 *       URSA__READY    in one run structure: its VP's Protect Queue (the ring, at rq_pos, or the
 *                      ring's overflow list), a Waiver Queue, an inbox, the global queue or a
 *                      deque (SMP policies, src/sched/); the stack is not running.
 *       URSA__BLOCKED  on one wait queue (t->w.waitq, q links) or on none (sleep, join); may also sit
 *                      in a VP's timer heap (t->w.heap_idx != 0).
 *       URSA__ZOMBIE   finished; waits for ursa_join (joinable), or (detached) its handle is
 *                      already stale and its stack waits in vp->zombie for ursa__reap.
 *       URSA__GONE     forgotten by the child of a fork (src/sched/forget.c): never runs again;
 *                      on no run structure, no timer; its stack stays mapped.
 *   - With one VP (a mode other than URSA__SMPMODE) every field of the VP and of its threads is touched only by that
 *     VP's kernel thread, so none needs an atomic and no lock is taken: the core's fast paths.
 *   - With several VPs, a synchronization object's fields and its wait queue are guarded by the
 *     object's spin lock; a VP's Protect Queue, pool and counters stay owner-only; what crosses
 *     VPs (Waiver Queues, inboxes, timer heaps, the handle table's free list) says how it is
 *     guarded where it is declared.  src/sched/vp.c describes the SMP protocol.
 */
#ifndef URSA_CORE_THREAD_H
#define URSA_CORE_THREAD_H

#include "base.h"
#include "../arch/context.h"
#include "waiter.h"

#if URSA_TSAN
#include <setjmp.h>
#endif

enum ursa__state { URSA__RUNNING = 1, URSA__READY, URSA__BLOCKED, URSA__ZOMBIE, URSA__GONE };


struct ursa__thread;
struct ursa__rdheld {      /* one rwlock this thread holds for reading */
  void    *lock;
  uint32_t count;
};

struct ursa__keyval {
  void    *value;
  uint32_t gen;
};

struct ursa__thread {
  /* hot: touched by every switch and queue operation; with the saved context they fill the first
   * cache line (AArch64, ucontext: almost) or two (x86-64, whose context holds the registers).
   * The waiter first and the context right after it: a thread, its waiter and the object the
   * switch is given are one address, so no hot path converts between them. */
  struct ursa__waiter  w;            /* first: links, wait queue, object, timer, wake result
                                        (core/waiter.h); the wait queues link &t->w == t        */
  ursa__ctx_t          ctx;          /* saved context while not running, at URSA__CTX_BASE      */
  struct ursa__vp     *vp;           /* the VP t runs on                                        */
  int                  saved_errno;  /* t's errno while it is not running                       */
  uint8_t              state;        /* enum ursa__state                                        */
  uint8_t              wait_kind;    /* enum ursa__wait while BLOCKED                           */
  uint8_t              detached;
  uint8_t              own_stack;    /* not on an ursa stack (main's, a VP's idle context): never
                                        pooled, unmapped or reaped                              */

  /* cold */
  uint64_t             deadline;     /* CLOCK_MONOTONIC ns, while heap_idx != 0                 */
  void                *wait_data;    /* a value handed over by the waker (mvar): a thread's
                                        ursa__waiter_call data (ursa__waiter_data)              */
  ursa_thread_t        handle;
  void              *(*fn)(void *);
  void                *arg;
  void                *layer;        /* the record of the layer above that runs t (the POSIX
                                        layer's struct upt_thread): ursa__layer_self             */
  void                *result;
  struct ursa__waiter *joiner;       /* the waiter of ursa_join(t) (a thread's or a call
                                        waiter), if any                                         */
  /* SMP (src/sched/): where t may run, and the hand-over between a waker and a timer */
  struct ursa__vp     *home;         /* pinned: the only VP t runs on (region's, attr's, main's) */
  struct ursa__region *region;       /* the region t belongs to, or NULL                         */
  ursa__spin_t        *wait_lock;    /* the lock of the object t waits on (timers take it)       */
  struct ursa__vp     *timer_vp;     /* the VP whose heap holds t's timer (heap_idx != 0)        */
  ursa__spin_t         lock;         /* guards state ZOMBIE, joiner and detached across VPs      */
  uint8_t              claim;        /* atomic: 1 once a waker or the timer owns t's timed wait  */
  uint8_t              pinned;       /* URSA__PIN_*: whether t runs on home only (below)         */
  uint8_t              hog;          /* ran a whole balancing period or a quantum: its next
                                        wake-up may send it back to its idle VP (vp.c, spread) */
  uint8_t              handed;       /* READY through a wake-up's hand-off (sched.h,
                                        ursa__smp_handoff: 1) and not queued since (vp.c,
                                        pq_push: 0); read only while t waits in runq.next: the
                                        balancing tick leaves it to its waker's VP while that
                                        VP switches often (src/sched/policy.c, ursa__pol_timer) */
  uint8_t              daemon;       /* ursa__daemon: counted in ursa__g.daemons until it ends */
  uint32_t             pin_depth;    /* ursa_vp_pin nesting                                      */
  uint32_t             preempt_off;  /* ursa_preempt_disable nesting (src/model/preempt.c)       */
  char                *stack_lo;     /* lowest usable byte (above the guard)                    */
  size_t               stack_size;   /* usable bytes (descriptor included)                      */
  uint64_t             id;
  uint64_t             mark;         /* scratch for the reports' cycle search                   */
  char                 name[URSA_NAME_MAX];
  struct ursa__keyval *keys;         /* URSA_KEYS_MAX values, allocated at first setspecific    */
  struct ursa__rdheld  rdheld[URSA_RWLOCK_READ_MAX];
#if URSA_ASAN
  void                *asan_fake;    /* ASan fake stack of t while suspended                   */
#endif
#if URSA_TSAN
  void                *tsan_fiber;   /* the TSan fiber of t's stack: made and destroyed with the
                                        mapping (stack.c), so every thread on it reuses it       */
  struct ursa__thread *tsan_to;      /* the target of t's last switch (ursa__thread_entry)      */
  jmp_buf              tsan_jb;      /* ursa__thread_entry's frame, which makes that switch     */
#endif
#if URSA_VALGRIND
  unsigned             vg_stack;     /* VALGRIND_STACK_REGISTER id of this stack               */
#endif
};

/* pinned: a bound thread (attribute, a region's member, main) runs on home for good; ursa_vp_pin
 * and a preemption's switch pin an unpinned one for a while and unpin it after. */
enum { URSA__PIN_NONE = 0, URSA__PIN_BOUND = 1, URSA__PIN_WHILE = 2 };

/* A thread's state is written by the VP that runs or queues it and read from other VPs by join,
 * detach and the reports: relaxed atomic accesses (plain moves), so such reads are not races. */
static inline void ursa__set_state(struct ursa__thread *t, uint8_t s) {
  __atomic_store_n(&t->state, s, __ATOMIC_RELAXED);
}
/* Marks t BLOCKED in a wait of `kind` on `obj`.  What the dumps read (src/sched/report.c,
 * wait_of) is stored before the state, whose release store their acquire load of it pairs with:
 * a dump that sees this BLOCKED sees this wait's kind and object, never an earlier wait's. */
static inline void ursa__set_blocked(struct ursa__thread *t, int kind, void *obj) {
  __atomic_store_n(&t->wait_kind, (uint8_t)kind, __ATOMIC_RELAXED);
  __atomic_store_n(&t->w.wait_obj, obj, __ATOMIC_RELAXED);
  __atomic_store_n(&t->state, (uint8_t)URSA__BLOCKED, __ATOMIC_RELEASE);
}
static inline uint8_t ursa__get_state(const struct ursa__thread *t) {
  return __atomic_load_n(&t->state, __ATOMIC_RELAXED);
}


_Static_assert(offsetof(struct ursa__thread, hog) == offsetof(struct ursa__thread, pinned) + 1,
               "pinned and hog are read as one 16-bit word (src/sched/sched.h, ursa__smp_runs_here)");
_Static_assert(sizeof(struct ursa__waiter) == 40, "struct ursa__waiter: 40 bytes expected on LP64");
_Static_assert(offsetof(struct ursa__thread, w) == 0 && offsetof(struct ursa__thread, ctx) == URSA__CTX_BASE,
               "the waiter is the descriptor's head and the context follows it (arch/ctx_base.h)");
_Static_assert(offsetof(struct ursa__thread, own_stack) + 1 - sizeof(ursa__ctx_t) <= 56,
               "the hot fields of struct ursa__thread must fit one cache line with the context's end");

/* The thread whose waiter w is (w not a call waiter). */
static inline struct ursa__thread *ursa__thread_of(struct ursa__waiter *w) {
  return (struct ursa__thread *)(void *)w;                 /* w is its first member */
}
/* Where the value a waker hands to w goes (an M-structure's put to a taker, a putter's value). */
static inline void **ursa__waiter_data(struct ursa__waiter *w) {
  return ursa__waiter_is_call(w) ? &ursa__waiter_call_of(w)->data : &ursa__thread_of(w)->wait_data;
}

/* Thread-specific data (keys.c): runs the destructors of t's non-NULL values, then frees them. */
URSA_HIDDEN void ursa__keys_run_destructors(struct ursa__thread *t);

#endif /* URSA_CORE_THREAD_H */
