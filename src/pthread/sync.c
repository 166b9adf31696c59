/*
 * sync.c - mutexes, condition variables, rwlocks, barriers, spin locks, once and unnamed
 * semaphores of the POSIX-threads layer, in the caller's memory and glibc's sizes.
 *
 * Each object overlays glibc's type with a struct of its own (checked below: it fits, and the
 * fields that glibc's static initializers set sit where glibc keeps them).  An all-zero object is
 * a ready one, so PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER
 * and the _NP mutex initializers (which set only __kind) need no init call, and there is no
 * first-use race between VPs.  Destroy writes a marker that later calls answer with EINVAL; a
 * semaphore carries a magic word (sem_t has no static initializer), so a sem_t the layer did not
 * initialize goes to glibc (process-shared and named semaphores are glibc's).
 *
 * Mutexes hand the lock over: an unlock with waiters makes the first waiter the owner before it
 * runs (FIFO, no barging, no lost wake-up).  The owner is recorded for every type; as in glibc, a
 * NORMAL or DEFAULT mutex may be unlocked by a thread that does not hold it (the blog's
 * thread-ring does), ERRORCHECK and RECURSIVE ones answer EPERM.  A NORMAL mutex relocked by its
 * owner deadlocks, as POSIX says (ursa's deadlock report names the thread).  Robust and
 * priority-protocol attributes answer ENOTSUP.
 */
#include "upt.h"

#include <limits.h>
#include <stddef.h>

#define UPT_ENTER(me)                                                                            \
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self()

#define UPT_DEAD 0x64656164                     /* "dead": destroyed */

/* ---- mutexes ---------------------------------------------------------------------------------- */

struct upt_mutex {               /* overlays pthread_mutex_t                                    */
  uint32_t spin;                 /* glibc __lock                                                */
  uint32_t depth;                /* glibc __count: RECURSIVE levels beyond the first            */
  struct ursa__thread *owner;    /* glibc __owner, __nusers: the holder's ursa thread (its
                                    token, upt.h), NULL when free                               */
  int kind;                      /* glibc __kind: PTHREAD_MUTEX_*; UPT_DEAD once destroyed       */
  int spare;
  struct ursa__waitq q;          /* waiting threads, FIFO: ursa's own queue (ursa__park_queued) */
};
_Static_assert(sizeof(struct upt_mutex) <= sizeof(pthread_mutex_t), "upt_mutex fits");
_Static_assert(offsetof(struct upt_mutex, kind) == offsetof(pthread_mutex_t, __data.__kind),
               "the kind sits where glibc's initializers put it");
#if defined(__x86_64__)
_Static_assert(sizeof(pthread_mutex_t) == 40 && sizeof(pthread_cond_t) == 48 &&
               sizeof(pthread_rwlock_t) == 56 && sizeof(pthread_barrier_t) == 32 &&
               sizeof(sem_t) == 32, "glibc's sizes on x86-64");
#endif

/* The type of m (PTHREAD_MUTEX_NORMAL .. ADAPTIVE_NP, the last one served as NORMAL), or -1 for a
 * destroyed mutex or one whose kind glibc would not make (robust, priority protocols, garbage).
 * glibc's elision and process-shared bits are ignored. */
static int mutex_type(const struct upt_mutex *m) {
  int k = m->kind;
  if (k & ~(3 | 128 | 256 | 512)) return -1;
  k &= 3;
  return k == PTHREAD_MUTEX_ADAPTIVE_NP ? PTHREAD_MUTEX_NORMAL : k;
}

/* The reports' name of a mutex wait, and its edge in the wait-for graph: the holder. */
static struct ursa__thread *mutex_owner(void *obj) {
  return __atomic_load_n(&((struct upt_mutex *)obj)->owner, __ATOMIC_RELAXED);
}
static const struct ursa__waitkind mutex_kind = { "pthread_mutex_lock on mutex", mutex_owner, 0 };

static const struct ursa__waitkind sem_kind = { "sem_wait on semaphore", NULL, 0 };

void upt_sync_boot(void) {
  ursa__waitkind_register(URSA__W_UPT_MUTEX, &mutex_kind);
  ursa__waitkind_register(URSA__W_UPT_SEM, &sem_kind);
}

/* Queues the calling thread on m and parks it until an unlock hands m over (0: the unlock has
 * made it the owner, mutex_release), or the deadline passes (ETIMEDOUT: its timer has taken it
 * off the queue).  With several VPs m->spin is held, and park releases it once the thread is
 * BLOCKED.  Without a deadline the park is the last call (a tail call into the switch: the woken
 * thread returns straight to the caller of pthread_mutex_lock, which keeps the return-address
 * predictor in step; see URSA__SWITCH_RETURN in src/sched/sched.h). */
static int mutex_park(struct upt_mutex *m, uint64_t deadline) {
  upt_spin_release_for_park();                  /* the spin lock's preemption hold (upt.h) */
  if (deadline == 0) return ursa__park_queued(URSA__W_UPT_MUTEX, m, &m->q, &m->spin, 0);
  return ursa__park_queued(URSA__W_UPT_MUTEX, m, &m->q, &m->spin, deadline) != 0 ? ETIMEDOUT : 0;
}

/* mutex_park once the program handles signals.  A signal does not end a mutex wait (POSIX: the
 * thread resumes waiting after the handler), so a sender must not leave it pending in a thread
 * that will block here until the mutex comes, nor miss the wait: in_mwait and sig_pending make a
 * Dekker pair (this store then load of the pending set, seq_cst; upt_sig_kill's or of the set then
 * load of in_mwait, seq_cst), so either this thread sees the signal and runs its handler before it
 * parks (then locks again: -1), or the sender sees in_mwait and hands the handler to the
 * dispatcher (signal.c, "stand-in"); the fetch-and on sig_pending decides which runs it, once.
 * m->spin is held (released here or by the park). */
