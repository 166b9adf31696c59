/*
 * waiter.h - the scheduler's part of the waiter interface (src/sync/waiter.h describes it, and
 * is what a layer above src/sync/ includes): the join of a call waiter; a thread of the layer
 * above waiting on that layer's own object (park / unpark); the names of its kinds of wait.
 */
#ifndef URSA_SCHED_WAITER_H
#define URSA_SCHED_WAITER_H

#include "../core/base.h"
#include "../core/waiter.h"

/* Exported from libursa.so (not hidden like the rest of src/): the optional layers that are
 * libraries of their own (libursa-pthread.so, the MPI layer's) call them too.  The header is not
 * installed: the interface is for ursa's own layers, versioned with the library, not an API. */
#define URSA__WAITER_API __attribute__((visibility("default")))

/* ursa_join (no result): 0 when the thread had finished (released here), 1 queued as its joiner
 * (woken when it finishes; then ursa__join_waiter_end must release it), -ESRCH, -EINVAL (detached
 * or already joined), -EDEADLK (the calling thread itself).  A cycle through the caller's own
 * waits is the caller's to find (joins by call waiters are not visible to ursa_join). */
URSA__WAITER_API int  ursa__join_waiter(ursa_thread_t h, struct ursa__waiter_call *c);
URSA__WAITER_API void ursa__join_waiter_end(struct ursa__waiter_call *c);

/* Whether the joiner of h is a call waiter for which match(c, arg) holds (under h's lock, so c is
 * valid during the call): the caller's own cycle check (a stackless thread joining h that h is
 * about to join).  False for a stale handle. */
URSA__WAITER_API bool ursa__joined_by(ursa_thread_t h, bool (*match)(struct ursa__waiter_call *c, const void *arg),
                                      const void *arg);

/* ---- a thread waits on an object of the layer above ----------------------------------------------
 * ursa__park blocks the calling ursa thread on obj, an object of the calling layer, until
 * ursa__unpark or the deadline (CLOCK_MONOTONIC ns, 0 for none).  The layer keeps the thread's
 * handle (ursa_self) where its waker finds it, and decides under its own lock `lock` (taken by
 * the caller when the runtime has several VPs; park releases it once the thread is BLOCKED, so a
 * waker that takes the lock after cannot miss it).  kind names the wait in the reports (below).
 * Returns the wake result: the unpark's res, or -ETIMEDOUT.
 * ursa__park_claim, with the same lock held: whether the caller may unpark t now (false when a
 * timed park's timer has taken the wake-up, or, with one VP, t is no longer blocked).
 * ursa__unpark wakes t with res; it may follow the claim after the lock is released. */
URSA__WAITER_API int  ursa__park(int kind, void *obj, ursa__spin_t *lock, uint64_t deadline);
URSA__WAITER_API bool ursa__park_claim(ursa_thread_t t, bool timed);
URSA__WAITER_API void ursa__unpark(ursa_thread_t t, int res);
/* The same by descriptor instead of handle, for the hottest hand-offs (the POSIX layer's mutex):
 * ursa__self_thread is the running ursa thread's descriptor (NULL outside an ursa thread), an
 * opaque token to the layer, which keeps it only while the thread is parked or holds one of its
 * objects (then the descriptor cannot be released), and never dereferences it.  They save the
 * handle's check and the cache line that holds the handle. */
URSA__WAITER_API struct ursa__thread *ursa__self_thread(void);
URSA__WAITER_API bool ursa__park_claim_thread(struct ursa__thread *t, bool timed);
URSA__WAITER_API void ursa__unpark_thread(struct ursa__thread *t, int res);

/* ---- a thread waits in a queue inside an object of the layer above ----------------------------------
 * For objects that hand themselves to the first waiter (the POSIX layer's mutexes): q is a struct
 * ursa__waitq inside the object (all-zero: empty), lock the object's lock word, held by the
 * caller when the runtime has several VPs (ursa__park's rule).  ursa__park_queued appends the
 * calling thread to q and blocks it until ursa__unpark_first hands it res, or until the deadline
 * (CLOCK_MONOTONIC ns, 0 for none): then its timer has removed it from q and it returns
 * -ETIMEDOUT.  ursa__unpark_first, with lock held: wakes the first thread of q with res (false
 * when q holds none that can still be woken).  These are the queue and the wake-up of ursa's
 * own semaphore: the thread's own waiter is queued, and no handle or record is looked up. */
URSA__WAITER_API int  ursa__park_queued(int kind, void *obj, struct ursa__waitq *q, ursa__spin_t *lock,
                                        uint64_t deadline);
URSA__WAITER_API bool ursa__unpark_first(struct ursa__waitq *q, int res);
/* The same, storing the woken thread's descriptor into *slot before that thread can run (a
 * mutex's owner word: the hand-over names the new owner, and the woken thread, with nothing left
 * to do after its park, returns straight to its caller).  *slot is untouched when none is woken.
 * False, touching nothing, when called outside a VP (a kernel thread that ursa did not make). */
