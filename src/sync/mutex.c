/*
 * mutex.c - mutexes (normal, error-checking, recursive) and condition variables.
 *
 * Mutex protocol: ownership passes directly from the unlocker to the first waiter (FIFO), which
 * wakes up owning the mutex; a lock never has to retry.  Every type records its owner, so
 * unlocking a mutex the caller does not hold is -EPERM for all types (stricter than POSIX for
 * NORMAL, where it is undefined).  A NORMAL mutex relocked by its owner blocks for good, as POSIX
 * requires; the deadlock report then names the mutex.  The owner is known by its descriptor and
 * its handle (owner_is): a thread that ended holding the mutex leaves it held, and a later thread
 * that got its descriptor (the address) has another handle, so it does not own the mutex.  A
 * RECURSIVE mutex's owner that try-locks it again counts one more lock, as POSIX says.
 *
 * Condition variable protocol: wait queues the caller on the condition, releases the mutex fully
 * (a recursive count is saved), blocks, and relocks before returning, also after a timeout.
 * signal wakes the first waiter, broadcast all, in FIFO order.
 * Executed only by ursa threads.
 */
#include "sync.h"

#define URSA__MUTEX_MAGIC 0x4d545831u
#define URSA__COND_MAGIC  0x434f4e31u

struct ursa__mutex {
  uint32_t             magic;
  uint32_t             type;
  uint32_t             count;               /* extra recursive locks by the owner */
  struct ursa__thread *owner;               /* NULL: free                          */
  ursa_thread_t        owner_h;             /* owner's handle: its identity        */
  struct ursa__waitq   q;
  ursa__spin_t         lock;                /* several VPs: guards all of the above */
};
URSA__STATIC_ASSERT_FITS(struct ursa__mutex, ursa_mutex_t);

struct ursa__cond {
  uint32_t           magic;
  ursa__spin_t       lock;                  /* several VPs: guards q */
  struct ursa__waitq q;
};
URSA__STATIC_ASSERT_FITS(struct ursa__cond, ursa_cond_t);

static inline bool owner_is(const struct ursa__mutex *x, const struct ursa__thread *t) {
  return x->owner == t && x->owner_h == t->handle;
}
/* Written under x's lock; read without it by cond_wait's ownership check and the reports: relaxed
 * atomic stores (plain moves), paired with those relaxed loads. */
static inline void owner_set(struct ursa__mutex *x, struct ursa__thread *t) {
  __atomic_store_n(&x->owner, t, __ATOMIC_RELAXED);
  __atomic_store_n(&x->owner_h, t ? t->handle : NULL, __ATOMIC_RELAXED);
}

static struct ursa__mutex *mutex_get(ursa_mutex_t *m) {
  struct ursa__mutex *x = (struct ursa__mutex *)m;
  if (x == NULL || ursa__obj_check(&x->magic, URSA__MUTEX_MAGIC, true) != 0) return NULL;
  return x;
}

int ursa_mutex_init(ursa_mutex_t *m, int type) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__mutex *x = (struct ursa__mutex *)m;
  if (x == NULL || type < URSA_MUTEX_NORMAL || type > URSA_MUTEX_RECURSIVE) return -EINVAL;
  x->magic = URSA__MUTEX_MAGIC;
  x->type = (uint32_t)type;
  x->count = 0;
  owner_set(x, NULL);
  x->q.head = x->q.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_mutex_destroy(ursa_mutex_t *m) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__mutex *x = mutex_get(m);
  if (x == NULL) return -EINVAL;
  ursa__olock(ursa__tls_vp, &x->lock);
  if (x->owner || !ursa__q_empty(&x->q)) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EBUSY; }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

/* try: fail with -EBUSY instead of blocking; deadline: 0 for none. */
static int mutex_lock(struct ursa__mutex *x, struct ursa__vp *vp, bool try, uint64_t deadline) {
  struct ursa__thread *cur = vp->cur;
  int r = 0;
  ursa__olock(vp, &x->lock);
  if (ursa_likely(x->owner == NULL)) {
    owner_set(x, cur);
    goto out;
  }
  if (owner_is(x, cur)) {
    if (x->type == URSA_MUTEX_RECURSIVE) {
      if (x->count == UINT32_MAX) r = -EAGAIN;
      else x->count++;
      goto out;
    }
    if (x->type == URSA_MUTEX_ERRORCHECK && !try) { r = -EDEADLK; goto out; }
  }
  if (try) { r = -EBUSY; goto out; }                   /* held, also by the caller (POSIX) */
  ursa__q_push_wait(&x->q, &cur->w, deadline);
  return ursa__block(vp, URSA__W_MUTEX, x, &x->lock, deadline);  /* 0: we own it now */
out:
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);            /* a lock taken without waiting: exploration's point (one
                                         between two locks finds lock-order deadlocks) */
  return r;
}

/* Releases x completely (any recursion count is dropped) and hands it to the first waiter.
 * The caller holds x's lock. */
