/*
 * internal.h - the types every part of the core shares: threads, the virtual processor (VP), wait
 * queues, and the small macro vocabulary.  Nothing here is exported (-fvisibility=hidden; internal
 * non-static functions are named ursa__<module>_<what>).
 *
 * Ownership (see docs/ARCHITECTURE.md):
 *   - A thread is in exactly one of these states, and the state says who owns its stack and link:
 *       URSA__RUNNING  it is vp->cur of one VP; it owns its stack; q links unused.
 *       URSA__READY    in one run structure: its VP's Protect Queue (the ring, at rq_pos, or the
 *                      ring's overflow list), a Waiver Queue, an inbox, the global queue or a
 *                      deque (SMP policies, src/sched/); the stack is not running.
 *       URSA__BLOCKED  on one wait queue (t->waitq, q links) or on none (sleep, join); may also sit
 *                      in a VP's timer heap (t->heap_idx != 0).
 *       URSA__ZOMBIE   finished; waits for ursa_join (joinable), or (detached) its handle is
 *                      already stale and its stack waits in vp->zombie for ursa__reap.
 *   - With one VP (vp->smp == 0) every field of the VP and of its threads is touched only by that
 *     VP's kernel thread, so none needs an atomic and no lock is taken: the core's fast paths.
 *   - With several VPs, a synchronization object's fields and its wait queue are guarded by the
 *     object's spin lock; a VP's Protect Queue, pool and counters stay owner-only; what crosses
 *     VPs (Waiver Queues, inboxes, timer heaps, the handle table's free list) says how it is
 *     guarded where it is declared.  src/sched/vp.c describes the SMP protocol.
 */
#ifndef URSA_INTERNAL_H
#define URSA_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE                         /* clock_nanosleep, MAP_STACK, pthread_getattr_np */
#endif

#include "ursa.h"
#include "../arch/context.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* ---- macro vocabulary ------------------------------------------------------------------------ */
#define ursa_likely(x)   __builtin_expect(!!(x), 1)
#define ursa_unlikely(x) __builtin_expect(!!(x), 0)
#define URSA_UNUSED(x)   ((void)(x))
#define URSA_CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))
#define URSA_HIDDEN      __attribute__((visibility("hidden")))
#define URSA_NOINLINE    __attribute__((noinline))

/* Always-on invariant check: a broken invariant is a bug in ursa; say where and abort. */
#define URSA_PANIC(msg) ursa__panic(__func__, msg)
#ifdef URSA_DEBUG
#  define URSA_ASSERT(c) do { if (ursa_unlikely(!(c))) URSA_PANIC("assertion failed: " #c); } while (0)
#else
#  define URSA_ASSERT(c) ((void)0)
#endif

#if defined(__SANITIZE_ADDRESS__)
#  define URSA_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define URSA_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_THREAD__)
#  define URSA_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define URSA_TSAN 1
#  endif
#endif

#if URSA_TSAN
#include <setjmp.h>
#endif

URSA_HIDDEN void ursa__panic(const char *where, const char *msg) __attribute__((noreturn, cold));

/* ---- spin locks (several VPs only) ------------------------------------------------------------- */
/* A word lock for the short critical sections of synchronization objects, timer heaps, inboxes and
 * the handle table's shared free list: test-and-test-and-set, spinning with a pause and then
 * sched_yield (a holder may have been preempted by the kernel).  Nothing blocks or switches while
 * holding one.  Lock order: object lock, then a thread's lock (join), then a timer-heap lock, then
 * an inbox lock; the global queue's and the handle table's locks are leaves. */
typedef uint32_t ursa__spin_t;
URSA_HIDDEN void ursa__spin_lock_slow(ursa__spin_t *l);
static inline void ursa__spin_lock(ursa__spin_t *l) {
  /* acquire: pairs with the release store of ursa__spin_unlock */
  if (ursa_unlikely(__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE) != 0)) ursa__spin_lock_slow(l);
}
static inline void ursa__spin_unlock(ursa__spin_t *l) {
  __atomic_store_n(l, 0u, __ATOMIC_RELEASE);       /* pairs with the acquire exchange above */
}

/* ---- threads ---------------------------------------------------------------------------------- */
enum ursa__state { URSA__RUNNING = 1, URSA__READY, URSA__BLOCKED, URSA__ZOMBIE };

/* What a blocked thread waits on: printed by the deadlock report. */
enum ursa__wait {
  URSA__W_NONE = 0, URSA__W_SEM, URSA__W_MUTEX, URSA__W_COND, URSA__W_BARRIER, URSA__W_RDLOCK,
  URSA__W_WRLOCK, URSA__W_ONCE, URSA__W_IVAR, URSA__W_MVAR_TAKE, URSA__W_MVAR_PUT, URSA__W_JOIN,
  URSA__W_SLEEP
};

struct ursa__thread;

/* A FIFO of threads linked through their q fields; NULL-terminated both ways so that a queue inside
 * a statically initialized (all-zero) object is valid.  push/pop/remove are O(1). */
