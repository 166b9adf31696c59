/*
 * sched_smp.h - the per-VP state of the SMP scheduler (several virtual processors, URSA__SMPMODE),
 * shared by the files of src/sched (sched.c and thread.c call in only in that mode) and by
 * src/model and src/runtime above them.  See vp.c for the protocol.
 */
#ifndef URSA_SCHED_SMP_H
#define URSA_SCHED_SMP_H

#include "sched.h"
#include "waiverq.h"
#include "deque.h"

#include <pthread.h>

/* The run-queue policies of issue #3, chosen by URSA_SCHED / ursa_config_t.sched. */
enum ursa__policy {
  URSA__POL_ROTATOR = 0,   /* Lesser Bear LB3: Protect Queue + SPSC Waiver Queue ring (default)  */
  URSA__POL_LB2,           /* LB2: Protect Queue + Waiver Queue any VP dequeues under a lock     */
  URSA__POL_GLOBAL,        /* one global queue under a lock                                      */
  URSA__POL_STEAL          /* Protect Queue + Chase-Lev deque, random stealing                   */
};

struct ursa__smp {
  /* the owner's side (written by the owner only) */
  struct ursa__thread *idle;          /* the VP's idle context (not a user thread)              */
  struct ursa__thread *pending;       /* picked but still being saved by another VP: idle waits */
  struct ursa__vp     *fwd, *bwd;     /* the rotator ring: forward(i), backward(i)              */
  struct ursa__wq     *bwd_wq;        /* rotator: &bwd->x->wq, drained at every switch; else NULL */
  uint64_t             rng;           /* xorshift state for victim choice                       */
  uint64_t             id_next, id_end;   /* a block of thread ids                              */
  uint32_t             slot_free;     /* a cache of free handle slots (index+1 list), owner only */
  uint32_t             slot_nfree;
  pthread_t            kt;            /* the kernel thread (VP 1..N-1)                          */
  void                *kstack;        /* its stack (mapped by ursa, so nothing stays cached)     */
  void                *altstack;      /* its alternate signal stack                             */
  uint64_t             unstack_at;    /* when it last moved off a kicker's CPU (vp.c, "Unstacking") */
  uint8_t              in_idle;       /* counted in ursa__g.idle_vps                            */
  uint8_t              step_skip;     /* switches and creates since the policy's last step
                                         while the Protect Queue was long (policy.h,
                                         ursa__pol_step_due)                                    */

  /* the Waiver Queue: pushed by the owner, popped by forward(i) (rotator) or by any VP under
   * wq_lock (lb2); and the work-stealing deque (steal) */
  struct ursa__wq      wq;
  ursa__spin_t         wq_lock;       /* lb2 only: serializes the consumers of wq               */
  struct ursa__deque   dq;

  /* the inbox: threads other VPs make ready here (pinned ones, placement); any VP pushes under
   * inbox_lock, the owner takes the whole list.  inbox_n (atomic) lets the owner skip the lock. */
  _Alignas(64) ursa__spin_t inbox_lock;
  struct ursa__thread *inbox_head, *inbox_tail;
  uint32_t             inbox_n;       /* atomic: threads in the inbox                           */
  uint32_t             moves;         /* atomic: region moves were requested from this VP       */

  /* sleep and wake (the protocol in vp.c, checked by model/rotator.pml): sleeping is 0 awake,
   * 2 going to sleep (published; asleep until a timer when it has one), 3 asleep with no timer
   * (counted in ursa__g.sleepers) */
  _Alignas(64) uint32_t sleeping;     /* atomic                                                 */
  uint32_t             wakeseq;       /* atomic, the futex word                                 */
  uint32_t             taken_wait;    /* atomic: 1 while the VP, taken out of a sleep by a kicker,
                                         waits on the futex for that kicker's wakeseq increment
                                         (vp.c, wait_taken: pairs with ursa__vp_kick's load)      */
  uint32_t             load;          /* atomic, relaxed: ready threads here, a hint stored by
                                         ursa__load_hint (below): exact while small, else to 1/8 */
  uint32_t             busy;          /* atomic, relaxed: 1 while it runs a thread, not idle    */
  uint32_t             stop;          /* atomic: ursa_fini asks the VP's kernel thread to end   */
  int32_t              kick_cpu;      /* atomic, relaxed: the CPU its last kicker ran on, -1 for
                                         none; stored before the kick's wakeseq increment (release),
                                         read by the woken VP after its acquire (vp.c, "Unstacking") */
  uint32_t             kick_vp;       /* atomic, relaxed: that kicker's VP index + 1, 0 for none */
  /* stealing (vp.c): the heartbeat (pq_word >> 16) a thief last saw change, and when (ns);
   * relaxed atomics written by any thief: a hint */
  uint32_t             seen_beat;
  uint64_t             seen_at;
  uint64_t             help_at;       /* owner only: its I/O poller's next look (vp.c)        */
#if URSA_TEST_HARD
  uint64_t             chaos_rng;     /* the hard build's chaos (vp.c): owner only            */
#endif
};

