/*
 * model/iosleep.pml - a Promela model of a VP's sleep and its wake-up (src/sched/vp.c: idle_sleep,
 * wait_taken, ursa__vp_kick) with both of its sleeps: on the futex (sleeping 3) and in the VP's
 * I/O engine (sleeping 4, while threads of the VP wait on I/O), whose wait also ends on an event
 * of its own.  rotator.pml models the futex sleep with the scheduler around it but abstracts the
 * futex away (a wait ends when the word changes); here the futex is explicit (a wait ends only
 * when a wake comes after the kernel's compare), since the bug this model was written for is a
 * missing FUTEX_WAKE.  Checked by scripts/check-model.sh; model/README.md ("The engine sleep").
 *
 * The protocol, VP i going to sleep with nothing to run:
 *     s = wakeseq;  exchange(&sleeping, 2);                publish
 *     if (work) { if (exchange(&sleeping, 0) == 0) wait_taken(s); return; }     the recheck
 *     if (io_nwait) {                                      threads wait on I/O here
 *       if (!CAS(&sleeping, 2, 4)) { wait_taken(s); return; }
 *       engine wait (ends on the eventfd, or on an event of its own);
 *       if (exchange(&sleeping, 0) == 0) wait_taken(s);    taken meanwhile
 *     } else {
 *       if (!CAS(&sleeping, 2, 3)) { wait_taken(s); return; }
 *       while (wakeseq == s) futex_wait(&wakeseq, s);
 *     }
 *   wait_taken(s): if (wakeseq != s) return; taken_wait = 1;
 *                  while (wakeseq == s) futex_wait(&wakeseq, s); taken_wait = 0;
 * and a waker, after making work visible to VP i (ursa__vp_kick):
 *     if (fetch_add(&sleeping, 0) != 0 && (old = exchange(&sleeping, 0)) != 0) {
 *       wakeseq++;
 *       if (old != 4) futex_wake(&wakeseq);
 *       else { eventfd write; if (taken_wait) futex_wake(&wakeseq); } }
 *
 * Memory model: every access is its own step, interleaved (sequential consistency): the C code
 * makes both Dekker pairs seq_cst (sleeping against the work; taken_wait against wakeseq).
 *
 * Variants (spin -DNAME):
 *   (none)              as src/sched implements it.  Verifies.
 *   BUG_NO_TAKEN_WAIT   ursa before session 27: no taken_wait, and a waker that took the VP out
 *                       of 4 wrote only the eventfd.  A sleeper that left the engine on its own
 *                       event between that waker's exchange and its increment waited on the futex
 *                       for good with work queued: caught (lost_wakeup).
 *   REACH_WINDOW        asserts that the sleeper never waits in wait_taken after an engine wait
 *                       before its waker's increment: caught (the case is reachable, so the
 *                       verification above is not vacuous).
 *   WK P E              wakers, work items (each followed by a kick) per waker, events of the
 *                       sleeper's own that may end an engine wait.
 *
 * Properties (pan -DNP -l: assertions, and no cycle at all in the state graph, so every execution
 * is finite and the final-state assertions are complete).  In a final state (timeout: nothing
 * can move) the monitor asserts:
 *   lost_wakeup   no work is left while the sleeper sleeps;
 *   stuck         the sleeper is at rest in one of its two sleeps, not waiting in wait_taken.
 */

#ifndef WK
#define WK 2           /* wakers */
#endif
#ifndef P
#define P 2            /* work items (each with its kick) per waker */
#endif
#ifndef E
#define E 2            /* events of the sleeper's own that end an engine wait */
#endif

#define AWAKE   0
#define INDEF   2      /* going to sleep, published */
#define FUTEX   3      /* asleep on the futex, no deadline (counted in sleepers in the C code) */
#define ENGINE  4      /* asleep in the I/O engine */

byte sleeping;
byte wakeseq;          /* at most WK * P increments: never wraps */
bit  infutex;          /* the sleeper is blocked in futex_wait in the kernel */
bit  evfd;             /* the engine's eventfd is readable */
byte events = E;       /* the sleeper's own events still to come */
bit  taken_wait;
byte work;             /* items made visible to the sleeper and not yet run */
bit  rest;             /* ghost: the sleeper waits in one of its two sleeps */
bit  in_taken;         /* ghost: the sleeper is inside wait_taken */
bit  window;           /* ghost: wait_taken entered after an engine wait, before the increment */