static int mutex_park_signals(struct upt_thread *me, struct upt_mutex *m, uint64_t deadline) {
  int r;
  __atomic_store_n(&me->in_mwait, 1, __ATOMIC_SEQ_CST);
  if ((__atomic_load_n(&me->sig_pending, __ATOMIC_SEQ_CST) & ~me->sig_mask) != 0) {
    __atomic_store_n(&me->in_mwait, 0, __ATOMIC_RELAXED);
    upt_spin_unlock(&m->spin);
    upt_sig_deliver(me);
    return -1;
  }
  r = mutex_park(m, deadline);
  __atomic_store_n(&me->in_mwait, 0, __ATOMIC_RELAXED);
  return r;
}

static int mutex_lock(struct upt_thread *me, struct upt_mutex *m, int type, int mode, int clock,
                      const struct timespec *abs) {
  struct ursa__thread *o = NULL, *tok = me->tok;
  if (upt_solo) {                               /* nothing runs in parallel (upt.h, "solo") */
    if ((o = m->owner) == NULL) { m->owner = tok; return 0; }
  } else if (__atomic_compare_exchange_n(&m->owner, &o, tok, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED)) {
    return 0;                                   /* acquire: pairs with the release of unlock */
  }
  if (o == tok) {
    if (type == PTHREAD_MUTEX_RECURSIVE) {
      if (m->depth == UINT32_MAX) return EAGAIN;
      m->depth++;
      return 0;
    }
    /* trylock: EBUSY, "locked by any thread, including the current thread" (POSIX) */
    if (type == PTHREAD_MUTEX_ERRORCHECK) return mode == 1 ? EBUSY : EDEADLK;
  }
  if (mode == 1) return EBUSY;
  if (mode == 2) {
    int e = upt_check_deadline(clock, abs);
    if (e) return e;
  }
  upt_spin_lock(&m->spin);
  o = NULL;
  if (!upt_solo &&
      __atomic_compare_exchange_n(&m->owner, &o, tok, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    upt_spin_unlock(&m->spin);
    return 0;
  }
  if (upt_unlikely(__atomic_load_n(&upt_sig_on, __ATOMIC_RELAXED))) {
    int r = mutex_park_signals(me, m, mode == 2 ? upt_deadline_ns(clock, abs) : 0);
    if (r >= 0) return r;
    return mutex_lock(me, m, type, mode, clock, abs);   /* its handlers ran: again */
  }
  return mutex_park(m, mode == 2 ? upt_deadline_ns(clock, abs) : 0);
}

/* Passes m to its first waiter, or frees it.  With several VPs m->spin is held and released.
 * The hand-over writes the woken waiter into m->owner before that thread can run, and m->owner
 * is never NULL in between: no other locker barges in. */
static void mutex_release(struct upt_mutex *m) {
  if (m->q.head != NULL && ursa__unpark_first_to(&m->q, 0, &m->owner)) {
    upt_spin_unlock(&m->spin);
    return;
  }
  __atomic_store_n(&m->owner, NULL, __ATOMIC_RELEASE);   /* release: pairs with lock's acquire */
  upt_spin_unlock(&m->spin);
}

static int mutex_unlock(struct upt_thread *me, struct upt_mutex *m, int type) {
  struct ursa__thread *o = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
  if (type != PTHREAD_MUTEX_NORMAL) {
    if (o != me->tok) return EPERM;
    if (m->depth) { m->depth--; return 0; }
  } else if (o == NULL) {
    return 0;                                   /* glibc: unlocking a free NORMAL mutex is quiet */
  }
  upt_spin_lock(&m->spin);
  mutex_release(m);
  return 0;
}

int upt_mutex_lock_internal(struct upt_thread *me, pthread_mutex_t *pm, unsigned *depth) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type = mutex_type(m), e;
  if (type < 0) return EINVAL;
  e = mutex_lock(me, m, type, 0, CLOCK_REALTIME, NULL);
  if (e == 0 && type == PTHREAD_MUTEX_RECURSIVE) m->depth = *depth;
  return e;
}

/* Releases pm entirely for a condition wait; *depth keeps a RECURSIVE mutex's extra levels. */
int upt_mutex_unlock_internal(struct upt_thread *me, pthread_mutex_t *pm, unsigned *depth) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type = mutex_type(m);
  if (type < 0) return EINVAL;
  if (type != PTHREAD_MUTEX_NORMAL && __atomic_load_n(&m->owner, __ATOMIC_RELAXED) != me->tok)
    return EPERM;
  *depth = m->depth;
  m->depth = 0;
  return mutex_unlock(me, m, type);
}

UPT_EXPORT int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type = PTHREAD_MUTEX_NORMAL;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_init)(pm, attr);
  if (attr && REAL(pthread_mutexattr_gettype)(attr, &type) != 0) return EINVAL;
  __builtin_memset(pm, 0, sizeof *pm);
  m->kind = type;
  return 0;
}

UPT_EXPORT int pthread_mutex_destroy(pthread_mutex_t *pm) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_destroy)(pm);
  if (mutex_type(m) < 0) return EINVAL;
  upt_spin_lock(&m->spin);
  if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) || m->q.head) {
    upt_spin_unlock(&m->spin);
    return EBUSY;
  }
  m->kind = UPT_DEAD;
  upt_spin_unlock(&m->spin);
  return 0;
}

