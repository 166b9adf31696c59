/*
 * test_dist.c - the MPI layer's tests (libursa-dist, issue #19).  One program; every rank of
 * `mpiexec -n N ursa_dist_tests NAME` runs test NAME in process: ursa_init, ursa_dist_init, the
 * test, ursa_dist_finalize, ursa_fini.  A failed check prints the rank and line and exits 1, which
 * mpiexec turns into the job's failure.  CTest registers each test at 2 and 4 ranks (4 on 2 cores
 * is oversubscribed), some at 1 and 2 VPs (tests/dist/CMakeLists.txt).  No test depends on timing.
 */
#define _GNU_SOURCE
#include "ursa.h"
#include "ursa/dist.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The rank and size of the calling thread's rank: under MPI the process's; over the loop transport
 * (--loop) the simulated rank's, so the tests' code is the same for both. */
#define rank (ursa_dist_rank())
#define size (ursa_dist_size())
static uint64_t loop_seed;                 /* the loop run's seed, in failure messages */
static int loop_n;                         /* 0 under MPI */
static const char *loop_name = "";

static void fail_note(void) {
  if (loop_n) fprintf(stderr, "  (loop transport, %d ranks, seed %llu: rerun with ursa_dist_tests --loop %d %s %llu 1)\n",
                      loop_n, (unsigned long long)loop_seed, loop_n, loop_name, (unsigned long long)loop_seed);
  fflush(stderr);
}
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL rank %d: %s:%d: `%s`\n", rank, __FILE__, __LINE__, #c); \
                                  fail_note(); _exit(1); } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { \
    fprintf(stderr, "FAIL rank %d: %s:%d: %s == %lld, expected %s == %lld\n", rank, __FILE__, __LINE__, #a, a_, #b, b_); \
    fail_note(); _exit(1); } } while (0)
#define OK(call) CHECK_EQ((call), 0)

/* ---- registered functions ------------------------------------------------------------------------ */

/* "whoami": result = {the rank it ran on, the argument word} */
static ssize_t fn_whoami(const void *arg, size_t len, void *res, size_t cap) {
  int64_t out[2] = {ursa_dist_rank(), len == 8 ? *(const int64_t *)arg : -1};
  (void)cap;
  memcpy(res, out, sizeof out);
  return sizeof out;
}

/* "wait_ivar": waits for the I-structure in arg, returns its rank (keeps its rank loaded) */
static ssize_t fn_wait_ivar(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_ivar_t v;
  int64_t x = 0, r = ursa_dist_rank();
  size_t n;
  (void)cap;
  if (len != sizeof v) return -EINVAL;
  memcpy(&v, arg, sizeof v);
  int rc = ursa_dist_ivar_read(v, &x, sizeof x, &n);
  if (rc) return rc;
  memcpy(res, &r, sizeof r);
  return sizeof r;
}

/* "joiner": joins the thread in arg and returns its result */
static ssize_t fn_joiner(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_thread_t t;
  size_t n = 0;
  if (len != sizeof t) return -EINVAL;
  memcpy(&t, arg, sizeof t);
  int rc = ursa_dist_join(t, res, cap, &n);
  return rc ? rc : (ssize_t)n;
}

/* "box_joiner": reads a thread's handle from the I-structure in arg, joins it, returns its result */
static ssize_t fn_box_joiner(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_ivar_t box;
  ursa_dist_thread_t t;
  size_t n = 0;
  if (len != sizeof box) return -EINVAL;
  memcpy(&box, arg, sizeof box);
  int rc = ursa_dist_ivar_read(box, &t, sizeof t, &n);
  if (rc || n != sizeof t) return rc ? rc : -EPROTO;
  rc = ursa_dist_join(t, res, cap, &n);
  return rc ? rc : (ssize_t)n;
}

/* "open_join": {I-structure, thread}: writes the I-structure (which the thread waits on), then
 * joins the thread: its result and this join race to the join home */
struct open_join { ursa_dist_ivar_t gate; ursa_dist_thread_t t; };
static ssize_t fn_open_join(const void *arg, size_t len, void *res, size_t cap) {
  struct open_join o;
  int64_t one = 1;
  size_t n = 0;
  if (len != sizeof o) return -EINVAL;
  memcpy(&o, arg, sizeof o);
  int rc = ursa_dist_ivar_write(o.gate, &one, sizeof one);
  if (rc == 0) rc = ursa_dist_join(o.t, res, cap, &n);
  return rc ? rc : (ssize_t)n;
}

/* "lock_unlock": locks and unlocks the mutex in arg (its last act: an UNLOCK, which has no answer) */
static ssize_t fn_lock_unlock(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_mutex_t m;
  (void)res; (void)cap;
  if (len != sizeof m) return -EINVAL;
  memcpy(&m, arg, sizeof m);
  int rc = ursa_dist_mutex_lock(m);
  return rc ? rc : ursa_dist_mutex_unlock(m);
}

/* "fails": returns -EDOM */
static ssize_t fn_fails(const void *arg, size_t len, void *res, size_t cap) {
  (void)arg; (void)len; (void)res; (void)cap;
  return -EDOM;
}

/* "ivar_put": {ivar, value}: writes value to the I-structure */
struct ivput { ursa_dist_ivar_t v; int64_t value; };
static ssize_t fn_ivar_put(const void *arg, size_t len, void *res, size_t cap) {
  struct ivput p;
  (void)res; (void)cap;
  if (len != sizeof p) return -EINVAL;
  memcpy(&p, arg, sizeof p);
  return ursa_dist_ivar_write(p.v, &p.value, sizeof p.value);
}

/* "critical": {mutex, flag mvar, rounds}: in each round, lock; the flag (an M-structure holding
 * 0) must be 0 on entry: take it, put 1, yield a few times, take (must be 1), put 0; unlock.  Two
 * threads inside at once would see 1 on entry. */
struct crit { ursa_dist_mutex_t m; ursa_dist_mvar_t flag; int rounds; };
static ssize_t fn_critical(const void *arg, size_t len, void *res, size_t cap) {
  struct crit c;
  int64_t v, one = 1, zero = 0;
  size_t n;
  (void)res; (void)cap;
  if (len != sizeof c) return -EINVAL;
  memcpy(&c, arg, sizeof c);
  for (int i = 0; i < c.rounds; i++) {
    int rc = ursa_dist_mutex_lock(c.m);
    if (rc) return rc;
    if ((rc = ursa_dist_mvar_take(c.flag, &v, sizeof v, &n)) || v != 0) return rc ? rc : -EEXIST;
    if ((rc = ursa_dist_mvar_put(c.flag, &one, sizeof one))) return rc;
    for (int k = 0; k < 3; k++) ursa_yield();
    if ((rc = ursa_dist_mvar_take(c.flag, &v, sizeof v, &n)) || v != 1) return rc ? rc : -EEXIST;
    if ((rc = ursa_dist_mvar_put(c.flag, &zero, sizeof zero))) return rc;
    if ((rc = ursa_dist_mutex_unlock(c.m))) return rc;
  }
  return 0;
}

