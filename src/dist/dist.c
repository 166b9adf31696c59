/*
 * dist.c - ursa threads across machines on MPI (libursa-dist, include/ursa/dist.h).
 *
 * An optional layer: it uses ursa's public API and the waiter interface (src/sched/waiter.h:
 * ursa__park / ursa__park_claim_thread / ursa__unpark_thread, ursa__obj_lock, the kinds of wait,
 * ursa__vp_others_ready) and nothing else of ursa's inside (scripts/check-layers.sh checks it).
 *
 * Protocol.  Every operation is an active message (struct hdr + bytes) on one tag of a duplicate of
 * MPI_COMM_WORLD, so MPI's non-overtaking rule gives FIFO order per (source, destination) pair: an
 * UNLOCK never overtakes the LOCK before it.  A message is handled by `handle` on its destination,
 * in O(1) plus the waiters it wakes, under D.lock, and never blocks: it grants, replies, queues the
 * requester, or hands a spawn to `ctx_run`, which creates the ursa thread after the lock is
 * dropped.  A message to this rank is handled at once by the sender, with no MPI.  A request that
 * waits for an answer has a slot (struct dreq, on the requester's stack, found by its id); the
 * answer (REPLY) completes it and unparks the requester.  Owner-side state: objects (mutex,
 * I-structure, M-structure, barrier) with FIFO queues of (rank, request).
 *
 * Create and join: the result is pushed to the creator.  A joinable thread's creator is its join
 * home: before its SPAWN leaves, ursa_dist_create makes a record (struct dthr, by a 32-bit key of
 * this rank) and sends (its rank, key) in the SPAWN; the owner (the target, or the rank the
 * arbiter picked) answers the SPAWN once the thread exists, with the id owner:16 | home:16 |
 * key:32.  When the thread ends, the owner sends its result in one counted RESULT to the home
 * (which may get it before the SPAWN's answer: the record is already there).  A JOIN goes to the
 * home: from the home itself it is handled at once by the joiner (no message), from another rank
 * it is a round trip to the home; the home answers at once if the RESULT is in, else when it
 * comes.  A failed spawn (-ENOENT or -ENOMEM on the target) never runs, sends no RESULT, and its
 * creator drops the record.  So remote create + join costs one round trip plus the one-way
 * RESULT, which overlaps the answer of the SPAWN.  Detached threads have no record and no RESULT.
 * Causality: an UNLOCK has no answer, so before a RESULT leaves, its rank makes a SYNC round trip
 * to each third rank (not its own, not the home) it sent UNLOCKs to that no SYNC answered yet
 * (FIFO per pair: they are then handled), so a joiner that destroys a mutex after the join never
 * finds it held.  Nothing is done while no UNLOCK is unanswered.
 * Unjoined records (results nobody joined yet) do not keep a rank busy for termination.
 *
 * Progress.  One ursa thread per rank, bound to VP 0 (the kernel thread of ursa_init), is the only
 * caller of MPI (MPI_THREAD_FUNNELED): it initializes MPI, sends what the other threads queued
 * (MPI_Isend, completions by MPI_Testsome), receives (MPI_Improbe + MPI_Mrecv) and handles up to
 * POLL_BUDGET messages a round, and yields after each round.  When there is nothing to do and no
 * other thread of VP 0 is ready, it backs off as distributed.md measured: it spins for
 * URSA_DIST_SPIN_US, then calls sched_yield until URSA_DIST_YIELD_US, then waits on its kick
 * semaphore for URSA_DIST_SLEEP_US at a time (an ursa timed wait: VP 0 runs other threads or
 * sleeps in the kernel), and for URSA_DIST_DEEP_SLEEP_US at a time once idle for
 * URSA_DIST_DEEP_AFTER_MS (an idle rank used about 10% of a core with the 50 us sleeps alone,
 * about 2.5% with the deeper ones); a thread of this rank that queues a message posts the semaphore when it sleeps, so only
 * a message from another rank waits for the end of a sleep.  So no
 * ursa thread ever calls a blocking MPI function (MPI_Init and MPI_Finalize excepted, at start and
 * end).
 *
 * Watchdog: see watchdog() (a silent rank that a request waits on ends the job).
 *
 * Transports.  Everything above moves bytes only through struct transport (start, send, pending,
 * recv, finish, stop), called by the progress thread of the rank: mpi_transport (one rank per
 * process, the MPI calls named above) or loop_transport (ursa_dist_loop_run: N simulated ranks in
 * one process, each with its own struct dstate, found through an ursa thread-specific key; the
 * network N x N FIFO queues, the next message picked by a seeded generator; no sleeps, no
 * watchdog: a run in which nothing moves for URSA_DIST_TIMEOUT_MS is reported with its seed).
 * Arrays distributed by block (struct darr): each rank keeps its block of every array; element
 * operations are the single structures' messages with F_ELEM, sent to the cell's home.
 *
 * Termination.  A rank is idle when its main has called ursa_dist_finalize, none of the threads it
 * runs for ursa_dist_create is alive, no request is pending and nothing is queued to send.  Rank 0
 * runs waves (PROBE -> STATUS: idle, messages sent, messages handled); two consecutive waves in
 * which every rank is idle and the totals of sent and handled are equal and unchanged end the job
 * (SHUTDOWN), the four-counter method.  Failure is fail-stop: an MPI error, or a rank that a
 * request waits on and that answers nothing, not even a ping, for URSA_DIST_TIMEOUT_MS, prints the
 * rank's pending operations and exits non-zero (fail_stop); a dead rank brings the job down
 * through mpiexec.
 *
 * Locking: D.lock (ursa's spin lock) guards all of D below it; it is never held across an MPI call,
 * a thread creation, a park (ursa__park releases it) or an unpark.  Who calls what: the public
 * calls from any ursa thread on any VP; handle and the progress loop from the progress thread or,
 * for local messages, the calling thread.
 */
#define _GNU_SOURCE
#include "ursa.h"
#include "ursa/dist.h"
#include "../sched/waiter.h"

#include <errno.h>
#include <stdarg.h>
#include <mpi.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG          7411
#define POLL_BUDGET  32
#define POST_SLEEP_SPIN_NS 5000   /* after a sleep, poll this long before the next: one probe may
                                     not yet see a message that arrived during the sleep */
#define NBUCKETS     1024
#define OWNER(id)    ((int)((id) >> 48))
/* A joinable thread's id: owner rank (16 bits) | join home, the creator's rank (16) | key (32) */
#define HOME(id)     ((int)(((id) >> 32) & 0xffff))
#define KEY(id)      ((uint32_t)(id))

enum kind {
  K_SPAWN = 1, K_SPAWN_ANY, K_LOAD, K_JOIN, K_CREATE, K_DESTROY, K_LOCK, K_UNLOCK, K_IS_READ,
  K_IS_WRITE, K_MS_TAKE, K_MS_PUT, K_BAR_WAIT, K_REPLY, K_ACREATE, K_ADESTROY, K_RESULT, K_SYNC,
  K_PROBE, K_STATUS, K_SHUTDOWN,                /* termination detection: not counted */
  K_PING, K_PONG                                /* the watchdog's liveness check: not counted */
};
static const char *const kind_name[] = {
  "?", "create", "create (any rank)", "load", "join", "object create", "object destroy", "mutex lock",
  "mutex unlock", "I-structure read", "I-structure write", "M-structure take", "M-structure put",
  "barrier wait", "reply", "array create", "array destroy", "result", "sync", "probe", "status", "shutdown", "ping", "pong"};

enum otype { O_FREE = 0, O_MUTEX, O_IVAR, O_MVAR, O_BARRIER };

struct hdr {                /* 40 bytes, then len bytes */
  uint8_t  kind, flags;     /* flags: the object type expected (object kinds), URSA_DIST_DETACHED */
  uint16_t load;            /* the sender's live spawned threads (the arbiter's estimate)        */
  int32_t  src;             /* the requester's rank (kept when the arbiter forwards)             */
  uint64_t req;             /* the requester's slot id (0: no answer wanted)                     */
  uint64_t obj;             /* object or thread id                                               */
  uint64_t a;               /* per kind: name hash, token, count, type, wave, result word       */
  int32_t  status;
  uint32_t len;
};

struct dmsg { struct dmsg *next; int dst, from; struct hdr h; unsigned char data[]; };

struct dreq {                /* a pending request, on the requester's stack */
  uint64_t id, t0;
  int      kind, dst, done, status;
  int      watch;                /* the rank the answer waits on (the watchdog's): dst, or a joined thread's owner */
  struct ursa__thread *th;   /* set when parked */
  void    *buf;
  size_t   cap, len;
  uint64_t a;
};

struct dwait { struct dwait *next; int src; uint64_t req, tok; };

struct dobj {
  uint16_t gen;
  uint8_t  type;
  bool     full, held;
  int      holder_src;
  uint64_t holder_tok;
  void    *val;
  uint32_t len;
  unsigned count, arrived;
  struct dwait *head, *tail;
};

struct dthr {                /* a joinable thread created from here: this rank is its join home */
  struct dthr *next;
  uint32_t key;
  bool     exited, joining;  /* exited: its K_RESULT is here; joining: a K_JOIN waits for it */
  int      joiner_src;
  uint64_t joiner_req;
  int      status;
  void    *res;
  size_t   len;
};

struct dstate;
struct job {                 /* a spawn, between handle and ctx_run */
  struct job *next;
  struct dstate *st;         /* the rank it runs on (the loop transport: its thread-specific value) */
  ursa_dist_fn fn;
  uint64_t home;             /* joinable: the join home's rank << 32 | key (the id's low 48 bits); 0 detached */
  int      src;
  uint64_t req;
  size_t   len;
  unsigned char arg[];
};

struct ctx {                 /* what a handler leaves for after the lock */
  struct job *jobs;
  struct ursa__thread *wake[16];
  int nwake;
  struct ursa__thread **more;
  int nmore, capmore;
};

/* A block of an I- or M-structure array homed here: cells lo .. lo+cnt-1 of n (block size
 * ceil(n / size), cell i on rank i / block).  Named by its id (creator rank << 48 | sequence) on
 * every rank.  closing: destroy's first phase found it idle; cells then answer -EINVAL. */
struct darr {
  struct darr *next;
  uint64_t id, n, lo, cnt;
  uint8_t type;
  bool closing;
  struct dobj *cells;
};
#define F_ELEM 0x80          /* hdr.flags of an element operation: obj is an array id, a the index */

struct fnent { char name[64]; uint64_t hash; ursa_dist_fn fn; };
struct held { struct held *next; uint64_t obj, tok; };

/* The transport boundary: the few calls that move bytes between ranks, made by the progress thread
 * of the rank only.  mpi_transport (MPI, one rank per process) and loop_transport (N simulated
 * ranks in one process, ursa_dist_loop_run). */