struct ursa__waitq {
  struct ursa__thread *head, *tail;
};

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
   * cache line (AArch64, ucontext) or two (x86-64, whose context holds the registers) */
  ursa__ctx_t          ctx;          /* saved context while not running                        */
  union {
    struct {                         /* BLOCKED: links in the wait queue t is on               */
      struct ursa__thread *qnext, *qprev;
    };
    uint32_t           rq_pos;       /* READY in the ring: t's position in vp->runq             */
  };
  struct ursa__waitq  *waitq;        /* the wait queue of t's timed wait, or NULL (see q_pop)   */
  struct ursa__vp     *vp;           /* the VP t runs on                                        */
  void                *wait_obj;     /* the object t waits on, for reports                      */
  int                  saved_errno;  /* t's errno while it is not running                       */
  int                  wake_result;  /* 0, or -ETIMEDOUT when a timer ended the wait            */
  uint8_t              state;        /* enum ursa__state                                        */
  uint8_t              wait_kind;    /* enum ursa__wait while BLOCKED                           */
  uint8_t              detached;
  uint8_t              is_main;      /* the thread that called ursa_init: not on an ursa stack  */
  uint32_t             heap_idx;     /* 1-based index in vp->timers, 0 when no timer is armed   */

  /* cold */
  uint64_t             deadline;     /* CLOCK_MONOTONIC ns, while heap_idx != 0                 */
  void                *wait_data;    /* a value handed over by the waker (mvar)                 */
  ursa_thread_t        handle;
  void              *(*fn)(void *);
  void                *arg;
  void                *result;
  struct ursa__thread *joiner;       /* the thread blocked in ursa_join(t), if any              */
  /* SMP (src/sched/): where t may run, and the hand-over between a waker and a timer */
  struct ursa__vp     *home;         /* pinned: the only VP t runs on (region's, attr's, main's) */
  struct ursa__region *region;       /* the region t belongs to, or NULL                         */
  ursa__spin_t        *wait_lock;    /* the lock of the object t waits on (timers take it)       */
  struct ursa__vp     *timer_vp;     /* the VP whose heap holds t's timer (heap_idx != 0)        */
  ursa__spin_t         lock;         /* guards state ZOMBIE, joiner and detached across VPs      */
  uint8_t              claim;        /* atomic: 1 once a waker or the timer owns t's timed wait  */
  uint8_t              pinned;       /* t runs on home only                                      */
  uint8_t              in_extra;     /* READY in its VP's overflow list, not in the ring         */
  uint8_t              is_shell;     /* a stackless thread's wait shell (src/pt/): set once, so
                                        any VP may read it without a lock                        */
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

/* A thread's state is written by the VP that runs or queues it and read from other VPs by join,
 * detach and the reports: relaxed atomic accesses (plain moves), so such reads are not races. */
static inline void ursa__set_state(struct ursa__thread *t, uint8_t s) {
  __atomic_store_n(&t->state, s, __ATOMIC_RELAXED);
}
static inline uint8_t ursa__get_state(const struct ursa__thread *t) {
  return __atomic_load_n(&t->state, __ATOMIC_RELAXED);
}

/* ---- the virtual processor -------------------------------------------------------------------- */

/* The run queue: a ring of thread pointers owned by its VP (no lock, no atomics), like Lesser
 * Bear's Protect Queue.  Positions are free-running; a READY thread knows its position (rq_pos),
 * so ursa_yield_to can take the target out of the middle by putting the caller in its place,
 * without touching any other thread.  The capacity is kept above the number of live threads
 * (ursa__sched_reserve), so a push never allocates and never finds the ring full. */
struct ursa__runq {
  struct ursa__thread *next;         /* the oldest ready thread, while the ring is empty        */
  struct ursa__thread **buf;
  uint32_t             mask;         /* capacity - 1 (a power of two)                           */
  uint32_t             head, tail;   /* free-running positions                                  */
  /* several VPs: the overflow list of a full ring (FIFO, via qnext; src/sched/vp.c).  While it is
   * in use every push goes there. */
  uint32_t             xlen;
  struct ursa__thread *xhead, *xtail;
};
struct ursa__vp {
  struct ursa__thread *cur;          /* the running thread                                      */
  struct ursa__runq    runq;         /* READY threads, FIFO: the Protect Queue (owner only)     */
  uint8_t              smp;          /* several VPs: objects lock, switches go through src/sched */
  uint8_t              slow;         /* smp, or URSA_TRACE on: the hottest paths take their
                                        checked copies (see URSA__FAST)                         */
  int                 *errno_p;      /* &errno of this VP's kernel thread                       */
  struct ursa__thread *zombie;       /* a detached thread that exited; released after the switch */
  struct ursa__thread **timers;      /* 1-based binary min-heap on deadline; [0] unused          */
  uint32_t             ntimers;
  uint32_t             timers_cap;   /* >= live threads + 1, so arming a timer never allocates   */
  int64_t              nthreads;     /* live threads counted here (one VP: the live threads)    */
  unsigned             index;
  ursa_stats_t         stats;
  /* stack pool (SplitThreads' queue of uninitialized threads): LIFO of free default-size stacks */
  void                *pool;
  size_t               pool_len;
  struct ursa__thread *main_thread;  /* the thread that called ursa_init (VP 0 only)           */
  struct ursa__smp    *x;            /* SMP state (src/sched/sched_smp.h), NULL with one VP      */
  ursa__spin_t         tlock;        /* guards the timer heap when smp (wakers cancel timers)   */
  /* preemption (src/model/preempt.c): written by this VP's kernel thread only, by its code or by
   * its timer signal's handler (relaxed atomics or exchanges where both write) */
  uint8_t              pre_pending;  /* a preemption was deferred: take it at the next safe point */
  uint8_t              pre_timer_on; /* the VP's cp-ts timer exists                              */
  uint8_t              pre_armed;    /* ... and is armed (disarmed while the VP sleeps)          */
  int32_t              ic_left;      /* cp-ic: ursa_tick calls left before the next switch       */
  uint64_t             pre_sw;       /* stats.switches at the last timer tick                    */
  uint64_t             pending_sw;   /* stats.switches when the pending preemption was deferred  */
  void                *pre_timer;    /* timer_t of the cp-ts timer                               */
  /* the rotator's interval timer (URSA_ROTATE_US, src/model/preempt.c): this VP's kernel thread */
  uint8_t              rot_timer_on; /* it exists                                                */
  uint8_t              rot_armed;    /* ... and is armed (disarmed while the VP sleeps)          */
  void                *rot_timer;    /* timer_t                                                  */
};

