/*
 * sync.h - what the synchronization objects (this folder) share: the scheduler below them
 * (block, wake, wait queues: ../sched/sched.h), the preemption points of the models
 * (../model/model.h), and the registration of their waitable kinds for the reports.
 */
#ifndef URSA_SYNC_H
#define URSA_SYNC_H

#include "../sched/sched.h"
#include "../model/model.h"

/* Every object of this folder is checked one way (core/base.h, ursa__obj_check): x is the object
 * behind the public handle p, or the calling function returns -EINVAL (p NULL, never initialized,
 * destroyed).  A zeroable family (one with a static initializer) is initialized here the first
 * time a zeroed object is used, also when two VPs race to it; the others compare the magic with
 * a plain load (as an atomic load, it cost the semaphore ring 2 instructions per pass).  The getters that return NULL
 * instead (mutex_get, cond_get, rw_get) make the same check. */
#define URSA__OBJ_OR_RETURN(type, x, p, want, zeroable)                               \
  type *x = (type *)(p);                                                             \
  if (ursa_unlikely(x == NULL || ((zeroable) ? ursa__obj_check(&x->magic, want, true) != 0  \
                                             : x->magic != (want))))              \
    return -EINVAL

/* The thread holding a mutex / write-holding an rwlock (NULL if none): the reports' wait-for
 * edges (kinds.c registers them). */
URSA_HIDDEN struct ursa__thread *ursa__mutex_owner(void *mutex);
URSA_HIDDEN struct ursa__thread *ursa__rwlock_writer(void *rwlock);
/* Registers the kinds of wait of every object here with the reports; ursa_init calls it. */
URSA_HIDDEN void ursa__sync_register_kinds(void);

#endif /* URSA_SYNC_H */
