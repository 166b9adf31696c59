/*
 * radix_sort.c - Lesser Bear's parallel radix sort (the LB3 paper, section 4: 2^22 keys, 2^8
 * threads, radix 2^1 .. 2^10), with ursa threads at N VPs and with POSIX threads.
 *
 * The sort.  2^22 random 32-bit keys (splitmix64, fixed seed) are sorted by LSD radix sort with
 * radix 2^r: P = ceil(32 / r) passes over digits of r bits.  Each pass is the classic parallel
 * counting sort over T = 2^8 slices of the keys (slice t = keys [t n/T, (t+1) n/T)):
 *   1. count phase (parallel):  thread t counts the digits of slice t -> hist[d][t]
 *   2. serial part (main):      exclusive prefix sum over hist in (digit, thread) order, so
 *                               hist[d][t] = where thread t puts its first key of digit d
 *   3. scatter phase (parallel): thread t moves slice t's keys to their places (stable)
 * so each pass has two parallel phases, as in the paper (radix 2^1: 32 passes, 64 phases: "a
 * barrier synchronization is generated 64 times").
 *
 * Variants (the first argument), all doing exactly that work on the same slices:
 *   ursa      each phase creates 2^8 ursa threads (default attributes: they start on main's VP 0
 *             and the scheduler spreads them) and main joins them: fork-join, as Lesser Bear did
 *             ("barrier synchronization by creation and termination").  ursa runs N VPs with its
 *             default policy (or URSA_SCHED).
 *   ursa-any  the same with URSA_VP_ANY placement (the least loaded VP at creation).
 *   ursa-block the same with the fixed variant's partition as placement: slice t's thread is
 *             bound to VP t N / T (ursa_attr_setvp).  It separates what fork-join costs from what
 *             the scheduler's placement costs: slices t and t+1 write neighbouring words of hist
 *             and neighbouring runs of the output, so wherever adjacent slices run at the same
 *             time on different CPUs their cache lines move between the CPUs.
 *   pthread   each phase creates and joins 2^8 POSIX threads (64 KiB stacks, like ursa's).
 *   fixed     hand-partitioned: N kernel threads (main and N-1 pthreads) made once, before the
 *             clock; kernel thread j does slices [j T/N, (j+1) T/N) of every phase; a
 *             pthread_barrier separates the phases and kernel thread 0 does the serial part.
 *             No thread creation at all: the floor for N CPUs.
 *
 * Measured: the sort only (key generation, copying the input in, and the check are outside).
 *   RESULT bench=radix-2^<r> impl=<variant>[-<N>vp] value=<ms> unit=ms n=<keys>  passes=.. ...
 * After every ursa sort, one VPSTAT line per VP (smp_common.h): the VP's switches, idle_waits
 * and how long its kernel thread was on a CPU / asleep during that sort (Lesser Bear's Table 3).
 *
 * Checked after each sort (exit 1 on failure): the output is sorted, and it is a permutation of
 * the input (count, sum and sum of a 64-bit hash of the keys agree).
 *
 * Usage: radix_sort <ursa|ursa-any|ursa-block|pthread|fixed> [N = CPUs] [r: all | 1..12 | list like 1,4,8,10]
 *                   [log2 keys = 22] [log2 threads = 8]
 */
#include "smp_common.h"

#include <pthread.h>

#define USAGE "radix_sort <ursa|ursa-any|ursa-block|pthread|fixed> [N = CPUs] [all | r | r1,r2,... (1..12)] " \
              "[log2 keys = 22] [log2 threads = 8]"
#define R_MAX 12

enum variant { V_URSA, V_URSA_ANY, V_PTHREAD, V_FIXED, V_URSA_BLOCK };

static uint32_t nkeys, nthr;              /* keys, threads (slices) per phase */
static uint32_t *src, *dst;               /* this pass: from, to */
static uint32_t *hist;                    /* [digit * nthr + slice] */
static uint32_t *local;                   /* [slice * stride ...]: a slice's private counters */
static unsigned shift, radix;             /* this pass's digit: (key >> shift) & (radix - 1) */
static unsigned stride;                   /* radix rounded up to 16 words: each slice's counters
                                             start on their own 64-byte line (no false sharing
                                             between slices running on different CPUs) */

/* ---- the work of one slice --------------------------------------------------------------------- */

