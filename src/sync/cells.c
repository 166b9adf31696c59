/*
 * cells.c - SplitThreads' I-structures (ursa_ivar_t) and M-structures (ursa_mvar_t).
 *
 * I-structure: written once.  A get before the put queues; the put stores the value and wakes
 * every reader, which then reads the stored value.  A second put is -EBUSY and the first value
 * stays.
 *
 * M-structure: a cell that is full or empty.  put fills an empty cell, take empties a full one;
 * each completed put is taken exactly once, FIFO on both sides.  Hand-off keeps it that way
 * without retries: a put that finds a waiting taker gives the value straight to it (the cell stays
 * empty); a take that empties a cell with a waiting putter refills it with that putter's value
 * (the cell stays full).  A waiting putter's or taker's value travels in its waiter's data
 * (ursa__waiter_data: a thread's wait_data, a call waiter's data).
 * Each wait is one "take or queue" step shared by the blocking call and the waiter interface
 * (waiter.h), which queues a call waiter in the place of the calling thread.
 * Executed only by ursa threads.
 */
#include "sync.h"
#include "waiter.h"

#define URSA__IVAR_MAGIC 0x49565231u
#define URSA__MVAR_MAGIC 0x4d565231u

struct ursa__ivar {
  uint32_t           magic;
  uint32_t           full;
  void              *value;
  struct ursa__waitq q;                     /* readers waiting for the put */
  ursa__spin_t       lock;                  /* several VPs: guards all of the above */
};
URSA__STATIC_ASSERT_FITS(struct ursa__ivar, ursa_ivar_t);

struct ursa__mvar {
  uint32_t           magic;
  uint32_t           full;
  void              *value;
  struct ursa__waitq takers, putters;
  ursa__spin_t       lock;                  /* several VPs: guards all of the above */
};
URSA__STATIC_ASSERT_FITS(struct ursa__mvar, ursa_mvar_t);

#define IVAR_OR_RETURN(x, v) URSA__OBJ_OR_RETURN(struct ursa__ivar, x, v, URSA__IVAR_MAGIC, false)
#define MVAR_OR_RETURN(x, v) URSA__OBJ_OR_RETURN(struct ursa__mvar, x, v, URSA__MVAR_MAGIC, false)

/* ---- I-structures ----------------------------------------------------------------------------- */

int ursa_ivar_init(ursa_ivar_t *v) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__ivar *x = (struct ursa__ivar *)v;
  if (x == NULL) return -EINVAL;
  x->magic = URSA__IVAR_MAGIC;
  x->full = 0;
  x->value = NULL;
  x->q.head = x->q.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_ivar_destroy(ursa_ivar_t *v) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  IVAR_OR_RETURN(x, v);
  ursa__olock(ursa__tls_vp, &x->lock);
  if (!ursa__q_empty(&x->q)) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EBUSY; }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

int ursa_ivar_put(ursa_ivar_t *v, void *value) {
  IVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  if (x->full) { ursa__ounlock(vp, &x->lock); return -EBUSY; }   /* written once: keep the first */
  x->value = value;
  x->full = 1;
  ursa__wake_all(vp, &x->q, 0);
  ursa__ounlock(vp, &x->lock);
  ursa__preempt_point(vp);                            /* cp-ts: a deferred preemption */
  return 0;
}

/* The one get (ursa_ivar_get, ursa__ivar_get_waiter): 0 with *value when written, or 1 with w
 * queued and x's lock still held (the put wakes every reader). */
static int ivar_get_or_queue(struct ursa__vp *vp, struct ursa__ivar *x, struct ursa__waiter *w, void **value) {
  ursa__olock(vp, &x->lock);
  if (x->full) {
    *value = x->value;
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  ursa__q_push(&x->q, w);
  return 1;
}

int ursa_ivar_get(ursa_ivar_t *v, void **value) {
  IVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  if (value == NULL) return -EINVAL;
  if (ivar_get_or_queue(vp, x, &vp->cur->w, value) == 0) {
    ursa__preempt_point(vp);                         /* read without waiting: a point (exploration) */
    return 0;
  }
  ursa__block(vp, URSA__W_IVAR, x, &x->lock, 0);
  vp = URSA__VP_AFTER_SWITCH();
  ursa__olock(vp, &x->lock);
  *value = x->value;
  ursa__ounlock(vp, &x->lock);
  return 0;
}

/* The waiter interface (waiter.h). */
/* The end of every entry of the waiter interface here: r is the take-or-queue step's answer,
 * which leaves the cell's lock held when it queued the waiter (1). */
static int waiter_started(struct ursa__vp *vp, ursa__spin_t *lock, int r) {
  if (r == 1) ursa__ounlock(vp, lock);
  return r;
}

int ursa__ivar_get_waiter(ursa_ivar_t *v, struct ursa__waiter_call *c, void **value) {
  IVAR_OR_RETURN(x, v);
  if (value == NULL) return -EINVAL;
  c->w.wait_obj = x;
  return waiter_started(ursa__tls_vp, &x->lock, ivar_get_or_queue(ursa__tls_vp, x, &c->w, value));
}

/* The value of the I-structure a woken call waiter waited on.  It never changes again: no lock;
 * the wake-up that says it was written orders the put's stores before this read. */
void *ursa__ivar_get_end(struct ursa__waiter_call *c) {
  return ((struct ursa__ivar *)c->w.wait_obj)->value;
}

int ursa_ivar_tryget(ursa_ivar_t *v, void **value) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  IVAR_OR_RETURN(x, v);
  if (value == NULL) return -EINVAL;
  ursa__olock(ursa__tls_vp, &x->lock);
  if (!x->full) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EAGAIN; }
  *value = x->value;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

