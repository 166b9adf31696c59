/*
 * model/rotator.pml - a Promela model of ursa's SMP scheduler as src/sched implements it with the
 * Lesser Bear "rotator" policy: each virtual processor's (VP's) Protect Queue (the `next` slot,
 * the ring and the overflow list), the inline hand-off of a woken thread into the waker's empty
 * Protect Queue, the on-CPU byte that keeps a thread from being resumed on one VP while its last
 * switch on another has not saved it yet, the ring of Waiver Queues that passes surplus threads
 * from one VP to the next (at every switch, and from the rotator's interval timer), the inboxes
 * of pinned threads, and the protocol by which an idle VP goes to sleep on a futex, is woken
 * when work reaches it, and reports a deadlock when every VP is idle.  Checked by
 * scripts/check-model.sh; model/README.md says what is modelled, what is abstracted away, what
 * each configuration proves and what the checks cost.
 *
 * Names in the model and in the C code (src/sched/vp.c, policy.c, sched.h, waiverq.h):
 *   nxt[i], ring[i], xl[i]
 *                the Protect Queue of VP i (vp->runq, owner only): runq.next, the one-thread
 *                slot filled only while the ring is empty; the ring (capacity R); the overflow
 *                list xhead/xtail, in use while the ring is full, and while it is in use every
 *                push goes there (pq_push).  Popped in that order (pq_pop).  C is the number of
 *                ready threads the VP keeps (ursa__pol_keep): a thread made ready on VP i while
 *                its Protect Queue holds C or more is offered to wq[i].
 *   wq[i]        ursa__wq (src/sched/waiverq.h), the bounded SPSC Waiver Queue: VP i is its only
 *                producer (its switches and its interval timer, which runs only at a safe point
 *                of VP i's running thread, never inside ursa), VP FWD(i) its only consumer, so
 *                the queues form a ring.  Capacity W.  With WQ_RING, wbuf/whead/wtail instead:
 *                the ring's slots and its two free-running positions.
 *   inbox[i]     vp->inbox: the threads made ready for VP i by other VPs (a thread pinned to VP
 *                i, or created for it).  Any VP pushes, VP i drains.
 *   oncpu[t]     the on-CPU byte of thread t (src/arch): set by the switch that resumes t,
 *                cleared by the switch that saves it, as its last store.  Here 1 + the VP that
 *                runs t or is still saving it, 0 when no VP is on t's stack (so the byte and the
 *                ghost "who runs t" are one variable).
 *   pinned[t]    t->pinned for this trip: a thread woken pinned to VP j goes to inbox[j]; on
 *                VP j it is never offered to the Waiver Queue nor given away as surplus, and
 *                never taken by the inline hand-off (ursa__smp_handoff_ok, pick_handoff).
 *   sleeping[i]  x->sleeping: AWAKE 0, INDEF 2 = asleep indefinitely, published; COUNTED 3 =
 *                INDEF and counted in sleepers (timed sleep, 1, is not modelled, see README).
 *   wakeseq[i]   x->wakeseq, the futex word.  `while (wakeseq == s) futex_wait(&wakeseq, s)` is
 *                the guard (wakeseq[i] != s); a waker increments the word before FUTEX_WAKE, so
 *                the guard is exact and spurious returns are invisible.
 *   sleepers     ursa__g.sleepers: VPs asleep and counted.  The VP whose increment makes it N
 *                reports a deadlock (or, with no thread left, ends the run).
 *   tokens       user-level threads 1..T.  A token is running on a VP, sits in one queue, is
 *                "in hand" (taken by a VP and not yet queued or resumed), is blocked (on a
 *                mutex, a join...; nobody's until a running token wakes it), or is done.
 *
 * Atomicity.  Every access to a variable or queue that another VP can observe is its own Promela
 * step; what only the owner observes (its Protect Queue, its locals, the ghosts) is folded into
 * the neighbouring step.  ursa puts a seq_cst read-modify-write between the two halves of each
 * Dekker pair (the sleeper's "publish sleeping; load the queues", the waker's "push; load
 * sleeping") and uses seq_cst read-modify-writes elsewhere, so executions are sequentially
 * consistent: interleaving the individual loads and stores is the exact model.
 *
 * A VP (proctype vp), as vp.c runs it:
 *   idle     its idle context: pick; a thread -> run_from_idle; none -> the sleep protocol.
 *   sched    pick (the C pick()): the inline hand-off pick_handoff when the thread woken here
 *            waits alone in runq.next, unpinned, with the inbox and the Waiver Queue behind
 *            empty; otherwise pick_slow: drain a snapshot of the inbox, the ring step (drain a
 *            snapshot of wq[BWD(i)], keeping up to C and offering the rest to wq[i]; pass one
 *            surplus thread on when over C), wake FWD(i) if anything was pushed, pop.
 *   switch   switch_to: a next thread whose on-CPU byte is still set (another VP is saving it)
 *            is not resumed inside the switch: the VP switches to its idle context (which
 *            clears the byte of the thread it leaves), waits for the byte and then resumes it
 *            (run_from_idle).  Otherwise it saves the current thread (clearing its byte) and
 *            resumes the next in one step.
 *   body     the running token: may wake one blocked token (ursa__wake_m: into the front of
 *            this VP's Protect Queue when it is empty, the inline hand-off; else ready_slow;
 *            a pinned one to its home's inbox, then a kick); the interval timer may tick
 *            (ursa__pol_timer, K ticks in all); then it yields (pick first; nothing else ready:
 *            it goes on running), blocks (visible to wakers at once: the object's lock is
 *            released before the switch saves it) or finishes.
 *
 * The idle protocol (VP i, nothing to run) - what ursa implements:
 *     s = wakeseq;
 *     sleeping = INDEF;                                    publish: wakers now take us
 *     fence; if (queues not empty) { withdraw; }           the Dekker recheck
 *     if (!CAS(&sleeping, INDEF, COUNTED)) { taken; }      commit
 *     if (fetch_add(&sleepers, 1) + 1 == N) detect;        count
 *     while (wakeseq == s) futex_wait(&wakeseq, s);        only a take ends the wait
 *   withdraw: if (exchange(&sleeping, AWAKE) == AWAKE) taken; else goto idle;
 *   taken:    while (wakeseq == s) futex_wait(&wakeseq, s); goto idle;
 * and wake(j), after making work visible to VP j:
 *     fence; if (sleeping[j] != AWAKE) { old = exchange(&sleeping[j], AWAKE);
 *       if (old == COUNTED) sleepers--;  if (old != AWAKE) { wakeseq[j]++; futex_wake; } }
 *
 * Variants (cpp macros, spin -DNAME):
 *   (none)           the protocol above.  Must verify.
 *   BUG_HANDOFF_NO_ONCPU
 *                    the switch after the inline hand-off pick (pick_handoff) resumes the thread
 *                    without looking at its on-CPU byte: a thread woken here while the VP it
 *                    blocked on is still saving it runs on two VPs at once (double_run).
 *   BUG_HANDOFF_NONEMPTY
 *                    the wake-up's hand-off test forgets runq.next (it checks only the ring and
 *                    the overflow list): a token woken while another waits in runq.next is
 *                    written over it, and that one is lost (the recount in consistent()).
 *   BUG_COUNT_FIRST  the first design: `sleepers++; sleeping = INDEF; fence; recheck; if
 *                    (sleepers == N) deadlock`, the waker uncounting on INDEF (false_deadlock).
 *   BUG_NO_CAS       commit by a plain store of COUNTED: a take just before it is overwritten,
 *                    the VP wakes still COUNTED (the assertion after end_wait).
 *   BUG_NO_WAIT      no wait at `taken`: an increment owed to an earlier round's take ends a
 *                    later round's wait while the VP is still counted (false_deadlock).
 *   BUG_NO_FENCE     the recheck before the publishing store (what a missing fence lets the CPU
 *                    do): a push between the two is never followed by a wake-up, the lost
 *                    wake-up (lost_wakeup with NO_DETECTION; with detection, false_deadlock).
 *   NO_DETECTION     no deadlock detection: the VP whose count makes N just sleeps.
 *   WQ_RING          the Waiver Queues at the level of ursa__wq's ring: a push writes the slot at
 *                    tail, then stores tail + 1 (publish); a pop reads the slot at head, then
 *                    stores head + 1; a length is a load of the other side's position.  Without
 *                    it a push or a pop is one atomic step on a channel.
 *   BUG_WQ_PUBLISH_FIRST
 *                    (with WQ_RING) the push stores tail + 1 before it writes the slot: the
 *                    consumer may read the slot first (wq_torn).
 *   N T C W R B K    VPs, tokens, threads kept (pq threshold), wq capacity, ring capacity, B: how
 *                    many times in all tokens may yield or block (after that every run finishes
 *                    its token), and K: how many interval-timer ticks in all (0: the timer off).
 *                    B and K make every execution finite.
 *
 * Properties (pan -DNP -l: assertions and, at the same time, no cycle at all in the state graph):
 *   1. tokens are neither lost nor duplicated: each pop asserts that the popped token's ghost
 *      location is that queue, each push records it, and consistent() recounts every queue
 *      against the ghosts at each check below.  SPSC: a wq push asserts room and is made only
 *      by the queue's owner (it pushes only wq[me]); a wq pop asserts that the token was pushed
 *      by the VP behind, and only that VP's successor pops (the one receive is wq[BWD(me)]?).
 *   2. no thread runs on two VPs at once: a resume asserts that the token's on-CPU byte is 0
 *      (double_run), and every final state and deadlock report has every byte 0.
 *   3. no VP stuck: in a final state every VP is asleep in futex_wait (end_wait) or halted after
 *      the deadlock report (end_halted): the monitor asserts it (stuck), since pan's own check
 *      of invalid end states is off in the cycle search.
 *   4. no lost wake-up: proctype monitor.
 *   5. no false deadlock report: inlines observe_all_idle and detect.
 *   6. every execution is finite: pan's non-progress-cycle search with no progress label finds
 *      no cycle at all (which is what makes the final-state checks 3 and 4 complete).
 */

