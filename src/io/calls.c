/*
 * calls.c - the I/O calls of include/ursa.h: each blocks only the calling ursa thread.
 *
 * Every call has one shape: try the system call without blocking (the descriptor is made
 * O_NONBLOCK at its first use here, as Go does; recv and send pass MSG_DONTWAIT and need not);
 * when it says EAGAIN, wait for readiness in the engine (io.c: ursa__io_fd_wait) and try again.
 * So a short read or write is returned as the system call returned it, and EINTR is retried,
 * never returned.  Regular files (and block devices), for which epoll has no readiness, are read
 * with preadv2(RWF_NOWAIT) first, which the page cache answers at once; what would block goes to
 * the offload pool, as do fsync and openat.  The _timed variants take an absolute deadline on a
 * clock and return -ETIMEDOUT once it passes (a call already running in the offload pool is not
 * abandoned: its deadline is checked before it is handed over).
 * From a kernel thread that is not an ursa thread (or before ursa_init) each call is the plain
 * blocking system call (poll(2) when ursa made the descriptor non-blocking).
 *
 * errno is read through ursa__io_errno right after each system call: a wait may resume the thread
 * on another kernel thread, whose errno lives elsewhere.
 */
#define _GNU_SOURCE
#include "iointernal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Schedule exploration (src/explore/) controls every scheduling decision and the clock, but not
 * the kernel: a call that could wait for a descriptor, a file or the offload pool would block the
 * one kernel thread that runs every ursa thread, or make the run depend on the outside world.
 * Under exploration each call of this file but ursa_close (a plain close(2)) refuses with
 * -ENOTSUP (docs/GUIDE.md, "Finding concurrency bugs"). */
#define EXPLORE_REFUSED()                                                                       \
  do {                                                                                         \
    if (ursa_unlikely(__atomic_load_n(&ursa__g.explore, __ATOMIC_RELAXED))) return -ENOTSUP;   \
  } while (0)

/* Whether the caller is an ursa thread of a runtime whose I/O layer is up. */
static inline bool in_ursa(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp != NULL && vp->io != NULL;
}

static int deadline_of(int clock, const struct timespec *abstime, uint64_t *dl) {
  *dl = 0;
  if (abstime == NULL) return 0;
  return ursa__deadline(clock, abstime, dl);
}

/* Waits until fd has events (EPOLLIN / EPOLLOUT) or deadline: > 0 (try again), -ETIMEDOUT,
 * -EBADF (closed by ursa_close), another error.  Outside ursa: poll(2). */
static int wait_fd(int fd, uint32_t events, uint64_t dl) {
  /* a descriptor beyond the table (above 2^21) waits in poll(2): it blocks its VP */
  if (in_ursa() && ursa__io_fdent(fd) != NULL) return ursa__io_fd_wait(fd, events, dl);
  for (;;) {
    struct pollfd p = { fd, (short)((events & EPOLLIN ? POLLIN : 0) | (events & EPOLLOUT ? POLLOUT : 0)), 0 };
    int ms = -1, r;
    if (dl) {
      uint64_t now = ursa__now();
      if (now >= dl) return -ETIMEDOUT;
      ms = (int)((dl - now + 999999u) / 1000000u);
    }
    r = poll(&p, 1, ms);
    if (r > 0) return p.revents;
    if (r == 0 && dl) continue;                 /* rounding: look at the clock again */
    if (r < 0 && ursa__io_errno() != EINTR) return -ursa__io_errno();
  }
}

/* What fd is (FD_NB or FD_SOCK after making it non-blocking, FD_FILE), cached in its entry;
 * -errno when fd is not open.  Beyond the table: the same, not cached. */
