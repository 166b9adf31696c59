/*
 * pth_radix.c - peer of radix_sort.c's fork-join variants with GNU Pth (one kernel thread, so
 * no parallelism: compare it with ursa at 1 VP): each parallel phase spawns 2^8 Pth threads
 * (64 KiB stacks, like radix_sort.c's ursa and pthread threads) and joins them.  The sort, the
 * keys and the checks are radix_sort.c's (peers/radix_common.h).
 *
 * Usage: pth_radix [all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 threads = 8]
 */
#include "radix_common.h"

#include <pth.h>

static pth_attr_t attr;
static pth_t *tids;
static radix_slice_fn cur_slice;

static void *slice_entry(void *arg) {
  cur_slice((uint32_t)(uintptr_t)arg);
  return NULL;
}

static void phase_pth(radix_slice_fn slice) {
  uint32_t t;
  cur_slice = slice;
  for (t = 0; t < radix_nthr; t++)
    if ((tids[t] = pth_spawn(attr, slice_entry, (void *)(uintptr_t)t)) == NULL) bench_die("pth_spawn", errno);
  for (t = 0; t < radix_nthr; t++)
    if (!pth_join(tids[t], NULL)) bench_die("pth_join", errno);
}

int main(int argc, char **argv) {
  int rc;
  if (!pth_init()) bench_die("pth_init", errno);
  attr = pth_attr_new();
  pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)65536);
  tids = calloc((size_t)1 << 14, sizeof *tids);
  if (tids == NULL) bench_die("out of memory", ENOMEM);
  rc = radix_main(argc, argv, "pth", phase_pth);
  free(tids);
  pth_attr_destroy(attr);
  pth_kill();
  return rc;
}