/* The solo fast paths of lock and unlock, for the default (NORMAL) type: the thread-ring's (not
 * while exploring, upt_solo == 2: the general paths have the scheduling points).  The
 * caller is an ursa thread (tok).  It is not ursa's own code, which calls no pthread_mutex_*
 * function (the test pthread_ursa_imports checks libursa.so's imports), so the return address
 * needs no test here.  (A sanitizer's runtime locks its own mutexes, not glibc's.) */
#define UPT_SOLO_NORMAL(m, tok)                                                                  \
  (upt_solo == 1 && (m)->kind == PTHREAD_MUTEX_NORMAL && ((tok) = ursa__self_thread()) != NULL)

/* The general lock, out of line so that the solo fast path below needs no stack frame; ra is the
 * return address of pthread_mutex_lock (ursa's own calls go to glibc). */
static __attribute__((noinline)) int mutex_lock_general(pthread_mutex_t *pm, void *ra) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  struct upt_thread *me = upt_from_ursa(ra) ? NULL : upt_self();
  int type;
  if (me == NULL) return REAL(pthread_mutex_lock)(pm);
  upt_sig_poll();
  UPT_POINT();                                  /* exploration: a scheduling point */
  if ((type = mutex_type(m)) < 0) return EINVAL;
  return mutex_lock(me, m, type, 0, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int pthread_mutex_lock(pthread_mutex_t *pm) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  struct ursa__thread *tok;
  if (UPT_SOLO_NORMAL(m, tok)) {
    if (m->owner == NULL) { m->owner = tok; return 0; }
    return mutex_park(m, 0);                    /* a tail call: see mutex_park */
  }
  return mutex_lock_general(pm, __builtin_return_address(0));
}

UPT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *pm) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_trylock)(pm);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if ((type = mutex_type(m)) < 0) return EINVAL;
  return mutex_lock(me, m, type, 1, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abs) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_timedlock)(pm, abs);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if ((type = mutex_type(m)) < 0) return EINVAL;
  return mutex_lock(me, m, type, 2, CLOCK_REALTIME, abs);
}

UPT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                       const struct timespec *abs) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  int type;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_clocklock)(pm, clock, abs);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if ((type = mutex_type(m)) < 0) return EINVAL;
  return mutex_lock(me, m, type, 2, clock, abs);
}

static __attribute__((noinline)) int mutex_unlock_general(pthread_mutex_t *pm, void *ra) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  struct upt_thread *me = upt_from_ursa(ra) ? NULL : upt_self();
  int type;
  if (me == NULL) return REAL(pthread_mutex_unlock)(pm);
  upt_sig_poll();
  UPT_POINT();                                  /* exploration: a scheduling point */
  if ((type = mutex_type(m)) < 0) return EINVAL;
  return mutex_unlock(me, m, type);
}

UPT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *pm) {
  struct upt_mutex *m = (struct upt_mutex *)pm;
  struct ursa__thread *tok;
  if (upt_solo == 1 && m->kind == PTHREAD_MUTEX_NORMAL) {
    /* A waiter in m's queue is an ursa thread parked by this layer, so m is the layer's and the
     * caller need not be looked up (ursa__unpark_first_to answers false off a VP).  One VP: a
     * queued waiter is a live one (a timed-out waiter's timer has taken it off the queue), so
     * the hand-over does not fail.  The thread-ring's path: no frame, no other call. */
    if (m->q.head != NULL && ursa__unpark_first_to(&m->q, 0, &m->owner)) return 0;
    if ((tok = ursa__self_thread()) != NULL) {
      m->owner = NULL;                          /* glibc: unlocking a free NORMAL mutex is quiet */
      return 0;
    }
  }
  return mutex_unlock_general(pm, __builtin_return_address(0));
}

UPT_EXPORT int pthread_mutex_consistent(pthread_mutex_t *pm) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_mutex_consistent)(pm);
  return EINVAL;                                /* no mutex of the layer is robust */
}

/* The attributes are glibc's; those the layer cannot honour are refused where they are set. */
UPT_EXPORT int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust) {
  if (robust == PTHREAD_MUTEX_ROBUST && !upt_from_ursa(__builtin_return_address(0)) && upt_self())
    return ENOTSUP;
  return REAL(pthread_mutexattr_setrobust)(a, robust);
}

UPT_EXPORT int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol) {
  if (protocol != PTHREAD_PRIO_NONE && !upt_from_ursa(__builtin_return_address(0)) && upt_self())
    return ENOTSUP;
  return REAL(pthread_mutexattr_setprotocol)(a, protocol);
}

UPT_EXPORT int pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int pshared) {
  if (pshared == PTHREAD_PROCESS_SHARED && !upt_from_ursa(__builtin_return_address(0)) && upt_self())
    return ENOTSUP;
  return REAL(pthread_mutexattr_setpshared)(a, pshared);
}

/* ---- condition variables ---------------------------------------------------------------------- */

struct upt_cond {                /* overlays pthread_cond_t; all zero: CLOCK_REALTIME, no waiters */
  uint32_t spin;
  int clock;                     /* pthread_condattr_setclock's clock                          */
  struct upt_queue q;
  int dead;                      /* UPT_DEAD once destroyed                                    */
};
_Static_assert(sizeof(struct upt_cond) <= sizeof(pthread_cond_t), "upt_cond fits");