struct transport {
  const char *name;
  int  (*start)(void);          /* sets D.rank, D.size; 0 or a negative errno                       */
  void (*send)(struct dmsg *m); /* takes m (to m->dst), never blocks; FIFO per (source, destination) */
  int  (*pending)(void);        /* sends not complete yet (their buffers still in use)              */
  /* the next message to this rank or NULL; valid until the next call; *from: the sending rank */
  const struct hdr *(*recv)(int *from, const unsigned char **data);
  bool (*finish)(void);         /* the last barrier, non-blocking: true once every rank reached it  */
  void (*stop)(void);           /* after finish: releases the transport                             */
};

struct dstate {
  ursa__spin_t lock;
  int state;                                  /* 0 off, 1 running, 2 finalized */
  int rank, size;
  bool smp, own_mpi;
  const struct transport *T;
  /* the loop transport: this rank's delivered messages (guarded by L.lock), the last one handed
   * to recv (freed at the next), whether it reached finish */
  bool loop, loop_finished;
  struct dmsg *in_head, *in_tail, *last_in;
  int *argc; char ***argv;
  MPI_Comm comm;
  ursa_thread_t prog;
  ursa_sem_t kick, ready;
  int sleeping;                               /* atomic: the progress thread is in its timed wait */
  int init_rc;
  uint64_t spin_ns, yield_ns, sleep_ns, deep_after_ns, deep_sleep_ns, timeout_ns;
  /* registry */
  struct fnent *fns; int nfns, capfns;
  /* outgoing */
  struct dmsg *out_head, *out_tail;
  int nout;                                   /* atomic reads by the progress thread */
  /* requests */
  struct dreq **slots; uint32_t *sgen; uint32_t *sfree; int nslots, nfree; int nreq;
  /* joinable threads created from here (this rank is their join home), by key */
  struct dthr *bucket[NBUCKETS];
  uint32_t next_key;                          /* the next key to try (never 0) */
  int nthr;                                   /* records in bucket */
  bool keys_wrapped;                          /* next_key went past 2^32 - 1 once */
  int live;                                   /* threads run here for ursa_dist_create, alive */
  /* objects homed here */
  struct dobj *objs; int nobjs, capobjs; int *ofree; int nofree;
  struct held *held;
  /* UNLOCKs sent to each rank, and how many of them a SYNC's answer covers; unl_out: their
   * difference summed (atomic: read unlocked by tramp) */
  uint64_t *unl_sent, *unl_acked;
  uint64_t unl_out;
  struct darr *arrs;                          /* blocks of arrays homed here */
  uint64_t next_arr;
  /* arbiter (rank 0) */
  int *load_est; int rr;
  /* spawned threads that have finished, for reap() to join */
  ursa_thread_t *done; int ndone, capdone;
  /* the watchdog: when each rank was last heard from; when it was first pinged in a silence */
  uint64_t *heard, *pinged;
  /* termination */
  bool main_done, shutdown;
  uint64_t sent, recvd;
  uint64_t wave; bool wave_active, prev_ok; int wave_replies; bool wave_idle;
  uint64_t wave_s, wave_r, prev_s, prev_r, next_wave_at;
  ursa_dist_stats_t st;
};

/* The state of this process's rank (MPI), or, in a loop run, of the rank of the calling ursa thread
 * (its value of loop_key: set for a rank's main, its progress thread, the threads the layer creates
 * for it and those ursa_dist_attach names).  loop_used: set once (before the first loop run's
 * threads exist, so every reader sees it: ursa_create orders it), never cleared. */
static struct dstate D_one;
static bool loop_used;
static ursa_key_t loop_key;

static inline struct dstate *dstate(void) {
  if (__builtin_expect(!__atomic_load_n(&loop_used, __ATOMIC_RELAXED), 1)) return &D_one;
  struct dstate *s = ursa_getspecific(loop_key);
  return s ? s : &D_one;
}
#define D (*dstate())

/* ---- small helpers -------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t name_hash(const char *s) {          /* FNV-1a, never 0 */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ull; }
  return h ? h : 1;
}

static void lock(void) { ursa__obj_lock(&D.lock); }
static void unlock(void) { ursa__obj_unlock(&D.lock); }

/* Ends this process at once with a non-zero status; mpiexec then ends every other rank (MPICH's
 * hydra within 0.1 s, distributed.md section 6).  Not MPI_Abort: MPICH 4.0's MPI_Abort makes progress
 * on UCX first, and with a peer that never answers (a stuck rank) it never returned. */
static _Noreturn void fail_stop(int code) {
  fflush(stdout);
  fflush(stderr);
  _exit(code);
}

static void loop_seed_note(void);
static _Noreturn __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ursa dist: rank %d: ", D.rank);
  if (D.loop) loop_seed_note();
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fail_stop(70);
}
#define MPICHK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) die("%s failed (MPI error %d)", #call, rc_); } while (0)

/* ---- the wake list ---------------------------------------------------------------------------- */

static void ctx_wake(struct ctx *c, struct ursa__thread *t) {
  if (c->nwake < 16) { c->wake[c->nwake++] = t; return; }
  if (c->nmore == c->capmore) {
    int n = c->capmore ? 2 * c->capmore : 64;
    struct ursa__thread **m = realloc(c->more, (size_t)n * sizeof *m);
    if (m == NULL) die("out of memory (wake list)");
    c->more = m; c->capmore = n;
  }
  c->more[c->nmore++] = t;
}

/* ---- request slots (lock held) ---------------------------------------------------------------- */

static int slot_alloc(struct dreq *r) {
  uint32_t i;
  if (D.nfree == 0) {
    int n = D.nslots ? 2 * D.nslots : 64;
    struct dreq **s = realloc(D.slots, (size_t)n * sizeof *s);
    if (s == NULL) return -ENOMEM;
    D.slots = s;
    uint32_t *g = realloc(D.sgen, (size_t)n * sizeof *g);
    if (g == NULL) return -ENOMEM;
    D.sgen = g;
    uint32_t *f = realloc(D.sfree, (size_t)n * sizeof *f);
    if (f == NULL) return -ENOMEM;
    D.sfree = f;
    for (int k = n - 1; k >= D.nslots; k--) { D.slots[k] = NULL; D.sgen[k] = 1; D.sfree[D.nfree++] = (uint32_t)k; }
    D.nslots = n;
  }
  i = D.sfree[--D.nfree];
  D.slots[i] = r;
  r->id = ((uint64_t)D.sgen[i] << 32) | i;
  D.nreq++;
  return 0;
}

static struct dreq *slot_take(uint64_t id) {        /* the request, removed from the table */
  uint32_t i = (uint32_t)id;
  if (i >= (uint32_t)D.nslots || D.sgen[i] != (uint32_t)(id >> 32) || D.slots[i] == NULL) return NULL;
  struct dreq *r = D.slots[i];
  D.slots[i] = NULL;
  D.sgen[i]++;
  if (D.sgen[i] == 0) D.sgen[i] = 1;
  D.sfree[D.nfree++] = i;
  D.nreq--;
  return r;
}

static void complete(struct ctx *c, uint64_t req, int status, const void *data, size_t len, uint64_t a) {
  struct dreq *r = slot_take(req);
  if (r == NULL) return;                            /* (cannot happen: each request is answered once) */
  r->status = status;
  r->len = len;
  r->a = a;
  if (r->buf && len) memcpy(r->buf, data, len < r->cap ? len : r->cap);
  r->done = 1;
  if (r->th != NULL && ursa__park_claim_thread(r->th, false)) ctx_wake(c, r->th);
}

/* ---- sending (lock held) ---------------------------------------------------------------------- */

static void handle(struct ctx *c, const struct hdr *h, const void *data);

static void send_raw(int dst, const struct hdr *h, const void *data) {
  struct dmsg *m = malloc(sizeof *m + h->len);
  if (m == NULL) die("out of memory (send)");
  m->next = NULL;
  m->dst = dst;
  m->from = D.rank;
  m->h = *h;
  if (h->len) memcpy(m->data, data, h->len);
  if (D.out_tail) D.out_tail->next = m; else D.out_head = m;
  D.out_tail = m;
  __atomic_store_n(&D.nout, D.nout + 1, __ATOMIC_RELAXED);   /* read by the progress thread's idle test */
}

/* A counted message to dst: handled here at once when dst is this rank. */
static void post(struct ctx *c, int dst, struct hdr *h, const void *data) {
  D.sent++;
  h->load = (uint16_t)(D.live > 65535 ? 65535 : D.live);
  if (dst == D.rank) { handle(c, h, data); return; }
  send_raw(dst, h, data);
}

static void reply(struct ctx *c, int dst, uint64_t req, int status, const void *data, size_t len, uint64_t a) {
  if (req == 0) return;
  if (dst == D.rank) { D.sent++; D.recvd++; complete(c, req, status, data, len, a); return; }
  struct hdr h = {.kind = K_REPLY, .src = D.rank, .req = req, .a = a, .status = status, .len = (uint32_t)len};
  post(c, dst, &h, data);
}

/* After the lock: create the spawned threads, then wake the parked requesters. */
static int rpc(int dst, int kind, unsigned flags, uint64_t obj, uint64_t a, const void *data, size_t len,
               void *out, size_t cap, size_t *outlen, uint64_t *outa);
static void *tramp(void *p);
static void kick(void);
static void ctx_run(struct ctx *c) {
  while (c->jobs) {
    struct job *j = c->jobs;
    c->jobs = j->next;
    ursa_attr_t a;
    ursa_thread_t t;
    uint64_t id = j->home ? ((uint64_t)D.rank << 48) | j->home : 0;
    int src = j->src;
    uint64_t req = j->req;
    ursa_attr_init(&a);                             /* joinable: reaped by reap() */
    int rc = ursa_create(&t, &a, tramp, j);
    ursa_attr_destroy(&a);
    lock();
    if (rc != 0) {                                  /* no thread, no K_RESULT: the creator */
      D.live--;                                     /* removes its record on this answer    */
      free(j);
    }
    reply(c, src, req, rc, NULL, 0, rc == 0 ? id : 0);
    unlock();
  }
  for (int i = 0; i < c->nwake; i++) ursa__unpark_thread(c->wake[i], 0);
  for (int i = 0; i < c->nmore; i++) ursa__unpark_thread(c->more[i], 0);
  c->nwake = c->nmore = 0;
  free(c->more);
  c->more = NULL;
  c->capmore = 0;
}

/* ---- join records (this rank is the join home; lock held) ----------------------------------------- */

static struct dthr *thr_find(uint32_t key, struct dthr ***where) {
  struct dthr **pp = &D.bucket[key % NBUCKETS];
  while (*pp && (*pp)->key != key) pp = &(*pp)->next;
  if (where) *where = pp;
  return *pp;
}

/* A record for a joinable thread about to be created from here: its key, the next one not in
 * use.  Keys run 1 .. 2^32 - 1 and then wrap to 1; a key whose record is still here (a thread not
 * yet joined) is skipped, never reused.  (After a wrap, a handle joined 2^32 creations ago may
 * name a new thread of the same key: the contract's -EINVAL for "already joined" holds until
 * then.) */