#ifndef N
#define N 2            /* VPs */
#endif
#ifndef T
#define T 3            /* tokens (threads) */
#endif
#ifndef C
#define C 1            /* threads a VP keeps before it offers more to its Waiver Queue */
#endif
#ifndef W
#define W 1            /* wq capacity */
#endif
#ifndef R
#define R 1            /* ring capacity of the Protect Queue (beyond it: the overflow list) */
#endif
#ifndef B
#define B 2            /* yields + blocks, all tokens together */
#endif
#ifndef K
#define K 1            /* interval-timer ticks, all VPs together */
#endif

#define FWD(i) (((i) + 1) % N)
#define BWD(i) (((i) + N - 1) % N)

/* sleeping[] values */
#define AWAKE     0
#define INDEF     2
#define COUNTED   3
#ifdef BUG_COUNT_FIRST
#define UNCOUNT(old) ((old) == INDEF)        /* the sleeping value whose taker does sleepers-- */
#else
#define UNCOUNT(old) ((old) == COUNTED)
#endif

/* Ghost location of a token: kind, and the VP in wvp[] */
#define K_PQ      1
#define K_WQ      2
#define K_INBOX   3
#define K_HAND    4
#define K_RUN     5
#define K_BLOCKED 6
#define K_DONE    7

/* What a VP's pick is for (its local `op`) */
#define OP_IDLE   0    /* the idle context looks for work */
#define OP_YIELD  1    /* the running token yields: pick first, then queue it */
#define OP_SWITCH 2    /* the running token blocked or finished */

