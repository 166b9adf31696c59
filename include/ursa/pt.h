/*
 * ursa/pt.h - stackless threads (protothreads), header-only.
 *
 * A stackless thread is an ordinary function that can stop at a wait and, when called again,
 * carry on from that wait.  Its whole state is one struct ursa_pt, which records where it
 * stopped (a local continuation, ursa/lc.h): 2 bytes with the default URSA_LC_SWITCH, the size
 * of a pointer (8 bytes on LP64) with URSA_LC_ADDRLABELS.  No stack, no registers, no library:
 * this header uses nothing from libursa and needs no ursa_init().
 *
 * The application is the scheduler: it calls its protothread functions, typically in a loop,
 * and each call runs until the thread waits, yields, exits or ends, then returns one of
 * URSA_PT_WAITING, URSA_PT_YIELDED, URSA_PT_EXITED, URSA_PT_ENDED.  For stackless threads
 * scheduled by ursa instead (spawned on a VP or region, waiting on semaphores, timers and ursa
 * threads without polling, joinable by ursa threads), see ursa/pt_sched.h: it uses these macros
 * and the same local continuations, and needs libursa.
 *
 *   #include <stdio.h>
 *   #include <ursa/pt.h>
 *
 *   static struct ursa_pt_sem items;                    // counted by the producer
 *   static int next;                                    // state that must outlive a wait: not
 *                                                       // a local (see below)
 *   static URSA_PT_THREAD(consumer(struct ursa_pt *pt)) {
 *     URSA_PT_BEGIN(pt);
 *     for (;;) {
 *       URSA_PT_SEM_WAIT(pt, &items);                   // returns URSA_PT_WAITING while 0
 *       printf("item %d\n", next++);
 *     }
 *     URSA_PT_END(pt);
 *   }
 *
 *   int main(void) {
 *     struct ursa_pt c = URSA_PT_INITIALIZER;
 *     URSA_PT_SEM_INIT(&items, 0);
 *     for (int i = 0; i < 3; i++) {
 *       URSA_PT_SEM_SIGNAL(&items);
 *       consumer(&c);                                   // prints item 0, 1, 2
 *     }
 *   }
 *
 * Pitfalls (each restated where it bites)
 *
 *   1. Locals do not survive a wait or a yield.  Waiting returns from the function; resuming
 *      calls it afresh and jumps to the wait, so every automatic variable then holds garbage
 *      (an initialiser between the top and the wait is skipped).  Keep what must last in static
 *      storage or in a struct the caller passes along with the struct ursa_pt.
 *   2. URSA_LC_SWITCH only: no wait inside a switch statement.  The waits are case labels of the
 *      switch that URSA_PT_BEGIN opens; inside another switch they belong to that one and cannot
 *      be resumed (the resume aborts, see below).  Use if/else there, or URSA_LC_ADDRLABELS.
 *   3. One URSA_PT_BEGIN ... URSA_PT_END per function; waits only between them, and only in the
 *      protothread function itself: a function it calls cannot wait for it (spawn a child
 *      protothread instead, URSA_PT_SPAWN).
 *   4. Do not `return` from the body yourself; use URSA_PT_EXIT, URSA_PT_RESTART or URSA_PT_END.
 *   5. URSA_LC_ADDRLABELS: declare the function with URSA_PT_THREAD, which keeps the compiler
 *      from duplicating it (a saved label address is valid in its own copy only).
 *
 * Two waits on one line are fine: points are numbered by __COUNTER__, not __LINE__.
 *
 * What is caught at compile time
 *
 *   - URSA_PT_END without URSA_PT_BEGIN, and any wait, yield, exit or restart outside
 *     BEGIN...END: error "'ursa_pt_yield_flag_needs_URSA_PT_BEGIN' undeclared".
 *   - URSA_PT_BEGIN twice in one function: error "duplicate label
 *     'ursa_pt_URSA_PT_BEGIN_twice_in_one_function'".
 *   - URSA_PT_BEGIN without URSA_PT_END: unbalanced braces, reported at the end of the function
 *     or file ("expected declaration or statement at end of input"); END twice: the same, or the
 *     undeclared flag above.
 *   - URSA_LC_SWITCH: more than 65,534 waits in one translation unit (_Static_assert).
 *   - In C++ with URSA_LC_SWITCH, a wait that would skip the initialisation of a local still in
 *     scope (error "jump to case label crosses initialization"); in C, GCC's -Wjump-misses-init.
 *
 * Caught at run time: with URSA_LC_SWITCH, a wait inside a nested switch (pitfall 2) at its
 * first resume, which finds no case of its number and calls URSA_LC_ON_BAD_RESUME (abort() by
 * default; see ursa/lc-switch.h).  The same catches a struct ursa_pt handed to another
 * protothread function of the same translation unit.
 *
 * Not caught: a local read after a wait (pitfall 1) other than as above; a `return` in the body;
 * waits in a called function (they do not compile unless that function has its own BEGIN/END,
 * which makes it a protothread of its own).
 *
 * Language: C11 or C++11 with __COUNTER__ (checked with GCC: -std=c11 and -std=c++11, with and
 * without -pedantic; Clang and MSVC have __COUNTER__ too but are untested).  URSA_LC_ADDRLABELS
 * needs GCC or Clang; see ursa/lc-addrlabels.h for -pedantic.
 *
 * Threads of the kernel: a struct ursa_pt and a struct ursa_pt_sem are plain memory with no
 * atomics.  Run the protothreads that share them on one kernel thread.
 */