/* ---- M-structures ----------------------------------------------------------------------------- */

int ursa_mvar_init(ursa_mvar_t *v) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__mvar *x = (struct ursa__mvar *)v;
  if (x == NULL) return -EINVAL;
  x->magic = URSA__MVAR_MAGIC;
  x->full = 0;
  x->value = NULL;
  x->takers.head = x->takers.tail = x->putters.head = x->putters.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_mvar_destroy(ursa_mvar_t *v) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  MVAR_OR_RETURN(x, v);
  ursa__olock(ursa__tls_vp, &x->lock);
  if (!ursa__q_empty(&x->takers) || !ursa__q_empty(&x->putters)) {
    ursa__ounlock(ursa__tls_vp, &x->lock);
    return -EBUSY;
  }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

/* Fills the empty cell, or hands value to the first waiting taker. */
static void mvar_fill(const struct ursa__vp *vp, struct ursa__mvar *x, void *value) {
  struct ursa__waiter *t = ursa__q_take(vp, &x->takers);
  if (t) {
    *ursa__waiter_data(t) = value;
    ursa__wake(vp, t, 0);
  } else {
    x->value = value;
    x->full = 1;
  }
}

/* Empties the full cell into *value, refilling it from the first waiting putter. */
static void mvar_drain(const struct ursa__vp *vp, struct ursa__mvar *x, void **value) {
  struct ursa__waiter *p = ursa__q_take(vp, &x->putters);
  *value = x->value;
  if (p) {
    x->value = *ursa__waiter_data(p);
    ursa__wake(vp, p, 0);
  } else {
    x->value = NULL;
    x->full = 0;
  }
}

/* The one put (ursa_mvar_put, ursa__mvar_put_waiter): 0 when the value went in or to a taker, or
 * 1 with w queued holding it and x's lock still held (a take moves it into the cell). */
static int mvar_put_or_queue(struct ursa__vp *vp, struct ursa__mvar *x, struct ursa__waiter *w, void *value) {
  ursa__olock(vp, &x->lock);
  if (!x->full) {
    mvar_fill(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  *ursa__waiter_data(w) = value;
  ursa__q_push(&x->putters, w);
  return 1;
}

/* The one take: 0 with *value when the cell was full, or 1 with w queued and x's lock still held
 * (a put hands the value over in w's data). */
static int mvar_take_or_queue(struct ursa__vp *vp, struct ursa__mvar *x, struct ursa__waiter *w, void **value) {
  ursa__olock(vp, &x->lock);
  if (x->full) {
    mvar_drain(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  ursa__q_push(&x->takers, w);
  return 1;
}

int ursa_mvar_put(ursa_mvar_t *v, void *value) {
  MVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  if (mvar_put_or_queue(vp, x, &vp->cur->w, value) == 0) {
    ursa__preempt_point(vp);
    return 0;
  }
  ursa__block(vp, URSA__W_MVAR_PUT, x, &x->lock, 0);  /* a take moved our value into the cell */
  return 0;
}

int ursa_mvar_tryput(ursa_mvar_t *v, void *value) {
  MVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  if (x->full) { ursa__ounlock(vp, &x->lock); return -EAGAIN; }
  mvar_fill(vp, x, value);
  ursa__ounlock(vp, &x->lock);
  return 0;
}

int ursa_mvar_take(ursa_mvar_t *v, void **value) {
  struct ursa__thread *cur;
  MVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  if (value == NULL) return -EINVAL;
  cur = vp->cur;
  if (mvar_take_or_queue(vp, x, &cur->w, value) == 0) {
    ursa__preempt_point(vp);                         /* taken without waiting: a point */
    return 0;
  }
  ursa__block(vp, URSA__W_MVAR_TAKE, x, &x->lock, 0);
  *value = cur->wait_data;                  /* handed over by the put */
  return 0;
}

/* The waiter interface (waiter.h). */
int ursa__mvar_put_waiter(ursa_mvar_t *v, struct ursa__waiter_call *c, void *value) {
  MVAR_OR_RETURN(x, v);
  c->w.wait_obj = x;
  return waiter_started(ursa__tls_vp, &x->lock, mvar_put_or_queue(ursa__tls_vp, x, &c->w, value));
}

int ursa__mvar_take_waiter(ursa_mvar_t *v, struct ursa__waiter_call *c, void **value) {
  MVAR_OR_RETURN(x, v);
  if (value == NULL) return -EINVAL;
  c->w.wait_obj = x;
  return waiter_started(ursa__tls_vp, &x->lock, mvar_take_or_queue(ursa__tls_vp, x, &c->w, value));
}

int ursa_mvar_trytake(ursa_mvar_t *v, void **value) {
  MVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  if (value == NULL) return -EINVAL;
  ursa__olock(vp, &x->lock);
  if (!x->full) { ursa__ounlock(vp, &x->lock); return -EAGAIN; }
  mvar_drain(vp, x, value);
  ursa__ounlock(vp, &x->lock);
  return 0;
}
