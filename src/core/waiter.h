/*
 * waiter.h - the waiter: what a wait queue holds.
 *
 * Every ursa thread embeds one (t->w).  Anything else that waits on an object of the core without
 * a stack of its own (a stackless thread of src/pt/, and later an I/O completion or a remote
 * reply) is a "call waiter" (struct ursa__waiter_call below): a waiter followed by the function
 * that wakes it.  The objects of
 * src/sync/ queue waiters and wake them with ursa__wake (src/sched/sched.h), which makes a thread
 * READY and calls a call waiter's function instead; neither the objects nor the wake paths have a
 * second copy for call waiters.
 *
 * heap_idx tells the two apart: a thread's is the 1-based index of its timer in its VP's heap (0:
 * none); a call waiter's is URSA__WAITER_CALL for good.  So the one-VP wake's single test "a timer
 * to cancel" also sends call waiters to the slow path, at no cost to the fast one.  With several
 * VPs a thread's heap_idx may be changing under another VP's timer lock: it is written and, to
 * compare it with URSA__WAITER_CALL, read with relaxed atomics (ursa__waiter_is_call).
 * The 40 bytes of the waiter are the hot head of a thread's descriptor (thread.h).
 *
 * Included by core/thread.h and by the waiter interface for the layers above src/sync/
 * (src/sync/waiter.h); it needs nothing else of the core.
 */
#ifndef URSA_CORE_WAITER_H
#define URSA_CORE_WAITER_H

#include <stdbool.h>
#include <stdint.h>

struct ursa__thread;

/* What a blocked thread waits on (wait_kind): a number whose meaning the layer that blocks it
 * registers (name, owner: src/sched/report.c), so the reports never call into that layer. */
enum ursa__wait {
  URSA__W_NONE = 0,
  URSA__W_JOIN, URSA__W_SLEEP,                                      /* src/sched/ */
  URSA__W_SEM, URSA__W_MUTEX, URSA__W_COND, URSA__W_BARRIER, URSA__W_RDLOCK, URSA__W_WRLOCK,
  URSA__W_ONCE, URSA__W_IVAR, URSA__W_MVAR_TAKE, URSA__W_MVAR_PUT,  /* src/sync/ */
  URSA__W_PT_JOIN, URSA__W_PT_SEM, URSA__W_PT_IDLE,                 /* src/pt/ */
  URSA__W_IO_FD, URSA__W_IO_OFFLOAD, URSA__W_IO_POLLER,             /* src/io/ */
  URSA__W_UPT, URSA__W_UPT_MUTEX, URSA__W_UPT_SEM,                  /* src/pthread/ */
  URSA__W_DIST,                                                     /* src/dist/ */
  URSA__W_MAX
};

#define URSA__WAITER_CALL UINT32_MAX

/* A FIFO of waiters linked through their q fields; NULL-terminated both ways so that a queue
 * inside a statically initialized (all-zero) object is valid.  push/pop/remove are O(1). */
struct ursa__waitq {
  struct ursa__waiter *head, *tail;
};

struct ursa__waiter {
  union {
    struct {                         /* on a wait queue: the links                              */
      struct ursa__waiter *qnext, *qprev;
    };
    struct ursa__thread *next;       /* a thread in a list of the scheduler's (a VP's overflow
                                        list, the global queue, a stack pool)                  */
    uint32_t           rq_pos;       /* a thread READY in the ring: its position in vp->runq    */
  };
  struct ursa__waitq  *waitq;        /* the queue of a timed wait, or NULL (see ursa__q_pop)    */
  void                *wait_obj;     /* the object waited on (reports; a join: the thread)      */
  uint32_t             heap_idx;     /* see above: a thread's timer, or URSA__WAITER_CALL       */
  int                  wake_result;  /* 0, or -ETIMEDOUT when a timer ended the wait            */
};

/* A waiter without a thread.  wake is called by the waker, on the waker's VP, with the lock of
 * the object waited on held (several VPs): it may take only leaf locks (an executor's, say) and
 * must not switch.  data carries a value handed over by the waker (an M-structure's). */
struct ursa__waiter_call {
  struct ursa__waiter w;
  void (*wake)(struct ursa__waiter_call *c, int res);
  void *data;
};

static inline bool ursa__waiter_is_call(const struct ursa__waiter *w) {
  return __atomic_load_n(&w->heap_idx, __ATOMIC_RELAXED) == URSA__WAITER_CALL;
}
static inline struct ursa__waiter_call *ursa__waiter_call_of(struct ursa__waiter *w) {
  return (struct ursa__waiter_call *)(void *)w;       /* w is its first member */
}
static inline void ursa__waiter_call_init(struct ursa__waiter_call *c,
                                          void (*wake)(struct ursa__waiter_call *, int)) {
  c->w.qnext = c->w.qprev = NULL;
  c->w.waitq = NULL;
  c->w.wait_obj = NULL;
  c->w.heap_idx = URSA__WAITER_CALL;
  c->w.wake_result = 0;
  c->wake = wake;
  c->data = NULL;
}

#endif /* URSA_CORE_WAITER_H */
