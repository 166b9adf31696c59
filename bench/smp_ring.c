/*
 * smp_ring.c - the thread-ring and the yield ping-pong of the single-VP micro-benchmarks, run with
 * N VPs (issue #3): what the SMP machinery (atomics, inboxes, the on-CPU byte, idle VPs) costs a
 * hand-off that is inherently sequential.
 *
 * ring (bench smp-ring): 503 unbound ursa threads with default attributes (they start on VP 0;
 *   the scheduler may spread them), one ursa_sem_t each, exactly as ursa_ring_sem.c: main posts
 *   thread 1's semaphore with token P; a thread woken with token t hands t - 1 to the next one; the
 *   thread that receives 0 posts main.  Before the clock starts every member has run and blocked
 *   (main waits until all 503 have counted themselves).  A woken thread runs on its waker's VP,
 *   so the token normally stays on one VP while the others sleep.
 *     value = ns per pass                                                 unit ns/pass
 *     answer = P mod 503 + 1 (checked; exit 1 when wrong)
 *
 * yield ping-pong (bench smp-yield-pingpong): two unbound threads A and B with default
 *   attributes each call ursa_yield() M times.  On one VP that is one switch per yield; with N
 *   VPs they may end up on different VPs, and a yield that finds nothing else to run returns at
 *   once.  Each thread reads the clock before its first and after its last yield;
 *     value = (last end - first start) / (2 M), ns per yield               unit ns/yield
 *   plus switches_per_yield (context switches over the interval / 2M: 1 = they alternated on one
 *   VP) and misses (yields after which the other thread had not run).  Checked: both made M.
 *
 * Also printed: switches_per_vp (context switches each VP made during the measurement).
 * The policy is ursa's default (or URSA_SCHED).
 *
 * Usage: smp_ring [N VPs = CPUs] [P = 10,000,000 passes] [M = 5,000,000 yields per thread]
 */
#include "smp_common.h"

#define USAGE "smp_ring [VPs = CPUs] [passes = 10000000] [yields per thread = 5000000]"
#define RING 503

static ursa_sem_t sems[RING], done, ready_sem;
static ursa_thread_t threads[RING];
static uint64_t token;
static long long answer = -1;
static int stopping;

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg, next = me + 1 == RING ? 0 : me + 1;
  BENCH_CHECK(ursa_sem_post(&ready_sem));
  for (;;) {
    BENCH_CHECK(ursa_sem_wait(&sems[me]));
    if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) return NULL;
    if (token == 0) {
      answer = me + 1;
      BENCH_CHECK(ursa_sem_post(&done));
      continue;
    }
    token--;
    BENCH_CHECK(ursa_sem_post(&sems[next]));
  }
}

static uint64_t n_yields;
static int turn;                         /* whose turn it is (relaxed atomics: may race on 2 VPs) */
static uint64_t misses[2], made[2], t_start[2], t_end[2];

static void *player(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t i, miss = 0;
  t_start[me] = bench_now_ns();
  for (i = 0; i < n_yields; i++) {
    if (__atomic_load_n(&turn, __ATOMIC_RELAXED) != me) miss++;
    __atomic_store_n(&turn, !me, __ATOMIC_RELAXED);
    BENCH_CHECK(ursa_yield());
  }
  t_end[me] = bench_now_ns();
  misses[me] = miss;
  made[me] = i;
  return NULL;
}

static void per_vp_switches(const struct smp_vp_snap *a, const struct smp_vp_snap *b, char *out, size_t size) {
  unsigned i;
  out[0] = '\0';
  for (i = 0; i < a->n; i++) {
    size_t len = strlen(out);
    snprintf(out + len, size - len, "%s%llu", i ? "," : "",
             (unsigned long long)(b->s[i].switches - a->s[i].switches));
  }
}

