/*
 * io.c - the system calls on sockets and pipes that block only the calling POSIX thread (issue
 * #18 item 4): read, write, readv, writev, recv, send, recvfrom, sendto, recvmsg, sendmsg,
 * accept, accept4, connect, poll, ppoll, select, pselect, epoll_wait, epoll_pwait, and close.
 *
 * Shape.  With the io_uring engine, a blocking socket's read, write, recv or send (no address, no
 * SO_RCVTIMEO / SO_SNDTIMEO set here) is one operation on the VP's ring (ursa__io_sock_op): the
 * kernel completes it when the data or the room is there.  Otherwise an ursa thread's call first
 * makes its system call without blocking, never touching the
 * descriptor's flags where it can help it: a socket gets MSG_DONTWAIT (read and write on a socket
 * are recv and send), a pipe or FIFO preadv2 / pwritev2 with RWF_NOWAIT (Linux 5.8 and later; a
 * descriptor that refuses it, a terminal say, is asked with poll(2) first and then read as the
 * program asked, see "Limits").  When that says EAGAIN, the thread waits for readiness in its
 * VP's I/O engine (ursa__io_wait, src/io/waiter.h) while the VP runs other threads, then tries
 * again.  accept and connect have no per-call flag: the descriptor is made non-blocking for the
 * one call and put back at once, under a lock of this layer (two threads of the program never
 * see each other's change).
 *
 * POSIX's semantics, as glibc gives them on Linux:
 *   - a descriptor the program made non-blocking (O_NONBLOCK, FIONBIO) gets EAGAIN as before:
 *     F_GETFL is asked only when the try said EAGAIN, i.e. only before a wait;
 *   - a blocking write or send writes everything (waiting whenever the buffer is full) unless an
 *     error comes first, when the bytes written so far are returned; a read returns what is there;
 *   - SO_RCVTIMEO and SO_SNDTIMEO set with setsockopt through this layer bound the wait (EAGAIN
 *     when they pass; EINPROGRESS for connect), as Linux does;
 *   - EINTR is never invented: a parked thread is not interrupted by a signal (the VP's kernel
 *     thread runs the handler), so these calls do not return EINTR;
 *   - every call here is a cancellation point: a pending request is acted on at entry, and a
 *     request that arrives while the thread waits ends the wait (pthread_cancel finds the wait's
 *     record in the thread's io_wait slot, src/io/waiter.h) and the thread is cancelled;
 *   - close wakes the threads of the process waiting on that descriptor, which then fail with
 *     EBADF (ursa_close; Linux would leave them blocked), and forgets the engine's registration.
 * Regular files, block devices and directories keep their system call (blocking the VP while the
 * disk answers: the page cache answers most reads at once), as do calls from a kernel thread ursa
 * did not make and from libursa itself (boot.c's return-address rule: libursa's I/O layer calls
 * read, poll, close, ... too).
 *
 * The kind of each descriptor (socket, pipe, pollable other, file) is cached in a table indexed
 * by its number (relaxed byte loads and stores: a stale kind costs one system call, see below).
 * It is reset by the calls of this layer that end or make a descriptor (close, dup2, dup3,
 * socket, socketpair, pipe, pipe2, accept); a number closed and reused behind its back (fclose,
 * then socket) is found out by the next call when it says ENOTSOCK or, for a number cached as a
 * file, not at all: that call blocks its VP (see "Limits" in docs/GUIDE.md).
 *
 * Limits.  A descriptor that refuses RWF_NOWAIT (a terminal, a character device) is polled and
 * then read with the blocking call, which blocks the VP if another reader took the data in
 * between.  ppoll, pselect and epoll_pwait with a signal mask, and recvmsg with MSG_WAITALL,
 * keep glibc's call (they block the VP).  glibc's own calls (stdio's fwrite, getaddrinfo's
 * sockets) never come here: they block the VP.
 */
#include "upt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define IO_ENTER(me)                                                                             \
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self()

/* errno of the system call just made: read through a call that is not inlined (its address must
 * not be kept across a wait, after which the thread may run on another kernel thread). */
__attribute__((noinline)) static int err_now(void) {
  __asm__ volatile("" ::: "memory");
  return errno;
}

/* ---- the kinds of descriptors ------------------------------------------------------------------ */

enum { K_UNKNOWN = 0,
       K_SOCK = 1,      /* MSG_DONTWAIT                                                       */
       K_PIPE = 2,      /* pipe, FIFO, anything else: RWF_NOWAIT                               */
       K_POLL = 3,      /* pollable, refuses RWF_NOWAIT: poll(2) first, then the call          */
       K_FILE = 4,      /* regular file, block device, directory: the system call              */
       K_MASK = 7,
       K_RCVTIMEO = 0x10, K_SNDTIMEO = 0x20 };   /* set through setsockopt here: ask getsockopt */

