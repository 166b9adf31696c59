/*
 * vp.c - several virtual processors (VPs): their kernel threads, idle contexts, sleep and wake,
 * where a ready thread goes, and the switch paths of src/sched in URSA__SMPMODE.
 *
 * Who runs where
 *   VP 0 is the kernel thread that called ursa_init; VPs 1..N-1 are kernel threads started by
 *   ursa_init.  Each VP runs one ursa thread at a time (vp->cur).  A READY thread sits in exactly
 *   one run structure: the Protect Queue of a VP (owner only: vp->runq, with its overflow list
 *   when the ring is full), a VP's inbox (any VP pushes, under inbox_lock), or the shared
 *   structure of the policy (policy.c: Waiver Queues, the global queue, deques).
 *
 *   A thread woken by another runs on the waker's VP (a hand-off stays on one core), unless it is
 *   pinned (main, ursa_attr_setbound, ursa_vp_pin, or a member of a region): a pinned thread only
 *   ever runs on its home VP (a region's home is region->vp), and is sent to that VP's inbox.
 *
 * Spread (issue #20).  The hand-off rule keeps a ping-pong pair on one VP, but it also keeps a
 *   woken thread waiting behind a waker that goes on computing while another VP has nothing to do
 *   (the CP producer/consumer gained nothing from a second VP).  So, off the hand-off path:
 *   - at a preemption (cp-ts quantum, cp-ic count) and at each balancing tick (URSA_ROTATE_US,
 *     every 1 ms by default: src/model/preempt.c), a VP that holds unpinned ready threads while
 *     another VP is idle (in its idle context, inbox empty) gives them away, one per idle VP
 *     (ursa__pol_spread); the tick of a VP that switches often keeps a thread that a wake-up
 *     handed off (t->handed, in runq.next), whose waker is about to block (a thread-ring: it
 *     moved whole to the other VP in a third of the runs before).  A preemption that leaves
 *     nothing to run here does not switch.  When the
 *     ready threads cannot move (pinned: preempted themselves, see model.c) and the preemption
 *     came at a call into ursa, the running thread goes to the idle VP instead
 *     (ursa__smp_yield_away); in cp-ts's signal handler it cannot (TLS addresses), so the
 *     preemption is deferred once to the thread's next call.
 *   - a thread that the tick found running a whole period without a switch, or that was
 *     preempted, is marked t->hog (a long runner).  Its next wake-up sends it back to the VP it
 *     last ran on when that VP is idle and not the waker's (hog_back), instead of queueing it
 *     behind the waker; the mark is used up either way.  A ping-pong pair or a ring switches far
 *     more often than once a period, so it keeps the hand-off; the one extra test on that path is
 *     t->hog in ursa__smp_handoff_ok.
 *   t->hog is written by the VP running t (its tick's handler or its preemption) and read and
 *   cleared by its waker: the wait/wake protocol orders the two, as for every field of a thread.
 *
 * Solo (issue #20).  When every other VP sleeps counted (sleeping = 3, ursa__g.sleepers =
 *   nvps - 1), nothing but a kick from this VP can wake one of them: a counted sleeper has no
 *   timer and no I/O wait (those sleep in states 2 and 4, uncounted), every kick comes from a
 *   VP's running code, and ursa is not called from signal handlers nor from kernel threads
 *   outside the VPs.  So this VP is *solo*: an object lock (core/vp.h, ursa__olock: the locks of
 *   semaphores, mutexes, conditions, rwlocks, barriers, once, cells, detach) is then only noted in
 *   vp->solo_held, with no atomic and no write to the lock's line, and ursa__ounlock takes the
 *   note back.  ursa__vp_kick first makes every noted lock real (ursa__solo_end: an exchange
 *   that succeeds at once, since nobody else ran), so the woken VP finds them held; that is the
 *   only way solo ends.  Orders: each sleeper increments sleepers (acq_rel) after its last access
 *   to any object, and ursa__solo reads it with acquire, so the solo VP sees those accesses; the
 *   kick's release (sleeping, wakeseq) publishes the solo VP's writes to the woken VP.  Locks
 *   that a kernel thread outside the VPs takes (the I/O layer's offload pool) are never elided:
 *   they use ursa__spin_lock.  The 2-VP thread-ring made 2 read-modify-writes per pass (the
 *   semaphore's lock twice) and makes none now (bench/count_shared_writes.py).
 *
 * Stealing (issues #20, #18).  A VP's Protect Queue is its own, so while its kernel thread does
 *   not run -- descheduled by the kernel on a shared machine, blocked in a system call ursa does
 *   not see, or running one thread that never calls ursa -- the threads ready there wait, though
 *   another VP may be idle (a 2-VP HTTP server's p99 latency was this).  So an idle VP, before it
 *   sleeps, looks at the others: one that runs a thread (busy) and has not entered any code that
 *   touches its queue for URSA__STALL_NS (its heartbeat, the high half of vp->pq_word, unchanged)
 *   is stalled, and the idle VP takes a turn on its queue: up to half its ready threads
 *   (runq.next, then the ring's oldest; at most URSA__STEAL_MAX; not the overflow list, and never
 *   a pinned thread or a region's member) move to the thief's own queue (stats.steals).  An idle
 *   VP that sleeps while another VP runs a thread with threads ready at its last switch (x->load)
 *   or threads waiting in its I/O engine sleeps at most URSA__STALL_NS, to look again.  The I/O
 *   poller of a busy VP (src/io/) looks too, once per round of its run queue
 *   (ursa__smp_help_stalled), and when threads of the stalled VP wait on I/O both also handle the
 *   completions waiting in its engine (ursa__io_hooks.reap): the threads they wake become ready
 *   on the helper's VP, as any wake-up does.
 *   The turn is an asymmetric Dekker handshake, so that the owner pays no atomic read-modify-write
 *   and no fence: every owner access to its runq lies between ursa__pq_enter and ursa__pq_exit
 *   (sched.h), which store pq_word (depth + 1, then depth - 1) and read pq_steal; the thief CASes
 *   pq_steal 0 -> 1, runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) -- a full barrier on every
 *   CPU that runs a thread of the process, which makes the owner's compiler barrier a full one --
 *   and reads pq_word: either it finds the owner inside (depth != 0: it gives up the turn) or the
 *   owner's next entry finds pq_steal == 1 and waits outside until the turn ends (a release store
 *   of 0, which its acquire load pairs with).  A descheduled owner is outside at once: the kernel's
 *   switch is a full barrier.  Stealing is off where membarrier's expedited command cannot be
 *   registered (Linux before 4.14).  The wake-up's hand-off needs no bracket (sched.h says why);
 *   the pick's does (15 instructions per pass of the 2-VP thread-ring, 268 -> 283), except while
 *   the VP is solo ("Solo" above): then every other VP sleeps until this one kicks it, so no thief
 *   runs, and pick_handoff, which kicks no one, leaves the bracket out (the ring: 226 -> 215).  The
 *   kick that ends solo adds to the kicker's heartbeat, so that the VP it wakes does not take the
 *   heartbeat that stood still meanwhile for a stall.  (model/steal.pml checks the brackets; solo
 *   is the rotator model's and the lock elision's argument, not modelled with them.)
 *
 * The on-CPU byte (arch/context.h): a thread can be made READY by another VP while its own VP is
 *   still switching away from it (it unlocked the object it waits on, then switches).  Every
 *   switch clears the byte of the thread it saved, as its last store to it and only once its
 *   stack pointer has left that thread's stack (a signal taken there would write its frame into
 *   the stack another VP may already run: issue #22), and sets the byte of the thread it
 *   resumes.  A VP that picks a thread whose byte is still set does not wait in the middle of
 *   its own switch (two VPs could then wait for each other): it switches to its idle context
 *   instead (saving its current thread), and the idle context waits for the byte (the other VP
 *   is a few instructions from clearing it) and then runs the thread.
 *
 * Idle and sleep.  A VP with nothing to run switches to its idle context (VP 1..N-1: the kernel
 * thread's own stack; VP 0: a small ursa stack), which fires timers, looks for work, polls for at
 * most URSA__IDLE_SPIN_NS (20 us; not at all while threads of the VP wait on I/O), and then sleeps
 * in the kernel on a futex:
 *
 *     sleeper (VP i)                         waker (made work visible to VP i, e.g. an inbox push)
 *     s = wakeseq_i                          [the push: a release store, or under a lock]
 *     exchange(sleeping_i, 2)      (seq_cst) if (fetch_add(sleeping_i, 0) (seq_cst) != 0 &&
 *     if (work for i) withdraw, run it           (old = exchange(sleeping_i, 0)) != 0) {
 *     no deadline: CAS(sleeping_i, 2 -> 3),     if (old == 3) sleepers--
 *       then sleepers++                          wakeseq_i++, futex_wake(wakeseq_i) }
 *     while (wakeseq_i == s) futex_wait(...)
 *     (a sleeper whose exchange or CAS finds 0 was taken by a waker: it waits for the waker's
 *      wakeseq_i++ before going on)
 *
 *   No wake-up is lost: both sides do a read-modify-write of sleeping_i between their write and
 *   their read of the other's variable; the later of the two in sleeping_i's modification order
 *   reads the earlier and synchronizes with it.  So either the sleeper sees the work, or the
 *   waker sees sleeping != 0; then it bumps wakeseq after the sleeper read s, and futex_wait
 *   returns at once or is woken.
 *   model/rotator.pml checks this protocol (and the Waiver Queue ring) with spin.
 *
 *   sleeping = 2 means "going to sleep" (published), 3 "asleep with no timer, counted", 4 "asleep
 *   in the VP's I/O engine" (threads wait on I/O homed here, vp->io_nwait != 0: the sleeper waits
 *   in the engine, ursa__io_hooks.wait, instead of the futex, and a waker that takes it out of 4
 *   writes the engine's eventfd, ursa__io_hooks.kick, instead of the futex wake; never counted).
 *   A sleeper that left its engine on an event of its own and then found sleeping taken (0) waits
 *   on the futex for its waker's increment (wait_taken, as in the other states), so it first sets
 *   taken_wait, and a waker that took it out of 4 wakes the futex too when it reads taken_wait set
 *   after its increment (seq_cst on both sides; model/iosleep.pml checks the two sleeps with an
 *   explicit futex, and catches the protocol without taken_wait).
 *   ursa__g.sleepers counts the VPs in state 3; only the sleeper's commit (after its recheck found
 *   nothing) increments it, only the waker that takes a VP out of 3 decrements it.  When it
 *   reaches N every VP sleeps with nothing pending and no timer, so no thread runs and none can
 *   ever be made ready: the program is deadlocked (or every thread has finished after main called
 *   ursa_exit, and the process exits with 0).  Counting before the recheck gave false deadlock
 *   reports; spin found it (model/README.md).
 *
 * Timed waits across VPs.  A timed waiter is in the timer heap of the VP it blocked on (guarded by
 * that VP's tlock) and in the object's wait queue (guarded by the object's lock).  Its waker and
 * its timer race; the winner is the one that exchanges t->claim from 0 to 1 first:
 *   - a waker (holding the object's lock, t just popped): exchange wins -> it cancels the timer
 *     under tlock, then makes t READY; exchange loses -> it sets t->w.waitq = NULL (t is off the
 *     queue now) and passes t over (ursa__q_take).
 *   - the timer (holding tlock, t just removed from the heap): exchange wins -> after dropping
 *     tlock it takes the object's lock, removes t from the queue if still there, and makes t READY
 *     with -ETIMEDOUT; exchange loses -> nothing (the waker will make t READY).
 *   The timer's exchange happens while it holds tlock and the winning waker takes tlock before it
 *   makes t READY, so t cannot run and block again (resetting claim) before the timer is done
 *   with it.
 */
