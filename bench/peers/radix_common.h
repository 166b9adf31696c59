/*
 * radix_common.h - the parallel radix sort of bench/radix_sort.c (Lesser Bear's, the LB3 paper's
 * section 4) for the C and C++ peers (pth_radix.c, boost_fiber_radix.cpp): the same keys, passes,
 * phases, slices, counters and checks, with the peer supplying only how a parallel phase runs.
 *
 * 2^22 random 32-bit keys (splitmix64, seed 20010101), LSD radix sort with radix 2^r: ceil(32/r)
 * passes, each a count phase (thread t histograms slice t of T = 2^8 slices), the serial
 * exclusive prefix sum over (digit, slice) in main, and a scatter phase (thread t moves slice t,
 * stable).  radix_main() parses
 *
 *     <program> [all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 threads = 8]
 *
 * and for each radix copies the input in, times radix_sort_run() (the sort only), checks that the
 * output is sorted and a permutation of the input (sum and sum of a 64-bit hash; exit 1
 * otherwise), and prints
 *
 *     RESULT bench=radix-2^<r> impl=<impl> value=<ms> unit=ms n=<keys> passes=.. phases=.. threads=..
 *
 * The peer's phase function must run slice(t) for every t in [0, radix_nthr) and return when all
 * have finished: fork-join of radix_nthr threads per phase.  Valid C11 and C++.
 */
#ifndef RADIX_COMMON_H
#define RADIX_COMMON_H

#include "../bench_common.h"

#define RADIX_R_MAX 12
#define RADIX_USAGE "[all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 threads = 8]"

static uint32_t radix_nkeys, radix_nthr;   /* keys, threads (slices) per phase */
static uint32_t *radix_src, *radix_dst;    /* this pass: from, to */
static uint32_t *radix_hist;               /* [digit * nthr + slice] */
static uint32_t *radix_local;              /* [slice * stride ...]: a slice's private counters */
static unsigned radix_shift, radix_radix;  /* this pass's digit: (key >> shift) & (radix - 1) */
static unsigned radix_stride;              /* radix rounded up to 16 words: own 64-byte lines */

typedef void (*radix_slice_fn)(uint32_t t);
typedef void (*radix_phase_fn)(radix_slice_fn slice);

static void radix_count_slice(uint32_t t) {
  uint32_t *c = radix_local + (size_t)t * radix_stride;
  uint32_t lo = (uint32_t)((uint64_t)t * radix_nkeys / radix_nthr);
  uint32_t hi = (uint32_t)((uint64_t)(t + 1) * radix_nkeys / radix_nthr), mask = radix_radix - 1, i, d;
  memset(c, 0, radix_radix * sizeof *c);
  for (i = lo; i < hi; i++) c[(radix_src[i] >> radix_shift) & mask]++;
  for (d = 0; d < radix_radix; d++) radix_hist[(size_t)d * radix_nthr + t] = c[d];
}

static void radix_scatter_slice(uint32_t t) {
  uint32_t *c = radix_local + (size_t)t * radix_stride;
  uint32_t lo = (uint32_t)((uint64_t)t * radix_nkeys / radix_nthr);
  uint32_t hi = (uint32_t)((uint64_t)(t + 1) * radix_nkeys / radix_nthr), mask = radix_radix - 1, i, d;
  for (d = 0; d < radix_radix; d++) c[d] = radix_hist[(size_t)d * radix_nthr + t];
  for (i = lo; i < hi; i++) {
    uint32_t k = radix_src[i];
    radix_dst[c[(k >> radix_shift) & mask]++] = k;
  }
}

static void radix_prefix(void) {           /* the serial part */
  size_t i, n = (size_t)radix_radix * radix_nthr;
  uint32_t sum = 0;
  for (i = 0; i < n; i++) {
    uint32_t c = radix_hist[i];
    radix_hist[i] = sum;
    sum += c;
  }
}

/* Sorts a (with b) by radix 2^r, each parallel phase run by phase(); returns the result's buffer. */
static uint32_t *radix_sort_run(uint32_t *a, uint32_t *b, unsigned r, radix_phase_fn phase) {
  unsigned p, passes = (32 + r - 1) / r;
  radix_radix = 1u << r;
  radix_stride = (radix_radix + 15) & ~15u;
  for (p = 0; p < passes; p++) {
    uint32_t *x;
    radix_src = a;
    radix_dst = b;
    radix_shift = p * r;
    phase(radix_count_slice);
    radix_prefix();
    phase(radix_scatter_slice);
    x = a; a = b; b = x;
  }
  return a;
}

static uint64_t radix_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void radix_checksum(const uint32_t *k, uint32_t n, uint64_t *sum, uint64_t *hsum) {
  uint32_t i;
  *sum = *hsum = 0;
  for (i = 0; i < n; i++) {
    *sum += k[i];
    *hsum += radix_mix64(k[i] + 0x9e3779b97f4a7c15u);
  }
}