/* "fifo": {mutex, next mvar, k}: locks; the M-structure must hold k (the threads got the mutex in
 * the order of their requests); puts k + 1; unlocks */
struct fifo { ursa_dist_mutex_t m; ursa_dist_mvar_t next; int64_t k; };
static ssize_t fn_fifo(const void *arg, size_t len, void *res, size_t cap) {
  struct fifo f;
  int64_t v = -1;
  int rc;
  (void)res; (void)cap;
  if (len != sizeof f) return -EINVAL;
  memcpy(&f, arg, sizeof f);
  if ((rc = ursa_dist_mutex_lock(f.m))) return rc;
  if ((rc = ursa_dist_mvar_take(f.next, &v, sizeof v, NULL))) return rc;
  if (v != f.k) { fprintf(stderr, "FAIL: thread %lld got the mutex after %lld\n", (long long)f.k, (long long)v - 1); return -EPROTO; }
  v++;
  if ((rc = ursa_dist_mvar_put(f.next, &v, sizeof v))) return rc;
  return ursa_dist_mutex_unlock(f.m);
}

/* "counter": {mvar}: take, add 1, put (the M-structure is the lock) */
static ssize_t fn_counter(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_mvar_t m;
  int64_t v;
  size_t n;
  (void)res; (void)cap;
  if (len != sizeof m) return -EINVAL;
  memcpy(&m, arg, sizeof m);
  int rc = ursa_dist_mvar_take(m, &v, sizeof v, &n);
  if (rc) return rc;
  v++;
  return ursa_dist_mvar_put(m, &v, sizeof v);
}

/* "bar": {barrier, rounds}: waits at the barrier rounds times */
struct bar { ursa_dist_barrier_t b; int rounds; };
static ssize_t fn_bar(const void *arg, size_t len, void *res, size_t cap) {
  struct bar b;
  (void)res; (void)cap;
  if (len != sizeof b) return -EINVAL;
  memcpy(&b, arg, sizeof b);
  for (int i = 0; i < b.rounds; i++) {
    int rc = ursa_dist_barrier_wait(b.b);
    if (rc) return rc;
  }
  return 0;
}

/* "wildcard": creates a thread by URSA_RANK_ANY and joins it; returns its result */
static ssize_t fn_wildcard(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_thread_t t;
  size_t n = 0;
  int rc = ursa_dist_create(&t, URSA_RANK_ANY, "whoami", arg, len, 0);
  if (rc) return rc;
  rc = ursa_dist_join(t, res, cap, &n);
  return rc ? rc : (ssize_t)n;
}

/* "spin_forever": never yields (the stuck rank of dist_stuck_rank) */
static ssize_t fn_spin(const void *arg, size_t len, void *res, size_t cap) {
  (void)arg; (void)len; (void)res; (void)cap;
  for (volatile unsigned long i = 0;; i++) {}
  return 0;
}

/* "hop": runs a chain of detached threads around the ranks, counting the hops each rank ran */
static int hops_here;
static ssize_t fn_hop(const void *arg, size_t len, void *res, size_t cap) {
  int64_t left;
  (void)res; (void)cap;
  if (len != sizeof left) return -EINVAL;
  memcpy(&left, arg, sizeof left);
  __atomic_fetch_add(&hops_here, 1, __ATOMIC_RELAXED);
  ursa_sleep_ns(200000);                                 /* every main has long called finalize */
  if (left > 0) {
    left--;
    int rc = ursa_dist_create(NULL, (ursa_dist_rank() + 1) % ursa_dist_size(), "hop", &left, sizeof left,
                              URSA_DIST_DETACHED);
    if (rc) { fprintf(stderr, "FAIL: hop create: %d\n", rc); _exit(1); }
  }
  return 0;
}

/* "arr_bump": {M-array}: takes every cell, adds 1, puts it back (each cell is its own lock) */
static ssize_t fn_arr_bump(const void *arg, size_t len, void *res, size_t cap) {
  ursa_dist_marray_t a;
  (void)res; (void)cap;
  if (len != sizeof a) return -EINVAL;
  memcpy(&a, arg, sizeof a);
  for (uint64_t i = 0; i < a.n; i++) {
    int64_t v;
    size_t n = 0;
    int rc = ursa_dist_marray_take(a, i, &v, sizeof v, &n);
    if (rc || n != sizeof v) return rc ? rc : -EPROTO;
    v++;
    if ((rc = ursa_dist_marray_put(a, i, &v, sizeof v))) return rc;
  }
  return 0;
}

/* "arr_read": {I-array, index}: waits for the cell, returns its value */
struct aread { ursa_dist_iarray_t a; uint64_t i; };
static ssize_t fn_arr_read(const void *arg, size_t len, void *res, size_t cap) {
  struct aread r;
  int64_t v = -1;
  (void)cap;
  if (len != sizeof r) return -EINVAL;
  memcpy(&r, arg, sizeof r);
  int rc = ursa_dist_iarray_read(r.a, r.i, &v, sizeof v, NULL);
  if (rc) return rc;
  memcpy(res, &v, sizeof v);
  return sizeof v;
}

static void register_all(void) {
  OK(ursa_dist_register("whoami", fn_whoami));
  OK(ursa_dist_register("wait_ivar", fn_wait_ivar));
  OK(ursa_dist_register("joiner", fn_joiner));
  OK(ursa_dist_register("box_joiner", fn_box_joiner));
  OK(ursa_dist_register("open_join", fn_open_join));
  OK(ursa_dist_register("lock_unlock", fn_lock_unlock));
  OK(ursa_dist_register("fails", fn_fails));
  OK(ursa_dist_register("ivar_put", fn_ivar_put));
  OK(ursa_dist_register("critical", fn_critical));
  OK(ursa_dist_register("counter", fn_counter));
  OK(ursa_dist_register("bar", fn_bar));
  OK(ursa_dist_register("wildcard", fn_wildcard));
  OK(ursa_dist_register("spin_forever", fn_spin));
  OK(ursa_dist_register("hop", fn_hop));
  OK(ursa_dist_register("fifo", fn_fifo));
  OK(ursa_dist_register("arr_bump", fn_arr_bump));
  OK(ursa_dist_register("arr_read", fn_arr_read));
  OK(ursa_dist_register("whoami", fn_whoami));                  /* again, same: fine */
  CHECK_EQ(ursa_dist_register("whoami", fn_fails), -EEXIST);    /* taken */
  CHECK_EQ(ursa_dist_register("", fn_fails), -EINVAL);
  CHECK_EQ(ursa_dist_register("x", NULL), -EINVAL);
  if (rank == 0) OK(ursa_dist_register("only_on_0", fn_whoami));
}

/* ---- the tests ---------------------------------------------------------------------------------------- */