static int thr_new(uint32_t *key) {
  struct dthr *d = calloc(1, sizeof *d);
  if (d == NULL) return -ENOMEM;
  for (;;) {
    uint32_t k = D.next_key++;
    if (D.next_key == 0) { D.next_key = 1; D.keys_wrapped = true; }
    if (thr_find(k, NULL) == NULL) { d->key = k; break; }
  }
  d->next = D.bucket[d->key % NBUCKETS];
  D.bucket[d->key % NBUCKETS] = d;
  D.nthr++;
  *key = d->key;
  return 0;
}

static void thr_drop(uint32_t key) {
  struct dthr **pp, *d = thr_find(key, &pp);
  if (d) { *pp = d->next; free(d->res); free(d); D.nthr--; }
}

/* ---- threads run here --------------------------------------------------------------------------- */

static void *tramp(void *p) {
  struct job *j = p;
  struct ctx c = {0};
  if (j->st != &D_one) ursa_setspecific(loop_key, j->st);   /* a simulated rank's thread */
  unsigned char *res = malloc(URSA_DIST_RES_MAX);
  ssize_t rc = res ? j->fn(j->arg, j->len, res, URSA_DIST_RES_MAX) : -ENOMEM;
  if (rc > (ssize_t)URSA_DIST_RES_MAX) rc = -EMSGSIZE;
  /* UNLOCKs have no answer: those this rank sent to a third rank (not this one, not the home) and
   * that no SYNC answered yet are made sure of by a SYNC round trip there (FIFO per pair) before
   * the RESULT leaves, so that a joiner that then destroys the mutex never finds it still held.
   * Per rank, not per thread (a thread that did not unlock may wait for another's UNLOCK): no
   * cost at all while no UNLOCK is unanswered, the common case.  (UNLOCKs to this rank are
   * handled at once; those to the home precede the RESULT on the same pair.) */
  if (j->home && __atomic_load_n(&D.unl_out, __ATOMIC_RELAXED)) {   /* rechecked under the lock */
    for (int r = 0; r < D.size; r++) {
      if (r == D.rank || r == HOME(j->home)) continue;
      lock();
      uint64_t target = D.unl_sent[r], acked = D.unl_acked[r];
      unlock();
      if (target == acked) continue;
      int s = rpc(r, K_SYNC, 0, 0, 0, NULL, 0, NULL, 0, NULL, NULL);
      if (s != 0) die("a sync with rank %d failed (%d)", r, s);
      lock();
      if (target > D.unl_acked[r]) {
        __atomic_store_n(&D.unl_out, D.unl_out - (target - D.unl_acked[r]), __ATOMIC_RELAXED);
        D.unl_acked[r] = target;
      }
      unlock();
    }
  }
  /* Push the result to the join home (a counted message, as post's).  To rank 0 from another
   * rank it carries this rank's load without this thread (the K_LOAD below is then not sent). */
  bool told0 = j->home && HOME(j->home) == 0 && D.rank != 0;
  lock();
  if (j->home) {
    struct hdr h = {.kind = K_RESULT, .src = D.rank, .obj = ((uint64_t)D.rank << 48) | j->home,
                    .status = rc < 0 ? (int)rc : 0, .len = rc < 0 ? 0 : (uint32_t)rc};
    D.sent++;
    h.load = (uint16_t)(D.live - 1 > 65535 ? 65535 : D.live - 1);
    if (HOME(j->home) == D.rank) handle(&c, &h, res);
    else send_raw(HOME(j->home), &h, res);
  }
  unlock();
  ctx_run(&c);
  kick();
  free(res);
  free(j);
  /* Last: the thread stops counting as live (so termination may conclude) only here, after its
   * last use of D but the lock, and leaves its handle for reap() to join (so ursa_dist_finalize
   * returns only once every such thread has ended: ursa_fini then finds none). */
  ursa_thread_t me = ursa_self();
  lock();
  if (D.ndone == D.capdone) {
    int n = D.capdone ? 2 * D.capdone : 64;
    ursa_thread_t *d = realloc(D.done, (size_t)n * sizeof *d);
    if (d == NULL) die("out of memory (done threads)");
    D.done = d;
    D.capdone = n;
  }
  D.done[D.ndone] = me;
  __atomic_store_n(&D.ndone, D.ndone + 1, __ATOMIC_RELAXED);   /* read by the progress loop */
  D.live--;
  if (D.rank != 0 && !told0) {                      /* the arbiter's estimate of this rank: sent at */
    struct hdr h = {.kind = K_LOAD, .src = D.rank}; /* the progress thread's next round           */
    D.sent++;
    h.load = (uint16_t)(D.live > 65535 ? 65535 : D.live);
    send_raw(0, &h, NULL);
  }
  unlock();
  return NULL;
}

/* Joins the spawned threads that have finished (progress thread, and finalize at the end). */
static void reap(void) {
  lock();
  int n = D.ndone;
  ursa_thread_t *d = D.done;
  D.done = NULL;
  D.capdone = 0;
  __atomic_store_n(&D.ndone, 0, __ATOMIC_RELAXED);
  unlock();
  for (int i = 0; i < n; i++) ursa_join(d[i], NULL);
  free(d);
}

/* ---- objects homed here (lock held) --------------------------------------------------------------- */

static struct dobj *obj_get(uint64_t id, int type) {
  uint32_t i = (uint32_t)id;
  if (OWNER(id) != D.rank || i >= (uint32_t)D.nobjs) return NULL;
  struct dobj *o = &D.objs[i];
  if (o->type != type || o->gen != (uint16_t)(id >> 32)) return NULL;
  return o;
}

static int obj_new(int type, unsigned count, uint64_t *id) {
  int i;
  if (D.nofree) i = D.ofree[--D.nofree];
  else {
    if (D.nobjs == D.capobjs) {
      int n = D.capobjs ? 2 * D.capobjs : 64;
      struct dobj *o = realloc(D.objs, (size_t)n * sizeof *o);
      if (o == NULL) return -ENOMEM;
      D.objs = o;
      int *f = realloc(D.ofree, (size_t)n * sizeof *f);
      if (f == NULL) return -ENOMEM;
      D.ofree = f;
      D.capobjs = n;
    }
    i = D.nobjs++;
    memset(&D.objs[i], 0, sizeof D.objs[i]);
    D.objs[i].gen = 1;
  }
  struct dobj *o = &D.objs[i];
  uint16_t gen = o->gen;
  memset(o, 0, sizeof *o);
  o->gen = gen;
  o->type = (uint8_t)type;
  o->count = count;
  *id = ((uint64_t)D.rank << 48) | ((uint64_t)gen << 32) | (uint32_t)i;
  return 0;
}

static bool enqueue(struct dobj *o, int src, uint64_t req, uint64_t tok) {
  struct dwait *w = malloc(sizeof *w);
  if (w == NULL) return false;
  w->next = NULL; w->src = src; w->req = req; w->tok = tok;
  if (o->tail) o->tail->next = w; else o->head = w;
  o->tail = w;
  return true;
}

static struct dwait *dequeue(struct dobj *o) {
  struct dwait *w = o->head;
  if (w) { o->head = w->next; if (!o->head) o->tail = NULL; }
  return w;
}

/* ---- arrays' blocks homed here (lock held) ----------------------------------------------------------- */

static struct darr *arr_find(uint64_t id, struct darr ***where) {
  struct darr **pp = &D.arrs;
  while (*pp && (*pp)->id != id) pp = &(*pp)->next;
  if (where) *where = pp;
  return *pp;
}

static struct dobj *cell_get(uint64_t id, uint64_t i, int type) {
  struct darr *a = arr_find(id, NULL);
  if (a == NULL || a->closing || a->type != type || i < a->lo || i - a->lo >= a->cnt) return NULL;
  return &a->cells[i - a->lo];
}

static int arr_new(uint64_t id, uint64_t n, int type) {
  if (arr_find(id, NULL)) return -EEXIST;
  uint64_t bs = (n + (uint64_t)D.size - 1) / (uint64_t)D.size, lo = bs * (uint64_t)D.rank;
  struct darr *a = calloc(1, sizeof *a);
  if (a == NULL) return -ENOMEM;
  a->id = id; a->n = n; a->type = (uint8_t)type; a->lo = lo;
  a->cnt = lo >= n ? 0 : (n - lo < bs ? n - lo : bs);
  if (a->cnt && (a->cells = calloc(a->cnt, sizeof *a->cells)) == NULL) { free(a); return -ENOMEM; }
  for (uint64_t k = 0; k < a->cnt; k++) a->cells[k].type = (uint8_t)type;
  a->next = D.arrs;
  D.arrs = a;
  return 0;
}

static void arr_free(struct darr *a) {
  for (uint64_t k = 0; k < a->cnt; k++) {
    struct dwait *w;
    while ((w = dequeue(&a->cells[k])) != NULL) free(w);
    free(a->cells[k].val);
  }
  free(a->cells);
  free(a);
}

/* phase 0: close when no cell is waited on (-EBUSY otherwise); 1: free; 2: reopen (another
 * rank's block was busy). */
static int arr_destroy(uint64_t id, int phase) {
  struct darr **pp, *a = arr_find(id, &pp);
  if (a == NULL || (phase == 0 && a->closing)) return -EINVAL;
  if (phase == 0) {
    for (uint64_t k = 0; k < a->cnt; k++)
      if (a->cells[k].head) return -EBUSY;
    a->closing = true;
  } else if (phase == 1) {
    *pp = a->next;
    arr_free(a);
  } else a->closing = false;
  return 0;
}

/* ---- the handler ------------------------------------------------------------------------------------ */

static void spawn_here(struct ctx *c, const struct hdr *h, const void *data) {
  ursa_dist_fn fn = NULL;
  for (int i = 0; i < D.nfns; i++)
    if (D.fns[i].hash == h->a) { fn = D.fns[i].fn; break; }
  if (fn == NULL) { reply(c, h->src, h->req, -ENOENT, NULL, 0, 0); return; }
  struct job *j = malloc(sizeof *j + h->len);
  if (j == NULL) { reply(c, h->src, h->req, -ENOMEM, NULL, 0, 0); return; }
  j->fn = fn;
  j->st = &D;
  j->home = (h->flags & URSA_DIST_DETACHED) ? 0 : h->obj & ((1ull << 48) - 1);
  j->src = h->src;
  j->req = h->req;
  j->len = h->len;
  if (h->len) memcpy(j->arg, data, h->len);
  D.live++;
  D.st.spawned++;
  j->next = c->jobs;                                  /* ctx_run creates it and replies */
  c->jobs = j;
}

