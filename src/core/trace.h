/*
 * trace.h - the scheduler trace's hooks (trace.c; URSA_TRACE=file, docs/TRACE.md).
 */
#ifndef URSA_CORE_TRACE_H
#define URSA_CORE_TRACE_H

#include "vp.h"

/* ---- scheduler trace (trace.c; URSA_TRACE=file, docs/TRACE.md) ------------------------------- */
/* Every hook is one predictable branch on the flag ursa__trace_flag.on and, only when it is set,
 * an out-of-line call that appends an event to the calling VP's own buffer (no lock, no atomics).
 * The build option -DURSA_WITH_TRACE=OFF compiles the hooks out (URSA_NO_TRACE).
 *
 * The flag is 1 while URSA_TRACE records: set by ursa_init before VPs 1..N-1 start, cleared by
 * ursa_fini after they stopped (or by the atexit writer); read with relaxed loads (plain moves).
 * It sits alone at page offset 0xf00 (trace.c aligns the variable to a page): the switch path
 * reads it among its stores to thread descriptors, and a load whose address matches an in-flight
 * store's in the low 12 bits is delayed (4K aliasing).  Measured on the one-VP yield ping-pong:
 * 7.8 ns/switch with the flag at offsets 0x000, 0x3cc, 0xb48 or 0xf00, 9.9 ns at 0x34c (where a
 * field of ursa__g happened to land; which store it met was not identified).  The hot fields of
 * descriptors on ursa stacks, and the frames below them, lie below 0xec0 whatever their cache
 * colour (stack.c): 0xf00 keeps clear of them. */
struct ursa__trace_flag {
  char pad[0xf00];
  int  on;
};
URSA_HIDDEN extern struct ursa__trace_flag ursa__trace_flag;
/* Two observers share the flag, so that the switch and wake paths keep one test for both: bit 0,
 * URSA_TRACE records (trace.c); bit 1, schedule exploration chooses the next thread at every switch
 * (src/explore/, through ursa__explore_hooks in sched.h; set by ursa_init, one VP only).  The
 * recorders below return at once unless bit 0 is set.  Each bit is set and cleared with an atomic
 * or/and by its owner on VP 0 before other VPs start or after they stopped. */
#define URSA__TRACE_RECORD  1
#define URSA__TRACE_EXPLORE 2
#ifdef URSA_NO_TRACE
#  define URSA__TRACING() 0
#else
#  define URSA__TRACING() ursa_unlikely(__atomic_load_n(&ursa__trace_flag.on, __ATOMIC_RELAXED) != 0)
#endif
#define URSA__RECORDING() ((__atomic_load_n(&ursa__trace_flag.on, __ATOMIC_RELAXED) & URSA__TRACE_RECORD) != 0)
#define URSA__EXPLORING() ursa_unlikely((__atomic_load_n(&ursa__trace_flag.on, __ATOMIC_RELAXED) & URSA__TRACE_EXPLORE) != 0)
struct ursa__thread;
/* A switch on vp from `from` (vp->cur) to `to`: ends from's slice, starts to's. */
URSA_HIDDEN void ursa__trace_switch(struct ursa__vp *vp, const struct ursa__thread *from,
                                    const struct ursa__thread *to) __attribute__((cold));
/* self (running the waker) makes the BLOCKED thread t ready to run on VP to_vp, with result res. */
URSA_HIDDEN void ursa__trace_wake(struct ursa__vp *self, const struct ursa__thread *t, unsigned to_vp,
                                  int res) __attribute__((cold));
/* vp starts (begin = 1) or ends (0) a wait in the kernel with nothing to run. */
URSA_HIDDEN void ursa__trace_idle(struct ursa__vp *vp, int begin) __attribute__((cold));
/* A preemption (cp-ts's tick or cp-ic's count, at a safe point: ursa__preempt_switch) takes the
 * CPU from the running thread t: called before its switch, so the trace marks the slice's end. */
URSA_HIDDEN void ursa__trace_preempt(struct ursa__vp *vp, const struct ursa__thread *t) __attribute__((cold));
/* ursa_init: reads URSA_TRACE, opens the file, sets the flag (before VPs 1..N-1 start). */
URSA_HIDDEN void ursa__trace_init(void);
/* ursa_fini, once every VP's kernel thread is joined: writes the file and frees the buffers. */
URSA_HIDDEN void ursa__trace_fini(void);
/* A failed ursa_init: drops the buffers and the file. */
URSA_HIDDEN void ursa__trace_discard(void);
URSA_HIDDEN void ursa__trace_atfork_child(void);   /* fork: the child writes no trace */


#endif /* URSA_CORE_TRACE_H */