/* create on this rank, on every rank, results by value; join from another rank than the creator */
static void t_create_join(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  for (int r = 0; r < size; r++) {
    ursa_dist_thread_t t;
    int64_t arg = 100 + r, out[2] = {-1, -1};
    size_t n = 0;
    OK(ursa_dist_create(&t, r, "whoami", &arg, sizeof arg, 0));
    CHECK_EQ(ursa_dist_thread_rank(t), r);
    OK(ursa_dist_join(t, out, sizeof out, &n));
    CHECK_EQ(n, sizeof out);
    CHECK_EQ(out[0], r);
    CHECK_EQ(out[1], 100 + r);
  }
  /* a negative return reaches the joiner */
  ursa_dist_thread_t f;
  OK(ursa_dist_create(&f, size - 1, "fails", NULL, 0, 0));
  CHECK_EQ(ursa_dist_join(f, NULL, 0, NULL), -EDOM);
  /* join from another rank: A waits on an I-structure on the last rank; B, on rank 1 % size,
   * joins A; main writes the I-structure and joins B, which hands A's result on */
  ursa_dist_ivar_t v;
  ursa_dist_thread_t a, b;
  int64_t one = 1, got = -1;
  size_t n = 0;
  OK(ursa_dist_ivar_create(size - 1, &v));
  OK(ursa_dist_create(&a, size - 1, "wait_ivar", &v, sizeof v, 0));
  OK(ursa_dist_create(&b, 1 % size, "joiner", &a, sizeof a, 0));
  OK(ursa_dist_ivar_write(v, &one, sizeof one));
  OK(ursa_dist_join(b, &got, sizeof got, &n));
  CHECK_EQ(n, sizeof got);
  CHECK_EQ(got, size - 1);
  OK(ursa_dist_ivar_destroy(v));
  /* many at once: 50 threads on every rank, joined in reverse */
  enum { PER = 50 };
  ursa_dist_thread_t *ts = malloc(sizeof *ts * PER * (size_t)size);
  CHECK(ts != NULL);
  for (int i = 0; i < PER * size; i++) {
    int64_t arg = i;
    OK(ursa_dist_create(&ts[i], i % size, "whoami", &arg, sizeof arg, 0));
  }
  for (int i = PER * size - 1; i >= 0; i--) {
    int64_t out[2];
    OK(ursa_dist_join(ts[i], out, sizeof out, NULL));
    CHECK_EQ(out[0], i % size);
    CHECK_EQ(out[1], i);
  }
  free(ts);
}

/* URSA_RANK_ANY: threads that stay alive (waiting on one I-structure) spread over every rank;
 * a wildcard create from another rank than 0 works too */
static void t_wildcard(void) {
  if (rank != 0) return;
  ursa_dist_ivar_t v;
  int n = 4 * size, *per = calloc((size_t)size, sizeof *per);
  ursa_dist_thread_t *ts = malloc(sizeof *ts * (size_t)n);
  CHECK(per && ts);
  OK(ursa_dist_ivar_create(0, &v));
  for (int i = 0; i < n; i++) OK(ursa_dist_create(&ts[i], URSA_RANK_ANY, "wait_ivar", &v, sizeof v, 0));
  int64_t one = 1;
  OK(ursa_dist_ivar_write(v, &one, sizeof one));
  for (int i = 0; i < n; i++) {
    int64_t r = -1;
    OK(ursa_dist_join(ts[i], &r, sizeof r, NULL));
    CHECK(r >= 0 && r < size);
    CHECK_EQ(ursa_dist_thread_rank(ts[i]), r);
    per[r]++;
  }
  for (int r = 0; r < size; r++) CHECK(per[r] >= 1);       /* every rank got some */
  ursa_dist_thread_t w;
  int64_t arg = 7, out[2];
  OK(ursa_dist_create(&w, size - 1, "wildcard", &arg, sizeof arg, 0));
  OK(ursa_dist_join(w, out, sizeof out, NULL));
  CHECK(out[0] >= 0 && out[0] < size);
  CHECK_EQ(out[1], 7);
  free(per);
  free(ts);
}

/* detached threads everywhere: each writes its own I-structure and counts in an M-structure;
 * main of rank 0 reads them all; the job ends only once they have all finished */
static void t_detached(void) {
  if (rank != 0) return;
  enum { PER = 8 };
  int n = PER * size;
  ursa_dist_ivar_t *vs = malloc(sizeof *vs * (size_t)n);
  ursa_dist_mvar_t m;
  int64_t zero = 0, v;
  CHECK(vs != NULL);
  OK(ursa_dist_mvar_create(size - 1, &m));
  OK(ursa_dist_mvar_put(m, &zero, sizeof zero));
  for (int i = 0; i < n; i++) {
    OK(ursa_dist_ivar_create(i % size, &vs[i]));
    struct ivput p = {vs[i], 1000 + i};
    OK(ursa_dist_create(NULL, (i + 1) % size, "ivar_put", &p, sizeof p, URSA_DIST_DETACHED));
    OK(ursa_dist_create(NULL, URSA_RANK_ANY, "counter", &m, sizeof m, URSA_DIST_DETACHED));
  }
  for (int i = 0; i < n; i++) {
    size_t len = 0;
    OK(ursa_dist_ivar_read(vs[i], &v, sizeof v, &len));
    CHECK_EQ(len, sizeof v);
    CHECK_EQ(v, 1000 + i);
  }
  for (;;) {                                               /* the counter reaches n */
    OK(ursa_dist_mvar_take(m, &v, sizeof v, NULL));
    OK(ursa_dist_mvar_put(m, &v, sizeof v));
    if (v == n) break;
    CHECK(v < n);
    ursa_yield();
  }
  free(vs);
}

/* a machine-wide mutex: threads on every rank (two per rank) in critical sections that check
 * mutual exclusion; the mutex on the last rank, the flag on rank 0 */
static void t_mutex(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  struct crit c = {.rounds = 20};
  int64_t zero = 0;
  OK(ursa_dist_mutex_create(size - 1, &c.m));
  OK(ursa_dist_mvar_create(0, &c.flag));
  OK(ursa_dist_mvar_put(c.flag, &zero, sizeof zero));
  int n = 2 * size;
  ursa_dist_thread_t *ts = malloc(sizeof *ts * (size_t)n);
  CHECK(ts != NULL);
  for (int i = 0; i < n; i++) OK(ursa_dist_create(&ts[i], i % size, "critical", &c, sizeof c, 0));
  for (int i = 0; i < n; i++) CHECK_EQ(ursa_dist_join(ts[i], NULL, 0, NULL), 0);
  OK(ursa_dist_mutex_destroy(c.m));
  free(ts);
}

/* FIFO: main of rank 0 holds a mutex homed on the last rank; threads 0..N-1 of rank 0 ask for it
 * in that order (one VP: each runs up to its request before the next is created, and MPI keeps
 * the order of rank 0's messages); once main unlocks, they must get it in that order.  Run with
 * URSA_VPS=1 (CTest does). */