static void handle(struct ctx *c, const struct hdr *h, const void *data) {
  struct dobj *o;
  struct dwait *w;
  if (h->kind < K_PROBE) D.recvd++;
  if (D.rank == 0 && h->src != 0 && h->kind != K_PROBE && h->kind != K_STATUS && D.load_est)
    D.load_est[h->src] = h->load;                    /* piggybacked load */
  switch (h->kind) {
  case K_SPAWN:
    spawn_here(c, h, data);
    break;
  case K_SPAWN_ANY: {                                /* the arbiter: least loaded, ties round robin */
    int best = -1;
    D.load_est[0] = D.live;
    for (int k = 0; k < D.size; k++) {
      int r = (D.rr + k) % D.size;
      if (best < 0 || D.load_est[r] < D.load_est[best]) best = r;
    }
    D.rr = (best + 1) % D.size;
    D.load_est[best]++;
    struct hdr f = *h;
    f.kind = K_SPAWN;
    if (best == 0) spawn_here(c, &f, data);
    else { D.sent++; f.load = (uint16_t)D.live; send_raw(best, &f, data); }
    break;
  }
  case K_LOAD:
    break;
  case K_JOIN: {                                     /* at the join home (from here or a rank */
    uint32_t key = KEY(h->obj);                      /* the handle was sent to)                */
    struct dthr **pp, *d = thr_find(key, &pp);
    if (d == NULL) {                                 /* joined already (or never created) */
      bool used = key != 0 && (D.keys_wrapped || key < D.next_key);
      reply(c, h->src, h->req, used ? -EINVAL : -ESRCH, NULL, 0, 0);
      break;
    }
    if (d->joining) { reply(c, h->src, h->req, -EINVAL, NULL, 0, 0); break; }
    if (d->exited) {
      reply(c, h->src, h->req, d->status, d->res, d->len, 0);
      *pp = d->next;
      free(d->res);
      free(d);
      D.nthr--;
      break;
    }
    d->joining = true;
    d->joiner_src = h->src;
    d->joiner_req = h->req;
    break;
  }
  case K_SYNC:                                       /* the UNLOCKs before it on this pair are handled */
    reply(c, h->src, h->req, 0, NULL, 0, 0);
    break;
  case K_RESULT: {                                   /* at the join home: a thread ended */
    struct dthr **pp, *d = thr_find(KEY(h->obj), &pp);
    if (d == NULL) die("a result from rank %d for no thread created here (key %u): protocol error", h->src, KEY(h->obj));
    if (d->joining) {
      reply(c, d->joiner_src, d->joiner_req, h->status, data, h->len, 0);
      *pp = d->next;
      free(d);
      D.nthr--;
      break;
    }
    d->exited = true;
    d->status = h->status;
    d->len = h->len;
    d->res = h->len ? malloc(h->len) : NULL;
    if (h->len && d->res == NULL) { d->status = -ENOMEM; d->len = 0; }
    else if (h->len) memcpy(d->res, data, h->len);
    break;
  }
  case K_CREATE: {
    uint64_t id = 0;
    int rc = obj_new((int)h->a, (unsigned)h->obj, &id);
    reply(c, h->src, h->req, rc, NULL, 0, id);
    break;
  }
  case K_DESTROY:
    if ((o = obj_get(h->obj, h->flags)) == NULL) { reply(c, h->src, h->req, -EINVAL, NULL, 0, 0); break; }
    if (o->held || o->head || o->arrived) { reply(c, h->src, h->req, -EBUSY, NULL, 0, 0); break; }
    free(o->val);
    o->val = NULL;
    o->type = O_FREE;
    o->gen = (uint16_t)(o->gen + 1 ? o->gen + 1 : 1);
    D.ofree[D.nofree++] = (int)(o - D.objs);
    reply(c, h->src, h->req, 0, NULL, 0, 0);
    break;
  case K_LOCK:
    if ((o = obj_get(h->obj, O_MUTEX)) == NULL) { reply(c, h->src, h->req, -EINVAL, NULL, 0, 0); break; }
    if (!o->held) { o->held = true; o->holder_src = h->src; o->holder_tok = h->a; reply(c, h->src, h->req, 0, NULL, 0, 0); }
    else if (!enqueue(o, h->src, h->req, h->a)) reply(c, h->src, h->req, -ENOMEM, NULL, 0, 0);
    break;
  case K_UNLOCK:                                     /* the holder checked it holds it: no answer */
    if ((o = obj_get(h->obj, O_MUTEX)) == NULL || !o->held || o->holder_src != h->src || o->holder_tok != h->a) {
      fprintf(stderr, "ursa dist: rank %d: an unlock of a mutex not held by its sender (rank %d): ignored\n", D.rank, h->src);
      break;
    }
    if ((w = dequeue(o)) != NULL) {                  /* FIFO hand-over */
      o->holder_src = w->src;
      o->holder_tok = w->tok;
      reply(c, w->src, w->req, 0, NULL, 0, 0);
      free(w);
    } else o->held = false;
    break;
  case K_IS_READ:
  case K_MS_TAKE: {
    int type = h->kind == K_IS_READ ? O_IVAR : O_MVAR;
    if ((o = (h->flags & F_ELEM) ? cell_get(h->obj, h->a, type) : obj_get(h->obj, type)) == NULL) {
      reply(c, h->src, h->req, -EINVAL, NULL, 0, 0);
      break;
    }
    if (o->full) {
      reply(c, h->src, h->req, 0, o->val, o->len, 0);
      if (type == O_MVAR) { o->full = false; free(o->val); o->val = NULL; o->len = 0; }
    } else if (!enqueue(o, h->src, h->req, 0)) reply(c, h->src, h->req, -ENOMEM, NULL, 0, 0);
    break;
  }
  case K_IS_WRITE:
  case K_MS_PUT: {
    int type = h->kind == K_IS_WRITE ? O_IVAR : O_MVAR;
    if ((o = (h->flags & F_ELEM) ? cell_get(h->obj, h->a, type) : obj_get(h->obj, type)) == NULL) {
      reply(c, h->src, h->req, -EINVAL, NULL, 0, 0);
      break;
    }
    if (o->full) { reply(c, h->src, h->req, -EBUSY, NULL, 0, 0); break; }
    if (type == O_MVAR && (w = dequeue(o)) != NULL) {   /* the first taker gets it; stays empty */
      reply(c, w->src, w->req, 0, data, h->len, 0);
      free(w);
      reply(c, h->src, h->req, 0, NULL, 0, 0);
      break;
    }
    void *v = h->len ? malloc(h->len) : NULL;
    if (h->len && v == NULL) { reply(c, h->src, h->req, -ENOMEM, NULL, 0, 0); break; }
    if (h->len) memcpy(v, data, h->len);
    o->val = v;
    o->len = h->len;
    o->full = true;
    while ((w = dequeue(o)) != NULL) { reply(c, w->src, w->req, 0, o->val, o->len, 0); free(w); }
    reply(c, h->src, h->req, 0, NULL, 0, 0);
    break;
  }
  case K_BAR_WAIT:
    if ((o = obj_get(h->obj, O_BARRIER)) == NULL) { reply(c, h->src, h->req, -EINVAL, NULL, 0, 0); break; }
    if (!enqueue(o, h->src, h->req, 0)) { reply(c, h->src, h->req, -ENOMEM, NULL, 0, 0); break; }
    if (++o->arrived == o->count) {
      o->arrived = 0;
      while ((w = dequeue(o)) != NULL) { reply(c, w->src, w->req, 0, NULL, 0, 0); free(w); }
    }
    break;
  case K_REPLY:
    complete(c, h->req, h->status, data, h->len, h->a);
    break;
  case K_ACREATE:
    reply(c, h->src, h->req, arr_new(h->obj, h->a, h->flags), NULL, 0, 0);
    break;
  case K_ADESTROY:
    reply(c, h->src, h->req, arr_destroy(h->obj, (int)h->a), NULL, 0, 0);
    break;
  case K_PROBE: {
    bool idle = D.main_done && D.live == 0 && D.nreq == 0 && D.out_head == NULL;
    struct hdr s = {.kind = K_STATUS, .src = D.rank, .req = D.recvd, .obj = D.sent, .a = h->a, .status = idle};
    send_raw(0, &s, NULL);
    break;
  }
  case K_STATUS:
    if (D.wave_active && h->a == D.wave) {
      D.wave_replies++;
      D.wave_idle = D.wave_idle && h->status;
      D.wave_s += h->obj;
      D.wave_r += h->req;
    }
    break;
  case K_SHUTDOWN:
    D.shutdown = true;
    break;
  case K_PING: {
    struct hdr p = {.kind = K_PONG, .src = D.rank};
    send_raw(h->src, &p, NULL);
    break;
  }
  case K_PONG:
    break;
  default:
    die("a message of unknown kind %d: protocol error", h->kind);
  }
}

/* ---- the progress thread ---------------------------------------------------------------------------- */

static bool local_idle(void) { return D.main_done && D.live == 0 && D.nreq == 0 && D.out_head == NULL; }

/* Rank 0, lock held: start a wave, or conclude one. */
static void waves(uint64_t t) {
  if (D.shutdown) return;
  if (!D.wave_active) {
    if (!local_idle() || t < D.next_wave_at) return;
    D.wave++;
    D.wave_active = true;
    D.wave_replies = 0;
    D.wave_idle = true;
    D.wave_s = D.sent;
    D.wave_r = D.recvd;
    for (int r = 1; r < D.size; r++) {
      struct hdr p = {.kind = K_PROBE, .src = 0, .a = D.wave};
      send_raw(r, &p, NULL);
    }
  }
  if (D.wave_replies < D.size - 1) return;
  D.wave_active = false;
  bool ok = D.wave_idle && D.wave_s == D.wave_r;
  if (ok && D.prev_ok && D.wave_s == D.prev_s && D.wave_r == D.prev_r) {
    for (int r = 1; r < D.size; r++) {
      struct hdr s = {.kind = K_SHUTDOWN, .src = 0};
      send_raw(r, &s, NULL);
    }
    D.shutdown = true;
    return;
  }
  D.prev_ok = ok;
  D.prev_s = D.wave_s;
  D.prev_r = D.wave_r;
  D.next_wave_at = t + (ok || D.loop ? 0 : 20000);   /* 20 us between failed waves (none in a loop run: no clock) */
}

/* Every 100 ms, lock held.  A request may wait as long as the program makes it (a lock held, an
 * I-structure not yet written); what must not happen is that the rank it waits on goes silent.
 * So: for a request older than half the timeout, ping its rank (one ping outstanding per rank); a
 * rank that has not answered a ping within half the timeout is stuck (its VP 0 runs a thread that
 * never yields, or a protocol bug): print what this rank waits for, and end the job.  A stall is
 * so found between one timeout and one timeout plus 100 ms after the request. */
