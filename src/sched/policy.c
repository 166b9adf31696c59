/*
 * policy.c - where ready threads that a VP gives away go, and where an idle VP finds work.
 *
 * Every policy keeps a VP's own ready threads in its Protect Queue (owner only, no lock) up to
 * ursa__g.pq_cap unpinned threads; what they differ in is the shared structure beyond it:
 *
 *   rotator  Lesser Bear LB3 (the default).  Overflow goes to the VP's own Waiver Queue, a bounded
 *            SPSC ring whose single consumer is VP forward(i).  At every switch VP i moves every
 *            thread of VP backward(i)'s Waiver Queue into its Protect Queue up to the capacity and
 *            the rest into its own Waiver Queue, and wakes forward(i) if it pushed any.  No lock
 *            and no read-modify-write anywhere: threads travel round the ring until a VP has room.
 *            A VP whose Protect Queue is over capacity also hands its surplus to its Waiver Queue
 *            at a switch (and at ursa_create), so work created on one VP spreads.  Unlike the
 *            paper, threads go on only to a forward(i) that holds fewer ready threads, half the
 *            difference at a time: otherwise two full VPs send their surplus round and round.
 *            Batches (issue #20): a thread made ready outside a switch (ursa_create, a wake-up)
 *            goes on only to a *hungry* forward(i), one with nothing queued (fwd_queued), and the
 *            step at ursa_create passes half the difference in one batch then, newest first; the
 *            rest waits for the creator's next switch, which passes half the difference too.  So
 *            a fork loop hands out runs of consecutive threads instead of every other one:
 *            fewer Waiver Queue pushes and kicks per created thread, and threads created
 *            together (neighbouring slices of a data-parallel loop, which write neighbouring
 *            cache lines) run on one VP.  Measured on the radix sort (bench/radix_sort.c) at 2
 *            VPs, 11-15 interleaved runs, medians: 2^8 24.95 -> 22.55 ms, 2^4 24.13 -> 22.55,
 *            2^1 150.8 -> 151.9, 2^10 26.2 -> 27.8 (the fixed kernel threads 24.0, 21.4, 146.7,
 *            29.0); the distribution experiment unchanged (4.22 -> 4.29 ms, 7 runs).
 *
 * While some VP is idle (ursa__g.idle_vps > 0) the capacity counts as 1 for every policy: a VP
 * with two or more ready threads passes the others on, so an idle VP gets work even when no
 * Protect Queue is full (Lesser Bear's fixed capacity left it idle then).
 *   lb2      Lesser Bear LB2.  Overflow goes to the VP's own Waiver Queue (its owner pushes without
 *            a lock); a VP whose Protect Queue is empty takes threads from any Waiver Queue, its
 *            own first, holding that queue's consumer lock (so consumers are serialized).
 *   global   One queue for the whole process under one lock: every unpinned ready thread goes
 *            there (the Protect Queue then holds pinned threads only).
 *   steal    Overflow goes to the VP's own Chase-Lev deque; a VP whose Protect Queue is empty
 *            takes from its own deque's FIFO end, then steals from random victims (as Go, Tokio
 *            and Argobots do).
 *
 * Pinned threads never enter a shared structure (vp.c routes them to their home VP's inbox).
 * Executed only by the VP named in each call; the shared structures say how they are guarded.
 */
#define _GNU_SOURCE
#include "policy.h"

#include <stdlib.h>
#include <string.h>

/* the global queue (policy global) */
static struct {
  ursa__spin_t         lock;
  struct ursa__thread *head, *tail;    /* FIFO through w.next, under lock */
  uint32_t             n;              /* atomic: threads queued */
} gq;

const char *ursa__pol_name(int policy) {
  switch (policy) {
  case URSA__POL_ROTATOR: return "rotator";
  case URSA__POL_LB2:     return "lb2";
  case URSA__POL_GLOBAL:  return "global";
  case URSA__POL_STEAL:   return "steal";
  default:                return "?";
  }
}

int ursa__pol_init(void) {
  memset(&gq, 0, sizeof gq);
  return 0;
}

void ursa__pol_fini(void) { memset(&gq, 0, sizeof gq); }