static void t_mutex_fifo(void) {
  if (rank != 0) return;
  enum { N = 24 };
  struct fifo f;
  int64_t zero = 0;
  ursa_dist_thread_t ts[N];
  OK(ursa_dist_mutex_create(size - 1, &f.m));
  OK(ursa_dist_mvar_create(size - 1, &f.next));
  OK(ursa_dist_mvar_put(f.next, &zero, sizeof zero));
  OK(ursa_dist_mutex_lock(f.m));
  for (int k = 0; k < N; k++) {
    f.k = k;
    OK(ursa_dist_create(&ts[k], 0, "fifo", &f, sizeof f, 0));
    for (int y = 0; y < 4; y++) ursa_yield();         /* it runs up to its lock request */
  }
  OK(ursa_dist_mutex_unlock(f.m));
  for (int k = 0; k < N; k++) CHECK_EQ(ursa_dist_join(ts[k], NULL, 0, NULL), 0);
}

/* I-structures: readers on every rank wait before the write and all get it; M-structures: one
 * take per put, producer and consumers on different ranks */
static void t_structures(void) {
  if (rank != 0) return;
  ursa_dist_ivar_t v;
  OK(ursa_dist_ivar_create(size - 1, &v));
  ursa_dist_thread_t ts[16];
  int n = size * 2 < 16 ? size * 2 : 16;
  for (int i = 0; i < n; i++) OK(ursa_dist_create(&ts[i], i % size, "wait_ivar", &v, sizeof v, 0));
  int64_t x = 42, y = 0;
  OK(ursa_dist_ivar_write(v, &x, sizeof x));
  for (int i = 0; i < n; i++) {
    int64_t r;
    OK(ursa_dist_join(ts[i], &r, sizeof r, NULL));
    CHECK_EQ(r, i % size);
  }
  size_t len = 0;
  OK(ursa_dist_ivar_read(v, &y, sizeof y, &len));      /* a read after the write */
  CHECK_EQ(y, 42);
  /* M-structure: counters on every rank increment one cell 10 times each, then it holds 10 * n */
  ursa_dist_mvar_t m;
  int64_t zero = 0;
  OK(ursa_dist_mvar_create(size - 1, &m));
  OK(ursa_dist_mvar_put(m, &zero, sizeof zero));
  ursa_dist_thread_t cs[40];
  int nc = 10 * size < 40 ? 10 * size : 40;
  for (int i = 0; i < nc; i++) OK(ursa_dist_create(&cs[i], i % size, "counter", &m, sizeof m, 0));
  for (int i = 0; i < nc; i++) OK(ursa_dist_join(cs[i], NULL, 0, NULL));
  OK(ursa_dist_mvar_take(m, &y, sizeof y, &len));
  CHECK_EQ(y, nc);
  /* a take that waits: the taker is created first, on another rank */
  ursa_dist_thread_t taker;
  OK(ursa_dist_create(&taker, size - 1, "counter", &m, sizeof m, 0));   /* waits: m is empty */
  OK(ursa_dist_mvar_put(m, &zero, sizeof zero));
  OK(ursa_dist_join(taker, NULL, 0, NULL));
  OK(ursa_dist_mvar_take(m, &y, sizeof y, &len));
  CHECK_EQ(y, 1);
}

/* barriers: the ranks' mains, rounds of ursa_dist_barrier_all with an M-structure count between;
 * a barrier object of 2 x size threads */
static void t_barrier(void) {
  for (int round = 0; round < 5; round++) OK(ursa_dist_barrier_all());
  if (rank == 0) {
    struct bar b = {.rounds = 10};
    OK(ursa_dist_barrier_create(size - 1, (unsigned)(2 * size), &b.b));
    ursa_dist_thread_t ts[16];
    int n = 2 * size < 16 ? 2 * size : 16;
    CHECK_EQ(n, 2 * size);
    for (int i = 0; i < n; i++) OK(ursa_dist_create(&ts[i], i % size, "bar", &b, sizeof b, 0));
    for (int i = 0; i < n; i++) OK(ursa_dist_join(ts[i], NULL, 0, NULL));
    OK(ursa_dist_barrier_destroy(b.b));
  }
}

static ursa_dist_thread_t join_target;
static int join_rank;
/* I- and M-structure arrays distributed by block: the cells' homes; threads on every rank bump
 * every cell of an M-array (take, +1, put); readers on every rank wait on I-array cells before
 * their writes; every bad input */
