/*
 * upt.h - private declarations of libursa-pthread, the POSIX-threads layer (issue #17).
 *
 * The layer uses ursa's public API (include/ursa.h) and the waiter interface (src/sched/waiter.h:
 * park / unpark, the thread's record slot), as every optional layer may (scripts/check-layers.sh).
 * See boot.c for the design: which calls run on ursa and which go to glibc, and why.
 *
 * Vocabulary
 *   record    struct upt_thread: what a pthread_t points to for a thread on ursa.  Records are
 *             never returned to malloc (a free list reuses them), so reading the magic word of a
 *             stale pthread_t is safe and answers ESRCH.
 *   waiter    struct upt_waiter: one blocked thread in one object's queue, on the waiter's stack.
 *             Every wait of the layer parks the thread on its record's ursa semaphore (park); the
 *             waker, a timeout and a cancel request race for the waiter's state by compare-and-
 *             swap, so exactly one of them decides how the wait ends.
 *   spin      a word lock inside each object.  It is held for a few instructions, never across a
 *             switch (ursa_sem_post only makes a thread ready; cp-ts never preempts code of a
 *             shared library), so it is contended only between VPs running in parallel.
 *   solo      the runtime has one VP (upt_solo, fixed at boot).  Then the layer's code never runs
 *             in parallel with itself and is never preempted (above), so spin locks are skipped,
 *             compare-and-swaps are plain loads and stores, and a wait parks the thread with
 *             ursa__park instead of its record's semaphore: the POSIX thread-ring then costs
 *             about what ursa's own semaphore ring does (issue #17's target).  With several VPs
 *             every one of these is the atomic operation it names.
 */
#ifndef URSA_PTHREAD_UPT_H
#define URSA_PTHREAD_UPT_H

#define _GNU_SOURCE
#include "ursa.h"
#include "../sched/waiter.h"        /* the waiter interface: all this layer uses of ursa's inside */
#include "../io/waiter.h"           /* its I/O part: a readiness wait that pthread_cancel ends  */

#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdint.h>
#include <time.h>
#include <unwind.h>

#define UPT_EXPORT __attribute__((visibility("default")))
#define upt_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- the functions of glibc the layer forwards to (boot.c) --------------------------------- */