static void count_slice(uint32_t t) {
  uint32_t *c = local + (size_t)t * stride, lo = (uint32_t)((uint64_t)t * nkeys / nthr),
           hi = (uint32_t)((uint64_t)(t + 1) * nkeys / nthr), mask = radix - 1, i, d;
  memset(c, 0, radix * sizeof *c);
  for (i = lo; i < hi; i++) c[(src[i] >> shift) & mask]++;
  for (d = 0; d < radix; d++) hist[(size_t)d * nthr + t] = c[d];
}

static void scatter_slice(uint32_t t) {
  uint32_t *c = local + (size_t)t * stride, lo = (uint32_t)((uint64_t)t * nkeys / nthr),
           hi = (uint32_t)((uint64_t)(t + 1) * nkeys / nthr), mask = radix - 1, i, d;
  for (d = 0; d < radix; d++) c[d] = hist[(size_t)d * nthr + t];
  for (i = lo; i < hi; i++) {
    uint32_t k = src[i];
    dst[c[(k >> shift) & mask]++] = k;
  }
}

static void prefix(void) {              /* the serial part */
  size_t i, n = (size_t)radix * nthr;
  uint32_t sum = 0;
  for (i = 0; i < n; i++) {
    uint32_t c = hist[i];
    hist[i] = sum;
    sum += c;
  }
}

/* ---- fork-join variants ------------------------------------------------------------------------ */

static void *count_entry(void *arg) { count_slice((uint32_t)(uintptr_t)arg); return NULL; }
static void *scatter_entry(void *arg) { scatter_slice((uint32_t)(uintptr_t)arg); return NULL; }

static ursa_thread_t *uth;
static ursa_attr_t uattr;
static const ursa_attr_t *uattr_p;        /* NULL: default attributes */
static ursa_attr_t *battr;                /* ursa-block: one attribute per VP, NULL otherwise */
static unsigned nvps_block;

static void phase_ursa(void *(*fn)(void *)) {
  uint32_t t;
  for (t = 0; t < nthr; t++)
    BENCH_CHECK(ursa_create(&uth[t], battr ? &battr[(uint64_t)t * nvps_block / nthr] : uattr_p, fn,
                            (void *)(uintptr_t)t));
  for (t = 0; t < nthr; t++) BENCH_CHECK(ursa_join(uth[t], NULL));
}

static pthread_t *pth;
static pthread_attr_t pattr;

static void phase_pthread(void *(*fn)(void *)) {
  uint32_t t;
  for (t = 0; t < nthr; t++) BENCH_CHECK(pthread_create(&pth[t], &pattr, fn, (void *)(uintptr_t)t));
  for (t = 0; t < nthr; t++) BENCH_CHECK(pthread_join(pth[t], NULL));
}

/* ---- the fixed variant: N kernel threads and a barrier ------------------------------------------ */

static unsigned nkt;                      /* kernel threads */
static pthread_barrier_t bar;
static pthread_t *kts;
static unsigned passes_now;               /* passes of the sort being run */
static uint32_t *buf_a, *buf_b;
static int quit;

static void fixed_sort_body(unsigned j) {
  uint32_t t, lo = (uint32_t)((uint64_t)j * nthr / nkt), hi = (uint32_t)((uint64_t)(j + 1) * nthr / nkt);
  unsigned p;
  uint32_t *a = buf_a, *b = buf_b;
  for (p = 0; p < passes_now; p++) {
    if (j == 0) { src = a; dst = b; shift = p * (unsigned)__builtin_ctz(radix); }
    pthread_barrier_wait(&bar);           /* pass parameters published */
    for (t = lo; t < hi; t++) count_slice(t);
    pthread_barrier_wait(&bar);
    if (j == 0) prefix();
    pthread_barrier_wait(&bar);
    for (t = lo; t < hi; t++) scatter_slice(t);
    pthread_barrier_wait(&bar);           /* the pass is complete */
    { uint32_t *x = a; a = b; b = x; }
  }
}

static void *fixed_worker(void *arg) {
  unsigned j = (unsigned)(uintptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&bar);           /* a sort starts (or quit) */
    if (__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) return NULL;
    fixed_sort_body(j);
  }
}