int main(int argc, char **argv) {
  unsigned nvps = smp_ncpus(), i;
  uint64_t passes = 10000000, t0, t1, sw = 0;
  struct smp_vp_snap s0, s1;
  char impl[32], spv[SMP_MAX_VPS * 24];
  ursa_thread_t a, b;
  int ok = 1;
  if (argc > 4) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  n_yields = 5000000;
  if (argc > 1) nvps = (unsigned)smp_uint(argv[1], "VP count", USAGE);
  if (argc > 2) passes = smp_uint(argv[2], "passes", USAGE);
  if (argc > 3) n_yields = smp_uint(argv[3], "yields", USAGE);
  if (nvps < 1 || nvps > SMP_MAX_VPS || passes < 1 || n_yields < 1) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  smp_init(nvps, 0);
  snprintf(impl, sizeof impl, "ursa-%uvp", nvps);

  /* ---- the ring ---- */
  BENCH_CHECK(ursa_sem_init(&done, 0));
  BENCH_CHECK(ursa_sem_init(&ready_sem, 0));
  for (i = 0; i < RING; i++) {
    BENCH_CHECK(ursa_sem_init(&sems[i], 0));
    BENCH_CHECK(ursa_create(&threads[i], NULL, member, (void *)(uintptr_t)i));
  }
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_sem_wait(&ready_sem));   /* every member has started */
  for (i = 0; i < 10; i++) BENCH_CHECK(ursa_yield());                  /* ... and blocked          */
  token = passes;
  smp_vp_snapshot(&s0);
  t0 = bench_now_ns();
  BENCH_CHECK(ursa_sem_post(&sems[0]));
  BENCH_CHECK(ursa_sem_wait(&done));
  t1 = bench_now_ns();
  smp_vp_snapshot(&s1);
  per_vp_switches(&s0, &s1, spv, sizeof spv);
  printf("RESULT bench=smp-ring impl=%s value=%.4f unit=ns/pass answer=%lld n=%llu policy=%s switches_per_vp=%s\n",
         impl, (double)(t1 - t0) / (double)passes, answer, (unsigned long long)passes,
         ursa_sched_policy(), spv);
  fflush(stdout);
  if (answer != bench_ring_answer(passes, RING)) {
    fprintf(stderr, "smp_ring: wrong answer %lld, expected %lld\n", answer, bench_ring_answer(passes, RING));
    ok = 0;
  }
  __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_sem_post(&sems[i]));
  for (i = 0; i < RING; i++) BENCH_CHECK(ursa_join(threads[i], NULL));

  /* ---- the yield ping-pong ---- */
  smp_vp_snapshot(&s0);
  BENCH_CHECK(ursa_create(&a, NULL, player, (void *)(intptr_t)0));
  BENCH_CHECK(ursa_create(&b, NULL, player, (void *)(intptr_t)1));
  BENCH_CHECK(ursa_join(a, NULL));
  BENCH_CHECK(ursa_join(b, NULL));
  smp_vp_snapshot(&s1);
  for (i = 0; i < s0.n; i++) sw += s1.s[i].switches - s0.s[i].switches;
  per_vp_switches(&s0, &s1, spv, sizeof spv);
  {
    uint64_t start = t_start[0] < t_start[1] ? t_start[0] : t_start[1];
    uint64_t end = t_end[0] > t_end[1] ? t_end[0] : t_end[1];
    printf("RESULT bench=smp-yield-pingpong impl=%s value=%.4f unit=ns/yield n=%llu policy=%s "
           "switches_per_yield=%.3f misses=%llu switches_per_vp=%s\n",
           impl, (double)(end - start) / (double)(2 * n_yields), (unsigned long long)(2 * n_yields),
           ursa_sched_policy(), (double)sw / (double)(2 * n_yields),
           (unsigned long long)(misses[0] + misses[1]), spv);
  }
  if (made[0] != n_yields || made[1] != n_yields) {
    fprintf(stderr, "smp_ring: ping-pong made %llu + %llu yields, expected %llu each\n",
            (unsigned long long)made[0], (unsigned long long)made[1], (unsigned long long)n_yields);
    ok = 0;
  }
  fflush(stdout);
  BENCH_CHECK(ursa_fini());
  return ok ? 0 : 1;
}
