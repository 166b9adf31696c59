/*
 * ursa/dist.h - ursa threads across machines, on MPI (libursa-dist; SplitThreads [3]).
 *
 * One ursa process per MPI rank, launched by mpiexec.  Each rank calls ursa_init, then
 * ursa_dist_init, registers its functions by name, runs, and ends with ursa_dist_finalize, which
 * returns when main of every rank has called it and nothing is in flight anywhere; then ursa_fini.
 *
 * Threads: ursa_dist_create runs a registered function on this rank, on rank r, or on the
 * least-loaded rank (URSA_RANK_ANY: the arbiter on rank 0 picks it).  Arguments and results are
 * bytes, copied; functions are named by a registered name, never by address.  A joinable thread's
 * handle may be sent to any rank, and joined there once; its result is sent to its creator's rank
 * when it ends and kept there until joined (a join on the creator's rank sends no message, one
 * from another rank is a round trip to the creator's rank).
 *
 * Machine-wide objects, homed on a rank and named by a handle that may be sent anywhere: mutexes
 * (FIFO), I-structures (write once; readers wait; a second write is an error to the writer),
 * M-structures (take empties and waits while empty, put fills; a put to a full one is an error),
 * barriers.  A thread that waits on any of them is suspended like any waiting ursa thread.
 *
 * Contexts: every call below except ursa_dist_rank/size/register is made from an ursa thread, after
 * ursa_dist_init and before ursa_dist_finalize returns; every call that waits may switch.  No ursa
 * thread ever calls a blocking MPI function: a progress thread on VP 0 owns MPI
 * (MPI_THREAD_FUNNELED) and polls it (docs/GUIDE.md, "Across machines (MPI)").
 * Errors are negative errno values (ursa_strerror); -ENOTCONN before init or after finalize.
 */
#ifndef URSA_DIST_H
#define URSA_DIST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define URSA_DIST_API __attribute__((visibility("default")))

#define URSA_RANK_ANY      (-1)      /* ursa_dist_create: the least-loaded rank (arbiter, rank 0) */
#define URSA_DIST_ARG_MAX  65536u    /* bytes of arguments of one create                          */
#define URSA_DIST_RES_MAX  4096u     /* bytes of a thread's result; of an I-/M-structure's value  */

/* A thread's function: arg/len are a copy of the creator's bytes (valid until it returns); it
 * writes up to cap (URSA_DIST_RES_MAX) bytes of result to res and returns their number, or a
 * negative value, which the joiner gets as ursa_dist_join's return value. */
typedef ssize_t (*ursa_dist_fn)(const void *arg, size_t len, void *res, size_t cap);

typedef struct { uint64_t id; } ursa_dist_thread_t;    /* the owner rank is in the id */
typedef struct { uint64_t id; } ursa_dist_mutex_t;
typedef struct { uint64_t id; } ursa_dist_ivar_t;
typedef struct { uint64_t id; } ursa_dist_mvar_t;
typedef struct { uint64_t id; } ursa_dist_barrier_t;

/* Starts the layer: MPI_Init_thread (unless the program initialized MPI itself, FUNNELED or more,
 * on the kernel thread that called ursa_init), the progress thread.  Call from main after
 * ursa_init.  -EALREADY when running; -EINVAL for a bad URSA_DIST_* variable (a message says
 * which) or an MPI level below FUNNELED; -EPERM when MPI's main thread is not VP 0's. */
URSA_DIST_API int ursa_dist_init(int *argc, char ***argv);
/* Waits until main of every rank has called it and no message, thread or wait is left anywhere
 * (termination detection by rank 0), then stops the progress thread and finalizes MPI if it
 * initialized it.  Returns 0. */
URSA_DIST_API int ursa_dist_finalize(void);
URSA_DIST_API int ursa_dist_rank(void);      /* -ENOTCONN outside init..finalize */
URSA_DIST_API int ursa_dist_size(void);

/* Names fn (up to 63 bytes) on this rank; every rank that may run it registers the same name.
 * -EEXIST for a name taken by another function, -EINVAL for a bad name or NULL fn. */
URSA_DIST_API int ursa_dist_register(const char *name, ursa_dist_fn fn);

