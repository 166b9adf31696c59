/*
 * pthread_radix.c - Lesser Bear's parallel radix sort (../shared/papers/002_..., section 4)
 * written as a plain POSIX-threads program (issue #17 item 7): each parallel phase creates 2^8
 * POSIX threads (64 KiB stacks, like radix_sort.c's ursa and pthread variants) and joins them.
 * The keys, passes, slices, counters and checks are radix_sort.c's (peers/radix_common.h): the
 * output is checked sorted and a permutation of the input, else the process exits 1.
 *
 * It knows nothing of ursa: the same unmodified binary runs natively (impl posix-native: kernel
 * threads) and under `ursa-run -n N` (impl ursa-run-<N>vp: libursa-pthread.so turns every
 * pthread_create into an ursa thread).  It looks up ursa_self and ursa_vp_count with dlsym only
 * to label its RESULT lines.  `make bench` (the SMP section) compares it with ursa's own sort at
 * N VPs (radix_sort ursa N; the target: within 1.1x).
 *
 * Usage: pthread_radix [all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 threads = 8]
 */
#define _GNU_SOURCE
#include "radix_common.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_attr_t attr;
static pthread_t *tids;
static radix_slice_fn cur_slice;

static void *slice_entry(void *arg) {
  cur_slice((uint32_t)(uintptr_t)arg);
  return NULL;
}

static void phase_pthread(radix_slice_fn slice) {
  uint32_t t;
  cur_slice = slice;
  for (t = 0; t < radix_nthr; t++)
    BENCH_CHECK(pthread_create(&tids[t], &attr, slice_entry, (void *)(uintptr_t)t));
  for (t = 0; t < radix_nthr; t++) BENCH_CHECK(pthread_join(tids[t], NULL));
}

int main(int argc, char **argv) {
  void *(*ursa_self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  unsigned (*ursa_vp_count)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "ursa_vp_count");
  char impl[32] = "posix-native";
  int rc;
  if (ursa_self && ursa_self() && ursa_vp_count)
    snprintf(impl, sizeof impl, "ursa-run-%uvp", ursa_vp_count());
  BENCH_CHECK(pthread_attr_init(&attr));
  BENCH_CHECK(pthread_attr_setstacksize(&attr, 65536));
  tids = (pthread_t *)calloc((size_t)1 << 14, sizeof *tids);
  if (tids == NULL) bench_die("out of memory", ENOMEM);
  rc = radix_main(argc, argv, impl, phase_pthread);
  free(tids);
  BENCH_CHECK(pthread_attr_destroy(&attr));
  return rc;
}
