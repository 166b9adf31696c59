/*
 * smp_groups.c - two independent CPU-bound groups of threads: does ursa turn N VPs into N times
 * the throughput when the work is parallel and shares nothing?  (issue #3; the PCM paper's
 * regions: one region per group, regions on different VPs.)
 *
 * G = 2 groups of 4 threads.  Every thread runs C chunks of W steps of a 64-bit LCG (a dependent
 * multiply-add chain: pure CPU, no memory traffic) and calls ursa_yield() between chunks, so the
 * threads of a VP interleave.  Each thread's state is its own cache line; the groups share nothing.
 * Variants (first argument):
 *   1vp       one VP: the cooperative core, the baseline
 *   regions   N VPs; group g is a region (ursa_region_init(&r, g mod N)), its threads created in it:
 *             group g runs only on VP g mod N, its threads never run at the same time
 *   unbound   N VPs; default attributes (every thread starts on main's VP 0; the scheduler may
 *             move it)
 *   any       N VPs; URSA_VP_ANY placement (least loaded VP at creation), unbound
 * main reads the clock, creates the 8 threads, joins them, reads the clock.
 *   value = ms for the whole run                                          unit ms
 *   impl  = ursa-1vp, regions-<N>vp, unbound-<N>vp, any-<N>vp
 *   mops  = million LCG steps per second (all threads)
 *   per_vp = chunks run on each VP (each thread counts its chunks on ursa_vp_self())
 * run.py divides the 1vp time by a variant's time: the speed-up.
 * Checked (exit 1): every thread's final state equals the LCG jumped ahead C*W steps (computed
 * in O(log) steps), every thread ran C chunks, and in the regions variant no two threads of a
 * group ever ran at once (a per-group "inside" flag) and each group stayed on its VP.
 *
 * Usage: smp_groups <1vp|regions|unbound|any> [N VPs = CPUs] [C = 200 chunks] [W = 200,000 steps]
 */
#include "smp_common.h"

#define USAGE "smp_groups <1vp|regions|unbound|any> [VPs = CPUs] [chunks = 200] [steps per chunk = 200000]"
#define GROUPS 2
#define PER_GROUP 4
#define NTHREADS (GROUPS * PER_GROUP)
#define LCG_A 6364136223846793005u
#define LCG_C 1442695040888963407u

struct tstate {
  _Alignas(64) uint64_t x;
  uint64_t chunks;
  unsigned group;
  uint64_t per_vp[SMP_MAX_VPS];
};

static struct tstate ts[NTHREADS];
static uint64_t n_chunks, n_steps;
static int use_regions;
static struct { _Alignas(64) int inside; int overlap; int wrong_vp; int vp; } gstate[GROUPS];

static void *worker(void *arg) {
  struct tstate *s = arg;
  uint64_t c, j, x = s->x;
  for (c = 0; c < n_chunks; c++) {
    int vp = ursa_vp_self();
    if (use_regions) {
      if (gstate[s->group].inside++) gstate[s->group].overlap = 1;   /* no lock: the region's rule */
      if (vp != gstate[s->group].vp) gstate[s->group].wrong_vp = 1;
    }
    for (j = 0; j < n_steps; j++) {
      x = x * LCG_A + LCG_C;
      __asm__ volatile("" : "+r"(x));
    }
    if (vp >= 0 && vp < SMP_MAX_VPS) s->per_vp[vp]++;
    s->chunks++;
    if (use_regions) gstate[s->group].inside--;
    BENCH_CHECK(ursa_yield());
  }
  s->x = x;
  return NULL;
}

/* x after n LCG steps, by squaring the affine map (a, c): x -> a x + c. */
static uint64_t lcg_jump(uint64_t x, uint64_t n) {
  uint64_t a = LCG_A, c = LCG_C, ra = 1, rc = 0;
  while (n) {
    if (n & 1) { ra = ra * a; rc = rc * a + c; }
    c = c * (a + 1);
    a = a * a;
    n >>= 1;
  }
  return ra * x + rc;
}

