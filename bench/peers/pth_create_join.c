/*
 * pth_create_join.c - peer of ursa_create_join: pth_spawn + pth_join of an empty GNU Pth thread
 * with a 16 KiB stack, N times one after another.
 *
 * Each iteration spawns a joinable thread running an empty function (Pth allocates its
 * descriptor and stack with malloc) and joins it at once: main waits, the scheduler runs the
 * thread, it finishes, main resumes and the join frees it.  1,000 unmeasured iterations first.
 *   value = ns per spawn + join = interval / N                              unit ns/op
 *
 * Usage: pth_create_join [N = 100,000]
 */
#include "../bench_common.h"

#include <pth.h>

static void *empty(void *arg) { return arg; }

static void spawn_join(pth_attr_t attr, uint64_t count) {
  uint64_t i;
  for (i = 0; i < count; i++) {
    void *res = NULL;
    pth_t t = pth_spawn(attr, empty, (void *)(uintptr_t)(i + 1));
    if (t == NULL) bench_die("pth_spawn", errno);
    if (!pth_join(t, &res)) bench_die("pth_join", errno);
    if (res != (void *)(uintptr_t)(i + 1)) bench_die("join returned a wrong result", 0);
  }
}

int main(int argc, char **argv) {
  uint64_t n = bench_arg(argc, argv, 100000), t0, t1;
  pth_attr_t attr;
  if (!pth_init()) bench_die("pth_init", errno);
  attr = pth_attr_new();
  pth_attr_set(attr, PTH_ATTR_STACK_SIZE, (unsigned int)16384);
  spawn_join(attr, 1000);
  t0 = bench_now_ns();
  spawn_join(attr, n);
  t1 = bench_now_ns();
  bench_result("create-join", "pth", (double)(t1 - t0) / (double)n, "ns/op", -1, n);
  pth_attr_destroy(attr);
  pth_kill();
  return 0;
}
