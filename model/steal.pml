/*
 * model/steal.pml - a Promela model of stealing from a stalled VP (src/sched/vp.c, "Stealing";
 * src/sched/sched.h, ursa__pq_enter/ursa__pq_exit and the inline hand-off): the owner's Protect
 * Queue (its `next` slot and ring) against an idle VP's turn.  Checked by scripts/check-model.sh;
 * see model/README.md ("Stealing").
 *
 * The protocol.  The owner brackets every access to its run queue with ursa__pq_enter (a plain
 * store that counts it inside pq_word, then a load of pq_steal; if a thief has the turn it steps
 * out, waits for pq_steal == 0 and enters again) and ursa__pq_exit (a plain store).  The one
 * access outside a bracket is the wake-up's hand-off: it loads `next` and `head` (atomically, one
 * at a time) and, when the queue is empty, stores the woken thread into `next`.  A thief takes the
 * turn with a CAS of pq_steal 0 -> 1, runs membarrier (every CPU running a thread of the process
 * executes a full barrier: the owner's store of pq_word is visible, or the owner's later load of
 * pq_steal sees the turn), and only if the owner is outside (pq_word's count 0) takes up to half of
 * the ready threads: `next` (load, then store NULL) and then the ring from its head; it releases
 * pq_steal.  The turn only removes threads, which is why the hand-off needs no bracket.
 *
 * Memory model: sequentially consistent interleaving of the steps below (each an access that the
 * other VP can observe).  On x86-64 the owner's store of pq_word and its load of pq_steal can be
 * reordered (store buffer); membarrier forbids that reordering for the pair that matters, so SC
 * is the exact abstraction with it, and BUG_NO_MEMBARRIER models its absence by swapping the two
 * accesses of the enter (as rotator.pml's BUG_NO_FENCE does).
 *
 * Tokens 1..T are user-level threads, each in one place (loc[t]): BLOCKED (in the pool the owner's
 * running thread wakes from), NEXT or RING (the owner's run queue), OWNER (running on the owner),
 * THIEF (taken by the thief; it runs there and blocks again, back to the pool).  The owner starts
 * running token 1 and makes B moves: wake a blocked token (hand-off when its queue is empty, else
 * a bracketed push), or block its running token and pick (bracketed).  The thief takes up to S
 * turns.
 *
 * Assertions (each names the damage):
 *   double_take   a thread is taken from the run queue by both VPs (it would run on two VPs);
 *   lost          at the end, a thread is in no place or the queue disagrees with loc[];
 *   torn          the owner finds a slot of its ring that does not hold the thread loc[] says.
 * Variants (spin -DNAME):
 *   (none)              as src/sched implements it.  Verifies.
 *   BUG_NO_MEMBARRIER   the owner's enter loads pq_steal before its store is visible: caught.
 *   BUG_NO_CHECK        the thief takes its turn without looking at pq_word: caught.
 *   BUG_EXIT_EARLY      the owner's pick leaves its bracket before it clears `next`: caught.
 *   REACH_STEAL         asserts that no turn ever takes a thread: caught (the checks above are
 *                       not vacuous: turns do take threads).
 */

#ifndef T
#define T 3                  /* threads */
#endif
#ifndef R
#define R 2                  /* ring capacity */
#endif
#ifndef B
#define B 4                  /* the owner's moves */
#endif
#ifndef S
#define S 2                  /* the thief's turns */
#endif

#define NONE    0
#define BLOCKED 1
#define NEXT    2
#define RING    3
#define OWNER   4
#define THIEF   5

byte loc[T + 1];
byte next = 0;               /* runq.next: a token, 0 for NULL */
byte buf[R];
byte head = 0, tail = 0;     /* the ring: head .. tail-1 */
byte inside = 0;             /* pq_word's count: the owner is inside a bracket */
bit  steal = 0;              /* pq_steal: a thief has the turn */
byte running = 1;            /* the owner's running token, 0: idle */
bit  owner_done = 0, thief_done = 0;
bool double_take = false, lost = false, torn = false, stolen = false;

/* The owner takes t out of its queue (place `from`): it must still be there. */
inline owner_takes(t, from) {
  double_take = (loc[t] != from);
  assert(!double_take);
  loc[t] = OWNER
}

/* ursa__pq_enter: store, then load; the slow path steps out while the thief has its turn. */
inline pq_enter() {
#ifdef BUG_NO_MEMBARRIER
  /* the load of pq_steal overtakes the store of pq_word (what membarrier forbids) */
  do
  :: steal == 0 -> inside = 1; break
  :: steal == 1 -> (steal == 0)
  od
#else
  inside = 1;
  do
  :: steal == 0 -> break
  :: steal == 1 -> inside = 0; (steal == 0); inside = 1
  od
#endif
}

inline pq_exit() { inside = 0 }