UPT_EXPORT int pthread_cond_init(pthread_cond_t *pc, const pthread_condattr_t *attr) {
  struct upt_cond *c = (struct upt_cond *)pc;
  clockid_t clock = CLOCK_REALTIME;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_init)(pc, attr);
  if (attr && REAL(pthread_condattr_getclock)(attr, &clock) != 0) return EINVAL;
  __builtin_memset(pc, 0, sizeof *pc);
  c->clock = (int)clock;
  return 0;
}

UPT_EXPORT int pthread_cond_destroy(pthread_cond_t *pc) {
  struct upt_cond *c = (struct upt_cond *)pc;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_destroy)(pc);
  upt_spin_lock(&c->spin);
  if (c->dead == UPT_DEAD) { upt_spin_unlock(&c->spin); return EINVAL; }
  if (c->q.head) { upt_spin_unlock(&c->spin); return EBUSY; }
  c->dead = UPT_DEAD;
  upt_spin_unlock(&c->spin);
  return 0;
}

/* The three waits; a cancellation point: a cancelled waiter takes the mutex back, then runs its
 * cleanup handlers, and consumes no signal. */
static int cond_wait(struct upt_thread *me, struct upt_cond *c, pthread_mutex_t *pm, int clock,
                     const struct timespec *abs) {
  /* a signal for the thread ends the wait (its handler runs in upt_park): a spurious wake-up */
  struct upt_waiter w = { NULL, me, UPT_W_WAITING, 0, 0, me->tok, UPT_INTR_RUN, 0 };
  unsigned depth;
  int st, e;
  if (c->dead == UPT_DEAD) return EINVAL;
  if (abs && (e = upt_check_deadline(clock, abs)) != 0) return e;
  upt_spin_lock(&c->spin);
  upt_q_push(&c->q, &w);
  upt_spin_unlock(&c->spin);
  if ((e = upt_mutex_unlock_internal(me, pm, &depth)) != 0) {
    upt_spin_lock(&c->spin);
    upt_q_remove(&c->q, &w);
    upt_spin_unlock(&c->spin);
    return e;
  }
  st = upt_park(me, &w, clock, abs, 1);
  if (st != UPT_W_WOKEN) {
    upt_spin_lock(&c->spin);
    upt_q_remove(&c->q, &w);
    upt_spin_unlock(&c->spin);
  }
  (void)upt_mutex_lock_internal(me, pm, &depth);
  if (st == UPT_W_CANCELED) upt_cancel_now(me);
  return st == UPT_W_TIMEDOUT ? ETIMEDOUT : 0;
}

UPT_EXPORT int pthread_cond_wait(pthread_cond_t *pc, pthread_mutex_t *pm) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_wait)(pc, pm);
  return cond_wait(me, (struct upt_cond *)pc, pm, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int pthread_cond_timedwait(pthread_cond_t *pc, pthread_mutex_t *pm,
                                      const struct timespec *abs) {
  struct upt_cond *c = (struct upt_cond *)pc;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_timedwait)(pc, pm, abs);
  return cond_wait(me, c, pm, c->clock, abs);
}

UPT_EXPORT int pthread_cond_clockwait(pthread_cond_t *pc, pthread_mutex_t *pm, clockid_t clock,
                                      const struct timespec *abs) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_clockwait)(pc, pm, clock, abs);
  return cond_wait(me, (struct upt_cond *)pc, pm, clock, abs);
}

static int cond_wake(struct upt_cond *c, int all) {
  struct upt_waiter *w;
  if (c->dead == UPT_DEAD) return EINVAL;
  upt_spin_lock(&c->spin);
  while ((w = upt_q_pop(&c->q)) != NULL)
    if (upt_wake(w) && !all) break;
  upt_spin_unlock(&c->spin);
  return 0;
}

UPT_EXPORT int pthread_cond_signal(pthread_cond_t *pc) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_signal)(pc);
  upt_sig_poll();
  UPT_POINT();                                  /* exploration: a scheduling point */
  return cond_wake((struct upt_cond *)pc, 0);
}

UPT_EXPORT int pthread_cond_broadcast(pthread_cond_t *pc) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_cond_broadcast)(pc);
  upt_sig_poll();
  UPT_POINT();                                  /* exploration: a scheduling point */
  return cond_wake((struct upt_cond *)pc, 1);
}

/* ---- read-write locks ------------------------------------------------------------------------- */

/* glibc's default kind prefers readers (a reader gets the lock whenever no writer holds it, so a
 * thread may take a read lock twice); so does this one.  An unlock that frees the lock hands it to
 * the first waiter: a writer, or every waiting reader. */
struct upt_rwlock {              /* overlays pthread_rwlock_t; glibc's __flags (offset 48) kept  */
  uint32_t spin;
  int dead;
  uint32_t readers;              /* read holds                                                  */
  uint32_t spare;
  struct upt_thread *writer;     /* the write holder                                            */
  struct upt_queue q;            /* kind: UPT_RW_READ or UPT_RW_WRITE                            */
};
enum { UPT_RW_READ = 1, UPT_RW_WRITE = 2 };
_Static_assert(sizeof(struct upt_rwlock) <= 40 && sizeof(pthread_rwlock_t) >= 40,
               "upt_rwlock fits before glibc's __pad2 and __flags");

/* Hands a free lock to its first waiters.  Under the spin lock. */
static void rw_grant(struct upt_rwlock *l) {
  struct upt_waiter *w, **p;
  if (l->writer || l->readers) return;
  while ((w = l->q.head) != NULL && w->kind == UPT_RW_WRITE) {
    struct upt_thread *t = w->t;
    upt_q_pop(&l->q);
    if (upt_wake(w)) { l->writer = t; return; }
  }
  for (p = &l->q.head; (w = *p) != NULL;) {      /* every waiting reader */
    if (w->kind == UPT_RW_READ) {
      upt_q_remove(&l->q, w);
      if (upt_wake(w)) l->readers++;
    } else {
      p = &w->next;
    }
  }
}

