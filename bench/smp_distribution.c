/*
 * smp_distribution.c - Lesser Bear's "cost of distribution" (Table 2 of the LB3 paper): a serial
 * program forks a large number of threads at once, and they must spread over every VP.
 *
 * ursa runs with N VPs and the policy named on the command line (ursa_config_t.sched).  main
 * (always on VP 0) reads the clock (t0), then creates 2^k unbound threads with default
 * attributes (so each starts on VP 0's queues and only the scheduler moves it), then blocks on a
 * semaphore.  Each thread, when it first runs, counts itself on the VP it runs on (one counter
 * per VP, its own cache line), computes for about W ns (a calibrated multiply-add chain: the
 * work a forked thread brings, so that a VP which keeps every thread is visibly slower than N
 * VPs sharing them), and blocks on a shared gate semaphore; it runs no more until the
 * measurement is over.  So "the threads VP i holds" = the threads that started on VP i.
 *
 *   fair share   F = floor(2^k / N)
 *   share        S = F - F/8   (slack: 1/8 of the fair share, so a split of 56/44 % still counts)
 *   distributed  the first moment every VP has started at least S threads
 *   fork done    the moment the last of the 2^k threads finished its W ns of work
 *
 *   value (bench smp-distribution) = distributed - t0, ms                          unit ms
 *   value (bench smp-fork-all)     = fork done - t0, ms                            unit ms
 *
 * The thread whose start (or end of work) completes a condition reads the clock.  A VP that never
 * reaches S means the policy did not distribute the fork: smp-distribution then reports the fork
 * done time and reached=0 (run.py counts such runs).  Also printed: per_vp=<threads started on
 * VP 0>,<VP 1>,..., created_ms (how long main took to create them all), and ideal_ms = S * W:
 * the least time in which one VP can start S threads that each compute W ns (the distribution
 * time of a perfect, free scheduler is about that).
 *
 * Checks (exit 1 on failure): every thread started exactly once and computed the right value,
 * the per-VP counts add up to 2^k, every thread is joined.  Stacks: 16 KiB (the smallest) as the
 * default size, with a stack cache of 2^k per VP; before the clock starts 2^k threads bound to
 * VP 0 run and finish there, so the measured creations take touched stacks from VP 0's pool (no
 * mmap, no page fault).
 *
 * With "gaps" as a fifth argument each thread also reads the clock when it starts and when its
 * work ends, and a line "GAPS vp=i n=... median_ns=... mean_ns=... work_median_ns=..." per VP
 * gives the gap between the end of one thread's work and the start of the next thread on that
 * VP: what a VP spends per thread besides the work (the program's counter and gate wait, the
 * switch, the scheduler's step, the next thread's start; and the two clock reads).  Gaps over 1 ms (the VP slept, or was
 * descheduled) are left out.  A per-thread figure from ~2^k samples per run, much steadier than
 * the distribution time on a noisy machine; the clock reads make the run itself ~2% slower.
 * work_median_ns on the same line: the median time of one thread's W ns of work on that VP (the
 * calibration's accuracy, and whether computing beside the other VP slows the work itself).
 *
 * With "repeat=R" (R >= 2) the warm-up and the measurement run R times in one process, and value,
 * created_ms and the fork-all time are the medians of the R; per_vp and "gaps" are the last
 * repetition's, reached=1 only if every repetition reached S, and reps=R is added to the lines.
 * A tool for comparing two builds of the library on a noisy machine (the repetitions of one
 * process spread several times less than separate processes do); make bench runs the single
 * fork, the paper's experiment.
 *
 * Usage: smp_distribution <rotator|lb2|global|steal> [N VPs = CPUs] [k = 12] [W = 2000 ns] [gaps] [repeat=R]
 */
#include "smp_common.h"

#define USAGE "smp_distribution <rotator|lb2|global|steal> [VPs = CPUs] [k = 12, 1..20] [work ns = 2000] [gaps] [repeat=R]"

struct counter { _Alignas(64) unsigned n; };

static struct counter started[SMP_MAX_VPS];
static unsigned vps_at_share;           /* atomic: VPs that have reached the share */
static unsigned finished_all;           /* atomic: threads that finished their work */
static unsigned nthreads, share, nvps;
static uint64_t t_share, t_all;
static unsigned char *ran;              /* per thread: times it started (must be 1) */
static ursa_sem_t gate, all_done;

static uint64_t work_iters;
static uint64_t *work_out;               /* per thread: the result of its work */
static uint64_t *t_begin, *t_end;        /* "gaps": per thread, when it started and ended its work */
static unsigned char *ran_on;            /* "gaps": per thread, the VP it started on */

static uint64_t work(uint64_t iters, uint64_t seed) {
  uint64_t x = seed, j;
  for (j = 0; j < iters; j++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    __asm__ volatile("" : "+r"(x));      /* keep the loop */
  }
  return x;
}

