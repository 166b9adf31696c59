/*
 * waiter.h - the I/O layer's part of the waiter interface: a readiness wait on descriptors that
 * a layer above (the POSIX-threads layer, src/pthread/io.c) can end from another thread, as
 * pthread_cancel must end a read blocked at a cancellation point.
 *
 * Protocol.  The waiter passes a struct ursa__io_cancel naming three words of its own layer: a
 * spin lock (lock), a slot and a flag.  ursa__io_wait publishes its wait record in *slot under
 * *lock (several VPs), then reads *flag (seq_cst): when it is set the wait ends at once with
 * -ECANCELED.  A canceller sets *flag (seq_cst: pairs with that read), then takes *lock and, if
 * *slot is not NULL, calls ursa__io_wait_end(*slot, res) while still holding *lock.  The waiter
 * clears *slot under *lock before ursa__io_wait returns, so the record a canceller finds there is
 * alive while it holds the lock.  Either the canceller finds the record, or the waiter sees the
 * flag: a request is never missed.
 * Lock order: the caller's *lock, then the record's lock (io.c), never an fd's lock after it.
 */
#ifndef URSA_IO_WAITER_H
#define URSA_IO_WAITER_H

#include "../sched/waiter.h"

#include <stdint.h>
#include <sys/types.h>

struct ursa__io_cancel {
  ursa__spin_t *lock;      /* taken by the waiter (to publish) and by the canceller           */
  void        **slot;      /* the waiter's record while it waits, else NULL                    */
  const int    *flag;      /* nonzero: a cancel request (atomic, seq_cst)                       */
};

/* Room for the wait of one descriptor (on the waiter's stack). */
struct ursa__io_node { void *w[5]; };

/* Waits until one of the n descriptors fds[i] has one of events[i] (EPOLLIN, EPOLLOUT, EPOLLPRI;
 * errors and hang-ups always count), its fd is closed with ursa_close (-EBADF), the deadline
 * passes (CLOCK_MONOTONIC ns, 0: none; -ETIMEDOUT) or c (may be NULL) is cancelled (-ECANCELED).
 * > 0: the events of the descriptor that ended the wait; a spurious wake-up is possible, so the
 * caller tries its system call again.  -EPERM: fds[i] cannot be waited for (a regular file:
 * always ready); -ENOSYS: the caller is not an ursa thread of a runtime with an I/O engine;
 * -EINVAL: a descriptor beyond the engine's table (2^21).  nodes has room for n. */
URSA__WAITER_API int ursa__io_wait(const int *fds, const uint32_t *events, unsigned n,
                                   struct ursa__io_node *nodes, uint64_t deadline,
                                   const struct ursa__io_cancel *c);
/* A receive or a send (one, which may be short, as recv / send) on socket fd as an operation of
 * the calling thread's VP's ring (io_uring engine; the descriptor's O_NONBLOCK is not looked at:
 * the caller decides), msg as recvmsg's / sendmsg's, ended by c (may be NULL) as ursa__io_wait:
 * -ECANCELED.  >= 0, -errno, -EBADF (ended by ursa_close), -ENOSYS (the engine is not io_uring,
 * the caller is not an ursa thread, fd beyond the table). */
struct msghdr;
URSA__WAITER_API ssize_t ursa__io_sock_op(int fd, struct msghdr *msg, int flags, bool send,
                                          const struct ursa__io_cancel *c);
/* Ends the wait whose record rec a canceller found in its slot (its lock held) with res: false
 * when something else (readiness, ursa_close, the deadline) ended it first.  A ring operation
 * (ursa__io_sock_op) is asked to stop instead: it ends with -ECANCELED, or with its result when
 * that came first (res is not used then). */
URSA__WAITER_API bool ursa__io_wait_end(void *rec, int res);

#endif /* URSA_IO_WAITER_H */