/* Every glibc function that the layer replaces and may forward to: X(name). */
#define UPT_REALS(X)                                                                             \
  X(pthread_create) X(pthread_join) X(pthread_tryjoin_np) X(pthread_timedjoin_np)                \
  X(pthread_clockjoin_np) X(pthread_detach) X(pthread_exit) X(pthread_self)                      \
  X(pthread_once) X(pthread_getattr_np) X(pthread_setname_np) X(pthread_getname_np)              \
  X(pthread_key_create) X(pthread_key_delete) X(pthread_getspecific) X(pthread_setspecific)      \
  X(pthread_cancel) X(pthread_setcancelstate) X(pthread_setcanceltype) X(pthread_testcancel)     \
  X(__pthread_register_cancel) X(__pthread_unregister_cancel) X(__pthread_unwind_next)           \
  X(pthread_kill) X(pthread_getschedparam) X(pthread_setschedparam) X(pthread_setschedprio)      \
  X(pthread_getaffinity_np) X(pthread_setaffinity_np) X(pthread_getcpuclockid)                   \
  X(pthread_mutex_init) X(pthread_mutex_destroy) X(pthread_mutex_lock) X(pthread_mutex_trylock)  \
  X(pthread_mutex_timedlock) X(pthread_mutex_clocklock) X(pthread_mutex_unlock)                  \
  X(pthread_mutex_consistent) X(pthread_mutexattr_setrobust) X(pthread_mutexattr_setprotocol)    \
  X(pthread_mutexattr_setpshared)                                                                \
  X(pthread_cond_init) X(pthread_cond_destroy) X(pthread_cond_wait) X(pthread_cond_timedwait)    \
  X(pthread_cond_clockwait) X(pthread_cond_signal) X(pthread_cond_broadcast)                     \
  X(pthread_rwlock_init) X(pthread_rwlock_destroy) X(pthread_rwlock_rdlock)                      \
  X(pthread_rwlock_tryrdlock) X(pthread_rwlock_timedrdlock) X(pthread_rwlock_clockrdlock)        \
  X(pthread_rwlock_wrlock) X(pthread_rwlock_trywrlock) X(pthread_rwlock_timedwrlock)             \
  X(pthread_rwlock_clockwrlock) X(pthread_rwlock_unlock)                                         \
  X(pthread_barrier_init) X(pthread_barrier_destroy) X(pthread_barrier_wait)                     \
  X(pthread_spin_lock) X(pthread_spin_trylock) X(pthread_spin_unlock)                            \
  X(sem_init) X(sem_destroy) X(sem_wait) X(sem_trywait) X(sem_timedwait) X(sem_clockwait)        \
  X(sem_post) X(sem_getvalue)                                                                    \
  X(sched_yield) X(sleep) X(usleep) X(nanosleep) X(clock_nanosleep)             \
  X(pthread_attr_init) X(pthread_attr_destroy) X(pthread_attr_getstacksize)                      \
  X(pthread_attr_setstacksize) X(pthread_attr_getdetachstate) X(pthread_attr_setdetachstate)     \
  X(pthread_attr_setstack) X(pthread_attr_getguardsize) X(pthread_attr_setguardsize)             \
  X(pthread_attr_getstackaddr) X(pthread_mutexattr_gettype) X(pthread_condattr_getclock)        \
  X(pthread_attr_getinheritsched) X(pthread_attr_getschedpolicy) X(pthread_attr_getschedparam)   \
  X(pthread_attr_setschedpolicy) X(pthread_attr_setschedparam)                                   \
  X(read) X(write) X(readv) X(writev) X(recv) X(send) X(recvfrom) X(sendto) X(recvmsg)          \
  X(sendmsg) X(accept) X(accept4) X(connect) X(poll) X(ppoll) X(select) X(pselect)               \
  X(epoll_wait) X(epoll_pwait) X(close) X(dup2) X(dup3) X(socket) X(socketpair) X(pipe) X(pipe2) \
  X(setsockopt)                                                                                  \
  X(sigaction) X(signal) X(pthread_sigmask) X(sigprocmask) X(sigpending) X(raise)

#define UPT_REAL_ENUM(name) UPT_R_##name,
enum { UPT_REALS(UPT_REAL_ENUM) UPT_R_COUNT };
#undef UPT_REAL_ENUM

/* glibc's function `name`, found with dlsym(RTLD_NEXT) at its first use. */
void *upt_real(int index, const char *name);
#define REAL(name) ((__typeof__(&name))upt_real(UPT_R_##name, #name))

/* Nonzero when the return address ra lies in libursa's code, or in a sanitizer's runtime: ursa's
 * own calls of POSIX functions (its VPs' kernel threads, its idle sleep, its spin back-off) and
 * the runtime's must reach glibc.  The bounds are written once by the constructor, before any
 * other thread exists. */
extern uintptr_t upt_ursa_lo, upt_ursa_hi;
#define UPT_RT_MAX 8
struct upt_range { uintptr_t lo, hi; };
extern struct upt_range upt_rt[UPT_RT_MAX];   /* a sanitizer runtime's code (boot.c) */
extern int upt_rt_n;
/* Only libursa.so's code (not the sanitizers'): a sanitizer's sigaction interceptor calls the
 * layer's sigaction on behalf of the program. */
static inline int upt_from_libursa(const void *ra) {
  return (uintptr_t)ra - upt_ursa_lo < upt_ursa_hi - upt_ursa_lo;
}
static inline int upt_from_ursa(const void *ra) {
  int i;
  if ((uintptr_t)ra - upt_ursa_lo < upt_ursa_hi - upt_ursa_lo) return 1;
  for (i = 0; i < upt_rt_n; i++)
    if ((uintptr_t)ra - upt_rt[i].lo < upt_rt[i].hi - upt_rt[i].lo) return 1;
  return 0;
}

/* One VP (see "solo" above): 1, or 2 while exploring (one VP too, but the mutex's inline fast
 * paths are left to the general ones, which have the scheduling points); 0 for several VPs.
 * Written once by the constructor. */