/* ---- driver ------------------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

struct sums { uint64_t sum, hsum; };
static struct sums checksum(const uint32_t *k, uint32_t n) {
  struct sums s = { 0, 0 };
  uint32_t i;
  for (i = 0; i < n; i++) { s.sum += k[i]; s.hsum += mix64(k[i] + 0x9e3779b97f4a7c15u); }
  return s;
}

/* Sorts buf_a (2 buffers); returns the buffer holding the result. */
static uint32_t *sort(enum variant v, unsigned r) {
  unsigned p, passes = (32 + r - 1) / r;
  uint32_t *a = buf_a, *b = buf_b;
  radix = 1u << r;
  stride = (radix + 15) & ~15u;
  if (v == V_FIXED) {
    passes_now = passes;
    pthread_barrier_wait(&bar);           /* start the workers */
    fixed_sort_body(0);
    return passes % 2 ? buf_b : buf_a;
  }
  for (p = 0; p < passes; p++) {
    src = a;
    dst = b;
    shift = p * r;
    if (v == V_PTHREAD) phase_pthread(count_entry); else phase_ursa(count_entry);
    prefix();
    if (v == V_PTHREAD) phase_pthread(scatter_entry); else phase_ursa(scatter_entry);
    { uint32_t *x = a; a = b; b = x; }
  }
  return a;
}

