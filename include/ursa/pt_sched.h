/*
 * ursa/pt_sched.h - stackless threads scheduled by ursa (needs libursa and ursa_init).
 *
 * The header-only flavour (ursa/pt.h) leaves the scheduling to the application.  This one puts a
 * stackless thread on ursa's VPs: it is spawned with a function and an argument, runs when it is
 * ready, waits on semaphores, timers, other stackless threads and ursa threads without polling,
 * and ursa threads can wait on it.  Its function is written with the URSA_PTS_* macros below,
 * which are the URSA_PT_* macros of ursa/pt.h plus waits that queue the thread on an object:
 *
 *   #include <ursa.h>
 *   #include <ursa/pt_sched.h>
 *
 *   static struct ursa_pts_sem items;
 *
 *   static URSA_PT_THREAD(consumer(struct ursa_pts *self)) {
 *     URSA_PTS_BEGIN(self);
 *     for (;;) {
 *       URSA_PTS_SEM_WAIT(self, &items);         // queued on items: runs again after a post
 *       printf("item\n");
 *     }
 *     URSA_PTS_END(self);
 *   }
 *
 *   int main(void) {
 *     struct ursa_pts c = URSA_PTS_INITIALIZER;  // the whole thread: 56 bytes
 *     ursa_init(NULL);
 *     ursa_pts_sem_init(&items, 0);
 *     ursa_pts_spawn(&c, URSA_VP_SELF, consumer, NULL);
 *     ursa_pts_sem_post(&items);                // prints "item" once main blocks or yields
 *     ...
 *   }
 *
 * How it runs.  Each VP has an executor, an ordinary ursa thread bound to it (each region one
 * more, a member of the region), created at the first spawn there.  An executor runs its ready
 * stackless threads one after the other by calling their functions; a call returns when the
 * thread waits, yields or ends.  So a stackless thread never runs in parallel with itself or with
 * another of its executor, and the model rules apply through the executor: under cm there is one
 * VP; in a region (pcm) the executor is a member, so no two threads of the region, stackful or
 * stackless, run at once; under cp-ts and cp-ic the executor is preempted like any ursa thread
 * (cp-ts: also inside the stackless functions, which are the program's code, never inside ursa),
 * so shared data needs the same care as in any preemptive thread.  An executor gives way to the
 * other ursa threads of its VP after every
 * URSA_PTS_BATCH calls, and blocks on a semaphore when it has nothing to run.  Call
 * ursa_pts_fini() before ursa_fini(): it stops the executors.
 *
 * The rules (as in ursa/pt.h, and each restated where it bites):
 *   1. Locals do not survive a wait or a yield: keep state in static storage or in the struct
 *      behind self->arg (or a struct that embeds the struct ursa_pts).
 *   2. URSA_LC_SWITCH (the default): no wait inside a switch statement.
 *   3. Never call a blocking ursa function (ursa_sem_wait, ursa_join, ursa_mutex_lock, ...) from a
 *      stackless thread: it would block its executor and every thread on it.  Use the URSA_PTS_
 *      waits.  Non-blocking ones (posts, puts, unlocks, create, try-variants) are fine.
 *   4. A stackless thread may wait on: an ursa_pts_sem (URSA_PTS_SEM_WAIT, _TIMEDWAIT), a timer
 *      (URSA_PTS_SLEEP), another stackless thread's end (URSA_PTS_JOIN), an ursa thread's end
 *      (URSA_PTS_JOIN_THREAD), ursa's own semaphores (URSA_PTS_URSA_SEM_WAIT), I-structures
 *      (URSA_PTS_IVAR_GET) and M-structures (URSA_PTS_MVAR_TAKE, _PUT), or a condition polled
 *      once per round (URSA_PTS_WAIT_UNTIL).
 *   5. An ursa thread waits on a stackless one with ursa_pts_join, or on an ursa_pts_sem with
 *      ursa_pts_sem_wait: the semaphore is the way to wait for anything a stackless thread does.
 *
 * Errors are negative errno values, as in ursa.h.  A wait macro that fails does not wait: it
 * goes on with ursa_pts_result(self) < 0.  Calls from outside ursa threads return -EPERM.
 *
 * Contexts: the ursa_pts_* functions from ursa threads and from stackless threads (those that
 * would block: ursa threads only, else -EPERM); the URSA_PTS_* macros only inside the function of
 * the stackless thread `self`, between URSA_PTS_BEGIN and URSA_PTS_END.
 */
#ifndef URSA_PT_SCHED_H
#define URSA_PT_SCHED_H

