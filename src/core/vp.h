/*
 * vp.h - the virtual processor's data (struct ursa__vp), the process-wide state (ursa__g) and the
 * handle table.  The data lives here, at the bottom, because every layer reads it; what edits the
 * run queue and the timer heap is src/sched/ alone (sched.h), and the ownership rules of each
 * field are those of src/sched/sched.h and docs/ARCHITECTURE.md ("Ownership").
 */
#ifndef URSA_CORE_VP_H
#define URSA_CORE_VP_H

#include "thread.h"

/* ---- the virtual processor -------------------------------------------------------------------- */

/* A VP's mode, the one place that says how its threads' hottest paths run:
 *   URSA__FAST     one VP, no trace, no cp-ts: no lock, no atomics, no test of either left in the
 *                  code (the hottest paths are compiled once per mode, see URSA__ALWAYS_INLINE);
 *   URSA__CHECKED  one VP, traced (URSA_TRACE) or time-sliced (cp-ts): the same, plus the trace's
 *                  hooks and the preemption points;
 *   URSA__SMPMODE  several VPs: objects lock, and switches and wake-ups go through src/sched/vp.c. */
enum { URSA__FAST = 0, URSA__CHECKED = 1, URSA__SMPMODE = 2 };

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
  /* several VPs: the overflow list of a full ring (FIFO, via w.next; src/sched/vp.c).  While it is
   * in use every push goes there. */
  uint32_t             xlen;
  struct ursa__thread *xhead, *xtail;
};
struct ursa__vp {
  struct ursa__thread *cur;          /* the running thread                                      */
  struct ursa__runq    runq;         /* READY threads, FIFO: the Protect Queue (owner only, but
                                        for a thief's turn: src/sched/vp.c, "Stealing")        */
  /* Several VPs, stealing (src/sched/vp.c, "Stealing").  pq_word: stored by the owner only; bits
   * 0..15 count the owner's nested entries into code that touches runq (0: outside), bits 16..31
   * count every entry (its heartbeat, read by thieves).  pq_steal: 1 while a thief has the turn
   * (thieves CAS it 0 -> 1, store 0 with release; the owner reads it with acquire). */
  uint32_t             pq_word;      /* atomic */
  uint32_t             pq_steal;     /* atomic */
  uint8_t              mode;         /* URSA__FAST, URSA__CHECKED or URSA__SMPMODE (below); set
                                        by ursa__vp_mode_set only, fixed while the VP runs      */
  uint8_t              solo_path;    /* set with mode: URSA__SMPMODE, and the solo copies of the
                                        hottest paths may run whenever the VP is solo (below,
                                        ursa__solo): the inline hand-off is allowed
                                        (ursa__g.smp_handoff), regions are not balanced
                                        automatically, nothing is traced or explored.  One test
                                        instead of four on the 2-VP hand-off path (issue #20)  */
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
  /* solo (src/sched/vp.c, "Solo"): the object locks this VP holds without having written them,
   * taken while every other VP slept; made real by ursa__solo_end before a kick. Owner only. */
  uint32_t             solo_n;
  ursa__spin_t        *solo_held[4];
  /* preemption (src/model/preempt.c): written by this VP's kernel thread only, by its code or by
   * its timer signal's handler (relaxed atomics or exchanges where both write) */
  uint8_t              pre_pending;  /* a preemption was deferred: take it at the next safe point */
  uint8_t              spread_deferred;  /* a preemption was deferred once to move the thread  */
  uint8_t              sig_asleep;   /* waits in the kernel: a tick disarms its timer (preempt.c) */
  uint8_t              timers_on;    /* bit k: the VP's signal timer of kind k exists (preempt.c) */
  uint8_t              rot_shift;    /* the balancing tick's interval is URSA_ROTATE_US << this:
                                        longer while the VP switches often (preempt.c, rot_pace) */
  int32_t              ic_left;      /* cp-ic: ursa_tick calls left before the next switch       */
  uint64_t             pre_sw;       /* stats.switches at the last timer tick                    */
  uint64_t             rot_sw;       /* stats.switches at the last balancing tick (URSA_ROTATE_US) */
  uint64_t             pending_sw;   /* stats.switches when the pending preemption was deferred  */
  /* the per-VP signal timers (src/model/preempt.c): [0] cp-ts's tick, [1] the rotator's interval
   * timer (URSA_ROTATE_US); this VP's kernel thread only */
  struct { void *id; uint8_t armed; } sigtimer[2];   /* timer_t; armed (off while the VP sleeps) */
  /* I/O (src/io/, a layer above, through ursa__io_hooks in sched.h): the VP's engine, and how
   * many waits (threads parked on an fd homed here, offload requests of this VP's threads) it
   * has pending.  io_nwait is atomic: changed by any VP under the io layer's locks, read unlocked
   * by this VP's idle paths (sched.c next_ready, vp.c idle_sleep) to choose the engine's wait. */
  void                *io;
  uint32_t             io_nwait;
};

