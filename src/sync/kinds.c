/*
 * kinds.c - the synchronization objects' kinds of wait, as the deadlock report and ursa_dump
 * print them (src/sched/report.c): a name, and for the objects that have one, the owner that the
 * wait-for graph follows.  Registered once by ursa_init, before VPs 1..N-1 start.
 */
#include "sync.h"

static const struct ursa__waitkind
  sem     = { "ursa_sem_wait on semaphore", NULL, 0 },
  mutex   = { "ursa_mutex_lock on mutex", ursa__mutex_owner, 0 },
  cond    = { "ursa_cond_wait on condition variable", NULL, 0 },
  barrier = { "ursa_barrier_wait on barrier", NULL, 0 },
  rdlock  = { "ursa_rwlock_rdlock on rwlock", ursa__rwlock_writer, 0 },
  wrlock  = { "ursa_rwlock_wrlock on rwlock", ursa__rwlock_writer, 0 },
  once    = { "ursa_once on once", NULL, 0 },
  ivar    = { "ursa_ivar_get on I-structure", NULL, 0 },
  take    = { "ursa_mvar_take on M-structure", NULL, 0 },
  put     = { "ursa_mvar_put on M-structure", NULL, 0 };

void ursa__sync_register_kinds(void) {
  ursa__waitkind_register(URSA__W_SEM, &sem);
  ursa__waitkind_register(URSA__W_MUTEX, &mutex);
  ursa__waitkind_register(URSA__W_COND, &cond);
  ursa__waitkind_register(URSA__W_BARRIER, &barrier);
  ursa__waitkind_register(URSA__W_RDLOCK, &rdlock);
  ursa__waitkind_register(URSA__W_WRLOCK, &wrlock);
  ursa__waitkind_register(URSA__W_ONCE, &once);
  ursa__waitkind_register(URSA__W_IVAR, &ivar);
  ursa__waitkind_register(URSA__W_MVAR_TAKE, &take);
  ursa__waitkind_register(URSA__W_MVAR_PUT, &put);
}