#define FDK_MAX (1u << 20)
static uint8_t fdk[FDK_MAX];            /* relaxed atomics (above) */

static void kind_set(int fd, int k) {
  if (fd >= 0 && (unsigned)fd < FDK_MAX) __atomic_store_n(&fdk[fd], (uint8_t)k, __ATOMIC_RELAXED);
}

/* fd's kind and flags (K_*), from the table or fstat; K_FILE when fstat fails (the call then
 * fails as the system call does). */
static int kind_of(int fd) {
  struct stat st;
  int k = fd >= 0 && (unsigned)fd < FDK_MAX ? __atomic_load_n(&fdk[fd], __ATOMIC_RELAXED) : 0;
  if ((k & K_MASK) != 0) return k;
  if (fstat(fd, &st) != 0) return K_FILE;
  if (S_ISSOCK(st.st_mode)) k = K_SOCK;
  else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode)) k = K_FILE;
  else k = K_PIPE;
  kind_set(fd, k);
  return k;
}

/* ---- waiting ------------------------------------------------------------------------------------ */

/* Whether the program made fd non-blocking (then EAGAIN is its answer). */
static int user_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The deadline of SO_RCVTIMEO (rcv) or SO_SNDTIMEO on fd when the program set one here, else 0. */
static uint64_t sock_deadline(int fd, int k, int rcv) {
  struct timeval tv;
  socklen_t l = sizeof tv;
  if (!(k & (rcv ? K_RCVTIMEO : K_SNDTIMEO))) return 0;
  if (getsockopt(fd, SOL_SOCKET, rcv ? SO_RCVTIMEO : SO_SNDTIMEO, &tv, &l) != 0) return 0;
  if (tv.tv_sec == 0 && tv.tv_usec == 0) return 0;
  return now_ns() + (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

/* Waits for events on the n descriptors fds (see ursa__io_wait), cancellably when me's
 * cancellation is enabled: a request acts here (the function does not return then). */
static int wait_fds(struct upt_thread *me, const int *fds, const uint32_t *ev, unsigned n,
                    struct ursa__io_node *nodes, uint64_t dl) {
  struct ursa__io_cancel c = { &me->lock, &me->io_wait, &me->cancel_pending };
  int r = ursa__io_wait(fds, ev, n, nodes, dl, me->cancel_state == PTHREAD_CANCEL_ENABLE ? &c : NULL);
  if (r == -ECANCELED) upt_cancel_now(me);
  return r;
}

static int wait_fd(struct upt_thread *me, int fd, uint32_t ev, uint64_t dl) {
  struct ursa__io_node node;
  return wait_fds(me, &fd, &ev, 1, &node, dl);
}

/* ---- the common loop ------------------------------------------------------------------------------ */

/* One transfer: buffers iov[0..cnt), the socket's flags and message for sockets. */
struct xfer {
  int fd, k, out;               /* out: write / send                                          */
  int flags;                    /* the program's flags (sockets)                              */
  struct iovec *iov;
  int cnt;
  struct msghdr *msg;           /* recvmsg / sendmsg / recvfrom / sendto: the program's header */
  int ring;                     /* no address and no control data: an io_uring operation may do */
};

/* One try without blocking (or, block != 0, the program's own blocking call). */
static ssize_t try_once(struct xfer *x, int block) {
  int k = x->k & K_MASK;
  if (k == K_SOCK) {
    struct msghdr m, *mp = x->msg;
    if (mp == NULL) { memset(&m, 0, sizeof m); mp = &m; }
    mp->msg_iov = x->iov;
    mp->msg_iovlen = (size_t)x->cnt;
    return x->out ? REAL(sendmsg)(x->fd, mp, x->flags | (block ? 0 : MSG_DONTWAIT))
                  : REAL(recvmsg)(x->fd, mp, x->flags | (block ? 0 : MSG_DONTWAIT));
  }
  if (k == K_PIPE && !block)
    return x->out ? pwritev2(x->fd, x->iov, x->cnt, -1, RWF_NOWAIT) : preadv2(x->fd, x->iov, x->cnt, -1, RWF_NOWAIT);
  if (k == K_POLL && !block) {            /* ready? then the call, which should not block */
    struct pollfd p = { x->fd, x->out ? POLLOUT : POLLIN, 0 };
    int r = REAL(poll)(&p, 1, 0);
    if (r == 0) { errno = EAGAIN; return -1; }
  }
  return x->out ? REAL(writev)(x->fd, x->iov, x->cnt) : REAL(readv)(x->fd, x->iov, x->cnt);
}

/* Drops the first n bytes of x's buffers (a short write goes on with the rest). */
static void advance(struct xfer *x, size_t n) {
  while (x->cnt > 0 && n >= x->iov->iov_len) { n -= x->iov->iov_len; x->iov++; x->cnt--; }
  if (x->cnt > 0) { x->iov->iov_base = (char *)x->iov->iov_base + n; x->iov->iov_len -= n; }
}

#define RING_NO ((ssize_t)-2)     /* ring_xfer: not done on the ring, use the loop */

/* A socket's transfer as operations on the VP's ring (io_uring: src/io/waiter.h's
 * ursa__io_sock_op): no try that says EAGAIN, no readiness to wait for and try again; the kernel
 * completes the receive or the send, collected with the VP's next look at its ring.  Not for a
 * descriptor the program made non-blocking (the ring would wait), nor with SO_RCVTIMEO /
 * SO_SNDTIMEO set here (the loop has the deadline).  The count, -1 with errno, or RING_NO. */
static int ring_engine = -1;      /* the engine is io_uring: 1, not: 0, not known yet: -1 (relaxed) */

static ssize_t ring_xfer(struct upt_thread *me, struct xfer *x, size_t total) {
  struct ursa__io_cancel c = { &me->lock, &me->io_wait, &me->cancel_pending };
  size_t done = 0;
  int ring = __atomic_load_n(&ring_engine, __ATOMIC_RELAXED);
  if (ring < 0) {                   /* fixed by ursa_init, before the program's main */
    ring = strcmp(ursa_io_engine(), "io_uring") == 0;
    __atomic_store_n(&ring_engine, ring, __ATOMIC_RELAXED);
  }
  if (!ring || user_nonblock(x->fd)) return RING_NO;
  for (;;) {
    struct msghdr m;
    ssize_t r;
    memset(&m, 0, sizeof m);
    m.msg_iov = x->iov;
    m.msg_iovlen = (size_t)x->cnt;
    r = ursa__io_sock_op(x->fd, &m, x->flags, x->out != 0, me->cancel_state == PTHREAD_CANCEL_ENABLE ? &c : NULL);
    if (r == -ECANCELED) upt_cancel_now(me);
    if (r < 0) {
      if (done) return (ssize_t)done;
      if (r == -ENOSYS || r == -ENOTSOCK) return RING_NO;   /* no ring; a stale kind: the loop */
      return upt_errno((int)-r);
    }
    if (!x->out) return r;
    done += (size_t)r;
    if (done >= total || r == 0) return (ssize_t)done;
    advance(x, (size_t)r);
  }
}

/* A read or write as the blocking system call does it, blocking only me.  x->iov is the caller's
 * copy for a write (advanced after a short write).  Returns the count or -1 with errno. */
static ssize_t xfer_run(struct upt_thread *me, struct xfer *x) {
  size_t total = 0, done = 0;
  uint64_t dl = 0;
  int i, timed = 0;
  upt_testcancel(me);
  for (i = 0; i < x->cnt; i++) total += x->iov[i].iov_len;
  if (x->ring && (x->k & K_MASK) == K_SOCK && !(x->k & (x->out ? K_SNDTIMEO : K_RCVTIMEO))) {
    ssize_t r = ring_xfer(me, x, total);
    if (r != RING_NO) return r;
  }
  for (;;) {
    ssize_t r;
    int e, w;
    if ((x->k & K_MASK) == K_FILE) {
      r = try_once(x, 1);
      return r < 0 && done ? (ssize_t)done : (r < 0 ? -1 : r + (ssize_t)done);
    }
    r = try_once(x, 0);
    if (r >= 0) {
      /* a read returns what came; a write goes on while the rest fits (a datagram is whole) */
      if (!x->out) return r;
      done += (size_t)r;
      if (done >= total || r == 0) return (ssize_t)done;
      advance(x, (size_t)r);
      continue;
    }
    e = err_now();
    if (e == EINTR) continue;
    if (e == ENOTSOCK && (x->k & K_MASK) == K_SOCK) {     /* a number reused: look again */
      kind_set(x->fd, K_UNKNOWN);
      x->k = kind_of(x->fd);
      continue;
    }
    if ((e == EOPNOTSUPP || e == EINVAL) && (x->k & K_MASK) == K_PIPE) {   /* no RWF_NOWAIT here */
      x->k = (x->k & ~K_MASK) | K_POLL;
      kind_set(x->fd, x->k);
      continue;
    }
    if (e != EAGAIN && e != EWOULDBLOCK) goto fail;
    if (user_nonblock(x->fd)) goto fail;                  /* the program's choice: EAGAIN */
    if (!timed) { dl = sock_deadline(x->fd, x->k, !x->out); timed = 1; }
    w = wait_fd(me, x->fd, x->out ? EPOLLOUT : EPOLLIN, dl);
    if (w > 0) continue;
    if (w == -ETIMEDOUT) { e = EAGAIN; goto fail; }
    if (w == -EBADF) { e = EBADF; goto fail; }
    if (w == -EPERM) { x->k = (x->k & ~K_MASK) | K_FILE; continue; }    /* always ready: a file */
    /* -ENOSYS (no engine), -EINVAL (beyond the engine's table), -ENOMEM: the blocking call */
    r = try_once(x, 1);
    if (r < 0) { e = err_now(); goto fail; }
    return (ssize_t)done + r;
  fail:
    if (done) return (ssize_t)done;
    return upt_errno(e);
  }
}

/* A copy of the program's iovecs that xfer_run may advance (on the stack up to 8). */
#define IOV_STACK 8
static struct iovec *iov_copy(const struct iovec *iov, int cnt, struct iovec *stack) {
  struct iovec *v;
  if (cnt < 0 || cnt > IOV_MAX) return NULL;
  v = cnt <= IOV_STACK ? stack : malloc((size_t)cnt * sizeof *v);
  if (v != NULL && cnt > 0) memcpy(v, iov, (size_t)cnt * sizeof *v);
  return v;
}

/* ---- read and write and their vector forms -------------------------------------------------------- */

static ssize_t rw1(struct upt_thread *me, int fd, void *buf, size_t n, int out) {
  struct iovec v = { buf, n };
  struct xfer x = { fd, kind_of(fd), out, 0, &v, 1, NULL, 1 };
  return xfer_run(me, &x);
}

UPT_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  IO_ENTER(me);
  if (me == NULL) return REAL(read)(fd, buf, n);
  return rw1(me, fd, buf, n, 0);
}

UPT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  IO_ENTER(me);
  if (me == NULL) return REAL(write)(fd, buf, n);
  return rw1(me, fd, (void *)(uintptr_t)buf, n, 1);
}