static int fd_prepare(int fd) {
  struct fdent *fe = ursa__io_fdent(fd);
  struct stat st;
  int m, fl;
  if (fe != NULL && (m = __atomic_load_n(&fe->mode, __ATOMIC_RELAXED)) != FD_UNKNOWN) return m;
  if (fstat(fd, &st) != 0) return -ursa__io_errno();
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    m = FD_FILE;
  } else {
    if ((fl = fcntl(fd, F_GETFL)) < 0) return -ursa__io_errno();
    if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -ursa__io_errno();
    m = S_ISSOCK(st.st_mode) ? FD_SOCK : FD_NB;
  }
  if (fe != NULL) __atomic_store_n(&fe->mode, (uint8_t)m, __ATOMIC_RELAXED);
  return m;
}

/* The retry loop: ret = EXPR (a system call returning < 0 and errno on failure); on EAGAIN wait for
 * EVENTS on FD until DL; return the first result or error. */
#define IO_LOOP(fd, events, dl, expr)                                                  \
  for (;;) {                                                                           \
    ssize_t r_ = (expr);                                                               \
    int e_;                                                                            \
    if (r_ >= 0) return r_;                                                            \
    e_ = ursa__io_errno();                                                             \
    if (e_ == EINTR) continue;                                                         \
    if (e_ != EAGAIN && e_ != EWOULDBLOCK) return -e_;                                 \
    if ((e_ = wait_fd((fd), (events), (dl))) < 0) return e_;                           \
  }

/* ---- regular files: RWF_NOWAIT first, then the offload pool ------------------------------------ */

#define WRITE_IOV_STACK 8                  /* iovecs copied on the stack when a write goes on */

struct fileop {
  int                 op, fd, cnt, flags;
  const struct iovec *iov;
  off_t               off;          /* -1: the file position */
  const char         *path;
  mode_t              mode;
  ssize_t             res;          /* >= 0, or -errno */
};

static void *fileop_run(void *arg) {
  struct fileop *o = arg;
  ssize_t r;
  do {
    switch (o->op) {
    case URSA__OP_READV:  r = o->off < 0 ? readv(o->fd, o->iov, o->cnt) : preadv(o->fd, o->iov, o->cnt, o->off); break;
    case URSA__OP_WRITEV: r = o->off < 0 ? writev(o->fd, o->iov, o->cnt) : pwritev(o->fd, o->iov, o->cnt, o->off); break;
    case URSA__OP_FSYNC:  r = fsync(o->fd); break;
    default:        r = openat(o->fd, o->path, o->flags, o->mode); break;
    }
  } while (r < 0 && errno == EINTR);
  o->res = r < 0 ? -errno : r;      /* a pool thread's own errno: it does not switch */
  return NULL;
}

/* Runs o where it may block: the VP's ring (io_uring), else the offload pool, for an ursa
 * thread; here for anyone else. */
static ssize_t fileop_do(struct fileop *o, uint64_t dl) {
  void *unused;
  ssize_t r;
  int err;
  if (dl != 0 && ursa__now() >= dl) return -ETIMEDOUT;
  if (!in_ursa()) { fileop_run(o); return o->res; }
  r = ursa__io_uring_op(o->op, o->fd, o->iov, o->cnt, o->off, o->path, o->flags, (unsigned)o->mode);
  if (r != -ENOSYS) return r;
  if ((err = ursa__io_offload(fileop_run, o, &unused)) != 0) return err;
  return o->res;
}

