/*
 * pt_sched_ring.c - stackless threads scheduled by ursa (ursa/pt_sched.h), on one VP: the
 * thread-ring, the bytes of a stackless thread, and 10,000,000 live stackless threads.
 *
 *   ring [N]     503 stackless threads, an ursa_pts_sem each, on VP 0's executor.  Thread 1 starts
 *                with token N; a thread that takes a unit of its semaphore ends and reports its
 *                id when the token is 0, else hands token - 1 on (posts the next semaphore) and
 *                waits again: one pass.  Answer = N mod 503 + 1.  A post makes exactly the next
 *                thread ready, so no visit order is involved (bench/pt_ring.c polls in the
 *                hand-written optimum and pessimum orders).  The clock runs from the first post
 *                to the join of the reporting thread, once every member waits.
 *                value = ns per pass                                      unit ns/pass
 *   bytes        sizeof(struct ursa_pts): a stackless thread's whole state  unit bytes/thread
 *   live [K]     K stackless threads (default 10,000,000) in one calloc'ed array, each waiting on
 *                one shared semaphore; VmRSS growth from before the array to when all K wait.
 *                value = bytes of RSS per live thread                     unit bytes/thread
 *   live-time [K]  the same run, timed: spawn K, run each to its wait, post K units, join K.
 *                value = ns per thread                                    unit ns/thread
 *
 * Usage: pt_sched_ring [ring|bytes|live|live-time] [N]   (default: all four)
 */
#include "bench_common.h"
#include "ursa.h"
#include "ursa/pt_sched.h"

#define RING 503

static struct ursa_pts ring_t[RING];
static struct ursa_pts_sem ring_s[RING];
static uint64_t token;
static long long answer = -1, reported = -1;    /* reported: the answer of the timed run */

static URSA_PT_THREAD(member(struct ursa_pts *self)) {
  URSA_PTS_BEGIN(self);
  for (;;) {
    URSA_PTS_SEM_WAIT(self, &ring_s[(uintptr_t)self->arg]);
    if (token == 0) {
      answer = (long long)(uintptr_t)self->arg + 1;
      URSA_PTS_EXIT(self);
    }
    token--;
    URSA_PTS_SEM_POST(self, &ring_s[(uintptr_t)self->arg + 1 == RING ? 0 : (uintptr_t)self->arg + 1]);
  }
  URSA_PTS_END(self);
}

static double ring(uint64_t n) {
  uint64_t t0, t1;
  unsigned i;
  for (i = 0; i < RING; i++) {
    BENCH_CHECK(ursa_pts_sem_init(&ring_s[i], 0));
    BENCH_CHECK(ursa_pts_spawn(&ring_t[i], URSA_VP_SELF, member, (void *)(uintptr_t)i));
  }
  while (ursa_pts_state(&ring_t[RING - 1]) != URSA_PTS_WAITING) BENCH_CHECK(ursa_yield());
  token = n;
  t0 = bench_now_ns();
  BENCH_CHECK(ursa_pts_sem_post(&ring_s[0]));
  BENCH_CHECK(ursa_pts_join(&ring_t[n % RING]));
  t1 = bench_now_ns();
  reported = answer;
  for (i = 0; i < RING; i++) {                      /* end the others: a token of 0 each */
    if (i == n % RING) continue;
    BENCH_CHECK(ursa_pts_sem_post(&ring_s[i]));
    BENCH_CHECK(ursa_pts_join(&ring_t[i]));
  }
  return (double)(t1 - t0) / (double)n;
}

static struct ursa_pts_sem gate;
static uint64_t started;

static URSA_PT_THREAD(sleeper(struct ursa_pts *self)) {
  URSA_PTS_BEGIN(self);
  started++;
  URSA_PTS_SEM_WAIT(self, &gate);
  URSA_PTS_END(self);
}

/* K live threads: returns RSS bytes per thread; *ns gets the whole run's ns per thread. */
static double live(uint64_t k, double *ns) {
  long rss0 = bench_vmrss_kib(), rss1;
  uint64_t t0 = bench_now_ns(), i;
  struct ursa_pts *t = calloc(k, sizeof *t);
  if (t == NULL) bench_die("calloc", ENOMEM);
  BENCH_CHECK(ursa_pts_sem_init(&gate, 0));
  for (i = 0; i < k; i++) BENCH_CHECK(ursa_pts_spawn(&t[i], URSA_VP_SELF, sleeper, NULL));
  while (started < k) BENCH_CHECK(ursa_yield());            /* every one waits on gate */
  rss1 = bench_vmrss_kib();
  for (i = 0; i < k; i++) BENCH_CHECK(ursa_pts_sem_post(&gate));
  for (i = 0; i < k; i++) BENCH_CHECK(ursa_pts_join(&t[i]));
  *ns = (double)(bench_now_ns() - t0) / (double)k;
  free(t);
  return (double)(rss1 - rss0) * 1024.0 / (double)k;
}

static int run(const char *mode, uint64_t n) {
  ursa_config_t c;
  int ok = 1;
  memset(&c, 0, sizeof c);
  c.vps = 1;
  BENCH_CHECK(ursa_init(&c));
  if (strcmp(mode, "bytes") == 0) {
    bench_result("pts-bytes", "ursa-pts", (double)sizeof(struct ursa_pts), "bytes/thread", -1, n);
  } else if (strcmp(mode, "ring") == 0) {
    double v = ring(n);
    bench_result("pts-ring", "ursa-pts", v, "ns/pass", reported, n);
    ok = reported == bench_ring_answer(n, RING);
  } else {
    double ns, bytes = live(n, &ns);
    struct bench_name name = bench_count_name(mode[4] ? "pts-live-time" : "pts-live", n);
    if (mode[4]) bench_result(name.s, "ursa-pts", ns, "ns/thread", -1, n);
    else bench_result(name.s, "ursa-pts", bytes, "bytes/thread", -1, n);
  }
  BENCH_CHECK(ursa_pts_fini());
  BENCH_CHECK(ursa_fini());
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int is_live = strcmp(mode, "live") == 0 || strcmp(mode, "live-time") == 0;
  uint64_t dflt = strcmp(mode, "ring") == 0 ? 10000000 : is_live ? 10000000 : RING;
  if (argc == 1) return run("ring", 10000000) | run("bytes", RING) | run("live", 10000000);
  if (argc > 3 || (strcmp(mode, "ring") != 0 && strcmp(mode, "bytes") != 0 && !is_live)) {
    fprintf(stderr, "usage: %s [ring|bytes|live|live-time] [N > 0]\n", argv[0]);
    return 2;
  }
  return run(mode, bench_arg(argc - 1, argv + 1, dflt));
}