/* Stores n, the owner's count of its ready threads, in x->load (owner only).  Other VPs read the
 * line at their switches (the rotator's step compares with forward(i)'s load, placement and the
 * idle VPs look at it), so a store at every switch of a VP that holds many threads made each of
 * their reads a miss: the figure is stored when it is small (below URSA__LOAD_EXACT, where
 * "none", "one" and "a few" decide something) or when it moved by an eighth since the last store.
 * Zero is always exact, so every reader that asks "any?" sees what it saw before.  Measured on
 * the distribution experiment at 2 VPs (`smp_distribution rotator 2 12 2000 gaps`, 11 interleaved
 * runs, medians): the gap between two threads on VP 1 went from 180 to 130 ns, on VP 0 from 190
 * to 180 (with the create path's change, vp.c ursa__smp_start). */
#define URSA__LOAD_EXACT 32u
static inline void ursa__load_hint(struct ursa__smp *x, uint32_t n) {
  uint32_t old = x->load;                              /* owner-written: a plain read is exact */
  uint32_t d = n > old ? n - old : old - n;
  if (d != 0 && (n < URSA__LOAD_EXACT || old < URSA__LOAD_EXACT || d >= old / 8))
    __atomic_store_n(&x->load, n, __ATOMIC_RELAXED);
}

/* ---- called by sched.c, thread.c and runtime.c --------------------------------------------------- */
URSA_HIDDEN int  ursa__smp_init(void);                      /* starts VPs 1..N-1               */
URSA_HIDDEN void ursa__smp_fini(void (*stopped)(void));   /* stops and joins them; calls stopped
                                                              before their state is freed */
URSA_HIDDEN int  ursa__smp_reserve(uint64_t live);          /* grows every timer heap           */
/* Makes the READY thread t runnable where it belongs: its home (pinned, region) or `where`. */
URSA_HIDDEN void ursa__smp_ready(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where);
URSA_HIDDEN int  ursa__smp_yield(struct ursa__vp *vp);
URSA_HIDDEN int  ursa__smp_yield_away(struct ursa__vp *vp, struct ursa__vp *to);
URSA_HIDDEN struct ursa__vp *ursa__smp_idle_vp(struct ursa__vp *vp);
URSA_HIDDEN void ursa__smp_timers_fire(struct ursa__vp *vp, uint64_t now);
URSA_HIDDEN struct ursa__vp *ursa__smp_place(struct ursa__vp *self, int want);
URSA_HIDDEN uint64_t ursa__smp_next_id(struct ursa__vp *vp);
URSA_HIDDEN void ursa__smp_balance(struct ursa__vp *vp);
/* ursa_create's: makes the new READY thread t runnable (as ursa__smp_ready), then the policy's step
 * (as ursa__smp_balance). */
URSA_HIDDEN void ursa__smp_start(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where);
/* Whether vp has threads to run besides its current one (a snapshot: lock-free reads only). */
URSA_HIDDEN bool ursa__smp_has_work(struct ursa__vp *vp);
/* The balancing tick's handler found vp's running thread blocked in a system call of its own:
 * wakes an idle VP to take vp's ready threads (vp.c, "Stealing"). */
URSA_HIDDEN void ursa__smp_stalled_in_kernel(struct ursa__vp *vp);
/* Wakes VP v if it sleeps: call after making work visible to it. */
URSA_HIDDEN void ursa__vp_kick(struct ursa__vp *v);

#endif