static int rw_lock(struct upt_thread *me, struct upt_rwlock *l, int kind, int mode, int clock,
                   const struct timespec *abs) {
  /* a signal for the thread ends the wait: its handler runs (in upt_park), and it waits again */
  struct upt_waiter w = { NULL, me, UPT_W_WAITING, kind, 0, me->tok, UPT_INTR_RUN, 0 };
  int e, st;
  if (l->dead == UPT_DEAD) return EINVAL;
  if (mode == 2 && (e = upt_check_deadline(clock, abs)) != 0) return e;
again:
  upt_spin_lock(&l->spin);
  if (l->writer == me) { upt_spin_unlock(&l->spin); return mode == 1 ? EBUSY : EDEADLK; }
  if (kind == UPT_RW_READ ? l->writer == NULL : (l->writer == NULL && l->readers == 0)) {
    if (kind == UPT_RW_READ) {
      if (l->readers == UINT32_MAX) { upt_spin_unlock(&l->spin); return EAGAIN; }
      l->readers++;
    } else {
      l->writer = me;
    }
    upt_spin_unlock(&l->spin);
    return 0;
  }
  if (mode == 1) { upt_spin_unlock(&l->spin); return EBUSY; }
  w.state = UPT_W_WAITING;
  upt_q_push(&l->q, &w);
  upt_spin_unlock(&l->spin);
  if ((st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 0)) == UPT_W_WOKEN) return 0;
  upt_spin_lock(&l->spin);
  upt_q_remove(&l->q, &w);
  upt_spin_unlock(&l->spin);
  if (st == UPT_W_INTR) goto again;
  return ETIMEDOUT;
}

UPT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *pl, const pthread_rwlockattr_t *attr) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_rwlock_init)(pl, attr);
  __builtin_memset(pl, 0, sizeof *pl);
  return 0;
}

UPT_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *pl) {
  struct upt_rwlock *l = (struct upt_rwlock *)pl;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_rwlock_destroy)(pl);
  upt_spin_lock(&l->spin);
  if (l->dead == UPT_DEAD) { upt_spin_unlock(&l->spin); return EINVAL; }
  if (l->writer || l->readers || l->q.head) { upt_spin_unlock(&l->spin); return EBUSY; }
  l->dead = UPT_DEAD;
  upt_spin_unlock(&l->spin);
  return 0;
}

#define RW_FN(name, kind, mode, clockexpr, absexpr, params, args)                               \
  UPT_EXPORT int name params {                                                                   \
    UPT_ENTER(me);                                                                               \
    if (me == NULL) return REAL(name) args;                                                      \
    return rw_lock(me, (struct upt_rwlock *)pl, kind, mode, clockexpr, absexpr);                 \
  }
RW_FN(pthread_rwlock_rdlock, UPT_RW_READ, 0, CLOCK_REALTIME, NULL, (pthread_rwlock_t *pl), (pl))
RW_FN(pthread_rwlock_tryrdlock, UPT_RW_READ, 1, CLOCK_REALTIME, NULL, (pthread_rwlock_t *pl), (pl))
RW_FN(pthread_rwlock_wrlock, UPT_RW_WRITE, 0, CLOCK_REALTIME, NULL, (pthread_rwlock_t *pl), (pl))
RW_FN(pthread_rwlock_trywrlock, UPT_RW_WRITE, 1, CLOCK_REALTIME, NULL, (pthread_rwlock_t *pl), (pl))
RW_FN(pthread_rwlock_timedrdlock, UPT_RW_READ, 2, CLOCK_REALTIME, abs,
      (pthread_rwlock_t *pl, const struct timespec *abs), (pl, abs))
RW_FN(pthread_rwlock_timedwrlock, UPT_RW_WRITE, 2, CLOCK_REALTIME, abs,
      (pthread_rwlock_t *pl, const struct timespec *abs), (pl, abs))
RW_FN(pthread_rwlock_clockrdlock, UPT_RW_READ, 2, (int)clock, abs,
      (pthread_rwlock_t *pl, clockid_t clock, const struct timespec *abs), (pl, clock, abs))
RW_FN(pthread_rwlock_clockwrlock, UPT_RW_WRITE, 2, (int)clock, abs,
      (pthread_rwlock_t *pl, clockid_t clock, const struct timespec *abs), (pl, clock, abs))

UPT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *pl) {
  struct upt_rwlock *l = (struct upt_rwlock *)pl;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_rwlock_unlock)(pl);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (l->dead == UPT_DEAD) return EINVAL;
  upt_spin_lock(&l->spin);
  if (l->writer == me) l->writer = NULL;
  else if (l->writer == NULL && l->readers > 0) l->readers--;
  else { upt_spin_unlock(&l->spin); return EPERM; }
  rw_grant(l);
  upt_spin_unlock(&l->spin);
  return 0;
}

/* ---- barriers --------------------------------------------------------------------------------- */

#define UPT_BARRIER_MAGIC 0x62617272u              /* "barr" */
struct upt_barrier {             /* overlays pthread_barrier_t                                  */
  uint32_t spin;
  uint32_t count;
  uint32_t arrived;
  uint32_t magic;
  struct upt_queue q;
};
_Static_assert(sizeof(struct upt_barrier) <= sizeof(pthread_barrier_t), "upt_barrier fits");