static ssize_t rwv(struct upt_thread *me, int fd, const struct iovec *iov, int cnt, int out) {
  struct iovec vs[IOV_STACK], *v;
  struct xfer x;
  ssize_t r;
  if (cnt < 0 || cnt > IOV_MAX) return upt_errno(EINVAL);
  if ((v = iov_copy(iov, cnt, vs)) == NULL) return upt_errno(ENOMEM);
  memset(&x, 0, sizeof x);
  x.fd = fd; x.k = kind_of(fd); x.out = out; x.iov = v; x.cnt = cnt; x.ring = 1;
  r = xfer_run(me, &x);
  if (v != vs) free(v);
  return r;
}

UPT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  IO_ENTER(me);
  if (me == NULL) return REAL(readv)(fd, iov, cnt);
  return rwv(me, fd, iov, cnt, 0);
}

UPT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  IO_ENTER(me);
  if (me == NULL) return REAL(writev)(fd, iov, cnt);
  return rwv(me, fd, iov, cnt, 1);
}

/* ---- sockets ------------------------------------------------------------------------------------------ */

/* recv / recvfrom: MSG_WAITALL on a stream waits for all n bytes (or the end, or an error). */
static ssize_t recv_common(struct upt_thread *me, int fd, void *buf, size_t n, int flags,
                           struct sockaddr *src, socklen_t *len) {
  struct msghdr m;
  struct iovec v = { buf, n };
  struct xfer x;
  size_t got = 0;
  ssize_t r;
  memset(&m, 0, sizeof m);
  m.msg_name = src;
  m.msg_namelen = src && len ? *len : 0;
  memset(&x, 0, sizeof x);
  x.fd = fd; x.k = kind_of(fd); x.flags = flags & ~MSG_WAITALL; x.iov = &v; x.cnt = 1; x.msg = &m;
  x.ring = src == NULL;
  if ((x.k & K_MASK) != K_SOCK) {                        /* ENOTSOCK, EBADF: as the call says */
    upt_testcancel(me);
    return REAL(recvfrom)(fd, buf, n, flags, src, len);
  }
  for (;;) {
    r = xfer_run(me, &x);
    if (r < 0) return got ? (ssize_t)got : r;
    if (src && len) *len = m.msg_namelen;
    got += (size_t)r;
    if (!(flags & MSG_WAITALL) || r == 0 || got >= n || (flags & MSG_PEEK)) return (ssize_t)got;
    v.iov_base = (char *)buf + got;                     /* xfer_run may have left v alone */
    v.iov_len = n - got;
    x.iov = &v;
    x.cnt = 1;
  }
}