/* Outside the guard: lc.h checks that URSA_LC_IMPL is the same at every include. */
#include "lc.h"

#ifndef URSA_PT_H
#define URSA_PT_H

/* ---------------------------------------------------------------------------------------------
 * The state and the results
 * ------------------------------------------------------------------------------------------- */

/* All the state of one protothread: where it stopped.  sizeof: 2 bytes (URSA_LC_SWITCH) or one
 * pointer (URSA_LC_ADDRLABELS).  A zero-filled struct ursa_pt is initialised (so are static
 * ones); copying one that is waiting copies the point, which is fine within one function. */
struct ursa_pt {
  ursa_lc_t lc;
};

/* Initialiser for a struct ursa_pt: struct ursa_pt pt = URSA_PT_INITIALIZER; */
#define URSA_PT_INITIALIZER { 0 }

/* What a call of a protothread function returns.  WAITING and YIELDED: it will go on if called
 * again.  EXITED and ENDED: it finished (URSA_PT_EXIT, or the end of the body) and starts from
 * the beginning if called again. */
enum {
  URSA_PT_WAITING = 0,  /* blocked in a URSA_PT_WAIT_*, URSA_PT_SPAWN or URSA_PT_SEM_WAIT (or
                           URSA_PT_RESTART) */
  URSA_PT_YIELDED = 1,  /* gave way in URSA_PT_YIELD or URSA_PT_YIELD_UNTIL */
  URSA_PT_EXITED = 2,   /* URSA_PT_EXIT */
  URSA_PT_ENDED = 3     /* reached URSA_PT_END */
};

/* ---------------------------------------------------------------------------------------------
 * Declaring, initialising, running
 * ------------------------------------------------------------------------------------------- */

/* Declares a protothread function: `static URSA_PT_THREAD(blink(struct ursa_pt *pt, int led))`
 * is `static int blink(struct ursa_pt *pt, int led)`, with URSA_LC_ADDRLABELS also noinline (and
 * noclone on GCC).  The function must take its struct ursa_pt (usually as a pointer) and return
 * through the URSA_PT_ macros only. */
#define URSA_PT_THREAD(name_args) URSA_LC_FUNC_ATTR int name_args