static void t_arrays(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  uint64_t n = 5u * (uint64_t)size + 3, bs = (n + (uint64_t)size - 1) / (uint64_t)size;
  ursa_dist_marray_t m;
  OK(ursa_dist_marray_create(n, &m));
  for (uint64_t i = 0; i < n; i++) CHECK_EQ(ursa_dist_marray_home(m, i), (int)(i / bs));
  CHECK_EQ(ursa_dist_marray_home(m, n - 1), size - 1);
  for (uint64_t i = 0; i < n; i++) {
    int64_t v = 10 * (int64_t)i;
    OK(ursa_dist_marray_put(m, i, &v, sizeof v));
  }
  int nt = 2 * size;
  ursa_dist_thread_t ts[8];
  for (int k = 0; k < nt; k++) OK(ursa_dist_create(&ts[k], k % size, "arr_bump", &m, sizeof m, 0));
  for (int k = 0; k < nt; k++) OK(ursa_dist_join(ts[k], NULL, 0, NULL));
  for (uint64_t i = 0; i < n; i++) {
    int64_t v = -1;
    size_t len = 0;
    OK(ursa_dist_marray_take(m, i, &v, sizeof v, &len));
    CHECK_EQ(len, sizeof v);
    CHECK_EQ(v, 10 * (int64_t)i + nt);
  }
  /* a take that waits (the cell is empty now) on the last rank's block; destroy is refused meanwhile */
  ursa_dist_marray_t one = {m.id, m.n};
  ursa_dist_marray_t sub;
  OK(ursa_dist_marray_create(n, &sub));
  int64_t zero = 0, v = -1;
  ursa_dist_thread_t bump;
  OK(ursa_dist_create(&bump, 0, "arr_bump", &sub, sizeof sub, 0));   /* waits on cell 0 */
  for (int y = 0; y < 4; y++) ursa_yield();
  for (uint64_t i = 0; i < n; i++) OK(ursa_dist_marray_put(sub, i, &zero, sizeof zero));
  OK(ursa_dist_join(bump, NULL, 0, NULL));
  OK(ursa_dist_marray_take(sub, n - 1, &v, sizeof v, NULL));
  CHECK_EQ(v, 1);
  /* bad input: index out of range, put to a full cell, a destroyed array, n 0 or too big */
  CHECK_EQ(ursa_dist_marray_put(m, n, &zero, sizeof zero), -ERANGE);
  CHECK_EQ(ursa_dist_marray_take(m, n + 100, &v, sizeof v, NULL), -ERANGE);
  CHECK_EQ(ursa_dist_marray_home(m, n), -ERANGE);
  OK(ursa_dist_marray_put(m, 0, &zero, sizeof zero));
  CHECK_EQ(ursa_dist_marray_put(m, 0, &zero, sizeof zero), -EBUSY);
  CHECK_EQ(ursa_dist_marray_put(m, n - 1, &zero, URSA_DIST_RES_MAX + 1), -EINVAL);
  CHECK_EQ(ursa_dist_marray_create(0, &sub), -EINVAL);
  CHECK_EQ(ursa_dist_marray_create(URSA_DIST_ARRAY_MAX + 1, &sub), -EINVAL);
  CHECK_EQ(ursa_dist_marray_create(4, NULL), -EINVAL);
  OK(ursa_dist_marray_destroy(m));
  CHECK_EQ(ursa_dist_marray_put(one, 1, &zero, sizeof zero), -EINVAL);
  CHECK_EQ(ursa_dist_marray_take(one, n - 1, &v, sizeof v, NULL), -EINVAL);
  CHECK_EQ(ursa_dist_marray_destroy(one), -EINVAL);
  /* I-array: readers wait on the last cells before the writes; a second write is an error */
  ursa_dist_iarray_t ia;
  OK(ursa_dist_iarray_create(n, &ia));
  struct aread rd[8];
  for (int k = 0; k < nt; k++) {
    rd[k] = (struct aread){ia, n - 1 - (uint64_t)k};
    OK(ursa_dist_create(&ts[k], (k + 1) % size, "arr_read", &rd[k], sizeof rd[k], 0));
  }
  /* destroy while a reader waits: refused, nothing destroyed.  The reader runs on this rank and,
   * with one VP, sends its read before the destroy leaves (FIFO per pair of ranks: it arrives
   * first) */
  struct aread last = {ia, n - 1};
  ursa_dist_thread_t lt;
  int64_t lr = -1;
  OK(ursa_dist_create(&lt, 0, "arr_read", &last, sizeof last, 0));
  for (int y = 0; y < 4; y++) ursa_yield();
  CHECK_EQ(ursa_dist_iarray_destroy(ia), -EBUSY);
  for (uint64_t i = 0; i < n; i++) {
    int64_t w = 7 * (int64_t)i;
    OK(ursa_dist_iarray_write(ia, i, &w, sizeof w));
  }
  for (int k = 0; k < nt; k++) {
    int64_t r = -1;
    OK(ursa_dist_join(ts[k], &r, sizeof r, NULL));
    CHECK_EQ(r, 7 * (int64_t)(n - 1 - (uint64_t)k));
  }
  OK(ursa_dist_join(lt, &lr, sizeof lr, NULL));
  CHECK_EQ(lr, 7 * (int64_t)(n - 1));
  int64_t w = 99, got = -1;
  CHECK_EQ(ursa_dist_iarray_write(ia, 3, &w, sizeof w), -EBUSY);
  OK(ursa_dist_iarray_read(ia, 3, &got, sizeof got, NULL));
  CHECK_EQ(got, 21);
  CHECK_EQ(ursa_dist_iarray_read(ia, n, &got, sizeof got, NULL), -ERANGE);
  ursa_dist_marray_t wrong = {ia.id, ia.n};                /* an I-array's handle as an M-array */
  CHECK_EQ(ursa_dist_marray_take(wrong, 0, &v, sizeof v, NULL), -EINVAL);
  OK(ursa_dist_iarray_destroy(ia));
  CHECK_EQ(ursa_dist_iarray_read(ia, 0, &got, sizeof got, NULL), -EINVAL);
  OK(ursa_dist_marray_destroy(sub));
  /* fewer cells than ranks: empty blocks on the last ranks */
  ursa_dist_iarray_t small;
  OK(ursa_dist_iarray_create(1, &small));
  CHECK_EQ(ursa_dist_iarray_home(small, 0), 0);
  OK(ursa_dist_iarray_write(small, 0, &w, sizeof w));
  OK(ursa_dist_iarray_read(small, 0, &got, sizeof got, NULL));
  CHECK_EQ(got, 99);
  OK(ursa_dist_iarray_destroy(small));
}

static void *join_helper(void *p) {
  (void)p;
  int rc = ursa_dist_attach(join_rank);        /* a thread of ursa_create: of no rank in a loop run */
  if (rc) return (void *)(intptr_t)rc;
  return (void *)(intptr_t)ursa_dist_join(join_target, NULL, 0, NULL);
}

static int loop_rank_main(void *arg);