UPT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  IO_ENTER(me);
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(recv)(fd, buf, n, flags);
  return recv_common(me, fd, buf, n, flags, NULL, NULL);
}

UPT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len) {
  IO_ENTER(me);
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(recvfrom)(fd, buf, n, flags, src, len);
  return recv_common(me, fd, buf, n, flags, src, len);
}

static ssize_t send_common(struct upt_thread *me, int fd, const void *buf, size_t n, int flags,
                           const struct sockaddr *dst, socklen_t len) {
  struct msghdr m;
  struct iovec v = { (void *)(uintptr_t)buf, n };
  struct xfer x;
  memset(&m, 0, sizeof m);
  m.msg_name = (void *)(uintptr_t)dst;
  m.msg_namelen = dst ? len : 0;
  memset(&x, 0, sizeof x);
  x.fd = fd; x.k = kind_of(fd); x.out = 1; x.flags = flags; x.iov = &v; x.cnt = 1; x.msg = &m;
  x.ring = dst == NULL;
  if ((x.k & K_MASK) != K_SOCK) {
    upt_testcancel(me);
    return REAL(sendto)(fd, buf, n, flags, dst, len);
  }
  return xfer_run(me, &x);
}

UPT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  IO_ENTER(me);
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(send)(fd, buf, n, flags);
  return send_common(me, fd, buf, n, flags, NULL, 0);
}