static void watchdog(uint64_t t) {
  int stuck = -1;
  if (D.timeout_ns == 0) return;                     /* URSA_DIST_TIMEOUT_MS=0: no deadline */
  for (int i = 0; i < D.nslots; i++) {
    struct dreq *r = D.slots[i];
    if (r == NULL || t - r->t0 <= D.timeout_ns / 2) continue;
    int dst = r->watch == URSA_RANK_ANY ? 0 : r->watch;
    if (dst == D.rank) continue;                     /* answered here: this thread is alive */
    if (D.pinged[dst] > D.heard[dst]) {              /* a ping is unanswered */
      if (t - D.pinged[dst] > D.timeout_ns / 2) { stuck = dst; break; }
    } else {
      struct hdr p = {.kind = K_PING, .src = D.rank};
      send_raw(dst, &p, NULL);
      D.pinged[dst] = t;
    }
  }
  if (stuck < 0) return;
  fprintf(stderr, "ursa dist: rank %d: rank %d answered nothing for URSA_DIST_TIMEOUT_MS=%llu while this rank waits "
                  "on it: it is stuck (a thread that never yields on its VP 0?); pending remote operations of rank %d:\n",
          D.rank, stuck, (unsigned long long)(D.timeout_ns / 1000000), D.rank);
  for (int i = 0; i < D.nslots; i++) {
    struct dreq *r = D.slots[i];
    if (r && r->dst == URSA_RANK_ANY) fprintf(stderr, "  %s -> arbiter (rank 0), waiting %.1f ms\n", kind_name[r->kind], (t - r->t0) / 1e6);
    else if (r) fprintf(stderr, "  %s -> rank %d, waiting %.1f ms\n", kind_name[r->kind], r->dst, (t - r->t0) / 1e6);
  }
  fprintf(stderr, "ursa dist: rank %d: ending the job\n", D.rank);
  fail_stop(71);
}

static int env_us(const char *name, uint64_t def, uint64_t *out) {
  const char *s = getenv(name);
  char *end;
  if (s == NULL || *s == '\0') { *out = def; return 0; }
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || *s == '-' || v > 3600ull * 1000000) {
    fprintf(stderr, "ursa dist: %s=%s is not a whole number of %s up to one hour\n", name, s,
            strstr(name, "_MS") ? "milliseconds" : "microseconds");
    return -EINVAL;
  }
  *out = v;
  return 0;
}

/* ---- the MPI transport (one rank per process) ------------------------------------------------------ */

static MPI_Request *sreq;          /* Isends in flight and their messages (the progress thread's) */
static struct dmsg **smsg;
static int nsend, capsend;
static unsigned char *rbuf;

static int mpi_start(void) {
  int inited = 0, prov = 0, rc = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (MPI_Init_thread(D.argc, D.argv, MPI_THREAD_FUNNELED, &prov) != MPI_SUCCESS) rc = -EIO;
    else D.own_mpi = true;
  } else {
    int is_main = 0;
    MPI_Query_thread(&prov);
    MPI_Is_thread_main(&is_main);
    if (!is_main) {
      fprintf(stderr, "ursa dist: MPI was initialized on a kernel thread other than ursa's VP 0 (the thread of ursa_init)\n");
      rc = -EPERM;
    }
  }
  if (rc == 0 && prov < MPI_THREAD_FUNNELED) {
    fprintf(stderr, "ursa dist: MPI provides thread level %d, below MPI_THREAD_FUNNELED\n", prov);
    rc = -EINVAL;
  }
  if (rc == 0) {
    MPICHK(MPI_Comm_dup(MPI_COMM_WORLD, &D.comm));
    MPICHK(MPI_Comm_set_errhandler(D.comm, MPI_ERRORS_RETURN));
    MPICHK(MPI_Comm_rank(D.comm, &D.rank));
    MPICHK(MPI_Comm_size(D.comm, &D.size));
    rbuf = malloc(sizeof(struct hdr) + URSA_DIST_ARG_MAX);
    if (rbuf == NULL) rc = -ENOMEM;
  }
  return rc;
}

static void mpi_send(struct dmsg *m) {
  if (nsend == capsend) {
    int n = capsend ? 2 * capsend : 64;
    sreq = realloc(sreq, (size_t)n * sizeof *sreq);
    smsg = realloc(smsg, (size_t)n * sizeof *smsg);
    if (!sreq || !smsg) die("out of memory (send queue)");
    capsend = n;
  }
  MPICHK(MPI_Isend(&m->h, (int)(sizeof m->h + m->h.len), MPI_BYTE, m->dst, TAG, D.comm, &sreq[nsend]));
  smsg[nsend++] = m;
}

static int mpi_pending(void) {
  if (nsend) {
    int idx[64], n = 0;
    int cnt = nsend < 64 ? nsend : 64;
    MPI_Status sts[64];                     /* (MPI_STATUSES_IGNORE trips gcc's -Wstringop-overflow on MPICH's header) */
    MPICHK(MPI_Testsome(cnt, sreq, &n, idx, sts));
    if (n > 0 && n != MPI_UNDEFINED) {
      for (int k = 0; k < n; k++) { free(smsg[idx[k]]); smsg[idx[k]] = NULL; }
      int j = 0;
      for (int k = 0; k < nsend; k++)
        if (smsg[k]) { smsg[j] = smsg[k]; sreq[j] = sreq[k]; j++; }
      nsend = j;
    }
  }
  return nsend;
}

static const struct hdr *mpi_recv(int *from, const unsigned char **data) {
  int flag, len;
  MPI_Message mm;
  MPI_Status st;
  MPICHK(MPI_Improbe(MPI_ANY_SOURCE, TAG, D.comm, &flag, &mm, &st));
  if (!flag) return NULL;
  MPICHK(MPI_Get_count(&st, MPI_BYTE, &len));
  if (len < (int)sizeof(struct hdr) || len > (int)(sizeof(struct hdr) + URSA_DIST_ARG_MAX))
    die("a message of %d bytes: protocol error", len);
  MPICHK(MPI_Mrecv(rbuf, len, MPI_BYTE, &mm, MPI_STATUS_IGNORE));
  *from = st.MPI_SOURCE;
  *data = rbuf + sizeof(struct hdr);
  return (const struct hdr *)(void *)rbuf;
}

/* No rank finalizes while another still needs its sends: a non-blocking barrier. */
static MPI_Request fin_req;
static bool fin_started;
static bool mpi_finish(void) {
  int done = 0;
  if (!fin_started) { MPICHK(MPI_Ibarrier(D.comm, &fin_req)); fin_started = true; }
  MPICHK(MPI_Test(&fin_req, &done, MPI_STATUS_IGNORE));
  if (done) fin_started = false;
  return done;
}

static void mpi_stop(void) {
  MPI_Comm_free(&D.comm);
  if (D.own_mpi) MPI_Finalize();
  free(rbuf); rbuf = NULL;
  free(sreq); free(smsg); sreq = NULL; smsg = NULL; nsend = capsend = 0;
}

static const struct transport mpi_transport = {"mpi", mpi_start, mpi_send, mpi_pending, mpi_recv, mpi_finish, mpi_stop};

/* ---- the loop transport (N simulated ranks in one process, for tests) ------------------------------
 *
 * The network is n x n FIFO queues, one per (source, destination) pair: the only order MPI
 * promises (non-overtaking per pair on one communicator and tag).  A progress thread that polls
 * (recv) first lets the network deliver: with probability 3/4 it moves the head of one non-empty
 * pair queue, picked by a seeded generator (xorshift64*), to its destination's inbox, so any
 * interleaving of different pairs' messages can happen and a seed names one; then it takes the
 * head of its own inbox.  Everything under L.lock.  With one VP the scheduler's order is fixed
 * too, so a seed replays a run (tests/dist print it).  A run in which no counted message moves for
 * URSA_DIST_TIMEOUT_MS while requests wait is a deadlock of the protocol: the run prints its seed
 * and every rank's pending requests and ends the process (status 72). */
static struct {
  ursa__spin_t lock;
  bool active;
  int n, finished;
  uint64_t seed, rng, delivered, hash, last_event, stall_ns;
  struct dstate *st;                  /* n states */
  struct dmsg **qh, **qt;             /* n * n pair queues, src * n + dst */
  int queued;
} L;

static void loop_seed_note(void) { fprintf(stderr, "(loop transport, %d ranks, seed %llu) ", L.n, (unsigned long long)L.seed); }

static uint64_t loop_rand(void) {     /* xorshift64*; L.lock held */
  L.rng ^= L.rng >> 12; L.rng ^= L.rng << 25; L.rng ^= L.rng >> 27;
  return L.rng * 2685821657736338717ull;
}

static int loop_start(void) { return 0; }   /* rank and size set by ursa_dist_loop_run */

static void loop_send(struct dmsg *m) {
  ursa__obj_lock(&L.lock);
  int q = m->from * L.n + m->dst;
  m->next = NULL;
  if (L.qt[q]) L.qt[q]->next = m; else L.qh[q] = m;
  L.qt[q] = m;
  L.queued++;
  ursa__obj_unlock(&L.lock);
}

static int loop_pending(void) { return 0; }  /* a queued message is the network's */

static void loop_stall(uint64_t t);
static const struct hdr *loop_recv(int *from, const unsigned char **data) {
  struct dstate *me = &D;
  struct dmsg *m;
  free(me->last_in);
  me->last_in = NULL;
  ursa__obj_lock(&L.lock);
  if (L.queued && loop_rand() % 4 != 0) {
    int nonempty = 0, k, q;
    for (q = 0; q < L.n * L.n; q++) nonempty += L.qh[q] != NULL;
    k = (int)(loop_rand() % (uint64_t)nonempty);
    for (q = 0; q < L.n * L.n; q++)
      if (L.qh[q] && k-- == 0) break;
    m = L.qh[q];
    L.qh[q] = m->next;
    if (L.qh[q] == NULL) L.qt[q] = NULL;
    L.queued--;
    struct dstate *to = &L.st[m->dst];
    m->next = NULL;
    if (to->in_tail) to->in_tail->next = m; else to->in_head = m;
    to->in_tail = m;
    L.delivered++;
    L.hash = (L.hash ^ (uint64_t)(q * 64 + m->h.kind)) * 1099511628211ull;   /* the order, for replay checks */
    if (m->h.kind < K_PROBE) L.last_event = 0;
  }
  m = me->in_head;
  if (m) { me->in_head = m->next; if (me->in_head == NULL) me->in_tail = NULL; }
  else if (L.stall_ns) {
    uint64_t t = now_ns();
    if (L.last_event == 0) L.last_event = t;
    else if (t - L.last_event > L.stall_ns) loop_stall(t);
  }
  ursa__obj_unlock(&L.lock);
  if (m == NULL) return NULL;
  me->last_in = m;
  *from = m->from;
  *data = m->data;
  return &m->h;
}

static bool loop_finish(void) {
  bool all;
  ursa__obj_lock(&L.lock);
  if (!D.loop_finished) { D.loop_finished = true; L.finished++; }
  all = L.finished == L.n;
  ursa__obj_unlock(&L.lock);
  if (!all) (void)loop_recv(&(int){0}, &(const unsigned char *){NULL});   /* keep delivering for the others */
  return all;
}

static void loop_stop(void) { free(D.last_in); D.last_in = NULL; }

static const struct transport loop_transport = {"loop", loop_start, loop_send, loop_pending, loop_recv, loop_finish, loop_stop};

/* ---- the progress loop, on either transport ----------------------------------------------------------- */