#include "../ursa.h"
#include "pt.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * The thread
 * ------------------------------------------------------------------------------------------- */

struct ursa_pts;
struct ursa__pts_exec;                  /* private: an executor (src/pt/pt_sched.c) */

/* The function of a stackless thread: runs from URSA_PTS_BEGIN, or from the wait where it
 * stopped, until the next wait, yield or its end; returns what the URSA_PTS_* macros return. */
typedef int (*ursa_pts_fn)(struct ursa_pts *self);

/* A stackless thread: its whole state, in storage the caller owns (static, an array, or embedded
 * in the caller's own struct).  Zero-filled or URSA_PTS_INITIALIZER before its first spawn; it
 * must stay valid and unmoved from ursa_pts_spawn until it has ended and been joined (or has
 * ended, when nobody joins it).  The fields are private except arg and pt. */
struct ursa_pts {
  struct ursa_pts       *next;          /* private: link in a ready list or a wait queue        */
  struct ursa__pts_exec *exec;          /* private: the executor it runs on                     */
  ursa_pts_fn            fn;            /* private                                              */
  void                  *arg;           /* the argument of ursa_pts_spawn                       */
  struct ursa_pts       *joiner;        /* private: who waits for its end                       */
  union {
    struct ursa_pt       pt;            /* where it stopped (ursa/pt.h)                         */
    uint64_t             lc_space_;     /* private: the same size in both implementations       */
  };
  uint32_t               heap_idx;      /* private: its timer in the executor's heap, or 0      */
  int16_t                result;        /* the result of its last wait: ursa_pts_result         */
  uint8_t                state;         /* private: enum below (atomic, relaxed)                */
  uint8_t                flags;         /* private                                              */
};
#define URSA_PTS_INITIALIZER { 0, 0, 0, 0, 0, { { 0 } }, 0, 0, 0, 0 }

/* The states (private; for reading: ursa_pts_state). */
enum {
  URSA_PTS_FREE = 0,      /* never spawned, or ended and joined: may be spawned               */
  URSA_PTS_READY = 1,     /* on its executor's ready list, or running                          */
  URSA_PTS_WAITING = 2,   /* queued on an object, asleep, or joining                           */
  URSA_PTS_DONE = 3       /* ended, not joined                                                 */
};

/* Where a thread runs: the VP index, URSA_VP_ANY (the executor with the fewest live stackless
 * threads) or URSA_VP_SELF (called from a stackless thread: its own executor, so a region's
 * threads spawn into the region; from an ursa thread: its VP's executor). */

/* Starts t running fn(t) (fn reads t->arg) on VP vp's executor.  Does not switch: t runs when its
 * executor gets to it.  -EINVAL for a NULL t or fn or a bad vp, -EBUSY while t is live
 * (ready or waiting), -ENOMEM / -EAGAIN when the executor cannot be made, -EPERM outside ursa. */
URSA_API int ursa_pts_spawn(struct ursa_pts *t, int vp, ursa_pts_fn fn, void *arg);

/* The same, on region r's executor: t then runs only while no other thread of r runs. */
URSA_API int ursa_pts_spawn_region(struct ursa_pts *t, ursa_region_t *r, ursa_pts_fn fn, void *arg);

/* Waits until t has ended (URSA_PTS_EXIT or URSA_PTS_END), then makes it FREE (reusable).
 * Blocks the calling ursa thread without polling.  -ESRCH when t is FREE (never spawned, or
 * already joined), -EINVAL when another thread already joins t, -EDEADLK when t is joining the
 * caller (URSA_PTS_JOIN_THREAD), -EPERM from a stackless thread (use URSA_PTS_JOIN) or outside
 * ursa. */
URSA_API int ursa_pts_join(struct ursa_pts *t);

/* URSA_PTS_FREE, _READY, _WAITING or _DONE: a snapshot. */
URSA_API int ursa_pts_state(const struct ursa_pts *t);

/* The result of self's last URSA_PTS_* wait (0, -ETIMEDOUT, or the error that kept it from
 * waiting), or of URSA_PTS_SPAWN / URSA_PTS_SEM_POST. */
#define ursa_pts_result(self) ((int)(self)->result)

/* Stops every executor, once no stackless thread is live (READY or WAITING): -EBUSY otherwise.
 * Call it from an ursa thread before ursa_fini (which counts executors as live threads).  A later
 * spawn starts executors again.  -EPERM from a stackless thread or outside ursa. */
URSA_API int ursa_pts_fini(void);

/* ---------------------------------------------------------------------------------------------
 * Semaphores that both kinds of thread can wait on
 * ------------------------------------------------------------------------------------------- */

