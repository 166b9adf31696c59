/*
 * io.c - I/O that blocks only the calling ursa thread: an engine per VP, the readiness waits on
 * file descriptors, the VP's poller, and the offload pool (ursa_offload).  The calls themselves
 * (ursa_read, ursa_accept, ...) are in calls.c, on top of ursa__io_fd_wait and ursa__io_offload.
 *
 * The engine (one per VP, made by ursa_init): io_uring (a ring of 256 entries, with a multishot
 *   poll on an eventfd) by default where the kernel gives it (and cancels by fd: Linux 5.19), else
 *   epoll (an epoll instance with the eventfd registered in it); ursa__io_init chooses, once, for
 *   every VP.  A call tries its system call on a non-blocking descriptor first; only when it would
 *   block does the thread wait for readiness here, and it then tries again.  Regular files are
 *   always "ready": a read first tries preadv2(RWF_NOWAIT), which the page cache answers without
 *   blocking; what would block runs on the ring (ursa__io_uring_op) or in the offload pool.
 *   io_uring's submission side is shared (sqlock: another VP arms polls in a home engine here),
 *   its completion side belongs to the VP's kernel thread, or (cqlock, several VPs) to another
 *   VP's that helps it while it is stalled (hook_reap); the VP's own arms are queued without a
 *   system call and submitted with its next look at the ring.  The rings use COOP_TASKRUN (ur_make).
 *
 * Who waits where.  Each descriptor has an entry in a table indexed by fd (struct fdent: never
 *   freed until ursa_fini, so a stale event can always look at it): its lock, its generation
 *   (bumped by ursa_close and when ursa_accept/ursa_openat return the number anew, so events of
 *   an older file are ignored), the engine it is registered in (its home: the VP of the first
 *   thread that waited on it), the events armed there, and the list of waiting nodes.  A waiting
 *   thread puts a node (on its stack) on the list of each fd it waits for (one for ursa_fd_wait,
 *   several for ursa_poll), all pointing to one record (struct iorec: its lock, the thread, the
 *   result), arms the events it needs in the home engine (EPOLLONESHOT, level-triggered, so an fd
 *   that became ready before the arm reports at once: no wake-up is lost between the EAGAIN and
 *   the arm), and parks (ursa__park, with the record's lock).  Each node on a list counts in the
 *   home VP's io_nwait (src/core/vp.h): that is what makes the home VP wait in its engine rather
 *   than sleep, and keeps its poller alive.
 *
 * Dispatch (on the home VP's kernel thread: its idle wait, or its poller; or on another VP's that
 *   helps it while it is stalled, src/sched/vp.c's "Stealing" and hook_reap): an event for fd takes
 *   fd's lock, drops the armed events (one-shot), and for each node whose events came claims its
 *   record: under the record's lock, unless the record is done already (another fd of the same
 *   ursa_poll, or ursa_close) or the thread's timer took the wake-up (ursa__park_claim), it marks
 *   the record done with the events and unlinks the node; a claimed thread that has already
 *   parked is unparked after the fd's lock is released (the waiter interface allows it: the claim
 *   guarantees nobody else wakes it, so its stack stays valid until then).  A thread that has not
 *   parked yet (it is still arming another fd) finds its record done and does not park.  The
 *   events that other nodes still want are armed again.  A woken (or timed-out) thread unlinks
 *   its remaining nodes itself, under each fd's lock.
 *   Lock order: an fd's lock, then a record's lock, then an engine's poller lock.  With one VP no
 *   lock is taken (everything runs on the VP's kernel thread).
 *
 * When the engine is looked at (nothing polls):
 *   - a VP with nothing to run and io_nwait != 0 waits in its engine (epoll_pwait2), with the
 *     nearest timer as timeout, instead of its futex (several VPs: vp.c, sleeping == 4) or its
 *     clock_nanosleep (one VP: sched.c); a cross-VP wake-up of it writes its eventfd
 *     (ursa__io_hooks.kick);
 *   - a VP whose threads keep it busy while some wait on I/O: its poller, an ursa thread bound
 *     to the VP, made when io_nwait first becomes nonzero there and gone when it is 0 again,
 *     checks the engine without blocking, helps stalled VPs (ursa__smp_help_stalled) and yields:
 *     once per round of the VP's run queue, so the rate is bounded by the work there and the hot
 *     paths (hand-off, yield, create) have no new test.  When nothing else is ready it parks
 *     and the VP's idle wait takes over; the idle wait unparks it when it returns with waits
 *     still pending.
 *   A VP with no I/O pending (io_nwait == 0) keeps the scheduler's paths of before, untouched.
 *
 * The offload pool: URSA_OFFLOAD_THREADS (default 4) kernel threads, started on demand, running
 *   requests in FIFO order; a request beyond them queues.  The caller counts in its VP's io_nwait
 *   and parks; the pool thread that ran it puts it on that VP's engine's done list and writes the
 *   engine's eventfd, and the VP's dispatch unparks the caller (so only that VP's kernel thread
 *   touches its threads, with one VP too).  The callers are ursa threads parked, not kernel
 *   threads blocked, so a full pool never stops a VP: it only delays the queued requests.
 */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iointernal.h"
#include "waiter.h"
#include "../sched/sched_smp.h"
#if URSA_HAVE_URING
#include <liburing.h>
#endif
#if URSA_VALGRIND
#include <valgrind/valgrind.h>
#endif

/* ---- engines ---------------------------------------------------------------------------------- */

struct offreq;

struct engine {
  struct ursa__vp *vp;
  int              epfd, evfd;      /* epoll: both; io_uring: the eventfd only                   */
#if URSA_HAVE_URING
  /* io_uring: the ring's submission side is guarded by sqlock (several VPs: a waiter on another
   * VP arms a poll here); its completion side belongs to vp's kernel thread alone. */
  struct io_uring  ring;
  uint8_t          ring_ok;
  ursa__spin_t     sqlock;
  ursa__spin_t     cqlock;          /* the completion side (several VPs): vp's kernel thread, or
                                       another VP's that helps a stalled vp (hook_reap)          */
#endif
  /* the poller (its thread is bound to vp): state and handle under plock (several VPs) */
  ursa__spin_t     plock;
  uint8_t          pstate;          /* P_NONE, P_CREATING, P_RUNNING, P_PARKED                  */
  uint8_t          stop;            /* ursa__io_fini: the poller ends                            */
  ursa_thread_t    poller;          /* set by the poller itself; stale once it has finished      */
  /* offload requests of vp's threads that the pool has finished: dlock (pool threads push) */
  ursa__spin_t     dlock;   /* ursa's spin lock, not a pthread mutex (below, "the pool") */
  struct offreq   *done;
};
enum { P_NONE, P_CREATING, P_RUNNING, P_PARKED };

#define GEN_MASK       (io_kind == URSA__IO_URING ? 0x7fffffu : UINT32_MAX)   /* the bits events carry */
#define EV_TAG_EVENTFD UINT64_MAX     /* epoll data of the eventfd; an fd's is gen << 32 | fd */
/* io_uring's user_data: a file operation's is a pointer to its struct uop (bit 63 clear); a
 * poll's has bit 63 set, the fd's generation (low 23 bits) in 62..40, the poll's events in 39..24
 * and fd in 23..0; the eventfd's and a cancel's are the two tags below. */
#define UR_POLL         (1ull << 63)
#define UR_TAG_EVENTFD  (UR_POLL | 0xffffffull)
#define UR_TAG_CANCEL   (UR_POLL | 0xfffffeull)
#define UR_DATA(gen, ev, fd) (UR_POLL | ((uint64_t)((gen) & 0x7fffffu) << 40) | ((uint64_t)((ev) & 0xffffu) << 24) | (uint64_t)(uint32_t)(fd))

static struct engine *engines;        /* [nvps], made by ursa__io_init, freed by ursa__io_fini   */
static unsigned       nengines;
static int            io_kind;        /* URSA__IO_*                                               */
static bool           have_pwait2 = true;   /* epoll_pwait2 known to the kernel (else ms timeouts);
                                               relaxed atomics: any VP may find out */
static char           io_why[160];    /* why io_uring does not run, when it does not (stats)     */

static inline struct engine *engine_of(const struct ursa__vp *vp) { return (struct engine *)vp->io; }
static inline bool smp_now(void) { return ursa__g.nvps > 1; }

/* errno of the system call just made.  Not inlined and not pure (the asm): errno's address must
 * not be kept across a wait, after which the thread may run on another kernel thread (glibc
 * declares __errno_location const). */
