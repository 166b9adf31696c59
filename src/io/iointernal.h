/*
 * iointernal.h - what io.c (engines, waits, the pool) gives calls.c (the public calls): the
 * descriptor table's entry and the waits.  Not for any other layer.
 */
#ifndef URSA_IO_INTERNAL_H
#define URSA_IO_INTERNAL_H

#include "io.h"

#include <sys/uio.h>
#include <sys/types.h>

/* What a descriptor is, as far as the calls care (fdent.mode; relaxed atomics: a stale value only
 * costs a system call). */
enum { FD_UNKNOWN = 0,      /* not looked at since it was opened, or since ursa_close          */
       FD_NB = 1,           /* pollable (socket, pipe, ...), O_NONBLOCK set by ursa               */
       FD_FILE = 2,         /* a regular file or a block device: the offload pool                 */
       FD_SOCK = 3 };       /* a socket, O_NONBLOCK set by ursa: io_uring receives on the ring    */

struct engine;
struct ionode;
struct fdent {
  ursa__spin_t   lock;         /* several VPs: guards everything below but mode                   */
  uint8_t        mode;         /* FD_* (atomic, relaxed)                                            */
  uint8_t        registered;   /* fd is in home's epoll set                                         */
  uint32_t       gen;          /* bumped when the number names a new file (close, accept, open)    */
  uint32_t       armed;        /* events armed (one-shot) in home's epoll set                       */
  struct engine *home;         /* the engine fd is registered in, NULL: none yet                   */
  struct ionode *waiters;      /* the nodes of the threads waiting on fd                           */
  uint32_t       ring_ops;     /* receives on some VP's ring in flight (atomic, seq_cst): ursa_close
                                  cancels them                                                     */
};

/* A node of a wait (on the waiting thread's stack): opaque to calls.c, which gives room for it. */
struct ionode_room { void *w[5]; };

URSA_HIDDEN struct fdent *ursa__io_fdent(int fd);          /* NULL for fd < 0 or beyond the table */
URSA_HIDDEN int  ursa__io_errno(void);
URSA_HIDDEN int  ursa__io_fd_wait(int fd, uint32_t events, uint64_t deadline);
URSA_HIDDEN int  ursa__io_fd_wait_many(const int *fds, const uint32_t *events, unsigned n,
                                       struct ionode_room *nodes, uint64_t deadline);
URSA_HIDDEN int  ursa__io_fd_close(int fd);
URSA_HIDDEN void ursa__io_fd_new(int fd, uint8_t mode);
URSA_HIDDEN int  ursa__io_offload(void *(*fn)(void *), void *arg, void **result);
/* A receive or a send (one, which may be short) on socket fd as an operation of the VP's ring
 * (io_uring engine): msg as recvmsg's / sendmsg's.  >= 0, -errno, -EBADF when ursa_close ended
 * it, -ENOSYS under epoll or beyond the table. */
struct msghdr;
URSA_HIDDEN ssize_t ursa__io_uring_sock(int fd, struct msghdr *msg, int flags, bool send);
/* A file operation on the VP's ring (io_uring engine), or -ENOSYS under epoll. */
enum { URSA__OP_READV, URSA__OP_WRITEV, URSA__OP_FSYNC, URSA__OP_OPENAT };
URSA_HIDDEN ssize_t ursa__io_uring_op(int op, int fd, const struct iovec *iov, int cnt, off_t off, const char *path,
                                      int flags, unsigned mode);

#endif /* URSA_IO_INTERNAL_H */