UPT_EXPORT int pthread_barrier_init(pthread_barrier_t *pb, const pthread_barrierattr_t *attr,
                                    unsigned count) {
  struct upt_barrier *b = (struct upt_barrier *)pb;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_barrier_init)(pb, attr, count);
  if (count == 0) return EINVAL;
  __builtin_memset(pb, 0, sizeof *pb);
  b->count = count;
  b->magic = UPT_BARRIER_MAGIC;
  return 0;
}

UPT_EXPORT int pthread_barrier_destroy(pthread_barrier_t *pb) {
  struct upt_barrier *b = (struct upt_barrier *)pb;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_barrier_destroy)(pb);
  upt_spin_lock(&b->spin);
  if (b->magic != UPT_BARRIER_MAGIC) { upt_spin_unlock(&b->spin); return EINVAL; }
  if (b->arrived) { upt_spin_unlock(&b->spin); return EBUSY; }
  b->magic = UPT_DEAD;
  upt_spin_unlock(&b->spin);
  return 0;
}

UPT_EXPORT int pthread_barrier_wait(pthread_barrier_t *pb) {
  struct upt_barrier *b = (struct upt_barrier *)pb;
  struct upt_waiter w, *x;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_barrier_wait)(pb);
  upt_spin_lock(&b->spin);
  if (b->magic != UPT_BARRIER_MAGIC) { upt_spin_unlock(&b->spin); return EINVAL; }
  if (++b->arrived == b->count) {
    b->arrived = 0;
    while ((x = upt_q_pop(&b->q)) != NULL) upt_wake(x);
    upt_spin_unlock(&b->spin);
    return PTHREAD_BARRIER_SERIAL_THREAD;
  }
  w.next = NULL;
  w.t = me;
  w.state = UPT_W_WAITING;
  w.kind = 0;
  w.timed = 0;
  w.tok = me->tok;
  w.intr = UPT_INTR_NO;
  w.cancel = 0;
  upt_q_push(&b->q, &w);
  upt_spin_unlock(&b->spin);
  (void)upt_park(me, &w, CLOCK_REALTIME, NULL, 0);
  return 0;
}

/* ---- spin locks, once ------------------------------------------------------------------------- */

/* glibc's representation, shared with kernel threads that ursa did not make: an int whose free
 * value is what glibc's pthread_spin_init writes (1 on x86-64, where glibc's lock decrements it;
 * 0 elsewhere), taken by changing it from free to another value.  glibc's own lock and unlock
 * work on the same word.  An ursa thread yields while it spins: on one VP the holder can only run
 * if the spinner lets it. */
static int spin_free_value(void) {
  static int v = -1;
  int f = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (f < 0) {
    pthread_spinlock_t x;
    (void)pthread_spin_init(&x, PTHREAD_PROCESS_PRIVATE);
    f = (int)x;
    __atomic_store_n(&v, f, __ATOMIC_RELAXED);
  }
  return f;
}

static int spin_try(pthread_spinlock_t *l, int f) {
  int v = f;
  return __atomic_compare_exchange_n((int *)l, &v, f ^ 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

UPT_EXPORT int pthread_spin_lock(pthread_spinlock_t *l) {
  int n = 0, f;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_spin_lock)(l);
  f = spin_free_value();
  while (!spin_try(l, f)) {
    while (__atomic_load_n((int *)l, __ATOMIC_RELAXED) != f) {
      if (++n < 64) upt_cpu_relax();
      else { (void)ursa_yield(); n = 0; }
    }
  }
  return 0;
}

UPT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_spin_trylock)(l);
  return spin_try(l, spin_free_value()) ? 0 : EBUSY;
}

UPT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_spin_unlock)(l);
  __atomic_store_n((int *)l, spin_free_value(), __ATOMIC_RELEASE);   /* release: pairs with try */
  return 0;
}

/* pthread_once_t is an int.  glibc's encoding: bit 0 = running, bit 1 = done; the layer uses 1 for
 * running and 2 for done, so an object completed by glibc before the constructor reads as done.
 * A caller that finds it running yields until it is done (init routines are short).  POSIX: an
 * init routine cancelled (or ended by pthread_exit) leaves the object as if pthread_once had never
 * been called: a cleanup handler (this layer's own, glibc's C macros) sets it back to 0, and the
 * next caller runs its routine. */
static void once_cancelled(void *once) {
  __atomic_store_n((pthread_once_t *)once, 0, __ATOMIC_RELEASE);
}

UPT_EXPORT int pthread_once(pthread_once_t *once, void (*fn)(void)) {
  int v;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_once)(once, fn);
  for (;;) {
    v = __atomic_load_n(once, __ATOMIC_ACQUIRE);   /* acquire: pairs with the done store */
    if (v & 2) return 0;
    if (v == 0 && __atomic_compare_exchange_n(once, &v, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      pthread_cleanup_push(once_cancelled, once);
      fn();
      pthread_cleanup_pop(0);
      __atomic_store_n(once, 2, __ATOMIC_RELEASE);
      return 0;
    }
    (void)ursa_yield();
  }
}

/* ---- unnamed semaphores ----------------------------------------------------------------------- */

#define UPT_SEM_MAGIC 0x73656d61u                  /* "sema" */
struct upt_sem {                 /* overlays sem_t (glibc's own sem uses the first 16 bytes)      */
  uint32_t spin;
  uint32_t value;                /* atomic                                                     */
  union {                        /* waiters, FIFO; q.head / wq.head: non-NULL when there are any */
    struct upt_queue q;          /* several VPs: the layer's waiters (upt_park)                */
    struct ursa__waitq wq;       /* one VP: ursa's own queue (ursa__park_queued)               */
  };
  uint32_t magic;                /* UPT_SEM_MAGIC while initialized by the layer; UPT_DEAD after */
  uint32_t deferred;             /* atomic: units posted by signal handlers, not yet posted by the
                                    dispatcher (signal.c); taken by sem_take as the value is   */
};
_Static_assert(sizeof(struct upt_sem) <= sizeof(sem_t), "upt_sem fits");