URSA_NOINLINE int ursa__io_errno(void) {
  __asm__ volatile("" ::: "memory");
  return errno;
}

/* ---- the descriptor table --------------------------------------------------------------------- */

#define FD_CHUNK_BITS 12u
#define FD_CHUNKS     512u                         /* fds up to 2^21; beyond: blocking calls     */
static struct fdent *fd_chunks[FD_CHUNKS];         /* published with release, read with acquire  */

struct fdent *ursa__io_fdent(int fd) {
  unsigned c;
  struct fdent *ch;
  if (fd < 0 || (unsigned)fd >= (FD_CHUNKS << FD_CHUNK_BITS)) return NULL;
  c = (unsigned)fd >> FD_CHUNK_BITS;
  ch = __atomic_load_n(&fd_chunks[c], __ATOMIC_ACQUIRE);    /* pairs with the release CAS below */
  if (ursa_unlikely(ch == NULL)) {
    struct fdent *n = calloc((size_t)1 << FD_CHUNK_BITS, sizeof *n), *expect = NULL;
    if (n == NULL) return NULL;
    if (__atomic_compare_exchange_n(&fd_chunks[c], &expect, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) ch = n;
    else { free(n); ch = expect; }
  }
  return &ch[(unsigned)fd & ((1u << FD_CHUNK_BITS) - 1)];
}

/* ---- waiting nodes and records ---------------------------------------------------------------- */

/* What a struct ursa__io_cancel's slot holds (the first byte of either record). */
enum { REC_WAIT = 0,         /* a struct iorec: a readiness wait                                 */
       REC_RING = 1 };       /* a struct uop: an operation on a ring                              */

struct iorec {
  uint8_t         rkind;     /* REC_WAIT (memset)                                                */
  ursa__spin_t    lock;      /* park's lock: a claim waits until the thread is BLOCKED          */
  uint8_t         parked;    /* the thread is (going) into ursa__park: a claim must unpark it   */
  uint8_t         done;      /* claimed: res holds the outcome, nobody else may wake the thread */
  uint8_t         timed;
  int             res;       /* the events that came (> 0), or -EBADF (ursa_close)              */
  ursa_thread_t   th;
  struct iorec   *wnext;     /* a dispatcher's list of records to unpark                         */
};
struct ionode {
  struct ionode  *next, *prev;     /* on fe->waiters, under fe->lock                             */
  struct iorec   *rec;
  struct engine  *home;            /* whose io_nwait counts this node while it is linked         */
  uint32_t        events;          /* EPOLLIN, EPOLLOUT, EPOLLPRI wanted                          */
  uint8_t         linked;
};

static void poller_nudge(struct engine *e);
static void poller_ensure(struct engine *e);

/* One node less on e's VP.  seq_cst like the increment. */
static void nwait_dec(struct engine *e) {
  if (__atomic_sub_fetch(&e->vp->io_nwait, 1u, __ATOMIC_SEQ_CST) == 0) poller_nudge(e);
}

static void node_unlink(struct fdent *fe, struct ionode *n) {
  if (n->prev) n->prev->next = n->next; else fe->waiters = n->next;
  if (n->next) n->next->prev = n->prev;
  n->linked = 0;
}

/* Claims r for a waker holding the lock of an fd r waits on: true when the caller now owns the
 * wake-up (r->done set with res); *unpark says whether it must then unpark r->th. */
static bool rec_claim(struct iorec *r, int res, bool smp, bool *unpark) {
  bool ok = false;
  ursa__lock_if(smp, &r->lock);
  if (!r->done) {
    if (!r->parked) { ok = true; *unpark = false; }          /* not parked yet: it will see done */
    else if (ursa__park_claim(r->th, r->timed)) { ok = true; *unpark = true; }
    if (ok) { r->done = 1; r->res = res; }
  }
  ursa__unlock_if(smp, &r->lock);
  return ok;
}

#if URSA_HAVE_URING
/* A free submission entry of e's ring, e->sqlock held (several VPs); submits to make room. */
static struct io_uring_sqe *ur_sqe(struct engine *e) {
  struct io_uring_sqe *sqe;
  while ((sqe = io_uring_get_sqe(&e->ring)) == NULL) io_uring_submit(&e->ring);
  return sqe;
}
#endif

/* Arms events on fe in its home engine (fe->lock held): afterwards fe->armed covers events.
 * epoll: the registration (EPOLLONESHOT) is made or changed to events; io_uring: a one-shot poll
 * for the events not armed yet is queued (submitted at once when the home engine is another
 * VP's, else with the VP's next look at its ring).  0, or -EPERM when fd cannot be waited for
 * (a regular file: always ready), or another error. */
static int arm(struct fdent *fe, int fd, uint32_t events) {
  struct epoll_event ev;
  int r;
#if URSA_HAVE_URING
  if (io_kind == URSA__IO_URING) {
    struct engine *h = fe->home;
    struct io_uring_sqe *sqe;
    uint32_t add = events & ~fe->armed;
    bool smp = smp_now();
    unsigned mask = (add & EPOLLIN ? POLLIN | POLLRDHUP : 0) | (add & EPOLLOUT ? POLLOUT : 0) | (add & EPOLLPRI ? POLLPRI : 0);
    if (add == 0) return 0;
    ursa__lock_if(smp, &h->sqlock);
    sqe = ur_sqe(h);
    io_uring_prep_poll_add(sqe, fd, mask);
    io_uring_sqe_set_data64(sqe, UR_DATA(fe->gen, add, fd));
    if (h->vp != ursa__tls_vp) io_uring_submit(&h->ring);   /* h's VP may be waiting in its ring */
    ursa__unlock_if(smp, &h->sqlock);
    fe->registered = 1;
    fe->armed |= add;
    return 0;
  }
#endif
  memset(&ev, 0, sizeof ev);
  ev.events = events | EPOLLONESHOT | EPOLLRDHUP;
  ev.data.u64 = (uint64_t)fe->gen << 32 | (uint32_t)fd;
  if (fe->registered) {
    r = epoll_ctl(fe->home->epfd, EPOLL_CTL_MOD, fd, &ev);
    if (r == 0) { fe->armed = events; return 0; }
    if (ursa__io_errno() != ENOENT) return -ursa__io_errno();
    /* closed behind our back (close(2), not ursa_close) and the number reused: register anew */
  }
  r = epoll_ctl(fe->home->epfd, EPOLL_CTL_ADD, fd, &ev);
  if (r != 0 && ursa__io_errno() == EEXIST) r = epoll_ctl(fe->home->epfd, EPOLL_CTL_MOD, fd, &ev);
  if (r != 0) return -ursa__io_errno();
  fe->registered = 1;
  fe->armed = events;
  return 0;
}

static void unpark_list(struct iorec *w, struct ursa__vp *vp) {
  URSA_UNUSED(vp);
  while (w) {
    struct iorec *n = w->wnext;
    ursa_thread_t th = w->th;          /* w is on th's stack: not touched after the unpark */
    ursa__unpark(th, 0);
    w = n;
  }
}

/* An event of fd (generation gen) came to engine e: wake the nodes it satisfies, re-arm the rest.
 * On e's VP's kernel thread, or another VP's that helps it (hook_reap). */
static void dispatch(struct engine *e, int fd, uint32_t gen, uint32_t fired, uint32_t revents) {
  struct fdent *fe = ursa__io_fdent(fd);
  bool smp = smp_now();
  struct iorec *wake = NULL;
  struct ionode *n, *nx;
  uint32_t rest = 0, dec = 0;
  if (fe == NULL) return;
  ursa__lock_if(smp, &fe->lock);
  if ((fe->gen & GEN_MASK) != gen || fe->home != e) { ursa__unlock_if(smp, &fe->lock); return; }   /* an older file */
  fe->armed &= ~fired;                                    /* one-shot: it fired */
  for (n = fe->waiters; n; n = nx) {
    bool unpark;
    nx = n->next;
    if ((revents & (n->events | EPOLLERR | EPOLLHUP)) && rec_claim(n->rec, (int)revents, smp, &unpark)) {
      node_unlink(fe, n);
      dec++;
      if (unpark) { n->rec->wnext = wake; wake = n->rec; }
    } else if (!n->rec->done) {
      rest |= n->events;
    }
  }
  if (rest & ~fe->armed) (void)arm(fe, fd, fe->armed | rest);   /* an error: the waiters' retry sees it */
  ursa__unlock_if(smp, &fe->lock);
  unpark_list(wake, e->vp);
  while (dec--) nwait_dec(e);
}

/* ---- offload completions ---------------------------------------------------------------------- */

struct offreq {
  struct offreq *next;
  void        *(*fn)(void *);
  void          *arg;
  void          *result;
  struct engine *e;            /* the caller's VP's engine: where the completion goes           */
  ursa_thread_t  th;
};

static void drain_done(struct engine *e) {
  struct offreq *r, *nx;
  uint64_t v;
  (void)!read(e->evfd, &v, sizeof v);                      /* reset the eventfd (non-blocking) */
  ursa__spin_lock(&e->dlock);
  r = e->done;
  e->done = NULL;
  ursa__spin_unlock(&e->dlock);
  for (; r; r = nx) {
    ursa_thread_t th = r->th;
    nx = r->next;                                          /* r is on th's stack */
    ursa__unpark(th, 0);
    nwait_dec(e);
  }
}

/* ---- the engine's wait ------------------------------------------------------------------------ */

#define EV_BATCH 64

#if URSA_HAVE_URING
/* A file operation on the ring (ursa__io_uring_op): its thread waits for the completion. */
struct uop {
  uint8_t        rkind;       /* REC_RING                                                         */
  uint8_t        canceled;    /* ursa__io_wait_end asked the ring to cancel it (atomic)            */
  uint8_t        parked;      /* several VPs, under lock: the thread is (going) into ursa__park   */
  uint8_t        done;        /* several VPs, under lock: res is final, the thread must not park  */
  ursa__spin_t   lock;        /* park's lock (several VPs)                                         */
  ursa_thread_t  th;
  int            res;
  struct engine *e;           /* the ring it is on                                                 */
};

/* The thread of u waits for its completion.  With one VP only the VP's kernel thread reaps its
 * ring, which it cannot do while this thread runs: the park needs no lock.  With several, another
 * VP may reap it (hook_reap) as soon as the entry is submitted (any VP's submission takes the
 * queued entries along): the completion and the park meet under u->lock, as a readiness wait's
 * claim does (rec_claim). */
static void uop_wait(struct uop *u, void *obj, bool smp) {
  if (!smp) { ursa__park(URSA__W_IO_FD, obj, NULL, 0); return; }
  ursa__spin_lock(&u->lock);
  if (u->done) { ursa__spin_unlock(&u->lock); return; }
  u->parked = 1;
  ursa__park(URSA__W_IO_FD, obj, &u->lock, 0);
}

/* u's completion with res: wakes its thread.  u lives on that thread's stack: not touched after
 * the unlock unless the thread is parked (then it waits for this unpark). */
static void uop_done(struct uop *u, int res, bool smp) {
  ursa_thread_t th = u->th;
  bool parked = true;
  u->res = res;
  if (smp) {
    ursa__spin_lock(&u->lock);
    u->done = 1;
    parked = u->parked;
    ursa__spin_unlock(&u->lock);
  }
  if (parked) ursa__unpark(th, 0);
}

static void ur_arm_eventfd(struct engine *e) {     /* e->sqlock held (several VPs) */
  struct io_uring_sqe *sqe = ur_sqe(e);
  io_uring_prep_poll_multishot(sqe, e->evfd, POLLIN);
  io_uring_sqe_set_data64(sqe, UR_TAG_EVENTFD);
}

/* engine_poll for io_uring: submits what is queued, waits (unless deadline says not to) and
 * handles every completion. */
static bool ur_reap(struct engine *e, bool peer);
static void ur_poll(struct engine *e, uint64_t deadline) {
  bool smp = smp_now();
  ursa__lock_if(smp, &e->sqlock);
  if (io_uring_sq_ready(&e->ring)) io_uring_submit(&e->ring);
  ursa__unlock_if(smp, &e->sqlock);
  /* (io_uring_cq_ready reads the head plainly; a helping VP may move it: atomics here) */
  if (deadline != UINT64_MAX && __atomic_load_n(e->ring.cq.ktail, __ATOMIC_ACQUIRE) ==
                                __atomic_load_n(e->ring.cq.khead, __ATOMIC_RELAXED)) {
    /* wait for one completion without touching the submission side (other VPs may be there) */
    struct __kernel_timespec kts;
    struct io_uring_getevents_arg arg;
    memset(&arg, 0, sizeof arg);
    arg.sigmask_sz = _NSIG / 8;
    if (deadline != 0) {
      uint64_t now = ursa__now(), d = deadline > now ? deadline - now : 0;
      kts.tv_sec = (int64_t)(d / 1000000000u);
      kts.tv_nsec = (long long)(d % 1000000000u);
      arg.ts = (uint64_t)(uintptr_t)&kts;
    }
    (void)syscall(__NR_io_uring_enter, e->ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                  &arg, sizeof arg);                  /* EINTR, ETIME: look at what came */
  } else if (IO_URING_READ_ONCE(*e->ring.sq.kflags) & IORING_SQ_TASKRUN)
    (void)io_uring_get_events(&e->ring);           /* completions due to this thread (ur_make) */
  (void)ur_reap(e, false);
}

/* Handles the completions on e's ring: its own VP's kernel thread (peer false), or another VP's
 * helping a stalled one (peer: only when e's completion side is free, and stopping before the
 * first completion of e's eventfd, which is e's VP's to see: a kick, or offloads done, for
 * threads of that VP).  Whether it handled any. */
static bool ur_reap(struct engine *e, bool peer) {
  bool smp = smp_now(), stop = false, any = false;
  struct { uint64_t data; int32_t res; uint32_t flags; } got[EV_BATCH];
  unsigned n, i, head;
  struct io_uring_cqe *cqe;
  do {
    n = 0;
    if (peer) {
      if (!ursa__spin_try(&e->cqlock, URSA__SPIN_HELD_VALUE())) break;   /* the owner is there */
    } else {
      ursa__lock_if(smp, &e->cqlock);
    }
    io_uring_for_each_cqe(&e->ring, head, cqe) {
      got[n].data = io_uring_cqe_get_data64(cqe);
      if (peer && got[n].data == UR_TAG_EVENTFD) { stop = true; break; }
      got[n].res = cqe->res;
      got[n].flags = cqe->flags;
      if (++n == EV_BATCH) break;
    }
    io_uring_cq_advance(&e->ring, n);
    ursa__unlock_if(smp, &e->cqlock);
    any |= n != 0;
    for (i = 0; i < n; i++) {
      uint64_t d = got[i].data;
      if (d == UR_TAG_EVENTFD) {
        drain_done(e);
        if (!(got[i].flags & IORING_CQE_F_MORE)) {     /* the multishot poll ended: again */
          ursa__lock_if(smp, &e->sqlock);
          ur_arm_eventfd(e);
          ursa__unlock_if(smp, &e->sqlock);
        }
      } else if (d == UR_TAG_CANCEL) {
        /* a cancel by ursa_close: nothing to do */
      } else if (d & UR_POLL) {
        uint32_t rev = got[i].res >= 0 ? (uint32_t)got[i].res : (uint32_t)EPOLLERR;
        dispatch(e, (int)(d & 0xffffffu), (uint32_t)((d >> 40) & 0x7fffffu), (uint32_t)((d >> 24) & 0xffffu), rev);
      } else {
        uop_done((struct uop *)(uintptr_t)d, got[i].res, smp);   /* (uop_wait) */
        nwait_dec(e);
      }
    }
  } while (n == EV_BATCH && !stop);
  return any;
}

/* Runs one file operation on the calling thread's VP's ring and waits for it: its result (>= 0 or
 * -errno), or -ENOSYS when the engine is not io_uring (the caller offloads it then). */
ssize_t ursa__io_uring_op(int op, int fd, const struct iovec *iov, int cnt, off_t off, const char *path, int flags,
                          unsigned mode) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct engine *e = engine_of(vp);
  struct io_uring_sqe *sqe;
  struct uop u;
  bool smp = smp_now();
  if (io_kind != URSA__IO_URING) return -ENOSYS;
  memset(&u, 0, sizeof u);
  u.rkind = REC_RING;
  u.th = ursa_self();
  u.res = -EIO;
  u.e = e;
  ursa__lock_if(smp, &e->sqlock);
  sqe = ur_sqe(e);
  switch (op) {
  case URSA__OP_READV:  io_uring_prep_readv(sqe, fd, iov, (unsigned)cnt, (uint64_t)off); break;
  case URSA__OP_WRITEV: io_uring_prep_writev(sqe, fd, iov, (unsigned)cnt, (uint64_t)off); break;
  case URSA__OP_FSYNC:  io_uring_prep_fsync(sqe, fd, 0); break;
  default:              io_uring_prep_openat(sqe, fd, path, flags, (mode_t)mode); break;
  }
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)&u);
  ursa__unlock_if(smp, &e->sqlock);
  /* Submitted with the next look at the ring (uop_wait: who may reap it).  seq_cst, as every
   * change of io_nwait: pairs with the idle sleep's load after its publish (vp.c); the reaper's
   * decrement (nwait_dec) follows the completion. */
  __atomic_add_fetch(&vp->io_nwait, 1u, __ATOMIC_SEQ_CST);
  poller_ensure(e);
  uop_wait(&u, e, smp);
  return u.res;
}