/* The VP of the calling kernel thread, NULL outside ursa.  Initial-exec TLS: one %fs load. */
extern __thread struct ursa__vp *ursa__tls_vp __attribute__((tls_model("initial-exec"))) URSA_HIDDEN;

/* The same, for code that has switched since it last read it: a call that may switch may resume
 * on another VP (another kernel thread), and compilers keep a TLS variable's address across calls
 * within a function (Clang does at -O2).  Not inlined, so the address is computed afresh. */
URSA_HIDDEN struct ursa__vp *ursa__vp_current(void) __attribute__((noinline));
/* With one VP there is one kernel thread, and the cached address is right: no call. */
#define URSA__VP_AFTER_SWITCH() (ursa_likely(ursa__g.nvps <= 1) ? ursa__tls_vp : ursa__vp_current())

/* The handle table: slot i holds thread t while t is live or unjoined; the slot's generation is
 * bumped when t is released, so an old handle no longer matches.  The table is one reserved
 * virtual range, made accessible URSA__SLOT_GROW slots at a time, that stays mapped until
 * ursa_fini, so looking up any handle value (checked against nslots first) is memory-safe and
 * costs one bounds check and one load.
 * Handle = gen << 32 | (index + 1); generations start at 1, so small integers are never handles. */
#define URSA__SLOT_GROW 4096u                /* slots readied at a time                 */
#define URSA__SLOTS_MAX (1u << 24)           /* 16,777,216 threads at most (256 MiB of address space) */
struct ursa__slot {
  struct ursa__thread *t;
  uint32_t             gen;
  uint32_t             next_free;            /* index + 1 of the next free slot, 0 = end */
};
struct ursa__slots {
  struct ursa__slot *slot;                   /* URSA__SLOTS_MAX entries reserved        */
  uint32_t           nslots;                 /* slots readied so far                    */
  uint32_t           free_head;              /* index + 1 of the first free slot, 0 = none */
};

/* Process-wide settings, fixed by ursa_init. */
struct ursa__global {
  size_t   stack_size;               /* usable bytes of a default stack                         */
  size_t   stack_cache;
  size_t   guard_size;
  size_t   page;
  int      stats;
  int      guard_mode;               /* 0 auto, 1 mprotect                                      */
  int      initialized;
  uint64_t next_id;                  /* one VP: the next id; SMP: next block of ids (atomic) */
  struct ursa__slots slots;
  ursa__spin_t slot_lock;            /* guards slots.free_head and growth when smp           */
  struct ursa__vp vp0;
  /* SMP (src/sched/) */
  unsigned nvps;                     /* VPs, fixed by ursa_init                               */
  int      policy;                   /* enum ursa__policy                                     */
  unsigned pq_cap;                   /* Protect Queue capacity (rotator, lb2, steal)          */
  unsigned wq_cap;                   /* Waiver Queue capacity                                 */
  int      pin;                      /* URSA_PIN: pin VP i to the i-th allowed CPU            */
  int      region_balance;           /* URSA_REGION_BALANCE (region.c)                        */
  int      smp_handoff;              /* a wake-up may take the inline hand-off (ursa__smp_handoff_ok):
                                        policy not global, no hard-build chaos (vp.c)          */
  struct ursa__vp **vps;             /* vps[i], vps[0] == &vp0                                */
  int64_t  live;                     /* atomic: live threads (SMP)                            */
  int      sleepers;                 /* atomic: VPs asleep with no timer (vp.c)               */
  int      idle_vps;                 /* atomic: VPs in their idle context (policy.c balances)  */
  uint32_t timers_cap_all;           /* every VP's heap holds at least this many (SMP)        */
  /* execution model (src/model/) */
  int      model;                    /* URSA_MODEL_*                                          */
  uint64_t quantum_ns;               /* cp-ts                                                 */
  int32_t  switch_count;             /* cp-ic                                                 */
  int      preempt_live;             /* cp-ts handlers act (set last by ursa_init, cleared first
                                        by ursa_fini; relaxed: read by the handler)           */
  uint64_t rotate_ns;                /* the rotator's interval timer period, 0: none          */
};
URSA_HIDDEN extern struct ursa__global ursa__g;

