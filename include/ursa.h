/*
 * ursa.h - the public interface of ursa, a runtime of lightweight user-level threads.
 *
 * Conventions
 *   - Every function returns 0 on success or a negative errno value (-EINVAL, -EPERM, ...);
 *     results go in out-parameters.  ursa never reports an error through errno.
 *   - Handles (ursa_thread_t) are opaque and generation-tagged: a handle of a thread that was
 *     joined, or of a detached thread that finished, or a value that never was a handle, gets
 *     -ESRCH.  It never crashes.
 *   - Synchronization objects live in storage the caller owns (ursa_mutex_t m;).  Their contents
 *     are private.  An object must be initialized (or statically initialized where an
 *     URSA_*_INITIALIZER exists) before use and must not be copied or moved while in use.
 *     Using a destroyed object returns -EINVAL.  Destroying an object with waiters returns -EBUSY.
 *   - Timed variants take an absolute deadline on a clock (CLOCK_MONOTONIC or CLOCK_REALTIME, as
 *     an int: Linux's clockid_t), like sem_clockwait(3).  A deadline with tv_nsec outside [0, 1e9) is -EINVAL; a deadline in the past
 *     still tries once, then returns -ETIMEDOUT.
 *
 * Contexts
 *   ursa functions may be called from ursa threads only: after ursa_init() the thread that called
 *   it (usually main) is an ursa thread, and so is every thread made by ursa_create().  Calls from
 *   another kernel thread, or before ursa_init(), return -EPERM.  Exceptions, callable from
 *   anywhere: ursa_init, ursa_strerror, the ursa_attr_* functions and the counters (ursa_stats*,
 *   ursa_vp_count).  None may be called from a signal handler.  "May switch" below means the
 *   caller may be suspended and other ursa threads run.
 *
 * fork
 *   With one VP, the child of a fork called by an ursa thread keeps the runtime: the caller goes
 *   on as an ursa thread (the copies of the other threads run when it yields or waits), without
 *   the URSA_DUMP_SIGNAL thread (the POSIX-threads layer gives its child the calling thread
 *   only, as POSIX does: docs/GUIDE.md, "Running POSIX-threads programs").  In every other case (several VPs, or fork called by a kernel
 *   thread that is no VP) the runtime stays in the parent: in the child every ursa call returns
 *   -ECHILD (ursa_init too; ursa_self gives URSA_THREAD_NULL), so the child may only exec or
 *   _exit, or go on without ursa (docs/GUIDE.md, "fork").
 *
 * See docs/GUIDE.md for a user's guide and docs/ARCHITECTURE.md for how it works.
 */
#ifndef URSA_H
#define URSA_H

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  error "ursa supports Linux (x86-64 and AArch64) only"
#endif

#define URSA_API __attribute__((visibility("default")))

#define URSA_VERSION_MAJOR 0
#define URSA_VERSION_MINOR 1
#define URSA_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------------------
 * Runtime
 * ------------------------------------------------------------------------------------------- */

/* Configuration for ursa_init().  Zero in a field means "the default, or the URSA_* environment
 * variable named beside it when it is set". */