/* A receive or a send on a socket as a ring operation: no try that says EAGAIN before the wait
 * and no poll to re-arm after it (the kernel polls internally and completes the operation, handed
 * over with the VP's next look at its ring, where the other threads' operations go too: a
 * ping-pong between two threads of a VP costs one io_uring_enter per hop).  fd's ring_ops counts
 * it while it is in flight, so that ursa_close cancels it (on every ring: the count does not say
 * which); a cancelled operation returns -EBADF, as a readiness wait ended by ursa_close. */
static ssize_t sock_op(int fd, struct msghdr *msg, int flags, bool send, const struct ursa__io_cancel *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct engine *e = engine_of(vp);
  struct fdent *fe = ursa__io_fdent(fd);
  struct io_uring_sqe *sqe;
  struct uop u;
  bool smp = smp_now();
  if (io_kind != URSA__IO_URING || fe == NULL) return -ENOSYS;
  memset(&u, 0, sizeof u);
  u.rkind = REC_RING;
  u.th = ursa_self();
  u.res = -EIO;
  u.e = e;
  if (c != NULL) {                     /* a canceller finds u from now on (src/io/waiter.h) */
    bool stop;
    ursa__lock_if(smp, c->lock);
    *c->slot = &u;
    ursa__unlock_if(smp, c->lock);
    /* seq_cst: pairs with the canceller's store of the flag before it looks at the slot */
    stop = __atomic_load_n(c->flag, __ATOMIC_SEQ_CST) != 0;
    if (stop) {
      ursa__lock_if(smp, c->lock);
      *c->slot = NULL;
      ursa__unlock_if(smp, c->lock);
      return -ECANCELED;
    }
  }
  /* seq_cst: pairs with ursa__io_fd_close's load after it has closed the number to new waits */
  __atomic_add_fetch(&fe->ring_ops, 1u, __ATOMIC_SEQ_CST);
  ursa__lock_if(smp, &e->sqlock);
  sqe = ur_sqe(e);
  if (msg->msg_iovlen == 1 && msg->msg_name == NULL && msg->msg_control == NULL) {
    if (send) io_uring_prep_send(sqe, fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags);
    else      io_uring_prep_recv(sqe, fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags);
  } else {
    if (send) io_uring_prep_sendmsg(sqe, fd, msg, (unsigned)flags);
    else      io_uring_prep_recvmsg(sqe, fd, msg, (unsigned)flags);
  }
  /* a receive goes to the kernel's poll first: the data is seldom there yet (the caller would
   * not wait otherwise), and the try that says EAGAIN costs as much as the receive itself */
  if (!send) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)&u);
  ursa__unlock_if(smp, &e->sqlock);
  __atomic_add_fetch(&vp->io_nwait, 1u, __ATOMIC_SEQ_CST);   /* as in ursa__io_uring_op */
  poller_ensure(e);
  uop_wait(&u, fe, smp);
  __atomic_sub_fetch(&fe->ring_ops, 1u, __ATOMIC_SEQ_CST);
  if (c != NULL) {                     /* no canceller touches u after this */
    ursa__lock_if(smp, c->lock);
    *c->slot = NULL;
    ursa__unlock_if(smp, c->lock);
  }
  /* -ECANCELED: ursa__io_wait_end's cancel (acquire: pairs with its release store), else
   * ursa_close's; a cancel that came after the operation finished leaves its result */
  if (u.res == -ECANCELED) return __atomic_load_n(&u.canceled, __ATOMIC_ACQUIRE) ? -ECANCELED : -EBADF;
  return u.res;
}