extern int upt_solo;
/* Schedule exploration runs (ursa__exploring; written once by the constructor, which then sets
 * upt_solo to 2, so the solo fast paths keep their code): the calls that do not otherwise switch
 * (a lock taken at once, an unlock, a signal, a post, a wait that takes a unit) start with a
 * scheduling point (ursa__sched_point), where the explorer may run another thread first. */
extern int upt_explore;
#define UPT_POINT()                                                                             \
  do {                                                                                          \
    if (__builtin_expect(upt_explore, 0)) ursa__sched_point();                                  \
  } while (0)

/* ---- records, waiters, spin locks ---------------------------------------------------------- */

enum { UPT_W_WAITING, UPT_W_WOKEN, UPT_W_TIMEDOUT, UPT_W_CANCELED,
       UPT_W_INTR };             /* a signal for the thread (signal.c) ended the wait            */
/* How a signal for the waiting thread treats a wait (upt_waiter.intr): not at all (it stays
 * pending until the thread's next wait or call), ends it with EINTR (sleeps, semaphore waits), or
 * ends it for the handler to run, after which the wait goes on (condition waits, whose caller
 * returns 0 as a spurious wake-up; rwlock waits, which wait again). */
enum { UPT_INTR_NO, UPT_INTR_EINTR, UPT_INTR_RUN };

struct upt_thread;
struct upt_waiter {
  struct upt_waiter *next;       /* in the object's queue                                   */
  struct upt_thread *t;          /* the waiting thread                                      */
  int state;                     /* UPT_W_*; atomic: the first CAS from WAITING decides      */
  int kind;                      /* rwlocks: UPT_RW_READ or UPT_RW_WRITE                     */
  int timed;                     /* the park has a deadline (set by upt_park)                */
  struct ursa__thread *tok;      /* the waiting ursa thread (t->tok; t is NULL for a thread
                                    that waits in the mutex fast path without a record)      */
  int intr;                      /* UPT_INTR_*: what a signal for the thread does to the wait */
  int cancel;                    /* set by upt_park: a cancel request may end this wait        */
};

struct upt_queue { struct upt_waiter *head, *tail; };

#define UPT_KEY_BLOCK   32
#define UPT_KEY_BLOCKS  (PTHREAD_KEYS_MAX / UPT_KEY_BLOCK)
struct upt_kv { void *value; uint32_t seq; };

#define UPT_MAGIC       0x75707472u      /* "uptr": a record in use                            */
#define UPT_MAGIC_FREE  0x66726565u      /* "free": a record on the free list                  */

struct upt_thread {
  uint32_t magic;                /* UPT_MAGIC while in use                                   */
  uint32_t lock;                 /* spin: state, joiner, cur_wait, detached                  */
  ursa_sem_t park;               /* every wait of this thread blocks here (several VPs)      */
  struct ursa__thread *tok;      /* the ursa thread it runs on (ursa__self_thread): a token
                                    for park / unpark and a mutex's owner, never dereferenced */
  int finished;                  /* the thread has run its destructors (under lock)          */
  int detached;
  struct upt_waiter *joiner;     /* the thread blocked in pthread_join on this one           */
  struct upt_waiter *cur_wait;   /* a cancellable wait in progress (under lock)              */
  struct upt_sem *cur_sem;       /* solo: the semaphore of a cancellable sem_wait in progress */
  void *io_wait;                 /* the record of a cancellable I/O wait in progress (under
                                    lock; src/io/waiter.h's slot, set and cleared by libursa)  */
  void *result;
  void *(*fn)(void *);
  void *arg;
  int cancel_pending;            /* atomic: pthread_cancel was called                        */
  int cancel_state;              /* PTHREAD_CANCEL_ENABLE / DISABLE (own thread only)         */
  int cancel_type;               /* stored; asynchronous runs as deferred                    */
  int adopted;                   /* an ursa thread not made by pthread_create (main too)     */
  __pthread_unwind_buf_t *cleanup;   /* innermost pthread_cleanup_push buffer (C macros; its
                                        __pad[0]: the next one, __pad[1]: the pushing frame's
                                        stack pointer, which the forced unwind compares)     */
  struct _Unwind_Exception exc;  /* the forced unwind of cancellation and pthread_exit       */
  struct upt_kv *kv[UPT_KEY_BLOCKS]; /* key values, a block allocated at its first use       */
  size_t stacksize, guardsize;
  void *stackaddr;               /* as given by pthread_attr_setstack (not used: see boot.c)  */
  int policy;
  struct sched_param param;
  char name[16];
  struct upt_thread *free_next;
  uint64_t sig_pending;          /* atomic: signals (bit sig-1) for this thread (signal.c)       */
  uint64_t sig_mask;             /* its mask (bit sig-1); written by the thread itself          */
  uint64_t wait_seq;             /* when its interruptible wait began (upt_sig_seq), under lock */
  int in_mwait;                  /* atomic: in a mutex wait (signals on), which a signal does not
                                    end: a sender hands the handler to the dispatcher (sync.c) */
};