UPT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst, socklen_t len) {
  IO_ENTER(me);
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(sendto)(fd, buf, n, flags, dst, len);
  return send_common(me, fd, buf, n, flags, dst, len);
}

static ssize_t msg_common(struct upt_thread *me, int fd, struct msghdr *msg, int flags, int out) {
  struct iovec vs[IOV_STACK], *v;
  struct iovec *orig_iov;
  size_t orig_len;
  struct xfer x;
  ssize_t r;
  int k = kind_of(fd);
  if ((k & K_MASK) != K_SOCK || msg == NULL || msg->msg_iovlen > IOV_MAX) {
    upt_testcancel(me);
    return out ? REAL(sendmsg)(fd, msg, flags) : REAL(recvmsg)(fd, msg, flags);
  }
  if ((v = iov_copy(msg->msg_iov, (int)msg->msg_iovlen, vs)) == NULL) return upt_errno(ENOMEM);
  orig_iov = msg->msg_iov;
  orig_len = msg->msg_iovlen;
  memset(&x, 0, sizeof x);
  x.fd = fd; x.k = k; x.out = out; x.flags = flags; x.iov = v; x.cnt = (int)msg->msg_iovlen; x.msg = msg;
  r = xfer_run(me, &x);
  msg->msg_iov = orig_iov;                              /* the program's header, as it gave it */
  msg->msg_iovlen = orig_len;
  if (v != vs) free(v);
  return r;
}

UPT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  IO_ENTER(me);
  if (me == NULL || (flags & (MSG_DONTWAIT | MSG_WAITALL))) return REAL(recvmsg)(fd, msg, flags);
  return msg_common(me, fd, msg, flags, 0);
}

UPT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  struct msghdr m;
  IO_ENTER(me);
  if (me == NULL || (flags & MSG_DONTWAIT) || msg == NULL) return REAL(sendmsg)(fd, msg, flags);
  m = *msg;
  return msg_common(me, fd, &m, flags, 1);
}

UPT_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
  int r = REAL(setsockopt)(fd, level, name, val, len);
  if (r == 0 && level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO) &&
      fd >= 0 && (unsigned)fd < FDK_MAX) {
    int k = kind_of(fd);
    kind_set(fd, k | (name == SO_RCVTIMEO ? K_RCVTIMEO : K_SNDTIMEO));
  }
  return r;
}

/* accept and connect make the socket non-blocking for one call.  The flag is the open file's, so
 * the change is made and undone under a lock of this layer (one of 64, by descriptor): two of the
 * program's threads never save each other's temporary flag. */
static uint32_t nb_locks[64];

/* Runs op (accept4 or connect) on fd once without blocking; *user_nb tells whether the program
 * had made fd non-blocking (then op ran as it asked).  op's result, errno in *err. */
struct nbop { int kind; struct sockaddr *addr; socklen_t *alen; const struct sockaddr *caddr; socklen_t clen; int flags; };
static int nb_once(int fd, const struct nbop *o, int *user_nb, int *err) {
  uint32_t *l = &nb_locks[(unsigned)fd % 64u];
  int fl, r;
  upt_spin_lock(l);
  fl = fcntl(fd, F_GETFL);
  if (fl < 0) { *err = err_now(); upt_spin_unlock(l); return -1; }
  *user_nb = (fl & O_NONBLOCK) != 0;
  if (!*user_nb) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  r = o->kind ? REAL(connect)(fd, o->caddr, o->clen) : REAL(accept4)(fd, o->addr, o->alen, o->flags);
  *err = r < 0 ? err_now() : 0;
  if (!*user_nb) (void)fcntl(fd, F_SETFL, fl);
  upt_spin_unlock(l);
  return r;
}