#define _GNU_SOURCE
#include "sched_smp.h"
#include "policy.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if URSA_VALGRIND
#include <valgrind/valgrind.h>
#endif

#define URSA__IDLE_SPIN_NS 20000u           /* an idle VP polls this long before it sleeps (not
                                               while its threads wait on I/O: idle_loop) */
#define URSA__STALL_NS 500000u              /* a VP that entered no scheduler code this long,
                                               with threads ready, is stalled ("Stealing") */
#define URSA__STEAL_MAX 32u                 /* threads one turn takes at most */
#define URSA__ID_BLOCK     1024u            /* thread ids taken from the global counter at a time */
#define URSA__VP_STACK     (8u << 20)       /* the kernel stack of VPs 1..N-1 (their idle context; it
                                               also holds glibc's TLS, large under sanitizers) */

static inline void cpu_relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static inline bool on_cpu(struct ursa__thread *t) { return ursa__oncpu(t); }

void ursa__oncpu_wait(struct ursa__thread *t) {
  unsigned spins = 0;
  while (ursa__oncpu(t)) {                             /* its old VP is finishing the save */
    if (++spins < 1024) cpu_relax(); else sched_yield();
  }
}

/* ---- futex ------------------------------------------------------------------------------------ */

static void futex_wait(uint32_t *w, uint32_t val, uint64_t deadline_ns) {
  struct timespec ts, *tp = NULL;
  if (deadline_ns) {
    ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
    ts.tv_nsec = (long)(deadline_ns % 1000000000u);
    tp = &ts;
  }
  /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline */
  syscall(SYS_futex, w, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, tp, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void futex_wake(uint32_t *w) {
  syscall(SYS_futex, w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

/* ---- sleep and wake (protocol above) ---------------------------------------------------------- */

void ursa__solo_end(struct ursa__vp *vp) {
  uint32_t i;
  for (i = 0; i < vp->solo_n; i++) ursa__spin_lock(vp->solo_held[i]);   /* free: at once */
  vp->solo_n = 0;
}

#if URSA_TEST_HARD
static void chaos_kick_gap(struct ursa__vp *me);      /* (the hard build's chaos, below) */
#else
#  define chaos_kick_gap(me) ((void)0)
#endif

void ursa__vp_kick(struct ursa__vp *v) {
  struct ursa__smp *x = v->x;
  struct ursa__vp *me = ursa__tls_vp;
  uint32_t old;
  if (me != NULL && ursa_unlikely(me->solo_n != 0)) ursa__solo_end(me);   /* see "Solo" */
  /* A read-modify-write, not a plain load after a fence: whichever of this and the sleeper's
   * exchange comes later in sleeping's modification order sees the other (the Dekker pair of the
   * protocol above, in a form ThreadSanitizer understands). */
  if (__atomic_fetch_add(&x->sleeping, 0u, __ATOMIC_SEQ_CST) == 0) return;
  old = __atomic_exchange_n(&x->sleeping, 0u, __ATOMIC_ACQ_REL);
  if (old == 0) return;                                /* someone else woke it */
  chaos_kick_gap(me);
  if (old == 3) {                                      /* it was counted */
    __atomic_fetch_sub(&ursa__g.sleepers, 1, __ATOMIC_ACQ_REL);
    /* this VP may have been solo, its picks unbracketed (pick_handoff): a new heartbeat, so that
     * the VP woken now does not take the still one for a stall and steal at once (stored by the
     * owner only; the count bits are untouched, so a bracket that is open stays open) */
    if (me != NULL)
      __atomic_store_n(&me->pq_word, __atomic_load_n(&me->pq_word, __ATOMIC_RELAXED) + 0x10000u, __ATOMIC_RELAXED);
  }
  if (ursa__g.unstack) {                               /* "Unstacking", below idle_sleep */
    __atomic_store_n(&x->kick_cpu, me != NULL ? sched_getcpu() : -1, __ATOMIC_RELAXED);
    __atomic_store_n(&x->kick_vp, me != NULL ? me->index + 1 : 0u, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&x->wakeseq, 1u, __ATOMIC_SEQ_CST);   /* seq_cst: pairs with wait_taken */
  if (old != 4) {
    futex_wake(&x->wakeseq);
    return;
  }
  ursa__io_hooks.kick(v);                              /* asleep in its I/O engine: the eventfd */
  /* The sleeper may have left its engine meanwhile on an event of its own, found sleeping taken
   * (0) and gone to wait on the futex for the increment above (wait_taken): then wake it.  Its
   * store of taken_wait and load of wakeseq against this increment and load: a Dekker pair, all
   * seq_cst, so one side sees the other's write.  Without it that VP slept on the futex for good
   * with threads ready in its queue (example_echo_vps2 hung in CI under qemu-aarch64, and 1 run
   * in ~300 here beside 12 busy loops: session 27). */
  if (__atomic_load_n(&x->taken_wait, __ATOMIC_SEQ_CST)) futex_wake(&x->wakeseq);
}

/* ---- the local Protect Queue: the ring, then its overflow list (owner only) ------------------- */

/* The ring's size, fixed when the VPs start (ursa__smp_init: thieves read it, so it is never
 * reallocated after): 4 x the Waiver Queue capacity, 128 to 4,096 entries (32 KiB per VP at the
 * default wq_cap of 1,024; the hard test build's and the tests' tiny Waiver Queues keep 128, so
 * their threads still go through the overflow list).  Beyond it the overflow list, linked through
 * the descriptors: a pass from it (policy.c, pass_on: the oldest first) or a pop follows each
 * thread's w.next into a descriptor created long before, a miss per thread that a long fork
 * (4,096 threads) paid at every thread it moved; the ring's slots sit in one array.  Measured with
 * a copy of the library whose ring size an environment variable set, `smp_distribution rotator
 * 2 12 2000 repeat=21`, 60 interleaved pairs in three rounds of 20: medians 4.014 -> 3.968,
 * 4.259 -> 4.164 and 4.147 -> 4.101 ms (128 -> 4,096 or 8,192 entries), the larger ring faster
 * in 42 of the 60; the library with it against the one before, 24 pairs: 4.058 -> 4.024 ms, faster
 * in 15: a small gain, within the machine's noise from one run to the next.  A whole phase of the
 * radix sort (256 threads) now fits in the ring, whose passes hand on a run in queue order
 * (policy.c, pass_ring_run; without it the sort at 2^8 slowed down, two runs of make bench); 8
 * interleaved rounds of `radix_sort ursa 2 8,8,4,10,1` against the library before: 21.93 against
 * 21.49 ms at 2^8, 25.65 / 25.30 at 2^4, 28.39 / 28.89 at 2^10, 144.5 / 146.0 at 2^1; `smp_ring
 * 2` unchanged (8 rounds). */
#define URSA__RING_MIN 128u
#define URSA__RING_MAX 4096u
static uint32_t smp_ring_size(void) {
  uint64_t want = (uint64_t)ursa__g.wq_cap * 4;
  return want < URSA__RING_MIN ? URSA__RING_MIN : want > URSA__RING_MAX ? URSA__RING_MAX : (uint32_t)want;
}

static inline uint32_t pq_len(struct ursa__vp *vp) {
  uint32_t n;
  ursa__pq_enter(vp);
  n = ursa__runq_len(vp) + vp->runq.xlen;
  ursa__pq_exit(vp);
  return n;
}

/* The overflow list: while it is in use every push goes there, so FIFO order holds. */
static URSA_NOINLINE void pq_push_extra(struct ursa__vp *vp, struct ursa__thread *t) {
  struct ursa__runq *q = &vp->runq;
  t->w.next = NULL;
  if (q->xtail) q->xtail->w.next = t; else q->xhead = t;
  q->xtail = t;
  q->xlen++;
}

/* Appends t; returns the Protect Queue's length after (the caller's pq_len, without a second
 * bracket). */
static inline uint32_t pq_push(struct ursa__vp *vp, struct ursa__thread *t) {
  struct ursa__runq *q = &vp->runq;
  uint32_t n;
  t->vp = vp;
  t->handed = 0;                                       /* queued, not handed off */
  ursa__pq_enter(vp);
  if (ursa_likely(q->xhead == NULL && q->tail - q->head <= q->mask)) {   /* the ring has room */
    ursa__runq_push(vp, t);
  } else {
    pq_push_extra(vp, t);
  }
  n = ursa__runq_len(vp) + q->xlen;
  ursa__pq_exit(vp);
  return n;
}

static URSA_NOINLINE struct ursa__thread *pq_pop_extra(struct ursa__vp *vp) {
  struct ursa__runq *q = &vp->runq;
  struct ursa__thread *t = q->xhead;
  q->xhead = t->w.next;
  if (q->xhead == NULL) q->xtail = NULL;
  q->xlen--;
  return t;
}

static inline struct ursa__thread *pq_pop(struct ursa__vp *vp) {
  struct ursa__thread *t;
  ursa__pq_enter(vp);
  t = ursa__runq_pop(vp);
  if (ursa_unlikely(t == NULL) && vp->runq.xhead != NULL) t = pq_pop_extra(vp);
  ursa__pq_exit(vp);
  return t;
}

void ursa__pq_push(struct ursa__vp *vp, struct ursa__thread *t) { pq_push(vp, t); }
uint32_t ursa__pq_len(struct ursa__vp *vp) { return pq_len(vp); }

/* ---- the inbox (any VP pushes, the owner drains) ---------------------------------------------- */

static void inbox_push(struct ursa__vp *v, struct ursa__thread *t) {
  struct ursa__smp *x = v->x;
  t->w.next = NULL;
  ursa__spin_lock(&x->inbox_lock);
  if (x->inbox_tail) x->inbox_tail->w.next = t; else x->inbox_head = t;
  x->inbox_tail = t;
  __atomic_store_n(&x->inbox_n, x->inbox_n + 1, __ATOMIC_RELAXED);  /* the lock orders the list */
  ursa__spin_unlock(&x->inbox_lock);
  ursa__vp_kick(v);
}

static URSA_NOINLINE void inbox_drain(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  struct ursa__thread *t;
  ursa__spin_lock(&x->inbox_lock);
  t = x->inbox_head;
  x->inbox_head = x->inbox_tail = NULL;
  /* The drained threads count in load before they leave inbox_n, so that placement never sees
   * them in neither (it would send more work here); pick() stores the exact figure after. */
  __atomic_store_n(&x->load, x->load + x->inbox_n, __ATOMIC_RELAXED);
  __atomic_store_n(&x->inbox_n, 0u, __ATOMIC_RELEASE);   /* pairs with the acquire in smp_place */
  ursa__spin_unlock(&x->inbox_lock);
  while (t) {
    struct ursa__thread *n = t->w.next;
    vp->stats.migrations++;
    ursa__smp_ready(vp, t, vp);
    t = n;
  }
}

/* ---- the hard test build's chaos (-DURSA_TEST_HARD=ON) ------------------------------------------
 * With several VPs, unless URSA_SEED=off: a thread that yields, or that a thread wakes, goes to
 * another VP chosen at random (a forced migration at every such switch), and pick() takes a
 * random thread of the Protect Queue instead of the first.
 * Pinned threads and members of regions keep their rules.  The seed comes from URSA_SEED (the test
 * runner sets and prints one per test), else ursa_init picks one and prints it.  URSA_SEED=<n>
 * replays each VP's sequence of choices; the interleaving of the VPs' kernel threads is the
 * kernel's, so a replay repeats the choices, not always the run.  Owner only. */
#if URSA_TEST_HARD
static uint64_t chaos_seed;
static int chaos_on;

static uint32_t chaos_next(struct ursa__smp *x) {      /* xorshift64* */
  x->chaos_rng ^= x->chaos_rng >> 12;
  x->chaos_rng ^= x->chaos_rng << 25;
  x->chaos_rng ^= x->chaos_rng >> 27;
  return (uint32_t)((x->chaos_rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A gap of ~20 us at 1 kick in 8 between ursa__vp_kick's exchange of sleeping and its wakeseq
 * increment: the window in which the VP it took may leave its I/O engine on an event of its own
 * and wait for the increment (wait_taken).  A kicker descheduled there once lost that wake-up for
 * good (session 27: 1 run in ~300 of the echo example beside 12 busy loops).  With the gap,
 * before the fix: 9 of 40 runs of the echo example in this build hung (beside busy loops), and
 * io_engine_sleeper_taken_by_kick_vps2 failed in 15 of 20 runs. */
static void chaos_kick_gap(struct ursa__vp *me) {
  uint64_t end;
  if (!chaos_on || me == NULL || me->x == NULL || (chaos_next(me->x) & 7) != 0) return;
  end = ursa__now() + 20000;
  while (ursa__now() < end) cpu_relax();
}

static void chaos_init(void) {
  const char *v = getenv("URSA_SEED");
  unsigned i;
  chaos_on = !(v && strcmp(v, "off") == 0);
  if (!chaos_on) return;
  if (v && *v) {
    chaos_seed = strtoull(v, NULL, 0);                  /* a replay, or the test runner's */
  } else {                                             /* ours: say which, to replay it */
    chaos_seed = ursa__now() ^ ((uint64_t)getpid() << 32);
    fprintf(stderr, "ursa: hard build: random run-queue order and a migration at every switch, "
                    "URSA_SEED=%llu (URSA_SEED=off: none)\n", (unsigned long long)chaos_seed);
  }
  if (chaos_seed == 0) chaos_seed = 1;
  for (i = 0; i < ursa__g.nvps; i++)
    ursa__g.vps[i]->x->chaos_rng = chaos_seed + 0x9E3779B97F4A7C15ull * (i + 1);
}

/* Where a yield or a wake-up on self sends t: another VP at random (a pinned thread or a region's
 * member goes home anyway).  Not for threads an inbox hands over: they would never stop moving. */
static struct ursa__vp *chaos_where(struct ursa__vp *self, const struct ursa__thread *t) {
  unsigned n = ursa__g.nvps;
  if (!chaos_on || t->region != NULL || t->pinned) return self;
  return ursa__g.vps[(self->index + 1 + chaos_next(self->x) % (n - 1)) % n];
}

/* Moves a random thread of the ring to its head, where pq_pop takes it. */
static void chaos_shuffle_in(struct ursa__vp *vp) {
  struct ursa__runq *q = &vp->runq;
  uint32_t len = q->tail - q->head, k;
  struct ursa__thread *a, *b;
  if (q->next != NULL || len < 2) return;
  k = chaos_next(vp->x) % len;
  if (k == 0) return;
  a = q->buf[q->head & q->mask];
  b = q->buf[(q->head + k) & q->mask];
  q->buf[q->head & q->mask] = b;
  q->buf[(q->head + k) & q->mask] = a;
  b->w.rq_pos = q->head;
  a->w.rq_pos = q->head + k;
}
static void chaos_shuffle(struct ursa__vp *vp) {
  ursa__pq_enter(vp);
  chaos_shuffle_in(vp);
  ursa__pq_exit(vp);
}
#else
#  define chaos_where(self, t) (self)
#endif

/* ---- where a READY thread goes ---------------------------------------------------------------- */

/* The VP t must run on, or NULL when it may run anywhere. */
static struct ursa__vp *home_of(const struct ursa__thread *t) {
  if (t->region) return ursa__region_vp(t->region);
  return t->pinned ? t->home : NULL;
}

/* A hog (see "Spread" at the top) made READY here goes back to the VP it last ran on when that VP
 * is idle with an empty inbox, rather than wait behind this VP's running thread.  The mark is used
 * up either way.  True when t was sent there. */
static URSA_NOINLINE bool hog_back(struct ursa__vp *self, struct ursa__thread *t) {
  struct ursa__vp *last = t->vp;
  t->hog = 0;
  if (last == self || t->region != NULL || t->pinned || last == NULL ||
      !__atomic_load_n(&last->x->in_idle, __ATOMIC_RELAXED) ||
      __atomic_load_n(&last->x->inbox_n, __ATOMIC_RELAXED) != 0)
    return false;
  inbox_push(last, t);                                 /* t->vp is last already */
  return true;
}

/* Everything but the common case of ready() below.
 *
 * Load: a VP's load (sched_smp.h, ursa__load_hint) is stored at its switches, and also here when a
 * thread it makes ready outside a switch stays in its Protect Queue beyond keep(): a thread that
 * wakes many without switching (main posting a semaphore 4,096 times) otherwise showed
 * forward(i) the load of its last switch, maybe 0, and forward(i)'s ring step sent back half of
 * what it took in (URSA_STATS=1 after `smp_distribution rotator 2 12 2000`: 1,000-1,400
 * migrations to VP 0, ~800 of them such round trips while main woke the 4,096 threads at the
 * end; now 200-480).  ursa_create does not store it (ursa__smp_start): no measurable difference
 * on the distribution experiment (20 interleaved runs: 4.379 ms with, 4.374 without, 4.392
 * neither), and it would cost every create. */
static URSA_NOINLINE void ready_slow(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where) {
  struct ursa__vp *home;
  if (ursa_unlikely(t->hog) && where == self && hog_back(self, t)) return;
  if (ursa_likely(t->region == NULL && !t->pinned && where == self)) {   /* unpinned, here */
    uint32_t len = ursa__g.policy != URSA__POL_GLOBAL ? pq_len(self) : 0;   /* (global's offer takes all) */
    if (ursa__g.policy != URSA__POL_GLOBAL && len < ursa__pol_keep(self)) {
      pq_push(self, t);
      return;
    }
    if (!ursa__pol_offer(self, t, len)) ursa__load_hint(self->x, pq_push(self, t));   /* ("Load") */
    return;
  }
  home = home_of(t);
  if (home) where = home;
  if (where != self) {                                 /* another VP's queues are its own */
    t->vp = where;
    inbox_push(where, t);
    return;
  }
  if (home == NULL && ursa__pol_offer(self, t, pq_len(self))) return;
  pq_push(self, t);
}

/* The common case inline (a wake-up's hand-off, sched.h: ursa__smp_handoff_ok); the rest:
 * ready_slow. */
static inline void ready(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where) {
  URSA_ASSERT(ursa__get_state(t) == URSA__READY);     /* its waker, timer or yield set it */
  if (ursa_likely(where == self && ursa__smp_handoff_ok(self, t))) {   /* (no bracket: sched.h) */
    ursa__smp_handoff(self, t);
    return;
  }
  ready_slow(self, t, where);
}

void ursa__smp_ready(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where) {
  ready(self, t, where);
}

/* The policy's step outside a switch: ursa_create calls it, so a thread that creates many threads
 * without switching (a fork loop) still spreads them (Lesser Bear runs the step from an interval
 * timer too: URSA_ROTATE_US, ursa__pol_timer). */
void ursa__smp_balance(struct ursa__vp *vp) {
  uint32_t len = pq_len(vp);
  if (ursa_unlikely(ursa__pol_switch_needed(vp, len))) ursa__pol_create_step(vp, len);
}

/* ursa_create's first queue for its new thread t (READY; src/sched/thread.c, create_smp) and the
 * policy's step after it: ursa__smp_ready then ursa__smp_balance, except that under the rotator
 * an unpinned thread created for this VP goes straight into the Protect Queue.  ready_slow would
 * first offer t alone to a hungry forward(i) (ursa__pol_offer), which the step at once does for
 * half the surplus, t included (it passes the newest first); so the offer's own look at
 * forward(i)'s load and its two Protect Queue brackets are left out, and the push's bracket
 * gives the step its length.  Counted by callgrind (--toggle-collect=ursa_create), a fork loop
 * of 4,096 threads at 2 VPs, 5 rounds: 485 -> 360 instructions per ursa_create (1 VP: 155); the
 * distribution experiment's creation of 4,096 threads on VP 0, 0.291 -> 0.262 ms (25 interleaved
 * runs, medians). */
void ursa__smp_start(struct ursa__vp *self, struct ursa__thread *t, struct ursa__vp *where) {
  if (ursa__g.policy == URSA__POL_ROTATOR && where == self && t->region == NULL && !t->pinned) {
    uint32_t len = pq_push(self, t);
    if (ursa_unlikely(ursa__pol_switch_needed(self, len)) && ursa__pol_step_due(self, len))
      ursa__pol_create_step(self, len);
    return;
  }
  ready(self, t, where);
  ursa__smp_balance(self);
}

/* ---- picking the next thread ------------------------------------------------------------------ */

/* The next thread for vp, or NULL.  Runs at every switch: drains the inbox, lets the policy move
 * threads (the rotator drains VP_backward's Waiver Queue here), applies region moves -- except
 * the move of `stays`, the region of a thread that may go on running here (a yield that finds
 * nothing else to run). */
static URSA_NOINLINE struct ursa__thread *pick_slow(struct ursa__vp *vp, const struct ursa__region *stays) {
  struct ursa__smp *x = vp->x;
  struct ursa__thread *t;
  uint32_t len;
  if (ursa_unlikely(__atomic_load_n(&x->inbox_n, __ATOMIC_RELAXED) != 0)) inbox_drain(vp);
  if (ursa_unlikely(__atomic_load_n(&x->moves, __ATOMIC_RELAXED))) ursa__regions_apply(vp, stays);
  if (ursa_unlikely(ursa__g.region_balance) &&
      __atomic_load_n(&ursa__g.idle_vps, __ATOMIC_RELAXED) > (int)x->in_idle)
    ursa__regions_balance(vp, stays);                  /* give an idle VP a whole region */
  len = pq_len(vp);
  if (ursa_unlikely(ursa__pol_switch_needed(vp, len)) && ursa__pol_step_due(vp, len)) ursa__pol_switch(vp, len);
  for (;;) {
    struct ursa__vp *home;
#if URSA_TEST_HARD
    if (chaos_on) chaos_shuffle(vp);
#endif
    t = pq_pop(vp);
    if (ursa_unlikely(t == NULL) && (t = ursa__pol_fetch(vp)) == NULL) break;
    if (ursa_likely(t->region == NULL && !t->pinned)) break;
    home = home_of(t);
    if (home == NULL || home == vp) break;
    t->vp = home;                                      /* its region moved away: forward it */
    inbox_push(home, t);
  }
  if (t) {
    URSA_ASSERT(ursa__get_state(t) == URSA__READY);   /* picked twice: scheduled on two VPs */
    t->vp = vp;
  }
  ursa__load_hint(x, pq_len(vp));                      /* for placement and the rotator's step */
  if (x->busy != (t != NULL)) __atomic_store_n(&x->busy, (uint32_t)(t != NULL), __ATOMIC_RELAXED);
  return t;
}

/* Whether VP backward's Waiver Queue, which this VP drains (the rotator's; NULL for the other
 * policies), is empty.  Laid out for the default policy, the rotator: its queue is there. */
static inline bool bwd_wq_empty(const struct ursa__smp *x) {
  const struct ursa__wq *b = x->bwd_wq;
  return ursa_likely(b != NULL) ? ursa__wq_empty(b) : true;
}

/* The common case of pick() inline: a hand-off.  The thread just woken here waits alone in
 * runq.next (ring and overflow list empty), nothing arrived from other VPs (inbox, region moves),
 * regions are not balanced automatically, the policy has nothing to move at this switch (with one
 * ready thread: only the rotator's drain of VP_backward's Waiver Queue), and the thread is
 * unpinned or pinned to this VP.  Then pick_slow would only pop it: the same result, the same stores. */
static inline struct ursa__thread *pick_handoff_in(struct ursa__vp *vp, const bool solo_path) {
  struct ursa__smp *x = vp->x;
  struct ursa__runq *q = &vp->runq;
  struct ursa__thread *t = q->next;
  if (ursa_likely(t != NULL && q->head == q->tail && q->xhead == NULL &&
                  (__atomic_load_n(&x->inbox_n, __ATOMIC_RELAXED) |
                   __atomic_load_n(&x->moves, __ATOMIC_RELAXED)) == 0 &&
                  (solo_path || !ursa__g.region_balance) && t->region == NULL &&
                  (!t->pinned || t->home == vp) &&
                  bwd_wq_empty(x))) {
    q->next = NULL;
    URSA_ASSERT(ursa__get_state(t) == URSA__READY);
    t->vp = vp;
    if (x->load != 0) __atomic_store_n(&x->load, 0u, __ATOMIC_RELAXED);   /* as pick_slow */
    if (x->busy != 1) __atomic_store_n(&x->busy, 1u, __ATOMIC_RELAXED);
    return t;
  }
  return NULL;                                         /* pick_slow decides */
}
/* Solo: no thief can run until this VP kicks one, and nothing here kicks, so the bracket
 * ("Stealing") is left out; the kick that ends solo moves the heartbeat (ursa__vp_kick). */
static inline struct ursa__thread *pick_handoff(struct ursa__vp *vp) {
  struct ursa__thread *t;
  if (ursa__solo()) return pick_handoff_in(vp, false);
  ursa__pq_enter(vp);
  t = pick_handoff_in(vp, false);
  ursa__pq_exit(vp);
  return t;
}

static inline struct ursa__thread *pick(struct ursa__vp *vp, const struct ursa__region *stays) {
  struct ursa__thread *t = pick_handoff(vp);
  return t != NULL ? t : pick_slow(vp, stays);
}

/* Switches from cur (already queued, blocked or finished) to next, or through the idle context
 * when next is still being saved by another VP or there is no next. */
/* on-CPU = 1 until the switch that suspends t again has saved it (arch/context.h); relaxed: only
 * this VP reads it before that clearing store.  (With one VP nothing reads the byte, so the core's
 * one-VP switches leave it alone.) */
static inline void mark_on_cpu(struct ursa__thread *t) {
  __atomic_store_n(ursa__ctx_oncpu(&t->ctx), 1, __ATOMIC_RELAXED);
}

static int switch_to(struct ursa__vp *vp, struct ursa__thread *cur, struct ursa__thread *next) {
  if (next == NULL || on_cpu(next)) {
    vp->x->pending = next;
    next = vp->x->idle;
  }
  mark_on_cpu(next);
  URSA__SWITCH_RETURN(vp, cur, next);
}

static URSA_NOINLINE int switch_slow(struct ursa__vp *vp, struct ursa__thread *cur) {
  return switch_to(vp, cur, pick_slow(vp, NULL));
}

/* A switch of a solo VP (core/vp.h: every other VP sleeps until this one kicks it) to a thread
 * that pick_handoff_in took: next cannot still be on another VP's CPU, so the on-CPU wait of
 * switch_to is left out.  Every other VP saved its last thread (the save's clearing store of the
 * on-CPU byte) before its sleep made this VP solo (the acq_rel increment of sleepers, read with
 * acquire by ursa__solo), and none has run since. */
static inline int switch_solo(struct ursa__vp *vp, struct ursa__thread *cur, struct ursa__thread *next,
                              const bool solo_path) {
  URSA_ASSERT(!on_cpu(next));
  mark_on_cpu(next);
  if (solo_path) URSA__SWITCH_RETURN_RAW(vp, cur, next);   /* (nothing traced: core/vp.h) */
  URSA__SWITCH_RETURN(vp, cur, next);
}

static inline void block_mark(struct ursa__vp *vp, struct ursa__thread *cur, int kind, void *obj, ursa__spin_t *lock) {
  ursa__set_blocked(cur, kind, obj);                   /* read by ursa_dump */
  cur->wait_lock = lock;
  vp->stats.blocks++;
}

int ursa__smp_block(struct ursa__vp *vp, int kind, void *obj, ursa__spin_t *lock) {
  struct ursa__thread *cur = vp->cur, *next;
  block_mark(vp, cur, kind, obj, lock);
  if (lock) ursa__ounlock_smp(vp, lock);              /* either kind (core/vp.h, ursa__olock) */
  if (ursa__solo()) {                                  /* (pick_handoff, then switch_solo) */
    if ((next = pick_handoff_in(vp, false)) != NULL) return switch_solo(vp, cur, next, false);
    return switch_slow(vp, cur);
  }
  ursa__pq_enter(vp);
  next = pick_handoff_in(vp, false);
  ursa__pq_exit(vp);
  if (next != NULL) return switch_to(vp, cur, next);
  return switch_slow(vp, cur);                         /* tail calls: no frame here */
}

/* ursa__smp_block for a caller that found this VP solo and holds no lock (the solo semaphore wait,
 * src/sync/sem.c), on a VP whose solo_path is set (core/vp.h): the same without the lock, without
 * a second look at solo, which cannot have ended since (only this VP's kick ends it), and without
 * the tests that solo_path stands for. */
URSA_HOT_ALIGN int ursa__smp_block_solo(struct ursa__vp *vp, int kind, void *obj) {
  struct ursa__thread *cur = vp->cur, *next;
  URSA_ASSERT(ursa__solo() && vp->solo_path && cur->timer_vp == NULL);
  ursa__set_blocked(cur, kind, obj);                   /* block_mark but wait_lock, which only */
  vp->stats.blocks++;                                  /* the timer of a timed wait reads      */
  if ((next = pick_handoff_in(vp, true)) != NULL) return switch_solo(vp, cur, next, true);
  return switch_slow(vp, cur);
}

/* A yield that found nothing else to run goes on with its thread: pick stored busy = 0 for a VP
 * about to go idle, so store 1 again (the hint that other VPs read: the rotator's step, stealing,
 * unstacking).  Before, every cp-ic count and cp-ts slice that ended with nothing else ready left
 * a busy VP marked idle until its next switch.  Returns 0, the yield's result. */
static inline int still_busy(struct ursa__smp *x) {
  if (x->busy != 1) __atomic_store_n(&x->busy, 1u, __ATOMIC_RELAXED);
  return 0;
}

int ursa__smp_yield(struct ursa__vp *vp) {
  struct ursa__thread *cur = vp->cur, *next;
  if (__atomic_load_n(&vp->ntimers, __ATOMIC_RELAXED)) ursa__smp_timers_fire(vp, ursa__now());
  next = pick(vp, cur->region);
  if (next == NULL) return still_busy(vp->x);          /* nothing else to run here: go on */
  ursa__set_state(cur, URSA__READY);
  cur->w.wake_result = 0;
  ursa__smp_ready(vp, cur, chaos_where(vp, cur));
  return switch_to(vp, cur, next);
}

/* A yield whose thread goes on to the VP `to` (spread, at a preemption that came at a call site:
 * src/model/model.c); 0 at once when nothing else is ready here.  `to` may take cur before this
 * switch has saved it: the on-CPU byte makes it wait (top). */
int ursa__smp_yield_away(struct ursa__vp *vp, struct ursa__vp *to) {
  struct ursa__thread *cur = vp->cur, *next = pick(vp, cur->region);
  if (next == NULL) return still_busy(vp->x);
  ursa__set_state(cur, URSA__READY);
  cur->w.wake_result = 0;
  ready(vp, cur, to);                                  /* to's inbox, and wakes it */
  return switch_to(vp, cur, next);
}

/* An idle VP other than vp with an empty inbox (spread), or NULL. */
struct ursa__vp *ursa__smp_idle_vp(struct ursa__vp *vp) {
  unsigned i, n = ursa__g.nvps;
  if (__atomic_load_n(&ursa__g.idle_vps, __ATOMIC_RELAXED) - (int)vp->x->in_idle <= 0) return NULL;
  for (i = 1; i < n; i++) {
    struct ursa__vp *v = ursa__g.vps[(vp->index + i) % n];
    if (__atomic_load_n(&v->x->in_idle, __ATOMIC_RELAXED) &&
        __atomic_load_n(&v->x->inbox_n, __ATOMIC_RELAXED) == 0)
      return v;
  }
  return NULL;
}

void ursa__smp_finish(struct ursa__vp *vp, struct ursa__thread *cur, void *result) {
  struct ursa__waiter *joiner;
  uint8_t detached;
  cur->result = result;
  ursa__spin_lock(&cur->lock);                         /* against join and detach on other VPs */
  ursa__set_state(cur, URSA__ZOMBIE);
  joiner = cur->joiner;
  detached = cur->detached;
  ursa__spin_unlock(&cur->lock);
  {
    int64_t live = __atomic_sub_fetch(&ursa__g.live, 1, __ATOMIC_ACQ_REL);
    int64_t d = __atomic_load_n(&ursa__g.daemons, __ATOMIC_ACQUIRE);
    if (live == 0 || (d != 0 && live == d)) {          /* main called ursa_exit and the last */
      fflush(NULL);                                    /* thread (but daemons) has finished  */
      exit(0);
    }
  }
  if (detached) {
    ursa__reap(vp);
    ursa__thread_release_handle(cur);                  /* the handle is stale at once */
    if (!cur->own_stack) vp->zombie = cur;               /* the stack: after the switch */
  } else if (joiner) {
    ursa__smp_wake(vp, joiner, 0);
  }
  switch_to(vp, cur, pick(vp, NULL));
  URSA_PANIC("a finished thread was resumed");
}

/* ---- wake and the waker/timer claim ----------------------------------------------------------- */

bool ursa__claim_for_waker(struct ursa__thread *t) {
  if (__atomic_exchange_n(&t->claim, 1, __ATOMIC_ACQ_REL) == 0) return true;
  t->w.waitq = NULL;                                     /* its timer owns it: tell it t is off q */
  return false;
}

static inline void smp_wake(struct ursa__vp *self, struct ursa__thread *t, int res) {
  struct ursa__vp *tv = t->timer_vp;
  if (tv) {                                            /* we won the claim: cancel the timer */
    ursa__spin_lock(&tv->tlock);
    if (t->w.heap_idx) ursa__timer_cancel(tv, t);
    ursa__spin_unlock(&tv->tlock);
    t->timer_vp = NULL;
  }
  t->w.wake_result = res;
  ursa__set_state(t, URSA__READY);
  ready(self, t, chaos_where(self, t));
}

/* URSA_TRACE: records the wake-up (t goes to its home, or to the waker's VP), then does it.  Out
 * of line and tail-called, so the untraced path keeps nothing live across a call. */
static URSA_NOINLINE void smp_wake_traced(struct ursa__vp *self, struct ursa__thread *t, int res) {
  struct ursa__vp *home = home_of(t);
  ursa__trace_wake(self, t, (home ? home : self)->index, res);
  smp_wake(self, t, res);
}

void ursa__smp_wake(struct ursa__vp *self, struct ursa__waiter *w, int res) {
  struct ursa__thread *t;
  if (ursa_unlikely(ursa__waiter_is_call(w))) {      /* a call waiter (core/thread.h) */
    ursa__waiter_call_of(w)->wake(ursa__waiter_call_of(w), res);
    return;
  }
  t = ursa__thread_of(w);
  if (URSA__TRACING()) { smp_wake_traced(self, t, res); return; }
  smp_wake(self, t, res);
}

void ursa__smp_timers_fire(struct ursa__vp *vp, uint64_t now) {
  for (;;) {
    struct ursa__thread *t;
    bool won;
    ursa__spin_lock(&vp->tlock);
    if (vp->ntimers == 0 || vp->timers[1]->deadline > now) {
      ursa__spin_unlock(&vp->tlock);
      return;
    }
    t = vp->timers[1];
    ursa__timer_cancel(vp, t);
    won = __atomic_exchange_n(&t->claim, 1, __ATOMIC_ACQ_REL) == 0;
    ursa__spin_unlock(&vp->tlock);
    if (!won) continue;                                /* a waker makes it READY */
    if (t->wait_lock) ursa__spin_lock(t->wait_lock);
    if (t->w.waitq) {                                    /* still queued: leave the object */
      ursa__q_remove(t->w.waitq, &t->w);
      t->w.waitq = NULL;
    }
    if (t->wait_lock) ursa__spin_unlock(t->wait_lock);
    vp->stats.timers++;
    if (URSA__TRACING()) {                             /* URSA_TRACE: the timer wakes t */
      struct ursa__vp *home = home_of(t);
      ursa__trace_wake(vp, t, (home ? home : vp)->index, -ETIMEDOUT);
    }
    t->timer_vp = NULL;
    t->w.wake_result = -ETIMEDOUT;
    ursa__set_state(t, URSA__READY);
    ursa__smp_ready(vp, t, vp);
  }
}

/* ---- the idle context ------------------------------------------------------------------------- */

static bool has_work(struct ursa__vp *vp) {
  return __atomic_load_n(&vp->x->inbox_n, __ATOMIC_RELAXED) != 0 || pq_len(vp) != 0 ||
         ursa__pol_has_work(vp);
}

/* Lock-free reads only: the cp-ts signal handler calls it (src/model/preempt.c). */
bool ursa__smp_has_work(struct ursa__vp *vp) { return has_work(vp); }

static uint64_t next_deadline(struct ursa__vp *vp) {
  uint64_t d = 0;
  ursa__spin_lock(&vp->tlock);
  if (vp->ntimers) d = vp->timers[1]->deadline;
  ursa__spin_unlock(&vp->tlock);
  return d;
}

static void run_from_idle(struct ursa__vp *vp, struct ursa__thread *t) {
  struct ursa__thread *idle = vp->x->idle;
  ursa__oncpu_wait(t);
  URSA_ASSERT(ursa__get_state(t) == URSA__READY);
  mark_on_cpu(t);
  ursa__switch_prepare(vp, idle, t);
  ursa__ctx_switch(idle, t, t->w.wake_result);
#if URSA_ASAN
  __sanitizer_finish_switch_fiber(idle->asan_fake, NULL, NULL);
#endif
}

/* A waker took this VP out of its sleep (its exchange saw sleeping != 0): wait for the waker's
 * wakeseq increment, so that it cannot end a later sleep of this VP (model/README.md).  A waker
 * that took the VP out of its I/O engine (sleeping 4) writes the eventfd, not the futex, so the
 * wait announces itself in taken_wait first (the Dekker pair with ursa__vp_kick, which then also
 * wakes the futex). */
static void wait_taken(struct ursa__smp *x, uint32_t s) {
  if (__atomic_load_n(&x->wakeseq, __ATOMIC_ACQUIRE) != s) return;
  __atomic_store_n(&x->taken_wait, 1u, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&x->wakeseq, __ATOMIC_SEQ_CST) == s) futex_wait(&x->wakeseq, s, 0);
  __atomic_store_n(&x->taken_wait, 0u, __ATOMIC_RELAXED);
}

/* ---- unstacking ---------------------------------------------------------------------------------
 * A VP's kernel thread that sleeps on its futex is woken by another VP's kick, and Linux may place
 * it on the CPU of the kicker (wake-affine) while its own CPU stays idle: on this machine kind (a
 * KVM guest, 2 vCPUs) that happens at a fraction of the wake-ups, and the two VPs then share one
 * CPU until the kernel's periodic balancing parts them, a tick (4 ms) or several later.  Seen
 * with `perf record -e sched:sched_switch -e sched:sched_migrate_task -a` on the CP
 * producer/consumer (URSA_MODEL=cp-ic URSA_VPS=2 bench/apps/pc --work 1000000 --items 24): the
 * consumer's VP, woken by the producer's post, migrated to the producer's CPU and the two took
 * turns of ~4 ms for 12 ms, 0.101 s against 0.092 for the run; in a URSA_TRACE of such runs each
 * VP's steady 35 us between count preemptions had gaps of 2-4 ms.
 *
 * So a kicker that is a VP stores its CPU (sched_getcpu: glibc reads it from the rseq area) and
 * index before its wakeseq increment, and the woken VP, when it finds itself on that CPU while the
 * kicker still runs a thread, moves its kernel thread off it: its affinity without this CPU, then
 * its affinity back (the kernel moves a running thread at once when its CPU leaves the mask; ~30
 * us here, against the milliseconds of sharing).  Only while VPs <= the CPUs the process may use
 * (with more, VPs share CPUs anyway), and not with URSA_PIN; URSA_UNSTACK=0 turns it off.  At
 * most one move per UNSTACK_GAP_NS per VP: where the kernel puts the VP back on that CPU at every
 * wake (the other CPUs busy with other programs), the moves cost at most ~1.5% of its time.
 * Owner only; kick_cpu and kick_vp are hints (a stale pair costs at most one move or one missed
 * move). */
#define UNSTACK_GAP_NS 2000000u
static URSA_NOINLINE void unstack(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  int kc = __atomic_load_n(&x->kick_cpu, __ATOMIC_RELAXED), c;
  uint32_t kv = __atomic_load_n(&x->kick_vp, __ATOMIC_RELAXED);
  cpu_set_t mask, others;
  uint64_t now;
  if (kc < 0 || kv == 0 || kv > ursa__g.nvps) return;
  __atomic_store_n(&x->kick_cpu, -1, __ATOMIC_RELAXED);
  if ((c = sched_getcpu()) != kc) return;              /* not on the kicker's CPU */
  if (!__atomic_load_n(&ursa__g.vps[kv - 1]->x->busy, __ATOMIC_RELAXED)) return;   /* it went idle */
  now = ursa__now();
  if (now - x->unstack_at < UNSTACK_GAP_NS) return;    /* at most one move per 2 ms */
  x->unstack_at = now;
  if (pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) != 0 || !CPU_ISSET(c, &mask) ||
      CPU_COUNT(&mask) < 2)
    return;
  others = mask;
  CPU_CLR(c, &others);
  if (pthread_setaffinity_np(pthread_self(), sizeof others, &others) != 0) return;
  (void)pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
  vp->stats.unstacks++;
}

/* Sleeps until kicked, or until deadline (0: none).  The protocol verified by model/rotator.pml:
 * publish sleeping = 2, recheck, then (no deadline) commit 2 -> 3 with a CAS and only then count
 * the VP in ursa__g.sleepers; a waker that exchanges 3 -> 0 uncounts it. */
static void idle_sleep(struct ursa__vp *vp, uint64_t deadline) {
  struct ursa__smp *x = vp->x;
  uint32_t s = __atomic_load_n(&x->wakeseq, __ATOMIC_ACQUIRE);
  uint64_t t0;
  bool tr;
  __atomic_exchange_n(&x->sleeping, 2u, __ATOMIC_SEQ_CST);    /* publish: pairs with ursa__vp_kick */
  if (has_work(vp) || __atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
    if (__atomic_exchange_n(&x->sleeping, 0u, __ATOMIC_ACQ_REL) == 0) wait_taken(x, s);
    return;
  }
  t0 = ursa__now();
  tr = URSA__TRACING();
  if (tr) ursa__trace_idle(vp, 1);                     /* URSA_TRACE: idle slice */
  ursa__preempt_idle(vp, 1);                           /* cp-ts: no ticks while asleep */
  /* seq_cst after the publish: pairs with the io layer's increment of io_nwait (seq_cst) before
   * it kicks this VP, so either we see the wait here or its kick sees sleeping != 0. */
  if (__atomic_load_n(&vp->io_nwait, __ATOMIC_SEQ_CST) != 0) {
    /* Threads wait on I/O homed here: sleep in the engine instead (sleeping = 4: a kick writes the
     * engine's eventfd; never counted in sleepers, since an event from outside may come). */
    uint32_t expect = 2;
    if (!__atomic_compare_exchange_n(&x->sleeping, &expect, 4u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      wait_taken(x, s);                                /* a waker was faster */
    } else {
      ursa__io_hooks.wait(vp, deadline);
      if (__atomic_exchange_n(&x->sleeping, 0u, __ATOMIC_ACQ_REL) == 0) wait_taken(x, s);
    }
  } else if (deadline == 0) {
    uint32_t expect = 2;
    if (!__atomic_compare_exchange_n(&x->sleeping, &expect, 3u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      wait_taken(x, s);                                /* a waker was faster */
      ursa__preempt_idle(vp, 0);
      if (tr) ursa__trace_idle(vp, 0);
      return;
    }
    if (__atomic_add_fetch(&ursa__g.sleepers, 1, __ATOMIC_ACQ_REL) == (int)ursa__g.nvps) {
      /* Every VP sleeps, committed, with no work and no timer: nothing can ever run again. */
      if (__atomic_load_n(&ursa__g.live, __ATOMIC_ACQUIRE) == 0) { fflush(NULL); exit(0); }
      ursa__deadlock_report(vp);
    }
    wait_taken(x, s);                                  /* the waker set sleeping = 0, uncounted us */
  } else {
    while (__atomic_load_n(&x->wakeseq, __ATOMIC_ACQUIRE) == s && ursa__now() < deadline)
      futex_wait(&x->wakeseq, s, deadline);
    if (__atomic_exchange_n(&x->sleeping, 0u, __ATOMIC_ACQ_REL) == 0) wait_taken(x, s);
  }
  ursa__preempt_idle(vp, 0);
  if (tr) ursa__trace_idle(vp, 0);
  if (ursa__g.unstack) unstack(vp);
  vp->stats.idle_ns += ursa__now() - t0;
  vp->stats.idle_waits++;
}

/* ---- stealing from a stalled VP ("Stealing" at the top) ---------------------------------------- */

void ursa__pq_enter_slow(struct ursa__vp *vp) {
  do {                                                 /* step out while the thief has its turn */
    __atomic_store_n(&vp->pq_word, __atomic_load_n(&vp->pq_word, __ATOMIC_RELAXED) - 1u, __ATOMIC_RELAXED);
    for (unsigned spins = 0; __atomic_load_n(&vp->pq_steal, __ATOMIC_ACQUIRE) != 0; spins++) {
      if (spins < 4096) cpu_relax();
      else syscall(SYS_sched_yield);                   /* the thief's kernel thread is descheduled */
    }
    __atomic_store_n(&vp->pq_word, __atomic_load_n(&vp->pq_word, __ATOMIC_RELAXED) + 1u, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } while (__atomic_load_n(&vp->pq_steal, __ATOMIC_ACQUIRE) != 0);   /* acquire: as ursa__pq_enter */
}

/* Registers this process for membarrier's expedited command (ursa__smp_init): stealing needs it. */
static bool membarrier_register(void) {
#if defined(__NR_membarrier)
  return syscall(__NR_membarrier, 1 << 4 /* MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED */, 0, 0) == 0;
#else
  return false;
#endif
}

/* A full memory barrier on every CPU that runs a thread of this process, by the time it returns. */
static void membarrier_all(void) {
#if defined(__NR_membarrier)
  (void)syscall(__NR_membarrier, 1 << 3 /* MEMBARRIER_CMD_PRIVATE_EXPEDITED */, 0, 0);
#endif
}

/* The rotator's Waiver Queue that v drains (its backward VP's), or NULL for the other policies
 * (lb2's and steal's idle VPs take from any queue already). */
static struct ursa__wq *input_wq(const struct ursa__vp *v) { return v->x->bwd_wq; }

/* Whether v looks stalled at `now`: it has threads to run -- it runs one (busy), or threads wait
 * in its input Waiver Queue -- and has entered no code that touches its queues for
 * URSA__STALL_NS (asleep and not yet woken by the kick that came with them, too).  A hint from
 * relaxed loads: the turn decides. */
static bool stalled(struct ursa__vp *v, uint64_t now) {
  struct ursa__smp *x = v->x;
  uint32_t beat = __atomic_load_n(&v->pq_word, __ATOMIC_RELAXED) >> 16;
  struct ursa__wq *in = input_wq(v);
  if (!__atomic_load_n(&x->busy, __ATOMIC_RELAXED) && (in == NULL || ursa__wq_empty(in))) return false;
  if (beat != __atomic_load_n(&x->seen_beat, __ATOMIC_RELAXED) || __atomic_load_n(&x->seen_at, __ATOMIC_RELAXED) == 0) {
    __atomic_store_n(&x->seen_beat, beat, __ATOMIC_RELAXED);
    __atomic_store_n(&x->seen_at, now, __ATOMIC_RELAXED);
    return false;
  }
  return now - __atomic_load_n(&x->seen_at, __ATOMIC_RELAXED) >= URSA__STALL_NS;
}

/* One turn on v's queues: up to half its ready threads (runq.next, then the ring from its oldest;
 * the overflow list stays), at most URSA__STEAL_MAX, stopping at a pinned thread or a region's
 * member, which must stay; then, with what is left of URSA__STEAL_MAX, the threads waiting in its
 * input Waiver Queue (rotator: the turn makes the thief that queue's one consumer, as v is).
 * They go to self's Protect Queue.  The number taken. */
static unsigned steal_from(struct ursa__vp *self, struct ursa__vp *v) {
  struct ursa__thread *got[URSA__STEAL_MAX], *t;
  uint32_t zero = 0, n, take, k = 0, i;
  if (!__atomic_compare_exchange_n(&v->pq_steal, &zero, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return 0;                                          /* another thief has the turn */
  membarrier_all();                                    /* v's entry is visible, or it sees pq_steal */
  /* acquire: pairs with v's release in ursa__pq_exit: its last changes to runq are seen */
  if ((__atomic_load_n(&v->pq_word, __ATOMIC_ACQUIRE) & 0xffffu) == 0) {
    struct ursa__runq *q = &v->runq;
    n = (__atomic_load_n(&q->next, __ATOMIC_ACQUIRE) != NULL) + (q->tail - q->head);
    take = (n + 1) / 2;
    if (take > URSA__STEAL_MAX) take = URSA__STEAL_MAX;
    /* next and head atomically: the owner's hand-off reads them outside its brackets (sched.h) */
    if (take && (t = __atomic_load_n(&q->next, __ATOMIC_ACQUIRE)) != NULL && !t->pinned && t->region == NULL) {
      __atomic_store_n(&q->next, NULL, __ATOMIC_RELAXED);   /* (the ring's threads are younger) */
      got[k++] = t;
    }
    while (k < take && q->head != q->tail) {
      t = q->buf[q->head & q->mask];
      if (t->pinned || t->region) break;
      __atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELAXED);
      got[k++] = t;
    }
    if (input_wq(v) != NULL)                           /* (never holds a pinned thread) */
      while (k < URSA__STEAL_MAX && (t = ursa__wq_pop(input_wq(v))) != NULL) got[k++] = t;
  }
  __atomic_store_n(&v->pq_steal, 0u, __ATOMIC_RELEASE);   /* release: pairs with ursa__pq_enter */
  for (i = 0; i < k; i++) {
    URSA_ASSERT(ursa__get_state(got[i]) == URSA__READY);
    if (URSA__TRACING()) ursa__trace_wake(self, got[i], self->index, 0);
    pq_push(self, got[i]);                             /* sets t->vp */
    self->stats.migrations++;
  }
  self->stats.steals += k;
  return k;
}

/* Whether v had ready threads at its last switch, or threads wait in its input Waiver Queue: a
 * hint (relaxed loads) that spares a busy VP's poller a turn and its membarrier at every look at
 * a VP that runs one long thread with nothing queued.  (A thread handed off to v's runq.next
 * since its last switch is not seen: the idle VPs' look takes it.) */
static bool queued(struct ursa__vp *v) {
  struct ursa__wq *in = input_wq(v);
  return __atomic_load_n(&v->x->load, __ATOMIC_RELAXED) != 0 || (in != NULL && !ursa__wq_empty(in));
}

/* A look at the others: a turn on each one that looks stalled (busy: self runs threads, and
 * takes a turn only where queued() says there is something to take), and the completions
 * waiting in its I/O engine (ursa__io_hooks.reap: the threads whose waits they end are made ready
 * here, by this VP, so they move to it).  Whether it took any. */
static bool steal_some(struct ursa__vp *self, bool busy) {
  unsigned i, n = ursa__g.nvps;
  uint64_t now;
  bool got = false;
  if (!ursa__g.steal_ok) return false;
  now = ursa__now();
  for (i = 1; i < n; i++) {
    struct ursa__vp *v = ursa__g.vps[(self->index + i) % n];
    if (!stalled(v, now)) continue;
    if ((!busy || queued(v)) && steal_from(self, v) != 0) got = true;
    if (__atomic_load_n(&v->io_nwait, __ATOMIC_RELAXED) != 0 && ursa__io_hooks.reap(v)) got = true;
  }
  return got;
}

/* The I/O poller's look at the others (src/io/, once per round of its VP's run queue): a VP
 * that runs threads may help a stalled one as an idle VP does, since on a shared machine the VP
 * whose kernel thread is off its CPU is seldom the only one with work (httpd at 2 VPs beside its
 * load generator).  From an ursa thread of self. */
bool ursa__smp_help_stalled(struct ursa__vp *self) {
  uint64_t now;
  if (self->x == NULL || !ursa__g.steal_ok) return false;
  now = ursa__now();                                  /* at most one look per half stall time */
  if (now < self->x->help_at) return false;
  self->x->help_at = now + URSA__STALL_NS / 2;
  return steal_some(self, true);
}

/* The balancing tick (src/model/preempt.c, on_rotate) interrupted vp's running thread in a
 * system call that blocks (a raw one of the program's: ursa's own block only in a VP's idle
 * context, which the tick leaves alone), while threads are ready on vp.  An idle VP may sleep with
 * no deadline: vp's load was 0 at its last switch, and a thread handed off to vp's runq.next since
 * does not count in it (see others_loaded below).  So the tick stores the load and kicks an idle
 * VP, which then finds vp stalled (no heartbeat for URSA__STALL_NS) and takes its turn.  Runs on
 * vp's kernel thread, in the handler: lock-free reads of vp's queue lengths (no bracket), one
 * relaxed store of the load hint, and a kick, which is what vp's own code may do at any point
 * outside the unnoted solo sections (sem_wait_solo and sem_post_solo, src/sync/sem.c, which make
 * no system call): if vp was solo the kick makes its noted locks real and ends it, so vp's next
 * pick, after the call returns, is bracketed and honours the thief's turn. */
void ursa__smp_stalled_in_kernel(struct ursa__vp *vp) {
  struct ursa__vp *to;
  uint32_t n;
  if (!ursa__g.steal_ok || vp->x == NULL) return;
  n = ursa__runq_len(vp) + vp->runq.xlen;
  if (n == 0 || (to = ursa__smp_idle_vp(vp)) == NULL) return;
  if (__atomic_load_n(&vp->x->load, __ATOMIC_RELAXED) < n) __atomic_store_n(&vp->x->load, n, __ATOMIC_RELAXED);
  ursa__vp_kick(to);
}

/* Whether an idle VP should sleep with a deadline to look again (URSA__STALL_NS): threads this VP
 * passed on wait for the VP that takes them (ursa__pol_passed_on), or another VP had ready threads
 * at its last switch (x->load), or runs a thread while threads wait on I/O in its engine (whose
 * completions a stall would hold).  The order matters: the passed-on threads first, with acquire,
 * then the loads, so that a thread taken from there into a VP's Protect Queue is seen in one or
 * the other (policy.c, load_before_intake).  Before, VP 0 took a thread from VP 1's Waiver Queue
 * at a switch and stalled in the thread it switched to, while VP 1 found its queue empty before
 * VP 0 stored its load, and slept with no deadline (smp_stalled_vp_waiver_queue_taken_back, once
 * in a CI run; 1 in 30 with both VPs on one CPU).  load counts whether or not that VP is busy yet:
 * an idle VP stores busy only after its intake, at the end of pick_slow. */
static bool others_loaded(const struct ursa__vp *self) {
  unsigned i;
  if (!ursa__g.steal_ok) return false;
  if (ursa__pol_passed_on(self)) return true;
  for (i = 0; i < ursa__g.nvps; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    if (v != self && (__atomic_load_n(&v->x->load, __ATOMIC_RELAXED) != 0 ||
                      (__atomic_load_n(&v->x->busy, __ATOMIC_RELAXED) &&
                       __atomic_load_n(&v->io_nwait, __ATOMIC_RELAXED) != 0)))
      return true;
  }
  return false;
}

/* The idle loop of a VP: runs on the VP's idle context until ursa_fini stops the VP. */
/* Counts vp in ursa__g.idle_vps while it has nothing to run (policy.c spreads work then). */
static void set_idle(struct ursa__vp *vp, uint8_t idle) {
  if (vp->x->in_idle == idle) return;
  __atomic_store_n(&vp->x->in_idle, idle, __ATOMIC_RELAXED);   /* read by region balancing */
  __atomic_add_fetch(&ursa__g.idle_vps, idle ? 1 : -1, __ATOMIC_RELAXED);
}

static void idle_loop(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  for (;;) {
    struct ursa__thread *t;
    uint64_t deadline, spin_end = 0;
    ursa__reap(vp);
    if ((t = x->pending) != NULL) {
      x->pending = NULL;
      run_from_idle(vp, t);
      continue;
    }
    for (;;) {
      if (__atomic_load_n(&vp->ntimers, __ATOMIC_RELAXED)) ursa__smp_timers_fire(vp, ursa__now());
      if ((t = pick(vp, NULL)) != NULL) break;
      if (__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) { set_idle(vp, 0); return; }
      set_idle(vp, 1);
      /* No spin while threads of this VP wait on I/O: what ends their waits comes through the
       * engine, which the spin does not look at, and the CPU it would burn is what the other end
       * of the I/O often needs (a client on the same machine).  httpd at 2 VPs under wrk: 66-74
       * thousand requests per second with the spin, 113-124 thousand without (docs/ARCHITECTURE.md,
       * "I/O": "The idle VP does not spin"). */
      if (__atomic_load_n(&vp->io_nwait, __ATOMIC_RELAXED) != 0) break;
      if (spin_end == 0) spin_end = ursa__now() + URSA__IDLE_SPIN_NS;
      else if (ursa__now() >= spin_end) break;
      for (int i = 0; i < 64; i++) cpu_relax();
    }
    if (t) { set_idle(vp, 0); run_from_idle(vp, t); continue; }
    if (steal_some(vp, false)) continue;                /* a stalled VP's ready threads */
    deadline = next_deadline(vp);
    if (others_loaded(vp)) {                           /* look again in a while */
      uint64_t look = ursa__now() + URSA__STALL_NS;
      if (deadline == 0 || look < deadline) deadline = look;
    }
    idle_sleep(vp, deadline);
  }
}

static void idle_entry(void *arg) {
  struct ursa__vp *vp;
  URSA_UNUSED(arg);
#if URSA_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  vp = ursa__tls_vp;
  idle_loop(vp);
  URSA_PANIC("VP 0's idle context stopped");
}

/* ---- ids -------------------------------------------------------------------------------------- */

uint64_t ursa__smp_next_id(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  if (x->id_next == x->id_end) {
    x->id_next = __atomic_fetch_add(&ursa__g.next_id, URSA__ID_BLOCK, __ATOMIC_RELAXED);
    x->id_end = x->id_next + URSA__ID_BLOCK;
  }
  return x->id_next++;
}

/* ---- placement -------------------------------------------------------------------------------- */

struct ursa__vp *ursa__smp_place(struct ursa__vp *self, int want) {
  unsigned i, best = self->index;
  uint32_t best_load;
  if (want >= 0) return ursa__g.vps[want];
  /* URSA_VP_ANY: the least loaded VP (SplitThreads' arbitrated creation); ties go to the caller */
  best_load = pq_len(self) + 1;                        /* exact for our own queue; +1: the caller */
  for (i = 0; i < ursa__g.nvps; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    uint32_t l;
    if (v == self) continue;
    l = __atomic_load_n(&v->x->inbox_n, __ATOMIC_ACQUIRE);  /* pairs with the release in inbox_drain */
    l += __atomic_load_n(&v->x->load, __ATOMIC_RELAXED) +      /* as of v's last switch */
         __atomic_load_n(&v->x->busy, __ATOMIC_RELAXED);        /* it runs a thread */
    if (l < best_load) { best_load = l; best = i; }
  }
  return ursa__g.vps[best];
}

/* ---- timer heaps: each holds every live thread ------------------------------------------------ */

int ursa__smp_reserve(uint64_t live) {
  unsigned i;
  if (live + 2 <= __atomic_load_n(&ursa__g.timers_cap_all, __ATOMIC_ACQUIRE)) return 0;
  for (i = 0; i < ursa__g.nvps; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    int err;
    ursa__spin_lock(&v->tlock);
    err = ursa__timers_reserve(v, live);
    ursa__spin_unlock(&v->tlock);
    if (err) return err;
  }
  {                                                   /* raise the common floor */
    uint32_t cap = UINT32_MAX;
    for (i = 0; i < ursa__g.nvps; i++)
      if (ursa__g.vps[i]->timers_cap < cap) cap = ursa__g.vps[i]->timers_cap;
    __atomic_store_n(&ursa__g.timers_cap_all, cap, __ATOMIC_RELEASE);
  }
  return 0;
}

/* ---- VP lifecycle ----------------------------------------------------------------------------- */

/* URSA_PIN.  The CPUs are those main's kernel thread may run on when ursa_init starts the VPs,
 * read once (pin_allowed), before VP 0 pins main's thread: the kernel threads of VPs 1..N-1 are
 * created by main's and inherit its mask, so a VP that read its own mask found main's one CPU,
 * and every VP was pinned to it (2 VPs ran at one VP's speed: the CP producer/consumer at
 * --work 10^6, 0.178-0.189 s with URSA_PIN=1 against 0.096-0.100 s without).  ursa_fini gives
 * main's thread its mask back (pin_restore); the offload pool's threads run on all of them
 * (ursa__pin_cpus, src/io/).  Written by main's kernel thread only, before the VPs start
 * (pthread_create orders it before their reads) and after they and the pool stopped. */
static cpu_set_t pin_allowed;
static bool pin_saved;

static void pin_to_cpu(unsigned index) {
  cpu_set_t one;
  unsigned c, n = 0, count = (unsigned)CPU_COUNT(&pin_allowed);
  if (!pin_saved || count == 0) return;
  for (c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &pin_allowed)) continue;
    if (n++ == index % count) {
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
        fprintf(stderr, "ursa: URSA_PIN: cannot pin VP %u to CPU %u\n", index, c);
      return;
    }
  }
}

const void *ursa__pin_cpus(void) { return pin_saved ? &pin_allowed : NULL; }

static void pin_restore(void) {
  if (!pin_saved) return;
  pin_saved = false;
  if (pthread_setaffinity_np(pthread_self(), sizeof pin_allowed, &pin_allowed) != 0)
    fprintf(stderr, "ursa: URSA_PIN: cannot give main's thread back its CPUs\n");
}

static void *vp_main(void *arg) {
  struct ursa__vp *vp = arg;
  struct ursa__smp *x = vp->x;
  ursa__tls_vp = vp;
  vp->errno_p = &errno;
  vp->cur = x->idle;
  ursa__altstack_setup(&x->altstack);
  if (ursa__g.pin) pin_to_cpu(vp->index);
  ursa__model_hooks.vp_start(vp);                     /* the model's per-VP timers, tick count */
#if URSA_TSAN
  x->idle->tsan_fiber = __tsan_get_current_fiber();
#endif
  __atomic_store_n(ursa__ctx_oncpu(&x->idle->ctx), 1, __ATOMIC_RELAXED);
  idle_loop(vp);
  ursa__model_hooks.vp_stop(vp);
  ursa__reap(vp);
  ursa__altstack_teardown(x->altstack);
  ursa__tls_vp = NULL;
  return NULL;
}

static int smp_state_init(struct ursa__vp *vp) {
  struct ursa__smp *x;
  int err;
  /* 64-byte aligned, as its layout assumes (the Waiver Queue's head and tail, the inbox and the
   * sleep word each on a line of their own; calloc gave 16 and shifted every line) */
  if (URSA__FAIL() || (x = aligned_alloc(64, (sizeof *x + 63) & ~(size_t)63)) == NULL) return -ENOMEM;
  memset(x, 0, sizeof *x);
  vp->x = x;
  ursa__vp_mode_set(vp);
  x->rng = 0x9e3779b97f4a7c15ull * (vp->index + 1);
  if ((err = ursa__pol_vp_init(vp)) != 0) return err;
  if (URSA__FAIL() || (x->idle = calloc(1, sizeof *x->idle)) == NULL) return -ENOMEM;
  x->idle->vp = vp;
  ursa__set_state(x->idle, URSA__RUNNING);
  x->idle->own_stack = 1;                                /* not on a pooled stack */
  strcpy(x->idle->name, "idle");
  return 0;
}

static void smp_state_free(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  if (x == NULL) return;
  ursa__pol_vp_fini(vp);
  free(x->idle);
  free(x);
  vp->x = NULL;
  ursa__vp_mode_set(vp);
}

static void smp_teardown(unsigned started, void (*stopped)(void));

static bool under_valgrind(void) {
#if URSA_VALGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

int ursa__smp_init(void) {
  unsigned n = ursa__g.nvps, i;
  struct ursa__vp *v0 = &ursa__g.vp0;
  int err;
  if (URSA__FAIL() || (ursa__g.vps = calloc(n, sizeof *ursa__g.vps)) == NULL) return -ENOMEM;
  ursa__g.vps[0] = v0;
  ursa__g.live = 1;                                    /* main */
  ursa__g.sleepers = 0;
  ursa__g.timers_cap_all = 0;
  for (i = 1; i < n; i++) {
    struct ursa__vp *v;
    if (URSA__FAIL() || (v = aligned_alloc(64, (sizeof *v + 63) & ~(size_t)63)) == NULL) { err = -ENOMEM; goto fail; }
    memset(v, 0, sizeof *v);
    v->index = i;
    ursa__g.vps[i] = v;
  }
  for (i = 0; i < n; i++)                              /* the ring: before any VP shares it */
    if ((err = ursa__sched_reserve(ursa__g.vps[i], smp_ring_size() - 2)) != 0) goto fail;
  for (i = 0; i < n; i++)
    if ((err = smp_state_init(ursa__g.vps[i])) != 0) goto fail;
  if ((err = ursa__pol_init()) != 0) goto fail;
  for (i = 0; i < n; i++) {
    ursa__g.vps[i]->x->fwd = ursa__g.vps[(i + 1) % n];
    ursa__g.vps[i]->x->bwd = ursa__g.vps[(i + n - 1) % n];
    if (ursa__g.policy == URSA__POL_ROTATOR) ursa__g.vps[i]->x->bwd_wq = &ursa__g.vps[i]->x->bwd->x->wq;
  }
#if URSA_TEST_HARD
  chaos_init();
#endif
  ursa__g.steal_ok = membarrier_register();          /* Linux 4.14; else no stealing */
  ursa__g.smp_handoff = ursa__g.policy != URSA__POL_GLOBAL
#if URSA_TEST_HARD
                        && !chaos_on
#endif
                        ;
  for (i = 0; i < n; i++) ursa__vp_mode_set(ursa__g.vps[i]);   /* solo_path reads smp_handoff */
  /* VP 0's idle context needs a stack of its own: the kernel thread's stack is main's. */
  {
    struct ursa__thread *st = ursa__stack_get_slow(v0, 65536, &err), *idle = v0->x->idle;
    char *lo;
    size_t size;
#if URSA_TSAN
    void *fiber;
#endif
    if (st == NULL) { err = -ENOMEM; goto fail; }     /* (create's -EAGAIN: memory, for ursa_init) */
    free(idle);
    lo = st->stack_lo;
    size = st->stack_size;
#if URSA_TSAN
    fiber = st->tsan_fiber;                          /* the stack's own (stack.c) */
#endif
    idle = st;
    memset(idle, 0, sizeof *idle);
    idle->stack_lo = lo;
    idle->stack_size = size;
#if URSA_TSAN
    idle->tsan_fiber = fiber;
#endif
    v0->x->idle = idle;
    idle->vp = v0;
    idle->own_stack = 0;
    strcpy(idle->name, "idle");
    ursa__ctx_make(&idle->ctx, idle, idle_entry);
  }
  if ((err = ursa__smp_reserve(64)) != 0) goto fail;
  if (ursa__g.unstack) {                               /* "Unstacking": only while VPs <= CPUs */
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || (unsigned)CPU_COUNT(&cpus) < n) ursa__g.unstack = 0;
  }
  if (ursa__g.pin) {
    pin_saved = sched_getaffinity(0, sizeof pin_allowed, &pin_allowed) == 0;
    pin_to_cpu(0);
  }
  /* main is pinned to VP 0: it stays on the process's first kernel thread (exit, signals) */
  v0->main_thread->pinned = URSA__PIN_BOUND;
  v0->main_thread->home = v0;
  mark_on_cpu(v0->main_thread);                        /* it runs now */
  v0->x->busy = 1;                                     /* (before the other VPs start) */
  for (i = 1; i < n; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    pthread_attr_t pa;
    int rc = -ENOMEM;                                  /* no stack for the kernel thread */
    /* The kernel thread's stack is ours (glibc would keep a freed one cached and mapped), except
     * under Valgrind, which tells a switch between stacks from a large frame by the distance
     * between them: a stack mapped next to the ursa stacks looked like one big frame, and
     * migrating threads got false "uninitialised value" reports.  Valgrind knows glibc's. */
    if (under_valgrind()) {
      v->x->kstack = NULL;
      pthread_attr_init(&pa);
      pthread_attr_setstacksize(&pa, URSA__VP_STACK);
      rc = URSA__FAIL() ? -EAGAIN : -pthread_create(&v->x->kt, &pa, vp_main, v);
      pthread_attr_destroy(&pa);
    } else if ((v->x->kstack = URSA__FAIL() ? MAP_FAILED
                               : mmap(NULL, URSA__VP_STACK, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0)) != MAP_FAILED) {
      pthread_attr_init(&pa);
      pthread_attr_setstack(&pa, v->x->kstack, URSA__VP_STACK);
      rc = URSA__FAIL() ? -EAGAIN : -pthread_create(&v->x->kt, &pa, vp_main, v);
      pthread_attr_destroy(&pa);
      if (rc != 0) munmap(v->x->kstack, URSA__VP_STACK);
    }
    if (rc != 0) {
      v->x->kstack = NULL;
      smp_teardown(i, NULL);                                /* stop VPs 1..i-1, free everything */
      return rc == -ENOMEM ? -ENOMEM : -EAGAIN;
    }
  }
  return 0;
fail:
  for (i = 0; i < n && ursa__g.vps; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    if (v == NULL) continue;
    if (v->x && i == 0 && v->x->idle && v->x->idle->stack_lo) {   /* VP 0's idle is on a stack */
      ursa__stack_put_slow(v, v->x->idle);
      v->x->idle = NULL;
    }
    smp_state_free(v);
    if (i) { free(v->timers); free(v->runq.buf); free(v); }
  }
  ursa__pol_fini();
  free(ursa__g.vps);
  ursa__g.vps = NULL;
  return err;
}

/* Stops VPs 1..started-1 (running) and frees every VP's state; stopped (if not NULL) is called
 * once all N have stopped, before their state is freed. */
static void smp_teardown(unsigned started, void (*stopped)(void)) {
  unsigned n = ursa__g.nvps, i;
  struct ursa__vp *v0 = &ursa__g.vp0;
  for (i = 1; i < started; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    __atomic_store_n(&v->x->stop, 1u, __ATOMIC_RELEASE);
    ursa__vp_kick(v);
  }
  for (i = 1; i < started; i++) {
    struct ursa__smp *x = ursa__g.vps[i]->x;
    pthread_join(x->kt, NULL);
    if (x->kstack) munmap(x->kstack, URSA__VP_STACK);
    x->kstack = NULL;
  }
  if (started == n && stopped) stopped();
  for (i = 1; i < n; i++) {
    struct ursa__vp *v = ursa__g.vps[i];
    ursa__stack_pool_drain(v);
    smp_state_free(v);
    free(v->timers);
    free(v->runq.buf);
    free(v);
  }
  if (v0->x) {
    struct ursa__thread *idle = v0->x->idle;
    v0->x->idle = NULL;
    if (idle) {
#if URSA_TSAN
      /* The idle context never finishes: its fiber keeps the shadow-stack frames of idle_loop,
       * so the stack goes back to the pool with a fresh one (see ursa__thread_entry). */
      __tsan_destroy_fiber(idle->tsan_fiber);
      idle->tsan_fiber = __tsan_create_fiber(0);
#endif
      idle->own_stack = 0;
      ursa__stack_put_slow(v0, idle);
    }
    smp_state_free(v0);
  }
  ursa__pol_fini();
  free(ursa__g.vps);
  ursa__g.vps = NULL;
  pin_restore();                                       /* URSA_PIN: main's CPUs back */
}

void ursa__smp_fini(void (*stopped)(void)) { smp_teardown(ursa__g.nvps, stopped); }