/* The calling thread's record, or NULL when the caller is not an ursa thread (a kernel thread
 * ursa did not make, a VP outside its threads, the child of a fork without the runtime).  The
 * record sits in the ursa thread's layer slot from its first call of the layer on. */
struct upt_thread *upt_self_slow(void);
static inline struct upt_thread *upt_self(void) {
  struct upt_thread *t = (struct upt_thread *)ursa__layer_self();
  return __builtin_expect(t != NULL, 1) ? t : upt_self_slow();
}
/* The record t names, or NULL when t is not a live record of this layer. */
struct upt_thread *upt_record(pthread_t t);

static inline void upt_cpu_relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* The objects' spin locks: ursa's own (ursa__obj_lock), which park releases; none when solo. */
/* Held, they hold off preemption (ursa__preempt_hold, waiter.h): the layer posts and wakes under
 * them, and a post is a preemption point under cp-ts; a holder switched out there left a thread of
 * its VP spinning on the lock for ever (the Open POSIX Test Suite's pthread_cond_broadcast/4-2 and
 * its family hung so at 2 VPs under cp-ts).  A park that releases the lock ends the hold first
 * (upt_spin_release_for_park). */
static inline void upt_spin_lock(uint32_t *l) {
  if (!upt_solo) { ursa__preempt_hold(); ursa__obj_lock(l); }
}
static inline void upt_spin_unlock(uint32_t *l) {
  if (!upt_solo) { ursa__obj_unlock(l); ursa__preempt_release(true); }
}
/* Before a park that releases l (held with upt_spin_lock): the hold ends, without a preemption
 * point (the lock is still held; the park switches soon enough). */
static inline void upt_spin_release_for_park(void) {
  if (!upt_solo) ursa__preempt_release(false);
}

static inline void upt_q_push(struct upt_queue *q, struct upt_waiter *w) {
  w->next = NULL;
  if (q->tail) q->tail->next = w; else q->head = w;
  q->tail = w;
}
static inline struct upt_waiter *upt_q_pop(struct upt_queue *q) {
  struct upt_waiter *w = q->head;
  if (w) { q->head = w->next; if (!q->head) q->tail = NULL; }
  return w;
}
void upt_q_remove(struct upt_queue *q, struct upt_waiter *w);

/* Wakes w if it still waits: 1 when it did (w's thread will run), 0 when a timeout or a cancel
 * request had decided w's wait already.  Called under the lock of w's queue. */
int upt_wake(struct upt_waiter *w);

/* Blocks me until w is woken (UPT_W_WOKEN), abs passes on clock (UPT_W_TIMEDOUT; abs NULL: no
 * deadline) or, when cancellable and me's cancellation is enabled, a cancel request arrives
 * (UPT_W_CANCELED).  For the last two the caller removes w from its queue.  abs is valid. */
int upt_park(struct upt_thread *me, struct upt_waiter *w, int clock, const struct timespec *abs,
             int cancellable);

/* Solo: ends t's semaphore wait with a cancel request, if t is in one (sync.c).  1 when it did. */
struct upt_sem;
int upt_sem_cancel(struct upt_thread *t);
/* Solo: ends t's semaphore wait with res (a signal: -EINTR), if it is in one.  1 when it did. */
int upt_sem_unpark(struct upt_thread *t, int res);

/* Acts on a cancel request: runs the cleanup handlers and ends the thread.  Does not return. */
void upt_cancel_now(struct upt_thread *me) __attribute__((noreturn));
/* A cancellation point: acts on a pending request when cancellation is enabled. */
void upt_testcancel(struct upt_thread *me);