int main(int argc, char **argv) {
  enum variant v;
  unsigned n = smp_ncpus(), lk = 22, lt = 8, radices[R_MAX], nr = 0, i;
  uint32_t *input;
  struct sums in_sums;
  char impl[64];
  const char *vname;
  if (argc < 2 || argc > 6) { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  vname = argv[1];
  if (strcmp(vname, "ursa") == 0) v = V_URSA;
  else if (strcmp(vname, "ursa-any") == 0) v = V_URSA_ANY;
  else if (strcmp(vname, "ursa-block") == 0) v = V_URSA_BLOCK;
  else if (strcmp(vname, "pthread") == 0) v = V_PTHREAD;
  else if (strcmp(vname, "fixed") == 0) v = V_FIXED;
  else { fprintf(stderr, "usage: %s\n", USAGE); return 2; }
  if (argc > 2) n = (unsigned)smp_uint(argv[2], "N", USAGE);
  if (argc > 3 && strcmp(argv[3], "all") != 0) {
    char *s = argv[3], *end;
    for (;;) {
      unsigned long x;
      errno = 0;
      x = strtoul(s, &end, 10);
      if (errno || end == s || x < 1 || x > R_MAX || nr == R_MAX || (*end != ',' && *end != '\0')) {
        fprintf(stderr, "bad radix list '%s'\nusage: %s\n", argv[3], USAGE);
        return 2;
      }
      radices[nr++] = (unsigned)x;
      if (*end == '\0') break;
      s = end + 1;
    }
  } else {
    for (i = 1; i <= 10; i++) radices[nr++] = i;
  }
  if (argc > 4) lk = (unsigned)smp_uint(argv[4], "log2 keys", USAGE);
  if (argc > 5) lt = (unsigned)smp_uint(argv[5], "log2 threads", USAGE);
  if (n < 1 || n > SMP_MAX_VPS || lk < 1 || lk > 28 || lt > 14 || lt > lk) {
    fprintf(stderr, "usage: %s\n", USAGE);
    return 2;
  }
  nkeys = 1u << lk;
  nthr = 1u << lt;

  input = malloc((size_t)nkeys * sizeof *input);
  buf_a = malloc((size_t)nkeys * sizeof *buf_a);
  buf_b = malloc((size_t)nkeys * sizeof *buf_b);
  hist = malloc(((size_t)nthr << R_MAX) * sizeof *hist);
  local = aligned_alloc(64, ((size_t)nthr << R_MAX) * sizeof *local);
  uth = calloc(nthr, sizeof *uth);
  pth = calloc(nthr, sizeof *pth);
  if (!input || !buf_a || !buf_b || !hist || !local || !uth || !pth) bench_die("out of memory", ENOMEM);
  {
    uint64_t x = 20010101;                /* splitmix64, fixed seed */
    for (i = 0; i < nkeys; i++) {
      x += 0x9e3779b97f4a7c15u;
      input[i] = (uint32_t)(mix64(x) >> 32);
    }
  }
  in_sums = checksum(input, nkeys);
  /* touch every buffer once, outside the clock */
  memset(buf_a, 0, (size_t)nkeys * sizeof *buf_a);
  memset(buf_b, 0, (size_t)nkeys * sizeof *buf_b);
  memset(hist, 0, ((size_t)nthr << R_MAX) * sizeof *hist);
  memset(local, 0, ((size_t)nthr << R_MAX) * sizeof *local);

  switch (v) {
  case V_URSA:
  case V_URSA_ANY:
  case V_URSA_BLOCK:
    smp_init(n, 0);
    smp_vp_tids_init();
    if (v == V_URSA_ANY) {
      BENCH_CHECK(ursa_attr_init(&uattr));
      BENCH_CHECK(ursa_attr_setvp(&uattr, URSA_VP_ANY));
      uattr_p = &uattr;
    }
    if (v == V_URSA_BLOCK) {
      nvps_block = n;
      battr = calloc(n, sizeof *battr);
      if (battr == NULL) { fprintf(stderr, "radix_sort: out of memory\n"); return 1; }
      for (unsigned j = 0; j < n; j++) {
        BENCH_CHECK(ursa_attr_init(&battr[j]));
        BENCH_CHECK(ursa_attr_setvp(&battr[j], (int)j));
      }
    }
    snprintf(impl, sizeof impl, "%s-%uvp", vname, n);
    break;
  case V_PTHREAD:
    BENCH_CHECK(pthread_attr_init(&pattr));
    BENCH_CHECK(pthread_attr_setstacksize(&pattr, 65536));
    snprintf(impl, sizeof impl, "pthread");
    break;
  case V_FIXED:
    nkt = n;
    BENCH_CHECK(pthread_barrier_init(&bar, NULL, nkt));
    kts = calloc(nkt, sizeof *kts);
    if (kts == NULL) bench_die("out of memory", ENOMEM);
    for (i = 1; i < nkt; i++) BENCH_CHECK(pthread_create(&kts[i], NULL, fixed_worker, (void *)(uintptr_t)i));
    snprintf(impl, sizeof impl, "fixed-%ukt", n);
    break;
  }

  for (i = 0; i < nr; i++) {
    unsigned r = radices[i], passes = (32 + r - 1) / r;
    struct smp_vp_snap s0, s1;
    uint32_t *out, k;
    uint64_t t0, t1;
    struct sums out_sums;
    char bench[32];
    snprintf(bench, sizeof bench, "radix-2^%u", r);
    memcpy(buf_a, input, (size_t)nkeys * sizeof *input);
    if (v == V_URSA || v == V_URSA_ANY || v == V_URSA_BLOCK) smp_vp_snapshot(&s0);
    t0 = bench_now_ns();
    out = sort(v, r);
    t1 = bench_now_ns();
    if (v == V_URSA || v == V_URSA_ANY || v == V_URSA_BLOCK) smp_vp_snapshot(&s1);
    for (k = 1; k < nkeys; k++)
      if (out[k - 1] > out[k]) {
        fprintf(stderr, "radix_sort %s r=%u: not sorted at %u (%u > %u)\n", impl, r, k, out[k - 1], out[k]);
        return 1;
      }
    out_sums = checksum(out, nkeys);
    if (out_sums.sum != in_sums.sum || out_sums.hsum != in_sums.hsum) {
      fprintf(stderr, "radix_sort %s r=%u: the output is not a permutation of the input\n", impl, r);
      return 1;
    }
    printf("RESULT bench=%s impl=%s value=%.4f unit=ms n=%u passes=%u phases=%u threads=%u",
           bench, impl, (double)(t1 - t0) / 1e6, nkeys, passes, 2 * passes, nthr);
    if (v == V_URSA || v == V_URSA_ANY || v == V_URSA_BLOCK) printf(" policy=%s", ursa_sched_policy());
    printf("\n");
    fflush(stdout);
    if (v == V_URSA || v == V_URSA_ANY || v == V_URSA_BLOCK) smp_vp_print(bench, impl, &s0, &s1);
  }

  if (v == V_URSA || v == V_URSA_ANY || v == V_URSA_BLOCK) {
    if (v == V_URSA_ANY) BENCH_CHECK(ursa_attr_destroy(&uattr));
    if (battr) {
      for (unsigned j = 0; j < nvps_block; j++) BENCH_CHECK(ursa_attr_destroy(&battr[j]));
      free(battr);
    }
    BENCH_CHECK(ursa_fini());
  } else if (v == V_FIXED) {
    __atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
    pthread_barrier_wait(&bar);
    for (i = 1; i < nkt; i++) BENCH_CHECK(pthread_join(kts[i], NULL));
    BENCH_CHECK(pthread_barrier_destroy(&bar));
    free(kts);
  } else {
    BENCH_CHECK(pthread_attr_destroy(&pattr));
  }
  free(input); free(buf_a); free(buf_b); free(hist); free(local); free(uth); free(pth);
  return 0;
}