static ssize_t file_rw(int op, int fd, const struct iovec *iov, int cnt, off_t off, uint64_t dl) {
  struct fileop o;
  struct iovec vs[WRITE_IOV_STACK], *v = NULL;
  ssize_t r, done = 0;
  int c = cnt;
  if (in_ursa()) {                  /* the page cache may answer without blocking */
    r = op == URSA__OP_READV ? preadv2(fd, iov, cnt, off, RWF_NOWAIT) : pwritev2(fd, iov, cnt, off, RWF_NOWAIT);
    if (r >= 0 && op == URSA__OP_READV) return r;      /* a read may be short */
    if (r > 0) {                    /* a write is whole, as write(2) to a file: the rest below */
      size_t total = 0, skip = (size_t)r;
      int i;
      for (i = 0; i < cnt; i++) total += iov[i].iov_len;
      if ((size_t)r >= total) return r;
      v = cnt <= WRITE_IOV_STACK ? vs : malloc((size_t)cnt * sizeof *v);
      if (v == NULL) return r;
      memcpy(v, iov, (size_t)cnt * sizeof *v);
      iov = v;
      while (skip >= v->iov_len) { skip -= v->iov_len; v++; c--; }
      v->iov_base = (char *)v->iov_base + skip;
      v->iov_len -= skip;
      done = r;
      if (off >= 0) off += r;
    }
  }
  memset(&o, 0, sizeof o);
  o.op = op;
  o.fd = fd;
  o.iov = v ? v : iov;
  o.cnt = c;
  o.off = off;
  r = fileop_do(&o, dl);
  if (done && iov != NULL && iov != vs && cnt > WRITE_IOV_STACK) free((void *)iov);
  return done ? (r < 0 ? done : done + r) : r;
}

/* ---- read, write and their vector and positioned forms ----------------------------------------- */

/* A write to a pollable descriptor, as a blocking write(2) does it: everything is written
 * (waiting whenever the buffer is full), unless an error or the deadline comes first, when the
 * bytes already written are returned (the error if there are none). */
static ssize_t write_all(int fd, const struct iovec *iov, int cnt, off_t off, uint64_t dl) {
  struct iovec vs[WRITE_IOV_STACK], *v = NULL, *vbase = NULL;
  size_t total = 0, done = 0;
  ssize_t ret;
  int i, c = cnt;
  for (i = 0; i < cnt; i++) total += iov[i].iov_len;
  for (;;) {
    ssize_t r = v == NULL ? (off < 0 ? writev(fd, iov, cnt) : pwritev(fd, iov, cnt, off))
                          : (off < 0 ? writev(fd, v, c) : pwritev(fd, v, c, off + (off_t)done));
    int e;
    if (r >= 0) {
      done += (size_t)r;
      if (done >= total) { ret = (ssize_t)done; break; }
      if (v == NULL) {                              /* a short write: go on from a copy */
        vbase = v = cnt <= WRITE_IOV_STACK ? vs : malloc((size_t)cnt * sizeof *v);
        if (v == NULL) { ret = (ssize_t)done; break; }
        memcpy(v, iov, (size_t)cnt * sizeof *v);
      }
      while (c > 0 && (size_t)r >= v->iov_len) { r -= (ssize_t)v->iov_len; v++; c--; }
      if (c > 0) { v->iov_base = (char *)v->iov_base + r; v->iov_len -= (size_t)r; }
      if (r > 0 || c > 0) continue;
    }
    e = ursa__io_errno();
    if (r >= 0 || e == EINTR) continue;
    if (e != EAGAIN && e != EWOULDBLOCK) { ret = done ? (ssize_t)done : -e; break; }
    if ((e = wait_fd(fd, EPOLLOUT, dl)) < 0) { ret = done ? (ssize_t)done : e; break; }
  }
  if (vbase != NULL && vbase != vs) free(vbase);
  return ret;
}

/* A send of everything on socket fd as ring operations (io_uring engine; each may be short):
 * the count, the error when nothing was sent, or -ENOSYS (not io_uring: nothing was done). */
static ssize_t ring_send_all(int fd, const struct iovec *iov, int cnt, int flags, const struct sockaddr *dst,
                            socklen_t dlen) {
  struct iovec vs[WRITE_IOV_STACK], *v = vs;
  struct msghdr msg;
  size_t total = 0, done = 0;
  ssize_t r;
  int i, c = cnt;
  for (i = 0; i < cnt; i++) total += iov[i].iov_len;
  if (cnt > WRITE_IOV_STACK && (v = malloc((size_t)cnt * sizeof *v)) == NULL) return -ENOSYS;
  memcpy(v, iov, (size_t)cnt * sizeof *v);
  struct iovec *vbase = v;
  for (;;) {
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = v;
    msg.msg_iovlen = (size_t)c;
    msg.msg_name = (void *)(uintptr_t)dst;
    msg.msg_namelen = dst ? dlen : 0;
    r = ursa__io_uring_sock(fd, &msg, flags, true);
    if (r < 0) { r = done ? (ssize_t)done : r; break; }
    done += (size_t)r;
    if (done >= total || r == 0) { r = (ssize_t)done; break; }
    while (c > 0 && (size_t)r >= v->iov_len) { r -= (ssize_t)v->iov_len; v++; c--; }
    if (c > 0) { v->iov_base = (char *)v->iov_base + r; v->iov_len -= (size_t)r; }
  }
  if (vbase != vs) free(vbase);
  return r;
}