/* The deadline abs on clock (checked by upt_check_deadline) as ursa__park takes it: CLOCK_MONOTONIC
 * nanoseconds, never 0 (which means none); one already passed is 1. */
uint64_t upt_deadline_ns(int clock, const struct timespec *abs);

/* Registers the reports' names of the objects' waits (sync.c); from upt_boot_threads. */
void upt_sync_boot(void);

/* 0, or EINVAL for a clock ursa cannot wait on or a tv_nsec outside [0, 1e9). */
int upt_check_deadline(int clock, const struct timespec *abs);

/* Sets errno to e in a function of its own (errno's address must not be cached across a switch,
 * docs/GUIDE.md) and returns -1. */
int upt_errno(int e);

/* Mutex operations for the condition variables (sync.c). */
int upt_mutex_lock_internal(struct upt_thread *me, pthread_mutex_t *pm, unsigned *depth);
int upt_mutex_unlock_internal(struct upt_thread *me, pthread_mutex_t *pm, unsigned *depth);

/* The child of a fork at 1 VP (boot.c's fork handler): every thread but the one that forked is
 * gone (ursa__forget_others).  upt_forked is set there, and from then on a solo waker asks ursa
 * whether a waiter's thread can still be woken (a gone one cannot: the wake goes to the next
 * waiter).  upt_forget_records marks every record but me's as no longer in use (a stale
 * pthread_t: ESRCH), without reusing them. */
extern int upt_forked;
void upt_forget_records(struct upt_thread *me);

/* ---- signals (signal.c) --------------------------------------------------------------------- */

/* This kernel thread runs a signal handler of the program (the trampoline's count): sem_post,
 * sem_trywait and sem_getvalue then touch no lock. */
extern __thread int upt_sig_depth __attribute__((tls_model("initial-exec")));
/* Set (once, never cleared) when the program installed its first handler: from then on the
 * interruptible waits register themselves (cur_wait, cur_sem) even with cancellation disabled. */
extern int upt_sig_on;
extern uint64_t upt_sig_seq;     /* stamps wait_seq (under the waiter's lock; relaxed atomic) */
/* Runs me's pending signals that it does not block, in normal context. */
void upt_sig_deliver(struct upt_thread *me);
static inline int upt_sig_ready(const struct upt_thread *me) {
  return upt_unlikely((__atomic_load_n(&me->sig_pending, __ATOMIC_RELAXED) & ~me->sig_mask) != 0);
}
/* Ends t's wait for the signal(s) of `sigs` (bits) if a signal may end it (thread.c): 1 when it
 * did, 0 when t is in no wait of the layer (it runs, is ready, or waits in a mutex) or has taken
 * those signals already, -1 when it waits where a signal does not end the wait (a barrier, a
 * join). */
int upt_sig_interrupt(struct upt_thread *t, uint64_t sigs);
/* Ends one interruptible wait for sig that arrived while no thread ran (main first, then the
 * longest waiting; not a thread that blocks sig), marking sig pending there: 1 when it did. */
int upt_sig_interrupt_one(int sig);
int upt_sig_handled(int sig);
/* Deferred posts or undelivered signals wait (set by handlers; atomic). */
extern int upt_sig_work_flag;
void upt_sig_work(void);
static inline void upt_sig_poll(void) {
  if (upt_unlikely(__atomic_load_n(&upt_sig_work_flag, __ATOMIC_RELAXED))) upt_sig_work();
}
/* Whether some live thread does not block sig. */
int upt_sig_someone_takes(int sig);
int upt_sig_self(struct upt_thread *me, int sig);
int upt_sig_kill(struct upt_thread *me, struct upt_thread *t, int sig);
/* A semaphore with posts deferred by handlers (sync.c): queued for the dispatcher, and flushed. */
void upt_sig_pend_sem(struct upt_sem *s);
void upt_sem_flush(struct upt_sem *s);

/* boot.c sets upt_booted once ursa_init succeeded and thread.c's upt_boot_threads ran. */
extern int upt_booted;
void upt_boot_threads(void);

#endif /* URSA_PTHREAD_UPT_H */