int ursa__pol_vp_init(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  int err = 0;
  if (ursa__g.policy == URSA__POL_ROTATOR || ursa__g.policy == URSA__POL_LB2)
    err = URSA__FAIL() ? -ENOMEM : ursa__wq_init(&x->wq, ursa__g.wq_cap);
  else if (ursa__g.policy == URSA__POL_STEAL)
    err = URSA__FAIL() ? -ENOMEM : ursa__deque_init(&x->dq, ursa__g.wq_cap);
  return err;
}

void ursa__pol_vp_fini(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  if (ursa__g.policy == URSA__POL_ROTATOR || ursa__g.policy == URSA__POL_LB2) {
    if (x->wq.buf) ursa__wq_destroy(&x->wq);
  } else if (ursa__g.policy == URSA__POL_STEAL) {
    ursa__deque_destroy(&x->dq);
  }
}

/* Threads queued for x's VP forward(i): ready there as of its last switch, in its inbox, plus
 * those already on their way in x's Waiver Queue; 0 when it is hungry (about to run out, or idle:
 * "Batches" above).  All relaxed: a hint, and a stale figure only delays a pass by one switch. */
static uint32_t fwd_queued(struct ursa__smp *x) {
  struct ursa__smp *fx = x->fwd->x;
  return __atomic_load_n(&fx->load, __ATOMIC_RELAXED) + __atomic_load_n(&fx->inbox_n, __ATOMIC_RELAXED) +
         ursa__wq_len(&x->wq);
}
/* ... and the one it runs. */
static uint32_t fwd_threads(struct ursa__smp *x) {
  return fwd_queued(x) + __atomic_load_n(&x->fwd->x->busy, __ATOMIC_RELAXED);
}

/* Wakes one sleeping VP other than vp, if any (lb2, global, steal: any VP may take the work). */
static void kick_one(struct ursa__vp *vp) {
  unsigned i, n = ursa__g.nvps;
  for (i = 1; i < n; i++) {
    struct ursa__vp *v = ursa__g.vps[(vp->index + i) % n];
    if (__atomic_load_n(&v->x->sleeping, __ATOMIC_RELAXED) != 0) { ursa__vp_kick(v); return; }
  }
}

bool ursa__pol_offer(struct ursa__vp *vp, struct ursa__thread *t, uint32_t pqlen) {
  struct ursa__smp *x = vp->x;
  switch (ursa__g.policy) {
  case URSA__POL_ROTATOR:
    /* a thread made ready here (created, woken) goes on only to a hungry forward(i): one that has
     * nothing queued ("Batches" above) */
    if (pqlen < ursa__pol_keep(vp) || fwd_queued(x) != 0 || !ursa__wq_push(&x->wq, t)) return false;
    ursa__vp_kick(x->fwd);
    return true;
  case URSA__POL_LB2:
    if (pqlen < ursa__pol_keep(vp) || !ursa__wq_push(&x->wq, t)) return false;
    kick_one(vp);
    return true;
  case URSA__POL_STEAL:
    if (pqlen < ursa__pol_keep(vp) || !ursa__deque_push(&x->dq, t)) return false;
    kick_one(vp);
    return true;
  default:                                              /* global */
    t->w.next = NULL;
    ursa__spin_lock(&gq.lock);
    if (gq.tail) gq.tail->w.next = t; else gq.head = t;
    gq.tail = t;
    __atomic_store_n(&gq.n, gq.n + 1, __ATOMIC_RELAXED);
    ursa__spin_unlock(&gq.lock);
    kick_one(vp);
    return true;
  }
}

/* How far back from the newest ready thread pq_take_surplus_in looks for one it may give away. */
#define SURPLUS_SCAN 8u

/* Takes an unpinned thread to give away from vp's Protect Queue (owner only): the oldest of the
 * overflow list when it is in use (it holds the surplus), else the newest of the ring that is
 * neither pinned nor a region's member, among the newest SURPLUS_SCAN; NULL when there is none
 * (or nothing is queued).  Looking past the newest matters: a pinned thread woken here -- main
 * of a fork-join program, at the end of each phase -- sits at the ring's tail, and taking only
 * the tail would keep every thread queued before it on this VP while another VP idles (the radix
 * sort at 2^1: the idle VP waited ~0.4 ms per phase, 5% of the run).  The pinned threads passed
 * over move down one slot each, keeping their order.  keep_handed: not a thread that a wake-up
 * handed off (t->handed) while it waits alone in runq.next (the balancing tick of a VP that
 * switches: ursa__pol_timer). */
