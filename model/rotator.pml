/*
 * model/rotator.pml - a Promela model of ursa's Lesser Bear "rotator": the ring of Waiver Queues
 * that passes surplus threads from one virtual processor (VP) to the next, and the protocol by
 * which an idle VP goes to sleep on a futex, is woken when work reaches it, and reports a
 * deadlock when every VP is idle.  Checked by scripts/check-model.sh; model/README.md says what
 * is modelled, what is abstracted away, and what the checks cost.
 *
 * Names in the model and in the C code:
 *   pq[i]        the VP's local run queue (owner only).  C is the waiving threshold: a thread
 *                that becomes runnable on VP i while pq[i] holds C goes to wq[i] instead.
 *   wq[i]        ursa__wq (src/sched/waiverq.h), the bounded SPSC Waiver Queue: VP i is its only
 *                producer, VP FWD(i) its only consumer, so the queues form a ring.  Capacity W.
 *   inbox[i]     vp->inbox, the MPSC queue of threads woken for VP i by other VPs (a thread
 *                pinned to VP i).  Any VP pushes, VP i pops.
 *   sleeping[i]  vp->sleeping: AWAKE 0, INDEF 2 = asleep indefinitely, published; COUNTED 3 =
 *                INDEF and counted in sleepers (timed sleep, 1, is not modelled, see README).
 *   wakeseq[i]   vp->wakeseq, the futex word.  `while (wakeseq == s) futex_wait(&wakeseq, s)` is
 *                the guard (wakeseq[i] != s); a waker increments the word before FUTEX_WAKE, so
 *                the guard is exact and spurious returns are invisible.
 *   sleepers     ursa__g.sleepers: VPs asleep and counted.  The VP whose increment makes it N
 *                reports a deadlock (or, with no thread left, ends the run).
 *   tokens       user-level threads 1..T.  A token is running on a VP, sits in one queue, is
 *                "in hand" (taken by a VP and not yet pushed), is blocked (on a mutex, a
 *                join...; nobody's until a running token wakes it), or is done.
 *
 * Atomicity.  Every access to a variable or queue that another VP can observe is its own Promela
 * step; what only the owner observes (its pq, its locals, the ghosts) is folded into the
 * neighbouring step.  ursa puts a seq_cst fence between the two halves of each Dekker pair (the
 * sleeper's "store sleeping; fence; load the queues", the waker's "push; fence; load
 * sleeping"), and all the other atomics are seq_cst read-modify-writes, so executions are
 * sequentially consistent: interleaving the individual loads and stores is the exact model.
 *
 * The idle protocol (VP i, nothing to run) - what ursa implements:
 *     s = wakeseq;
 *     sleeping = INDEF;                                    publish: wakers now take us
 *     fence; if (queues not empty) { withdraw; }           the Dekker recheck
 *     if (!CAS(&sleeping, INDEF, COUNTED)) { taken; }      commit
 *     if (fetch_add(&sleepers, 1) + 1 == N) detect;        count
 *     while (wakeseq == s) futex_wait(&wakeseq, s);        only a take ends the wait
 *   withdraw: if (exchange(&sleeping, AWAKE) == AWAKE) taken; else goto loop;
 *   taken:    while (wakeseq == s) futex_wait(&wakeseq, s); goto loop;
 * and wake(j), after making work visible to VP j:
 *     fence; if (sleeping[j] != AWAKE) { old = exchange(&sleeping[j], AWAKE);
 *       if (old == COUNTED) sleepers--;  if (old != AWAKE) { wakeseq[j]++; futex_wake; } }
 * Why each piece: counting only after the recheck (commit) means a counted VP has seen its
 * queues empty while published; the CAS keeps a VP taken before its commit from counting; the
 * waits at `taken` make every increment of wakeseq land in the round of its take, so a wait
 * ends only when the taker has already uncounted the VP.  Without any one of them spin finds
 * a false deadlock report (the variants below).
 *
 * Variants (cpp macros, spin -DNAME):
 *   (none)           the protocol above.  Must verify.
 *   BUG_COUNT_FIRST  the first design: `sleepers++; sleeping = INDEF; fence; recheck; if
 *                    (sleepers == N) deadlock`, the waker uncounting on INDEF.  A VP counts
 *                    before its recheck, so another may see sleepers == N while work is queued
 *                    for it: a false deadlock report (false_deadlock).
 *   BUG_NO_CAS       commit by a plain store of COUNTED: a take just before it is overwritten,
 *                    the VP wakes still COUNTED (the assertion after end_wait), and is counted
 *                    while it runs (false_deadlock without that assertion).
 *   BUG_NO_WAIT      no wait at `taken`: an increment owed to an earlier round's take ends a
 *                    later round's wait while the VP is still counted, and it uncounts itself
 *                    too late (false_deadlock).
 *   BUG_NO_FENCE     the recheck before the publishing store (what a missing fence lets the CPU
 *                    do): a push between the two is never followed by a wake-up, the lost
 *                    wake-up (lost_wakeup with NO_DETECTION; with detection, the deadlock
 *                    report with that token queued comes first: false_deadlock).
 *   NO_DETECTION     no deadlock detection: the VP whose count makes N just sleeps.
 *   N T C W B        VPs, tokens, pq threshold, wq capacity, and B: how many times in all
 *                    tokens may yield or block (after that every run finishes its token), which
 *                    makes every execution finite.
 *
 * Properties (all safety, pan -DSAFETY):
 *   1. tokens are neither lost nor duplicated: each pop asserts that the popped token's ghost
 *      location is that queue, each push records it, and consistent() recounts every queue
 *      against the ghosts at each check below.  SPSC: a wq push asserts room and records the
 *      pusher (wvp), which is always the queue's owner (it pushes only wq[me]); a wq pop
 *      asserts that the token was pushed by the VP behind, and only that VP's successor pops
 *      (the one receive is wq[BWD(me)]?).
 *   2. no invalid end state: a VP may stop only in futex_wait (end_wait) or after a deadlock
 *      report or the end of the run (end_halted); pan reports a VP blocked anywhere else (e.g.
 *      at `taken` forever).
 *   3. no lost wake-up: proctype monitor.
 *   4. no false deadlock report: inlines observe_all_idle and detect.
 */