/* ---- scheduler trace (trace.c; URSA_TRACE=file, docs/TRACE.md) ------------------------------- */
/* Every hook is one predictable branch on the flag ursa__trace_flag.on and, only when it is set,
 * an out-of-line call that appends an event to the calling VP's own buffer (no lock, no atomics).
 * The build option -DURSA_WITH_TRACE=OFF compiles the hooks out (URSA_NO_TRACE).
 *
 * The flag is 1 while URSA_TRACE records: set by ursa_init before VPs 1..N-1 start, cleared by
 * ursa_fini after they stopped (or by the atexit writer); read with relaxed loads (plain moves).
 * It sits alone at page offset 0xf00 (trace.c aligns the variable to a page): the switch path
 * reads it among its stores to thread descriptors, and a load whose address matches an in-flight
 * store's in the low 12 bits is delayed (4K aliasing).  Measured on the one-VP yield ping-pong:
 * 7.8 ns/switch with the flag at offsets 0x000, 0x3cc, 0xb48 or 0xf00, 9.9 ns at 0x34c (where a
 * field of ursa__g happened to land; which store it met was not identified).  The hot fields of
 * descriptors on ursa stacks, and the frames below them, lie below 0xec0 whatever their cache
 * colour (stack.c): 0xf00 keeps clear of them. */
struct ursa__trace_flag {
  char pad[0xf00];
  int  on;
};
URSA_HIDDEN extern struct ursa__trace_flag ursa__trace_flag;
#ifdef URSA_NO_TRACE
#  define URSA__TRACING() 0
#else
#  define URSA__TRACING() ursa_unlikely(__atomic_load_n(&ursa__trace_flag.on, __ATOMIC_RELAXED) != 0)
#endif
struct ursa__thread;
/* A switch on vp from `from` (vp->cur) to `to`: ends from's slice, starts to's. */
URSA_HIDDEN void ursa__trace_switch(struct ursa__vp *vp, const struct ursa__thread *from,
                                    const struct ursa__thread *to) __attribute__((cold));
/* self (running the waker) makes the BLOCKED thread t ready to run on VP to_vp, with result res. */
URSA_HIDDEN void ursa__trace_wake(struct ursa__vp *self, const struct ursa__thread *t, unsigned to_vp,
                                  int res) __attribute__((cold));
/* vp starts (begin = 1) or ends (0) a wait in the kernel with nothing to run. */
URSA_HIDDEN void ursa__trace_idle(struct ursa__vp *vp, int begin) __attribute__((cold));
/* Hook point for preemption (issue #4, not written yet): the safe point that takes the CPU from
 * the running thread t calls this before its switch, so the trace marks the slice's end as a
 * preemption.  Nothing calls it today. */
URSA_HIDDEN void ursa__trace_preempt(struct ursa__vp *vp, const struct ursa__thread *t) __attribute__((cold));
/* ursa_init: reads URSA_TRACE, opens the file, sets the flag (before VPs 1..N-1 start). */
URSA_HIDDEN void ursa__trace_init(void);
/* ursa_fini, once every VP's kernel thread is joined: writes the file and frees the buffers. */
URSA_HIDDEN void ursa__trace_fini(void);
/* A failed ursa_init: drops the buffers and the file. */
URSA_HIDDEN void ursa__trace_discard(void);

/* ---- wait queues (queue.h-style inline helpers) ----------------------------------------------- */
static inline bool ursa__q_empty(const struct ursa__waitq *q) { return q->head == NULL; }

static inline void ursa__q_push(struct ursa__waitq *q, struct ursa__thread *t) {
  t->qnext = NULL;
  t->qprev = q->tail;
  if (q->tail) q->tail->qnext = t; else q->head = t;
  q->tail = t;
  t->waitq = q;
}

/* Pop and remove leave t->waitq as it was: it is read only for a BLOCKED thread with a timer
 * (to leave its queue on timeout), and every timed wait sets it first (push, or NULL for a sleep). */
static inline struct ursa__thread *ursa__q_pop(struct ursa__waitq *q) {
  struct ursa__thread *t = q->head;
  if (t) {
    q->head = t->qnext;
    if (q->head) q->head->qprev = NULL; else q->tail = NULL;
  }
  return t;
}

/* Takes the first waiter of q that the caller may wake, NULL when none; the caller holds the
 * object's lock.  With several VPs a timed waiter may have been claimed by its timer (which then
 * removes it from q itself and wakes it with -ETIMEDOUT): such a waiter is passed over, so a post,
 * unlock or put goes to a thread that will see it.  Claim protocol: src/sched/vp.c. */
URSA_HIDDEN bool ursa__claim_for_waker(struct ursa__thread *t);
static inline struct ursa__thread *ursa__q_take_if(bool smp, struct ursa__waitq *q) {
  struct ursa__thread *t;
  if (ursa_likely(!smp)) return ursa__q_pop(q);      /* one VP: timers fire on this VP, in order */
  while ((t = ursa__q_pop(q)) != NULL) {
    if (ursa_likely(t->timer_vp == NULL) || ursa__claim_for_waker(t)) return t;
  }
  return NULL;
}
static inline struct ursa__thread *ursa__q_take(const struct ursa__vp *vp, struct ursa__waitq *q) {
  return ursa__q_take_if(vp->smp, q);
}

static inline void ursa__q_remove(struct ursa__waitq *q, struct ursa__thread *t) {
  if (t->qprev) t->qprev->qnext = t->qnext; else q->head = t->qnext;
  if (t->qnext) t->qnext->qprev = t->qprev; else q->tail = t->qprev;
}

/* ---- run queue --------------------------------------------------------------------------------- */

/* The run queue's order is `next` (when set) and then the ring.  `next` is filled only while the
 * ring is empty, so it always holds the oldest ready thread and FIFO order is kept; a hand-off
 * between two threads (a post and a wait, a ping-pong of yields) then never touches the ring. */