static unsigned radix_uint_arg(const char *prog, const char *s, const char *what) {
  char *end = NULL;
  unsigned long v;
  errno = 0;
  v = strtoul(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v > 64) {
    fprintf(stderr, "bad %s '%s'\nusage: %s %s\n", what, s, prog, RADIX_USAGE);
    exit(2);
  }
  return (unsigned)v;
}

static int radix_main(int argc, char **argv, const char *impl, radix_phase_fn phase) {
  unsigned lk = 22, lt = 8, radices[RADIX_R_MAX], nr = 0, i;
  uint32_t *input, *buf_a, *buf_b;
  uint64_t in_sum, in_hsum, x;
  if (argc > 4) {
    fprintf(stderr, "usage: %s %s\n", argv[0], RADIX_USAGE);
    return 2;
  }
  if (argc > 1 && strcmp(argv[1], "all") != 0) {
    char *s = argv[1], *end;
    for (;;) {
      unsigned long v;
      errno = 0;
      v = strtoul(s, &end, 10);
      if (errno || end == s || v < 1 || v > RADIX_R_MAX || nr == RADIX_R_MAX ||
          (*end != ',' && *end != '\0')) {
        fprintf(stderr, "bad radix list '%s'\nusage: %s %s\n", argv[1], argv[0], RADIX_USAGE);
        return 2;
      }
      radices[nr++] = (unsigned)v;
      if (*end == '\0') break;
      s = end + 1;
    }
  } else {
    for (i = 1; i <= 10; i++) radices[nr++] = i;
  }
  if (argc > 2) lk = radix_uint_arg(argv[0], argv[2], "log2 keys");
  if (argc > 3) lt = radix_uint_arg(argv[0], argv[3], "log2 threads");
  if (lk < 1 || lk > 28 || lt > 14 || lt > lk) {
    fprintf(stderr, "usage: %s %s\n", argv[0], RADIX_USAGE);
    return 2;
  }
  radix_nkeys = 1u << lk;
  radix_nthr = 1u << lt;
  input = (uint32_t *)malloc((size_t)radix_nkeys * sizeof *input);
  buf_a = (uint32_t *)malloc((size_t)radix_nkeys * sizeof *buf_a);
  buf_b = (uint32_t *)malloc((size_t)radix_nkeys * sizeof *buf_b);
  radix_hist = (uint32_t *)malloc(((size_t)radix_nthr << RADIX_R_MAX) * sizeof *radix_hist);
  radix_local = (uint32_t *)aligned_alloc(64, ((size_t)radix_nthr << RADIX_R_MAX) * sizeof *radix_local);
  if (!input || !buf_a || !buf_b || !radix_hist || !radix_local) bench_die("out of memory", ENOMEM);
  x = 20010101;                           /* splitmix64, fixed seed */
  for (i = 0; i < radix_nkeys; i++) {
    x += 0x9e3779b97f4a7c15u;
    input[i] = (uint32_t)(radix_mix64(x) >> 32);
  }
  radix_checksum(input, radix_nkeys, &in_sum, &in_hsum);
  /* touch every buffer once, outside the clock */
  memset(buf_a, 0, (size_t)radix_nkeys * sizeof *buf_a);
  memset(buf_b, 0, (size_t)radix_nkeys * sizeof *buf_b);
  memset(radix_hist, 0, ((size_t)radix_nthr << RADIX_R_MAX) * sizeof *radix_hist);
  memset(radix_local, 0, ((size_t)radix_nthr << RADIX_R_MAX) * sizeof *radix_local);

  for (i = 0; i < nr; i++) {
    unsigned r = radices[i], passes = (32 + r - 1) / r;
    uint32_t *out, k;
    uint64_t t0, t1, out_sum, out_hsum;
    memcpy(buf_a, input, (size_t)radix_nkeys * sizeof *input);
    t0 = bench_now_ns();
    out = radix_sort_run(buf_a, buf_b, r, phase);
    t1 = bench_now_ns();
    for (k = 1; k < radix_nkeys; k++)
      if (out[k - 1] > out[k]) {
        fprintf(stderr, "%s r=%u: not sorted at %u (%u > %u)\n", impl, r, k, out[k - 1], out[k]);
        return 1;
      }
    radix_checksum(out, radix_nkeys, &out_sum, &out_hsum);
    if (out_sum != in_sum || out_hsum != in_hsum) {
      fprintf(stderr, "%s r=%u: the output is not a permutation of the input\n", impl, r);
      return 1;
    }
    printf("RESULT bench=radix-2^%u impl=%s value=%.4f unit=ms n=%u passes=%u phases=%u threads=%u\n",
           r, impl, (double)(t1 - t0) / 1e6, radix_nkeys, passes, 2 * passes, radix_nthr);
    fflush(stdout);
  }
  free(input); free(buf_a); free(buf_b); free(radix_hist); free(radix_local);
  return 0;
}

#endif /* RADIX_COMMON_H */