#ifndef N
#define N 2            /* VPs */
#endif
#ifndef T
#define T 3            /* tokens (threads) */
#endif
#ifndef C
#define C 1            /* pq waiving threshold */
#endif
#ifndef W
#define W 1            /* wq capacity */
#endif
#ifndef B
#define B 3            /* yields + blocks, all tokens together */
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

chan pq[N]    = [T] of { byte };  /* T, not C: C is where waiving starts, not a limit */
chan wq[N]    = [W] of { byte };
chan inbox[N] = [T] of { byte };  /* unbounded in C; it never holds more than T */

byte  sleeping[N];
byte  wakeseq[N];     /* increments are bounded by B and T: a byte never wraps */
short sleepers;       /* may dip to -1 for a moment: a take between commit and count */

/* Ghosts: only for the assertions */
byte wkind[T + 1];
byte wvp[T + 1];
byte budget = B;
byte live = T;        /* tokens not done */
bit  reported;        /* a deadlock was reported */

/* Everything is where the ghosts say, and nothing is running or in hand.  Called only where
   every VP must be idle. */
inline consistent() {
  byte q_i, q_t, q_n;
  for (q_i : 0 .. N - 1) {
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_PQ && wvp[q_t] == q_i -> q_n++ :: else fi }
    assert(q_n == len(pq[q_i]));
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_WQ && wvp[q_t] == q_i -> q_n++ :: else fi }
    assert(q_n == len(wq[q_i]) && len(wq[q_i]) <= W);
    q_n = 0;
    for (q_t : 1 .. T) { if :: wkind[q_t] == K_INBOX && wvp[q_t] == q_i -> q_n++ :: else fi }
    assert(q_n == len(inbox[q_i]))
  }
  q_n = 0;
  for (q_t : 1 .. T) {
    assert(wkind[q_t] >= K_PQ && wkind[q_t] <= K_DONE);
    assert(wkind[q_t] != K_RUN && wkind[q_t] != K_HAND);
    if :: wkind[q_t] != K_DONE -> q_n++ :: else fi
  }
  assert(q_n == live);
  q_i = 0; q_t = 0; q_n = 0
}

/* cnt = how many tokens are runnable: queued anywhere, in hand, or running. */
inline count_runnable(cnt) {
  byte r_i;
  cnt = 0;
  for (r_i : 0 .. N - 1) { cnt = cnt + len(pq[r_i]) + len(wq[r_i]) + len(inbox[r_i]) }
  for (r_i : 1 .. T) {
    if :: wkind[r_i] == K_RUN || wkind[r_i] == K_HAND -> cnt++ :: else fi
  }
  r_i = 0
}

/* Pushes by VP me; each records the ghost in the same step. */
inline push_pq(tok) {
  pq[me]!tok; wkind[tok] = K_PQ; wvp[tok] = me; tok = 0
}
inline push_wq(tok) {
  assert(len(wq[me]) < W);                 /* capacity; and wq[me]: me is the producer */
  wq[me]!tok; wkind[tok] = K_WQ; wvp[tok] = me; tok = 0
}
/* A token that becomes runnable on VP me goes to pq below the threshold (local, folded into
   the caller's step), else it stays in hand for place_waived. */