/* The VP of the calling kernel thread, NULL outside ursa.  Initial-exec TLS: one %fs load. */
extern __thread struct ursa__vp *ursa__tls_vp __attribute__((tls_model("initial-exec"))) URSA_HIDDEN;

/* The same, for code that has switched since it last read it: a call that may switch may resume
 * on another VP (another kernel thread), and compilers keep a TLS variable's address across calls
 * within a function (Clang does at -O2).  Not inlined, so the address is computed afresh. */
URSA_HIDDEN struct ursa__vp *ursa__vp_current(void) __attribute__((noinline));
/* With one VP there is one kernel thread, and the cached address is right: no call. */
#define URSA__VP_AFTER_SWITCH() (ursa_likely(ursa__g.nvps <= 1) ? ursa__tls_vp : ursa__vp_current())

/* "Executed only by the owning VP", checked in the debug build. */
#define URSA_ASSERT_OWNER(vp) URSA_ASSERT((vp) == ursa__tls_vp)

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

/* Process-wide settings, fixed by ursa_init, and the few counters every VP shares.  Layout: every
 * VP reads the settings on its hot paths, so nothing that is written often shares their cache
 * lines: VP 0's descriptor (written at each of its switches), the live-thread count (an atomic
 * add at every create, a subtract at every exit, on any VP) and the sleep counts (written when a
 * VP sleeps or wakes) each start a line of their own.  Before, VP 0's switches and every create
 * took the lines that held vps, nslots, sleepers and the policy from the other VPs' caches
 * (issue #20: docs/ARCHITECTURE.md, "Shared lines"). */
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
  _Alignas(64) struct ursa__vp vp0;  /* (written by VP 0 at every switch: lines of its own)    */
  /* SMP (src/sched/) */
  _Alignas(64) unsigned nvps;        /* VPs, fixed by ursa_init                               */
  int      policy;                   /* enum ursa__policy                                     */
  unsigned pq_cap;                   /* Protect Queue capacity (rotator, lb2, steal)          */
  unsigned wq_cap;                   /* Waiver Queue capacity                                 */
  int      pin;                      /* URSA_PIN: pin VP i to the i-th allowed CPU            */
  int      region_balance;           /* URSA_REGION_BALANCE (region.c)                        */
  int      deadlock_wait;            /* URSA_DEADLOCK=wait: a deadlock blocks (report.c)       */
  int      unstack;                  /* URSA_UNSTACK: a VP woken onto its busy waker's CPU moves
                                        off it (vp.c, "Unstacking")                           */
  int      smp_handoff;              /* a wake-up may take the inline hand-off (ursa__smp_handoff_ok):
                                        policy not global, no hard-build chaos (vp.c)          */
  struct ursa__vp **vps;             /* vps[i], vps[0] == &vp0                                */
  int      steal_ok;                 /* an idle VP may take a stalled VP's ready threads (vp.c,
                                        "Stealing"): membarrier's expedited command registered */
  uint32_t timers_cap_all;           /* every VP's heap holds at least this many (SMP)        */
  /* execution model (src/model/) */
  int      model;                    /* URSA_MODEL_*                                          */
  uint64_t quantum_ns;               /* cp-ts                                                 */
  int32_t  switch_count;             /* cp-ic                                                 */
  int      preempt_live;             /* cp-ts handlers act (set last by ursa_init, cleared first
                                        by ursa_fini; relaxed: read by the handler)           */
  uint64_t rotate_ns;                /* the rotator's interval timer period, 0: none          */
  unsigned vps_api;                  /* the VPs the program sees (ursa_vp_count, the placement
                                        checks): nvps, or under exploration the number it asked
                                        for while one VP runs everything                         */
  int      explore;                  /* schedule exploration runs (src/explore/): set by ursa_init
                                        before the model's set-up, cleared by ursa_fini           */
  int      forked;                   /* this process is the child of a fork that left the runtime
                                        in the parent (several VPs, or forked by a kernel thread
                                        that was no VP): every call returns -ECHILD. Set by the
                                        fork handler (src/runtime/), never cleared             */
  /* written at run time: a line each (see the top) */
  _Alignas(64) int64_t live;         /* atomic: live threads (SMP)                            */
  int64_t  daemons;                  /* atomic: threads that called ursa__daemon (counted in live
                                        or nthreads, but keeping the process alive no longer)  */
  _Alignas(64) int sleepers;         /* atomic: VPs asleep with no timer (vp.c)               */
  int      solo_sleepers;            /* nvps - 1: sleepers when one VP is solo (ursa__solo,
                                        which reads both: one line)                          */
  int      idle_vps;                 /* atomic: VPs in their idle context (policy.c balances)  */
};
URSA_HIDDEN extern struct ursa__global ursa__g;


