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
 * (the cell stays full).  A waiting thread's value travels in its wait_data field.
 * Executed only by ursa threads.
 */
#include "sync.h"

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

int ursa_ivar_get(ursa_ivar_t *v, void **value) {
  IVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  if (value == NULL) return -EINVAL;
  ursa__olock(vp, &x->lock);
  if (!x->full) {
    ursa__q_push(&x->q, vp->cur);
    ursa__block(vp, URSA__W_IVAR, x, &x->lock, 0);
    vp = URSA__VP_AFTER_SWITCH();
    ursa__olock(vp, &x->lock);
  }
  *value = x->value;
  ursa__ounlock(vp, &x->lock);
  return 0;
}

/* ursa_ivar_get for a wait shell (src/sched/sched.h): 0 with *value when written, 1 when the shell is
 * queued (the put wakes it; the value is then read with ursa__ivar_value).  Never blocks. */
int ursa__ivar_get_async(ursa_ivar_t *v, struct ursa__thread *shell, void **value) {
  struct ursa__vp *vp = ursa__tls_vp;
  IVAR_OR_RETURN(x, v);
  ursa__olock(vp, &x->lock);
  if (x->full) {
    *value = x->value;
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  ursa__set_state(shell, URSA__BLOCKED);
  shell->wait_kind = URSA__W_IVAR;
  shell->wait_obj = x;
  ursa__q_push(&x->q, shell);
  ursa__ounlock(vp, &x->lock);
  return 1;
}

/* The value of a written I-structure (it never changes again: no lock; the wake-up that says it
 * was written orders the put's stores before this read). */
void *ursa__ivar_value(void *ivar) { return ((struct ursa__ivar *)ivar)->value; }

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
  struct ursa__thread *t = ursa__q_take(vp, &x->takers);
  if (t) {
    t->wait_data = value;
    ursa__wake(t, 0);
  } else {
    x->value = value;
    x->full = 1;
  }
}

/* Empties the full cell into *value, refilling it from the first waiting putter. */
static void mvar_drain(const struct ursa__vp *vp, struct ursa__mvar *x, void **value) {
  struct ursa__thread *p = ursa__q_take(vp, &x->putters);
  *value = x->value;
  if (p) {
    x->value = p->wait_data;
    ursa__wake(p, 0);
  } else {
    x->value = NULL;
    x->full = 0;
  }
}

int ursa_mvar_put(ursa_mvar_t *v, void *value) {
  MVAR_OR_RETURN(x, v);
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  if (!x->full) {
    mvar_fill(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    ursa__preempt_point(vp);
    return 0;
  }
  vp->cur->wait_data = value;
  ursa__q_push(&x->putters, vp->cur);
  ursa__block(vp, URSA__W_MVAR_PUT, x, &x->lock, 0);  /* a take moved our value into the cell */
  return 0;
}

/* ursa_mvar_put for a wait shell: 0 when the value went in (or to a taker), 1 when the shell is
 * queued with it (a take moves it into the cell and wakes the shell).  Never blocks. */
int ursa__mvar_put_async(ursa_mvar_t *v, struct ursa__thread *shell, void *value) {
  struct ursa__vp *vp = ursa__tls_vp;
  MVAR_OR_RETURN(x, v);
  ursa__olock(vp, &x->lock);
  if (!x->full) {
    mvar_fill(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  ursa__set_state(shell, URSA__BLOCKED);
  shell->wait_kind = URSA__W_MVAR_PUT;
  shell->wait_obj = x;
  shell->wait_data = value;
  ursa__q_push(&x->putters, shell);
  ursa__ounlock(vp, &x->lock);
  return 1;
}

/* ursa_mvar_take for a wait shell: 0 with *value when the cell was full, 1 when the shell is queued
 * (a put hands it the value in shell->wait_data and wakes it).  Never blocks. */
int ursa__mvar_take_async(ursa_mvar_t *v, struct ursa__thread *shell, void **value) {
  struct ursa__vp *vp = ursa__tls_vp;
  MVAR_OR_RETURN(x, v);
  ursa__olock(vp, &x->lock);
  if (x->full) {
    mvar_drain(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  ursa__set_state(shell, URSA__BLOCKED);
  shell->wait_kind = URSA__W_MVAR_TAKE;
  shell->wait_obj = x;
  ursa__q_push(&x->takers, shell);
  ursa__ounlock(vp, &x->lock);
  return 1;
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
  ursa__olock(vp, &x->lock);
  if (x->full) {
    mvar_drain(vp, x, value);
    ursa__ounlock(vp, &x->lock);
    return 0;
  }
  cur = vp->cur;
  ursa__q_push(&x->takers, cur);
  ursa__block(vp, URSA__W_MVAR_TAKE, x, &x->lock, 0);
  *value = cur->wait_data;                  /* handed over by the put */
  return 0;
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
