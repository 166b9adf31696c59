/*
 * rwlock.c - reader-writer locks without needless wake-ups (the journal paper, section 4.3).
 *
 * Protocol: the unlocker grants the lock before it wakes anyone: either it makes one waiting
 * writer the owner, or it counts every waiting reader in as a holder.  So a woken thread always
 * holds the lock and never blocks again.  Policy (phase-fair): a reader that arrives while a
 * writer waits queues behind it; when a writer unlocks, waiting readers go first, then writers;
 * when the last reader unlocks, one writer goes.
 *
 * Each thread records the rwlocks it holds for reading (struct ursa__rdheld, at most
 * URSA_RWLOCK_READ_MAX), so unlocking a lock the caller does not hold is -EPERM and leaves the
 * lock unchanged, and a read lock may be taken recursively.
 * Executed only by ursa threads.
 */
#include "sync.h"

#define URSA__RWLOCK_MAGIC 0x52574c31u

struct ursa__rwlock {
  uint32_t             magic;
  uint32_t             readers;             /* read holds, recursive ones included */
  struct ursa__thread *writer;              /* NULL: no writer                                 */
  ursa_thread_t        writer_h;            /* its handle: the writer's identity (see writer_is) */
  struct ursa__waitq   rq, wq;              /* waiting readers, waiting writers */
  ursa__spin_t         lock;                /* several VPs: guards all of the above */
};
URSA__STATIC_ASSERT_FITS(struct ursa__rwlock, ursa_rwlock_t);

static struct ursa__rwlock *rw_get(ursa_rwlock_t *l) {
  struct ursa__rwlock *x = (struct ursa__rwlock *)l;
  if (x == NULL || ursa__obj_check(&x->magic, URSA__RWLOCK_MAGIC, true) != 0) return NULL;
  return x;
}

/* The writer is known by descriptor and handle: a thread that ended write-holding x leaves it
 * held, and a later thread that got its descriptor (the same address) has another handle. */
static inline bool writer_is(const struct ursa__rwlock *x, const struct ursa__thread *t) {
  return x->writer == t && x->writer_h == t->handle;
}
static inline void writer_set(struct ursa__rwlock *x, struct ursa__thread *t) {   /* (see mutex.c) */
  __atomic_store_n(&x->writer, t, __ATOMIC_RELAXED);
  __atomic_store_n(&x->writer_h, t ? t->handle : NULL, __ATOMIC_RELAXED);
}

/* The caller's read-hold record of x, or NULL.  rdheld is packed: the first NULL lock ends it. */
static struct ursa__rdheld *held(struct ursa__thread *t, void *x) {
  int i;
  for (i = 0; i < URSA_RWLOCK_READ_MAX && t->rdheld[i].lock; i++)
    if (t->rdheld[i].lock == x) return &t->rdheld[i];
  return NULL;
}

static int held_count(struct ursa__thread *t) {
  int i = 0;
  while (i < URSA_RWLOCK_READ_MAX && t->rdheld[i].lock) i++;
  return i;
}

static void held_add(struct ursa__thread *t, void *x) {
  int n = held_count(t);
  t->rdheld[n].lock = x;
  t->rdheld[n].count = 1;
  if (n + 1 < URSA_RWLOCK_READ_MAX) t->rdheld[n + 1].lock = NULL;
}

static void held_drop(struct ursa__thread *t, struct ursa__rdheld *h) {
  int n = held_count(t);
  *h = t->rdheld[n - 1];                    /* keep the array packed */
  t->rdheld[n - 1].lock = NULL;
}

/* Hands a free lock to waiters: all readers if prefer_readers or no writer waits, else one writer. */
static void admit_readers(const struct ursa__vp *vp, struct ursa__rwlock *x) {
  struct ursa__waiter *w;
  while (x->readers < UINT32_MAX && (w = ursa__q_take(vp, &x->rq)) != NULL) {   /* never wraps */
    x->readers++;
    ursa__wake(vp, w, 0);
  }
}

static void grant(const struct ursa__vp *vp, struct ursa__rwlock *x, bool prefer_readers) {
  struct ursa__waiter *w;                    /* threads' only: an rwlock has no call waiters */
  if (x->writer || x->readers) return;
  if (!ursa__q_empty(&x->rq) && (prefer_readers || ursa__q_empty(&x->wq))) {
    admit_readers(vp, x);
    if (x->readers) return;
  }
  if ((w = ursa__q_take(vp, &x->wq)) != NULL) {   /* (also when every reader had timed out) */
    writer_set(x, ursa__thread_of(w));
    ursa__wake(vp, w, 0);
  }
}

/* For the reports (no lock): the live thread with the writer's handle, NULL when none or ended. */
struct ursa__thread *ursa__rwlock_writer(void *l) {
  return ursa__thread_get(__atomic_load_n(&((struct ursa__rwlock *)l)->writer_h, __ATOMIC_RELAXED));
}

