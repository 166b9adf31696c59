/*
 * model/switch.pml - a Promela model of the on-CPU byte of ursa's context switch with several VPs,
 * and of the timer signals (cp-ts, the rotator's interval timer URSA_ROTATE_US) that a VP's kernel
 * thread takes between any two of its instructions.  Checked by scripts/check-model.sh; see
 * model/README.md ("The switch and signals") and issue #22 item 1.
 *
 * The protocol (src/arch/switch_*.S, src/sched/vp.c): a thread that blocks releases the object's
 * lock before its VP has switched away from it, so a waker may make it READY and another VP may
 * pick it at once.  The picker resumes it only once its on-CPU byte is 0 (its idle context waits
 * for the byte); the switch that suspends the thread clears the byte as its last store to it.
 * A signal is delivered on whatever stack the stack pointer is on: the kernel writes the signal's
 * frame below it, and sigreturn reads it back.  So the switch must have moved the stack pointer
 * off the thread's stack before it clears the byte; with the clear first (BUG_CLEAR_BEFORE_MOVE,
 * ursa before the fix of issue #22), a signal taken between the two has its frame written into
 * the stack of the thread that the other VP is already running: its frames and the signal frame
 * overwrite each other (a resume on a corrupted stack, or sigreturn to garbage).
 *
 * One thread, two VPs.  VP 0 runs the thread at the start.  The thread blocks up to M times in
 * all; each time the switch runs, and either VP (the same one too, after its switch) may pick and
 * resume it.  Each VP takes up to NSIG signals, each at any point of its execution; a handler
 * runs to its end (it never switches here: a signal inside ursa or the switch is not a safe point)
 * while the VP's own steps wait.
 *
 * Names:
 *   sp[v]       the stack VP v's stack pointer is on: TSTACK (the thread's) or OWN (a stack only
 *               v uses: the next thread's, v's idle context's).
 *   frame[v]    where VP v's live signal frame is (NONE when no handler runs on v).
 *   oncpu       the thread's on-CPU byte.
 *   queued      the thread is READY in a run queue (blocked and woken): a VP may pick it.
 *   runs        ghost: 1 + the VP running the thread (its code or the switch's saves), 0 none.
 *
 * Assertions (each names the damage):
 *   frame_clobbered   a VP writes the thread's stack (the thread runs, or its registers are
 *                     saved onto it, as on AArch64) while the other VP's signal frame lies there;
 *   stack_in_use      the kernel writes a signal frame on the thread's stack while the other VP
 *                     runs the thread there;
 *   resumed_twice     a VP resumes the thread while the other still runs or saves it.
 * Variants (spin -DNAME):
 *   (none)                 the switch as it is: move the stack pointer, then clear.  Verifies.
 *   BUG_CLEAR_BEFORE_MOVE  clear, then move (ursa before the fix): caught (frame_clobbered or
 *                          stack_in_use).  With NSIG=0 it verifies: without signals the early
 *                          clear does no harm, which is why the bug needed the timer.
 *   BUG_NO_ONCPU_WAIT      the picker does not wait for the byte: caught (resumed_twice).
 */

#define NONE   0
#define TSTACK 1
#define OWN    2

#ifndef M
#define M 3                  /* the thread blocks this many times in all */
#endif
#ifndef NSIG
#define NSIG 2               /* signals per VP */
#endif

#define OTHER(v) (1 - (v))

byte sp[2];
byte frame[2];
bit  in_handler[2];
bit  oncpu = 1;
bit  queued = 0;
byte runs = 1;               /* VP 0 runs the thread */
byte blocks = 0;
bool frame_clobbered = false, stack_in_use = false, resumed_twice = false;

/* VP v writes the thread's stack: no signal frame of the other VP may lie there. */
inline tstack_write(v) {
  frame_clobbered = (frame[OTHER(v)] == TSTACK);
  assert(!frame_clobbered)
}

proctype vp(byte me) {
  do
  :: atomic { !in_handler[me] && runs == me + 1 && blocks < M ->
       tstack_write(me);               /* the thread runs: calls, locals */
       blocks++;
       queued = 1                      /* it blocks; the object's lock is released and a waker
                                          has made it READY: any VP may pick it now */
     }
     /* the switch away from it (src/arch/switch_*.S) */
     atomic { !in_handler[me] -> tstack_write(me) }    /* save its registers (AArch64: onto its
                                                          stack; x86-64: its descriptor) */
#ifdef BUG_CLEAR_BEFORE_MOVE
     atomic { !in_handler[me] -> oncpu = 0; runs = 0 }
     atomic { !in_handler[me] -> sp[me] = OWN }
#else
     atomic { !in_handler[me] -> sp[me] = OWN }
     atomic { !in_handler[me] -> oncpu = 0; runs = 0 }
#endif
  :: atomic { !in_handler[me] && queued && sp[me] == OWN -> queued = 0 }   /* pick it */
#ifndef BUG_NO_ONCPU_WAIT
     atomic { !in_handler[me] && oncpu == 0 -> skip }  /* the idle context waits for the byte */
#endif
     atomic { !in_handler[me] ->                       /* and resumes it */
       resumed_twice = (runs != 0);
       assert(!resumed_twice);
       oncpu = 1; runs = me + 1; sp[me] = TSTACK;
       tstack_write(me)
     }
  :: atomic { !in_handler[me] && blocks == M && !queued -> break }   /* the thread has finished */
  od
}

/* The timer signals of VP me: delivered between any two steps of the VP, on its current stack. */
proctype signals(byte me) {
  byte n = 0;
  do
  :: n < NSIG ->
     atomic {
       !in_handler[me] ->
       in_handler[me] = 1;
       frame[me] = sp[me];             /* the kernel writes the frame below the stack pointer */
       stack_in_use = (frame[me] == TSTACK && runs == OTHER(me) + 1);
       assert(!stack_in_use)
     }
     atomic { in_handler[me] = 0; frame[me] = NONE; n++ }   /* not a safe point: sigreturn */
  :: n == NSIG -> break
  od
}

init {
  atomic {
    sp[0] = TSTACK; sp[1] = OWN;
    frame[0] = NONE; frame[1] = NONE;
    run vp(0); run vp(1); run signals(0); run signals(1)
  }
}