static int sends_flush(int *pend) {
  int sent = 0;
  lock();
  struct dmsg *m = D.out_head;
  D.out_head = D.out_tail = NULL;
  __atomic_store_n(&D.nout, 0, __ATOMIC_RELAXED);
  unlock();
  while (m) {
    struct dmsg *next = m->next;
    D.T->send(m);
    m = next;
    sent++;
  }
  *pend = D.T->pending();
  return sent;
}

static int receive(void) {
  int n = 0;
  while (n < POLL_BUDGET) {
    int from = 0;
    const unsigned char *data = NULL;
    const struct hdr *hp = D.T->recv(&from, &data);
    if (hp == NULL) break;
    struct hdr h;
    memcpy(&h, hp, sizeof h);
    struct ctx c = {0};
    lock();
    if (D.timeout_ns) D.heard[from] = now_ns();
    handle(&c, &h, data);
    unlock();
    ctx_run(&c);
    n++;
  }
  return n;
}

static void *progress(void *self) {
  if (self != &D_one) ursa_setspecific(loop_key, self);   /* a simulated rank's progress thread */
  int pend = 0, rc = D.T->start();
  if (rc == 0) {
    D.load_est = calloc((size_t)D.size, sizeof *D.load_est);
    D.unl_sent = calloc((size_t)D.size, sizeof *D.unl_sent);
    D.unl_acked = calloc((size_t)D.size, sizeof *D.unl_acked);
    D.heard = calloc((size_t)D.size, sizeof *D.heard);
    D.pinged = calloc((size_t)D.size, sizeof *D.pinged);
    if (!D.load_est || !D.heard || !D.pinged || !D.unl_sent || !D.unl_acked || D.size > 65535) rc = D.size > 65535 ? -EINVAL : -ENOMEM;
    else for (int r = 0; r < D.size; r++) D.heard[r] = now_ns();
  }
  if (rc == 0 && D.rank == 0) {                          /* object 0 of rank 0: ursa_dist_barrier_all */
    uint64_t id;
    lock();
    rc = obj_new(O_BARRIER, (unsigned)D.size, &id);
    unlock();
  }
  D.init_rc = rc;
  if (rc == 0) __atomic_store_n(&D.state, 1, __ATOMIC_RELEASE);
  ursa_sem_post(&D.ready);
  if (rc != 0) return NULL;

  uint64_t idle_since = 0, spin_until = 0, next_watch = now_ns() + 100000000;
  for (;;) {
    int n = 0;
    __atomic_fetch_add(&D.st.polls, 1, __ATOMIC_RELAXED);          /* read by ursa_dist_stats */
    /* a message sent counts as activity: its answer comes soon, so the backoff starts over */
    if (__atomic_load_n(&D.nout, __ATOMIC_RELAXED) || pend) n += sends_flush(&pend);
    if (__atomic_load_n(&D.ndone, __ATOMIC_RELAXED)) reap();      /* after: a result goes out first */
    n += receive();
    /* answers the handlers queued go out before this thread yields: the thread it wakes may
     * compute for long without blocking (then, with one VP, this thread would not run) */
    if (__atomic_load_n(&D.nout, __ATOMIC_RELAXED)) n += sends_flush(&pend);
    uint64_t t = 0;
    if (D.rank == 0 || D.timeout_ns) t = now_ns();
    lock();
    if (D.rank == 0) waves(t);
    bool stop = D.shutdown && D.out_head == NULL;
    unlock();
    if (stop && pend == 0) break;
    if (t >= next_watch) {
      lock();
      watchdog(t);
      unlock();
      next_watch = t + 100000000;
    }
    if (n || __atomic_load_n(&D.nout, __ATOMIC_RELAXED) || pend) { idle_since = 0; ursa_yield(); continue; }
    if (ursa__vp_others_ready() || D.loop) { idle_since = 0; ursa_yield(); continue; }   /* loop: no backoff */
    t = now_ns();
    if (idle_since == 0) idle_since = t;
    uint64_t d = t - idle_since;
    if (d < D.spin_ns || t < spin_until) continue;
    if (d < D.yield_ns) { sched_yield(); continue; }
    /* sleep: a thread that queues a message posts kick (seq_cst: pairs with its load of sleeping
     * after its enqueue; either it sees sleeping, or we see its message in nout) */
    __atomic_store_n(&D.sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&D.nout, __ATOMIC_SEQ_CST) == 0) {
      uint64_t dl = now_ns() + (d < D.deep_after_ns ? D.sleep_ns : D.deep_sleep_ns);
      struct timespec ts = {(time_t)(dl / 1000000000u), (long)(dl % 1000000000u)};
      ursa_sem_timedwait(&D.kick, CLOCK_MONOTONIC, &ts);
      __atomic_fetch_add(&D.st.idle_sleeps, 1, __ATOMIC_RELAXED);
      spin_until = now_ns() + POST_SLEEP_SPIN_NS;
    }
    __atomic_store_n(&D.sleeping, 0, __ATOMIC_SEQ_CST);
    while (ursa_sem_trywait(&D.kick) == 0) {}
  }
  /* every rank is done: the transport's last barrier (no rank finalizes while another still
   * needs its sends), then it stops (MPI_Finalize if we initialized MPI) */
  while (!D.T->finish()) {
    if (D.loop) ursa_yield();
    else ursa_sleep_ns(20000);
  }
  D.T->stop();
  return NULL;
}

static void kick(void) {
  /* seq_cst: pairs with the progress thread's store of sleeping before its load of nout */
  if (__atomic_load_n(&D.sleeping, __ATOMIC_SEQ_CST) && __atomic_exchange_n(&D.sleeping, 0, __ATOMIC_SEQ_CST))
    ursa_sem_post(&D.kick);
}

/* A call that answered itself here but queued messages for other ranks (a barrier's release, an
 * I-structure's readers, a mutex's next holder) lets the progress thread send them now: the
 * caller may compute for long without blocking, and with one VP the progress thread would not run
 * until it does. */
static void flush_soon(void) {
  if (__atomic_load_n(&D.nout, __ATOMIC_RELAXED) == 0) return;
  kick();
  ursa_yield();
}

/* ---- the public calls ------------------------------------------------------------------------------- */

static const struct ursa__waitkind dist_kind = {"a remote operation (ursa_dist) on request", NULL, 0};

/* The layer's kind of wait, named in ursa's dumps: registered once per process (the simulated
 * ranks of a loop run call ursa_dist_init at once, on any VP; loop_run registers it before they
 * exist). */
static int kind_once;               /* atomic: 0, then 1 for the thread that registers */
static void register_kind(void) {
  if (__atomic_load_n(&kind_once, __ATOMIC_ACQUIRE) == 0 && __atomic_exchange_n(&kind_once, 1, __ATOMIC_ACQ_REL) == 0)
    ursa__waitkind_register(URSA__W_DIST, &dist_kind);
}

int ursa_dist_init(int *argc, char ***argv) {
  int rc;
  if (__atomic_load_n(&D.state, __ATOMIC_ACQUIRE) != 0) return -EALREADY;
  if (ursa__self_thread() == NULL) return -EPERM;
  if ((rc = env_us("URSA_DIST_SPIN_US", 20, &D.spin_ns)) || (rc = env_us("URSA_DIST_YIELD_US", 200, &D.yield_ns)) ||
      (rc = env_us("URSA_DIST_SLEEP_US", 50, &D.sleep_ns)) || (rc = env_us("URSA_DIST_DEEP_AFTER_MS", 10, &D.deep_after_ns)) ||
      (rc = env_us("URSA_DIST_DEEP_SLEEP_US", 500, &D.deep_sleep_ns)) || (rc = env_us("URSA_DIST_TIMEOUT_MS", 5000, &D.timeout_ns)))
    return rc;
  D.spin_ns *= 1000; D.yield_ns *= 1000; D.sleep_ns *= 1000; D.timeout_ns *= 1000000;
  D.deep_after_ns *= 1000000; D.deep_sleep_ns *= 1000;
  D.T = D.loop ? &loop_transport : &mpi_transport;
  if (D.loop) D.timeout_ns = 0;         /* no rank stalls alone in one process: loop_stall watches */
  if (D.sleep_ns == 0) D.sleep_ns = 1000;
  if (D.deep_sleep_ns == 0) D.deep_sleep_ns = 1000;
  register_kind();
  D.smp = ursa_vp_count() > 1;
  D.argc = argc; D.argv = argv;
  D.next_key = 1;
  ursa_sem_init(&D.kick, 0);
  ursa_sem_init(&D.ready, 0);
  ursa_attr_t a;
  ursa_attr_init(&a);
  ursa_attr_setvp(&a, 0);
  ursa_attr_setbound(&a, 1);
  ursa_attr_setname(&a, "ursa-dist-progress");
  ursa_attr_setstacksize(&a, 4u << 20);       /* MPI_Init and UCX run deep on it (a 64 KiB stack overflowed) */
  rc = ursa_create(&D.prog, &a, progress, &D);
  ursa_attr_destroy(&a);
  if (rc) return rc;
  ursa_sem_wait(&D.ready);
  if (D.init_rc) { ursa_join(D.prog, NULL); return D.init_rc; }
  return 0;
}

static bool running(void) { return __atomic_load_n(&D.state, __ATOMIC_ACQUIRE) == 1; }

int ursa_dist_rank(void) { return running() ? D.rank : -ENOTCONN; }
int ursa_dist_size(void) { return running() ? D.size : -ENOTCONN; }

int ursa_dist_finalize(void) {
  if (!running()) return -ENOTCONN;
  lock();
  D.main_done = true;
  unlock();
  kick();
  ursa_join(D.prog, NULL);
  reap();
  for (int i = 0; i < NBUCKETS; i++)
    while (D.bucket[i]) { struct dthr *d = D.bucket[i]; D.bucket[i] = d->next; free(d->res); free(d); }  /* unjoined */
  for (int i = 0; i < D.nobjs; i++) {
    struct dwait *w;
    while ((w = dequeue(&D.objs[i])) != NULL) free(w);
    free(D.objs[i].val);
  }
  while (D.held) { struct held *h = D.held; D.held = h->next; free(h); }
  while (D.arrs) { struct darr *a = D.arrs; D.arrs = a->next; arr_free(a); }
  free(D.objs); free(D.ofree); free(D.slots); free(D.sgen); free(D.sfree); free(D.load_est); free(D.fns);
  free(D.unl_sent); free(D.unl_acked);
  free(D.heard); free(D.pinged);
  ursa_sem_destroy(&D.kick);
  ursa_sem_destroy(&D.ready);
  int rank = D.rank, size = D.size;
  memset(&D, 0, sizeof D);
  D.rank = rank; D.size = size;
  __atomic_store_n(&D.state, 2, __ATOMIC_RELEASE);
  return 0;
}

