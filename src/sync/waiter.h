/*
 * waiter.h - the waiter interface: how a layer above src/sync/ (src/pt/ today; the I/O and MPI
 * layers next) waits on ursa's objects without an ursa thread of its own blocking.
 *
 * The caller fills a struct ursa__waiter_call (src/core/waiter.h: ursa__waiter_call_init with its
 * wake function) and starts a wait with one of the functions below.  Each runs the same code as
 * the blocking call of its object (the object's one "take or queue" step), with the call waiter
 * in the place of the calling thread:
 *   0      the wait was over at once (a unit taken, the value there, the thread had finished):
 *          nothing is queued and the wake function will not be called;
 *   1      the waiter is queued: the object's waker calls c->wake(c, res) exactly once, on the
 *          waker's VP, possibly another kernel thread, with the object's lock held (several VPs):
 *          the function may take only leaf locks and must not switch or call back into ursa;
 *   < 0    an error, as the blocking call returns it (-EINVAL for a bad object, ...).
 * A queued call waiter cannot leave its queue early (no timeout, no cancel yet): the caller must
 * keep c valid until its wake function has run.
 *
 * Executed only by ursa threads (ursa__tls_vp set); none of them blocks or switches.
 */
#ifndef URSA_SYNC_WAITER_H
#define URSA_SYNC_WAITER_H

#include "../sched/waiter.h"

/* ursa_sem_wait: 0 a unit was taken, 1 queued (the post hands c its unit, res 0). */
URSA__WAITER_API int ursa__sem_wait_waiter(ursa_sem_t *s, struct ursa__waiter_call *c);

/* ursa_ivar_get: 0 with *value when written, 1 queued (woken by the put, res 0; then
 * ursa__ivar_get_end gives the value). */
URSA__WAITER_API int   ursa__ivar_get_waiter(ursa_ivar_t *v, struct ursa__waiter_call *c, void **value);
URSA__WAITER_API void *ursa__ivar_get_end(struct ursa__waiter_call *c);

/* ursa_mvar_take: 0 with *value when full, 1 queued (a put hands the value over in c->data).
 * ursa_mvar_put: 0 when the value went in or to a taker, 1 queued with it (a take moves it into
 * the cell and wakes c). */
URSA__WAITER_API int ursa__mvar_take_waiter(ursa_mvar_t *v, struct ursa__waiter_call *c, void **value);
URSA__WAITER_API int ursa__mvar_put_waiter(ursa_mvar_t *v, struct ursa__waiter_call *c, void *value);

/* ursa_join: src/sched/waiter.h. */

#endif /* URSA_SYNC_WAITER_H */