/* 1 when s is the layer's, 0 when it is glibc's (never initialized by the layer), -1 when the
 * layer destroyed it. */
static int sem_mine(const struct upt_sem *s) {
  uint32_t m = __atomic_load_n(&s->magic, __ATOMIC_ACQUIRE);
  return m == UPT_SEM_MAGIC ? 1 : m == UPT_DEAD ? -1 : 0;
}

UPT_EXPORT int sem_init(sem_t *ps, int pshared, unsigned value) {
  struct upt_sem *s = (struct upt_sem *)ps;
  UPT_ENTER(me);
  if (me == NULL || pshared) return REAL(sem_init)(ps, pshared, value);
  if (value > SEM_VALUE_MAX) return upt_errno(EINVAL);
  __builtin_memset(ps, 0, sizeof *ps);
  s->value = value;
  __atomic_store_n(&s->magic, UPT_SEM_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

UPT_EXPORT int sem_destroy(sem_t *ps) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_destroy)(ps);
  if (mine < 0) return upt_errno(EINVAL);
  upt_spin_lock(&s->spin);
  if (s->q.head) { upt_spin_unlock(&s->spin); return upt_errno(EBUSY); }
  __atomic_store_n(&s->magic, UPT_DEAD, __ATOMIC_RELEASE);
  upt_spin_unlock(&s->spin);
  return 0;
}

/* Takes one unit a handler posted (deferred), if there is one: the dispatcher then posts one
 * fewer.  Atomic always: a handler adds to it on any kernel thread. */
static int sem_take_deferred(struct upt_sem *s) {
  uint32_t v = __atomic_load_n(&s->deferred, __ATOMIC_RELAXED);
  while (v > 0)   /* acquire: pairs with the handler's release */
    if (__atomic_compare_exchange_n(&s->deferred, &v, v - 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 1;
  return 0;
}

static int sem_take(struct upt_sem *s) {
  uint32_t v;
  if (upt_solo) {                               /* nothing runs in parallel (upt.h, "solo") */
    if (s->value == 0) return upt_unlikely(s->deferred != 0) && sem_take_deferred(s);
    s->value--;
    return 1;
  }
  v = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
  while (v > 0)
    if (__atomic_compare_exchange_n(&s->value, &v, v - 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 1;
  return upt_unlikely(__atomic_load_n(&s->deferred, __ATOMIC_RELAXED) != 0) && sem_take_deferred(s);
}

/* Solo: the calling thread waits in ursa's queue of s (a post hands it the unit: 0), until its
 * deadline (ETIMEDOUT) or a cancel request (upt_sem_cancel), which it acts on here. */
static int sem_block_solo(struct upt_thread *me, struct upt_sem *s, int clock,
                          const struct timespec *abs) {
  int rc, cancellable = me->cancel_state == PTHREAD_CANCEL_ENABLE;
  if (cancellable && me->cancel_pending) upt_cancel_now(me);
  if (upt_sig_ready(me)) upt_sig_deliver(me);   /* came before the wait: does not end it */
  if (cancellable || upt_sig_on) {
    me->cur_sem = s;
    if (upt_sig_on) me->wait_seq = ++upt_sig_seq;   /* (solo: the dispatcher runs on this VP) */
  }
  rc = ursa__park_queued(URSA__W_UPT_SEM, s, &s->wq, NULL, abs ? upt_deadline_ns(clock, abs) : 0);
  me->cur_sem = NULL;
  if (rc == 0) return 0;                        /* the poster handed its unit over */
  if (rc == -ECANCELED) upt_cancel_now(me);
  if (rc == -EINTR) { upt_sig_deliver(me); return upt_errno(EINTR); }
  return upt_errno(ETIMEDOUT);
}

/* Solo: ends t's semaphore wait with res, if it is in one.  1 when it did. */
int upt_sem_unpark(struct upt_thread *t, int res) {
  struct upt_sem *s = t->cur_sem;
  return s != NULL && ursa__unpark_queued(&s->wq, t->tok, res);
}

/* pthread_cancel (solo): ends t's semaphore wait, if it is in one and t's cancellation is
 * enabled (t set it before it blocked: stable while it waits).  1 when it did. */
int upt_sem_cancel(struct upt_thread *t) {
  return t->cancel_state == PTHREAD_CANCEL_ENABLE && upt_sem_unpark(t, -ECANCELED);
}

/* mode 0 waits, 2 has a deadline.  A cancellation point when it blocks. */
static int sem_block(struct upt_thread *me, struct upt_sem *s, int mode, int clock,
                     const struct timespec *abs) {
  struct upt_waiter w = { NULL, me, UPT_W_WAITING, 0, 0, me->tok, UPT_INTR_EINTR, 0 };
  int st, e;
  upt_sig_poll();
  if (sem_take(s)) return 0;
  if (mode == 2 && (e = upt_check_deadline(clock, abs)) != 0) return upt_errno(e);
  if (upt_solo) return sem_block_solo(me, s, clock, mode == 2 ? abs : NULL);
  upt_spin_lock(&s->spin);
  if (sem_take(s)) { upt_spin_unlock(&s->spin); return 0; }
  upt_q_push(&s->q, &w);
  upt_spin_unlock(&s->spin);
  st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 1);
  if (st == UPT_W_WOKEN) return 0;             /* the poster handed its unit over */
  upt_spin_lock(&s->spin);
  upt_q_remove(&s->q, &w);
  upt_spin_unlock(&s->spin);
  if (st == UPT_W_CANCELED) upt_cancel_now(me);
  return upt_errno(st == UPT_W_INTR ? EINTR : ETIMEDOUT);   /* INTR: its handlers have run */
}

UPT_EXPORT int sem_wait(sem_t *ps) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_wait)(ps);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (mine < 0) return upt_errno(EINVAL);
  return sem_block(me, s, 0, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int sem_timedwait(sem_t *ps, const struct timespec *abs) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_timedwait)(ps, abs);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (mine < 0) return upt_errno(EINVAL);
  return sem_block(me, s, 2, CLOCK_REALTIME, abs);
}

UPT_EXPORT int sem_clockwait(sem_t *ps, clockid_t clock, const struct timespec *abs) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_clockwait)(ps, clock, abs);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (mine < 0) return upt_errno(EINVAL);
  return sem_block(me, s, 2, (int)clock, abs);
}