inline place_local(tok) {
  if
  :: len(pq[me]) < C -> push_pq(tok)
  :: else -> wkind[tok] = K_HAND; wvp[tok] = me
  fi
}
/* Waive it to wq[me] (visible to FWD(me): its own step, and the caller wakes FWD(me)); if the
   wq is full too, it stays local, over the threshold (pq is an intrusive list in C). */
inline place_waived(tok) {
  atomic {
    if
    :: len(wq[me]) < W -> push_wq(tok); pushed = 1
    :: else -> push_pq(tok)
    fi
  }
}

/* wake(j), by VP me after it made work visible to VP j (the fence precedes the load).  The load
   and the exchange are separate steps: C skips the exchange when the load sees AWAKE. */
inline wake(j) {
  if
  :: sleeping[j] != AWAKE ->
       atomic { old = sleeping[j]; sleeping[j] = AWAKE }          /* exchange */
       if
       :: UNCOUNT(old) -> sleepers--; assert(sleepers >= -N)
       :: else
       fi;
       if
       :: old != AWAKE -> atomic { wakeseq[j]++; old = 0 }        /* then FUTEX_WAKE */
       :: else
       fi
  :: else
  fi
}

/* Deadlock detection.  In the very step where the idle VP me learns that sleepers is N, the
   ghost false_deadlock records whether anything is runnable at that instant: queued anywhere,
   in hand, or running (property 4 is about that instant, not a later one). */
inline observe_all_idle() {
#ifdef NO_DETECTION
  skip
#else
  count_runnable(k);
  false_deadlock = (k > 0);
  k = 0
#endif
}
/* Then: with no token left the run ends; otherwise ursa reports a deadlock, which must be true:
   nothing was runnable, every token left is blocked. */
inline detect() {
#ifdef NO_DETECTION
  skip                                      /* the VP just sleeps */
#else
  atomic {
    assert(!false_deadlock);
    consistent();
    if
    :: live > 0 -> reported = 1
    :: else
    fi
  }
  goto end_halted
#endif
}

/* The recheck of the idle path, one load per queue; to `found` if any holds something.  pq[me]
   is empty here (we went idle because it was, and only we push it): checked because C does,
   folded into the inbox load. */
inline recheck() {
  if :: len(wq[BWD(me)]) > 0 -> goto found :: else fi;
  if :: len(inbox[me]) > 0 || len(pq[me]) > 0 -> goto found :: else fi
}

/* Token t, running on VP me, yields (back to pq, or waived if pq is at C: left in hand),
   blocks, or finishes; yields and blocks while the budget lasts. */
inline yield_block_or_finish() {
  if
  :: budget > 0 -> budget--; place_local(t)                      /* yields */
  :: budget > 0 -> budget--; wkind[t] = K_BLOCKED; t = 0         /* blocks */
  :: wkind[t] = K_DONE; live--; t = 0                            /* finishes */
  fi
}