typedef struct ursa_config {
  size_t stack_size;      /* URSA_STACK_SIZE: default stack size in bytes (65536)            */
  size_t stack_cache;     /* URSA_STACK_CACHE: free stacks kept for reuse per VP (1024)       */
  size_t stack_prealloc;  /* URSA_STACK_PREALLOC: stacks mapped by ursa_init (8)             */
  int    stats;           /* URSA_STATS: 1 = print the counters to stderr at exit            */
  int    guard;           /* URSA_GUARD: 0 auto (MADV_GUARD_INSTALL, else mprotect),
                             1 = always mprotect.  Guard pages cannot be switched off.       */
  unsigned vps;           /* URSA_VPS: virtual processors (kernel threads running ursa
                             threads); default: the CPUs this process may use
                             (sched_getaffinity).  1 gives the cooperative core: one thread
                             at a time, no atomics on any path.                              */
  int    pin;             /* URSA_PIN: 1 = pin VP i to the i-th allowed CPU                  */
  int    sched;           /* URSA_SCHED: URSA_SCHED_ROTATOR (default), _LB2, _GLOBAL, _STEAL  */
  unsigned pq_cap;        /* URSA_PQ_CAP: ready threads a VP keeps before it gives some away
                             (Protect Queue capacity; default 16)                            */
  unsigned wq_cap;        /* URSA_WQ_CAP: Waiver Queue / deque capacity per VP (default 1024) */
  int    region_balance;  /* URSA_REGION_BALANCE: 1 = an idle VP with no region takes a whole
                             region from a VP that has several (moved at that VP's next switch) */
  int    model;           /* URSA_MODEL: the execution model, URSA_MODEL_* below (default: pcm
                             with several VPs, cm with one)                                   */
  unsigned quantum_us;    /* URSA_QUANTUM_US: cp-ts time slice, 100 .. 10,000,000 us (10,000) */
  unsigned switch_count;  /* URSA_SWITCH_COUNT: cp-ic, ursa_tick() calls between switches
                             (10,000)                                                         */
  unsigned rotate_us;     /* URSA_ROTATE_US: several VPs, the balancing tick (the rotator's
                             interval timer), 100 .. 10,000,000 us; 0 = the default, 1,000 us;
                             URSA_ROTATE_OFF (URSA_ROTATE_US=0 or off) = none.  Each busy VP's
                             timer signal, at a safe point, runs the ring step and gives ready
                             threads to idle VPs, so threads waiting behind one that does not
                             switch run elsewhere.  Like cp-ts it interrupts system calls
                             (SA_RESTART; see docs/GUIDE.md).  Off where cp-ts is refused.       */
  int    io;              /* URSA_IO: the I/O engine, URSA_IO_EPOLL (URSA_IO=epoll) or
                             URSA_IO_URING (URSA_IO=uring); 0: the default (see "I/O" below) */
  unsigned offload_threads; /* URSA_OFFLOAD_THREADS: kernel threads of ursa_offload's pool,
                             1 .. 1024 (4)                                                    */
  const char *explore;    /* URSA_EXPLORE: schedule exploration (docs/GUIDE.md, "Finding
                             concurrency bugs"): "random" or "pct[:depth[:steps]]"; NULL: off.
                             One kernel thread runs every ursa thread (ursa_vp_count() still
                             says vps) and the strategy picks the thread that runs at every
                             scheduling point; time is virtual.  Given here, seed is used as is;
                             from the environment, URSA_SEED (or URSA_REPLAY) gives it.       */
  uint64_t seed;          /* exploration's seed (with explore above)                          */
} ursa_config_t;

/* ursa_config_t.rotate_us: no balancing tick. */
#define URSA_ROTATE_OFF 0xffffffffu
#define URSA_IO_EPOLL 1
#define URSA_IO_URING 2

/* Execution models (the journal paper's CM, PCM and CP; docs/GUIDE.md, "Choosing a model").  The
 * same binary runs under each: URSA_MODEL=cm|pcm|cp-ts|cp-ic.
 *   CM     one VP; a thread runs until it yields, waits or blocks.  vps must be 0 or 1.
 *   PCM    N VPs, cooperative; threads of one region never run at the same time.
 *   CP_TS  N VPs, preemptive by time-slicing: a thread that has run a whole quantum is switched
 *          out at a safe point (a per-VP timer signal; never inside ursa, libc or another shared
 *          library, never while preemption is disabled; else at the next ursa call or tick).
 *   CP_IC  N VPs, preemptive by iteration counting: every switch_count-th ursa_tick() on a VP
 *          switches (SR's loop back-edge counting). */
#define URSA_MODEL_CM    1
#define URSA_MODEL_PCM   2
#define URSA_MODEL_CP_TS 3
#define URSA_MODEL_CP_IC 4

/* Run-queue policies with several VPs (docs/GUIDE.md compares them). */
#define URSA_SCHED_ROTATOR 1   /* Lesser Bear LB3: per-VP Protect Queue + Waiver Queue ring    */
#define URSA_SCHED_LB2     2   /* Lesser Bear LB2: Waiver Queues any VP dequeues under a lock  */
#define URSA_SCHED_GLOBAL  3   /* one global queue under a lock                                */
#define URSA_SCHED_STEAL   4   /* per-VP Chase-Lev deques with random work stealing            */

/* Makes the calling kernel thread virtual processor 0 and the caller an ursa thread named "main".
 * cfg may be NULL.  -EBUSY if ursa is already initialized; -ENOMEM if memory or address space runs
 * out (allocations, the VPs' stacks: RLIMIT_AS too); -EAGAIN if the system refuses a VP's kernel
 * thread or a cp-ts timer (RLIMIT_NPROC, threads-max); -EINVAL for a bad setting; -ENOTSUP for a
 * model that cannot run here (cp-ts, see docs/GUIDE.md); -ECHILD in the child of a fork that left
 * the runtime in the parent (see fork above). */
URSA_API int ursa_init(const ursa_config_t *cfg);

/* Releases the runtime.  Call from the thread that called ursa_init() once every other thread has
 * finished and been joined (or was detached and finished): -EBUSY otherwise, -EPERM from another
 * thread.  A program may also simply return from main() or call exit() with threads alive: the
 * process exits at once. */
URSA_API int ursa_fini(void);

/* The text for an error code returned by ursa (negative) or an errno value (positive). */
URSA_API const char *ursa_strerror(int err);