static struct ursa__thread *pq_take_surplus_in(struct ursa__vp *vp, bool keep_handed) {
  struct ursa__runq *q = &vp->runq;
  struct ursa__thread *t = q->xhead;
  uint32_t j, pos;
  if (t != NULL) {
    if (t->pinned || t->region) return NULL;
    q->xhead = t->w.next;
    if (q->xhead == NULL) q->xtail = NULL;
    q->xlen--;
    return t;
  }
  if (q->tail == q->head) {                           /* the ring is empty: its one-slot head */
    t = q->next;
    if (t == NULL || t->pinned || t->region || (keep_handed && t->handed)) return NULL;
    q->next = NULL;
    return t;
  }
  for (j = 0; j < SURPLUS_SCAN && q->tail - j != q->head; j++) {
    pos = q->tail - 1 - j;
    t = q->buf[pos & q->mask];
    if (t->pinned || t->region) continue;
    for (; pos + 1 != q->tail; pos++) {                /* the j passed over, down one slot */
      struct ursa__thread *u = q->buf[(pos + 1) & q->mask];
      q->buf[pos & q->mask] = u;
      u->w.rq_pos = pos;
    }
    q->tail--;
    return t;
  }
  return NULL;
}
static struct ursa__thread *pq_take_surplus(struct ursa__vp *vp, bool keep_handed) {
  struct ursa__thread *t;
  ursa__pq_enter(vp);                                  /* (vp.c, "Stealing") */
  t = pq_take_surplus_in(vp, keep_handed);
  ursa__pq_exit(vp);
  return t;
}

/* Gives vp's ready threads beyond keep() to its own shared structure, at most `most` of them;
 * true if any moved.  Into a Waiver Queue they go as a batch: one Protect Queue bracket for the
 * run, and one release store of the queue's tail per PASS_CHUNK threads, so the consumer (often
 * polling that tail while idle) loses the line once per chunk rather than once per thread.
 * Measured against one bracket and one push per thread (`smp_distribution rotator 2 12 2000`,
 * 30 interleaved runs, medians): 4.173 -> 4.092 ms, faster in 20 of the 30 pairs; the radix sort
 * at 2 VPs, 2^8, 21.76 -> 21.27 ms (12 interleaved rounds; 2^4 unchanged, 25.5).  The chunks
 * (rather than one store at the end): a hungry forward(i) starts on the first threads while the
 * rest are staged; an event log of the distribution experiment had shown VP 1 idle ~3 us while
 * VP 0 staged a run of 682 (25 interleaved runs with chunks: 4.342 -> 4.287 ms, within the noise). */
#define PASS_CHUNK 32u

/* Stages t as the next of a pass (staged so far: *staged), publishing every PASS_CHUNK. */
static inline void pass_stage(struct ursa__wq *wq, uint32_t *staged, struct ursa__thread *t) {
  ursa__wq_stage(wq, (*staged)++, t);
  if (*staged == PASS_CHUNK) {                         /* forward(i) may start on these */
    ursa__wq_publish(wq, *staged);
    *staged = 0;
  }
}

/* Stages the newest `want` threads of vp's ring (no overflow list in use) in x's Waiver Queue as
 * one run in the order they were queued, oldest of the run first; 0 if a pinned thread or a
 * region's member is among them (pq_take_surplus_in then passes the others one by one, newest
 * first).  Inside vp's Protect Queue bracket.  The order matters to data-parallel forks: threads
 * created together (neighbouring slices) then run on forward(i) in the order of their data,
 * as on this VP; taken one by one from the tail they ran on forward(i) backwards, and the radix
 * sort at 2^8 on 2 VPs took ~26 ms instead of ~22 once the ring held a whole phase's 256
 * threads (session 26, 8 interleaved rounds of `radix_sort ursa 2 8,8,4,10`). */