/* Flags of ursa_dist_create. */
#define URSA_DIST_DETACHED 1u      /* nobody joins it; no handle is returned (t may be NULL) */

/* Creates a thread running the function registered as name on rank (this one, another, or
 * URSA_RANK_ANY), with a copy of len bytes at arg.  Returns when the thread exists on its rank.
 * -EINVAL: rank out of range, len above URSA_DIST_ARG_MAX, bad flags; -ENOENT: name not
 * registered here or on the target rank; -ENOMEM. */
URSA_DIST_API int ursa_dist_create(ursa_dist_thread_t *t, int rank, const char *name, const void *arg,
                                   size_t len, unsigned flags);
/* Waits for t to end (its result, at its creator's rank); copies its result (up to cap bytes) to res and its length to *len (either
 * may be NULL).  Returns 0, the thread's negative return, -EMSGSIZE (result longer than cap: the
 * first cap bytes copied, *len the full length), -EINVAL (already joined, being joined, or
 * detached; or a handle that is not a thread's), -ESRCH (no such thread). */
URSA_DIST_API int ursa_dist_join(ursa_dist_thread_t t, void *res, size_t cap, size_t *len);
URSA_DIST_API int ursa_dist_thread_rank(ursa_dist_thread_t t);   /* the rank it runs on */

/* Machine-wide objects on rank home (-EINVAL: home out of range).  destroy: -EBUSY while held or
 * waited on; later uses of the handle return -EINVAL. */
URSA_DIST_API int ursa_dist_mutex_create(int home, ursa_dist_mutex_t *m);
URSA_DIST_API int ursa_dist_mutex_destroy(ursa_dist_mutex_t m);
URSA_DIST_API int ursa_dist_mutex_lock(ursa_dist_mutex_t m);      /* FIFO among waiters */
/* -EPERM when the calling thread does not hold m (checked on the caller's rank). */
URSA_DIST_API int ursa_dist_mutex_unlock(ursa_dist_mutex_t m);

URSA_DIST_API int ursa_dist_ivar_create(int home, ursa_dist_ivar_t *v);
URSA_DIST_API int ursa_dist_ivar_destroy(ursa_dist_ivar_t v);
/* -EBUSY: already written (the first value stays); -EINVAL: len above URSA_DIST_RES_MAX. */
URSA_DIST_API int ursa_dist_ivar_write(ursa_dist_ivar_t v, const void *val, size_t len);
/* Waits until written; copies up to cap bytes; *len the value's length; -EMSGSIZE if longer. */
URSA_DIST_API int ursa_dist_ivar_read(ursa_dist_ivar_t v, void *val, size_t cap, size_t *len);

URSA_DIST_API int ursa_dist_mvar_create(int home, ursa_dist_mvar_t *v);
URSA_DIST_API int ursa_dist_mvar_destroy(ursa_dist_mvar_t v);
/* -EBUSY: full (a put to a full M-structure is an error, as in SplitThreads). */
URSA_DIST_API int ursa_dist_mvar_put(ursa_dist_mvar_t v, const void *val, size_t len);
/* Waits while empty (FIFO among takers); one take per put. */
URSA_DIST_API int ursa_dist_mvar_take(ursa_dist_mvar_t v, void *val, size_t cap, size_t *len);

/* Arrays of n I- or M-structures distributed by block: cell i lives on rank i / ceil(n / size)
 * (_home tells which); any thread on any rank reads/writes (I) or takes/puts (M) any cell, with
 * the semantics of the single structures above.  create makes a block on every rank (a round trip
 * each); destroy: -EBUSY while a cell is waited on (nothing destroyed), then later uses of the
 * handle return -EINVAL.  Errors: -ERANGE for i >= n; -EINVAL for n == 0 or above
 * URSA_DIST_ARRAY_MAX, a destroyed array, a handle of the other kind. */
