/*
 * waiter.h - the scheduler's part of the waiter interface (src/sync/waiter.h describes it, and
 * is what a layer above src/sync/ includes): the join of a call waiter.
 */
#ifndef URSA_SCHED_WAITER_H
#define URSA_SCHED_WAITER_H

#include "ursa.h"
#include "../core/waiter.h"

#define URSA__WAITER_API __attribute__((visibility("hidden")))

/* ursa_join (no result): 0 when the thread had finished (released here), 1 queued as its joiner
 * (woken when it finishes; then ursa__join_waiter_end must release it), -ESRCH, -EINVAL (detached
 * or already joined), -EDEADLK (the calling thread itself).  A cycle through the caller's own
 * waits is the caller's to find (joins by call waiters are not visible to ursa_join). */
URSA__WAITER_API int  ursa__join_waiter(ursa_thread_t h, struct ursa__waiter_call *c);
URSA__WAITER_API void ursa__join_waiter_end(struct ursa__waiter_call *c);

#endif /* URSA_SCHED_WAITER_H */
