/*
 * dist_amr.c - SplitThreads' adaptive mesh refinement (section 7.1) across MPI ranks: the integral
 * of x^4 + y^4 over the unit disk by adaptive midpoint quadrature on a quadtree of square cells.
 * A cell is split in four while the circle crosses it or the four children's sum differs from its
 * own estimate by more than tol x its area, down to maxdepth: the mesh grows fine near the circle (where the integrand
 * jumps to 0) and where x^4 + y^4 varies fast, which only the computation finds out.
 *
 *   mpiexec -n N build/dist_amr [maxdepth [split [any|rr]]]
 *
 * Rank 0 cuts [-1,1]^2 into 4^split cells and creates a thread per cell, by URSA_RANK_ANY (the
 * arbiter's least-loaded rank: the default) or round robin over the ranks; each thread refines
 * its cell (yielding every 256 cells, so that its rank's progress thread runs) and returns {sum,
 * cells}.  Rank 0 joins them in order.  The answer is checked twice: bitwise equal to the same
 * computation done sequentially on rank 0 afterwards (same cells, same order of the sums), and
 * within 1e-3 of the exact value pi/4.  Exit status 1 when either check fails.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ursa.h>
#include <ursa/dist.h>

struct task { double x0, y0, h, tol; int32_t depth, maxdepth; };
struct result { double sum; int64_t cells; };

static double f(double x, double y) { return x * x + y * y <= 1.0 ? x * x * x * x + y * y * y * y : 0.0; }

/* whether the circle crosses the cell (then it is refined whatever the estimate: five samples
 * may all miss the disk's edge) */
static int crosses(double x0, double y0, double h) {
  double nx = fmax(x0, fmin(0, x0 + h)), ny = fmax(y0, fmin(0, y0 + h));     /* nearest point to 0 */
  double fx = fmax(fabs(x0), fabs(x0 + h)), fy = fmax(fabs(y0), fabs(y0 + h)); /* farthest */
  return nx * nx + ny * ny < 1.0 && fx * fx + fy * fy > 1.0;
}

static double refine(double x0, double y0, double h, int depth, int maxdepth, double tol, int64_t *cells, int yield) {
  double c = h * h * f(x0 + h / 2, y0 + h / 2), g = h / 2, fine = 0;
  for (int k = 0; k < 4; k++) fine += g * g * f(x0 + (k & 1) * g + g / 2, y0 + (k >> 1) * g + g / 2);
  if (++*cells % 256 == 0 && yield) ursa_yield();
  if (depth >= maxdepth || (!crosses(x0, y0, h) && fabs(fine - c) <= tol * h * h)) return fine;
  double s = 0;
  for (int k = 0; k < 4; k++) s += refine(x0 + (k & 1) * g, y0 + (k >> 1) * g, g, depth + 1, maxdepth, tol, cells, yield);
  return s;
}

static int die_rank = -1;   /* DIST_AMR_DIE=r: rank r kills itself in its first task (the fail-stop test) */

static ssize_t amr_task(const void *arg, size_t len, void *res, size_t cap) {
  struct task t;
  struct result r = {0, 0};
  (void)cap;
  if (len != sizeof t) return -22;
  if (ursa_dist_rank() == die_rank) raise(SIGKILL);
  memcpy(&t, arg, sizeof t);
  r.sum = refine(t.x0, t.y0, t.h, t.depth, t.maxdepth, t.tol, &r.cells, 1);
  memcpy(res, &r, sizeof r);
  return sizeof r;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int maxdepth = argc > 1 ? atoi(argv[1]) : 12, split = argc > 2 ? atoi(argv[2]) : 3;
  int any = !(argc > 3 && strcmp(argv[3], "rr") == 0), status = 0;
  double tol = 1e-6;
  if (maxdepth < 1 || maxdepth > 24 || split < 0 || split > 6 || split > maxdepth) {
    fprintf(stderr, "usage: dist_amr [maxdepth 1..24 [split 0..6, <= maxdepth [any|rr]]]\n");
    return 2;
  }
  if (getenv("DIST_AMR_DIE")) die_rank = atoi(getenv("DIST_AMR_DIE"));
  if (ursa_init(NULL) != 0 || ursa_dist_init(&argc, &argv) != 0) return 1;
  ursa_dist_register("amr", amr_task);
  ursa_dist_barrier_all();
  int rank = ursa_dist_rank(), size = ursa_dist_size();
  if (rank == 0) {
    int n = 1 << (2 * split), side = 1 << split;
    double h = 2.0 / side;
    struct task *ts = malloc(sizeof *ts * (size_t)n);
    ursa_dist_thread_t *th = malloc(sizeof *th * (size_t)n);
    int *where = calloc((size_t)size, sizeof *where);
    for (int i = 0; i < n; i++)
      ts[i] = (struct task){-1.0 + (i % side) * h, -1.0 + (i / side) * h, h, tol, split, maxdepth};
    double t0 = now(), sum = 0;
    int64_t cells = 0;
    for (int i = 0; i < n; i++) {
      int rc = ursa_dist_create(&th[i], any ? URSA_RANK_ANY : i % size, "amr", &ts[i], sizeof ts[i], 0);
      if (rc) { fprintf(stderr, "dist_amr: create: %s\n", ursa_strerror(rc)); return 1; }
    }
    for (int i = 0; i < n; i++) {
      struct result r;
      int rc = ursa_dist_join(th[i], &r, sizeof r, NULL);
      if (rc) { fprintf(stderr, "dist_amr: join: %s\n", ursa_strerror(rc)); return 1; }
      sum += r.sum;
      cells += r.cells;
      where[ursa_dist_thread_rank(th[i])]++;
    }
    double t1 = now();
    double seq = 0;                                          /* the check: the same, sequentially */
    int64_t seqcells = 0;
    for (int i = 0; i < n; i++) {
      int64_t c = 0;
      seq += refine(ts[i].x0, ts[i].y0, ts[i].h, ts[i].depth, ts[i].maxdepth, ts[i].tol, &c, 0);
      seqcells += c;
    }
    double exact = M_PI / 4;
    int same = seq == sum && seqcells == cells, close = fabs(sum - exact) < 1e-3;
    printf("dist_amr: %d ranks, %s, maxdepth %d, %d threads, %lld cells: integral %.12f (exact pi/4 %.12f, "
           "error %.2e), %.3f s; sequential check %s, accuracy %s; threads per rank:",
           size, any ? "wildcard" : "round robin", maxdepth, n, (long long)cells, sum, exact, fabs(sum - exact),
           t1 - t0, same ? "equal" : "DIFFERENT", close ? "ok" : "FAILED");
    for (int r = 0; r < size; r++) printf(" %d", where[r]);
    printf("\n");
    status = same && close ? 0 : 1;
    free(ts); free(th); free(where);
  }
  ursa_dist_finalize();
  ursa_fini();
  return status;
}