/* Sets *pt to the start: the next call of its function runs from URSA_PT_BEGIN.  Needed before
 * the first call unless *pt is zero-filled or was set with URSA_PT_INITIALIZER.  Do not
 * initialise a protothread that is waiting in URSA_PT_SPAWN of a parent from outside. */
#define URSA_PT_INIT(pt) URSA_LC_INIT((pt)->lc)

/* True while the result f of a call says the protothread goes on (WAITING or YIELDED), false
 * once it exited or ended: `while (URSA_PT_SCHEDULE(worker(&pt))) { ... }`. */
#define URSA_PT_SCHEDULE(f) ((f) < URSA_PT_EXITED)

/* ---------------------------------------------------------------------------------------------
 * The body
 * ------------------------------------------------------------------------------------------- */

/* Opens the body of a protothread function: first statement but declarations of variables that
 * need no value across waits.  Once per function (a second one is a "duplicate label" error).
 * On resume, jumps to the wait or yield where the protothread stopped. */
#define URSA_PT_BEGIN(pt)                                      \
  {                                                            \
    ursa_pt_URSA_PT_BEGIN_twice_in_one_function:;              \
    char ursa_pt_yield_flag_needs_URSA_PT_BEGIN = 1;           \
    URSA_LC_RESUME((pt)->lc)

/* Closes the body: reaching it ends the protothread, which returns URSA_PT_ENDED and starts
 * afresh if called again.  Last statement of the function.  Without it the braces opened by
 * URSA_PT_BEGIN are unbalanced (a compile error). */
#define URSA_PT_END(pt)                                        \
    (void)ursa_pt_yield_flag_needs_URSA_PT_BEGIN;              \
    URSA_LC_END((pt)->lc)                                      \
    if (0) goto ursa_pt_URSA_PT_BEGIN_twice_in_one_function;   \
    URSA_PT_INIT(pt);                                          \
    return URSA_PT_ENDED;                                      \
  }

/* Waits until cond is true: evaluates it now and, while false, returns URSA_PT_WAITING; every
 * later call re-evaluates it here (and only here: the code before is not run again).  When cond
 * is already true it goes straight on, without returning.
 * Pitfalls: locals (including any used in cond) do not survive the wait; with URSA_LC_SWITCH,
 * not inside a switch statement.  cond is evaluated once per call while waiting. */
#define URSA_PT_WAIT_UNTIL(pt, cond)                           \
  do {                                                         \
    (void)ursa_pt_yield_flag_needs_URSA_PT_BEGIN;              \
    URSA_LC_SET((pt)->lc);                                     \
    if (!(cond)) return URSA_PT_WAITING;                       \
  } while (0)

/* Waits while cond is true: URSA_PT_WAIT_UNTIL(pt, !(cond)), with the same pitfalls. */
#define URSA_PT_WAIT_WHILE(pt, cond) URSA_PT_WAIT_UNTIL(pt, !(cond))

/* Waits until the child protothread call `thread` (for instance child(&cpt, arg)) exits or ends,
 * calling it once per call of the parent; the parent returns URSA_PT_WAITING meanwhile, whether
 * the child waited or yielded.  The child must have been initialised: see URSA_PT_SPAWN.
 * Pitfalls: the arguments are evaluated afresh at every call, so they must not be locals; with
 * URSA_LC_SWITCH, not inside a switch statement. */
#define URSA_PT_WAIT_THREAD(pt, thread) URSA_PT_WAIT_WHILE(pt, URSA_PT_SCHEDULE(thread))

/* Starts a child protothread and waits for it: initialises *child, then URSA_PT_WAIT_THREAD.
 * The child runs at once (in the same call), so a child that never waits costs no round trip.
 *   URSA_PT_SPAWN(pt, &ctx->child_pt, read_line(&ctx->child_pt, ctx));
 * Pitfalls: the child's struct ursa_pt (and its arguments) must outlive the wait, so not a local
 * of the parent; with URSA_LC_SWITCH, not inside a switch statement. */