static uint32_t pass_ring_run(struct ursa__vp *vp, uint32_t want, uint32_t *staged) {
  struct ursa__runq *q = &vp->runq;
  struct ursa__wq *wq = &vp->x->wq;
  uint32_t have = q->tail - q->head, pos, i;
  if (want > have) want = have;
  if (want == 0 || q->xhead != NULL) return 0;
  for (i = 0; i < want; i++) {
    struct ursa__thread *t = q->buf[(q->tail - want + i) & q->mask];
    if (t->pinned || t->region) return 0;
  }
  pos = q->tail - want;
  for (i = 0; i < want; i++) pass_stage(wq, staged, q->buf[(pos + i) & q->mask]);
  q->tail = pos;
  return want;
}

static bool pass_on(struct ursa__vp *vp, uint32_t len, uint32_t most) {
  struct ursa__smp *x = vp->x;
  struct ursa__thread *t;
  uint32_t k = ursa__pol_keep(vp), n = 0, staged = 0, room;
  if (len <= k || most == 0) return false;
  if (most > len - k) most = len - k;
  if (ursa__g.policy == URSA__POL_STEAL) {            /* the deque: one push each */
    while (n < most) {
      bool from_list = vp->runq.xhead != NULL;
      if ((t = pq_take_surplus(vp, false)) == NULL) break;
      if (!ursa__deque_push(&x->dq, t)) {              /* full: put it back */
        ursa__pq_enter(vp);
        if (from_list) {                               /* where it was */
          t->w.next = vp->runq.xhead;
          vp->runq.xhead = t;
          if (vp->runq.xtail == NULL) vp->runq.xtail = t;
          vp->runq.xlen++;
        } else {                                       /* newest (it left a slot free) */
          ursa__runq_push(vp, t);
        }
        ursa__pq_exit(vp);
        break;
      }
      n++;
    }
    return n != 0;
  }
  if ((room = ursa__wq_room(&x->wq, most)) < most) most = room;
  ursa__pq_enter(vp);                                  /* (vp.c, "Stealing") */
  while (n < most && vp->runq.xhead != NULL && (t = pq_take_surplus_in(vp, false)) != NULL) {
    pass_stage(&x->wq, &staged, t);                    /* the overflow list's oldest first */
    n++;
  }
  n += pass_ring_run(vp, most - n, &staged);
  while (n < most && (t = pq_take_surplus_in(vp, false)) != NULL) {   /* past a pinned thread */
    pass_stage(&x->wq, &staged, t);
    n++;
  }
  ursa__pq_exit(vp);
  if (staged != 0) ursa__wq_publish(&x->wq, staged);
  return n != 0;
}

/* Counts threads in x's load before they leave a shared structure for x's Protect Queue (the
 * rotator's intake, lb2_take): an idle VP that finds the structure empty, reading it with acquire
 * (ursa__pol_passed_on), then sees them in load (the pop's release store of head follows this
 * store), and does not sleep without a deadline while they wait here behind a thread that may
 * stall this VP (vp.c, others_loaded).  pick_slow stores the exact figure after. */
static inline void load_before_intake(struct ursa__smp *x, uint32_t upto) {
  if (upto > x->load) __atomic_store_n(&x->load, upto, __ATOMIC_RELAXED);
}

/* Rotator: the ring step at every switch. */
static void rotate(struct ursa__vp *vp, uint32_t len) {
  struct ursa__smp *x = vp->x;
  struct ursa__wq *in = &x->bwd->x->wq;
  struct ursa__thread *t;
  bool passed = false;
  uint32_t cap = ursa__g.pq_cap;                                /* intake: up to the capacity */
  uint32_t fwd = fwd_threads(x);
  if (!ursa__wq_empty(in)) {
    uint32_t n = ursa__wq_len(in);        /* a snapshot: two VPs passing threads round the ring */
    load_before_intake(x, len + n);
    ursa__pq_enter(vp);                   /* a thief's turn on vp may pop `in` too (vp.c, "Stealing") */
    while (n-- > 0 && (t = ursa__wq_pop(in)) != NULL) {   /* must not chase each other forever */
      vp->stats.migrations++;
      /* keep it below the capacity, or when forward(i) holds as much: passing threads on to a VP
       * that is no emptier only sends them round and round */
      if (len < cap || fwd >= len || !ursa__wq_push(&x->wq, t)) { ursa__pq_push(vp, t); len++; }
      else { passed = true; fwd++; }
    }
    ursa__pq_exit(vp);
    ursa__load_hint(x, len);             /* (it may have grown above; rotate runs outside a switch too) */
  }
  /* Over capacity (threads created or woken here): pass on half the difference to forward(i). */
  if (len > ursa__pol_keep(vp) && fwd + 1 < len && pass_on(vp, len, (len - fwd) / 2)) passed = true;
  if (passed) ursa__vp_kick(x->fwd);
}