ssize_t ursa__io_uring_sock(int fd, struct msghdr *msg, int flags, bool send) {
  return sock_op(fd, msg, flags, send, NULL);
}

ssize_t ursa__io_sock_op(int fd, struct msghdr *msg, int flags, bool send, const struct ursa__io_cancel *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (vp == NULL || vp->io == NULL) return -ENOSYS;
  return sock_op(fd, msg, flags, send, c);
}

/* ursa__io_wait_end of a ring operation: asks its ring to cancel it (the canceller holds the
 * waiter's lock, so u is alive); the operation then completes, cancelled or with its result, and
 * its VP unparks the thread as for any completion. */
static bool ur_cancel_op(struct uop *u) {
  bool smp = smp_now();
  struct io_uring_sqe *sqe;
  __atomic_store_n(&u->canceled, 1, __ATOMIC_RELEASE);   /* release: pairs with sock_op's load */
  ursa__lock_if(smp, &u->e->sqlock);
  sqe = ur_sqe(u->e);
  io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)u, 0);
  io_uring_sqe_set_data64(sqe, UR_TAG_CANCEL);
  if (u->e->vp != ursa__tls_vp) io_uring_submit(&u->e->ring);   /* else with the next look */
  ursa__unlock_if(smp, &u->e->sqlock);
  return true;
}

/* ursa_close of fd with receives in flight: cancels them on every ring (fe->lock held). */
static void ur_cancel_everywhere(int fd) {
  bool smp = smp_now();
  unsigned i;
  for (i = 0; i < nengines; i++) {
    struct engine *h = &engines[i];
    struct io_uring_sqe *sqe;
    if (!h->ring_ok) continue;
    ursa__lock_if(smp, &h->sqlock);
    sqe = ur_sqe(h);
    io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, UR_TAG_CANCEL);
    io_uring_submit(&h->ring);          /* the receives queued before it go in first */
    ursa__unlock_if(smp, &h->sqlock);
  }
}
#else
ssize_t ursa__io_uring_sock(int fd, struct msghdr *msg, int flags, bool send) {
  URSA_UNUSED(fd); URSA_UNUSED(msg); URSA_UNUSED(flags); URSA_UNUSED(send);
  return -ENOSYS;
}
ssize_t ursa__io_sock_op(int fd, struct msghdr *msg, int flags, bool send, const struct ursa__io_cancel *c) {
  URSA_UNUSED(fd); URSA_UNUSED(msg); URSA_UNUSED(flags); URSA_UNUSED(send); URSA_UNUSED(c);
  return -ENOSYS;
}
ssize_t ursa__io_uring_op(int op, int fd, const struct iovec *iov, int cnt, off_t off, const char *path, int flags,
                          unsigned mode) {
  URSA_UNUSED(op); URSA_UNUSED(fd); URSA_UNUSED(iov); URSA_UNUSED(cnt); URSA_UNUSED(off);
  URSA_UNUSED(path); URSA_UNUSED(flags); URSA_UNUSED(mode);
  return -ENOSYS;
}
#endif

/* Waits in e until an event, a kick or deadline (0: none; UINT64_MAX: do not block), then
 * dispatches what came.  On e's VP's kernel thread. */
static void engine_poll(struct engine *e, uint64_t deadline) {
  struct epoll_event evs[EV_BATCH];
  int n, i;
#if URSA_HAVE_URING
  if (io_kind == URSA__IO_URING) { ur_poll(e, deadline); return; }
#endif
  for (;;) {
    if (deadline == UINT64_MAX) {
      n = epoll_wait(e->epfd, evs, EV_BATCH, 0);
    } else if (deadline == 0) {
      n = epoll_wait(e->epfd, evs, EV_BATCH, -1);
    } else {
      uint64_t now = ursa__now(), d = deadline > now ? deadline - now : 0;
      if (__atomic_load_n(&have_pwait2, __ATOMIC_RELAXED)) {
        struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
        n = (int)syscall(SYS_epoll_pwait2, e->epfd, evs, EV_BATCH, &ts, NULL, 0);
        if (n < 0 && ursa__io_errno() == ENOSYS) { __atomic_store_n(&have_pwait2, false, __ATOMIC_RELAXED); continue; }
      } else {
        n = epoll_wait(e->epfd, evs, EV_BATCH, (int)((d + 999999u) / 1000000u));   /* rounded up */
      }
    }
    if (n >= 0 || ursa__io_errno() != EINTR) break;
    if (deadline != 0 && deadline != UINT64_MAX && ursa__now() >= deadline) { n = 0; break; }
  }
  for (i = 0; i < n; i++) {
    if (evs[i].data.u64 == EV_TAG_EVENTFD) drain_done(e);
    else dispatch(e, (int)(uint32_t)evs[i].data.u64, (uint32_t)(evs[i].data.u64 >> 32), UINT32_MAX, evs[i].events);
  }
}