/* ---------------------------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------------------------- */

typedef struct ursa_thread_s *ursa_thread_t;    /* opaque, generation-tagged */
#define URSA_THREAD_NULL ((ursa_thread_t)0)

#define URSA_STACK_MIN   16384u                 /* smallest stack ursa_attr_setstacksize takes */
#define URSA_NAME_MAX    32                     /* including the terminating NUL               */

typedef struct ursa_attr {
  uint64_t _private[8];
} ursa_attr_t;

URSA_API int ursa_attr_init(ursa_attr_t *attr);
URSA_API int ursa_attr_destroy(ursa_attr_t *attr);
/* Bytes of usable stack, rounded up to whole pages; a guard page is added below.  -EINVAL when
 * smaller than URSA_STACK_MIN.  A size the system cannot map makes ursa_create fail with -EAGAIN. */
URSA_API int ursa_attr_setstacksize(ursa_attr_t *attr, size_t size);
URSA_API int ursa_attr_getstacksize(const ursa_attr_t *attr, size_t *size);
/* Where the thread starts: a VP index (0 .. ursa_vp_count()-1), URSA_VP_ANY for the least
 * loaded VP (SplitThreads' arbitrated creation), or URSA_VP_SELF (the creator's VP).  Default:
 * URSA_VP_SELF, except under cp-ts and cp-ic: URSA_VP_ANY (a preempted thread resumes on its VP,
 * so busy threads are spread when they are created).
 * -EINVAL for other values; an index >= ursa_vp_count() makes ursa_create fail with -EINVAL.
 * An unbound thread may later move to another VP (the scheduler balances); see setbound. */
#define URSA_VP_ANY  (-1)
#define URSA_VP_SELF (-2)
URSA_API int ursa_attr_setvp(ursa_attr_t *attr, int vp);
/* bound = 1: the thread runs only on the VP it starts on (never migrates). */
URSA_API int ursa_attr_setbound(ursa_attr_t *attr, int bound);
/* Copies at most URSA_NAME_MAX - 1 bytes of name; the name shows in deadlock and overflow reports. */
URSA_API int ursa_attr_setname(ursa_attr_t *attr, const char *name);
URSA_API int ursa_attr_setdetached(ursa_attr_t *attr, int detached);

/* Creates a thread running fn(arg), ready to run after the threads already ready (FIFO).  Does not
 * switch.  t may be NULL only for a detached thread.  -EINVAL for a bad attribute, a VP index
 * >= ursa_vp_count() or a region destroyed since ursa_attr_setregion.  -EAGAIN when no stack can
 * be mapped (memory or address space for its size, or vm.max_map_count exhausted: ursa prints
 * which, once per cause), -ENOMEM when memory for bookkeeping runs out. */
URSA_API int ursa_create(ursa_thread_t *t, const ursa_attr_t *attr, void *(*fn)(void *), void *arg);

/* Waits for t to finish and releases it; *result (if non-NULL) gets its return value.  May switch.
 * -EDEADLK joining oneself or a thread that is joining the caller, -EINVAL for a detached thread
 * or a thread another thread already joins, -ESRCH for a stale or invalid handle. */
URSA_API int ursa_join(ursa_thread_t t, void **result);

/* Marks t detached: it is released when it finishes.  -EINVAL if already detached or being joined,
 * -ESRCH for a stale or invalid handle. */
URSA_API int ursa_detach(ursa_thread_t t);

/* Ends the calling thread with result.  Called by main, ends main's thread: the process then exits
 * with status 0 when the last thread finishes.  Called from a thread that is not an ursa thread
 * (or in a child of fork that has no runtime) it cannot return: it prints a usage error naming
 * the misuse and aborts. */
URSA_API void ursa_exit(void *result) __attribute__((noreturn));

/* The calling thread's handle (URSA_THREAD_NULL outside ursa). */
URSA_API ursa_thread_t ursa_self(void);

/* The thread's numeric id (1 for main, then 2, 3, ... in creation order), 0 for an invalid handle. */
URSA_API uint64_t ursa_thread_id(ursa_thread_t t);

/* Copies the thread's name into buf (size bytes).  -ESRCH for an invalid handle. */
URSA_API int ursa_thread_getname(ursa_thread_t t, char *buf, size_t size);

/* Moves the caller behind the other ready threads and runs the first of them (no-op when none).
 * Expired timers (sleeps, timed waits) are fired first. */
URSA_API int ursa_yield(void);

/* The papers' named yield: switches straight to t when t is ready; the caller stays ready and takes
 * t's place in the run queue (so the order of the other ready threads is unchanged).  When t is
 * the caller, returns 0 at once; when t is blocked or finished, and always with several VPs (t may
 * be queued on another VP), behaves as ursa_yield().  -ESRCH for a stale or invalid handle. */