byte nxt[N];                      /* runq.next */
chan ring[N]  = [R] of { byte };  /* runq's ring */
chan xl[N]    = [T] of { byte };  /* runq's overflow list */
#ifdef WQ_RING
/* ursa__wq at the level of its ring (WQ_RING): slot p of VP i's queue is wbuf[i * W + p % W]; the
   positions whead (the consumer's) and wtail (the producer's) run free (bytes: they never wrap
   within the bounds).  wfull is a ghost: the slot holds a written value not yet read. */
byte wbuf[N * W];
byte whead[N];
byte wtail[N];
bit  wfull[N * W];
bit  wq_torn;         /* a pop read a slot that holds no written value, or a push overwrote one */
#define WQ_LEN(i)  (wtail[i] - whead[i])
#define WQ_SLOT(i, p) ((i) * W + (p) % W)
#else
chan wq[N]    = [W] of { byte };
#define WQ_LEN(i)  len(wq[i])
#endif
#define WQ_ROOM(i) (WQ_LEN(i) < W)
/* The second step of a push and of a pop (WQ_RING), after the step that holds the first: written
   after that step with no separator in between, and nothing at all without WQ_RING (an empty
   step would add states). */
#ifdef WQ_RING
#define PUBLISH_AFTER ; publish()
#define POPPED_AFTER  ; popped_store()
#else
#define PUBLISH_AFTER
#define POPPED_AFTER
#endif
chan inbox[N] = [T] of { byte };  /* unbounded in C; it never holds more than T */

byte  oncpu[T + 1];   /* [0] unused */
bit   pinned[T + 1];
byte  sleeping[N];
byte  wakeseq[N];     /* increments are bounded by B and T: a byte never wraps */
short sleepers;       /* may dip to -1 for a moment: a take between commit and count */

/* Ghosts: only for the assertions */
byte wkind[T + 1];
byte wvp[T + 1];
byte budget = B;
byte ticks = K;
byte live = T;        /* tokens not done */
bit  reported;        /* a deadlock was reported */
bit  rest[N];         /* the VP is at end_wait or end_halted */
bit  pq_miscount;     /* consistent(): the ghosts and a Protect Queue disagree */

#define PQ_LEN(i) ((nxt[i] != 0) + len(ring[i]) + len(xl[i]))

/* Everything is where the ghosts say, nothing is running, in hand, or on a CPU.  Called only
   where every VP must be idle. */