/* every bad input gets its error on the caller */
static void t_bad_input(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  ursa_dist_thread_t t;
  int64_t x = 1;
  /* rank out of range */
  CHECK_EQ(ursa_dist_create(&t, size, "whoami", NULL, 0, 0), -EINVAL);
  CHECK_EQ(ursa_dist_create(&t, -2, "whoami", NULL, 0, 0), -EINVAL);
  ursa_dist_mutex_t m;
  CHECK_EQ(ursa_dist_mutex_create(size, &m), -EINVAL);
  CHECK_EQ(ursa_dist_mutex_create(-1, &m), -EINVAL);
  /* unregistered function: here, and registered here but not on the target */
  CHECK_EQ(ursa_dist_create(&t, 0, "no_such_fn", NULL, 0, 0), -ENOENT);
  if (size > 1) CHECK_EQ(ursa_dist_create(&t, 1, "only_on_0", NULL, 0, 0), -ENOENT);
  OK(ursa_dist_create(&t, 0, "only_on_0", NULL, 0, 0));
  OK(ursa_dist_join(t, NULL, 0, NULL));
  /* other bad arguments of create */
  CHECK_EQ(ursa_dist_create(&t, 0, "whoami", &x, URSA_DIST_ARG_MAX + 1, 0), -EINVAL);
  CHECK_EQ(ursa_dist_create(&t, 0, "whoami", NULL, 8, 0), -EINVAL);
  CHECK_EQ(ursa_dist_create(&t, 0, "whoami", NULL, 0, 99), -EINVAL);
  CHECK_EQ(ursa_dist_create(NULL, 0, "whoami", NULL, 0, 0), -EINVAL);
  /* double join, of a remote thread: after it was joined, and while another join waits */
  int r = size - 1;
  OK(ursa_dist_create(&t, r, "whoami", &x, sizeof x, 0));
  OK(ursa_dist_join(t, NULL, 0, NULL));
  CHECK_EQ(ursa_dist_join(t, NULL, 0, NULL), -EINVAL);
  /* two joins of one thread at once (two local ursa threads): whichever reaches the owner
   * first waits and gets the result, the other gets -EINVAL */
  ursa_dist_ivar_t v;
  ursa_dist_thread_t a;
  OK(ursa_dist_ivar_create(r, &v));
  OK(ursa_dist_create(&a, r, "wait_ivar", &v, sizeof v, 0));
  ursa_thread_t h1, h2;
  void *r1, *r2;
  join_target = a;
  join_rank = rank;
  OK(ursa_create(&h1, NULL, join_helper, NULL));
  OK(ursa_create(&h2, NULL, join_helper, NULL));
  for (int k = 0; k < 3; k++) ursa_yield();
  OK(ursa_dist_ivar_write(v, &x, sizeof x));
  OK(ursa_join(h1, &r1));
  OK(ursa_join(h2, &r2));
  int rc1 = (int)(intptr_t)r1, rc2 = (int)(intptr_t)r2;
  CHECK((rc1 == 0 && rc2 == -EINVAL) || (rc1 == -EINVAL && rc2 == 0));
  /* a thread that never existed; a null handle */
  ursa_dist_thread_t ghost = {((uint64_t)r << 48) | 0xffffffffull};
  CHECK_EQ(ursa_dist_join(ghost, NULL, 0, NULL), -ESRCH);
  ursa_dist_thread_t null = {0};
  CHECK_EQ(ursa_dist_join(null, NULL, 0, NULL), -ESRCH);
  /* result longer than the joiner's buffer */
  int64_t small;
  size_t len = 0;
  OK(ursa_dist_create(&t, r, "whoami", &x, sizeof x, 0));
  CHECK_EQ(ursa_dist_join(t, &small, sizeof small, &len), -EMSGSIZE);
  CHECK_EQ(len, 16);
  /* second I-structure write: an error to the writer, the first value stays */
  OK(ursa_dist_ivar_create(r, &v));
  int64_t y = 5, z = 6, got = 0;
  OK(ursa_dist_ivar_write(v, &y, sizeof y));
  CHECK_EQ(ursa_dist_ivar_write(v, &z, sizeof z), -EBUSY);
  OK(ursa_dist_ivar_read(v, &got, sizeof got, NULL));
  CHECK_EQ(got, 5);
  /* a second write by a thread on another rank */
  struct ivput p = {v, 9};
  OK(ursa_dist_create(&t, 0, "ivar_put", &p, sizeof p, 0));
  CHECK_EQ(ursa_dist_join(t, NULL, 0, NULL), -EBUSY);
  CHECK_EQ(ursa_dist_ivar_write(v, &z, URSA_DIST_RES_MAX + 1), -EINVAL);
  /* put to a full M-structure */
  ursa_dist_mvar_t mv;
  OK(ursa_dist_mvar_create(r, &mv));
  OK(ursa_dist_mvar_put(mv, &y, sizeof y));
  CHECK_EQ(ursa_dist_mvar_put(mv, &z, sizeof z), -EBUSY);
  OK(ursa_dist_mvar_take(mv, &got, sizeof got, NULL));
  CHECK_EQ(got, 5);
  /* unlocking a remote mutex not held; locking twice; destroying a held one */
  OK(ursa_dist_mutex_create(r, &m));
  CHECK_EQ(ursa_dist_mutex_unlock(m), -EPERM);
  OK(ursa_dist_mutex_lock(m));
  CHECK_EQ(ursa_dist_mutex_lock(m), -EDEADLK);
  CHECK_EQ(ursa_dist_mutex_destroy(m), -EBUSY);
  OK(ursa_dist_mutex_unlock(m));
  CHECK_EQ(ursa_dist_mutex_unlock(m), -EPERM);
  /* destroyed objects, and a handle of the wrong kind */
  OK(ursa_dist_mutex_destroy(m));
  CHECK_EQ(ursa_dist_mutex_lock(m), -EINVAL);
  CHECK_EQ(ursa_dist_mutex_destroy(m), -EINVAL);
  OK(ursa_dist_mvar_destroy(mv));
  CHECK_EQ(ursa_dist_mvar_put(mv, &y, sizeof y), -EINVAL);
  CHECK_EQ(ursa_dist_mvar_take(mv, &y, sizeof y, NULL), -EINVAL);
  ursa_dist_ivar_t wrong = {mv.id};
  CHECK_EQ(ursa_dist_ivar_read(wrong, &y, sizeof y, NULL), -EINVAL);
  ursa_dist_mvar_t bogus = {((uint64_t)r << 48) | (7ull << 32) | 12345};
  CHECK_EQ(ursa_dist_mvar_take(bogus, &y, sizeof y, NULL), -EINVAL);
  ursa_dist_barrier_t b;
  CHECK_EQ(ursa_dist_barrier_create(r, 0, &b), -EINVAL);
  CHECK_EQ(ursa_dist_stats(NULL), -EINVAL);
  CHECK_EQ(ursa_dist_attach(size), -EINVAL);
  CHECK_EQ(ursa_dist_attach(-1), -EINVAL);
  OK(ursa_dist_attach(rank));
  CHECK_EQ(ursa_dist_loop_run(2, 1, NULL, NULL), -EINVAL);
  CHECK_EQ(ursa_dist_loop_run(0, 1, loop_rank_main, NULL), -EINVAL);
  CHECK_EQ(ursa_dist_loop_run(URSA_DIST_LOOP_MAX + 1, 1, loop_rank_main, NULL), -EINVAL);
  CHECK_EQ(ursa_dist_loop_run(2, 1, loop_rank_main, NULL), -EBUSY);      /* the layer runs here */
}

/* ---- the join home: a joinable thread's result is pushed to its creator's rank ------------------- */

static uint64_t unjoined(void) {
  ursa_dist_stats_t st;
  OK(ursa_dist_stats(&st));
  return st.unjoined;
}

/* A handle made on rank 0 for a thread on rank 1 travels as bytes to rank 2 (as the argument of a
 * thread there, or through an I-structure homed there) and is joined there: the join goes to the
 * join home (rank 0).  Rounds by round % 4: 0 and 2, a thread that ends at once (its result is
 * at the home first); 3, one that waits on an I-structure that rank 0 writes once the joiner
 * exists (the join is at the home first); 1, the joiner itself writes that I-structure and then
 * joins (the thread's result and the join race to the home: over the loop transport's seeds both
 * orders happen).  Then the handle joined again on rank 0: -EINVAL.  With 2 ranks "rank 2" is
 * rank 0 (the join is the home's own). */
static void t_join_elsewhere(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  int owner = 1 % size, jr = 2 % size;
  for (int64_t round = 0; round < 8; round++) {
    bool gated = round % 2, by_box = round % 4 >= 2;
    ursa_dist_ivar_t gate, box;
    ursa_dist_thread_t t, j;
    if (gated) OK(ursa_dist_ivar_create(owner, &gate));
    if (by_box) {                                   /* the joiner first: it waits for the handle */
      OK(ursa_dist_ivar_create(jr, &box));
      OK(ursa_dist_create(&j, jr, "box_joiner", &box, sizeof box, 0));
    }
    if (gated) OK(ursa_dist_create(&t, owner, "wait_ivar", &gate, sizeof gate, 0));
    else OK(ursa_dist_create(&t, owner, "whoami", &round, sizeof round, 0));
    CHECK_EQ(ursa_dist_thread_rank(t), owner);
    if (by_box) OK(ursa_dist_ivar_write(box, &t, sizeof t));
    else if (gated) {
      struct open_join o = {gate, t};
      OK(ursa_dist_create(&j, jr, "open_join", &o, sizeof o, 0));
    } else OK(ursa_dist_create(&j, jr, "joiner", &t, sizeof t, 0));
    if (gated && by_box) OK(ursa_dist_ivar_write(gate, &round, sizeof round));
    int64_t out[2] = {-1, -1};
    size_t n = 0;
    OK(ursa_dist_join(j, out, sizeof out, &n));
    CHECK_EQ(n, gated ? 8 : 16);
    CHECK_EQ(out[0], owner);
    if (!gated) CHECK_EQ(out[1], round);
    CHECK_EQ(ursa_dist_join(t, NULL, 0, NULL), -EINVAL);          /* joined on rank 2 already */
    if (gated) OK(ursa_dist_ivar_destroy(gate));
    if (by_box) OK(ursa_dist_ivar_destroy(box));
  }
  CHECK_EQ(unjoined(), 0);
}