int ursa_dist_register(const char *name, ursa_dist_fn fn) {
  size_t n;
  if (name == NULL || fn == NULL || (n = strlen(name)) == 0 || n > 63) return -EINVAL;
  uint64_t h = name_hash(name);
  int rc = 0;
  lock();
  for (int i = 0; i < D.nfns; i++)
    if (D.fns[i].hash == h) {
      rc = D.fns[i].fn == fn && strcmp(D.fns[i].name, name) == 0 ? 0 : -EEXIST;
      unlock();
      return rc;
    }
  if (D.nfns == D.capfns) {
    int c = D.capfns ? 2 * D.capfns : 16;
    struct fnent *f = realloc(D.fns, (size_t)c * sizeof *f);
    if (f == NULL) { unlock(); return -ENOMEM; }
    D.fns = f; D.capfns = c;
  }
  memcpy(D.fns[D.nfns].name, name, n + 1);
  D.fns[D.nfns].hash = h;
  D.fns[D.nfns].fn = fn;
  D.nfns++;
  unlock();
  return 0;
}

/* One request from the calling thread: post it to dst, wait for its answer.  watch: the rank the
 * answer waits on, which the watchdog pings (dst, but for a join the thread's owner). */
static int rpc_w(int dst, int watch, int kind, unsigned flags, uint64_t obj, uint64_t a, const void *data, size_t len,
                 void *out, size_t cap, size_t *outlen, uint64_t *outa) {
  struct dreq r = {.kind = kind, .dst = dst, .watch = watch, .buf = out, .cap = cap};
  struct ctx c = {0};
  struct ursa__thread *self = ursa__self_thread();
  int rc;
  if (!running()) return -ENOTCONN;
  if (self == NULL) return -EPERM;
  r.t0 = D.timeout_ns ? now_ns() : 0;
  lock();
  if ((rc = slot_alloc(&r)) != 0) { unlock(); return rc; }
  struct hdr h = {.kind = (uint8_t)kind, .flags = (uint8_t)flags, .src = D.rank, .req = r.id, .obj = obj, .a = a,
                  .len = (uint32_t)len};
  post(&c, dst == URSA_RANK_ANY ? 0 : dst, &h, data);
  unlock();
  ctx_run(&c);
  kick();
  lock();
  if (!r.done) {
    r.th = self;
    if (D.smp) ursa__park(URSA__W_DIST, &r, &D.lock, 0);   /* releases the lock once parked */
    else { unlock(); ursa__park(URSA__W_DIST, &r, NULL, 0); }
  } else {
    unlock();
    flush_soon();
  }
  if (outlen) *outlen = r.len;
  if (outa) *outa = r.a;
  if (r.status == 0 && out && r.len > cap) return -EMSGSIZE;
  return r.status;
}

static int rpc(int dst, int kind, unsigned flags, uint64_t obj, uint64_t a, const void *data, size_t len,
               void *out, size_t cap, size_t *outlen, uint64_t *outa) {
  return rpc_w(dst, dst, kind, flags, obj, a, data, len, out, cap, outlen, outa);
}

static int check_rank(int r, bool any) {
  if (!running()) return -ENOTCONN;
  if ((any && r == URSA_RANK_ANY) || (r >= 0 && r < D.size)) return 0;
  return -EINVAL;
}

int ursa_dist_create(ursa_dist_thread_t *t, int rank, const char *name, const void *arg, size_t len, unsigned flags) {
  int rc;
  uint64_t id = 0, h;
  if ((rc = check_rank(rank, true)) != 0) return rc;
  if (name == NULL || (flags & ~URSA_DIST_DETACHED) || len > URSA_DIST_ARG_MAX || (len && arg == NULL) ||
      (t == NULL && !(flags & URSA_DIST_DETACHED)))
    return -EINVAL;
  h = name_hash(name);
  /* A joinable thread's record exists here (its join home) before the spawn leaves: its result
   * may arrive before the spawn's answer (it may run and end on another VP of its rank first). */
  bool known = false;
  uint32_t key = 0;
  lock();
  for (int i = 0; i < D.nfns; i++) known = known || D.fns[i].hash == h;
  rc = known && !(flags & URSA_DIST_DETACHED) ? thr_new(&key) : 0;
  unlock();
  if (!known) return -ENOENT;                          /* not registered here: no message */
  if (rc) return rc;
  uint64_t home = key ? ((uint64_t)D.rank << 32) | key : 0;
  rc = rpc(rank, rank == URSA_RANK_ANY ? K_SPAWN_ANY : K_SPAWN, flags, home, h, arg, len, NULL, 0, NULL, &id);
  if (rc != 0 && key) {                                /* no thread (-ENOENT there, -ENOMEM): */
    lock();                                            /* no result will come                 */
    thr_drop(key);
    unlock();
  }
  if (rc == 0 && t) t->id = key ? id : 0;
  return rc;
}

/* Asks the join home, which answers once the result is there: on the creator's rank the K_JOIN
 * is handled at once by this thread (a function call, no message) and it parks until the result
 * arrives; from any other rank it is one round trip to the join home. */
int ursa_dist_join(ursa_dist_thread_t t, void *res, size_t cap, size_t *len) {
  if (!running()) return -ENOTCONN;
  if (t.id == 0 || OWNER(t.id) >= D.size || HOME(t.id) >= D.size) return -ESRCH;
  if (res == NULL) cap = 0;
  size_t n = 0;
  unsigned char dummy;
  int rc = rpc_w(HOME(t.id), OWNER(t.id), K_JOIN, 0, t.id, 0, NULL, 0, res ? res : &dummy, cap, &n, NULL);
  if (len) *len = n;
  if (rc == -EMSGSIZE && res == NULL) rc = 0;          /* the result was not wanted */
  return rc;
}

int ursa_dist_thread_rank(ursa_dist_thread_t t) {
  if (!running()) return -ENOTCONN;
  return t.id == 0 || OWNER(t.id) >= D.size ? -ESRCH : OWNER(t.id);
}

static int obj_create(int home, int type, unsigned count, uint64_t *id) {
  int rc = check_rank(home, false);
  if (rc) return rc;
  if (id == NULL) return -EINVAL;
  return rpc(home, K_CREATE, 0, count, (uint64_t)type, NULL, 0, NULL, 0, NULL, id);
}
static int obj_destroy(uint64_t id, int type) {
  if (!running()) return -ENOTCONN;
  if (id == 0 || OWNER(id) >= D.size) return -EINVAL;
  return rpc(OWNER(id), K_DESTROY, (unsigned)type, id, 0, NULL, 0, NULL, 0, NULL, NULL);
}
static int obj_op(uint64_t id, int kind, const void *val, size_t len, void *out, size_t cap, size_t *outlen) {
  if (!running()) return -ENOTCONN;
  if (id == 0 || OWNER(id) >= D.size) return -EINVAL;
  if (len > URSA_DIST_RES_MAX || (len && val == NULL)) return -EINVAL;
  size_t n = 0;
  unsigned char dummy;
  int rc = rpc(OWNER(id), kind, 0, id, 0, val, len, out ? out : &dummy, out ? cap : 0, &n, NULL);
  if (outlen) *outlen = n;
  if (rc == -EMSGSIZE && out == NULL) rc = 0;
  return rc;
}

int ursa_dist_mutex_create(int home, ursa_dist_mutex_t *m) { return obj_create(home, O_MUTEX, 0, m ? &m->id : NULL); }
int ursa_dist_mutex_destroy(ursa_dist_mutex_t m) { return obj_destroy(m.id, O_MUTEX); }

int ursa_dist_mutex_lock(ursa_dist_mutex_t m) {
  if (!running()) return -ENOTCONN;
  if (m.id == 0 || OWNER(m.id) >= D.size) return -EINVAL;
  struct ursa__thread *self = ursa__self_thread();
  if (self == NULL) return -EPERM;
  uint64_t tok = (uint64_t)(uintptr_t)self;
  struct held *h = malloc(sizeof *h);
  if (h == NULL) return -ENOMEM;
  lock();
  for (struct held *x = D.held; x; x = x->next)
    if (x->obj == m.id && x->tok == tok) { unlock(); free(h); return -EDEADLK; }
  unlock();
  int rc = rpc(OWNER(m.id), K_LOCK, 0, m.id, tok, NULL, 0, NULL, 0, NULL, NULL);
  if (rc) { free(h); return rc; }
  h->obj = m.id;
  h->tok = tok;
  lock();
  h->next = D.held;
  D.held = h;
  unlock();
  return 0;
}

int ursa_dist_mutex_unlock(ursa_dist_mutex_t m) {
  if (!running()) return -ENOTCONN;
  if (m.id == 0 || OWNER(m.id) >= D.size) return -EINVAL;
  struct ursa__thread *self = ursa__self_thread();
  if (self == NULL) return -EPERM;
  uint64_t tok = (uint64_t)(uintptr_t)self;
  struct ctx c = {0};
  lock();
  struct held **pp = &D.held;
  while (*pp && !((*pp)->obj == m.id && (*pp)->tok == tok)) pp = &(*pp)->next;
  if (*pp == NULL) { unlock(); return -EPERM; }
  struct held *h = *pp;
  *pp = h->next;
  struct hdr u = {.kind = K_UNLOCK, .src = D.rank, .obj = m.id, .a = tok};
  if (OWNER(m.id) != D.rank) {                         /* unanswered: tramp's SYNC covers it */
    D.unl_sent[OWNER(m.id)]++;
    __atomic_store_n(&D.unl_out, D.unl_out + 1, __ATOMIC_RELAXED);   /* read unlocked by tramp */
  }
  post(&c, OWNER(m.id), &u, NULL);
  unlock();
  free(h);
  ctx_run(&c);
  flush_soon();
  return 0;
}

int ursa_dist_ivar_create(int home, ursa_dist_ivar_t *v) { return obj_create(home, O_IVAR, 0, v ? &v->id : NULL); }
int ursa_dist_ivar_destroy(ursa_dist_ivar_t v) { return obj_destroy(v.id, O_IVAR); }
int ursa_dist_ivar_write(ursa_dist_ivar_t v, const void *val, size_t len) {
  return obj_op(v.id, K_IS_WRITE, val, len, NULL, 0, NULL);
}
int ursa_dist_ivar_read(ursa_dist_ivar_t v, void *val, size_t cap, size_t *len) {
  return obj_op(v.id, K_IS_READ, NULL, 0, val, cap, len);
}
int ursa_dist_mvar_create(int home, ursa_dist_mvar_t *v) { return obj_create(home, O_MVAR, 0, v ? &v->id : NULL); }
int ursa_dist_mvar_destroy(ursa_dist_mvar_t v) { return obj_destroy(v.id, O_MVAR); }
int ursa_dist_mvar_put(ursa_dist_mvar_t v, const void *val, size_t len) {
  return obj_op(v.id, K_MS_PUT, val, len, NULL, 0, NULL);
}
int ursa_dist_mvar_take(ursa_dist_mvar_t v, void *val, size_t cap, size_t *len) {
  return obj_op(v.id, K_MS_TAKE, NULL, 0, val, cap, len);
}
int ursa_dist_barrier_create(int home, unsigned count, ursa_dist_barrier_t *b) {
  if (count == 0) return running() ? -EINVAL : -ENOTCONN;
  return obj_create(home, O_BARRIER, count, b ? &b->id : NULL);
}
int ursa_dist_barrier_destroy(ursa_dist_barrier_t b) { return obj_destroy(b.id, O_BARRIER); }
int ursa_dist_barrier_wait(ursa_dist_barrier_t b) { return obj_op(b.id, K_BAR_WAIT, NULL, 0, NULL, 0, NULL); }
int ursa_dist_barrier_all(void) {
  ursa_dist_barrier_t b = {(uint64_t)1 << 32};          /* object 0 of rank 0, generation 1 */
  return ursa_dist_barrier_wait(b);
}