int main(int argc, char **argv) {
  unsigned nvps = smp_ncpus(), i, g;
  ursa_thread_t th[NTHREADS];
  ursa_region_t regions[GROUPS];
  ursa_attr_t attr[GROUPS];
  uint64_t t0, t1, per_vp[SMP_MAX_VPS] = { 0 };
  const char *variant;
  char impl[32], pv[SMP_MAX_VPS * 24] = "";
  int ok = 1, any = 0;
  if (argc < 2 || argc > 5) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  variant = argv[1];
  n_chunks = 200;
  n_steps = 200000;
  if (argc > 2) nvps = (unsigned)smp_uint(argv[2], "VP count", USAGE);
  if (argc > 3) n_chunks = smp_uint(argv[3], "chunks", USAGE);
  if (argc > 4) n_steps = smp_uint(argv[4], "steps", USAGE);
  if (strcmp(variant, "1vp") == 0) nvps = 1;
  else if (strcmp(variant, "regions") == 0) use_regions = 1;
  else if (strcmp(variant, "any") == 0) any = 1;
  else if (strcmp(variant, "unbound") != 0) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  if (nvps < 1 || nvps > SMP_MAX_VPS || n_chunks < 1) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }

  smp_init(nvps, 0);
  for (g = 0; g < GROUPS; g++) {
    BENCH_CHECK(ursa_attr_init(&attr[g]));
    if (use_regions) {
      gstate[g].vp = (int)(g % nvps);
      BENCH_CHECK(ursa_region_init(&regions[g], gstate[g].vp));
      BENCH_CHECK(ursa_attr_setregion(&attr[g], &regions[g]));
    } else if (any) {
      BENCH_CHECK(ursa_attr_setvp(&attr[g], URSA_VP_ANY));
    }
  }
  for (i = 0; i < NTHREADS; i++) {
    ts[i].x = 1000 + i;
    ts[i].group = i / PER_GROUP;
  }
  t0 = bench_now_ns();
  for (i = 0; i < NTHREADS; i++) BENCH_CHECK(ursa_create(&th[i], &attr[ts[i].group], worker, &ts[i]));
  for (i = 0; i < NTHREADS; i++) BENCH_CHECK(ursa_join(th[i], NULL));
  t1 = bench_now_ns();

  for (i = 0; i < NTHREADS; i++) {
    unsigned v;
    if (ts[i].chunks != n_chunks || ts[i].x != lcg_jump(1000 + i, n_chunks * n_steps)) {
      fprintf(stderr, "smp_groups: thread %u: %llu chunks, wrong state\n", i, (unsigned long long)ts[i].chunks);
      ok = 0;
    }
    for (v = 0; v < nvps; v++) per_vp[v] += ts[i].per_vp[v];
  }
  for (g = 0; g < GROUPS; g++) {
    if (gstate[g].overlap || gstate[g].wrong_vp) {
      fprintf(stderr, "smp_groups: region %u: %s\n", g,
              gstate[g].overlap ? "two threads ran at once" : "a thread ran on another VP");
      ok = 0;
    }
    if (use_regions) BENCH_CHECK(ursa_region_destroy(&regions[g]));
    BENCH_CHECK(ursa_attr_destroy(&attr[g]));
  }
  for (i = 0; i < nvps; i++) {
    size_t len = strlen(pv);
    snprintf(pv + len, sizeof pv - len, "%s%llu", i ? "," : "", (unsigned long long)per_vp[i]);
  }
  snprintf(impl, sizeof impl, "%s-%uvp", nvps == 1 ? "ursa" : variant, nvps);
  printf("RESULT bench=smp-groups impl=%s value=%.4f unit=ms n=%llu mops=%.1f policy=%s per_vp=%s\n",
         impl, (double)(t1 - t0) / 1e6, (unsigned long long)(NTHREADS * n_chunks * n_steps),
         (double)(NTHREADS * n_chunks * n_steps) / ((double)(t1 - t0) / 1e3),
         ursa_sched_policy(), pv);
  fflush(stdout);
  BENCH_CHECK(ursa_fini());
  return ok ? 0 : 1;
}