/* A thread on rank 1 unlocks a mutex homed on rank 2 and ends; its creator (rank 0) joins it and
 * destroys the mutex at once: the UNLOCK (1 -> 2) must be handled before the destroy (0 -> 2),
 * though the thread's RESULT went 1 -> 0 (the thread syncs with rank 2 before it pushes its
 * result).  With 2 ranks the mutex is on rank 0, the join home (FIFO on the pair 1 -> 0). */
static void t_unlock_join(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  for (int i = 0; i < 20; i++) {
    ursa_dist_mutex_t m;
    ursa_dist_thread_t t;
    OK(ursa_dist_mutex_create(2 % size, &m));
    OK(ursa_dist_create(&t, 1 % size, "lock_unlock", &m, sizeof m, 0));
    OK(ursa_dist_join(t, NULL, 0, NULL));
    OK(ursa_dist_mutex_destroy(m));
  }
}

/* Two joins of one thread from two different ranks (joiner threads on ranks 1 and 2, or 1 and 0
 * with 2 ranks) while it waits, then once it ended: one gets the result, the other -EINVAL. */
static void t_double_join(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0 || size < 2) return;
  int owner = size - 1;
  for (int round = 0; round < 2; round++) {
    ursa_dist_ivar_t gate;
    ursa_dist_thread_t a, j1, j2;
    int64_t one = 1;
    OK(ursa_dist_ivar_create(owner, &gate));
    OK(ursa_dist_create(&a, owner, "wait_ivar", &gate, sizeof gate, 0));
    if (round == 1) OK(ursa_dist_ivar_write(gate, &one, sizeof one));   /* may end before the joins */
    OK(ursa_dist_create(&j1, 1 % size, "joiner", &a, sizeof a, 0));
    OK(ursa_dist_create(&j2, 2 % size, "joiner", &a, sizeof a, 0));
    if (round == 0) OK(ursa_dist_ivar_write(gate, &one, sizeof one));
    int64_t g1 = -1, g2 = -1;
    size_t n1 = 0, n2 = 0;
    int rc1 = ursa_dist_join(j1, &g1, sizeof g1, &n1), rc2 = ursa_dist_join(j2, &g2, sizeof g2, &n2);
    CHECK((rc1 == 0 && rc2 == -EINVAL) || (rc1 == -EINVAL && rc2 == 0));
    if (rc1 == 0) { CHECK_EQ(n1, 8); CHECK_EQ(g1, owner); }
    else { CHECK_EQ(n2, 8); CHECK_EQ(g2, owner); }
    OK(ursa_dist_ivar_destroy(gate));
  }
  CHECK_EQ(unjoined(), 0);
}

/* A spawn refused by its target (-ENOENT: the name is registered on rank 0 only) leaves no join
 * record behind on the creator (and the job still ends: termination concludes). */
static void t_refused(void) {
  OK(ursa_dist_barrier_all());
  if (rank != 0) return;
  ursa_dist_thread_t t;
  uint64_t before = unjoined();
  for (int r = 1; r < size; r++) CHECK_EQ(ursa_dist_create(&t, r, "only_on_0", NULL, 0, 0), -ENOENT);
  CHECK_EQ(unjoined(), before);
  OK(ursa_dist_create(&t, 0, "only_on_0", NULL, 0, 0));
  CHECK_EQ(unjoined(), before + 1);
  OK(ursa_dist_join(t, NULL, 0, NULL));
  CHECK_EQ(unjoined(), before);
  /* a refusal after the arbiter picked a rank: some of these land on a rank without the name */
  int refused = 0;
  for (int i = 0; i < 2 * size; i++) {
    int rc = ursa_dist_create(&t, URSA_RANK_ANY, "only_on_0", NULL, 0, 0);
    CHECK(rc == 0 || rc == -ENOENT);
    if (rc == 0) OK(ursa_dist_join(t, NULL, 0, NULL));
    else refused++;
  }
  CHECK(size == 1 || refused > 0);
  CHECK_EQ(unjoined(), before);
  /* and a joinable thread never joined does not keep the job alive */
  OK(ursa_dist_create(&t, size - 1, "whoami", NULL, 0, 0));
}

/* Wildcard create + join from every rank at once; half the handles are joined on the next rank
 * (by a joiner thread there), half by the creator. */
static void t_wildcard_all(void) {
  OK(ursa_dist_barrier_all());
  enum { N = 12 };
  ursa_dist_thread_t ts[N], js[N];
  for (int i = 0; i < N; i++) {
    int64_t arg = rank * 1000 + i;
    OK(ursa_dist_create(&ts[i], URSA_RANK_ANY, "whoami", &arg, sizeof arg, 0));
    CHECK(ursa_dist_thread_rank(ts[i]) >= 0 && ursa_dist_thread_rank(ts[i]) < size);
    if (i % 2) OK(ursa_dist_create(&js[i], (rank + 1) % size, "joiner", &ts[i], sizeof ts[i], 0));
  }
  for (int i = N - 1; i >= 0; i--) {
    int64_t out[2] = {-1, -1};
    OK(ursa_dist_join(i % 2 ? js[i] : ts[i], out, sizeof out, NULL));
    CHECK_EQ(out[0], ursa_dist_thread_rank(ts[i]));
    CHECK_EQ(out[1], rank * 1000 + i);
  }
  CHECK_EQ(unjoined(), 0);
  OK(ursa_dist_barrier_all());
}

/* rank size-1 dies (SIGKILL) while rank 0 waits on it: the job must end non-zero (the CTest
 * wrapper checks the status; tests/dist/expect_fail.sh) */
static void t_rank_death(void) {
  OK(ursa_dist_barrier_all());
  if (rank == size - 1) raise(SIGKILL);
  if (rank == 0) {
    ursa_dist_ivar_t v;
    int64_t x;
    if (ursa_dist_ivar_create(size - 1, &v) == 0) ursa_dist_ivar_read(v, &x, sizeof x, NULL);
  }
  for (;;) ursa_sleep_ns(1000000);                       /* never ends by itself */
}

/* rank size-1's VP 0 runs a thread that never yields: rank 0's create there gets no answer and
 * the watchdog (URSA_DIST_TIMEOUT_MS, set by CTest) aborts the job, naming what was pending */
static void t_stuck_rank(void) {
  OK(ursa_dist_barrier_all());
  if (rank == size - 1) {
    ursa_dist_thread_t t;
    OK(ursa_dist_create(&t, rank, "spin_forever", NULL, 0, 0));   /* runs when main waits */
    ursa_dist_join(t, NULL, 0, NULL);
  }
  if (rank == 0) {
    ursa_dist_thread_t t;
    for (int i = 0; i < 1000000; i++) {
      OK(ursa_dist_create(&t, size - 1, "whoami", NULL, 0, 0));
      OK(ursa_dist_join(t, NULL, 0, NULL));
    }
  }
}

