/*
 * once.c - ursa_once: one thread runs fn, the others that come meanwhile wait for it (FIFO) and
 * are woken when it returns.  Executed only by ursa threads.
 */
#include "sync.h"

struct ursa__once {
  uint32_t             state;               /* 0 not run, 1 running, 2 done */
  ursa__spin_t         lock;                /* several VPs: guards all of this */
  struct ursa__thread *runner;
  struct ursa__waitq   q;
};
URSA__STATIC_ASSERT_FITS(struct ursa__once, ursa_once_t);

int ursa_once(ursa_once_t *once, void (*fn)(void)) {
  struct ursa__once *o = (struct ursa__once *)once;
  URSA_VP_OR_RETURN(vp);
  if (o == NULL || fn == NULL) return -EINVAL;
  switch (__atomic_load_n(&o->state, __ATOMIC_ACQUIRE)) {   /* pairs with the release below */
  case 2: ursa__preempt_point(vp); return 0;                 /* done: a point (exploration) */
  case 0: case 1: break;
  default: return -EINVAL;                                   /* never initialized: garbage */
  }
  if (!ursa__spin_word_ok(__atomic_load_n(&o->lock, __ATOMIC_RELAXED))) return -EINVAL;
  ursa__olock(vp, &o->lock);
  if (o->state == 2) { ursa__ounlock(vp, &o->lock); return 0; }
  if (o->state == 1) {
    if (o->runner == vp->cur) { ursa__ounlock(vp, &o->lock); return -EDEADLK; }
    ursa__q_push(&o->q, &vp->cur->w);
    ursa__block(vp, URSA__W_ONCE, o, &o->lock, 0);
    return 0;
  }
  __atomic_store_n(&o->state, 1, __ATOMIC_RELAXED);   /* read unlocked above */
  o->runner = vp->cur;
  ursa__ounlock(vp, &o->lock);
  fn();
  vp = URSA__VP_AFTER_SWITCH();                        /* fn may have switched, and moved us */
  ursa__olock(vp, &o->lock);
  __atomic_store_n(&o->state, 2, __ATOMIC_RELEASE);
  o->runner = NULL;
  ursa__wake_all(vp, &o->q, 0);
  ursa__ounlock(vp, &o->lock);
  ursa__preempt_point(vp);
  return 0;
}