/* A counting semaphore: a post hands its unit to the first waiter (FIFO), stackless or not; a
 * stackless waiter is made ready on its executor, an ursa thread is woken as by ursa_sem_post.
 * 32 bytes, in storage the caller owns; not copied or moved while in use. */
struct ursa_pts_sem {
  uint32_t         magic;               /* private */
  uint32_t         count;               /* private */
  struct ursa_pts *head, *tail;         /* private: waiters, FIFO (tail valid while head is) */
  uint32_t         lock;                /* private: several VPs */
  uint32_t         pad_;
};

URSA_API int ursa_pts_sem_init(struct ursa_pts_sem *s, unsigned value);   /* -EINVAL above
                                                                              URSA_SEM_VALUE_MAX */
URSA_API int ursa_pts_sem_destroy(struct ursa_pts_sem *s);                 /* -EBUSY with waiters */
/* From ursa threads: blocks while the count is 0.  -EPERM from a stackless thread. */
URSA_API int ursa_pts_sem_wait(struct ursa_pts_sem *s);
URSA_API int ursa_pts_sem_trywait(struct ursa_pts_sem *s);                 /* -EAGAIN at 0 */
/* From anywhere in ursa (ursa threads and stackless ones).  -EOVERFLOW at the maximum. */
URSA_API int ursa_pts_sem_post(struct ursa_pts_sem *s);
URSA_API int ursa_pts_sem_getvalue(struct ursa_pts_sem *s, int *value);

/* ---------------------------------------------------------------------------------------------
 * The body of a stackless thread
 * ------------------------------------------------------------------------------------------- */

/* Declare the function with URSA_PT_THREAD (ursa/pt.h): static URSA_PT_THREAD(f(struct ursa_pts
 * *self)).  Open the body with URSA_PTS_BEGIN, close it with URSA_PTS_END; no return of your own. */
#define URSA_PTS_BEGIN(self) URSA_PT_BEGIN(&(self)->pt)
/* Ends the thread: its joiner, if any, goes on. */
#define URSA_PTS_END(self) URSA_PT_END(&(self)->pt)
/* Ends the thread here. */
#define URSA_PTS_EXIT(self) URSA_PT_EXIT(&(self)->pt)
/* Goes behind the other ready threads of its executor.  Locals do not survive it. */
#define URSA_PTS_YIELD(self) URSA_PT_YIELD(&(self)->pt)

/* A wait on an object: `call` returns 1 when it queued self (the function returns and resumes
 * after the point once woken), 0 when it did not have to wait, a negative error when it could
 * not (stored in self->result; goes on).  The point is recorded before the call, so a waker on
 * another VP may make self ready before the function has returned. */
#define URSA__PTS_WAIT_ON(self, call)                                   \
  do {                                                                  \
    ursa_pt_yield_flag_needs_URSA_PT_BEGIN = 0;                         \
    URSA_LC_SET((self)->pt.lc);                                         \
    if (ursa_pt_yield_flag_needs_URSA_PT_BEGIN == 0 && (call) > 0)      \
      return URSA_PT_WAITING;                                           \
  } while (0)

/* Waits until the semaphore's count is positive and takes a unit (FIFO with the other waiters).
 * Pitfalls: locals do not survive it; with URSA_LC_SWITCH not inside a switch statement. */
#define URSA_PTS_SEM_WAIT(self, s) URSA__PTS_WAIT_ON(self, ursa__pts_sem_wait_fast(self, s))
/* The same with a timeout of ns nanoseconds: ursa_pts_result(self) is then 0 or -ETIMEDOUT.
 * (Resumed by a post before the timeout, it cancels its timer itself: the executor's loop does
 * not look for timers.) */
#define URSA_PTS_SEM_TIMEDWAIT(self, s, ns)                             \
  do {                                                                  \
    ursa_pt_yield_flag_needs_URSA_PT_BEGIN = 0;                         \
    URSA_LC_SET((self)->pt.lc);                                         \
    if (ursa_pt_yield_flag_needs_URSA_PT_BEGIN == 0) {                  \
      if (ursa__pts_sem_wait(self, s, ns, 1) > 0) return URSA_PT_WAITING; \
    } else if ((self)->heap_idx != 0) {                                 \
      ursa__pts_timer_cancel(self);     /* resumed: a post beat the timeout */ \
    }                                                                   \
  } while (0)
/* Posts s from self: the same as ursa_pts_sem_post (the result: 0, -EOVERFLOW or -EINVAL), and
 * with one VP and a cooperative model, when the first waiter is a thread of self's executor, a
 * few stores inline (it goes to the tail of the ready list).  Sets the result. */