#define URSA_PT_SPAWN(pt, child, thread)                       \
  do {                                                         \
    URSA_PT_INIT(child);                                       \
    URSA_PT_WAIT_THREAD(pt, thread);                           \
  } while (0)

/* Gives way once: returns URSA_PT_YIELDED now and goes on after this point at the next call.
 * Pitfalls: locals do not survive it; with URSA_LC_SWITCH, not inside a switch statement. */
#define URSA_PT_YIELD(pt)                                      \
  do {                                                         \
    ursa_pt_yield_flag_needs_URSA_PT_BEGIN = 0;                \
    URSA_LC_SET((pt)->lc);                                     \
    if (ursa_pt_yield_flag_needs_URSA_PT_BEGIN == 0)           \
      return URSA_PT_YIELDED;                                  \
  } while (0)

/* Gives way at least once, then until cond is true: returns URSA_PT_YIELDED now whatever cond
 * says, and at each later call while cond is false.  (URSA_PT_WAIT_UNTIL does not return at all
 * when cond is already true.)  Same pitfalls as URSA_PT_YIELD. */
#define URSA_PT_YIELD_UNTIL(pt, cond)                          \
  do {                                                         \
    ursa_pt_yield_flag_needs_URSA_PT_BEGIN = 0;                \
    URSA_LC_SET((pt)->lc);                                     \
    if (ursa_pt_yield_flag_needs_URSA_PT_BEGIN == 0 || !(cond)) \
      return URSA_PT_YIELDED;                                  \
  } while (0)

/* Ends the protothread here: returns URSA_PT_EXITED; the next call starts from URSA_PT_BEGIN.  A
 * parent waiting in URSA_PT_SPAWN / URSA_PT_WAIT_THREAD goes on. */
#define URSA_PT_EXIT(pt)                                       \
  do {                                                         \
    (void)ursa_pt_yield_flag_needs_URSA_PT_BEGIN;              \
    URSA_PT_INIT(pt);                                          \
    return URSA_PT_EXITED;                                     \
  } while (0)

/* Starts over: returns URSA_PT_WAITING, and the next call runs from URSA_PT_BEGIN.  A parent
 * waiting for this one keeps waiting. */
#define URSA_PT_RESTART(pt)                                    \
  do {                                                         \
    (void)ursa_pt_yield_flag_needs_URSA_PT_BEGIN;              \
    URSA_PT_INIT(pt);                                          \
    return URSA_PT_WAITING;                                    \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Counting semaphores
 * ------------------------------------------------------------------------------------------- */

/* A counting semaphore for protothreads: a count, nothing else (4 bytes).  Waiters are not
 * queued: whichever waiting protothread the application calls first after a signal takes the
 * unit. */
struct ursa_pt_sem {
  unsigned int count;
};

/* Sets the count of *s to c (an unsigned int).  Not while protothreads wait on it. */
#define URSA_PT_SEM_INIT(s, c) ((void)((s)->count = (c)))

/* Waits until the count of *s is positive, then takes one unit.  Returns URSA_PT_WAITING while
 * it is 0.  Pitfalls: as URSA_PT_WAIT_UNTIL (no locals across it; with URSA_LC_SWITCH, not
 * inside a switch statement); s is evaluated at every call while waiting, so it must not be a
 * local. */
#define URSA_PT_SEM_WAIT(pt, s)                                \
  do {                                                         \
    URSA_PT_WAIT_UNTIL(pt, (s)->count > 0);                    \
    --(s)->count;                                              \
  } while (0)

/* Adds one unit to *s.  Never waits, so it may be called from anywhere, protothread or not (on
 * the kernel thread that runs the protothreads).  A protothread waiting on s notices at its next
 * call.  The count wraps after UINT_MAX signals without waits (not checked). */
#define URSA_PT_SEM_SIGNAL(s) ((void)++(s)->count)

#endif /* URSA_PT_H */