/* ursa__io_hooks.wait: the VP's idle wait when threads wait on I/O homed here. */
static void hook_wait(struct ursa__vp *vp, uint64_t deadline) {
  struct engine *e = engine_of(vp);
  engine_poll(e, deadline);
  /* Waits still pending and the VP about to run what came: let the poller look at the engine
   * once per round of the run queue from now on.  Relaxed: a hint (a wait that ends meanwhile
   * nudges the poller itself, nwait_dec). */
  if (__atomic_load_n(&vp->io_nwait, __ATOMIC_RELAXED) != 0) poller_nudge(e);
}

/* ursa__io_hooks.kick: any kernel thread. */
static void hook_kick(struct ursa__vp *vp) {
  uint64_t one = 1;
  (void)!write(engine_of(vp)->evfd, &one, sizeof one);
}

/* ursa__io_hooks.reap: another VP's kernel thread helps v, stalled (src/sched/vp.c, "Stealing"):
 * what waits in v's engine is handled here, and the threads it wakes become ready on the caller's
 * VP.  io_uring: what v queued is submitted (its threads' operations would wait for v's next look
 * otherwise), then the completions posted so far (ur_reap, peer).  The kernel posts a completion
 * in the context of the kernel thread that submitted the operation, so those of v's earlier
 * submissions still wait for v to run: the help is partial there.  epoll: a look without waiting
 * (epoll_wait may be called from any thread; each fd is armed one-shot, so each event reaches
 * one dispatcher; v's eventfd, level-triggered, stays for v). */
static bool hook_reap(struct ursa__vp *v) {
  struct engine *e = engine_of(v);
  struct epoll_event evs[EV_BATCH];
  bool any = false;
  int n, i;
  if (e == NULL) return false;
#if URSA_HAVE_URING
  if (io_kind == URSA__IO_URING) {
    ursa__spin_lock(&e->sqlock);
    if (io_uring_sq_ready(&e->ring)) io_uring_submit(&e->ring);
    ursa__spin_unlock(&e->sqlock);
    return ur_reap(e, true);
  }
#endif
  n = epoll_wait(e->epfd, evs, EV_BATCH, 0);
  for (i = 0; i < n; i++) {
    if (evs[i].data.u64 == EV_TAG_EVENTFD) continue;
    dispatch(e, (int)(uint32_t)evs[i].data.u64, (uint32_t)(evs[i].data.u64 >> 32), UINT32_MAX, evs[i].events);
    any = true;
  }
  return any;
}

/* ---- the poller ------------------------------------------------------------------------------- */

/* Unparks e's poller if it is parked (it then checks the engine, and ends if nothing waits). */
static void poller_nudge(struct engine *e) {
  bool smp = smp_now(), wake = false;
  ursa_thread_t th = URSA_THREAD_NULL;
  ursa__lock_if(smp, &e->plock);
  if (e->pstate == P_PARKED && ursa__park_claim(e->poller, false)) {
    e->pstate = P_RUNNING;
    th = e->poller;
    wake = true;
  }
  ursa__unlock_if(smp, &e->plock);
  if (wake) ursa__unpark(th, 0);
}

static void *poller_main(void *arg) {
  struct engine *e = arg;
  struct ursa__vp *vp = e->vp;          /* bound: it never leaves vp */
  bool smp = smp_now();
  ursa__lock_if(smp, &e->plock);
  e->poller = ursa_self();
  e->pstate = P_RUNNING;
  ursa__unlock_if(smp, &e->plock);
  ursa__daemon();                       /* it never keeps the process alive (sched/waiter.h) */
  for (;;) {
    engine_poll(e, UINT64_MAX);
    if (smp) (void)ursa__smp_help_stalled(vp);   /* a stalled VP's threads and completions */
    ursa__lock_if(smp, &e->plock);
    /* seq_cst: pairs with a waiter's increment before its poller_ensure, which takes plock after
     * it: either we see the wait, or it sees P_NONE and makes a new poller */
    if (e->stop || __atomic_load_n(&vp->io_nwait, __ATOMIC_SEQ_CST) == 0) {
      e->pstate = P_NONE;                 /* a new wait makes a new poller */
      ursa__unlock_if(smp, &e->plock);
      return NULL;
    }
    if (ursa__vp_has_ready(vp)) {
      ursa__unlock_if(smp, &e->plock);
      ursa_yield();                       /* once per round of the run queue */
      continue;
    }
    e->pstate = P_PARKED;                 /* nothing else to run: the idle wait takes over */
    ursa__park(URSA__W_IO_POLLER, e, &e->plock, 0);
  }
}

/* e has a wait pending: make sure its poller lives and looks (called after the io_nwait
 * increment).  A parked poller is unparked: with several VPs a VP may take new work straight from
 * its idle spin, without the idle wait that unparks the poller, and its waits would otherwise be
 * looked at only when it next runs out of work.  (With one VP the poller is parked only while the
 * VP waits in its engine, when no thread runs that could get here.) */
static void poller_ensure(struct engine *e) {
  bool smp = smp_now();
  ursa_attr_t a;
  ursa_thread_t t;
  ursa__lock_if(smp, &e->plock);
  if (e->pstate == P_PARKED && !e->stop && ursa__park_claim(e->poller, false)) {
    e->pstate = P_RUNNING;
    t = e->poller;
    ursa__unlock_if(smp, &e->plock);
    ursa__unpark(t, 0);
    return;
  }
  if (e->pstate != P_NONE || e->stop) { ursa__unlock_if(smp, &e->plock); return; }
  e->pstate = P_CREATING;
  ursa__unlock_if(smp, &e->plock);
  ursa_attr_init(&a);
  ursa_attr_setdetached(&a, 1);
  ursa_attr_setname(&a, "ursa-io-poller");
  if (smp) {
    ursa_attr_setvp(&a, (int)e->vp->index);
    ursa_attr_setbound(&a, 1);
  }
  if (ursa_create(&t, &a, poller_main, e) != 0) {
    /* No poller (out of memory): the VP still looks at its engine whenever its run queue
     * empties, so waits end, later. */
    ursa__lock_if(smp, &e->plock);
    e->pstate = P_NONE;
    ursa__unlock_if(smp, &e->plock);
  }
}

/* ---- waiting for readiness -------------------------------------------------------------------- */

/* Registers a node of r for fd in the home engine (fe lock taken here).  1 linked, 0 the fd is
 * ready already (cannot be waited for: a regular file), < 0 an error. */
static int node_add(struct ionode *n, struct iorec *r, int fd, uint32_t events, struct engine *mine, bool smp,
                    struct engine **kick) {
  struct fdent *fe = ursa__io_fdent(fd);
  int err = 0;
  if (fe == NULL) return -EINVAL;
  memset(n, 0, sizeof *n);
  n->rec = r;
  n->events = events;
  ursa__lock_if(smp, &fe->lock);
  if (fe->home == NULL) { fe->home = mine; fe->registered = 0; fe->armed = 0; }
  if ((events & ~fe->armed) != 0) err = arm(fe, fd, fe->armed | events);
  if (err == 0) {
    n->home = fe->home;
    n->next = fe->waiters;
    n->prev = NULL;
    if (fe->waiters) fe->waiters->prev = n;
    fe->waiters = n;
    n->linked = 1;
    /* seq_cst: pairs with the home VP's load in its idle sleep (vp.c) and the poller's check */
    __atomic_add_fetch(&n->home->vp->io_nwait, 1u, __ATOMIC_SEQ_CST);
    if (n->home != mine) *kick = n->home;
  }
  ursa__unlock_if(smp, &fe->lock);
  if (err == -EPERM) return 0;                    /* regular file, directory: always ready */
  return err < 0 ? err : 1;
}

static void node_del(struct ionode *n, int fd, bool smp) {
  struct fdent *fe = ursa__io_fdent(fd);
  bool was;
  ursa__lock_if(smp, &fe->lock);
  was = n->linked;
  if (was) node_unlink(fe, n);
  ursa__unlock_if(smp, &fe->lock);
  if (was) nwait_dec(n->home);
}