proctype vp(byte me) {
  byte t, u, j, k, old, s;
  short n;
  bit pushed, false_deadlock;

loop:
  /* a. drain what the wq of the VP behind holds now (the consumer reads the producer's index
     once) into pq, the surplus into our own wq; then, likewise, what the inbox holds now.
     Draining "until empty" instead would let two VPs with full pqs pass the same tokens back
     and forth for ever without running anything (pan's cycle search finds that). */
  k = len(wq[BWD(me)]);
  do
  :: k > 0 ->
       atomic {
         wq[BWD(me)]?t;                      /* wq[BWD(me)]: me is the consumer */
         assert(wkind[t] == K_WQ && wvp[t] == BWD(me));
         k--;
         place_local(t)
       }
       if :: t != 0 -> place_waived(t) :: else fi
  :: else -> break
  od;
  k = len(inbox[me]);                        /* exchange(&inbox.head, NULL) */
  do
  :: k > 0 ->
       atomic {
         inbox[me]?t;
         assert(wkind[t] == K_INBOX && wvp[t] == me);
         k--;
         place_local(t)
       }
       if :: t != 0 -> place_waived(t) :: else fi
  :: else -> break
  od;

  /* b. what we waived during a is for the VP ahead */
  if :: pushed -> pushed = 0; wake(FWD(me)) :: else fi;

  /* c. run the first token */
  if
  :: atomic {
       len(pq[me]) > 0 ->
         pq[me]?t;
         assert(wkind[t] == K_PQ && wvp[t] == me);
         wkind[t] = K_RUN;
         /* It may first wake one blocked token u: u is taken off its wait queue (ours now),
            and is pinned to VP j or free (j == me, it runs here). */
         u = 0;
         for (j : 1 .. T) {
           if
           :: u == 0 && wkind[j] == K_BLOCKED -> u = j
           :: true
           fi
         }
         j = 0;
         if
         :: u == 0 ->
              yield_block_or_finish()        /* nothing between is visible: one step */
         :: else ->
              wkind[u] = K_HAND; wvp[u] = me;
              do :: j < N - 1 -> j++ :: break od;
              if :: j == me -> place_local(u) :: else fi
         fi
     }
     if
     :: u != 0 && j == me -> place_waived(u)          /* runnable here, pq at C */
     :: u != 0 && j != me ->
          atomic { inbox[j]!u; wkind[u] = K_INBOX; wvp[u] = j; u = 0 }
          wake(j)
     :: else
     fi;
     u = 0; j = 0;
     if :: pushed -> pushed = 0; wake(FWD(me)) :: else fi;
     if
     :: t != 0 && wkind[t] == K_RUN -> atomic { yield_block_or_finish() }
     :: else
     fi;
     if
     :: t != 0 -> place_waived(t); if :: pushed -> pushed = 0; wake(FWD(me)) :: else fi
     :: else
     fi;
     goto loop
  :: atomic { len(pq[me]) == 0 -> s = wakeseq[me] }  /* d. idle; s = wakeseq */
  fi;

#ifdef BUG_COUNT_FIRST
  sleepers++;
  sleeping[me] = INDEF;
  recheck();                                 /* after the fence */
  atomic { if :: sleepers == N -> observe_all_idle(); n = N :: else -> n = 0 fi }
  if :: n == N -> n = 0; detect() :: else fi;
end_wait:
  wakeseq[me] != s;                          /* while (wakeseq == s) futex_wait */
found:
  atomic { old = sleeping[me]; sleeping[me] = AWAKE }              /* exchange */
  if :: old == INDEF -> sleepers-- :: else fi;
  old = 0; s = 0;
  goto loop
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
  if :: n == N -> n = 0; detect() :: else -> n = 0 fi;
end_wait:
  wakeseq[me] != s;                          /* while (wakeseq == s) futex_wait */
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
  goto loop

found:
  /* work appeared after we published: withdraw */
  atomic { old = sleeping[me]; sleeping[me] = AWAKE }              /* exchange */
  if
  :: old == AWAKE -> goto taken             /* a waker took us first */
  :: else -> old = 0; s = 0; goto loop      /* INDEF: nobody took us, nothing counted */
  fi;

taken:
  /* A waker took us and will increment wakeseq (after sleepers-- if it took COUNTED).  Wait
     for that increment, so that it cannot end a later round's wait (a futex_wait loop; the
     waker is a few instructions from it).  Not an end state: it must come. */
#ifndef BUG_NO_WAIT
  wakeseq[me] != s;
#endif
  old = 0; s = 0;
  goto loop
#endif

end_halted:
  skip
}

/*
 * Property 3, no lost wake-up.  Every execution of the model is finite: tokens yield or block
 * at most B times in all, so there are at most B + T runs; every push and every wake-up follows
 * a run; and an idle VP leaves its wait only when its queues hold something or a take
 * incremented its futex word.  (scripts/check-model.sh checks that the state graph has no cycle
 * at all: pan's non-progress-cycle search, with no progress label, finds none.)  A VP asleep
 * for ever on a queued token is therefore, on some execution - e.g. the one where every other
 * token simply finishes - a VP blocked in end_wait in a final state, one where nothing can move:
 * exactly where `timeout` holds.  The monitor asserts that no final state has a token left in
 * any queue (a token stranded in the pq, inbox or wq behind a VP blocked in futex_wait IS a lost
 * wake-up), and that the run ended properly: every token finished, or a deadlock was reported
 * (so a deadlock is never missed either).
 * A final-state assertion rather than an LTL formula: it needs no fairness assumption and no
 * acceptance-cycle search, runs in pan's cheaper safety mode, and, executions being finite,
 * catches every lost wake-up an LTL "asleep with work -> eventually awake" would.
 */
proctype monitor() {
  byte cnt;
  bit lost_wakeup, deadlock_missed;
end_monitor:
  timeout ->
    atomic {
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
    /* token t starts in the inbox of VP (t - 1) % N: created, or woken, for that VP */
    for (i : 1 .. T) {
      inbox[(i - 1) % N]!i; wkind[i] = K_INBOX; wvp[i] = (i - 1) % N
    }
    for (i : 0 .. N - 1) { run vp(i) }
    run monitor();
    i = 0
  }
}
