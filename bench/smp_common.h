/*
 * smp_common.h - what the SMP benchmarks (smp_*.c, radix_sort.c; issue #3) share beyond
 * bench_common.h: argument parsing (policy names, counts), the CPUs this process may use, and a
 * per-VP snapshot (ursa_stats_vp counters plus the kernel's accounting of each VP's kernel thread)
 * for the idle-time report.
 *
 * Besides RESULT lines (bench_common.h) these programs may print
 *
 *   VPSTAT bench=<name> impl=<impl> vp=<i> wall_ms=<f> switches=<n> idle_waits=<n> created=<n>
 *          cpu_ms=<f> runq_ms=<f> asleep_ms=<f>
 *
 * one per VP, for the interval of one measurement: the deltas of that VP's ursa_stats_vp counters
 * and the kernel's accounting of the VP's kernel thread: the time it was on a CPU (cpu_ms, from
 * its CPU-time clock, as pthread_getcpuclockid would give: running ursa threads or polling for
 * work), runnable but waiting for a CPU (runq_ms, from /proc/self/task/<tid>/schedstat: other
 * load on the machine), and the rest of the wall time (asleep_ms = wall - cpu - runq: blocked in
 * the kernel, i.e. the VP slept).  ursa keeps a per-VP idle-time figure internally but does not
 * export it (ursa_stats_t has no such field yet); this is the outside view of the same thing.
 * A VP's kernel thread id is learned by running a bound thread on it (smp_vp_tids_init).
 */
#ifndef SMP_COMMON_H
#define SMP_COMMON_H

#include "bench_common.h"
#include "ursa.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SMP_MAX_VPS 64

/* The CPUs this process may run on (what ursa's default VP count is). */
static inline unsigned smp_ncpus(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) return 1;
  return (unsigned)CPU_COUNT(&s);
}

/* A non-negative integer argument named `what`; exits with status 2 on garbage. */
static inline uint64_t smp_uint(const char *s, const char *what, const char *usage) {
  char *end = NULL;
  unsigned long long v;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') {
    fprintf(stderr, "bad %s '%s'\nusage: %s\n", what, s, usage);
    exit(2);
  }
  return (uint64_t)v;
}

/* URSA_SCHED_* for a policy name, or 0 for an unknown one. */
static inline int smp_policy(const char *name) {
  if (strcmp(name, "rotator") == 0) return URSA_SCHED_ROTATOR;
  if (strcmp(name, "lb2") == 0) return URSA_SCHED_LB2;
  if (strcmp(name, "global") == 0) return URSA_SCHED_GLOBAL;
  if (strcmp(name, "steal") == 0) return URSA_SCHED_STEAL;
  return 0;
}

/* A configuration with `vps` VPs and policy `sched` (0: the default); the rest default. */
static inline ursa_config_t smp_config(unsigned vps, int sched) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = vps;
  c.sched = sched;
  return c;
}

/* ursa_init(c); checks the library runs the VPs asked for. */
static inline void smp_init_cfg(const ursa_config_t *c) {
  BENCH_CHECK(ursa_init(c));
  if (ursa_vp_count() != c->vps) {
    fprintf(stderr, "bench: asked for %u VPs, ursa runs %u\n", c->vps, ursa_vp_count());
    exit(1);
  }
}

static inline void smp_init(unsigned vps, int sched) {
  ursa_config_t c = smp_config(vps, sched);
  smp_init_cfg(&c);
}

/* ---- per-VP snapshots --------------------------------------------------------------------------- */

struct smp_vp_snap {
  uint64_t     t_ns;                       /* CLOCK_MONOTONIC when taken */
  unsigned     n;
  ursa_stats_t s[SMP_MAX_VPS];
  uint64_t     cpu_ns[SMP_MAX_VPS];        /* schedstat field 1: on a CPU           */
  uint64_t     runq_ns[SMP_MAX_VPS];       /* schedstat field 2: runnable, waiting   */
};

static pid_t smp_vp_tid[SMP_MAX_VPS];      /* each VP's kernel thread id (0: unknown) */

