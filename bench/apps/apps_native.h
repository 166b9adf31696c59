/*
 * apps_native.h - the "native threads" row of the papers (Java's CPnatural): the CP-style code of
 * bench/apps/<app>.c compiled a second time with -DAPPS_PTHREADS, on POSIX threads and semaphores.
 *
 * It maps exactly the ursa calls the CP style uses, one to one, and nothing else:
 *   ursa_thread_t, ursa_create, ursa_join   -> pthread_t, pthread_create (default attributes),
 *                                              pthread_join
 *   ursa_sem_t, ursa_sem_init/wait/post/destroy -> sem_t, sem_init(pshared 0)/sem_wait/sem_post/
 *                                              sem_destroy (futex-based in glibc: a P that does
 *                                              not block is a user-space atomic, a blocking P
 *                                              and the V that wakes it are system calls)
 *   ursa_sem_getvalue                       -> sem_getvalue (the answer checks, after the clock)
 *   ursa_yield                              -> sched_yield
 *   ursa_tick                               -> nothing (the kernel preempts by time-slicing)
 * Return values follow ursa's convention (0 or a negative errno value).  The CM- and PCM-style
 * code is not compiled in this build.  ursa_init, the counters and the model name are handled in
 * apps_common.h (there are no ursa counters to report natively).
 */
#ifndef APPS_NATIVE_H
#define APPS_NATIVE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

typedef pthread_t ursa_thread_t;
typedef sem_t ursa_sem_t;

static inline int ursa_create(ursa_thread_t *t, const void *attr_unused, void *(*fn)(void *), void *arg) {
  (void)attr_unused;
  return -pthread_create(t, NULL, fn, arg);
}
static inline int ursa_join(ursa_thread_t t, void **result) { return -pthread_join(t, result); }
static inline int ursa_sem_init(ursa_sem_t *s, unsigned v) { return sem_init(s, 0, v) ? -errno : 0; }
static inline int ursa_sem_destroy(ursa_sem_t *s) { return sem_destroy(s) ? -errno : 0; }
static inline int ursa_sem_post(ursa_sem_t *s) { return sem_post(s) ? -errno : 0; }
static inline int ursa_sem_wait(ursa_sem_t *s) {
  while (sem_wait(s) != 0)
    if (errno != EINTR) return -errno;
  return 0;
}
static inline int ursa_sem_getvalue(ursa_sem_t *s, int *v) { return sem_getvalue(s, v) ? -errno : 0; }
static inline int ursa_yield(void) { return sched_yield() ? -errno : 0; }
static inline void ursa_tick(void) {}

#endif /* APPS_NATIVE_H */