/* The thread of handle h, NULL when h is stale or was never a handle. */
static inline struct ursa__thread *ursa__thread_get(ursa_thread_t h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t idx = (uint32_t)v - 1u;           /* 0xffffffff for a low half of 0: out of range */
  const struct ursa__slot *s;
  struct ursa__thread *t;
  if (ursa_unlikely(idx >= ursa__g.slots.nslots)) return NULL;
  s = &ursa__g.slots.slot[idx];
  /* relaxed: another VP may be releasing the slot (a join of a detached thread that is ending is
   * a misuse, but a defined one: it sees the old or the new value, pairs with slot_free's stores) */
  t = __atomic_load_n(&s->t, __ATOMIC_RELAXED);
  if (ursa_unlikely(__atomic_load_n(&s->gen, __ATOMIC_RELAXED) != (uint32_t)(v >> 32) || t == NULL)) return NULL;
  return t;
}

/* What a call from a kernel thread without a VP returns: -EPERM (not an ursa thread, or before
 * ursa_init), or -ECHILD in the child of a fork that left the runtime behind (ursa__g.forked). */
URSA_HIDDEN int ursa__novp(void) __attribute__((cold));

/* The running VP, or return ursa__novp() from the calling API function. */
#define URSA_VP_OR_RETURN(vp)                                    \
  struct ursa__vp *vp = ursa__tls_vp;                            \
  if (ursa_unlikely(vp == NULL)) return ursa__novp()

/* Solo (src/sched/vp.c, "Solo"): every VP but the caller's sleeps, counted in sleepers (state
 * 3), so only a kick from this VP can wake one.  Acquire: pairs with each sleeper's increment,
 * made after its last access to any object. */
static inline bool ursa__solo(void) {
  return __atomic_load_n(&ursa__g.sleepers, __ATOMIC_ACQUIRE) == ursa__g.solo_sleepers;
}
/* Takes back l if this VP holds it without having written it: true then. */
static inline bool ursa__solo_drop(struct ursa__vp *vp, const ursa__spin_t *l) {
  uint32_t i = vp->solo_n;
  while (i-- > 0) {
    if (vp->solo_held[i] == l) {
      vp->solo_held[i] = vp->solo_held[--vp->solo_n];   /* order does not matter */
      return true;
    }
  }
  return false;
}
/* Makes every lock this VP holds without having written it a real one (ursa__vp_kick, before it
 * wakes a VP: from then on another VP may take them).  They are all free: nobody else ran. */
URSA_HIDDEN void ursa__solo_end(struct ursa__vp *vp);

/* An object's lock, for objects that only ursa threads touch (never a kernel thread outside the
 * VPs): taken only when the runtime has several VPs (URSA__SMPMODE), so with one VP the core's
 * paths stay free of atomics; and while this VP is solo only noted (no atomic, no write to the
 * lock's line), since no other VP can run until this one kicks it.  ursa__ounlock releases
 * either kind; a lock taken with ursa__olock is released with ursa__ounlock (or by the block
 * path, which uses it).  The _smp forms are for callers that know the mode is URSA__SMPMODE. */
static inline void ursa__olock_smp(struct ursa__vp *vp, ursa__spin_t *l) {
  uint32_t n = vp->solo_n;
  if (ursa__solo() && ursa_likely(n < sizeof vp->solo_held / sizeof vp->solo_held[0])) {
    vp->solo_held[n] = l;
    vp->solo_n = n + 1;
    return;
  }
  ursa__spin_lock(l);
}
static inline void ursa__ounlock_smp(struct ursa__vp *vp, ursa__spin_t *l) {
  uint32_t n = vp->solo_n;
  if (n != 0) {
    if (ursa_likely(vp->solo_held[n - 1] == l)) { vp->solo_n = n - 1; return; }   /* innermost */
    if (ursa__solo_drop(vp, l)) return;
  }
  ursa__spin_unlock(l);
}
static inline void ursa__olock(struct ursa__vp *vp, ursa__spin_t *l) {
  if (vp->mode == URSA__SMPMODE) ursa__olock_smp(vp, l);
}
static inline void ursa__ounlock(struct ursa__vp *vp, ursa__spin_t *l) {
  if (vp->mode == URSA__SMPMODE) ursa__ounlock_smp(vp, l);
}
/* Whether this VP holds l (either kind): for URSA_ASSERT. */
static inline bool ursa__oheld(const struct ursa__vp *vp, const ursa__spin_t *l) {
  uint32_t i;
  for (i = 0; i < vp->solo_n; i++)
    if (vp->solo_held[i] == l) return true;
  return ursa__spin_held(l);
}

#endif /* URSA_CORE_VP_H */