/* termination: a chain of 60 detached threads hops around the ranks while every main has already
 * called ursa_dist_finalize; finalize must return only after the last hop.  The program owns MPI
 * here (initialized before ursa_init), so after finalize it sums the hops with MPI_Reduce. */
static void t_termination(void) {
  if (rank == 0) {
    int64_t left = 59;
    OK(ursa_dist_create(NULL, 1 % size, "hop", &left, sizeof left, URSA_DIST_DETACHED));
  }
}

struct test { const char *name; void (*fn)(void); };
static const struct test tests[] = {
  {"create_join", t_create_join}, {"wildcard", t_wildcard}, {"detached", t_detached},
  {"mutex", t_mutex}, {"mutex_fifo", t_mutex_fifo}, {"structures", t_structures}, {"barrier", t_barrier}, {"arrays", t_arrays},
  {"bad_input", t_bad_input}, {"rank_death", t_rank_death}, {"stuck_rank", t_stuck_rank},
  {"termination", t_termination}, {"join_elsewhere", t_join_elsewhere}, {"double_join", t_double_join},
  {"refused", t_refused}, {"wildcard_all", t_wildcard_all}, {"unlock_join", t_unlock_join},
};

/* --loop: the main of each simulated rank */
static int loop_rank_main(void *arg) {
  const struct test *t = arg;
  OK(ursa_dist_init(NULL, NULL));
  CHECK(rank >= 0 && rank < size);
  CHECK_EQ(size, loop_n);
  register_all();
  OK(ursa_dist_barrier_all());
  t->fn();
  OK(ursa_dist_finalize());
  return 0;
}

/* ursa_dist_tests --loop N NAME FIRST COUNT: test NAME over the loop transport with N simulated
 * ranks, once per seed FIRST .. FIRST+COUNT-1 (a failure prints its seed; COUNT 1 replays it).
 * --replay N NAME SEED: runs the seed twice and checks that the network delivered the same
 * messages in the same order (with URSA_VPS=1 a seed names one run). */
static int loop_cli(int argc, char **argv, const struct test *tests_, size_t ntests) {
  bool replay = strcmp(argv[1], "--replay") == 0;
  if (argc < (replay ? 5 : 6)) { fprintf(stderr, "usage: ursa_dist_tests --loop N NAME FIRST COUNT | --replay N NAME SEED\n"); return 2; }
  const struct test *t = NULL;
  for (size_t i = 0; i < ntests; i++)
    if (strcmp(argv[3], tests_[i].name) == 0) t = &tests_[i];
  if (t == NULL || t->fn == t_rank_death || t->fn == t_stuck_rank) {
    fprintf(stderr, "ursa_dist_tests: %s: no such test over the loop transport\n", argv[3]);
    return 2;
  }
  loop_n = atoi(argv[2]);
  loop_name = t->name;
  uint64_t first = strtoull(argv[4], NULL, 10), count = replay ? 2 : strtoull(argv[5], NULL, 10);
  OK(ursa_init(NULL));
  uint64_t d0 = 0, h0 = 0;
  for (uint64_t i = 0; i < count; i++) {
    loop_seed = replay ? first : first + i;
    hops_here = 0;
    int rc = ursa_dist_loop_run(loop_n, loop_seed, loop_rank_main, (void *)t);
    if (rc) { fprintf(stderr, "FAIL: ursa_dist_loop_run: %d\n", rc); fail_note(); return 1; }
    if (t->fn == t_termination && hops_here != 60) {
      fprintf(stderr, "FAIL: %d hops ran before finalize returned, expected 60\n", hops_here);
      fail_note();
      return 1;
    }
    uint64_t d, h;
    ursa_dist_loop_stats(&d, &h);
    if (replay && i == 0) { d0 = d; h0 = h; }
    if (replay && i == 1 && (d != d0 || h != h0)) {
      fprintf(stderr, "FAIL: seed %llu delivered %llu messages (order %016llx), then %llu (order %016llx)\n",
              (unsigned long long)loop_seed, (unsigned long long)d0, (unsigned long long)h0,
              (unsigned long long)d, (unsigned long long)h);
      return 1;
    }
  }
  OK(ursa_fini());
  if (replay) printf("dist %s: seed %llu replayed (%llu messages in the same order) on %d loop ranks\n", t->name,
                     (unsigned long long)first, (unsigned long long)d0, loop_n);
  else printf("dist %s: ok on %d loop ranks, seeds %llu..%llu\n", t->name, loop_n, (unsigned long long)first,
              (unsigned long long)(first + count - 1));
  return 0;
}

int main(int argc, char **argv) {
  const struct test *t = NULL;
  if (argc >= 2 && (strcmp(argv[1], "--loop") == 0 || strcmp(argv[1], "--replay") == 0))
    return loop_cli(argc, argv, tests, sizeof tests / sizeof tests[0]);
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) printf("%s\n", tests[i].name);
    return 0;
  }
  for (size_t i = 0; argc >= 2 && i < sizeof tests / sizeof tests[0]; i++)
    if (strcmp(argv[1], tests[i].name) == 0) t = &tests[i];
  if (t == NULL) { fprintf(stderr, "usage: ursa_dist_tests NAME (--list)\n"); return 2; }
  int own_mpi = t->fn == t_termination, prov = 0;
  if (own_mpi) {                                         /* the program's own MPI */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov);
    CHECK(prov >= MPI_THREAD_FUNNELED);
  }
  /* before ursa_dist_init: -ENOTCONN (and init refused outside an ursa thread) */
  CHECK_EQ(ursa_dist_rank(), -ENOTCONN);
  CHECK_EQ(ursa_dist_init(&argc, &argv), -EPERM);
  OK(ursa_init(NULL));
  ursa_dist_thread_t th;
  ursa_dist_mutex_t mx = {1};
  CHECK_EQ(ursa_dist_create(&th, 0, "whoami", NULL, 0, 0), -ENOTCONN);
  CHECK_EQ(ursa_dist_mutex_lock(mx), -ENOTCONN);
  OK(ursa_dist_init(&argc, &argv));
  CHECK_EQ(ursa_dist_init(&argc, &argv), -EALREADY);
  CHECK(rank >= 0 && rank < size);
  register_all();
  OK(ursa_dist_barrier_all());                           /* every rank has registered */
  t->fn();
  int my_rank = rank, my_size = size;
  OK(ursa_dist_finalize());
  CHECK_EQ(ursa_dist_rank(), -ENOTCONN);
  OK(ursa_fini());
  if (own_mpi) {                                         /* MPI outlives the layer: count the hops */
    int total = 0;
    MPI_Reduce(&hops_here, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (my_rank == 0) CHECK_EQ(total, 60);
    MPI_Finalize();
  }
  if (my_rank == 0) printf("dist %s: ok on %d ranks\n", t->name, my_size);
  return 0;
}