static void mutex_release(const struct ursa__vp *vp, struct ursa__mutex *x) {
  struct ursa__waiter *w;                    /* a thread's: a mutex has no call waiters */
  URSA_ASSERT(vp->mode != URSA__SMPMODE || ursa__oheld(vp, &x->lock));
  w = ursa__q_take(vp, &x->q);
  x->count = 0;
  owner_set(x, w ? ursa__thread_of(w) : NULL);
  if (w) ursa__wake(vp, w, 0);
}

int ursa_mutex_lock(ursa_mutex_t *m) {
  struct ursa__mutex *x = mutex_get(m);
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  return mutex_lock(x, vp, false, 0);
}

int ursa_mutex_trylock(ursa_mutex_t *m) {
  struct ursa__mutex *x = mutex_get(m);
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  return mutex_lock(x, vp, true, 0);
}

int ursa_mutex_timedlock(ursa_mutex_t *m, int clock, const struct timespec *abstime) {
  struct ursa__mutex *x = mutex_get(m);
  uint64_t d;
  int err;
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  if ((err = ursa__deadline(clock, abstime, &d)) != 0) return err;
  return mutex_lock(x, vp, false, d);
}

int ursa_mutex_unlock(ursa_mutex_t *m) {
  struct ursa__mutex *x = mutex_get(m);
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  ursa__olock(vp, &x->lock);
  if (!owner_is(x, vp->cur)) { ursa__ounlock(vp, &x->lock); return -EPERM; }
  if (x->count) x->count--;
  else mutex_release(vp, x);
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);                            /* cp-ts: a deferred preemption */
  return 0;
}

/* For the reports, which read without the lock: the live thread with the owner's handle (NULL
 * for a free mutex, or one whose owner ended: the handle table is safe to read for any value). */
struct ursa__thread *ursa__mutex_owner(void *m) {
  return ursa__thread_get(__atomic_load_n(&((struct ursa__mutex *)m)->owner_h, __ATOMIC_RELAXED));
}

/* ---- condition variables ---------------------------------------------------------------------- */

static struct ursa__cond *cond_get(ursa_cond_t *c) {
  struct ursa__cond *x = (struct ursa__cond *)c;
  if (x == NULL || ursa__obj_check(&x->magic, URSA__COND_MAGIC, true) != 0) return NULL;
  return x;
}

int ursa_cond_init(ursa_cond_t *c) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__cond *x = (struct ursa__cond *)c;
  if (x == NULL) return -EINVAL;
  x->magic = URSA__COND_MAGIC;
  x->lock = 0;
  x->q.head = x->q.tail = NULL;
  return 0;
}

int ursa_cond_destroy(ursa_cond_t *c) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__cond *x = cond_get(c);
  if (x == NULL) return -EINVAL;
  ursa__olock(ursa__tls_vp, &x->lock);
  if (!ursa__q_empty(&x->q)) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EBUSY; }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

static int cond_wait(ursa_cond_t *c, ursa_mutex_t *m, uint64_t deadline) {
  struct ursa__cond *x = cond_get(c);
  struct ursa__mutex *mx = mutex_get(m);
  uint32_t count;
  int r;
  URSA_VP_OR_RETURN(vp);
  if (x == NULL || mx == NULL) return -EINVAL;
  /* only we set it to us (and a thread that had our descriptor before us, which ended) */
  if (__atomic_load_n(&mx->owner, __ATOMIC_RELAXED) != vp->cur ||
      __atomic_load_n(&mx->owner_h, __ATOMIC_RELAXED) != vp->cur->handle) return -EPERM;
  /* Queue on the condition before the mutex is released, so a signal sent by the next owner
   * finds us: the condition's lock is held across the release (order: cond lock, mutex lock). */
  ursa__olock(vp, &x->lock);
  ursa__q_push_wait(&x->q, &vp->cur->w, deadline);
  ursa__olock(vp, &mx->lock);
  count = mx->count;
  mutex_release(vp, mx);
  ursa__ounlock(vp, &mx->lock);
  r = ursa__block(vp, URSA__W_COND, x, &x->lock, deadline);
  vp = URSA__VP_AFTER_SWITCH();
  mutex_lock(mx, vp, false, 0);                        /* relock, also after a timeout */
  mx->count = count;
  return r;
}

int ursa_cond_wait(ursa_cond_t *c, ursa_mutex_t *m) { return cond_wait(c, m, 0); }

int ursa_cond_timedwait(ursa_cond_t *c, ursa_mutex_t *m, int clock, const struct timespec *abstime) {
  uint64_t d;
  int err = ursa__deadline(clock, abstime, &d);
  return err ? err : cond_wait(c, m, d);
}

int ursa_cond_signal(ursa_cond_t *c) {
  struct ursa__cond *x = cond_get(c);
  struct ursa__waiter *w;
  if (x == NULL) return -EINVAL;
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  if ((w = ursa__q_take(vp, &x->q)) != NULL) ursa__wake(vp, w, 0);
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);
  return 0;
}

int ursa_cond_broadcast(ursa_cond_t *c) {
  struct ursa__cond *x = cond_get(c);
  if (x == NULL) return -EINVAL;
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  ursa__wake_all(vp, &x->q, 0);
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);
  return 0;
}