#define URSA_DIST_ARRAY_MAX (1ull << 32)
typedef struct { uint64_t id, n; } ursa_dist_marray_t;
typedef struct { uint64_t id, n; } ursa_dist_iarray_t;
URSA_DIST_API int ursa_dist_marray_create(uint64_t n, ursa_dist_marray_t *a);
URSA_DIST_API int ursa_dist_marray_destroy(ursa_dist_marray_t a);
URSA_DIST_API int ursa_dist_marray_home(ursa_dist_marray_t a, uint64_t i);   /* the rank of cell i */
URSA_DIST_API int ursa_dist_marray_put(ursa_dist_marray_t a, uint64_t i, const void *val, size_t len);
URSA_DIST_API int ursa_dist_marray_take(ursa_dist_marray_t a, uint64_t i, void *val, size_t cap, size_t *len);
URSA_DIST_API int ursa_dist_iarray_create(uint64_t n, ursa_dist_iarray_t *a);
URSA_DIST_API int ursa_dist_iarray_destroy(ursa_dist_iarray_t a);
URSA_DIST_API int ursa_dist_iarray_home(ursa_dist_iarray_t a, uint64_t i);
URSA_DIST_API int ursa_dist_iarray_write(ursa_dist_iarray_t a, uint64_t i, const void *val, size_t len);
URSA_DIST_API int ursa_dist_iarray_read(ursa_dist_iarray_t a, uint64_t i, void *val, size_t cap, size_t *len);

/* A barrier of count waiters (any threads, on any ranks), reusable. */
URSA_DIST_API int ursa_dist_barrier_create(int home, unsigned count, ursa_dist_barrier_t *b);
URSA_DIST_API int ursa_dist_barrier_destroy(ursa_dist_barrier_t b);
URSA_DIST_API int ursa_dist_barrier_wait(ursa_dist_barrier_t b);
/* The barrier of the ranks' main threads (one waiter per rank), homed on rank 0. */
URSA_DIST_API int ursa_dist_barrier_all(void);

/* ---- The loop transport: N simulated ranks in one process, for tests ----------------------------
 * ursa_dist_loop_run runs fn(arg) as the main of each of nranks ranks (1..URSA_DIST_LOOP_MAX), all
 * in this process, as ursa threads, and returns when all have returned: 0, or the first non-zero
 * value one returned.  Each fn calls ursa_dist_init(NULL, NULL), which joins its simulated rank
 * (ursa_dist_rank tells which), then the layer as under MPI, and ursa_dist_finalize.  The network
 * keeps MPI's order (FIFO per pair of ranks) and nothing more: which pair's message moves next
 * is drawn from seed, so seeds explore the interleavings and one seed replays one (with
 * URSA_VPS=1).  No MPI call is made.  A deadlock (no message moves for URSA_DIST_TIMEOUT_MS)
 * prints the seed and the pending requests and ends the process with status 72.  Call from an
 * ursa thread, one run at a time, never while the MPI layer runs here: -EPERM, -EBUSY, -EINVAL
 * (nranks out of range, NULL fn). */
#define URSA_DIST_LOOP_MAX 16
URSA_DIST_API int ursa_dist_loop_run(int nranks, uint64_t seed, int (*fn)(void *arg), void *arg);
/* Messages the last (or current) run delivered, and a hash of their order (replay checks). */
URSA_DIST_API int ursa_dist_loop_stats(uint64_t *delivered, uint64_t *order_hash);
/* A thread made by ursa_create (not by the layer) in a loop run belongs to no rank: it names its
 * rank here before it calls the layer.  Under MPI: 0 when rank is this process's, else -EINVAL.
 * -ENOTCONN outside a run and before ursa_dist_init; -EPERM outside an ursa thread. */
URSA_DIST_API int ursa_dist_attach(int rank);

/* Counters of this rank (for benchmarks and tests). */
typedef struct ursa_dist_stats {
  uint64_t sent, received;       /* messages (not counting termination detection's)          */
  uint64_t polls, idle_sleeps;   /* progress loop rounds; its short sleeps while idle         */
  uint64_t spawned;              /* threads this rank ran for ursa_dist_create                */
  uint64_t unjoined;             /* joinable threads created from here and not yet joined (their
                                    join records: this rank is their join home)              */
} ursa_dist_stats_t;
URSA_DIST_API int ursa_dist_stats(ursa_dist_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* URSA_DIST_H */