static void *member(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  int vp = ursa_vp_self();
  unsigned c;
  if (vp < 0 || (unsigned)vp >= nvps) bench_die("ursa_vp_self out of range", 0);
  ran[me]++;
  if (t_begin) {
    t_begin[me] = bench_now_ns();
    ran_on[me] = (unsigned char)vp;
  }
  c = __atomic_add_fetch(&started[vp].n, 1, __ATOMIC_ACQ_REL);
  if (c == share && __atomic_add_fetch(&vps_at_share, 1, __ATOMIC_ACQ_REL) == nvps)
    t_share = bench_now_ns();
  work_out[me] = work(work_iters, me);
  if (t_begin) t_end[me] = bench_now_ns();
  if (__atomic_add_fetch(&finished_all, 1, __ATOMIC_ACQ_REL) == nthreads) {
    t_all = bench_now_ns();
    BENCH_CHECK(ursa_sem_post(&all_done));
  }
  BENCH_CHECK(ursa_sem_wait(&gate));
  return NULL;
}

static void *nothing(void *arg) { return arg; }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* "gaps": per VP, the threads that started there in order of start; the gap from one's end of
 * work to the next one's start. */
static void print_gaps(void) {
  uint64_t *key = calloc(nthreads, sizeof *key), *gap = calloc(nthreads, sizeof *gap);
  uint64_t *busy = calloc(nthreads, sizeof *busy);
  unsigned v, i;
  if (key == NULL || gap == NULL || busy == NULL) bench_die("out of memory", ENOMEM);
  for (v = 0; v < nvps; v++) {
    unsigned n = 0, m = 0;
    double sum = 0;
    for (i = 0; i < nthreads; i++)            /* start time in the high bits, thread in the low 20 */
      if (ran_on[i] == v) {
        busy[n] = t_end[i] - t_begin[i];
        key[n++] = (t_begin[i] - t_begin[0] + (1ull << 40)) << 20 | i;
      }
    qsort(busy, n, sizeof *busy, cmp_u64);
    qsort(key, n, sizeof *key, cmp_u64);
    for (i = 0; i + 1 < n; i++) {
      unsigned a = (unsigned)(key[i] & 0xfffff), b = (unsigned)(key[i + 1] & 0xfffff);
      if (t_begin[b] >= t_end[a] && t_begin[b] - t_end[a] < 1000000) {
        gap[m] = t_begin[b] - t_end[a];
        sum += (double)gap[m++];
      }
    }
    qsort(gap, m, sizeof *gap, cmp_u64);
    printf("GAPS vp=%u n=%u median_ns=%llu mean_ns=%.0f work_median_ns=%llu\n", v, m,
           m ? (unsigned long long)gap[m / 2] : 0ull, m ? sum / m : 0.0, n ? (unsigned long long)busy[n / 2] : 0ull);
  }
  free(key);
  free(gap);
  free(busy);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  ursa_thread_t *th;
  ursa_attr_t attr;
  uint64_t t0, t_created;
  unsigned i, k = 12, sum = 0, fair, reps = 1, rep, all_reached = 1;
  uint64_t work_ns = 2000;
  int policy, gaps = 0;
  double *ms_share, *ms_created, *ms_all;
  char per_vp[SMP_MAX_VPS * 12] = "", impl[64], reps_field[32] = "";
  while (argc > 5) {                       /* "gaps" and "repeat=R", in either order */
    if (strcmp(argv[argc - 1], "gaps") == 0 && !gaps) gaps = 1;
    else if (strncmp(argv[argc - 1], "repeat=", 7) == 0 && reps == 1)
      reps = (unsigned)smp_uint(argv[argc - 1] + 7, "repeat", USAGE);
    else break;
    argc--;
  }
  if (argc < 2 || argc > 5 || reps < 1 || reps > 100000 || (policy = smp_policy(argv[1])) == 0) {
    fprintf(stderr, "usage: %s\n", USAGE);
    return 2;
  }
  nvps = argc > 2 ? (unsigned)smp_uint(argv[2], "VP count", USAGE) : smp_ncpus();
  if (argc > 3) k = (unsigned)smp_uint(argv[3], "k", USAGE);
  if (argc > 4) work_ns = smp_uint(argv[4], "work ns", USAGE);
  if (nvps < 1 || nvps > SMP_MAX_VPS || k < 1 || k > 20) {
    fprintf(stderr, "usage: %s\n", USAGE);
    return 2;
  }
  nthreads = 1u << k;
  fair = nthreads / nvps;
  share = fair - fair / 8;
  if (share == 0) share = 1;
  th = calloc(nthreads, sizeof *th);
  ran = calloc(nthreads, 1);
  work_out = calloc(nthreads, sizeof *work_out);
  ms_share = calloc(reps, sizeof *ms_share);
  ms_created = calloc(reps, sizeof *ms_created);
  ms_all = calloc(reps, sizeof *ms_all);
  if (th == NULL || ran == NULL || work_out == NULL || ms_share == NULL || ms_created == NULL || ms_all == NULL)
    bench_die("out of memory", ENOMEM);
  if (gaps) {
    t_begin = calloc(nthreads, sizeof *t_begin);
    t_end = calloc(nthreads, sizeof *t_end);
    ran_on = calloc(nthreads, 1);
    if (t_begin == NULL || t_end == NULL || ran_on == NULL) bench_die("out of memory", ENOMEM);
  }
  {                                      /* calibrate: iterations of work() per work_ns */
    /* The fastest of 6 probes: the first runs 2-5% slower than the others (the CPU is not yet at
     * speed), and a calibration from it alone gave threads 1.85-1.99 us of work instead of 2 us,
     * which made the ideal S x W look longer than it is and the rotator's ratio to it better. */
    uint64_t t = UINT64_MAX, probe = 4000000;
    int q;
    for (q = 0; q < 6; q++) {
      uint64_t a = bench_now_ns();
      (void)work(probe, 1);
      a = bench_now_ns() - a;
      if (a < t) t = a;
    }
    work_iters = (uint64_t)((double)probe * (double)work_ns / (double)(t ? t : 1));
  }

  {
    ursa_config_t c = smp_config(nvps, policy);
    c.stack_size = URSA_STACK_MIN;
    c.stack_cache = nthreads;
    smp_init_cfg(&c);
  }
  BENCH_CHECK(ursa_sem_init(&gate, 0));
  BENCH_CHECK(ursa_sem_init(&all_done, 0));

  for (rep = 0; rep < reps; rep++) {
    if (rep > 0) {                         /* a fresh start: counters, marks, the clock reads */
      memset(started, 0, sizeof started);
      memset(ran, 0, nthreads);
      vps_at_share = finished_all = 0;
      t_share = t_all = 0;
      sum = 0;
      per_vp[0] = '\0';
    }
    /* warm-up: 2^k threads bound to VP 0 map and touch 2^k stacks, which return to VP 0's pool */
    BENCH_CHECK(ursa_attr_init(&attr));
    BENCH_CHECK(ursa_attr_setvp(&attr, 0));
    BENCH_CHECK(ursa_attr_setbound(&attr, 1));
    for (i = 0; i < nthreads; i++) BENCH_CHECK(ursa_create(&th[i], &attr, nothing, NULL));
    for (i = 0; i < nthreads; i++) BENCH_CHECK(ursa_join(th[i], NULL));
    BENCH_CHECK(ursa_attr_destroy(&attr));

    t0 = bench_now_ns();
    for (i = 0; i < nthreads; i++) BENCH_CHECK(ursa_create(&th[i], NULL, member, (void *)(uintptr_t)i));
    t_created = bench_now_ns();
    BENCH_CHECK(ursa_sem_wait(&all_done));
    if (__atomic_load_n(&vps_at_share, __ATOMIC_ACQUIRE) < nvps) {
      t_share = t_all;
      all_reached = 0;
    }

    for (i = 0; i < nthreads; i++) BENCH_CHECK(ursa_sem_post(&gate));
    for (i = 0; i < nthreads; i++) BENCH_CHECK(ursa_join(th[i], NULL));

    for (i = 0; i < nvps; i++) {
      size_t len = strlen(per_vp);
      snprintf(per_vp + len, sizeof per_vp - len, "%s%u", i ? "," : "", started[i].n);
      sum += started[i].n;
    }
    for (i = 0; i < nthreads; i++)
      if (ran[i] != 1 || work_out[i] != work(work_iters, i)) {
        fprintf(stderr, "smp_distribution: thread %u started %u times, or its work is wrong\n", i, ran[i]);
        return 1;
      }
    if (sum != nthreads || finished_all != nthreads) {
      fprintf(stderr, "smp_distribution: %u threads counted, %u created\n", sum, nthreads);
      return 1;
    }
    ms_share[rep] = (double)(t_share - t0) / 1e6;
    ms_created[rep] = (double)(t_created - t0) / 1e6;
    ms_all[rep] = (double)(t_all - t0) / 1e6;
  }
  if (reps > 1) snprintf(reps_field, sizeof reps_field, " reps=%u", reps);
  snprintf(impl, sizeof impl, "ursa-%s-%uvp", ursa_sched_policy(), nvps);
  printf("RESULT bench=smp-distribution impl=%s value=%.4f unit=ms n=%u reached=%u share=%u "
         "per_vp=%s created_ms=%.4f work_ns=%llu ideal_ms=%.4f%s\n",
         impl, median(ms_share, reps), nthreads, all_reached, share, per_vp, median(ms_created, reps),
         (unsigned long long)work_ns, (double)share * (double)work_ns / 1e6, reps_field);
  printf("RESULT bench=smp-fork-all impl=%s value=%.4f unit=ms n=%u per_vp=%s%s\n",
         impl, median(ms_all, reps), nthreads, per_vp, reps_field);
  if (gaps) print_gaps();
  fflush(stdout);
  BENCH_CHECK(ursa_fini());
  free(th);
  free(ran);
  free(ms_share);
  free(ms_created);
  free(ms_all);
  return 0;
}