static int accept_common(struct upt_thread *me, int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  struct nbop o = { 0, addr, len, NULL, 0, flags };
  uint64_t dl = 0;
  int timed = 0, nb, e, c, w;
  upt_testcancel(me);
  for (;;) {
    c = nb_once(fd, &o, &nb, &e);
    if (c >= 0) { kind_set(c, K_SOCK); return c; }
    if (e == EINTR) continue;
    if ((e != EAGAIN && e != EWOULDBLOCK) || nb) return upt_errno(e);
    if (!timed) { dl = sock_deadline(fd, kind_of(fd), 1); timed = 1; }   /* Linux: SO_RCVTIMEO */
    w = wait_fd(me, fd, EPOLLIN, dl);
    if (w > 0) continue;
    if (w == -ETIMEDOUT) return upt_errno(EAGAIN);
    if (w == -EBADF) return upt_errno(EBADF);
    if (w == -EPERM) return upt_errno(ENOTSOCK);
    c = REAL(accept4)(fd, addr, len, flags);               /* no engine: the blocking call */
    if (c >= 0) kind_set(c, K_SOCK);
    return c;
  }
}

UPT_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
  IO_ENTER(me);
  if (me == NULL) return REAL(accept)(fd, addr, len);
  return accept_common(me, fd, addr, len, 0);
}

UPT_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  IO_ENTER(me);
  if (me == NULL) return REAL(accept4)(fd, addr, len, flags);
  return accept_common(me, fd, addr, len, flags);
}

UPT_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  struct nbop o = { 1, NULL, NULL, addr, len, 0 };
  uint64_t dl = 0;
  int timed = 0, nb, e, r, w;
  socklen_t sl = sizeof e;
  IO_ENTER(me);
  if (me == NULL) return REAL(connect)(fd, addr, len);
  upt_testcancel(me);
  for (;;) {
    r = nb_once(fd, &o, &nb, &e);
    if (r == 0) return 0;
    if (nb || (e != EINPROGRESS && e != EAGAIN && e != EINTR)) return upt_errno(e);
    /* in progress (a Unix socket's full backlog says EAGAIN: then try again once writable) */
    if (!timed) { dl = sock_deadline(fd, kind_of(fd), 0); timed = 1; }    /* Linux: SO_SNDTIMEO */
    for (;;) {
      struct pollfd p = { fd, POLLOUT, 0 };
      w = wait_fd(me, fd, EPOLLOUT, dl);
      if (w == -ETIMEDOUT) return upt_errno(EINPROGRESS);
      if (w == -EBADF) return upt_errno(EBADF);
      if (w <= 0) {                                       /* no engine: poll(2) blocks the VP */
        uint64_t now = dl ? now_ns() : 0;
        int ms = dl == 0 ? -1 : (dl <= now ? 0 : (int)((dl - now + 999999u) / 1000000u));
        if (REAL(poll)(&p, 1, ms) == 0) return upt_errno(EINPROGRESS);
        break;
      }
      if (REAL(poll)(&p, 1, 0) == 1) break;
    }
    if (e == EAGAIN) continue;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0) return upt_errno(err_now());
    return e ? upt_errno(e) : 0;
  }
}

/* ---- readiness: poll, ppoll, select, pselect, epoll_wait -------------------------------------------- */

#define POLL_STACK 16

/* poll(2) blocking only me until deadline dl (CLOCK_MONOTONIC ns, 0: none; UINT64_MAX: return
 * at once).  The descriptors are asked with poll(2) without blocking; when none is ready the
 * thread waits in the engine for the events asked and asks again. */
static int poll_until(struct upt_thread *me, struct pollfd *fds, nfds_t n, uint64_t dl) {
  int fdv_s[POLL_STACK];
  uint32_t evv_s[POLL_STACK];
  struct ursa__io_node nodes_s[POLL_STACK];
  int *fdv = fdv_s;
  uint32_t *evv = evv_s;
  struct ursa__io_node *nodes = nodes_s;
  unsigned i, k;
  int r;
  upt_testcancel(me);
  if (n > 0 && n > (nfds_t)INT32_MAX) return upt_errno(EINVAL);
  for (;;) {
    r = REAL(poll)(fds, n, 0);
    if (r < 0 && err_now() == EINTR) continue;
    if (r != 0 || dl == UINT64_MAX) break;
    if (fdv == fdv_s && n > POLL_STACK) {
      fdv = malloc(n * sizeof *fdv);
      evv = malloc(n * sizeof *evv);
      nodes = malloc(n * sizeof *nodes);
      if (fdv == NULL || evv == NULL || nodes == NULL) { r = upt_errno(ENOMEM); break; }
    }
    for (i = 0, k = 0; i < n; i++) {
      short e = fds[i].events;
      if (fds[i].fd < 0) continue;
      fdv[k] = fds[i].fd;
      evv[k] = (e & (POLLIN | POLLRDNORM | POLLRDBAND) ? EPOLLIN : 0) |
               (e & (POLLOUT | POLLWRNORM | POLLWRBAND) ? EPOLLOUT : 0) | (e & POLLPRI ? EPOLLPRI : 0) |
               (e & POLLRDHUP ? EPOLLRDHUP : 0);
      k++;
    }
    r = wait_fds(me, fdv, evv, k, nodes, dl);
    if (r == -ETIMEDOUT) { r = 0; break; }
    if (r > 0 || r == -EBADF) continue;             /* -EBADF: closed; poll(2) says POLLNVAL */
    /* no engine, a descriptor beyond its table, a file: poll(2) with what is left of the time */
    {
      uint64_t now = dl ? now_ns() : 0;
      int ms = dl == 0 ? -1 : (dl <= now ? 0 : (int)((dl - now + 999999u) / 1000000u));
      r = REAL(poll)(fds, n, ms);
      if (r < 0 && err_now() == EINTR) continue;
      break;
    }
  }
  if (fdv != fdv_s) { free(fdv); free(evv); free(nodes); }
  return r;
}