URSA_API int ursa_yield_to(ursa_thread_t t);

/* Blocks the caller for at least ns nanoseconds of CLOCK_MONOTONIC.  ursa_sleep_ns(0) yields. */
URSA_API int ursa_sleep_ns(uint64_t ns);

/* ---------------------------------------------------------------------------------------------
 * Virtual processors and regions (PCM)
 * ------------------------------------------------------------------------------------------- */

/* The index of the VP the caller runs on now (it may change at any switch unless the caller is
 * pinned); -EPERM outside ursa. */
URSA_API int ursa_vp_self(void);

/* A pinned section: until the matching ursa_vp_unpin the caller runs only on its current VP, so
 * the kernel thread under it stays the same (for thread-local storage, kernel-thread identity).
 * Nestable.  -EPERM outside ursa; ursa_vp_unpin without a pin: -EINVAL. */
URSA_API int ursa_vp_pin(void);
URSA_API int ursa_vp_unpin(void);

/* The policy in use: "rotator", "lb2", "global" or "steal" ("rotator" with one VP). */
URSA_API const char *ursa_sched_policy(void);

/* A region (the papers' PCM): ursa guarantees that no two threads of one region ever run at the
 * same time.  A region is bound to one VP at a time; its threads run only there, so code inside a
 * region may use shared variables and URSA_WAITFOR without locks while regions run in parallel.
 * Storage belongs to the caller and names the region in calls; the region's state lives in ursa's
 * memory, so storage freed or overwritten without ursa_region_destroy only leaks that region
 * (until ursa_fini) and harms no other one.  A copy of the storage is not the region (-EINVAL). */
typedef struct ursa_region { uint64_t _private[6]; } ursa_region_t;
/* vp: a VP index or URSA_VP_ANY (the least loaded).  -EINVAL for a bad index, -EBUSY when r is a
 * live region already (destroy it first), -ENOMEM when memory for the region runs out, -EAGAIN
 * beyond 1,048,576 live regions. */
URSA_API int ursa_region_init(ursa_region_t *r, int vp);
/* -EBUSY while threads of the region have not finished. */
URSA_API int ursa_region_destroy(ursa_region_t *r);
/* Threads created with this attribute belong to r for their whole life.  ursa_create returns
 * -EINVAL when r has been destroyed since (even if its storage holds a new region: name it
 * again). */
URSA_API int ursa_attr_setregion(ursa_attr_t *attr, ursa_region_t *r);
/* Moves the whole region to VP vp (see also ursa_config_t.region_balance): it happens at the region's current VP's next switch, while none
 * of the region's threads runs (a member that calls this keeps running until it yields or blocks).
 * -EINVAL for a bad region or index. */
URSA_API int ursa_region_move(ursa_region_t *r, int vp);
/* The VP index the region is bound to now, or -EINVAL. */
URSA_API int ursa_region_vp(ursa_region_t *r);

/* ---------------------------------------------------------------------------------------------
 * Execution models and preemption
 * ------------------------------------------------------------------------------------------- */

/* The model in effect (URSA_MODEL_*), 0 before ursa_init. */
URSA_API int ursa_model(void);
/* "cm", "pcm", "cp-ts", "cp-ic", or "?" for another value. */
URSA_API const char *ursa_model_name(int model);

/* For a program written in the CM or PCM style (shared variables without locks): 0 under cm and
 * pcm; under cp-ts and cp-ic prints why to stderr and returns -ENOTSUP, so the program can stop
 * at start instead of racing (the journal paper's Table XXII).  -EPERM before ursa_init or from a
 * kernel thread that is not an ursa thread. */
URSA_API int ursa_require_cooperative(void);

/* A section in which the calling thread is not preempted (cp-ts, cp-ic); nestable.  A preemption
 * due inside the section happens at the ursa_preempt_enable that ends it.  Blocking and yielding
 * inside the section still switch.  -EPERM outside ursa; an enable without a disable: -EPERM. */
URSA_API int ursa_preempt_disable(void);
URSA_API int ursa_preempt_enable(void);

/* The iteration-counting check, for loop back-edges of long computations: under cp-ic every
 * switch_count-th call on a VP yields (the caller resumes on the same VP); under
 * cp-ts it is a safe point for a deferred preemption.  In cm and pcm, and in cp-ts while no
 * preemption waits, it costs one load and one branch.  Callable from anywhere (a no-op outside
 * ursa threads). */
URSA_API extern int ursa__tick_flag;          /* private: nonzero when ursa__tick has work */
URSA_API void ursa__tick(void);                /* private */
static inline void ursa_tick(void) {
  if (__builtin_expect(__atomic_load_n(&ursa__tick_flag, __ATOMIC_RELAXED) != 0, 0)) ursa__tick();
}

