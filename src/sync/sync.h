/*
 * sync.h - what the synchronization objects (this folder) share: the scheduler below them
 * (block, wake, wait queues: ../sched/sched.h), the preemption points of the models
 * (../model/model.h), and the registration of their waitable kinds for the reports.
 */
#ifndef URSA_SYNC_H
#define URSA_SYNC_H

#include "../sched/sched.h"
#include "../model/model.h"

/* The thread holding a mutex / write-holding an rwlock (NULL if none): the reports' wait-for
 * edges (kinds.c registers them). */
URSA_HIDDEN struct ursa__thread *ursa__mutex_owner(void *mutex);
URSA_HIDDEN struct ursa__thread *ursa__rwlock_writer(void *rwlock);
/* Registers the kinds of wait of every object here with the reports; ursa_init calls it. */
URSA_HIDDEN void ursa__sync_register_kinds(void);

#endif /* URSA_SYNC_H */