static uint64_t dl_after_ms(int ms) {
  if (ms < 0) return 0;
  if (ms == 0) return UINT64_MAX;
  return now_ns() + (uint64_t)ms * 1000000u;
}

static uint64_t dl_after_ts(const struct timespec *t) {
  if (t == NULL) return 0;
  if (t->tv_sec == 0 && t->tv_nsec == 0) return UINT64_MAX;
  if (t->tv_sec > (time_t)1 << 32) return 0;                    /* as good as forever */
  return now_ns() + (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

UPT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
  IO_ENTER(me);
  if (me == NULL) return REAL(poll)(fds, n, timeout);
  return poll_until(me, fds, n, dl_after_ms(timeout));
}

UPT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask) {
  IO_ENTER(me);
  if (me == NULL || mask != NULL) return REAL(ppoll)(fds, n, t, mask);
  if (t && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)) return upt_errno(EINVAL);
  return poll_until(me, fds, n, dl_after_ts(t));
}

/* select as poll: the sets become pollfds (POLLNVAL: EBADF, as select says for a closed one). */
static int select_until(struct upt_thread *me, int nfds, fd_set *rs, fd_set *ws, fd_set *es, uint64_t dl) {
  struct pollfd ps[64], *p = ps;
  int i, k = 0, r, count = 0;
  if (nfds < 0 || nfds > FD_SETSIZE) return upt_errno(EINVAL);
  if (nfds > 64 && (p = malloc((size_t)nfds * sizeof *p)) == NULL) return upt_errno(ENOMEM);
  for (i = 0; i < nfds; i++) {
    short e = (short)((rs && FD_ISSET(i, rs) ? POLLIN : 0) | (ws && FD_ISSET(i, ws) ? POLLOUT : 0) |
                      (es && FD_ISSET(i, es) ? POLLPRI : 0));
    if (e == 0) continue;
    p[k].fd = i;
    p[k].events = e;
    p[k].revents = 0;
    k++;
  }
  r = poll_until(me, p, (nfds_t)k, dl);
  if (r >= 0) {
    for (i = 0; i < k; i++)
      if (p[i].revents & POLLNVAL) { r = upt_errno(EBADF); break; }
  }
  if (r >= 0) {
    if (rs) FD_ZERO(rs);
    if (ws) FD_ZERO(ws);
    if (es) FD_ZERO(es);
    for (i = 0; i < k; i++) {
      short v = p[i].revents, e = p[i].events;
      if ((e & POLLIN) && (v & (POLLIN | POLLHUP | POLLERR))) { FD_SET(p[i].fd, rs); count++; }
      if ((e & POLLOUT) && (v & (POLLOUT | POLLERR))) { FD_SET(p[i].fd, ws); count++; }
      if ((e & POLLPRI) && (v & POLLPRI)) { FD_SET(p[i].fd, es); count++; }
    }
    r = count;
  }
  if (p != ps) free(p);
  return r;
}

/* Linux's select writes back the time left. */
static void time_left(struct timeval *tv, uint64_t dl) {
  uint64_t now = now_ns(), left = dl > now && dl != UINT64_MAX ? dl - now : 0;
  tv->tv_sec = (time_t)(left / 1000000000u);
  tv->tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
}

UPT_EXPORT int select(int nfds, fd_set *rs, fd_set *ws, fd_set *es, struct timeval *tv) {
  uint64_t dl;
  int r;
  IO_ENTER(me);
  if (me == NULL) return REAL(select)(nfds, rs, ws, es, tv);
  if (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000)) return upt_errno(EINVAL);
  if (tv == NULL) dl = 0;
  else if (tv->tv_sec == 0 && tv->tv_usec == 0) dl = UINT64_MAX;
  else if (tv->tv_sec > (time_t)1 << 32) dl = 0;
  else dl = now_ns() + (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
  r = select_until(me, nfds, rs, ws, es, dl);
  if (tv && dl != 0) time_left(tv, dl);
  return r;
}