/* Dynamic C's waitfor: re-evaluates cond after each yield until it holds. */
#define URSA_WAITFOR(cond) \
  do { while (!(cond)) (void)ursa_yield(); } while (0)

/* Prints every thread (id, name, and running / ready / what it waits on / finished) to f: the
 * deadlock report's format, on demand, with each suspended thread's backtrace (when libunwind
 * can be loaded; docs/GUIDE.md, Debugging) and any wait-for cycle (a partial deadlock).  With
 * several VPs the other VPs keep running while it reads: the listing is a snapshot.
 * URSA_DUMP_SIGNAL=<signal> prints the same to stderr whenever that signal arrives. */
URSA_API int ursa_dump(FILE *f);

/* ---------------------------------------------------------------------------------------------
 * Counters (the journal paper's run-time counters)
 * ------------------------------------------------------------------------------------------- */

typedef struct ursa_stats {
  uint64_t switches;     /* context switches                                    */
  uint64_t yields;       /* ursa_yield / ursa_yield_to calls                    */
  uint64_t p_ops;        /* semaphore P operations (wait, trywait, timedwait)   */
  uint64_t p_blocking;   /* P operations that blocked                           */
  uint64_t blocks;       /* every blocking wait (P, lock, join, sleep, ...)     */
  uint64_t created;      /* threads created                                     */
  uint64_t timers;       /* timers that fired (sleeps and timeouts)             */
  uint64_t idle_waits;   /* times the VP waited in the kernel (timer, or no work) */
  uint64_t idle_ns;      /* nanoseconds the VP spent waiting in the kernel      */
  uint64_t migrations;   /* threads that came to this VP from another one       */
  uint64_t preemptions;  /* involuntary switches (cp-ts time slice, cp-ic count) */
  uint64_t preempt_deferred; /* cp-ts slices that ended outside a safe point     */
  uint64_t ticks;        /* ursa_tick() calls (cp-ic; counted per completed round) */
  uint64_t stacks_mapped; /* stacks mapped (a create that neither the VP's pool of free stacks
                             nor the depot shared by all VPs could serve: see URSA_STACK_CACHE) */
  uint64_t steals;       /* several VPs: ready threads this VP, idle, took from a VP that had
                            stalled (its kernel thread descheduled or blocked, or one thread
                            running long) with them waiting: docs/GUIDE.md                     */
  uint64_t unstacks;     /* several VPs: times this VP, woken by a busy VP onto that VP's CPU,
                            moved its kernel thread to another CPU (URSA_UNSTACK, docs/GUIDE.md) */
} ursa_stats_t;

URSA_API unsigned ursa_vp_count(void);
/* Totals over all VPs. */
URSA_API int ursa_stats(ursa_stats_t *out);
/* One VP's counters: -EINVAL for a VP that does not exist. */
URSA_API int ursa_stats_vp(unsigned vp, ursa_stats_t *out);
/* Prints the counters, per VP and in total (what URSA_STATS=1 prints at exit). */
URSA_API int ursa_stats_print(FILE *f);

/* ---------------------------------------------------------------------------------------------
 * I/O that blocks only the calling thread
 *
 * Each call below does what the system call of the same name does, but when that would block it
 * suspends only the calling ursa thread: the other threads of its VP go on running, and it
 * resumes when its descriptor is ready (the VP's I/O engine: docs/GUIDE.md, "I/O").  They return
 * the result (>= 0) or a negative errno value; short reads and writes are returned as the system
 * call returns them; EINTR is never returned (the call is retried).  The _timed variants also
 * return -ETIMEDOUT once the absolute deadline abstime on clock (CLOCK_MONOTONIC or
 * CLOCK_REALTIME) has passed (abstime NULL: none); a deadline in the past tries the call once.
 * ursa_close(fd) wakes every thread waiting on fd with -EBADF.
 *
 * A descriptor used with these calls is made non-blocking (O_NONBLOCK) at its first use, and
 * should be closed with ursa_close (a number closed with close(2) and reused is noticed at the
 * next wait, at the cost of a system call).  Regular files, which are always "ready", are read
 * from the page cache without blocking when it holds the data, and otherwise, with fsync and
 * openat, run on the offload pool.  Called from a kernel thread that is not an ursa thread, each
 * call is the plain blocking system call.  May switch.
 * ------------------------------------------------------------------------------------------- */