/* Waits until one of the n descriptors fds[i] has one of events[i] (EPOLLIN, EPOLLOUT, EPOLLPRI;
 * errors and hang-ups always count), its fd is closed with ursa_close, or deadline (CLOCK_MONOTONIC
 * ns, 0: none).  Returns > 0 (the events of the fd that ended the wait; a spurious wake-up is
 * possible: the caller tries its call again), -EBADF, -ETIMEDOUT, -EINVAL (an fd beyond the
 * table), -ENOMEM.  nodes has room for n.  Executed by ursa threads only. */
static int wait_many(const int *fds, const uint32_t *events, unsigned n, struct ionode_room *room,
                     uint64_t deadline, const struct ursa__io_cancel *c) {
  struct ionode *nodes = (struct ionode *)(void *)room;
  struct ursa__vp *vp = ursa__tls_vp;
  struct engine *mine = engine_of(vp), *kick = NULL;
  bool smp = smp_now();
  struct iorec r;
  unsigned i, added = 0;
  int res = 0, err = 0;
  if (deadline != 0 && deadline <= ursa__now()) return -ETIMEDOUT;
  memset(&r, 0, sizeof r);
  r.th = ursa_self();
  r.timed = deadline != 0;
  if (c != NULL) {                     /* a canceller finds r from now on (src/io/waiter.h) */
    ursa__lock_if(smp, c->lock);
    *c->slot = &r;
    ursa__unlock_if(smp, c->lock);
    /* seq_cst: pairs with the canceller's store of the flag before it looks at the slot */
    if (__atomic_load_n(c->flag, __ATOMIC_SEQ_CST)) err = -ECANCELED, n = 0;
  }
  for (i = 0; i < n; i++) {
    int k = node_add(&nodes[i], &r, fds[i], events[i], mine, smp, &kick);
    if (k < 0) { err = k; break; }
    if (k == 0) { err = (int)events[i]; break; }         /* ready: no wait */
    added++;
    if (kick) {
      /* fd is homed on another VP, which may sleep on its futex: it must wait in its engine now
       * (the kick pairs with its seq_cst look at io_nwait after publishing its sleep, vp.c) */
      poller_ensure(kick);
      ursa__vp_kick(kick->vp);
      kick = NULL;
    }
  }
  if (err == 0) {
    poller_ensure(mine);
    ursa__lock_if(smp, &r.lock);
    if (!r.done) {
      r.parked = 1;
      res = ursa__park(URSA__W_IO_FD, n ? (void *)ursa__io_fdent(fds[0]) : (void *)&r, &r.lock, deadline);
      vp = URSA__VP_AFTER_SWITCH();
    } else {
      ursa__unlock_if(smp, &r.lock);
    }
  }
  for (i = 0; i < added; i++) node_del(&nodes[i], fds[i], smp);
  if (c != NULL) {                     /* no canceller touches r after this */
    ursa__lock_if(smp, c->lock);
    *c->slot = NULL;
    ursa__unlock_if(smp, c->lock);
  }
  if (err != 0) return err;
  /* r.done is final here: every node is unlinked, and a claim happens only on a linked node or
   * by a canceller, which holds c->lock, taken just above */
  return r.done ? r.res : res;
}

int ursa__io_fd_wait_many(const int *fds, const uint32_t *events, unsigned n, struct ionode_room *room,
                          uint64_t deadline) {
  return wait_many(fds, events, n, room, deadline, NULL);
}

_Static_assert(sizeof(struct ursa__io_node) == sizeof(struct ionode_room), "two names of one room");

int ursa__io_wait(const int *fds, const uint32_t *events, unsigned n, struct ursa__io_node *nodes,
                  uint64_t deadline, const struct ursa__io_cancel *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  unsigned i;
  if (vp == NULL || vp->io == NULL) return -ENOSYS;
  for (i = 0; i < n; i++)
    if (ursa__io_fdent(fds[i]) == NULL) return fds[i] < 0 ? -EBADF : -EINVAL;
  return wait_many(fds, events, n, (struct ionode_room *)(void *)nodes, deadline, c);
}

/* A canceller holding the lock of the waiter's struct ursa__io_cancel: the record is alive (the
 * waiter clears its slot under that lock).  The claim is rec_claim's, without an fd's lock: the
 * nodes stay linked until the woken waiter unlinks them (dispatch and ursa__io_fd_close skip a
 * record that is done). */
bool ursa__io_wait_end(void *rec, int res) {
  struct iorec *r = rec;
  bool unpark = false;
#if URSA_HAVE_URING
  if (*(const uint8_t *)rec == REC_RING) return ur_cancel_op(rec);
#endif
  if (!rec_claim(r, res, smp_now(), &unpark)) return false;
  if (unpark) ursa__unpark(r->th, 0);
  return true;
}

_Static_assert(sizeof(struct ionode) <= sizeof(struct ionode_room), "struct ionode_room is too small");

int ursa__io_fd_wait(int fd, uint32_t events, uint64_t deadline) {
  struct ionode_room node;
  return ursa__io_fd_wait_many(&fd, &events, 1, &node, deadline);
}

/* ursa_close: wakes every thread waiting on fd with -EBADF, forgets the registration and closes
 * fd, all under fd's lock: a thread that registers a wait on fd does it before (and is woken
 * here) or after (and finds fd closed: epoll_ctl says EBADF), never in between, where its
 * registration would die with the file unseen.  close(2)'s result (0 or -errno; EINTR counts as
 * closed, as on Linux).  Any ursa thread. */
int ursa__io_fd_close(int fd) {
  struct fdent *fe = ursa__io_fdent(fd);
  bool smp = smp_now();
  struct iorec *wake = NULL;
  struct ionode *n, *nx;
  struct engine *decs[64];
  unsigned nd = 0, i;
  int ret = 0;
  if (fe == NULL) return close(fd) == 0 || ursa__io_errno() == EINTR ? 0 : -ursa__io_errno();
again:
  ursa__lock_if(smp, &fe->lock);
  for (n = fe->waiters; n && nd < 64; n = nx) {
    bool unpark;
    nx = n->next;
    if (rec_claim(n->rec, -EBADF, smp, &unpark)) {
      node_unlink(fe, n);
      decs[nd++] = n->home;
      if (unpark) { n->rec->wnext = wake; wake = n->rec; }
    }
  }
  if (n == NULL) {                            /* all seen: forget the file */
#if URSA_HAVE_URING
    if (io_kind == URSA__IO_URING && __atomic_load_n(&fe->ring_ops, __ATOMIC_SEQ_CST) != 0) ur_cancel_everywhere(fd);
#endif
    if (fe->registered && fe->home) {
#if URSA_HAVE_URING
      if (io_kind == URSA__IO_URING) {               /* its polls hold the file: cancel them */
        struct engine *h = fe->home;
        struct io_uring_sqe *sqe;
        ursa__lock_if(smp, &h->sqlock);
        sqe = ur_sqe(h);
        io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, UR_TAG_CANCEL);
        io_uring_submit(&h->ring);
        ursa__unlock_if(smp, &h->sqlock);
      } else
#endif
      (void)epoll_ctl(fe->home->epfd, EPOLL_CTL_DEL, fd, NULL);
    }
    fe->gen++;
    fe->home = NULL;
    fe->registered = 0;
    fe->armed = 0;
    __atomic_store_n(&fe->mode, FD_UNKNOWN, __ATOMIC_RELAXED);
    if (close(fd) != 0 && ursa__io_errno() != EINTR) ret = -ursa__io_errno();
  }
  ursa__unlock_if(smp, &fe->lock);
  unpark_list(wake, ursa__tls_vp);
  wake = NULL;
  for (i = 0; i < nd; i++) nwait_dec(decs[i]);
  if (n != NULL) { nd = 0; goto again; }
  return ret;
}

/* A new file got number fd (ursa_accept, ursa_openat): events of the old one are stale. */
void ursa__io_fd_new(int fd, uint8_t mode) {
  struct fdent *fe = ursa__io_fdent(fd);
  bool smp = smp_now();
  if (fe == NULL) return;
  ursa__lock_if(smp, &fe->lock);
  if (fe->waiters == NULL) {                /* else: waiters of a number closed by close(2)? keep them */
    fe->gen++;
    fe->home = NULL;
    fe->registered = 0;
    fe->armed = 0;
  }
  __atomic_store_n(&fe->mode, mode, __ATOMIC_RELAXED);
  ursa__unlock_if(smp, &fe->lock);
}

/* ---- the offload pool ------------------------------------------------------------------------- */