inline consistent() {
  byte q_i, q_t, q_n;
  for (q_i : 0 .. N - 1) {
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_PQ && wvp[q_t] == q_i -> q_n++ :: else fi }
    pq_miscount = (q_n != PQ_LEN(q_i));     /* a token lost from, or doubled in, the pq */
    assert(!pq_miscount);
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_WQ && wvp[q_t] == q_i -> q_n++ :: else fi }
    assert(q_n == WQ_LEN(q_i) && WQ_LEN(q_i) <= W);
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_INBOX && wvp[q_t] == q_i -> q_n++ :: else fi }
    assert(q_n == len(inbox[q_i]))
  }
  q_n = 0;
  for (q_t : 1 .. T) {
    assert(wkind[q_t] >= K_PQ && wkind[q_t] <= K_DONE);
    assert(wkind[q_t] != K_RUN && wkind[q_t] != K_HAND);
    assert(oncpu[q_t] == 0);
    if :: wkind[q_t] != K_DONE -> q_n++ :: else fi
  }
  assert(q_n == live);
  q_i = 0; q_t = 0; q_n = 0
}

/* cnt = how many tokens are runnable: queued anywhere, in hand, or running. */
inline count_runnable(cnt) {
  byte r_i;
  cnt = 0;
  for (r_i : 0 .. N - 1) { cnt = cnt + PQ_LEN(r_i) + WQ_LEN(r_i) + len(inbox[r_i]) }
  for (r_i : 1 .. T) {
    if :: wkind[r_i] == K_RUN || wkind[r_i] == K_HAND -> cnt++ :: else fi
  }
  r_i = 0
}

/* ---- the Protect Queue of VP me (owner only: always inside the caller's step) ---------------- */

/* pq_push: the ring while the overflow list is empty and the ring has room (into runq.next when
   the ring is empty: ursa__runq_push), else the overflow list. */
inline pq_push(tok) {
  if
  :: len(xl[me]) == 0 && len(ring[me]) < R ->
       if
       :: nxt[me] == 0 && len(ring[me]) == 0 -> nxt[me] = tok
       :: else -> ring[me]!tok
       fi
  :: else -> xl[me]!tok
  fi;
  wkind[tok] = K_PQ; wvp[tok] = me; tok = 0
}

/* pq_pop: runq.next, the ring, then the overflow list; the token is in hand. */
inline pq_pop(tok) {
  if
  :: nxt[me] != 0 -> tok = nxt[me]; nxt[me] = 0
  :: nxt[me] == 0 && len(ring[me]) > 0 -> ring[me]?tok
  :: nxt[me] == 0 && len(ring[me]) == 0 && len(xl[me]) > 0 -> xl[me]?tok
  :: else -> tok = 0
  fi;
  if
  :: tok != 0 -> assert(wkind[tok] == K_PQ && wvp[tok] == me); wkind[tok] = K_HAND
  :: else
  fi
}

/* The newest token of the ring, taken off it (the ring as a FIFO channel: rotate the others). */
inline ring_take_newest(tok) {
  rn = len(ring[me]);
  do
  :: rn > 1 -> ring[me]?tok; ring[me]!tok; rn--
  :: else -> break
  od;
  ring[me]?tok;
  rn = 0
}

/* pq_take_surplus (policy.c): the oldest of the overflow list when it is in use, else the
   newest of the ring, else runq.next; none (0) when that one is pinned.  In hand. */
inline pq_take_surplus(tok) {
  tok = 0;
  if
  :: len(xl[me]) > 0 ->
       xl[me]?<tok>;
       if :: pinned[tok] -> tok = 0 :: else -> xl[me]?tok fi
  :: len(xl[me]) == 0 && len(ring[me]) == 0 ->
       if :: nxt[me] != 0 && !pinned[nxt[me]] -> tok = nxt[me]; nxt[me] = 0 :: else fi
  :: len(xl[me]) == 0 && len(ring[me]) > 0 ->
       ring_take_newest(tok);
       if :: pinned[tok] -> ring[me]!tok; tok = 0 :: else fi     /* back where it was */
  fi;
  if :: tok != 0 -> assert(wkind[tok] == K_PQ && wvp[tok] == me); wkind[tok] = K_HAND :: else fi
}

/* ---- where a ready token goes ------------------------------------------------------------------ */

#ifdef WQ_RING
/* ursa__wq_push at the ring's level, in two steps: this one loads head (the room check is the
   caller's, in the same step) and writes the slot; publish() then stores tail + 1, which makes
   it visible to the consumer.  BUG_WQ_PUBLISH_FIRST swaps the two stores. */