/* Spread (vp.c, "Spread"): gives vp's unpinned ready threads to the idle VPs, one to each idle VP
 * whose inbox is empty, newest first; the number given.  Run by vp's own kernel thread where no
 * ursa lock of its is held: a preemption (src/model/model.c) or the balancing tick's handler at a
 * safe point (src/model/preempt.c). */
unsigned ursa__pol_spread(struct ursa__vp *vp, bool keep_handed) {
  unsigned given = 0;
  struct ursa__vp *v;
  while (ursa__pq_len(vp) != 0 && (v = ursa__smp_idle_vp(vp)) != NULL) {
    struct ursa__thread *t = pq_take_surplus(vp, keep_handed);
    if (t == NULL) break;                              /* pinned or in a region: stays */
    ursa__smp_ready(vp, t, v);                         /* to v's inbox (now not empty), wakes v */
    given++;
  }
  return given;
}

/* The interval timer's step (URSA_ROTATE_US, src/model/preempt.c), run between two instructions of
 * the VP's running thread at a safe point: the ring step, then, when forward(i) has nothing at
 * all, every ready thread this VP keeps goes on to it too: they would wait behind the running
 * thread while forward(i) idles.  Except, with keep_handed (the VP switched often in the last
 * period: src/model/preempt.c, on_rotate), a thread that a wake-up handed off and that waits alone
 * in runq.next: its waker, the running thread, is then most likely a few instructions from
 * blocking (a thread-ring, a semaphore ping-pong), and moving the one it woke would move the
 * whole chain to the other VP (a wake-up of a sleeping VP, 70-100 us on this machine kind, and an
 * idle one left behind): the 2-VP thread-ring moved so in 3 to 6 of every 15 runs of make bench
 * (session 19's runs), none in 10 runs since.  A VP that switches seldom (a producer that posted
 * its consumer and goes on computing) gives such a thread away as before.  The price: a waker
 * that goes on computing right after a burst of switches keeps the thread it woke one tick
 * longer, until the next tick (one period of the pace, 1 to 8 ms) finds no switch and gives it
 * away; an idle VP does not steal it meanwhile (the hand-off leaves load at 0, vp.c). */
void ursa__pol_timer(struct ursa__vp *vp, bool keep_handed) {
  struct ursa__smp *x = vp->x;
  struct ursa__thread *t;
  bool passed = false;
  uint32_t len = ursa__pq_len(vp);
  if (ursa__pol_switch_needed(vp, len)) ursa__pol_switch(vp, len);
  if (ursa__g.policy != URSA__POL_ROTATOR || fwd_threads(x) != 0) return;
  while ((t = pq_take_surplus(vp, keep_handed)) != NULL) {
    if (!ursa__wq_push(&x->wq, t)) { ursa__pq_push(vp, t); break; }   /* full: keep it */
    passed = true;
  }
  if (passed) ursa__vp_kick(x->fwd);
}

/* The step at ursa_create (vp.c, ursa__smp_balance): as at a switch, except that the rotator
 * passes its surplus on only to a hungry forward(i), half the difference in one batch. */
void ursa__pol_create_step(struct ursa__vp *vp, uint32_t len) {
  struct ursa__smp *x = vp->x;
  if (ursa__g.policy != URSA__POL_ROTATOR || !ursa__wq_empty(&x->bwd->x->wq)) {
    ursa__pol_switch(vp, len);                         /* (the ring's intake first) */
    return;
  }
  if (len > ursa__pol_keep(vp) && fwd_queued(x) == 0 && pass_on(vp, len, (len - fwd_threads(x)) / 2))
    ursa__vp_kick(x->fwd);
}