#define URSA_PTS_SEM_POST(self, s) ursa__pts_sem_post_from(self, s)
/* Sleeps for at least ns nanoseconds of CLOCK_MONOTONIC (0: one round of the executor). */
#define URSA_PTS_SLEEP(self, ns) URSA__PTS_WAIT_ON(self, ursa__pts_sleep(self, ns))
/* Waits until the stackless thread t has ended and makes it FREE.  Result: 0, -ESRCH (t is FREE),
 * -EINVAL (t already has a joiner), -EDEADLK (t is self, or t is joining self: a cycle of two,
 * as ursa_join finds; longer cycles end in the deadlock report). */
#define URSA_PTS_JOIN(self, t) URSA__PTS_WAIT_ON(self, ursa__pts_join(self, t))
/* Waits until the ursa thread th has finished and releases it (as ursa_join, the result is not
 * kept).  Result: 0, or ursa_join's errors (-ESRCH, -EINVAL, -EDEADLK for the executor itself or
 * for th joining self in ursa_pts_join). */
#define URSA_PTS_JOIN_THREAD(self, th) URSA__PTS_WAIT_ON(self, ursa__pts_join_thread(self, th))
/* Waits on ursa's own semaphore s (ursa_sem_t) as ursa_sem_wait does, FIFO with the ursa threads
 * waiting there; a post hands the unit over and makes self ready.  Result: 0, or -EINVAL (bad
 * semaphore), -ENOMEM.  No timed variant. */
#define URSA_PTS_URSA_SEM_WAIT(self, s) URSA__PTS_WAIT_ON(self, ursa__pts_ursa_sem_wait(self, s))
/* Waits until the I-structure iv (ursa_ivar_t) is written and stores its value in *out, as
 * ursa_ivar_get.  out must outlive the wait (static storage or self->arg's struct: locals do
 * not survive it).  Result: 0, or -EINVAL (bad I-structure or NULL out), -ENOMEM. */
#define URSA_PTS_IVAR_GET(self, iv, out) URSA__PTS_WAIT_ON(self, ursa__pts_ivar_get(self, iv, out))
/* Takes the value of the M-structure mv (ursa_mvar_t) into *out, waiting while it is empty, FIFO
 * with the ursa threads taking there (ursa_mvar_take).  out: as above. */
#define URSA_PTS_MVAR_TAKE(self, mv, out) URSA__PTS_WAIT_ON(self, ursa__pts_mvar_take(self, mv, out))
/* Puts value into the M-structure mv, waiting while it is full (ursa_mvar_put). */
#define URSA_PTS_MVAR_PUT(self, mv, value) URSA__PTS_WAIT_ON(self, ursa__pts_mvar_put(self, mv, value))
/* Waits until cond holds, re-evaluating it once per round of the executor (a poll: prefer a
 * semaphore).  cond must not use locals. */
#define URSA_PTS_WAIT_UNTIL(self, cond)                                 \
  do {                                                                  \
    (void)ursa_pt_yield_flag_needs_URSA_PT_BEGIN;                       \
    URSA_LC_SET((self)->pt.lc);                                         \
    if (!(cond)) return URSA_PT_YIELDED;                                \
  } while (0)
/* Spawns child on self's executor (ursa_pts_spawn with URSA_VP_SELF); result in self->result.
 * Does not wait: join it with URSA_PTS_JOIN. */
#define URSA_PTS_SPAWN(self, child, fn, arg) \
  ((self)->result = (int16_t)ursa_pts_spawn(child, URSA_VP_SELF, fn, arg))

/* ---- private: what the macros call --------------------------------------------------------- */

/* The first fields of an executor: its ready list (owner only; FIFO, tail valid while head is). */
struct ursa__pts_runq {
  struct ursa_pts *head, *tail;
};
#define URSA__PTS_SEM_MAGIC 0x50545353u
/* What a semaphore's magic must equal for the inline paths below to take it: URSA__PTS_SEM_MAGIC
 * while the runtime has one VP and a cooperative model (set when an executor is made, reset by
 * ursa_pts_fini), else a value no semaphore holds (neither the magic, nor 0, nor a destroyed
 * one's), so that one compare tests both the mode and the semaphore; the library's version
 * validates the rest (a bad semaphore: -EINVAL). */
URSA_API extern uint32_t ursa__pts_fast_magic;
#define URSA__PTS_NO_FAST_MAGIC 0xafabacacu