URSA__WAITER_API bool ursa__unpark_first_to(struct ursa__waitq *q, int res, struct ursa__thread **slot);
/* One VP only: wakes t with res if it is still parked in q (not woken, not timed out), taking it
 * off q: whether it was (a cancel request ending a wait, say). */
URSA__WAITER_API bool ursa__unpark_queued(struct ursa__waitq *q, struct ursa__thread *t, int res);

/* A preemption hold, for a layer that takes a spin lock of its own and then calls ursa (a post, a
 * wake-up: calls that end in a preemption point under cp-ts and cp-ic): while the calling thread
 * holds one, a preemption is deferred as inside ursa_preempt_disable, so that no thread is
 * switched out holding the layer's lock (another thread of its VP spinning on the lock would then
 * wait for it forever).  Holds nest.  ursa__preempt_release ends one; with point, the last one
 * takes a preemption deferred meanwhile (after the lock is released); without it (the lock is
 * about to be released by a park), not.  Outside an ursa thread both do nothing. */
URSA__WAITER_API void ursa__preempt_hold(void);
URSA__WAITER_API void ursa__preempt_release(bool point);
/* The lock of an object of the layer above that ursa__park or ursa__park_queued releases: ursa's
 * spin lock, out of line for a layer that is a library of its own (in the debug build the word
 * names its holder, which park checks). */
URSA__WAITER_API void ursa__obj_lock(ursa__spin_t *l);
URSA__WAITER_API void ursa__obj_unlock(ursa__spin_t *l);

/* ---- the calling thread's record in the layer above ---------------------------------------------
 * One pointer per ursa thread, NULL when the thread is created, for the one layer that keeps a
 * record of its own per thread (the POSIX-threads layer: its struct upt_thread), which it finds on
 * every call: a load where ursa_getspecific checks a key and its generation.  ursa__layer_self
 * returns NULL outside an ursa thread; ursa__layer_set is called by the thread itself. */
URSA__WAITER_API void *ursa__layer_self(void);
URSA__WAITER_API void  ursa__layer_set(void *record);

/* Whether the calling thread's VP has another thread ready to run (a layer's own polling thread,
 * src/dist/, backs off only when it has nothing else to let run).  False outside an ursa thread. */
URSA__WAITER_API bool ursa__vp_others_ready(void);

/* ---- the child of a fork ---------------------------------------------------------------------------
 * One VP: every thread but the caller never runs again (src/sched/forget.c states the contract).
 * The number of threads forgotten, -EPERM outside an ursa thread, -EINVAL with several VPs. */
URSA__WAITER_API int ursa__forget_others(void);

/* The ursa thread that the calling kernel thread's VP is running at this instant, or NULL when it
 * runs none: the VP waits for work (its idle sleep, its I/O engine, a deadlock's wait), is in its
 * idle context or between two threads, or the caller is no VP.  Async-signal-safe: for a signal
 * handler on a VP's kernel thread (the POSIX layer tells "the handler interrupted this thread"
 * from "the VP was idle").  Reads the VP's own fields only; the answer holds until the handler
 * returns. */
URSA__WAITER_API struct ursa__thread *ursa__vp_running(void);

/* Whether t (a descriptor from ursa__self_thread, still live) is blocked in a wait now: a relaxed
 * snapshot of its state, for a layer that tells a waiting thread from a running or ready one. */
URSA__WAITER_API bool ursa__thread_blocked(const struct ursa__thread *t);

/* The calling ursa thread stops keeping the process alive: once main has called ursa_exit and
 * every other thread that is not such a daemon has finished, the process exits with status 0,
 * though the daemons still wait (a service thread: the POSIX layer's signal dispatcher, the I/O
 * engine's poller).  A daemon that finishes stops counting as one.  From the thread itself. */
URSA__WAITER_API void ursa__daemon(void);

/* ---- the reports ---------------------------------------------------------------------------------- */
/* A waitable kind, as the reports print it: "what" names the wait ("ursa_mutex_lock on mutex");
 * owner, when set, gives the thread that holds obj (the wait-for graph's edge). */
enum { URSA__WK_THREAD = 1,      /* wait_obj is the thread waited for (a join) */
       URSA__WK_NOOBJ = 2 };     /* no object to print (a sleep)               */
struct ursa__waitkind {
  const char           *what;
  struct ursa__thread *(*owner)(void *obj);
  unsigned              flags;
};
/* Registers kind k (an enum ursa__wait value): from ursa_init, before VPs 1..N-1 start, or (a
 * layer above: src/pt/) again and again with the same pointers, which readers then see either way. */
URSA__WAITER_API void ursa__waitkind_register(int kind, const struct ursa__waitkind *k);

/* Schedule exploration (src/explore/): whether it runs (fixed by ursa_init), and a scheduling
 * point for a layer's operation that does not otherwise switch (an uncontended lock, an unlock, a
 * post): the explorer may run another thread there.  A layer calls the point only while exploring;
 * from a kernel thread that is no ursa thread it does nothing. */
URSA__WAITER_API bool ursa__exploring(void);
URSA__WAITER_API void ursa__sched_point(void);

#endif /* URSA_SCHED_WAITER_H */