/* futex_wait(&wakeseq, s): the kernel compares and queues the waiter in one step; the waiter
 * returns only when a later futex_wake dequeues it (no spurious returns: the callers loop anyway) */
inline futex_wait(val) {
  atomic { if :: wakeseq == val -> infutex = 1 :: else -> skip fi };
  infutex == 0
}
inline futex_wake() { infutex = 0 }

inline wait_taken(val) {
  in_taken = 1;
#ifndef BUG_NO_TAKEN_WAIT
  if
  :: wakeseq != val -> skip
  :: else ->
     taken_wait = 1;
     do
     :: wakeseq == val -> futex_wait(val)
     :: else -> break
     od;
     taken_wait = 0
  fi;
#else
  do
  :: wakeseq == val -> futex_wait(val)
  :: else -> break
  od;
#endif
  in_taken = 0
}

proctype sleeper() {
  byte s, old;
idle:
  do                                           /* run what is there (one step per item) */
  :: atomic { work > 0 -> work-- }
  :: else -> break
  od;
  s = wakeseq;
  atomic { old = sleeping; sleeping = INDEF };             /* publish (exchange) */
  if
  :: work > 0 ->                                           /* the recheck: withdraw */
     atomic { old = sleeping; sleeping = AWAKE };
     if :: old == AWAKE -> wait_taken(s) :: else -> skip fi;
     goto idle
  :: else -> skip
  fi;
  if
  :: true ->                                   /* io_nwait != 0: the engine (sleeping 4) */
     atomic { if :: sleeping == INDEF -> sleeping = ENGINE; old = 1 :: else -> old = 0 fi };
     if
     :: old == 0 -> wait_taken(s)              /* a waker was faster */
     :: else ->
        rest = 1;
        if                                     /* the wait ends on the eventfd or an event */
        :: atomic { evfd -> evfd = 0; rest = 0 }
        :: atomic { events > 0 -> events--; rest = 0 }
        fi;
        atomic { old = sleeping; sleeping = AWAKE };       /* exchange */
        if
        :: old == AWAKE ->                     /* taken meanwhile */
#ifdef REACH_WINDOW
           window = (wakeseq == s);
           assert(!window);
#endif
           wait_taken(s)
        :: else -> skip
        fi
     fi
  :: true ->                                   /* no I/O waits: the futex (sleeping 3) */
     atomic { if :: sleeping == INDEF -> sleeping = FUTEX; old = 1 :: else -> old = 0 fi };
     if
     :: old == 0 -> wait_taken(s)
     :: else ->
        rest = 1;
        do
        :: wakeseq == s -> futex_wait(s)
        :: else -> break
        od;
        rest = 0
     fi
  fi;
  goto idle
}

proctype waker() {
  byte i, old;
  for (i : 1 .. P) {
    work++;                                    /* the push: visible to the sleeper */
    if                                         /* ursa__vp_kick */
    :: sleeping != AWAKE ->                    /* fetch_add(&sleeping, 0), seq_cst */
       atomic { old = sleeping; sleeping = AWAKE };        /* exchange */
       if
       :: old == AWAKE -> skip                 /* someone else woke it */
       :: else ->
          wakeseq++;
          if
          :: old != ENGINE -> futex_wake()
          :: else ->
             evfd = 1;                         /* the eventfd write */
#ifndef BUG_NO_TAKEN_WAIT
             if :: taken_wait -> futex_wake() :: else -> skip fi
#endif
          fi
       fi
    :: else -> skip
    fi
  }
}

proctype monitor() {
  bit lost_wakeup, stuck;
end_monitor:
  timeout ->
    atomic {
      lost_wakeup = (work > 0);                /* work queued, and the sleeper never runs it */
      assert(!lost_wakeup);
      stuck = !rest || in_taken;               /* asleep for good outside its two sleeps */
      assert(!stuck)
    }
}

init {
  byte i;
  atomic {
    run sleeper();
    for (i : 1 .. WK) { run waker() }
    run monitor()
  }
}