/* Appends the READY thread t.  Executed only by the owning VP. */
static inline void ursa__runq_push(struct ursa__vp *vp, struct ursa__thread *t) {
  struct ursa__runq *q = &vp->runq;
  if (q->next == NULL && q->head == q->tail) {
    q->next = t;
    return;
  }
  URSA_ASSERT(q->tail - q->head <= q->mask);
  t->rq_pos = q->tail;
  q->buf[q->tail++ & q->mask] = t;
}

/* Removes and returns the first thread, NULL when none.  Executed only by the owning VP. */
static inline struct ursa__thread *ursa__runq_pop(struct ursa__vp *vp) {
  struct ursa__runq *q = &vp->runq;
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
  if (q->next == out) {
    q->next = in;
    return;
  }
  in->rq_pos = out->rq_pos;
  q->buf[out->rq_pos & q->mask] = in;
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
       if (ursa__get_state(from) == URSA__ZOMBIE && !(from)->is_main)                     \
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
       r_ = ursa__ctx_switch(&(from)->ctx, &(to)->ctx, (to)->wake_result);           \
       __sanitizer_finish_switch_fiber((from)->asan_fake, NULL, NULL);                    \
       return r_;                                                                         \
     } while (0)
#else
#  define URSA__SWITCH_RETURN_RAW(vp, from, to)                                           \
     do {                                                                                 \
       URSA__TSAN_LAST_SWITCH(from, to);                                                  \
       ursa__switch_prepare_raw(vp, from, to);                                                  \
       return ursa__ctx_switch(&(from)->ctx, &(to)->ctx, (to)->wake_result);         \
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

URSA_HIDDEN int  ursa__yield_involuntary(struct ursa__vp *vp);   /* src/model/ */
URSA_HIDDEN int  ursa__block_slow(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock, uint64_t deadline);
URSA_HIDDEN void ursa__timer_cancel(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__timer_arm(struct ursa__vp *vp, struct ursa__thread *t, uint64_t deadline);
/* Several VPs: the end of ursa__block once cur->timer_vp is set (its timer armed, or NULL):
 * marks the running thread BLOCKED on obj, releases lock (now a waker may make it READY, even
 * before it is saved: the on-CPU byte covers that) and switches out (src/sched/vp.c). */
URSA_HIDDEN int  ursa__smp_block(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock);
/* Several VPs: finishing the running thread (src/sched/vp.c). */
URSA_HIDDEN void ursa__smp_finish(struct ursa__vp *vp, struct ursa__thread *cur, void *result) __attribute__((noreturn));

/* Blocks the running thread until ursa__wake; it must already be on the wait queue of obj (or on
 * none).  lock is obj's lock (NULL for none): held by the caller when vp->smp, released here once
 * the thread is marked BLOCKED.  deadline is CLOCK_MONOTONIC ns, 0 for none.  Returns the wake
 * result: 0, or -ETIMEDOUT when the deadline passed (the thread has then been removed from its
 * wait queue).  The common one-VP case (no deadline, no timers, a thread ready) is inline and ends
 * in the switch's tail call.  Executed only by the running thread of vp. */
/* The modes of the hottest paths (see URSA__ALWAYS_INLINE): URSA__FAST when the VP is neither
 * SMP nor traced (vp->slow == 0: no test of either is left in the code), URSA__CHECKED for one VP
 * that may be traced, URSA__SMPMODE for several VPs. */
enum { URSA__FAST = 0, URSA__CHECKED = 1, URSA__SMPMODE = 2 };

static inline int ursa__block_m(int mode, struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock,
                                uint64_t deadline) {
  struct ursa__thread *cur = vp->cur, *next;
  if (mode == URSA__SMPMODE && deadline == 0) {       /* several VPs, no deadline: src/sched */
    cur->timer_vp = NULL;
    return ursa__smp_block(vp, kind, obj, lock);
  }
  if (ursa_unlikely(deadline != 0 || mode == URSA__SMPMODE || vp->ntimers != 0 || ursa__runq_empty(vp)))
    return ursa__block_slow(vp, kind, obj, lock, deadline);
  next = ursa__runq_pop(vp);
  if (mode == URSA__FAST) {                  /* one VP: plain stores (the compiler merges them) */
    cur->state = URSA__BLOCKED;
    cur->wait_kind = (uint8_t)kind;
    cur->wait_obj = obj;                     /* (wake_result: every waker sets it) */
    vp->stats.blocks++;
    URSA__SWITCH_RETURN_RAW(vp, cur, next);
  }
  ursa__set_state(cur, URSA__BLOCKED);
  __atomic_store_n(&cur->wait_kind, (uint8_t)kind, __ATOMIC_RELAXED);
  __atomic_store_n(&cur->wait_obj, obj, __ATOMIC_RELAXED);
  vp->stats.blocks++;
  URSA__SWITCH_RETURN(vp, cur, next);
}
static inline int ursa__block_if(bool smp, struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock,
                                 uint64_t deadline) {
  return ursa__block_m(smp ? URSA__SMPMODE : URSA__CHECKED, vp, kind, obj, lock, deadline);
}
static inline int ursa__block(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock, uint64_t deadline) {
  return ursa__block_if(vp->smp, vp, kind, obj, lock, deadline);
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

/* Makes the BLOCKED thread t READY with wake result res and removes its timer.  t must already be
 * off every wait queue (taken by ursa__q_take).  Never switches.  One VP: t goes to the tail of
 * the run queue.  Several VPs: t runs on the waker's VP unless it is pinned (see vp.c). */
/* Several VPs: make t READY where it belongs (src/sched/vp.c); self is the waker's VP. */
URSA_HIDDEN void ursa__smp_wake(struct ursa__vp *self, struct ursa__thread *t, int res);
/* One VP, t without a timer: READY at the tail of the run queue. */
static inline void ursa__wake_ready(struct ursa__thread *t, int res) {
  t->wake_result = res;
  ursa__set_state(t, URSA__READY);                    /* wait_kind is read only while BLOCKED */
  ursa__runq_push(t->vp, t);
}
/* One VP, the rare cases: t has a timer (cancelled first), or URSA_TRACE records the wake-up.
 * One out-of-line call for both keeps callers frameless (with two, GCC gave sem_post a frame). */
URSA_HIDDEN void ursa__wake_slow(struct ursa__thread *t, int res);
/* Several VPs: whether t, made READY by a thread of self, takes the common hand-off: t is unpinned
 * and goes to the front of self's Protect Queue, which is empty (ring, next and overflow list), so
 * it is below what any policy keeps (ursa__pol_keep >= 1) and no shared structure is involved.
 * The policy is not global and the hard build's chaos is off (ursa__g.smp_handoff).  Otherwise
 * src/sched/vp.c's ready_slow decides.  Executed only by self's running thread or idle context. */
static inline bool ursa__smp_handoff_ok(const struct ursa__vp *self, const struct ursa__thread *t) {
  const struct ursa__runq *q = &self->runq;
  return q->next == NULL && q->head == q->tail && q->xhead == NULL && t->region == NULL &&
         !t->pinned && ursa__g.smp_handoff;
}
static inline void ursa__smp_handoff(struct ursa__vp *self, struct ursa__thread *t) {
  t->vp = self;
  t->in_extra = 0;
  self->runq.next = t;                       /* ursa__runq_push into an empty queue */
}
static inline void ursa__wake_m(int mode, struct ursa__thread *t, int res) {
  URSA_ASSERT(t->state == URSA__BLOCKED);
  if (mode == URSA__SMPMODE) {               /* several VPs: src/sched decides where t runs */
    struct ursa__vp *self = ursa__tls_vp;
    /* the common case inline: no timer to cancel (the caller holds the lock t waited under, so
     * timer_vp is stable), not a wait shell, not traced, the hand-off */
    if (ursa_likely(t->timer_vp == NULL && !t->is_shell && ursa__smp_handoff_ok(self, t)) &&
        !URSA__TRACING()) {
      t->wake_result = res;
      ursa__set_state(t, URSA__READY);
      ursa__smp_handoff(self, t);
      return;
    }
    ursa__smp_wake(self, t, res);
    return;
  }
  if (ursa_unlikely(t->heap_idx != 0) || (mode != URSA__FAST && URSA__TRACING())) {
    ursa__wake_slow(t, res);
    return;
  }
  ursa__wake_ready(t, res);
}
static inline void ursa__wake_if(bool smp, struct ursa__thread *t, int res) {
  if (ursa_unlikely(smp)) ursa__wake_m(URSA__SMPMODE, t, res);
  else ursa__wake_m(URSA__CHECKED, t, res);
}
static inline void ursa__wake(struct ursa__thread *t, int res) { ursa__wake_if(t->vp->smp, t, res); }

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

/* Wakes every thread of q in order. */
URSA_HIDDEN void ursa__wake_all(const struct ursa__vp *vp, struct ursa__waitq *q, int res);

/* The entry of every new thread's context (runs fn, then finishes the thread). */
URSA_HIDDEN void ursa__thread_entry(void *from) __attribute__((noreturn));

/* Ends the running thread: never returns. */
URSA_HIDDEN void ursa__thread_finish(struct ursa__vp *vp, void *result) __attribute__((noreturn));

/* Wakes, with -ETIMEDOUT, every thread of the VP whose deadline is at or before now. */
URSA_HIDDEN void ursa__timers_fire(struct ursa__vp *vp, uint64_t now);
URSA_HIDDEN uint64_t ursa__now(void);

/* Converts an absolute deadline on clock to CLOCK_MONOTONIC ns: -EINVAL for a bad clock or
 * tv_nsec.  A deadline already passed gives 1 (the earliest representable). */
URSA_HIDDEN int ursa__deadline(int clock, const struct timespec *abstime, uint64_t *out);

/* ---- threads and stacks (thread.c, stack.c) --------------------------------------------------- */
/* The thread of handle h, NULL when h is stale or was never a handle. */
static inline struct ursa__thread *ursa__thread_get(ursa_thread_t h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t idx = (uint32_t)v - 1u;           /* 0xffffffff for a low half of 0: out of range */
  const struct ursa__slot *s;
  if (ursa_unlikely(idx >= ursa__g.slots.nslots)) return NULL;
  s = &ursa__g.slots.slot[idx];
  if (ursa_unlikely(s->gen != (uint32_t)(v >> 32) || s->t == NULL)) return NULL;
  return s->t;
}
/* Releases a finished thread: handle (goes stale) and stack (back to the pool).  The two halves
 * are separate for detached threads, whose stack is still in use when the handle is released. */
URSA_HIDDEN void ursa__thread_release(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__thread_release_handle(struct ursa__thread *t);
URSA_HIDDEN void ursa__thread_release_stack(struct ursa__vp *vp, struct ursa__thread *t);
URSA_HIDDEN void ursa__reap(struct ursa__vp *vp);
/* Grows the timer heap and the run queue for nthreads live threads.  -ENOMEM. */
URSA_HIDDEN int  ursa__sched_reserve(struct ursa__vp *vp, uint64_t nthreads);
URSA_HIDDEN int  ursa__timers_reserve(struct ursa__vp *vp, uint64_t nthreads);
/* An alternate signal stack for the calling kernel thread (the overflow report runs on it). */
URSA_HIDDEN void ursa__altstack_setup(void **mem);
URSA_HIDDEN void ursa__altstack_teardown(void *mem);
/* Copies every VP's counters for ursa_stats after ursa_fini (runtime.c); VPs stopped. */
URSA_HIDDEN void ursa__stats_keep(void);
/* Regions (src/sched/region.c) */
struct ursa__region;
URSA_HIDDEN struct ursa__vp *ursa__region_vp(const struct ursa__region *r);
URSA_HIDDEN void ursa__regions_apply(struct ursa__vp *vp, const struct ursa__region *stays);
URSA_HIDDEN void ursa__regions_balance(struct ursa__vp *vp, const struct ursa__region *stays);
URSA_HIDDEN struct ursa__region *ursa__region_of(ursa_region_t *r);
URSA_HIDDEN void ursa__region_join(struct ursa__region *r);
URSA_HIDDEN void ursa__region_leave(struct ursa__region *r);
/* Calls fn for every live thread (for reports).  Slow path. */
URSA_HIDDEN void ursa__thread_foreach(void (*fn)(struct ursa__thread *, void *), void *arg);
URSA_HIDDEN int  ursa__threads_init(void);
URSA_HIDDEN void ursa__threads_fini(void);

/* A stack: [map, map + guard) is the guard, [lo, lo + size) usable; the thread descriptor sits at
 * the top.  Returns the descriptor location, or NULL with *err = -EAGAIN. */
URSA_HIDDEN struct ursa__thread *ursa__stack_get_slow(struct ursa__vp *vp, size_t size, int *err);
URSA_HIDDEN void ursa__stack_put_slow(struct ursa__vp *vp, struct ursa__thread *t);

static inline struct ursa__thread *ursa__stack_get(struct ursa__vp *vp, size_t size, int *err) {
#if !URSA_ASAN
  struct ursa__thread *t = vp->pool;
  if (ursa_likely(t != NULL && size == ursa__g.stack_size)) {   /* warm pool: no system call */
    vp->pool = t->qnext;
    vp->pool_len--;
    return t;
  }
#endif
  return ursa__stack_get_slow(vp, size, err);
}

static inline void ursa__stack_put(struct ursa__vp *vp, struct ursa__thread *t) {
  if (ursa_likely(t->stack_size == ursa__g.stack_size && vp->pool_len < ursa__g.stack_cache)) {
    t->qnext = vp->pool;
    vp->pool = t;
    vp->pool_len++;
    return;
  }
  ursa__stack_put_slow(vp, t);
}
URSA_HIDDEN int  ursa__stack_prealloc(struct ursa__vp *vp, size_t n);
URSA_HIDDEN void ursa__stack_pool_drain(struct ursa__vp *vp);
URSA_HIDDEN int  ursa__overflow_handler_install(void);
URSA_HIDDEN void ursa__overflow_handler_remove(void);

URSA_HIDDEN void ursa__keys_run_destructors(struct ursa__thread *t);
URSA_HIDDEN const char *ursa__wait_name(int kind);
/* The thread holding a mutex / write-holding an rwlock (NULL if none): for the wait-for graph. */
URSA_HIDDEN struct ursa__thread *ursa__mutex_owner(void *mutex);
URSA_HIDDEN struct ursa__thread *ursa__rwlock_writer(void *rwlock);
URSA_HIDDEN void ursa__deadlock_report(struct ursa__vp *vp) __attribute__((noreturn));

/* ---- wait shells (src/pt/pt_sched.c) ------------------------------------------------------------
 * A stackless thread (include/ursa/pt_sched.h) that waits on an object of the core borrows a
 * "shell": a struct ursa__thread without a stack, never in the handle table, queued where a
 * blocked thread would be (a wait queue, a joiner field) for the duration of that one wait.  Its
 * heap_idx is URSA__HEAP_SHELL, so the one-VP wake takes its existing slow branch
 * (ursa__wake_m: heap_idx != 0) and ursa__wake_slow hands the shell to ursa__pts_shell_wake
 * instead of a run queue; with several VPs ursa__smp_wake does the same on is_shell (a thread's
 * heap_idx may be changing there, under another VP's timer lock).  Nothing else of the core runs
 * a shell. */
#define URSA__HEAP_SHELL UINT32_MAX
/* Called by the core's wake paths for a shell, with the wake result: makes its stackless thread
 * ready on its executor.  Takes only the executor's lock (a leaf, like an inbox lock). */
URSA_HIDDEN void ursa__pts_shell_wake(struct ursa__thread *shell, int res);
/* ursa_join for a shell (thread.c): 0 when t had finished (released here), 1 when shell is now
 * t's joiner (woken when t finishes; the executor then calls ursa__join_async_done), -EINVAL or
 * -EDEADLK as ursa_join.  Never blocks. */
URSA_HIDDEN int  ursa__join_async(struct ursa__vp *vp, struct ursa__thread *t, struct ursa__thread *shell);
URSA_HIDDEN void ursa__join_async_done(struct ursa__vp *vp, struct ursa__thread *t);
/* ursa_sem_wait for a shell (sem.c): 0 when a unit was taken, 1 when shell is queued (a post hands
 * it a unit and wakes it), -EINVAL for a bad semaphore.  Never blocks. */
URSA_HIDDEN int  ursa__sem_wait_async(ursa_sem_t *s, struct ursa__thread *shell);
/* The same for the cells (cells.c): ivar get, mvar put and take; 0 done now, 1 queued, -EINVAL.
 * A woken ivar shell reads the value with ursa__ivar_value(wait_obj); a woken mvar taker finds it
 * in shell->wait_data. */
URSA_HIDDEN int   ursa__ivar_get_async(ursa_ivar_t *v, struct ursa__thread *shell, void **value);
URSA_HIDDEN void *ursa__ivar_value(void *ivar);
URSA_HIDDEN int   ursa__mvar_put_async(ursa_mvar_t *v, struct ursa__thread *shell, void *value);
URSA_HIDDEN int   ursa__mvar_take_async(ursa_mvar_t *v, struct ursa__thread *shell, void **value);
/* Every thread, its state, wait object and backtrace, and the wait-for cycles, to f.  self is the
 * calling ursa thread, or NULL from the dump thread (src/core/runtime.c, URSA_DUMP_SIGNAL). */
URSA_HIDDEN void ursa__dump_all(FILE *f, struct ursa__vp *vp, struct ursa__thread *self);
/* The call stack of t (suspended, or self: the caller's own), one "#n pc function+off (module)"
 * line per frame, at most URSA__BT_MAX (src/core/backtrace.c). */
#define URSA__BT_MAX 32
/* URSA_DUMP_SIGNAL (src/core/dumpsig.c): started at the end of ursa_init, stopped first in fini. */
/* A number from the environment within [lo, hi]; 0 when unset, and with a warning when it is not
 * such a number (runtime.c). */
URSA_HIDDEN unsigned long ursa__env_range(const char *name, unsigned long lo, unsigned long hi);
URSA_HIDDEN void ursa__dumpsig_start(void);
URSA_HIDDEN void ursa__dumpsig_stop(void);
URSA_HIDDEN void ursa__print_backtrace(FILE *f, const struct ursa__thread *t, bool self);

/* Allocation-failure injection for the hard test build (-DURSA_TEST_HARD=ON): every allocation
 * and mapping ursa makes first asks URSA__FAIL(), which is true for the URSA_FAIL_AT-th one
 * counted from ursa_init (Argobots' rtrace method).  Always false in other builds. */
#if URSA_TEST_HARD
URSA_HIDDEN bool ursa__fail_now(void);
#  define URSA__FAIL() ursa_unlikely(ursa__fail_now())
#else
#  define URSA__FAIL() false
#endif

/* The running VP, or return -EPERM from the calling API function. */
#define URSA_VP_OR_RETURN(vp)                                    \
  struct ursa__vp *vp = ursa__tls_vp;                            \
  if (ursa_unlikely(vp == NULL)) return -EPERM

/* Object magic numbers: 0 is "statically initialized", DEAD is "destroyed". */
#define URSA__MAGIC_DEAD 0xdeadbeefu

#define URSA__STATIC_ASSERT_FITS(internal, public) \
  _Static_assert(sizeof(internal) <= sizeof(public), #internal " does not fit in " #public)


/* ---- object validation (sync/) ---------------------------------------------------------------- */

/* Checks an object's magic: OK when it is `magic`; when it is 0 and the object has a static
 * initializer (zeroable), the object is initialized lazily here.  -EINVAL otherwise (never
 * initialized, or destroyed). */
static inline int ursa__obj_check(uint32_t *m, uint32_t magic, bool zeroable) {
  uint32_t v = __atomic_load_n(m, __ATOMIC_RELAXED);
  if (ursa_likely(v == magic)) return 0;
  if (zeroable && v == 0) {                  /* two VPs may race here: both store the same value */
    __atomic_compare_exchange_n(m, &v, magic, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return 0;
  }
  return -EINVAL;
}

/* An object's lock: taken only when the runtime has several VPs (vp->smp, fixed by ursa_init), so
 * with one VP the core's paths stay free of atomics. */
static inline void ursa__lock_if(bool smp, ursa__spin_t *l) { if (ursa_unlikely(smp)) ursa__spin_lock(l); }
static inline void ursa__unlock_if(bool smp, ursa__spin_t *l) { if (ursa_unlikely(smp)) ursa__spin_unlock(l); }
static inline void ursa__olock(const struct ursa__vp *vp, ursa__spin_t *l) { ursa__lock_if(vp->smp, l); }
static inline void ursa__ounlock(const struct ursa__vp *vp, ursa__spin_t *l) { ursa__unlock_if(vp->smp, l); }

/* The hottest operations (semaphores, mutexes) are written once as an always-inline body taking
 * `const bool smp` and instantiated twice, so the one-VP copy has no SMP test left in it. */
#define URSA__ALWAYS_INLINE inline __attribute__((always_inline))
_Static_assert(offsetof(struct ursa__thread, heap_idx) + sizeof(uint32_t) - sizeof(ursa__ctx_t) <= 56,
               "the hot fields of struct ursa__thread must fit one cache line with the context's end");
#endif /* URSA_INTERNAL_H */
