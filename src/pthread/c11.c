/*
 * c11.c - C11 <threads.h> on the POSIX-threads layer: thrd_*, mtx_*, cnd_*, tss_*, call_once.
 *
 * glibc's C11 functions call glibc-internal entry points (__pthread_create_2_1, __pthread_mutex_lock,
 * ...) that no preloaded library can replace, so a C11 program would run on glibc's threads and
 * lock glibc's way the objects this layer owns.  The layer therefore exports the C11 names itself,
 * each one a call of the layer's own POSIX function (thread.c, sync.c) with C11's return codes.
 * Those functions tell their callers apart as every entry point does (boot.c): a caller that is
 * not an ursa thread is forwarded to glibc's POSIX function, which is what glibc's C11 function
 * would have run, so the C11 names need no forward of their own (they are not in UPT_REALS).
 *
 * The objects are glibc's: mtx_t and cnd_t are unions the size of pthread_mutex_t and
 * pthread_cond_t, tss_t is a pthread_key_t, once_flag holds a pthread_once_t, thrd_t is a
 * pthread_t (checked below), so an object is the layer's POSIX object and works wherever that does.
 *
 * A thread made by thrd_create runs c11_start, which calls the thrd_start_t and hands its int to
 * pthread_exit's value (cast through intptr_t); thrd_join gives it back as an int.  thrd_exit(res)
 * is pthread_exit with that value.  tss destructors are the keys' destructors: they run at the
 * thread's end, up to TSS_DTOR_ITERATIONS (= PTHREAD_DESTRUCTOR_ITERATIONS) rounds.
 */
#include "upt.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
/* glibc's header defines thrd_equal inline when optimizing (__USE_EXTERN_INLINES); the layer
 * defines the out-of-line one that unoptimized programs call, so it takes the plain declaration. */
#undef __USE_EXTERN_INLINES
#include <threads.h>

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t) && alignof(mtx_t) >= alignof(pthread_mutex_t),
               "mtx_t is a pthread_mutex_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t) && alignof(cnd_t) >= alignof(pthread_cond_t),
               "cnd_t is a pthread_cond_t");
_Static_assert(sizeof(tss_t) == sizeof(pthread_key_t), "tss_t is a pthread_key_t");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is a pthread_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag is a pthread_once_t");
_Static_assert(TSS_DTOR_ITERATIONS == PTHREAD_DESTRUCTOR_ITERATIONS, "the same destructor rounds");

/* A POSIX answer as C11's: 0 success, the given code for the one errno C11 names, else error. */
static int c11_rc(int rc, int code_for, int code) {
  if (rc == 0) return thrd_success;
  if (rc == code_for) return code;
  return rc == ENOMEM ? thrd_nomem : thrd_error;
}

/* ---- threads ---------------------------------------------------------------------------------- */

struct c11_start_arg { thrd_start_t fn; void *arg; };

static void *c11_start(void *p) {
  struct c11_start_arg a = *(struct c11_start_arg *)p;
  free(p);
  return (void *)(intptr_t)a.fn(a.arg);
}

UPT_EXPORT int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg) {
  struct c11_start_arg *a = malloc(sizeof *a);
  pthread_t t;
  int rc;
  if (a == NULL) return thrd_nomem;
  a->fn = fn;
  a->arg = arg;
  rc = pthread_create(&t, NULL, c11_start, a);
  if (rc != 0) {
    free(a);
    return rc == EAGAIN ? thrd_nomem : thrd_error;
  }
  *thr = (thrd_t)t;
  return thrd_success;
}

UPT_EXPORT int thrd_join(thrd_t thr, int *res) {
  void *v;
  int rc = pthread_join((pthread_t)thr, &v);
  if (rc != 0) return thrd_error;
  if (res) *res = (int)(intptr_t)v;
  return thrd_success;
}

UPT_EXPORT _Noreturn void thrd_exit(int res) {
  pthread_exit((void *)(intptr_t)res);
}

UPT_EXPORT thrd_t thrd_current(void) { return (thrd_t)pthread_self(); }

UPT_EXPORT int thrd_equal(thrd_t a, thrd_t b) { return a == b; }