inline push_wq(tok) {
  assert(WQ_ROOM(me));                     /* capacity; and wq[me]: me is the producer */
  pubpos = wtail[me];
#ifdef BUG_WQ_PUBLISH_FIRST
  wtail[me]++;                             /* BUG: tail published before the slot is written */
#else
  wq_torn = wfull[WQ_SLOT(me, pubpos)]; assert(!wq_torn);
  wbuf[WQ_SLOT(me, pubpos)] = tok; wfull[WQ_SLOT(me, pubpos)] = 1;
#endif
  wkind[tok] = K_HAND; wvp[tok] = me; pub = tok; tok = 0
}
inline publish() {
  if
  :: pub != 0 ->
       atomic {
#ifdef BUG_WQ_PUBLISH_FIRST
         wq_torn = wfull[WQ_SLOT(me, pubpos)]; assert(!wq_torn);
         wbuf[WQ_SLOT(me, pubpos)] = pub; wfull[WQ_SLOT(me, pubpos)] = 1;
#else
         wtail[me]++;                      /* release: the slot is the consumer's now */
#endif
         wkind[pub] = K_WQ; wvp[pub] = me; pub = 0; pubpos = 0
       }
  :: else
  fi
}
#else
inline push_wq(tok) {
  assert(len(wq[me]) < W);                 /* capacity; and wq[me]: me is the producer */
  wq[me]!tok; wkind[tok] = K_WQ; wvp[tok] = me; tok = 0
}
#endif
/* An unpinned token made ready on VP me (ready / ready_slow): into the Protect Queue below the
   threshold (into an empty one this is the inline hand-off, ursa__smp_handoff: runq.next);
   otherwise it stays in hand for place_waived.  Owner only: folded into the caller's step. */
inline place_local(tok) {
  if
  :: PQ_LEN(me) < C -> pq_push(tok)
  :: else -> wkind[tok] = K_HAND; wvp[tok] = me
  fi
}
/* ursa__pol_offer: to wq[me] (visible to FWD(me): its own step, and the caller wakes FWD(me));
   if the wq is full, it stays local, over the threshold. */
inline place_waived(tok) {
  atomic {
    if
    :: WQ_ROOM(me) -> push_wq(tok); pushed = 1
    :: else -> pq_push(tok)
    fi
  } PUBLISH_AFTER
}

/* The kick (ursa__vp_kick) of VP kv by VP me, after it made work visible to VP kv, when the
   local kf says it pushed; kf is cleared in the first step, the local kd in the last.  The load, the exchange, the decrement and
   the increment are separate steps, as in C (which skips the rest when the load sees AWAKE). */
inline kick(kv, kf, kd) {
  if
  :: atomic { kf && sleeping[kv] != AWAKE -> kf = 0 }
       atomic { old = sleeping[kv]; sleeping[kv] = AWAKE }          /* exchange */
       if
       :: UNCOUNT(old) -> sleepers--; assert(sleepers >= -N)
       :: else
       fi;
       if
       :: old != AWAKE -> atomic { wakeseq[kv]++; old = 0; kd = 0 }  /* then FUTEX_WAKE */
       :: else -> kd = 0
       fi
  :: atomic { kf && sleeping[kv] == AWAKE -> kf = 0; kd = 0 }
  :: !kf
  fi
}

/* Pops the next token of the snapshot of wq[BWD(me)] (me is its consumer): kept below the
   threshold, else left in hand (v) to be offered on. */
#ifdef WQ_RING
/* ursa__wq_pop at the ring's level: this step reads the slot at head (the snapshot's load of tail
   said it is published); popped() then stores head + 1, which frees the slot for the producer. */
inline wq_pop_one() {
  v = wbuf[WQ_SLOT(BWD(me), whead[BWD(me)])];
  wq_torn = !wfull[WQ_SLOT(BWD(me), whead[BWD(me)])]; assert(!wq_torn);
  wfull[WQ_SLOT(BWD(me), whead[BWD(me)])] = 0;
  assert(wkind[v] == K_WQ && wvp[v] == BWD(me));
  wkind[v] = K_HAND; wvp[v] = me;
  k--; popped = 1;
  place_local(v)
}
inline popped_store() {
  if :: popped -> atomic { whead[BWD(me)]++; popped = 0 } :: else fi
}
#else
inline wq_pop_one() {
  wq[BWD(me)]?v;
  assert(wkind[v] == K_WQ && wvp[v] == BWD(me));
  k--;
  place_local(v)
}
#endif

/* Pops the next token of the snapshot of inbox[me]: a pinned one is kept, an unpinned one goes
   where ready() puts it. */
inline inbox_pop_one() {
  inbox[me]?v;
  assert(wkind[v] == K_INBOX && wvp[v] == me);
  k--;
  if :: pinned[v] -> pq_push(v) :: else -> place_local(v) fi
}

/* The ring step's drain (policy.c rotate): a snapshot of wq[BWD(me)] (the consumer reads the
   producer's index once, folded into its first pop: draining "until empty" lets two full VPs
   pass the same tokens back and forth for ever, which pan's cycle search finds), each token kept
   below the threshold, else offered to wq[me] (the caller kicks FWD(me) if pushed). */
