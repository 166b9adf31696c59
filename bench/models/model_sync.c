/*
 * model_sync.c - the journal paper's cost of synchronization (section 3.2.2, Tables III and IV):
 * two threads with control alternating between them on each iteration, either by semaphores
 * (CP style: the combined cost of a P that blocks and the V that unblocks it) or by a shared
 * turn variable and yield (CM style: URSA_WAITFOR).  The same binary runs under every model
 * (URSA_MODEL, URSA_VPS); with several VPs the two threads start on different VPs (URSA_VP_ANY).
 *
 *   model_sync pv|yield [iters]
 *
 * Prints RESULT bench=sync_<pv|yield> impl=<model>-<vps>vp value=<ns per operation> unit=ns
 * n=<iters>: for pv, one operation is a P plus a V; for yield, one yield.  The alternation is
 * checked (each side sees the other's count), and a broken one fails the run.
 */
#include "../bench_common.h"
#include "ursa.h"

#include <stdatomic.h>

static uint64_t iters;
static ursa_sem_t sem[2];
static _Atomic uint64_t turn;          /* yield: thread (turn & 1) may go; counts the hand-offs */
static int bad;

static void *pv(void *arg) {
  int me = (int)(uintptr_t)arg;
  for (uint64_t i = 0; i < iters; i++) {
    if (ursa_sem_wait(&sem[me]) != 0) bad = 1;
    if (ursa_sem_post(&sem[!me]) != 0) bad = 1;
  }
  return NULL;
}

static void *yield(void *arg) {
  uint64_t me = (uint64_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < iters; i++) {
    URSA_WAITFOR((atomic_load_explicit(&turn, memory_order_acquire) & 1) == me);
    if (atomic_load_explicit(&turn, memory_order_relaxed) != 2 * i + me) bad = 1;
    atomic_store_explicit(&turn, 2 * i + me + 1, memory_order_release);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int is_pv;
  ursa_thread_t t[2];
  ursa_attr_t attr;
  uint64_t t0, t1;
  double per;
  if (argc < 2 || (strcmp(argv[1], "pv") != 0 && strcmp(argv[1], "yield") != 0)) {
    fprintf(stderr, "usage: %s pv|yield [iters]\n", argv[0]);
    return 2;
  }
  is_pv = strcmp(argv[1], "pv") == 0;
  iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000ull;
  if (iters == 0) return 2;
  BENCH_CHECK(ursa_init(NULL));
  BENCH_CHECK(ursa_attr_init(&attr));
  BENCH_CHECK(ursa_attr_setvp(&attr, URSA_VP_ANY));
  BENCH_CHECK(ursa_sem_init(&sem[0], 1));
  BENCH_CHECK(ursa_sem_init(&sem[1], 0));
  t0 = bench_now_ns();
  for (int i = 0; i < 2; i++) BENCH_CHECK(ursa_create(&t[i], &attr, is_pv ? pv : yield, (void *)(uintptr_t)i));
  for (int i = 0; i < 2; i++) BENCH_CHECK(ursa_join(t[i], NULL));
  t1 = bench_now_ns();
  if (bad || (!is_pv && atomic_load(&turn) != 2 * iters)) bench_die("the threads did not alternate", 0);
  per = (double)(t1 - t0) / (2.0 * (double)iters);
  printf("RESULT bench=sync_%s impl=%s-%uvp value=%.3f unit=ns n=%llu\n", argv[1],
         ursa_model_name(ursa_model()), ursa_vp_count(), per, (unsigned long long)iters);
  BENCH_CHECK(ursa_sem_destroy(&sem[0]));
  BENCH_CHECK(ursa_sem_destroy(&sem[1]));
  BENCH_CHECK(ursa_fini());
  return 0;
}