/* Its locks are ursa's spin lock and a futex, never glibc's pthread mutex or condition variable:
 * under libursa-pthread.so those names are the POSIX layer's, which would serve this code's
 * calls from ursa threads with its own objects while the pool's kernel threads got glibc's (the
 * layer tells libursa's calls by their return address, at a cost on its hottest path). */
static void pool_futex(uint32_t *w, int op, uint32_t val) {
  syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}
static struct {
  ursa__spin_t    lock;
  uint32_t        seq;                  /* futex word: bumped (under lock) to wake pool threads  */
  struct offreq  *head, *tail;
  unsigned        nq;                   /* requests queued, not yet taken by a pool thread      */
  unsigned        max, started, idle;   /* idle: pool threads waiting on the futex seq           */
  int             stop;
  pthread_t      *threads;
} pool = { 0, 0, NULL, NULL, 0, 0, 0, 0, 0, NULL };

static void *pool_main(void *arg) {
  URSA_UNUSED(arg);
  ursa__spin_lock(&pool.lock);
  for (;;) {
    struct offreq *r;
    struct engine *e;
    uint64_t one = 1;
    while (pool.head == NULL && !pool.stop) {
      uint32_t seq = pool.seq;
      pool.idle++;
      ursa__spin_unlock(&pool.lock);
      pool_futex(&pool.seq, FUTEX_WAIT, seq);           /* returns at once if seq moved on */
      ursa__spin_lock(&pool.lock);
      pool.idle--;
    }
    if (pool.head == NULL) break;                     /* stop, and nothing left to run */
    r = pool.head;
    pool.nq--;
    pool.head = r->next;
    if (pool.head == NULL) pool.tail = NULL;
    ursa__spin_unlock(&pool.lock);
    r->result = r->fn(r->arg);
    e = r->e;
    ursa__spin_lock(&e->dlock);                      /* the caller's VP takes it from here */
    r->next = e->done;
    e->done = r;
    ursa__spin_unlock(&e->dlock);
    (void)!write(e->evfd, &one, sizeof one);
    ursa__spin_lock(&pool.lock);
  }
  ursa__spin_unlock(&pool.lock);
  return NULL;
}

/* Runs fn(arg) on the pool while the calling ursa thread is parked; its result in *result.  0, or
 * -EAGAIN when no pool thread could be started at all.  Executed by ursa threads only. */
int ursa__io_offload(void *(*fn)(void *), void *arg, void **result) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct engine *e = engine_of(vp);
  struct offreq r;
  r.next = NULL;
  r.fn = fn;
  r.arg = arg;
  r.result = NULL;
  r.e = e;
  r.th = ursa_self();
  ursa__spin_lock(&pool.lock);
  if (pool.tail) pool.tail->next = &r; else pool.head = &r;
  pool.tail = &r;
  pool.nq++;
  if (pool.nq > pool.idle && pool.started < pool.max) {   /* a request no waiting thread takes */
    sigset_t all, old;
    pthread_attr_t pa, *pap = NULL;
    const cpu_set_t *cpus = ursa__pin_cpus();         /* URSA_PIN: not this VP's one CPU */
    if (cpus != NULL && pthread_attr_init(&pa) == 0) {
      pap = &pa;
      pthread_attr_setaffinity_np(&pa, sizeof *cpus, cpus);
    }
    sigfillset(&all);                                 /* signals stay with the program's threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&pool.threads[pool.started], pap, pool_main, NULL) == 0) pool.started++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pap != NULL) pthread_attr_destroy(&pa);
    if (pool.started == 0) {
      pool.head = pool.tail = NULL;
      pool.nq = 0;
      ursa__spin_unlock(&pool.lock);
      return -EAGAIN;
    }
  }
  /* counted before a pool thread can finish it: the completion's decrement follows */
  __atomic_add_fetch(&vp->io_nwait, 1u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&pool.seq, pool.seq + 1, __ATOMIC_RELAXED);   /* (read by the kernel) */
  ursa__spin_unlock(&pool.lock);
  pool_futex(&pool.seq, FUTEX_WAKE, 1);
  poller_ensure(e);
  /* Only this VP's kernel thread takes r off e->done (drain_done), and it cannot while this
   * thread still runs here: no lock is needed for the park. */
  ursa__park(URSA__W_IO_OFFLOAD, arg, NULL, 0);
  *result = r.result;                                /* written before the pool's dlock release */
  return 0;
}

/* ---- set-up ----------------------------------------------------------------------------------- */

static const struct ursa__waitkind
  k_fd      = { "ursa I/O wait on fd entry", NULL, 0 },
  k_offload = { "ursa_offload of argument", NULL, 0 },
  k_poller  = { "the I/O poller, idle, of engine", NULL, 0 };

/* A ring for e (io_uring): 0, or -errno of its setup (ENOSYS: no io_uring; EPERM: refused by
 * kernel.io_uring_disabled, a seccomp filter or a container's policy). */