static void *smp_tid_probe(void *arg) {
  *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
  return NULL;
}

/* Learns each VP's kernel thread id by running a bound thread on it.  Call from main after
 * ursa_init, before the measurement. */
static inline void smp_vp_tids_init(void) {
  unsigned i, n = ursa_vp_count();
  for (i = 0; i < n && i < SMP_MAX_VPS; i++) {
    ursa_attr_t a;
    ursa_thread_t t;
    BENCH_CHECK(ursa_attr_init(&a));
    BENCH_CHECK(ursa_attr_setvp(&a, (int)i));
    BENCH_CHECK(ursa_attr_setbound(&a, 1));
    BENCH_CHECK(ursa_create(&t, &a, smp_tid_probe, &smp_vp_tid[i]));
    BENCH_CHECK(ursa_join(t, NULL));
    BENCH_CHECK(ursa_attr_destroy(&a));
  }
}

/* The CPU-time clock of kernel thread tid of this process (what pthread_getcpuclockid gives:
 * Linux's encoding of a per-thread CPUCLOCK_SCHED clock).  Read from another thread it is exact:
 * the kernel adds the running slice, unlike schedstat, which a running thread updates at ticks. */
static inline clockid_t smp_thread_clock(pid_t tid) {
  return (clockid_t)((~(unsigned)tid) << 3) | 2 /* CPUCLOCK_SCHED */ | 4 /* per thread */;
}

/* A VP kernel thread's time on a CPU (cpu) and runnable but waiting for one (runq), in ns. */
static inline void smp_schedstat(pid_t tid, uint64_t *cpu, uint64_t *runq) {
  char path[64];
  unsigned long long a = 0, b = 0;
  struct timespec ts;
  FILE *f;
  *cpu = *runq = 0;
  if (tid == 0) return;
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
  if ((f = fopen(path, "r")) != NULL) {
    if (fscanf(f, "%llu %llu", &a, &b) == 2) { *cpu = a; *runq = b; }
    fclose(f);
  }
  if (clock_gettime(smp_thread_clock(tid), &ts) == 0)
    *cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void smp_vp_snapshot(struct smp_vp_snap *p) {
  unsigned i;
  p->n = ursa_vp_count();
  if (p->n > SMP_MAX_VPS) p->n = SMP_MAX_VPS;
  for (i = 0; i < p->n; i++) {
    BENCH_CHECK(ursa_stats_vp(i, &p->s[i]));
    smp_schedstat(smp_vp_tid[i], &p->cpu_ns[i], &p->runq_ns[i]);
  }
  p->t_ns = bench_now_ns();
}

/* One VPSTAT line per VP for the interval a..b. */
static inline void smp_vp_print(const char *bench, const char *impl, const struct smp_vp_snap *a,
                                const struct smp_vp_snap *b) {
  unsigned i;
  double wall = (double)(b->t_ns - a->t_ns) / 1e6;
  for (i = 0; i < a->n && i < b->n; i++) {
    double cpu = (double)(b->cpu_ns[i] - a->cpu_ns[i]) / 1e6;
    double rq = (double)(b->runq_ns[i] - a->runq_ns[i]) / 1e6;
    double asleep = wall - cpu - rq;
    if (asleep < 0) asleep = 0;
    printf("VPSTAT bench=%s impl=%s vp=%u wall_ms=%.3f switches=%llu idle_waits=%llu created=%llu "
           "cpu_ms=%.3f runq_ms=%.3f asleep_ms=%.3f\n",
           bench, impl, i, wall, (unsigned long long)(b->s[i].switches - a->s[i].switches),
           (unsigned long long)(b->s[i].idle_waits - a->s[i].idle_waits),
           (unsigned long long)(b->s[i].created - a->s[i].created),
           smp_vp_tid[i] ? cpu : -1.0, smp_vp_tid[i] ? rq : -1.0, smp_vp_tid[i] ? asleep : -1.0);
  }
  fflush(stdout);
}

#endif /* SMP_COMMON_H */