proctype owner() {
  byte moves = 0, u, k, got;
  do
  :: moves < B && running != 0 ->
     moves++;
     /* the running thread wakes a blocked one, if any */
     u = 0;
     k = 1;
     do
     :: k <= T && loc[k] == BLOCKED -> u = k; break
     :: k <= T && loc[k] != BLOCKED -> k++
     :: k > T -> break
     od;
     if
     :: u != 0 ->
        /* the hand-off: no bracket; next, then head, loaded one at a time */
        if
        :: next == 0 ->
           if
           :: head == tail -> atomic { next = u; loc[u] = NEXT }; u = 0   /* release store of next (loc: ghost) */
           :: else -> skip
           fi
        :: else -> skip
        fi;
        if
        :: u != 0 ->                                   /* ready_slow: pq_push, bracketed */
           pq_enter();
           if
           :: next == 0 && head == tail -> atomic { next = u; loc[u] = NEXT }
           :: else ->
              if
              :: tail - head < R -> atomic { buf[tail % R] = u; loc[u] = RING }; tail++
              :: else -> skip                          /* full: (the overflow list) it stays blocked */
              fi
           fi;
           pq_exit()
        :: else -> skip
        fi
     :: else -> skip
     fi;
     /* or the running thread blocks, and the owner picks */
     if
     :: true
     :: true ->
        loc[running] = BLOCKED; running = 0;
        pq_enter();
        got = 0;
        if
        :: next != 0 -> got = next;
#ifdef BUG_EXIT_EARLY
           pq_exit();
#endif
           owner_takes(got, NEXT); next = 0
        :: next == 0 && head != tail ->
           got = buf[head % R];
           torn = (loc[got] != RING);
           assert(!torn);
           owner_takes(got, RING); head++
        :: else -> skip
        fi;
#ifdef BUG_EXIT_EARLY
        if
        :: inside == 1 -> pq_exit()
        :: else -> skip
        fi;
#else
        pq_exit();
#endif
        running = got
     fi
  :: moves < B && running == 0 ->                      /* idle: picks again */
     moves++;
     pq_enter();
     got = 0;
     if
     :: next != 0 -> got = next; owner_takes(got, NEXT); next = 0
     :: next == 0 && head != tail -> got = buf[head % R]; owner_takes(got, RING); head++
     :: else -> skip
     fi;
     pq_exit();
     running = got
  :: moves == B -> break
  od;
  owner_done = 1
}

proctype thief() {
  byte turns = 0, n, take, k, t;
  do
  :: turns < S ->
     turns++;
     if
     :: atomic { steal == 0 -> steal = 1 }             /* the CAS of pq_steal */
        /* membarrier: no step (it orders the owner's accesses; see BUG_NO_MEMBARRIER) */
#ifdef BUG_NO_CHECK
        if :: true -> skip fi;
#else
        if :: inside == 0 -> skip :: inside != 0 -> goto release fi;
#endif
        n = (next != 0) + (tail - head);
        take = (n + 1) / 2;
        k = 0;
        if
        :: k < take ->
           t = next;                                   /* load, then store NULL */
           if
           :: t != 0 -> next = 0;
              double_take = (loc[t] != NEXT);
              assert(!double_take);
              loc[t] = THIEF; k++
           :: else -> skip
           fi
        :: else -> skip
        fi;
        do
        :: k < take && head != tail ->
           t = buf[head % R];
           double_take = (loc[t] != RING);
           assert(!double_take);
           loc[t] = THIEF; head++; k++
        :: else -> break
        od;
release:
        stolen = stolen || k > 0;
#ifdef REACH_STEAL
        assert(!stolen);                               /* the check is not vacuous: a turn takes threads */
#endif
        steal = 0;                                     /* release: pairs with pq_enter's acquire */
        /* the stolen threads run on the thief and block again */
        k = 1;
        do
        :: k <= T -> if :: loc[k] == THIEF -> loc[k] = BLOCKED :: else -> skip fi; k++
        :: k > T -> break
        od
     :: else -> skip                                   /* another thief has the turn */
     fi
  :: turns == S -> break
  od;
  thief_done = 1
}

/* At the end: every thread is in exactly the place the queue says. */
proctype monitor() {
  byte k, nring;
  (owner_done && thief_done);
  nring = 0;
  k = 1;
  do
  :: k <= T ->
     lost = !(loc[k] == BLOCKED || (loc[k] == NEXT && next == k) || loc[k] == RING ||
              (loc[k] == OWNER && running == k));
     assert(!lost);
     if :: loc[k] == RING -> nring++ :: else -> skip fi;
     k++
  :: k > T -> break
  od;
  lost = (nring != tail - head) || (next != 0 && loc[next] != NEXT);
  assert(!lost)
}

init {
  atomic {
    byte k = 1;
    do
    :: k <= T -> loc[k] = BLOCKED; k++
    :: k > T -> break
    od;
    loc[1] = OWNER;
    run owner(); run thief(); run monitor()
  }
}
