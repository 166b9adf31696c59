/*
 * stack.h - thread stacks (stack.c): mapping with a guard, the per-VP pool (SplitThreads' queue of
 * uninitialized threads), and the overflow report.
 */
#ifndef URSA_CORE_STACK_H
#define URSA_CORE_STACK_H

#include "vp.h"

/* A stack: [map, map + guard) is the guard, [lo, lo + size) usable; the thread descriptor sits at
 * the top.  Returns the descriptor location, or NULL with *err = -EAGAIN. */
URSA_HIDDEN struct ursa__thread *ursa__stack_get_slow(struct ursa__vp *vp, size_t size, int *err);
URSA_HIDDEN void ursa__stack_put_slow(struct ursa__vp *vp, struct ursa__thread *t);

static inline struct ursa__thread *ursa__stack_get(struct ursa__vp *vp, size_t size, int *err) {
  URSA_ASSERT_OWNER(vp);                     /* the pool is the VP's own, unlocked */
#if !URSA_ASAN
  struct ursa__thread *t = vp->pool;
  if (ursa_likely(t != NULL && size == ursa__g.stack_size)) {   /* warm pool: no system call */
    vp->pool = t->w.next;
    vp->pool_len--;
    return t;
  }
#endif
  return ursa__stack_get_slow(vp, size, err);
}

static inline void ursa__stack_put(struct ursa__vp *vp, struct ursa__thread *t) {
  URSA_ASSERT_OWNER(vp);
  if (ursa_likely(t->stack_size == ursa__g.stack_size && vp->pool_len < ursa__g.stack_cache)) {
    t->w.next = vp->pool;
    vp->pool = t;
    vp->pool_len++;
    return;
  }
  ursa__stack_put_slow(vp, t);
}
/* A reader of other threads' descriptors and stacks (the dumps) brackets its walk with these:
 * meanwhile no stack is unmapped (released ones wait for the last reader), so whatever descriptor
 * it found stays readable.  Any kernel thread; not reentrant-safe from a signal handler. */
URSA_HIDDEN void ursa__stack_readers_enter(void);
URSA_HIDDEN void ursa__stack_readers_exit(void);
/* fork: prepare takes the readers' lock, parent releases it, child resets (no reader lives on). */
URSA_HIDDEN void ursa__stack_atfork_prepare(void);
URSA_HIDDEN void ursa__stack_atfork_parent(void);
URSA_HIDDEN void ursa__stack_atfork_child(void);
URSA_HIDDEN int  ursa__stack_prealloc(struct ursa__vp *vp, size_t n);
URSA_HIDDEN void ursa__stack_pool_drain(struct ursa__vp *vp);
URSA_HIDDEN void ursa__stack_depot_drain(void);   /* ursa_fini: the shared depot (stack.c) */
URSA_HIDDEN int  ursa__overflow_handler_install(void);
URSA_HIDDEN void ursa__overflow_handler_remove(void);
/* An alternate signal stack for the calling kernel thread (the overflow report runs on it). */
URSA_HIDDEN void ursa__altstack_setup(void **mem);
URSA_HIDDEN void ursa__altstack_teardown(void *mem);

#endif /* URSA_CORE_STACK_H */