UPT_EXPORT int pselect(int nfds, fd_set *rs, fd_set *ws, fd_set *es, const struct timespec *t,
                       const sigset_t *mask) {
  IO_ENTER(me);
  if (me == NULL || mask != NULL) return REAL(pselect)(nfds, rs, ws, es, t, mask);
  if (t && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)) return upt_errno(EINVAL);
  return select_until(me, nfds, rs, ws, es, dl_after_ts(t));
}

/* An epoll instance is itself readable while it has events: wait for that. */
static int epoll_until(struct upt_thread *me, int epfd, struct epoll_event *evs, int max, uint64_t dl) {
  int r, w;
  upt_testcancel(me);
  for (;;) {
    r = REAL(epoll_wait)(epfd, evs, max, 0);
    if (r != 0 || dl == UINT64_MAX) return r;
    w = wait_fd(me, epfd, EPOLLIN, dl);
    if (w == -ETIMEDOUT) return 0;
    if (w == -EBADF) return upt_errno(EBADF);
    if (w <= 0) {
      uint64_t now = dl ? now_ns() : 0;
      return REAL(epoll_wait)(epfd, evs, max, dl == 0 ? -1 : (dl <= now ? 0 : (int)((dl - now + 999999u) / 1000000u)));
    }
  }
}

UPT_EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout) {
  IO_ENTER(me);
  if (me == NULL) return REAL(epoll_wait)(epfd, evs, max, timeout);
  return epoll_until(me, epfd, evs, max, dl_after_ms(timeout));
}

UPT_EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask) {
  IO_ENTER(me);
  if (me == NULL || mask != NULL) return REAL(epoll_pwait)(epfd, evs, max, timeout, mask);
  return epoll_until(me, epfd, evs, max, dl_after_ms(timeout));
}

/* ---- descriptors that end or begin --------------------------------------------------------------- */

UPT_EXPORT int close(int fd) {
  int r;
  IO_ENTER(me);
  if (me == NULL) { kind_set(fd, K_UNKNOWN); return REAL(close)(fd); }
  upt_testcancel(me);
  kind_set(fd, K_UNKNOWN);
  r = ursa_close(fd);                  /* its waiters get EBADF; the engine forgets fd */
  return r < 0 ? upt_errno(-r) : 0;
}

UPT_EXPORT int dup2(int old, int nfd) {
  int r = REAL(dup2)(old, nfd);
  if (r >= 0) kind_set(r, K_UNKNOWN);
  return r;
}

UPT_EXPORT int dup3(int old, int nfd, int flags) {
  int r = REAL(dup3)(old, nfd, flags);
  if (r >= 0) kind_set(r, K_UNKNOWN);
  return r;
}

UPT_EXPORT int socket(int domain, int type, int proto) {
  int r = REAL(socket)(domain, type, proto);
  if (r >= 0) kind_set(r, K_SOCK);
  return r;
}

UPT_EXPORT int socketpair(int domain, int type, int proto, int sv[2]) {
  int r = REAL(socketpair)(domain, type, proto, sv);
  if (r == 0) { kind_set(sv[0], K_SOCK); kind_set(sv[1], K_SOCK); }
  return r;
}

UPT_EXPORT int pipe(int fds[2]) {
  int r = REAL(pipe)(fds);
  if (r == 0) { kind_set(fds[0], K_PIPE); kind_set(fds[1], K_PIPE); }
  return r;
}

UPT_EXPORT int pipe2(int fds[2], int flags) {
  int r = REAL(pipe2)(fds, flags);
  if (r == 0) { kind_set(fds[0], K_PIPE); kind_set(fds[1], K_PIPE); }
  return r;
}

/* ---- _FORTIFY_SOURCE's forms (glibc's would call its own read, not this layer's) -------------- */

extern void __chk_fail(void) __attribute__((noreturn));
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *src,
                       socklen_t *len);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);

UPT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  IO_ENTER(me);
  if (n > buflen) __chk_fail();
  if (me == NULL) return REAL(read)(fd, buf, n);
  return rw1(me, fd, buf, n, 0);
}

UPT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
  IO_ENTER(me);
  if (n > buflen) __chk_fail();
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(recv)(fd, buf, n, flags);
  return recv_common(me, fd, buf, n, flags, NULL, NULL);
}

UPT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                  struct sockaddr *src, socklen_t *len) {
  IO_ENTER(me);
  if (n > buflen) __chk_fail();
  if (me == NULL || (flags & MSG_DONTWAIT)) return REAL(recvfrom)(fd, buf, n, flags, src, len);
  return recv_common(me, fd, buf, n, flags, src, len);
}

UPT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
  IO_ENTER(me);
  if (fdslen / sizeof *fds < n) __chk_fail();
  if (me == NULL) return REAL(poll)(fds, n, timeout);
  return poll_until(me, fds, n, dl_after_ms(timeout));
}