static int ur_make(struct engine *e) {
#if URSA_HAVE_URING
  /* COOP_TASKRUN: the kernel posts a completion in the submitting kernel thread's context
   * (task work); by default it interrupts that thread at once (an IPI when it runs), with
   * COOP_TASKRUN at its next entry to the kernel, and TASKRUN_FLAG says in the ring when one is
   * due (ur_poll enters then).  httpd at 1 VP under wrk: 111 -> 155 thousand requests per second
   * (docs/ARCHITECTURE.md, "I/O").  Linux 5.19, as the cancel by fd below. */
  int r = io_uring_queue_init(256, &e->ring, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
  if (r == -EINVAL) r = io_uring_queue_init(256, &e->ring, 0);
  if (r < 0) return r;
  if (!(e->ring.features & IORING_FEAT_EXT_ARG)) {     /* the wait with a timeout: Linux 5.11 */
    io_uring_queue_exit(&e->ring);
    return -ENOTSUP;
  }
  {
    /* ursa_close cancels an fd's polls with IORING_ASYNC_CANCEL_FD (Linux 5.19): a kernel that
     * does not know it says -EINVAL here, one that does -ENOENT (nothing of the eventfd's yet) */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
    struct io_uring_cqe *cqe;
    io_uring_prep_cancel_fd(sqe, e->evfd, 0);
    r = io_uring_submit_and_wait(&e->ring, 1);
    if (r >= 0) r = io_uring_peek_cqe(&e->ring, &cqe);
    if (r == 0) { r = cqe->res; io_uring_cqe_seen(&e->ring, cqe); }
    if (r != -ENOENT) {
      io_uring_queue_exit(&e->ring);
      return r == -EINVAL ? -ENOTSUP : (r < 0 ? r : -EIO);
    }
  }
  e->ring_ok = 1;
  ur_arm_eventfd(e);
  io_uring_submit(&e->ring);
  return 0;
#else
  URSA_UNUSED(e);
  return -ENOSYS;
#endif
}

static int engine_make(struct engine *e, struct ursa__vp *vp, int kind) {
  struct epoll_event ev;
  memset(e, 0, sizeof *e);
  e->vp = vp;
  e->epfd = e->evfd = -1;
  e->dlock = 0;
  if ((e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return -errno;
  if (kind == URSA__IO_URING) {
    int r = ur_make(e);
    if (r == 0) vp->io = e;
    return r;
  }
  if ((e->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) return -errno;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.u64 = EV_TAG_EVENTFD;
  if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->evfd, &ev) != 0) return -errno;
  vp->io = e;
  return 0;
}

/* vp_live: the engine's VP is still there (engines_make's failure), so its pointer is cleared;
 * ursa__io_free runs after VPs 1..N-1 are freed and before VP 0 is cleared. */
static void engine_free(struct engine *e, bool vp_live) {
  if (vp_live && e->vp) e->vp->io = NULL;
#if URSA_HAVE_URING
  if (e->ring_ok) io_uring_queue_exit(&e->ring);
  e->ring_ok = 0;
#endif
  /* never a tail call to close: libursa-pthread.so tells libursa's calls by their return address
   * (tests/CMakeLists.txt, pthread_ursa_no_tail_calls) */
  if (e->epfd >= 0) close(e->epfd);
  if (e->evfd >= 0) close(e->evfd);
  e->epfd = e->evfd = -1;
}

/* Makes the n engines of kind: 0, or the error (none left made). */
static int engines_make(unsigned n, int kind) {
  unsigned i;
  int err = 0;
  nengines = 0;
  for (i = 0; i < n && err == 0; i++) {
    struct ursa__vp *vp = n > 1 ? ursa__g.vps[i] : &ursa__g.vp0;
    err = engine_make(&engines[i], vp, kind);
    nengines = i + 1;
  }
  if (err != 0) {
    for (i = 0; i < nengines; i++) engine_free(&engines[i], true);
    nengines = 0;
  }
  return err;
}

/* ursa__io_hooks.forget (src/sched/forget.c): the child of a fork keeps its calling thread only,
 * which runs and so waits for nothing here.  Every descriptor's waiting nodes are unlinked (an
 * event armed already finds none and is not armed again), the offload requests queued or done
 * are dropped (they belong to gone threads), and a poller, gone too, is made anew when a wait
 * needs one.  One VP, on its kernel thread (a fork handler: nothing else runs). */
static void hook_forget(struct ursa__vp *vp) {
  struct engine *e = engine_of(vp);
  unsigned c, k;
  for (c = 0; c < FD_CHUNKS; c++) {
    struct fdent *ch = fd_chunks[c];
    if (ch == NULL) continue;
    for (k = 0; k < (1u << FD_CHUNK_BITS); k++)
      while (ch[k].waiters) node_unlink(&ch[k], ch[k].waiters);
  }
  pool.head = pool.tail = NULL;
  pool.nq = 0;
  if (e) {
    e->done = NULL;
    e->pstate = P_NONE;
    e->poller = URSA_THREAD_NULL;
  }
  vp->io_nwait = 0;
}

int ursa__io_init(int want, unsigned offload_threads) {
  static int said;                         /* the fallback's message: once per process */
  unsigned n = ursa__g.nvps ? ursa__g.nvps : 1;
  int err = -ENOSYS;
  engines = calloc(n, sizeof *engines);
  pool.threads = calloc(offload_threads ? offload_threads : 1, sizeof *pool.threads);
  if (engines == NULL || pool.threads == NULL) { free(engines); free(pool.threads); engines = NULL; pool.threads = NULL; return -ENOMEM; }
  io_why[0] = '\0';
  io_kind = URSA__IO_URING;                /* arm() and ur_make read it */
  /* io_uring by default where it works; epoll when asked, or when io_uring is missing or refused */
  if (want == URSA__IO_EPOLL) {
    snprintf(io_why, sizeof io_why, "URSA_IO=epoll");
  } else {
#if !URSA_HAVE_URING
    snprintf(io_why, sizeof io_why, "built without liburing");
#else
#  if URSA_VALGRIND
    if (RUNNING_ON_VALGRIND) snprintf(io_why, sizeof io_why, "under Valgrind, which does not follow the rings");
    else
#  endif
    if ((err = engines_make(n, URSA__IO_URING)) != 0)
      snprintf(io_why, sizeof io_why, "io_uring_setup: %s", strerror(-err));
#endif
    if (err != 0 && want == URSA__IO_URING && !said) {
      said = 1;
      fprintf(stderr, "ursa: URSA_IO=uring: io_uring cannot be used (%s); using epoll\n", io_why);
    }
  }
  if (err != 0) {
    io_kind = URSA__IO_EPOLL;
    if ((err = engines_make(n, URSA__IO_EPOLL)) != 0) {
      free(engines); free(pool.threads);
      engines = NULL; pool.threads = NULL;
      io_kind = URSA__IO_NONE;
      return err;
    }
  }
  pool.max = offload_threads ? offload_threads : 1;
  pool.started = pool.idle = 0;
  pool.stop = 0;
  pool.nq = 0;
  pool.head = pool.tail = NULL;
  ursa__io_hooks.wait = hook_wait;
  ursa__io_hooks.kick = hook_kick;
  ursa__io_hooks.forget = hook_forget;
  ursa__io_hooks.reap = hook_reap;
  ursa__waitkind_register(URSA__W_IO_FD, &k_fd);
  ursa__waitkind_register(URSA__W_IO_OFFLOAD, &k_offload);
  ursa__waitkind_register(URSA__W_IO_POLLER, &k_poller);
  return 0;
}

/* Whether e's poller still exists: in a state other than P_NONE, or its thread not yet ended
 * (a stale handle: ursa_thread_getname fails). */
static bool poller_alive(struct engine *e) {
  char name[8];
  uint8_t st;
  ursa_thread_t h;
  ursa__lock_if(smp_now(), &e->plock);
  st = e->pstate;
  h = e->poller;
  ursa__unlock_if(smp_now(), &e->plock);
  return st != P_NONE || (h != URSA_THREAD_NULL && ursa_thread_getname(h, name, sizeof name) == 0);
}

size_t ursa__io_pollers_live(void) {
  size_t n = 0;
  unsigned i;
  for (i = 0; i < nengines; i++) n += poller_alive(&engines[i]);
  return n;
}

void ursa__io_fini(void) {
  unsigned i, c;
  for (i = 0; i < nengines; i++) {
    struct engine *e = &engines[i];
    ursa__lock_if(smp_now(), &e->plock);
    e->stop = 1;
    ursa__unlock_if(smp_now(), &e->plock);
    poller_nudge(e);
  }
  for (i = 0; i < nengines; i++)                   /* the pollers end: their handles go stale */
    while (poller_alive(&engines[i])) ursa_yield();
  ursa__spin_lock(&pool.lock);
  pool.stop = 1;
  __atomic_store_n(&pool.seq, pool.seq + 1, __ATOMIC_RELAXED);
  ursa__spin_unlock(&pool.lock);
  pool_futex(&pool.seq, FUTEX_WAKE, INT32_MAX);
  for (c = 0; c < pool.started; c++) pthread_join(pool.threads[c], NULL);
  free(pool.threads);
  pool.threads = NULL;
  pool.started = 0;
}

/* The engines go once the VPs have stopped (ursa__io_free's comment in io.h says why). */
void ursa__io_free(void) {
  unsigned i, c;
  for (i = 0; i < nengines; i++) engine_free(&engines[i], false);
  ursa__g.vp0.io = NULL;                           /* VP 0 stays: no dangling engine */
  free(engines);
  engines = NULL;
  nengines = 0;
  for (c = 0; c < FD_CHUNKS; c++) { free(fd_chunks[c]); fd_chunks[c] = NULL; }
  /* io_kind stays: URSA_STATS prints the engine that ran, at exit */
}

const char *ursa__io_name(void) {
  switch (io_kind) {
  case URSA__IO_EPOLL: return "epoll";
  case URSA__IO_URING: return "io_uring";
  default:             return "none";
  }
}

const char *ursa__io_why(void) { return io_why; }

/* The child of a fork that keeps the runtime (one VP, forked by the VP itself): the engine is
 * shared with the parent (the same epoll instance, the same ring) and the pool's threads stayed
 * there.  The child gets an engine of its own, its descriptors' waits are armed in it again, and
 * the pool starts threads afresh at its next request (a request the parent's pool had taken is
 * lost: its thread waits for ever).  Runs in the atfork child handler, on the only kernel thread. */
void ursa__io_atfork_child(void) {
  unsigned i, c, k;
  pool.lock = 0;                                    /* (a pool thread may have held it) */
  pool.started = pool.idle = 0;
  for (i = 0; i < nengines; i++) {
    struct engine *e = &engines[i], keep = *e;
    struct epoll_event ev;
    uint64_t one = 1;
    if (e->epfd >= 0) close(e->epfd);
    if (e->evfd >= 0) close(e->evfd);
#if URSA_HAVE_URING
    if (e->ring_ok) io_uring_queue_exit(&e->ring);
#endif
    if (engine_make(e, e->vp, io_kind) != 0) URSA_PANIC("fork: the child's I/O engine cannot be made");
    e->pstate = keep.pstate;                       /* the poller's thread was copied too */
    e->stop = keep.stop;
    e->poller = keep.poller;
    e->done = keep.done;
    if (e->done) (void)!write(e->evfd, &one, sizeof one);
    URSA_UNUSED(ev);
  }
  for (c = 0; c < FD_CHUNKS; c++) {
    struct fdent *ch = fd_chunks[c];
    if (ch == NULL) continue;
    for (k = 0; k < (1u << FD_CHUNK_BITS); k++) {
      struct fdent *fe = &ch[k];
      struct ionode *n;
      uint32_t want = 0;
      fe->lock = 0;
      fe->gen++;
      fe->registered = 0;
      fe->armed = 0;
      fe->home = NULL;
      for (n = fe->waiters; n; n = n->next) { want |= n->events; n->home = &engines[0]; }
      if (want) {
        fe->home = &engines[0];
        (void)arm(fe, (int)((c << FD_CHUNK_BITS) | k), want);
      }
    }
  }
}
