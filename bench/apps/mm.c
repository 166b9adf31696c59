/*
 * mm.c - MM, matrix multiplication (Keen et al. section 6; Ishihara et al. 3.1: "computationally
 * intensive with almost no synchronization").
 *
 * C = A x B, --n x --n doubles holding small integers (so every sum is exact), --procs workers
 * each computing a strip of C's rows (i-k-j order, ursa_tick() at the back-edge of the inner
 * loop).  The only synchronization: the workers wait for a start signal and report when done.
 *   cp   a start semaphore (main V()s it once per worker) and a done semaphore (main P()s it once
 *        per worker).
 *   cm   a shared start flag and done count, URSA_WAITFOR on each.
 * Checked: C equals a sequential reference product exactly (computed outside the clock).
 */
#include "apps_common.h"

#define MAXP 1024

static uint64_t n = 256, nprocs = 8;
static const char *style = "cp";
static double *A, *B, *C, *Cref;

static void mult_rows(double *c, uint64_t lo, uint64_t hi) {
  uint64_t i, j, k;
  for (i = lo; i < hi; i++) {
    double *ci = c + i * n;
    for (j = 0; j < n; j++) ci[j] = 0.0;
    for (k = 0; k < n; k++) {
      double a = A[i * n + k];
      const double *bk = B + k * n;
      for (j = 0; j < n; j++) {
        ci[j] += a * bk[j];
        ursa_tick();
      }
    }
  }
}

static ursa_sem_t start_sem, done_sem;

static void *worker_cp(void *arg) {
  uint64_t w = (uintptr_t)arg;
  APPS_CHECK(ursa_sem_wait(&start_sem));
  mult_rows(C, w * n / nprocs, (w + 1) * n / nprocs);
  APPS_CHECK(ursa_sem_post(&done_sem));
  return NULL;
}

#ifndef APPS_PTHREADS
int mm_go;            /* external linkage: re-read after every ursa call */
uint64_t mm_done;

static void *worker_cm(void *arg) {
  uint64_t w = (uintptr_t)arg;
  URSA_WAITFOR(mm_go);
  mult_rows(C, w * n / nprocs, (w + 1) * n / nprocs);
  mm_done++;
  return NULL;
}
#endif

int main(int argc, char **argv) {
  static ursa_thread_t th[MAXP];
  struct apps_opt opts[] = {
    { "style", APPS_STR, &style, "cp | cm" },
    { "n", APPS_U64, &n, "matrix size" },
    { "procs", APPS_U64, &nprocs, "workers" },
    { NULL, 0, NULL, NULL } };
  struct apps_run run;
  uint64_t i, wrong = 0;
  double trace = 0.0;
  int ok, cm;
  apps_parse(argc, argv, opts, "MM, matrix multiplication (Keen et al. 6)");
  if (!apps_one_of(style, "cp cm")) { fprintf(stderr, "mm: --style cp|cm\n"); return 2; }
  if (n < 1 || n > 4096 || nprocs < 1 || nprocs > MAXP || nprocs > n) {
    fprintf(stderr, "mm: need 1 <= n <= 4096 and 1 <= procs <= min(n, %d)\n", MAXP);
    return 2;
  }
  cm = strcmp(style, "cm") == 0;
  apps_begin(&run, "mm", style, cm ? APPS_CM : APPS_CP);
  A = malloc(n * n * sizeof *A);
  B = malloc(n * n * sizeof *B);
  C = malloc(n * n * sizeof *C);
  Cref = malloc(n * n * sizeof *Cref);
  if (!A || !B || !C || !Cref) apps_die("out of memory", ENOMEM);
  for (i = 0; i < n * n; i++) {
    A[i] = (double)(apps_mix64(i) % 19) - 9.0;
    B[i] = (double)(apps_mix64(i + 0x5bd1e995u) % 17) - 8.0;
    C[i] = 0.0;
  }
  APPS_CHECK(ursa_sem_init(&start_sem, 0));
  APPS_CHECK(ursa_sem_init(&done_sem, 0));

  apps_clock_start(&run);
  for (i = 0; i < nprocs; i++) {
#ifndef APPS_PTHREADS
    if (cm) apps_spawn(&th[i], worker_cm, (void *)(uintptr_t)i);
    else
#endif
      apps_spawn(&th[i], worker_cp, (void *)(uintptr_t)i);
  }
#ifndef APPS_PTHREADS
  if (cm) {
    mm_go = 1;
    URSA_WAITFOR(mm_done == nprocs);
  } else
#endif
  {
    for (i = 0; i < nprocs; i++) APPS_CHECK(ursa_sem_post(&start_sem));
    for (i = 0; i < nprocs; i++) APPS_CHECK(ursa_sem_wait(&done_sem));
  }
  for (i = 0; i < nprocs; i++) APPS_CHECK(ursa_join(th[i], NULL));
  apps_clock_stop(&run);

  mult_rows(Cref, 0, n);
  for (i = 0; i < n * n; i++) if (C[i] != Cref[i]) wrong++;
  for (i = 0; i < n; i++) trace += C[i * n + i];
  apps_result(&run, "n=%llu procs=%llu", (unsigned long long)n, (unsigned long long)nprocs);
  ok = wrong == 0;
  apps_answer(&run, ok, "wrong_elements=%llu trace=%.0f", (unsigned long long)wrong, trace);
  free(A); free(B); free(C); free(Cref);
  return apps_end(&run, ok);
}