inline ring_drain() {
  atomic { k = WQ_LEN(BWD(me)); if :: k > 0 -> wq_pop_one() :: else fi } POPPED_AFTER;
  do
  :: atomic { v != 0 -> place_waived(v) }
  :: atomic { v == 0 && k > 0 -> wq_pop_one() } POPPED_AFTER
  :: v == 0 && k == 0 -> break
  od
}
/* The ring step's pass_on: over the threshold, one surplus token goes on (owner-local but the
   push; folded into the caller's step). */
inline pass_on() {
  if
  :: PQ_LEN(me) > C && WQ_ROOM(me) ->
       pq_take_surplus(v);
       if :: v != 0 -> push_wq(v); pushed = 1 :: else fi
  :: else
  fi
}

/* Deadlock detection.  In the very step where the idle VP me learns that sleepers is N, the
   ghost false_deadlock records whether anything is runnable at that instant. */
inline observe_all_idle() {
#ifdef NO_DETECTION
  skip
#else
  count_runnable(k);
  false_deadlock = (k > 0);
  k = 0
#endif
}
/* Then: with no token left the run ends; otherwise ursa reports a deadlock, which must be true. */
inline detect() {
#ifdef NO_DETECTION
  rest[me] = 1                              /* the VP just sleeps */
#else
  atomic {
    assert(!false_deadlock);
    consistent();
    if
    :: live > 0 -> reported = 1
    :: else
    fi;
    rest[me] = 1
  }
  goto end_halted
#endif
}

/* The recheck of the idle path (has_work), one load per shared queue; to `found` if any holds
   something.  The Protect Queue is empty here (we went idle because it was, and only we push
   it): checked because C does, folded into the inbox load. */
inline recheck() {
  if :: WQ_LEN(BWD(me)) > 0 -> goto found :: else fi;
  if :: len(inbox[me]) > 0 || PQ_LEN(me) > 0 -> goto found :: else fi
}

/* The switch resumes token nx on VP me. */
inline resume() {
  double_run = (oncpu[nx] != 0);             /* another VP still runs it or saves it */
  assert(!double_run);
  assert(wkind[nx] == K_HAND && wvp[nx] == me);
  oncpu[nx] = me + 1; wkind[nx] = K_RUN; pinned[nx] = 0;
  t = nx; nx = 0
}