static ssize_t rw(int op, int fd, const struct iovec *iov, int cnt, off_t off, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int m, err;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if (cnt < 0 || cnt > IOV_MAX) return -EINVAL;
  if ((m = fd_prepare(fd)) < 0) return m;
  if (m == FD_FILE) return file_rw(op, fd, iov, cnt, off, dl);
  if (op == URSA__OP_READV) {
    if (m == FD_SOCK && dl == 0 && in_ursa()) {          /* io_uring: the receive on the ring */
      struct msghdr msg;
      ssize_t r;
      memset(&msg, 0, sizeof msg);
      msg.msg_iov = (struct iovec *)(uintptr_t)iov;
      msg.msg_iovlen = (size_t)cnt;
      if ((r = ursa__io_uring_sock(fd, &msg, 0, false)) != -ENOSYS) return r;
    }
    IO_LOOP(fd, EPOLLIN, dl, off < 0 ? readv(fd, iov, cnt) : preadv(fd, iov, cnt, off))
  }
  if (m == FD_SOCK && dl == 0 && off < 0 && in_ursa()) {      /* io_uring: sends on the ring */
    ssize_t r = ring_send_all(fd, iov, cnt, 0, NULL, 0);
    if (r != -ENOSYS) return r;
  }
  return write_all(fd, iov, cnt, off, dl);
}