void ursa__pol_switch(struct ursa__vp *vp, uint32_t len) {
  switch (ursa__g.policy) {
  case URSA__POL_ROTATOR:
    rotate(vp, len);
    return;
  case URSA__POL_LB2:
  case URSA__POL_STEAL: {                              /* over capacity: make it stealable */
    if (len > ursa__pol_keep(vp) && pass_on(vp, len, UINT32_MAX)) kick_one(vp);
    return;
  }
  default:
    return;
  }
}

/* LB2: take up to pq_cap threads from v's Waiver Queue under its consumer lock. */
static struct ursa__thread *lb2_take(struct ursa__vp *vp, struct ursa__vp *v) {
  struct ursa__thread *first = NULL, *t;
  uint32_t n = 0;
  if (ursa__wq_empty(&v->x->wq)) return NULL;
  load_before_intake(vp->x, ursa__pq_len(vp) + ursa__g.pq_cap);
  ursa__spin_lock(&v->x->wq_lock);
  while (n < ursa__g.pq_cap && (t = ursa__wq_pop(&v->x->wq)) != NULL) {
    if (first == NULL) first = t; else ursa__pq_push(vp, t);
    if (v != vp) vp->stats.migrations++;
    n++;
  }
  ursa__spin_unlock(&v->x->wq_lock);
  return first;
}

static uint32_t rnd(struct ursa__smp *x) {            /* xorshift64 */
  x->rng ^= x->rng << 13;
  x->rng ^= x->rng >> 7;
  x->rng ^= x->rng << 17;
  return (uint32_t)(x->rng >> 32);
}

struct ursa__thread *ursa__pol_fetch(struct ursa__vp *vp) {
  struct ursa__smp *x = vp->x;
  struct ursa__thread *t = NULL;
  unsigned i, n = ursa__g.nvps;
  switch (ursa__g.policy) {
  case URSA__POL_LB2:
    for (i = 0; i < n && t == NULL; i++) t = lb2_take(vp, ursa__g.vps[(vp->index + i) % n]);
    return t;
  case URSA__POL_GLOBAL:
    if (__atomic_load_n(&gq.n, __ATOMIC_RELAXED) == 0) return NULL;
    ursa__spin_lock(&gq.lock);
    if ((t = gq.head) != NULL) {
      gq.head = t->w.next;
      if (gq.head == NULL) gq.tail = NULL;
      __atomic_store_n(&gq.n, gq.n - 1, __ATOMIC_RELAXED);
    }
    ursa__spin_unlock(&gq.lock);
    return t;
  case URSA__POL_STEAL:
    if ((t = ursa__deque_steal(&x->dq)) != NULL) return t;        /* own deque, FIFO end */
    if (n > 1) {
      unsigned start = rnd(x) % (n - 1);
      for (i = 0; i < n - 1 && t == NULL; i++) {
        struct ursa__vp *v = ursa__g.vps[(vp->index + 1 + (start + i) % (n - 1)) % n];
        t = ursa__deque_steal(&v->x->dq);
      }
      if (t) vp->stats.migrations++;
    }
    return t;
  default:                                              /* rotator: all arrives via rotate() */
    return NULL;
  }
}

/* Whether any VP's Waiver Queue holds a thread (lb2: every idle VP takes from all of them). */
static bool any_wq_queued(void) {
  unsigned i;
  for (i = 0; i < ursa__g.nvps; i++)
    if (!ursa__wq_empty(&ursa__g.vps[i]->x->wq)) return true;
  return false;
}

bool ursa__pol_passed_on(const struct ursa__vp *vp) {
  switch (ursa__g.policy) {
  case URSA__POL_ROTATOR: return !ursa__wq_empty(&vp->x->wq);
  case URSA__POL_LB2:     return any_wq_queued();
  default:                return false;
  }
}

bool ursa__pol_has_work(struct ursa__vp *vp) {
  unsigned i;
  switch (ursa__g.policy) {
  case URSA__POL_ROTATOR:
    return !ursa__wq_empty(&vp->x->bwd->x->wq);
  case URSA__POL_LB2:
    return any_wq_queued();
  case URSA__POL_GLOBAL:
    return __atomic_load_n(&gq.n, __ATOMIC_RELAXED) != 0;
  default:
    for (i = 0; i < ursa__g.nvps; i++)
      if (ursa__deque_len(&ursa__g.vps[i]->x->dq) != 0) return true;
    return false;
  }
}