/* ---- arrays distributed by block ---------------------------------------------------------------------- */

static int arr_create(uint64_t n, int type, uint64_t *id) {
  if (!running()) return -ENOTCONN;
  if (id == NULL || n == 0 || n > URSA_DIST_ARRAY_MAX) return -EINVAL;
  lock();
  uint64_t aid = ((uint64_t)D.rank << 48) | ++D.next_arr;
  unlock();
  int rc = 0, r;
  for (r = 0; r < D.size && rc == 0; r++)             /* a block on every rank (maybe empty) */
    rc = rpc(r, K_ACREATE, (unsigned)type, aid, n, NULL, 0, NULL, 0, NULL, NULL);
  if (rc) {                                           /* undo the blocks made */
    for (int k = 0; k < r - 1; k++) rpc(k, K_ADESTROY, 0, aid, 1, NULL, 0, NULL, 0, NULL, NULL);
    return rc;
  }
  *id = aid;
  return 0;
}

static int arr_destroy_all(uint64_t aid, uint64_t n) {
  if (!running()) return -ENOTCONN;
  if (aid == 0 || OWNER(aid) >= D.size || n == 0) return -EINVAL;
  int rc = 0, r;
  for (r = 0; r < D.size && rc == 0; r++) rc = rpc(r, K_ADESTROY, 0, aid, 0, NULL, 0, NULL, 0, NULL, NULL);
  if (rc) {                                           /* reopen the blocks closed */
    for (int k = 0; k < r - 1; k++) rpc(k, K_ADESTROY, 0, aid, 2, NULL, 0, NULL, 0, NULL, NULL);
    return rc;
  }
  for (r = 0; r < D.size; r++) rpc(r, K_ADESTROY, 0, aid, 1, NULL, 0, NULL, 0, NULL, NULL);
  return 0;
}

static int arr_home(uint64_t aid, uint64_t n, uint64_t i) {
  if (!running()) return -ENOTCONN;
  if (aid == 0 || OWNER(aid) >= D.size || n == 0) return -EINVAL;
  if (i >= n) return -ERANGE;
  uint64_t bs = (n + (uint64_t)D.size - 1) / (uint64_t)D.size;
  return (int)(i / bs);
}

static int arr_op(uint64_t aid, uint64_t n, uint64_t i, int kind, const void *val, size_t len, void *out, size_t cap,
                  size_t *outlen) {
  int home = arr_home(aid, n, i);
  if (home < 0) return home;
  if (len > URSA_DIST_RES_MAX || (len && val == NULL)) return -EINVAL;
  size_t got = 0;
  unsigned char dummy;
  int rc = rpc(home, kind, F_ELEM, aid, i, val, len, out ? out : &dummy, out ? cap : 0, &got, NULL);
  if (outlen) *outlen = got;
  if (rc == -EMSGSIZE && out == NULL) rc = 0;
  return rc;
}

int ursa_dist_marray_create(uint64_t n, ursa_dist_marray_t *a) {
  int rc = arr_create(n, O_MVAR, a ? &a->id : NULL);
  if (rc == 0) a->n = n;
  return rc;
}
int ursa_dist_marray_destroy(ursa_dist_marray_t a) { return arr_destroy_all(a.id, a.n); }
int ursa_dist_marray_home(ursa_dist_marray_t a, uint64_t i) { return arr_home(a.id, a.n, i); }
int ursa_dist_marray_put(ursa_dist_marray_t a, uint64_t i, const void *val, size_t len) {
  return arr_op(a.id, a.n, i, K_MS_PUT, val, len, NULL, 0, NULL);
}
int ursa_dist_marray_take(ursa_dist_marray_t a, uint64_t i, void *val, size_t cap, size_t *len) {
  return arr_op(a.id, a.n, i, K_MS_TAKE, NULL, 0, val, cap, len);
}
int ursa_dist_iarray_create(uint64_t n, ursa_dist_iarray_t *a) {
  int rc = arr_create(n, O_IVAR, a ? &a->id : NULL);
  if (rc == 0) a->n = n;
  return rc;
}
int ursa_dist_iarray_destroy(ursa_dist_iarray_t a) { return arr_destroy_all(a.id, a.n); }
int ursa_dist_iarray_home(ursa_dist_iarray_t a, uint64_t i) { return arr_home(a.id, a.n, i); }
int ursa_dist_iarray_write(ursa_dist_iarray_t a, uint64_t i, const void *val, size_t len) {
  return arr_op(a.id, a.n, i, K_IS_WRITE, val, len, NULL, 0, NULL);
}
int ursa_dist_iarray_read(ursa_dist_iarray_t a, uint64_t i, void *val, size_t cap, size_t *len) {
  return arr_op(a.id, a.n, i, K_IS_READ, NULL, 0, val, cap, len);
}

int ursa_dist_stats(ursa_dist_stats_t *out) {
  if (out == NULL) return -EINVAL;
  if (!running()) return -ENOTCONN;
  lock();
  out->polls = __atomic_load_n(&D.st.polls, __ATOMIC_RELAXED);          /* the progress thread's */
  out->idle_sleeps = __atomic_load_n(&D.st.idle_sleeps, __ATOMIC_RELAXED);
  out->spawned = D.st.spawned;
  out->unjoined = (uint64_t)D.nthr;
  out->sent = D.sent;
  out->received = D.recvd;
  unlock();
  return 0;
}

/* ---- the loop transport's runs ---------------------------------------------------------------------- */

/* L.lock held: no counted message moved for URSA_DIST_TIMEOUT_MS: the protocol is stuck. */
static void loop_stall(uint64_t t) {
  (void)t;
  fprintf(stderr, "ursa dist: loop transport, %d ranks, seed %llu: no message moved for URSA_DIST_TIMEOUT_MS=%llu "
                  "(%llu delivered): a deadlock of the protocol; pending requests:\n",
          L.n, (unsigned long long)L.seed, (unsigned long long)(L.stall_ns / 1000000), (unsigned long long)L.delivered);
  for (int r = 0; r < L.n; r++) {
    struct dstate *s = &L.st[r];
    fprintf(stderr, "  rank %d: main %s, %d live threads\n", r, s->main_done ? "in finalize" : "running", s->live);
    for (int i = 0; i < s->nslots; i++) {
      struct dreq *q = s->slots[i];
      if (q) fprintf(stderr, "    %s -> rank %d\n", kind_name[q->kind], q->dst == URSA_RANK_ANY ? 0 : q->dst);
    }
  }
  fail_stop(72);
}

struct loop_main { int (*fn)(void *); void *arg; struct dstate *st; int rc; };

static void *loop_main(void *p) {
  struct loop_main *m = p;
  ursa_setspecific(loop_key, m->st);
  m->rc = m->fn(m->arg);
  return NULL;
}

int ursa_dist_loop_run(int nranks, uint64_t seed, int (*fn)(void *arg), void *arg) {
  static int key_made;
  int rc = 0;
  if (nranks < 1 || nranks > URSA_DIST_LOOP_MAX || fn == NULL) return -EINVAL;
  if (ursa__self_thread() == NULL) return -EPERM;
  if (__atomic_load_n(&D_one.state, __ATOMIC_ACQUIRE) == 1 || L.active) return -EBUSY;
  uint64_t stall;
  if ((rc = env_us("URSA_DIST_TIMEOUT_MS", 5000, &stall)) != 0) return rc;
  register_kind();
  if (!key_made) {
    if ((rc = ursa_key_create(&loop_key, NULL)) != 0) return rc;
    key_made = 1;
    __atomic_store_n(&loop_used, true, __ATOMIC_RELAXED);   /* before any thread of the run exists */
  }
  struct loop_main *mains = calloc((size_t)nranks, sizeof *mains);
  ursa_thread_t *ts = calloc((size_t)nranks, sizeof *ts);
  L.st = calloc((size_t)nranks, sizeof *L.st);
  L.qh = calloc((size_t)nranks * (size_t)nranks, sizeof *L.qh);
  L.qt = calloc((size_t)nranks * (size_t)nranks, sizeof *L.qt);
  if (!mains || !ts || !L.st || !L.qh || !L.qt) {
    free(mains); free(ts); free(L.st); free(L.qh); free(L.qt);
    L.st = NULL; L.qh = L.qt = NULL;
    return -ENOMEM;
  }
  L.n = nranks;
  L.finished = 0;
  L.queued = 0;
  L.seed = seed;
  L.rng = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  if (L.rng == 0) L.rng = 1;
  L.delivered = 0;
  L.hash = 1469598103934665603ull;
  L.last_event = 0;
  L.stall_ns = stall * 1000000;
  L.active = true;
  int made = 0;
  for (int r = 0; r < nranks; r++) {
    L.st[r].rank = r;
    L.st[r].size = nranks;
    L.st[r].loop = true;
    mains[r] = (struct loop_main){fn, arg, &L.st[r], 0};
    if ((rc = ursa_create(&ts[r], NULL, loop_main, &mains[r])) != 0) break;
    made++;
  }
  for (int r = 0; r < made; r++) ursa_join(ts[r], NULL);
  for (int r = 0; rc == 0 && r < nranks; r++)
    if (mains[r].rc) rc = mains[r].rc;
  for (int q = 0; q < nranks * nranks; q++)
    while (L.qh[q]) { struct dmsg *m = L.qh[q]; L.qh[q] = m->next; free(m); }
  for (int r = 0; r < nranks; r++)
    while (L.st[r].in_head) { struct dmsg *m = L.st[r].in_head; L.st[r].in_head = m->next; free(m); }
  free(mains); free(ts); free(L.st); free(L.qh); free(L.qt);
  L.st = NULL; L.qh = L.qt = NULL;
  L.active = false;
  return rc;
}

int ursa_dist_loop_stats(uint64_t *delivered, uint64_t *order_hash) {
  if (delivered) *delivered = L.delivered;
  if (order_hash) *order_hash = L.hash;
  return 0;
}

int ursa_dist_attach(int rank) {
  if (ursa__self_thread() == NULL) return -EPERM;
  if (L.active) {
    if (rank < 0 || rank >= L.n) return -EINVAL;
    return ursa_setspecific(loop_key, &L.st[rank]);
  }
  if (!running()) return -ENOTCONN;
  return rank == D.rank ? 0 : -EINVAL;
}