URSA_API ssize_t ursa_read(int fd, void *buf, size_t n);
URSA_API ssize_t ursa_read_timed(int fd, void *buf, size_t n, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_write(int fd, const void *buf, size_t n);
URSA_API ssize_t ursa_write_timed(int fd, const void *buf, size_t n, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_readv(int fd, const struct iovec *iov, int cnt);
URSA_API ssize_t ursa_readv_timed(int fd, const struct iovec *iov, int cnt, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_writev(int fd, const struct iovec *iov, int cnt);
URSA_API ssize_t ursa_writev_timed(int fd, const struct iovec *iov, int cnt, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_pread(int fd, void *buf, size_t n, off_t off);
URSA_API ssize_t ursa_pread_timed(int fd, void *buf, size_t n, off_t off, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_pwrite(int fd, const void *buf, size_t n, off_t off);
URSA_API ssize_t ursa_pwrite_timed(int fd, const void *buf, size_t n, off_t off, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_recv(int fd, void *buf, size_t n, int flags);
URSA_API ssize_t ursa_recv_timed(int fd, void *buf, size_t n, int flags, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_send(int fd, const void *buf, size_t n, int flags);
URSA_API ssize_t ursa_send_timed(int fd, const void *buf, size_t n, int flags, int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len);
URSA_API ssize_t ursa_recvfrom_timed(int fd, void *buf, size_t n, int flags, struct sockaddr *src, socklen_t *len,
                                     int clock, const struct timespec *abstime);
URSA_API ssize_t ursa_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst, socklen_t len);
URSA_API ssize_t ursa_sendto_timed(int fd, const void *buf, size_t n, int flags, const struct sockaddr *dst, socklen_t len,
                                   int clock, const struct timespec *abstime);
/* The new socket (returned) is non-blocking and close-on-exec. */
URSA_API int ursa_accept(int fd, struct sockaddr *addr, socklen_t *len);
URSA_API int ursa_accept_timed(int fd, struct sockaddr *addr, socklen_t *len, int clock, const struct timespec *abstime);
/* 0 once connected, or the connection's error (-ECONNREFUSED, ...).  After -ETIMEDOUT the
 * connection attempt goes on: close the socket. */
URSA_API int ursa_connect(int fd, const struct sockaddr *addr, socklen_t len);
URSA_API int ursa_connect_timed(int fd, const struct sockaddr *addr, socklen_t len, int clock, const struct timespec *abstime);
/* poll(2): the number of ready entries (revents set), 0 when timeout_ms (-1: none) ran out;
 * ursa_poll_timed returns -ETIMEDOUT instead of 0. */
URSA_API int ursa_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
URSA_API int ursa_poll_timed(struct pollfd *fds, nfds_t n, int clock, const struct timespec *abstime);
/* Waits until fd has one of events (POLLIN, POLLOUT, POLLPRI): its revents (> 0; POLLERR and
 * POLLHUP are always reported), -EBADF when fd is not open or is closed by ursa_close. */
URSA_API int ursa_fd_wait(int fd, short events);
URSA_API int ursa_fd_wait_timed(int fd, short events, int clock, const struct timespec *abstime);
URSA_API int ursa_close(int fd);
/* fsync and openat run on the offload pool; their deadline is checked before they are handed
 * over (a call that has started runs to its end). */
URSA_API int ursa_fsync(int fd);
URSA_API int ursa_fsync_timed(int fd, int clock, const struct timespec *abstime);
URSA_API int ursa_openat(int dirfd, const char *path, int flags, unsigned mode);
URSA_API int ursa_openat_timed(int dirfd, const char *path, int flags, unsigned mode, int clock,
                               const struct timespec *abstime);
/* Runs fn(arg) on a pool of kernel threads (URSA_OFFLOAD_THREADS, default 4) while the calling
 * thread is suspended and its VP runs other threads; fn's return value goes to *result (result
 * may be NULL).  For what has no non-blocking form: getaddrinfo, stat on a slow file system, a
 * library call that blocks.  When every pool thread is busy the request waits its turn (FIFO):
 * requests that wait for each other beyond the pool's size wait for ever.  fn runs on a kernel
 * thread that is not an ursa thread: ursa calls there are the blocking system calls above, or
 * -EPERM.  -EINVAL for a NULL fn, -EAGAIN when no pool thread can be started. */
URSA_API int ursa_offload(void *(*fn)(void *), void *arg, void **result);
/* The engine in use: "io_uring", "epoll", or "none" before ursa_init. */
URSA_API const char *ursa_io_engine(void);

/* ---------------------------------------------------------------------------------------------
 * Synchronization
 * ------------------------------------------------------------------------------------------- */

/* Counting semaphores. */
typedef struct ursa_sem { uint64_t _private[8]; } ursa_sem_t;
#define URSA_SEM_VALUE_MAX 2147483647u
URSA_API int ursa_sem_init(ursa_sem_t *s, unsigned value);          /* -EINVAL above the max  */
URSA_API int ursa_sem_destroy(ursa_sem_t *s);
URSA_API int ursa_sem_wait(ursa_sem_t *s);                          /* P; may switch           */
URSA_API int ursa_sem_trywait(ursa_sem_t *s);                       /* -EAGAIN when zero       */
URSA_API int ursa_sem_timedwait(ursa_sem_t *s, int clock, const struct timespec *abstime);
URSA_API int ursa_sem_post(ursa_sem_t *s);                          /* V; -EOVERFLOW at the max */
URSA_API int ursa_sem_getvalue(ursa_sem_t *s, int *value);

/* Mutexes.  Every type knows its owner: unlocking a mutex the caller does not hold is -EPERM. */
enum { URSA_MUTEX_NORMAL = 0, URSA_MUTEX_ERRORCHECK = 1, URSA_MUTEX_RECURSIVE = 2 };
typedef struct ursa_mutex { uint64_t _private[8]; } ursa_mutex_t;
#define URSA_MUTEX_INITIALIZER { { 0 } }     /* a NORMAL mutex */
URSA_API int ursa_mutex_init(ursa_mutex_t *m, int type);
URSA_API int ursa_mutex_destroy(ursa_mutex_t *m);                   /* -EBUSY while locked     */
/* NORMAL relocked by its owner deadlocks (as POSIX requires; the deadlock report names it);
 * ERRORCHECK returns -EDEADLK; RECURSIVE counts. */
URSA_API int ursa_mutex_lock(ursa_mutex_t *m);
URSA_API int ursa_mutex_trylock(ursa_mutex_t *m);                   /* -EBUSY when held        */
URSA_API int ursa_mutex_timedlock(ursa_mutex_t *m, int clock, const struct timespec *abstime);
URSA_API int ursa_mutex_unlock(ursa_mutex_t *m);

/* Condition variables. */
typedef struct ursa_cond { uint64_t _private[8]; } ursa_cond_t;
#define URSA_COND_INITIALIZER { { 0 } }
URSA_API int ursa_cond_init(ursa_cond_t *c);
URSA_API int ursa_cond_destroy(ursa_cond_t *c);
/* -EPERM when the caller does not hold m. */
URSA_API int ursa_cond_wait(ursa_cond_t *c, ursa_mutex_t *m);
URSA_API int ursa_cond_timedwait(ursa_cond_t *c, ursa_mutex_t *m, int clock,
                                 const struct timespec *abstime);
URSA_API int ursa_cond_signal(ursa_cond_t *c);
URSA_API int ursa_cond_broadcast(ursa_cond_t *c);

/* Barriers.  ursa_barrier_wait returns URSA_BARRIER_SERIAL_THREAD in exactly one thread per round
 * and 0 in the others. */
#define URSA_BARRIER_SERIAL_THREAD 1
typedef struct ursa_barrier { uint64_t _private[8]; } ursa_barrier_t;
URSA_API int ursa_barrier_init(ursa_barrier_t *b, unsigned count); /* -EINVAL for 0 */
URSA_API int ursa_barrier_destroy(ursa_barrier_t *b);
URSA_API int ursa_barrier_wait(ursa_barrier_t *b);

/* Reader-writer locks.  An unlock wakes either one writer or all waiting readers, each of which
 * then holds the lock (no woken thread has to block again).  New readers wait while a writer
 * waits; a writer's unlock prefers waiting readers, so neither side starves.  A thread may hold
 * read locks on at most URSA_RWLOCK_READ_MAX rwlocks at once (-EAGAIN beyond). */
#define URSA_RWLOCK_READ_MAX 8
typedef struct ursa_rwlock { uint64_t _private[12]; } ursa_rwlock_t;
#define URSA_RWLOCK_INITIALIZER { { 0 } }
URSA_API int ursa_rwlock_init(ursa_rwlock_t *l);
URSA_API int ursa_rwlock_destroy(ursa_rwlock_t *l);                 /* -EBUSY while held */
URSA_API int ursa_rwlock_rdlock(ursa_rwlock_t *l);                  /* -EDEADLK if write-held by caller */
URSA_API int ursa_rwlock_tryrdlock(ursa_rwlock_t *l);               /* -EBUSY */
URSA_API int ursa_rwlock_timedrdlock(ursa_rwlock_t *l, int clock, const struct timespec *abstime);
URSA_API int ursa_rwlock_wrlock(ursa_rwlock_t *l);                  /* -EDEADLK if held by caller */
URSA_API int ursa_rwlock_trywrlock(ursa_rwlock_t *l);               /* -EBUSY */
URSA_API int ursa_rwlock_timedwrlock(ursa_rwlock_t *l, int clock, const struct timespec *abstime);
URSA_API int ursa_rwlock_unlock(ursa_rwlock_t *l);                  /* -EPERM if not held by caller */

/* Once. */
typedef struct ursa_once { uint64_t _private[4]; } ursa_once_t;
#define URSA_ONCE_INIT { { 0 } }
/* Runs fn exactly once; concurrent callers wait until it has returned.  -EDEADLK when fn itself
 * calls ursa_once on the same object. */
URSA_API int ursa_once(ursa_once_t *once, void (*fn)(void));

/* Thread-specific data.  At most URSA_KEYS_MAX keys at once.  Destructors run at thread exit for
 * non-NULL values, up to URSA_KEY_DESTRUCTOR_ITERATIONS rounds. */
#define URSA_KEYS_MAX 128
#define URSA_KEY_DESTRUCTOR_ITERATIONS 4
typedef uint32_t ursa_key_t;
URSA_API int   ursa_key_create(ursa_key_t *key, void (*destructor)(void *));   /* -EAGAIN when full */
URSA_API int   ursa_key_delete(ursa_key_t key);                                /* -EINVAL if stale  */
URSA_API int   ursa_setspecific(ursa_key_t key, const void *value);            /* -EINVAL if stale; -ENOMEM:
                                            the thread's first value allocates its table   */
URSA_API void *ursa_getspecific(ursa_key_t key);                               /* NULL if unset     */

/* I-structures (SplitThreads): a write-once cell.  Reads before the write wait for it; a second
 * put returns -EBUSY and keeps the first value. */
typedef struct ursa_ivar { uint64_t _private[8]; } ursa_ivar_t;
URSA_API int ursa_ivar_init(ursa_ivar_t *v);
URSA_API int ursa_ivar_destroy(ursa_ivar_t *v);
URSA_API int ursa_ivar_put(ursa_ivar_t *v, void *value);
URSA_API int ursa_ivar_get(ursa_ivar_t *v, void **value);           /* may switch          */
URSA_API int ursa_ivar_tryget(ursa_ivar_t *v, void **value);        /* -EAGAIN while empty */

/* M-structures (SplitThreads): put fills an empty cell (waiting while it is full), take empties a
 * full one (waiting while it is empty); exactly one take completes per put, in FIFO order. */
typedef struct ursa_mvar { uint64_t _private[8]; } ursa_mvar_t;
URSA_API int ursa_mvar_init(ursa_mvar_t *v);
URSA_API int ursa_mvar_destroy(ursa_mvar_t *v);
URSA_API int ursa_mvar_put(ursa_mvar_t *v, void *value);            /* may switch          */
URSA_API int ursa_mvar_take(ursa_mvar_t *v, void **value);          /* may switch          */
URSA_API int ursa_mvar_tryput(ursa_mvar_t *v, void *value);         /* -EAGAIN when full   */
URSA_API int ursa_mvar_trytake(ursa_mvar_t *v, void **value);       /* -EAGAIN when empty  */

/* ---------------------------------------------------------------------------------------------
 * Schedule exploration (docs/GUIDE.md, "Finding concurrency bugs")
 * ------------------------------------------------------------------------------------------- */

typedef struct ursa_explore_opts {
  const char *strategy;     /* "random" or "pct[:depth[:steps]]"; NULL: "pct:3"             */
  uint64_t    seed;         /* schedule i runs with seed + i (default 0)                     */
  unsigned    schedules;    /* schedules to run at most; 0: 1000                            */
  unsigned    vps;          /* VPs the program sees (ursa_vp_count); 0: 1                    */
  int         verbose;      /* 1: a line per schedule on stderr                              */
  /* results */
  unsigned    ran;          /* schedules run                                                 */
  uint64_t    failed_seed;  /* the failing schedule's seed (when ursa_explore returns 1)     */
  uint64_t    steps;        /* scheduling points passed, over every schedule run              */
  char        replay[96];   /* the failing schedule's strategy, as URSA_EXPLORE takes it     */
} ursa_explore_opts_t;

/* Runs fn(arg) under opts->schedules schedules, each in a forked child process that calls
 * ursa_init with exploration on (and no other setting: the rest comes from the environment), runs
 * fn on its main thread and leaves with _exit (stdio flushed; no atexit handler runs).  A schedule fails when fn returns nonzero, a signal ends the
 * child (an assertion, a crash), ursa reports a deadlock, or it passes the step limit
 * (URSA_EXPLORE_MAX_STEPS, default 10,000,000).  Stops at the first failure: returns 1 with its
 * seed in opts->failed_seed and its strategy in opts->replay (the child has printed its schedule
 * and written its trace; URSA_EXPLORE=<replay> URSA_REPLAY=<seed> reruns it step for step), 0
 * when every schedule passed.  -EINVAL for a bad strategy or a NULL fn or opts; -EBUSY when
 * called with the runtime initialized (call it before ursa_init, from a plain kernel thread);
 * -errno when fork or pipe fails. */
URSA_API int ursa_explore(int (*fn)(void *arg), void *arg, ursa_explore_opts_t *opts);

#ifdef __cplusplus
}
#endif
#endif /* URSA_H */