/* sem_trywait in a signal handler: atomics only (the handler may have interrupted any code of the
 * layer, and with one VP the layer's own updates of the value are plain stores: a unit taken here
 * in the middle of one of them may be lost to it; see docs/GUIDE.md). */
static int sem_trywait_in_handler(struct upt_sem *s) {
  uint32_t v = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
  while (v > 0)
    if (__atomic_compare_exchange_n(&s->value, &v, v - 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 0;
  return sem_take_deferred(s) ? 0 : upt_errno(EAGAIN);
}

UPT_EXPORT int sem_trywait(sem_t *ps) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  if (upt_unlikely(upt_sig_depth) && (mine = sem_mine(s)) != 0)
    return mine < 0 ? upt_errno(EINVAL) : sem_trywait_in_handler(s);
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_trywait)(ps);
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (mine < 0) return upt_errno(EINVAL);
  return sem_take(s) ? 0 : upt_errno(EAGAIN);
}

/* sem_post in a signal handler (async-signal-safe, as POSIX requires): the unit is counted in
 * s->deferred, and the dispatcher (signal.c) posts it in normal context. */
static int sem_post_deferred(struct upt_sem *s) {
  uint32_t v = __atomic_load_n(&s->deferred, __ATOMIC_RELAXED);
  do {
    if ((uint64_t)v + __atomic_load_n(&s->value, __ATOMIC_RELAXED) >= SEM_VALUE_MAX)
      return upt_errno(EOVERFLOW);
    /* release: pairs with sem_take_deferred's and the dispatcher's acquire */
  } while (!__atomic_compare_exchange_n(&s->deferred, &v, v + 1, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  if (v == 0) upt_sig_pend_sem(s);              /* the first unit: s goes on the pending list */
  return 0;
}

static int sem_post_now(struct upt_sem *s);

/* The dispatcher: posts the units handlers deferred on s (in normal context). */
void upt_sem_flush(struct upt_sem *s) {
  uint32_t n = __atomic_exchange_n(&s->deferred, 0, __ATOMIC_ACQUIRE);
  if (sem_mine(s) != 1) return;                 /* destroyed meanwhile */
  while (n-- > 0) (void)sem_post_now(s);
}

UPT_EXPORT int sem_post(sem_t *ps) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  if (upt_unlikely(upt_sig_depth) && (mine = sem_mine(s)) != 0)
    return mine < 0 ? upt_errno(EINVAL) : sem_post_deferred(s);
  UPT_ENTER(me);
  if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_post)(ps);
  upt_sig_poll();
  UPT_POINT();                                  /* exploration: a scheduling point */
  if (mine < 0) return upt_errno(EINVAL);
  return sem_post_now(s);
}

static int sem_post_now(struct upt_sem *s) {
  struct upt_waiter *w;
  if (upt_solo) {                               /* the unit goes to the first waiter */
    if (s->wq.head != NULL && ursa__unpark_first(&s->wq, 0)) return 0;
  } else {
    upt_spin_lock(&s->spin);
    while ((w = upt_q_pop(&s->q)) != NULL)
      if (upt_wake(w)) { upt_spin_unlock(&s->spin); return 0; }   /* the unit goes to w */
  }
  if (__atomic_load_n(&s->value, __ATOMIC_RELAXED) >= SEM_VALUE_MAX) {
    upt_spin_unlock(&s->spin);
    return upt_errno(EOVERFLOW);
  }
  if (upt_solo) s->value++;
  else __atomic_add_fetch(&s->value, 1, __ATOMIC_RELEASE);   /* release: pairs with sem_take */
  upt_spin_unlock(&s->spin);
  return 0;
}

UPT_EXPORT int sem_getvalue(sem_t *ps, int *value) {
  struct upt_sem *s = (struct upt_sem *)ps;
  int mine;
  if (upt_unlikely(upt_sig_depth) && (mine = sem_mine(s)) != 0) {
    if (mine < 0) return upt_errno(EINVAL);
  } else {
    UPT_ENTER(me);
    if (me == NULL || (mine = sem_mine(s)) == 0) return REAL(sem_getvalue)(ps, value);
    if (mine < 0) return upt_errno(EINVAL);
  }
  /* the units handlers posted count, though the dispatcher has not posted them yet */
  *value = (int)(__atomic_load_n(&s->value, __ATOMIC_RELAXED) +
                 __atomic_load_n(&s->deferred, __ATOMIC_RELAXED));
  return 0;
}