proctype vp(byte me) {
  byte t, nx, prev, u, j, k, v, rn, old, s, op;
  short n;
  bit pushed, kin, false_deadlock, double_run, ho, stop;
#ifdef WQ_RING
  byte pub, pubpos;
  bit popped;
#endif

idle:                                        /* the idle context: no token here, pq empty */
  op = OP_IDLE;

slow:
  /* pick_slow: a snapshot of the inbox (the exchange of its head, folded into its first pop) */
  atomic { k = len(inbox[me]); if :: k > 0 -> inbox_pop_one() :: else fi }
  do
  :: atomic { v != 0 -> place_waived(v) }
  :: atomic { v == 0 && k > 0 -> inbox_pop_one() }
  :: v == 0 && k == 0 -> break
  od;
  /* the ring step: drain, pass_on; then the pop, and a yielding token's ready() after it (all
     owner-local but pass_on's push) */
  ring_drain();
  atomic {
    pass_on();
    pq_pop(nx);
    if
    :: op == OP_YIELD && nx != 0 -> prev = t; wkind[t] = K_HAND; wvp[t] = me; place_local(t)
    :: else
    fi;
    if :: !pushed && !(t != 0 && t == prev) -> goto switch :: else fi
  } PUBLISH_AFTER;                           /* pass_on's push (WQ_RING) */
  if
  :: atomic { t != 0 && t == prev -> place_waived(t) }  /* the yielding token, pq at C */
  :: else
  fi;
  kick(FWD(me), pushed, rn);

switch:
  /* switch_to(prev, nx): prev (blocked, finished or yielding) is on this CPU until the save
     clears its byte */
  atomic {
    if
    :: op == OP_YIELD && nx == 0 -> goto body             /* nothing else: it goes on running */
    :: op != OP_YIELD && nx == 0 ->
         /* to the idle context; its first pick is folded away: what it could find, the
            sleep's recheck finds too */
         oncpu[prev] = 0; prev = 0; ho = 0; goto sleep
#ifdef BUG_HANDOFF_NO_ONCPU
    :: nx != 0 && (oncpu[nx] == 0 || ho) ->                /* BUG: after pick_handoff, no check */
#else
    :: nx != 0 && oncpu[nx] == 0 ->
#endif
         oncpu[prev] = 0; prev = 0; ho = 0;
         resume();
         goto body
    :: else -> oncpu[prev] = 0; prev = 0; ho = 0               /* x->pending = nx */
    fi
  }
  /* run_from_idle: the idle context waits for the byte, then resumes nx */
  atomic { oncpu[nx] == 0 -> resume() }

body:
  /* a. the running token t may wake one blocked token u, taken off its wait queue (ours now),
     pinned to VP j (to its inbox, then a kick) or free (j == me: ursa__wake_m, the inline
     hand-off into our empty Protect Queue, else ready_slow: kept, or offered on).  u is
     invisible to other VPs until it is queued, so the whole wake is one step. */
  atomic {
    u = 0;
    for (j : 1 .. T) {
      if
      :: u == 0 && wkind[j] == K_BLOCKED -> u = j
      :: true
      fi
    }
    j = 0;
    if
    :: u != 0 ->
         wkind[u] = K_HAND; wvp[u] = me;
         do :: j < N - 1 -> j++ :: break od;
         if
         :: j == me ->
              j = 0;
#ifdef BUG_HANDOFF_NONEMPTY
              if
              :: nxt[me] != 0 && len(ring[me]) == 0 && len(xl[me]) == 0 ->
                   nxt[me] = u; wkind[u] = K_PQ; wvp[u] = me; u = 0  /* BUG: over runq.next */
              :: else -> place_local(u)
              fi;
#else
              place_local(u);
#endif
              if
              :: u != 0 && WQ_ROOM(me) -> push_wq(u); pushed = 1
              :: u != 0 && !WQ_ROOM(me) -> pq_push(u)
              :: else
              fi
         :: else -> inbox[j]!u; pinned[u] = 1; wkind[u] = K_INBOX; wvp[u] = j; u = 0; kin = 1
         fi
    :: else
    fi;
    if :: !kin && !pushed -> goto tick :: else fi
  } PUBLISH_AFTER;
  kick(j, kin, j);
  kick(FWD(me), pushed, rn);

tick:

  /* b. the interval timer (ursa__pol_timer) at a safe point of t, K ticks in all: the ring step;
     then, when FWD(me) has nothing at all (a hint: fwd_threads, whose sum includes our wq: any
     time our wq is empty), every token this VP keeps goes on too (pq_take_surplus until none,
     or the wq is full and it goes back with pq_push) */
  do
  :: atomic { ticks > 0 -> ticks-- }
     ring_drain();
     atomic { pass_on() } PUBLISH_AFTER;
     if
     :: WQ_LEN(me) == 0 ->
          stop = 0;
          do
          :: stop -> stop = 0; break
          :: else ->
               atomic {
                 pq_take_surplus(v);
                 if
                 :: v != 0 && WQ_ROOM(me) -> push_wq(v); pushed = 1
                 :: v != 0 && !WQ_ROOM(me) -> pq_push(v); stop = 1
                 :: v == 0 -> stop = 1
                 fi
               } PUBLISH_AFTER
          od
     :: true
     fi;
     kick(FWD(me), pushed, rn)
  :: break
  od;

  /* c. t yields, blocks or finishes; yields and blocks while the budget lasts.  A blocked token
     is visible to wakers at once (its lock is released before the switch saves it).  Then
     pick_handoff: the token woken here waits alone in runq.next, unpinned, and the inbox and
     the Waiver Queue behind are empty (their loads folded into this step: a push just after
     them is seen at the next switch or by the idle recheck, as in C); else pick_slow. */
  atomic {
    if
    :: budget > 0 -> budget--; op = OP_YIELD
    :: budget > 0 -> budget--; op = OP_SWITCH; wkind[t] = K_BLOCKED; prev = t; t = 0
    :: op = OP_SWITCH; wkind[t] = K_DONE; live--; prev = t; t = 0
    fi;
    ho = (nxt[me] != 0 && !pinned[nxt[me]] && len(ring[me]) == 0 && len(xl[me]) == 0 &&
          len(inbox[me]) == 0 && WQ_LEN(BWD(me)) == 0);
    if
    :: ho ->
         pq_pop(nx);
         if                                  /* a yield: ready(t) after the pick */
         :: op == OP_YIELD -> prev = t; wkind[t] = K_HAND; wvp[t] = me; place_local(t)
         :: else
         fi;
         goto switch
    :: else -> goto slow
    fi
  }

sleep:                                       /* d. idle; s = wakeseq */
  s = wakeseq[me];

#ifdef BUG_COUNT_FIRST
  sleepers++;
  sleeping[me] = INDEF;
  recheck();                                 /* after the fence */
  atomic { if :: sleepers == N -> observe_all_idle(); n = N :: else -> n = 0 fi }
  if :: n == N -> n = 0; detect() :: else -> atomic { n = 0; rest[me] = 1 } fi;
end_wait:
  atomic { wakeseq[me] != s -> rest[me] = 0 }          /* while (wakeseq == s) futex_wait */
found:
  atomic { old = sleeping[me]; sleeping[me] = AWAKE }              /* exchange */
  if :: old == INDEF -> sleepers-- :: else fi;
  old = 0; s = 0;
  goto idle
#else
#ifdef BUG_NO_FENCE
  recheck();                                 /* BUG: the loads pass the store */
  sleeping[me] = INDEF;
#else
  sleeping[me] = INDEF;                      /* publish: from now on wakers take us */
  recheck();                                 /* after the fence */
#endif
  /* commit: compare_exchange(&sleeping, INDEF, COUNTED) fails if a waker took us */
#ifdef BUG_NO_CAS
  sleeping[me] = COUNTED;                    /* BUG: a plain store, blind to a take */
#else
  atomic {
    if
    :: sleeping[me] == INDEF -> sleeping[me] = COUNTED
    :: else -> goto taken
    fi
  }
#endif
  atomic {                                   /* fetch_add(&sleepers, 1) + 1 */
    sleepers++; n = sleepers;
    if :: n == N -> observe_all_idle() :: else fi
  }
  if :: n == N -> n = 0; detect() :: else -> atomic { n = 0; rest[me] = 1 } fi;
end_wait:
  atomic { wakeseq[me] != s -> rest[me] = 0 }          /* while (wakeseq == s) futex_wait */
#ifdef BUG_NO_WAIT
  /* The increment that ended the wait may be owed to an earlier round's take, and we may
     still be COUNTED: uncount ourselves (too late: a VP may have counted on us meanwhile). */
  atomic { old = sleeping[me]; sleeping[me] = AWAKE }              /* exchange */
  if :: old == COUNTED -> sleepers-- :: else fi;
  old = 0;
#else
  /* Only a take increments wakeseq, and every earlier take's increment landed before we read
     s (the waits at `taken`): so we were taken in this round, and the taker uncounted us
     before its increment. */
  assert(sleeping[me] == AWAKE);
#endif
  s = 0;
  goto idle

found:
  /* work appeared after we published: withdraw */
  atomic { old = sleeping[me]; sleeping[me] = AWAKE }              /* exchange */
  if
  :: old == AWAKE -> goto taken             /* a waker took us first */
  :: else -> old = 0; s = 0; goto idle      /* INDEF: nobody took us, nothing counted */
  fi;

taken:
  /* A waker took us and will increment wakeseq (after sleepers-- if it took COUNTED).  Wait
     for that increment, so that it cannot end a later round's wait.  Not an end state. */
#ifndef BUG_NO_WAIT
  wakeseq[me] != s;
#endif
  old = 0; s = 0;
  goto idle
#endif

end_halted:
  skip
}