UPT_EXPORT int thrd_detach(thrd_t thr) {
  return pthread_detach((pthread_t)thr) == 0 ? thrd_success : thrd_error;
}

/* 0 after the whole duration, -1 when a signal ended it (the layer's sleep is not ended by one:
 * see docs/GUIDE.md), another negative value on an error (a bad duration). */
UPT_EXPORT int thrd_sleep(const struct timespec *duration, struct timespec *remaining) {
  if (nanosleep(duration, remaining) == 0) return 0;
  return errno == EINTR ? -1 : -2;
}

UPT_EXPORT void thrd_yield(void) { (void)sched_yield(); }

/* ---- mutexes ---------------------------------------------------------------------------------- */

UPT_EXPORT int mtx_init(mtx_t *m, int type) {
  pthread_mutexattr_t a;
  int kind, rc;
  switch (type) {
  case mtx_plain: case mtx_timed:                   kind = PTHREAD_MUTEX_NORMAL; break;
  case mtx_plain | mtx_recursive:
  case mtx_timed | mtx_recursive:                   kind = PTHREAD_MUTEX_RECURSIVE; break;
  default:                                          return thrd_error;
  }
  if (m == NULL) return thrd_error;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, kind);
  rc = pthread_mutex_init((pthread_mutex_t *)m, &a);
  pthread_mutexattr_destroy(&a);
  return c11_rc(rc, -1, thrd_error);
}

UPT_EXPORT int mtx_lock(mtx_t *m) {
  return c11_rc(pthread_mutex_lock((pthread_mutex_t *)m), -1, thrd_error);
}

UPT_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict abs) {
  return c11_rc(pthread_mutex_timedlock((pthread_mutex_t *)m, abs), ETIMEDOUT, thrd_timedout);
}

UPT_EXPORT int mtx_trylock(mtx_t *m) {
  return c11_rc(pthread_mutex_trylock((pthread_mutex_t *)m), EBUSY, thrd_busy);
}

UPT_EXPORT int mtx_unlock(mtx_t *m) {
  return c11_rc(pthread_mutex_unlock((pthread_mutex_t *)m), -1, thrd_error);
}

UPT_EXPORT void mtx_destroy(mtx_t *m) { (void)pthread_mutex_destroy((pthread_mutex_t *)m); }

/* ---- condition variables ---------------------------------------------------------------------- */

UPT_EXPORT int cnd_init(cnd_t *c) {
  return c11_rc(pthread_cond_init((pthread_cond_t *)c, NULL), -1, thrd_error);
}

UPT_EXPORT int cnd_signal(cnd_t *c) {
  return c11_rc(pthread_cond_signal((pthread_cond_t *)c), -1, thrd_error);
}

UPT_EXPORT int cnd_broadcast(cnd_t *c) {
  return c11_rc(pthread_cond_broadcast((pthread_cond_t *)c), -1, thrd_error);
}

UPT_EXPORT int cnd_wait(cnd_t *c, mtx_t *m) {
  return c11_rc(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m), -1, thrd_error);
}

UPT_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                             const struct timespec *restrict abs) {
  return c11_rc(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, abs), ETIMEDOUT,
                thrd_timedout);
}

UPT_EXPORT void cnd_destroy(cnd_t *c) { (void)pthread_cond_destroy((pthread_cond_t *)c); }

/* ---- thread-specific storage and once --------------------------------------------------------- */

UPT_EXPORT int tss_create(tss_t *key, tss_dtor_t dtor) {
  return c11_rc(pthread_key_create((pthread_key_t *)key, dtor), -1, thrd_error);
}

UPT_EXPORT void *tss_get(tss_t key) { return pthread_getspecific((pthread_key_t)key); }

UPT_EXPORT int tss_set(tss_t key, void *value) {
  return c11_rc(pthread_setspecific((pthread_key_t)key, value), -1, thrd_error);
}

UPT_EXPORT void tss_delete(tss_t key) { (void)pthread_key_delete((pthread_key_t)key); }

UPT_EXPORT void call_once(once_flag *flag, void (*fn)(void)) {
  (void)pthread_once((pthread_once_t *)flag, fn);
}