URSA_API int ursa__pts_sem_wait(struct ursa_pts *self, struct ursa_pts_sem *s, uint64_t ns, int timed);
URSA_API int ursa__pts_sem_post(struct ursa_pts_sem *s);
/* The library's versions of the inline paths below, declared cold so that the compiler keeps
 * their calls (and the spills around them) out of the way of the inline path. */
URSA_API __attribute__((__cold__)) int ursa__pts_sem_wait_slow(struct ursa_pts *self, struct ursa_pts_sem *s);
URSA_API __attribute__((__cold__)) int16_t ursa__pts_sem_post_slow(struct ursa_pts *self, struct ursa_pts_sem *s);
URSA_API void ursa__pts_timer_cancel(struct ursa_pts *self);
URSA_API int ursa__pts_sleep(struct ursa_pts *self, uint64_t ns);
URSA_API int ursa__pts_join(struct ursa_pts *self, struct ursa_pts *t);
URSA_API int ursa__pts_join_thread(struct ursa_pts *self, ursa_thread_t th);
URSA_API int ursa__pts_ursa_sem_wait(struct ursa_pts *self, ursa_sem_t *s);
URSA_API int ursa__pts_ivar_get(struct ursa_pts *self, ursa_ivar_t *v, void **out);
URSA_API int ursa__pts_mvar_take(struct ursa_pts *self, ursa_mvar_t *v, void **out);
URSA_API int ursa__pts_mvar_put(struct ursa_pts *self, ursa_mvar_t *v, void *value);

/* Appends t to a FIFO of head and tail (tail valid while head is): a ready list or a semaphore's
 * waiters.  A branch, not a select: with a select (cmov) the address of the store waits for the
 * load of head, and the ring (bench/pt_sched_ring.c) ran 1.6x slower.  Laid out for the empty
 * FIFO: a hand-off, where a thread wakes the next and waits. */
static inline void ursa__pts_fifo_put(struct ursa_pts **head, struct ursa_pts **tail, struct ursa_pts *t) {
  t->next = 0;
  if (__builtin_expect(*head != 0, 0)) (*tail)->next = t; else *head = t;
  *tail = t;
}

/* The fast mode (one VP, a cooperative model) and a valid semaphore: one load and one compare.
 * Relaxed: the executors of a runtime with several VPs read it while a new one is being made
 * (which stores the value it already has). */
static inline int ursa__pts_sem_fast(const struct ursa_pts_sem *s) {
  return s->magic == __atomic_load_n(&ursa__pts_fast_magic, __ATOMIC_RELAXED);
}

/* One VP, a cooperative model: nothing runs concurrently, so a wait takes a unit or queues self
 * with plain stores (the library's version takes the semaphore's lock).  Laid out for the wait
 * that queues (it then returns through the epilogue with no taken branch). */
static inline int ursa__pts_sem_wait_fast(struct ursa_pts *self, struct ursa_pts_sem *s) {
  if (__builtin_expect(ursa__pts_sem_fast(s), 1)) {
    if (__builtin_expect(s->count > 0, 0)) {
      s->count--;
      self->result = 0;
      return 0;
    }
    __atomic_store_n(&self->state, (uint8_t)URSA_PTS_WAITING, __ATOMIC_RELAXED);
    ursa__pts_fifo_put(&s->head, &s->tail, self);
    return 1;
  }
  return ursa__pts_sem_wait_slow(self, s);
}

/* One VP, a cooperative model, a waiter of self's executor: it goes to the ready list's tail
 * (owner only). */
static inline int16_t ursa__pts_sem_post_from(struct ursa_pts *self, struct ursa_pts_sem *s) {
  struct ursa__pts_exec *e = self->exec;
  struct ursa_pts *w;
  if (__builtin_expect(ursa__pts_sem_fast(s) &&                 /* not fast: read nothing */
                       (w = s->head) != 0 && w->exec == e, 1)) {
    struct ursa__pts_runq *q = (struct ursa__pts_runq *)(void *)e;
    s->head = w->next;
    /* Its wait's result, its state and its flags (0 for a stackless thread, the only kind an
     * executor queues) in plain stores, which the compiler merges into one: nothing else runs
     * here (the relaxed atomic elsewhere is for several VPs, where this path is never taken). */
    w->result = 0;
    w->state = (uint8_t)URSA_PTS_READY;
    w->flags = 0;
    ursa__pts_fifo_put(&q->head, &q->tail, w);
    self->result = 0;                                           /* the post's own */
    return 0;
  }
  return ursa__pts_sem_post_slow(self, s);
}

#ifdef __cplusplus
}
#endif
#endif /* URSA_PT_SCHED_H */