/*
 * Properties 3 and 4: no VP stuck, no lost wake-up.  Every execution of the model is finite
 * (property 6, checked in the same run): tokens yield or block at most B times in all and the
 * timer ticks at most K times, every push and every wake-up follows a run or a tick, and an idle
 * VP leaves its wait only when its queues hold something or a take incremented its futex word.
 * A VP asleep for ever on a queued token is therefore, on some execution - e.g. the one where
 * every other token simply finishes - a VP blocked in end_wait in a final state, one where
 * nothing can move: exactly where `timeout` holds.  The monitor asserts there that every VP is
 * at rest (asleep in end_wait or halted: not waiting at `taken` or for an on-CPU byte for
 * ever), that no token is left in any queue (a token stranded in the Protect Queue, inbox or
 * wq behind a VP blocked in futex_wait IS a lost wake-up), and that the run ended properly:
 * every token finished, or a deadlock was reported.
 */
proctype monitor() {
  byte cnt, m_i;
  bit stuck, lost_wakeup, deadlock_missed;
end_monitor:
  timeout ->
    atomic {
      for (m_i : 0 .. N - 1) { stuck = stuck || !rest[m_i] }
      assert(!stuck);
      consistent();
      count_runnable(cnt);
      lost_wakeup = (cnt > 0);          /* every VP is asleep: a queued token is stranded */
      assert(!lost_wakeup);
#ifndef NO_DETECTION
      deadlock_missed = (live > 0 && !reported);
      assert(!deadlock_missed)
#endif
    }
}

init {
  byte i;
  atomic {
    /* token t starts in the inbox of VP (t - 1) % N: created for that VP, unpinned */
    for (i : 1 .. T) {
      inbox[(i - 1) % N]!i; wkind[i] = K_INBOX; wvp[i] = (i - 1) % N
    }
    for (i : 0 .. N - 1) { run vp(i) }
    run monitor();
    i = 0
  }
}