ssize_t ursa_read_timed(int fd, void *buf, size_t n, int clock, const struct timespec *abstime) {
  struct iovec v = { buf, n };
  return rw(URSA__OP_READV, fd, &v, 1, -1, clock, abstime);
}
ssize_t ursa_read(int fd, void *buf, size_t n) { return ursa_read_timed(fd, buf, n, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_write_timed(int fd, const void *buf, size_t n, int clock, const struct timespec *abstime) {
  struct iovec v = { (void *)(uintptr_t)buf, n };
  return rw(URSA__OP_WRITEV, fd, &v, 1, -1, clock, abstime);
}
ssize_t ursa_write(int fd, const void *buf, size_t n) { return ursa_write_timed(fd, buf, n, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_readv_timed(int fd, const struct iovec *iov, int cnt, int clock, const struct timespec *abstime) {
  return rw(URSA__OP_READV, fd, iov, cnt, -1, clock, abstime);
}
ssize_t ursa_readv(int fd, const struct iovec *iov, int cnt) { return ursa_readv_timed(fd, iov, cnt, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_writev_timed(int fd, const struct iovec *iov, int cnt, int clock, const struct timespec *abstime) {
  return rw(URSA__OP_WRITEV, fd, iov, cnt, -1, clock, abstime);
}
ssize_t ursa_writev(int fd, const struct iovec *iov, int cnt) { return ursa_writev_timed(fd, iov, cnt, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_pread_timed(int fd, void *buf, size_t n, off_t off, int clock, const struct timespec *abstime) {
  struct iovec v = { buf, n };
  if (off < 0) return -EINVAL;
  return rw(URSA__OP_READV, fd, &v, 1, off, clock, abstime);
}
ssize_t ursa_pread(int fd, void *buf, size_t n, off_t off) { return ursa_pread_timed(fd, buf, n, off, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_pwrite_timed(int fd, const void *buf, size_t n, off_t off, int clock, const struct timespec *abstime) {
  struct iovec v = { (void *)(uintptr_t)buf, n };
  if (off < 0) return -EINVAL;
  return rw(URSA__OP_WRITEV, fd, &v, 1, off, clock, abstime);
}
ssize_t ursa_pwrite(int fd, const void *buf, size_t n, off_t off) { return ursa_pwrite_timed(fd, buf, n, off, CLOCK_MONOTONIC, NULL); }

/* ---- sockets ------------------------------------------------------------------------------------ */

ssize_t ursa_recvfrom_timed(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len,
                            int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int err;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if (flags & MSG_DONTWAIT) {                     /* the caller asked not to wait */
    for (;;) {
      ssize_t r = recvfrom(fd, buf, n, flags, src, len);
      if (r >= 0) return r;
      if ((err = ursa__io_errno()) != EINTR) return -err;
    }
  }
  if (dl == 0 && in_ursa()) {                        /* io_uring: the receive on the ring */
    struct msghdr msg;
    struct iovec v = { buf, n };
    ssize_t r;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &v;
    msg.msg_iovlen = 1;
    if (src != NULL && len != NULL) { msg.msg_name = src; msg.msg_namelen = *len; }
    if ((r = ursa__io_uring_sock(fd, &msg, flags, false)) != -ENOSYS) {
      if (r >= 0 && src != NULL && len != NULL) *len = msg.msg_namelen;
      return r;
    }
  }
  IO_LOOP(fd, EPOLLIN, dl, recvfrom(fd, buf, n, flags | MSG_DONTWAIT, src, len))
}
ssize_t ursa_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len) {
  return ursa_recvfrom_timed(fd, buf, n, flags, src, len, CLOCK_MONOTONIC, NULL);
}
ssize_t ursa_recv_timed(int fd, void *buf, size_t n, int flags, int clock, const struct timespec *abstime) {
  return ursa_recvfrom_timed(fd, buf, n, flags, NULL, NULL, clock, abstime);
}
ssize_t ursa_recv(int fd, void *buf, size_t n, int flags) { return ursa_recvfrom_timed(fd, buf, n, flags, NULL, NULL, CLOCK_MONOTONIC, NULL); }

ssize_t ursa_sendto_timed(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst, socklen_t len,
                          int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int err;
  size_t done = 0;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if (dl == 0 && !(flags & MSG_DONTWAIT) && in_ursa()) {   /* io_uring: sends on the ring */
    struct iovec v = { (void *)(uintptr_t)buf, n };
    ssize_t r = ring_send_all(fd, &v, 1, flags, dst, len);
    if (r != -ENOSYS) return r;
  }
  /* as a blocking send(2): everything, unless an error or the deadline comes first (then the
   * bytes sent so far); MSG_DONTWAIT from the caller: one try */
  for (;;) {
    ssize_t r = sendto(fd, (const char *)buf + done, n - done, flags | MSG_DONTWAIT, dst, len);
    if (r >= 0) {
      done += (size_t)r;
      if (done >= n || (flags & MSG_DONTWAIT)) return (ssize_t)done;
      continue;
    }
    err = ursa__io_errno();
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) return done ? (ssize_t)done : -err;
    if (flags & MSG_DONTWAIT) return done ? (ssize_t)done : -err;
    if ((err = wait_fd(fd, EPOLLOUT, dl)) < 0) return done ? (ssize_t)done : err;
  }
}
ssize_t ursa_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst, socklen_t len) {
  return ursa_sendto_timed(fd, buf, n, flags, dst, len, CLOCK_MONOTONIC, NULL);
}
ssize_t ursa_send_timed(int fd, const void *buf, size_t n, int flags, int clock, const struct timespec *abstime) {
  return ursa_sendto_timed(fd, buf, n, flags, NULL, 0, clock, abstime);
}
ssize_t ursa_send(int fd, const void *buf, size_t n, int flags) { return ursa_sendto_timed(fd, buf, n, flags, NULL, 0, CLOCK_MONOTONIC, NULL); }

int ursa_accept_timed(int fd, struct sockaddr *addr, socklen_t *len, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int m, err;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if ((m = fd_prepare(fd)) < 0) return m;
  for (;;) {
    /* SOCK_NONBLOCK: the new socket is ready for these calls (and its number's entry is reset) */
    int c = accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      if (in_ursa()) ursa__io_fd_new(c, FD_SOCK);
      else (void)fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);   /* a blocking socket, as accept(2) */
      return c;
    }
    err = ursa__io_errno();
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) return -err;
    if ((err = wait_fd(fd, EPOLLIN, dl)) < 0) return err;
  }
}
int ursa_accept(int fd, struct sockaddr *addr, socklen_t *len) { return ursa_accept_timed(fd, addr, len, CLOCK_MONOTONIC, NULL); }

int ursa_connect_timed(int fd, const struct sockaddr *addr, socklen_t len, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int m, err, r;
  socklen_t sl = sizeof err;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if ((m = fd_prepare(fd)) < 0) return m;
  r = connect(fd, addr, len);
  if (r == 0) return 0;
  err = ursa__io_errno();
  if (err != EINPROGRESS && err != EINTR) return -err;
  /* in progress (EINTR: it goes on too): writable once it is decided */
  if ((r = wait_fd(fd, EPOLLOUT, dl)) < 0) return r;
  for (;;) {
    struct pollfd p = { fd, POLLOUT, 0 };
    if (poll(&p, 1, 0) == 1) break;
    if ((r = wait_fd(fd, EPOLLOUT, dl)) < 0) return r;
  }
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0) return -ursa__io_errno();
  return -err;
}
int ursa_connect(int fd, const struct sockaddr *addr, socklen_t len) { return ursa_connect_timed(fd, addr, len, CLOCK_MONOTONIC, NULL); }

/* ---- readiness -------------------------------------------------------------------------------- */

#define POLL_STACK 16

int ursa_poll_timed(struct pollfd *fds, nfds_t n, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  uint64_t dl;
  int err, r;
  int fdv_s[POLL_STACK];
  uint32_t evv_s[POLL_STACK];
  struct ionode_room room_s[POLL_STACK];
  int *fdv = fdv_s;
  uint32_t *evv = evv_s;
  struct ionode_room *room = room_s;
  unsigned k, i;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if (n > 0 && fds == NULL) return -EINVAL;
  if (n > (nfds_t)INT32_MAX) return -EINVAL;
  for (;;) {
    r = poll(fds, n, 0);
    if (r > 0) break;
    if (r < 0 && ursa__io_errno() == EINTR) continue;
    if (r < 0) return -ursa__io_errno();
    for (i = 0, k = 0; i < n; i++) k |= fds[i].fd >= 0 && ursa__io_fdent(fds[i].fd) == NULL;
    if (!in_ursa() || k) {                         /* outside ursa (or a descriptor beyond the
                                                      table): poll(2) with the timeout */
      uint64_t now;
      int ms = -1;
      if (dl) {
        now = ursa__now();
        if (now >= dl) return -ETIMEDOUT;
        ms = (int)((dl - now + 999999u) / 1000000u);
      }
      r = poll(fds, n, ms);
      if (r > 0) break;
      if (r < 0 && ursa__io_errno() != EINTR) return -ursa__io_errno();
      continue;
    }
    if (fdv == fdv_s && n > POLL_STACK) {
      fdv = malloc(n * sizeof *fdv);
      evv = malloc(n * sizeof *evv);
      room = malloc(n * sizeof *room);
      if (fdv == NULL || evv == NULL || room == NULL) { r = -ENOMEM; break; }
    }
    for (i = 0, k = 0; i < n; i++) {
      if (fds[i].fd < 0) continue;
      fdv[k] = fds[i].fd;
      evv[k] = (fds[i].events & (POLLIN | POLLRDNORM) ? EPOLLIN : 0) |
               (fds[i].events & (POLLOUT | POLLWRNORM) ? EPOLLOUT : 0) | (fds[i].events & POLLPRI ? EPOLLPRI : 0);
      k++;
    }
    if (k == 0) {                                 /* nothing to wait for: only the deadline */
      if (dl == 0) { r = -EINVAL; break; }
      if ((r = ursa_sleep_ns(dl > ursa__now() ? dl - ursa__now() : 0)) < 0) break;
      r = -ETIMEDOUT;
      break;
    }
    if ((r = ursa__io_fd_wait_many(fdv, evv, k, room, dl)) < 0 && r != -EBADF) break;
    /* -EBADF: one of them was closed by ursa_close: poll(2) reports POLLNVAL for it now */
  }
  if (fdv != fdv_s) { free(fdv); free(evv); free(room); }
  return r;
}

int ursa_poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
  struct timespec ts;
  int r;
  if (timeout_ms < 0) return ursa_poll_timed(fds, n, CLOCK_MONOTONIC, NULL);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  r = ursa_poll_timed(fds, n, CLOCK_MONOTONIC, &ts);
  return r == -ETIMEDOUT ? 0 : r;                 /* poll(2): 0 when the time ran out */
}

int ursa_fd_wait_timed(int fd, short events, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  struct pollfd p = { fd, events, 0 };
  int r;
  if (fd < 0) return -EBADF;
  r = ursa_poll_timed(&p, 1, clock, abstime);
  if (r < 0) return r;
  if (p.revents & POLLNVAL) return -EBADF;
  return p.revents;
}
int ursa_fd_wait(int fd, short events) { return ursa_fd_wait_timed(fd, events, CLOCK_MONOTONIC, NULL); }

/* ---- close, fsync, openat, offload --------------------------------------------------------------- */

int ursa_close(int fd) {
  if (fd < 0) return -EBADF;
  if (in_ursa()) return ursa__io_fd_close(fd);        /* its waiters get -EBADF */
  /* close(2) is not restarted after EINTR: the descriptor is gone either way (Linux) */
  if (close(fd) != 0 && ursa__io_errno() != EINTR) return -ursa__io_errno();
  return 0;
}

int ursa_fsync_timed(int fd, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  struct fileop o;
  uint64_t dl;
  int err;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  memset(&o, 0, sizeof o);
  o.op = URSA__OP_FSYNC;
  o.fd = fd;
  return (int)fileop_do(&o, dl);
}
int ursa_fsync(int fd) { return ursa_fsync_timed(fd, CLOCK_MONOTONIC, NULL); }

int ursa_openat_timed(int dirfd, const char *path, int flags, unsigned mode, int clock, const struct timespec *abstime) {
  EXPLORE_REFUSED();
  struct fileop o;
  uint64_t dl;
  int err, r;
  if ((err = deadline_of(clock, abstime, &dl)) != 0) return err;
  if (path == NULL) return -EINVAL;
  memset(&o, 0, sizeof o);
  o.op = URSA__OP_OPENAT;
  o.fd = dirfd;
  o.path = path;
  o.flags = flags;
  o.mode = (mode_t)mode;
  r = (int)fileop_do(&o, dl);
  if (r >= 0 && in_ursa()) ursa__io_fd_new(r, FD_UNKNOWN);
  return r;
}
int ursa_openat(int dirfd, const char *path, int flags, unsigned mode) {
  return ursa_openat_timed(dirfd, path, flags, mode, CLOCK_MONOTONIC, NULL);
}

int ursa_offload(void *(*fn)(void *), void *arg, void **result) {
  EXPLORE_REFUSED();
  void *r;
  int err;
  if (fn == NULL) return -EINVAL;
  if (!in_ursa()) {
    r = fn(arg);
  } else if ((err = ursa__io_offload(fn, arg, &r)) != 0) {
    return err;
  }
  if (result) *result = r;
  return 0;
}

const char *ursa_io_engine(void) { return ursa__io_name(); }