int ursa_rwlock_init(ursa_rwlock_t *l) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__rwlock *x = (struct ursa__rwlock *)l;
  if (x == NULL) return -EINVAL;
  x->magic = URSA__RWLOCK_MAGIC;
  x->readers = 0;
  writer_set(x, NULL);
  x->rq.head = x->rq.tail = x->wq.head = x->wq.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_rwlock_destroy(ursa_rwlock_t *l) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__rwlock *x = rw_get(l);
  if (x == NULL) return -EINVAL;
  ursa__olock(ursa__tls_vp, &x->lock);
  if (x->writer || x->readers || !ursa__q_empty(&x->rq) || !ursa__q_empty(&x->wq)) {
    ursa__ounlock(ursa__tls_vp, &x->lock);
    return -EBUSY;
  }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

static int rdlock(ursa_rwlock_t *l, bool try, uint64_t deadline) {
  struct ursa__rwlock *x = rw_get(l);
  struct ursa__rdheld *h;
  struct ursa__thread *cur;
  int r;
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  cur = vp->cur;
  ursa__olock(vp, &x->lock);
  if (writer_is(x, cur)) { r = try ? -EBUSY : -EDEADLK; goto out; }
  if (x->readers == UINT32_MAX) { r = -EAGAIN; goto out; }   /* the total would wrap to 0 */
  if ((h = held(cur, x)) != NULL) {         /* recursive read: never queue behind a writer */
    if (h->count == UINT32_MAX) { r = -EAGAIN; goto out; }
    h->count++;
    x->readers++;
    r = 0;
    goto out;
  }
  if (held_count(cur) == URSA_RWLOCK_READ_MAX) { r = -EAGAIN; goto out; }
  if (x->writer == NULL && ursa__q_empty(&x->wq)) {
    x->readers++;
    held_add(cur, x);
    r = 0;
    goto out;
  }
  if (try) { r = -EBUSY; goto out; }
  ursa__q_push_wait(&x->rq, &cur->w, deadline);
  r = ursa__block(vp, URSA__W_RDLOCK, x, &x->lock, deadline);
  if (r == 0) held_add(cur, x);             /* the unlocker counted us in */
  return r;
out:
  ursa__ounlock(vp, &x->lock);
  if (r == 0) ursa__preempt_point(vp);              /* taken without waiting: a point (exploration) */
  return r;
}

static int wrlock(ursa_rwlock_t *l, bool try, uint64_t deadline) {
  struct ursa__rwlock *x = rw_get(l);
  struct ursa__thread *cur;
  int r;
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  cur = vp->cur;
  if (held(cur, x)) return try ? -EBUSY : -EDEADLK;
  ursa__olock(vp, &x->lock);
  if (writer_is(x, cur)) { ursa__ounlock(vp, &x->lock); return try ? -EBUSY : -EDEADLK; }
  if (x->writer == NULL && x->readers == 0) {
    writer_set(x, cur);
    ursa__ounlock(vp, &x->lock);
    ursa__preempt_point(vp);                         /* taken without waiting: a point */
    return 0;
  }
  if (try) { ursa__ounlock(vp, &x->lock); return -EBUSY; }
  ursa__q_push_wait(&x->wq, &cur->w, deadline);
  r = ursa__block(vp, URSA__W_WRLOCK, x, &x->lock, deadline);
  if (r != 0) {
    vp = URSA__VP_AFTER_SWITCH();
    ursa__olock(vp, &x->lock);
    if (x->writer == NULL && ursa__q_empty(&x->wq))
      admit_readers(vp, x);                 /* we held readers back while we waited: admit them */
    ursa__ounlock(vp, &x->lock);
  }
  return r;
}

int ursa_rwlock_rdlock(ursa_rwlock_t *l) { return rdlock(l, false, 0); }
int ursa_rwlock_tryrdlock(ursa_rwlock_t *l) { return rdlock(l, true, 0); }
int ursa_rwlock_wrlock(ursa_rwlock_t *l) { return wrlock(l, false, 0); }
int ursa_rwlock_trywrlock(ursa_rwlock_t *l) { return wrlock(l, true, 0); }

int ursa_rwlock_timedrdlock(ursa_rwlock_t *l, int clock, const struct timespec *abstime) {
  uint64_t d;
  int err = ursa__deadline(clock, abstime, &d);
  return err ? err : rdlock(l, false, d);
}

int ursa_rwlock_timedwrlock(ursa_rwlock_t *l, int clock, const struct timespec *abstime) {
  uint64_t d;
  int err = ursa__deadline(clock, abstime, &d);
  return err ? err : wrlock(l, false, d);
}

int ursa_rwlock_unlock(ursa_rwlock_t *l) {
  struct ursa__rwlock *x = rw_get(l);
  struct ursa__rdheld *h;
  struct ursa__thread *cur;
  URSA_VP_OR_RETURN(vp);
  if (x == NULL) return -EINVAL;
  cur = vp->cur;
  ursa__olock(vp, &x->lock);
  if (writer_is(x, cur)) {
    writer_set(x, NULL);
    grant(vp, x, true);
    ursa__ounlock(vp, &x->lock);
    ursa__preempt_point(vp);                         /* cp-ts: a deferred preemption; exploration */
    return 0;
  }
  if ((h = held(cur, x)) == NULL) { ursa__ounlock(vp, &x->lock); return -EPERM; }
  if (--h->count == 0) held_drop(cur, h);
  x->readers--;
  grant(vp, x, false);
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);
  return 0;
}
