/*
 * barrier.c - barriers.  The thread that completes a round wakes every waiter and gets
 * URSA_BARRIER_SERIAL_THREAD; the others get 0.  The barrier is reusable at once: the round's
 * arrival count is reset before anyone is woken.
 * Executed only by ursa threads.
 */
#include "sync.h"

#define URSA__BARRIER_MAGIC 0x42415231u

struct ursa__barrier {
  uint32_t           magic;
  uint32_t           count;
  uint32_t           arrived;
  struct ursa__waitq q;
  ursa__spin_t       lock;                  /* several VPs: guards arrived and q */
};
URSA__STATIC_ASSERT_FITS(struct ursa__barrier, ursa_barrier_t);

#define BARRIER_OR_RETURN(x, b) URSA__OBJ_OR_RETURN(struct ursa__barrier, x, b, URSA__BARRIER_MAGIC, false)

int ursa_barrier_init(ursa_barrier_t *b, unsigned count) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  struct ursa__barrier *x = (struct ursa__barrier *)b;
  if (x == NULL || count == 0) return -EINVAL;
  x->magic = URSA__BARRIER_MAGIC;
  x->count = count;
  x->arrived = 0;
  x->q.head = x->q.tail = NULL;
  x->lock = 0;
  return 0;
}

int ursa_barrier_destroy(ursa_barrier_t *b) {
  if (ursa__tls_vp == NULL) return ursa__novp();
  BARRIER_OR_RETURN(x, b);
  ursa__olock(ursa__tls_vp, &x->lock);
  if (x->arrived) { ursa__ounlock(ursa__tls_vp, &x->lock); return -EBUSY; }
  x->magic = URSA__MAGIC_DEAD;
  ursa__ounlock(ursa__tls_vp, &x->lock);
  return 0;
}

int ursa_barrier_wait(ursa_barrier_t *b) {
  BARRIER_OR_RETURN(x, b);
  URSA_VP_OR_RETURN(vp);
  ursa__olock(vp, &x->lock);
  if (++x->arrived == x->count) {
    x->arrived = 0;
    ursa__wake_all(vp, &x->q, 0);
    ursa__ounlock(vp, &x->lock);
    ursa__preempt_point(vp);                         /* cp-ts: a deferred preemption; exploration */
    return URSA_BARRIER_SERIAL_THREAD;
  }
  ursa__q_push(&x->q, &vp->cur->w);
  ursa__block(vp, URSA__W_BARRIER, x, &x->lock, 0);
  return 0;
}
