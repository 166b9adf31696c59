/*
 * dist_latency.c - the MPI layer's costs beside MPI's own round trip, in one run (issue #19).
 *
 *   mpiexec -n 2 build/bench/dist_latency [iterations]
 *
 * Rank 0 measures, rank 1 serves.  First MPI's own 8-byte ping-pong (MPI_Send/MPI_Recv on
 * MPI_COMM_WORLD, the program's own MPI, initialized FUNNELED before ursa_init), then ursa's
 * operations (ursa_dist_init uses that MPI), then the ping-pong again.  Each figure is the median
 * of per-operation samples (microseconds); ratios are against the median of the two ping-pong
 * medians.  Last, rank 1's CPU use while idle (its main waits in a barrier) during 1 s in which
 * rank 0 computes without sending: the idle policy's cost.  The paper's CM-5 figures (SplitThreads,
 * section 6) are printed beside: local/remote/arbitrated create 31/58/76 us, remote lock/release 40/31 us.
 */
#define _GNU_SOURCE
#include "ursa.h"
#include "ursa/dist.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *s, int n) {
  qsort(s, (size_t)n, sizeof *s, cmpd);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int rank, size, iters = 2000;
static double *samples;

static double mpi_pingpong(void) {
  int64_t m = 0;
  int peer = rank ^ 1, warm = 200;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warm + iters; i++) {
    if (rank == 0) {
      double t0 = now_us();
      MPI_Send(&m, 1, MPI_INT64_T, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(&m, 1, MPI_INT64_T, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (i >= warm) samples[i - warm] = now_us() - t0;
    } else if (rank == 1) {
      MPI_Recv(&m, 1, MPI_INT64_T, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&m, 1, MPI_INT64_T, peer, 1, MPI_COMM_WORLD);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return rank == 0 ? median(samples, iters) : 0;
}

static ssize_t fn_nop(const void *arg, size_t len, void *res, size_t cap) {
  (void)arg; (void)len; (void)cap;
  int64_t r = ursa_dist_rank();
  memcpy(res, &r, sizeof r);
  return sizeof r;
}

static void *local_nop(void *arg) { return arg; }

int main(int argc, char **argv) {
  int prov;
  if (argc > 1) iters = atoi(argv[1]);
  if (iters < 10) iters = 10;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) { fprintf(stderr, "dist_latency: run with mpiexec -n 2\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
  samples = malloc(sizeof *samples * (size_t)iters);
  double pp1 = mpi_pingpong();

  ursa_init(NULL);
  if (ursa_dist_init(&argc, &argv) != 0) { fprintf(stderr, "dist_latency: ursa_dist_init failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  ursa_dist_register("nop", fn_nop);
  ursa_dist_barrier_all();
  double local = 0, remote = 0, any = 0, lock = 0, ivar = 0, mvar = 0, ursa_local = 0, yield = 0, idle_frac = 0;
  double local_c = 0, remote_c = 0, any_c = 0, lock_only = 0, unlock_only = 0;
  int any_remote = 0;
  if (rank == 0) {
    ursa_dist_thread_t t;
    int64_t r;
    /* warm-up */
    for (int i = 0; i < 200; i++) { ursa_dist_create(&t, 1, "nop", NULL, 0, 0); ursa_dist_join(t, &r, sizeof r, NULL); }
#define TIME(var, body) do { for (int i = 0; i < iters; i++) { double t0 = now_us(); body; samples[i] = now_us() - t0; } \
                             var = median(samples, iters); } while (0)
    TIME(ursa_local, { ursa_thread_t u; ursa_create(&u, NULL, local_nop, NULL); ursa_join(u, NULL); });
    TIME(local, { ursa_dist_create(&t, 0, "nop", NULL, 0, 0); ursa_dist_join(t, &r, sizeof r, NULL); });
    TIME(remote, { ursa_dist_create(&t, 1, "nop", NULL, 0, 0); ursa_dist_join(t, &r, sizeof r, NULL); });
    TIME(any, { ursa_dist_create(&t, URSA_RANK_ANY, "nop", NULL, 0, 0); ursa_dist_join(t, &r, sizeof r, NULL);
                any_remote += r != 0; });
    /* what SplitThreads section 6 timed: the create call alone (it returns once the thread exists
     * on its rank; the join, after, untimed), the remote lock alone, the remote release alone */
#define TIME_THEN(var, body, after) do { for (int i = 0; i < iters; i++) { double t0 = now_us(); body; \
                                          samples[i] = now_us() - t0; after; } var = median(samples, iters); } while (0)
    TIME_THEN(local_c, ursa_dist_create(&t, 0, "nop", NULL, 0, 0), ursa_dist_join(t, &r, sizeof r, NULL));
    TIME_THEN(remote_c, ursa_dist_create(&t, 1, "nop", NULL, 0, 0), ursa_dist_join(t, &r, sizeof r, NULL));
    TIME_THEN(any_c, ursa_dist_create(&t, URSA_RANK_ANY, "nop", NULL, 0, 0), ursa_dist_join(t, &r, sizeof r, NULL));
    ursa_dist_mutex_t m;
    ursa_dist_mutex_create(1, &m);
    TIME_THEN(lock_only, ursa_dist_mutex_lock(m), ursa_dist_mutex_unlock(m));
    for (int i = 0; i < iters; i++) {
      ursa_dist_mutex_lock(m);
      double t0 = now_us();
      ursa_dist_mutex_unlock(m);
      samples[i] = now_us() - t0;
    }
    unlock_only = median(samples, iters);
    TIME(lock, { ursa_dist_mutex_lock(m); ursa_dist_mutex_unlock(m); });
    ursa_dist_mutex_destroy(m);
    ursa_dist_mvar_t mv;
    ursa_dist_mvar_create(1, &mv);
    int64_t v = 1;
    TIME(mvar, { ursa_dist_mvar_put(mv, &v, sizeof v); ursa_dist_mvar_take(mv, &v, sizeof v, NULL); });
    TIME(ivar, { ursa_dist_ivar_t iv; ursa_dist_ivar_create(1, &iv); ursa_dist_ivar_write(iv, &v, sizeof v);
                 ursa_dist_ivar_read(iv, &v, sizeof v, NULL); ursa_dist_ivar_destroy(iv); });
    ursa_dist_mvar_destroy(mv);
    TIME(yield, { ursa_yield(); });
  }
  /* the idle rank's CPU: rank 0 computes for 1 s while rank 1's main waits in the barrier */
  ursa_dist_barrier_all();
  double c0 = cpu_s(), w0 = now_us();
  if (rank == 0) {
    volatile double x = 0;
    while (now_us() - w0 < 1e6) x += 1;
  }
  ursa_dist_barrier_all();
  idle_frac = (cpu_s() - c0) / ((now_us() - w0) / 1e6);
  double idle1 = idle_frac, wake = 0;
  /* the cost of the idle policy: a remote lock+unlock after 50 ms of quiet, when rank 1's
   * progress thread sleeps in its deep (500 us) sleeps */
  if (rank == 0) {
    ursa_dist_mutex_t m;
    double s[20];
    ursa_dist_mutex_create(1, &m);
    for (int i = 0; i < 20; i++) {
      ursa_sleep_ns(50000000);
      double t0 = now_us();
      ursa_dist_mutex_lock(m);
      ursa_dist_mutex_unlock(m);
      s[i] = now_us() - t0;
    }
    wake = median(s, 20);
    ursa_dist_mutex_destroy(m);
  }
  ursa_dist_barrier_all();
  ursa_dist_stats_t st;
  ursa_dist_stats(&st);
  ursa_dist_finalize();
  ursa_fini();
  double pp2 = mpi_pingpong();
  if (rank == 1) MPI_Send(&idle1, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Recv(&idle1, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double pp = (pp1 + pp2) / 2;
    printf("dist_latency: 2 ranks, %d iterations, medians in microseconds (ratio to MPI's ping-pong)\n", iters);
    printf("  MPI 8-byte ping-pong (MPI_Send/Recv)     %8.2f   (before: %.2f, after: %.2f)\n", pp, pp1, pp2);
    printf("  remote create+join (rank 1)             %8.2f   %6.1fx   paper (CM-5): create 58\n", remote, remote / pp);
    printf("  wildcard create+join (URSA_RANK_ANY)    %8.2f   %6.1fx   paper: 76 (%d of %d ran on rank 1)\n", any, any / pp, any_remote, iters);
    printf("  local create+join via ursa_dist_create  %8.2f   %6.1fx   paper: 31\n", local, local / pp);
    printf("  local ursa_create+ursa_join             %8.2f\n", ursa_local);
    printf("  remote mutex lock+unlock                %8.2f   %6.1fx   paper: 40 + 31\n", lock, lock / pp);
    printf("  remote M-structure put+take             %8.2f   %6.1fx\n", mvar, mvar / pp);
    printf("  remote I-structure create+write+read+destroy %3.2f %6.1fx\n", ivar, ivar / pp);
    printf("  ursa_yield (1 thread ready: main)       %8.3f   paper: 35\n", yield);
    printf("  create alone, local / remote / wildcard %6.2f / %.2f / %.2f   paper (CM-5): 31 / 58 / 76\n", local_c, remote_c, any_c);
    printf("  remote lock alone / unlock alone        %6.2f / %.2f   paper: 40 / 31\n", lock_only, unlock_only);
    printf("  idle rank's CPU while its peer computes %8.1f %% of a core (target <= 15%%)\n", idle1 * 100);
    printf("  remote lock+unlock after 50 ms of quiet %8.2f   (the idle policy's deep sleep)\n", wake);
    printf("DIST_JSON {\"mpi_pingpong_us\": %.3f, \"remote_create_join_us\": %.3f, \"any_create_join_us\": %.3f, "
           "\"local_create_join_us\": %.3f, \"remote_lock_unlock_us\": %.3f, \"remote_mvar_put_take_us\": %.3f, "
           "\"idle_cpu_fraction\": %.3f, \"lock_after_quiet_us\": %.3f, \"local_create_us\": %.3f, \"remote_create_us\": %.3f, "
           "\"any_create_us\": %.3f, \"remote_lock_us\": %.3f, \"remote_unlock_us\": %.3f, \"yield_us\": %.3f, "
           "\"progress_polls\": %llu, \"idle_sleeps\": %llu}\n",
           pp, remote, any, local, lock, mvar, idle1, wake, local_c, remote_c, any_c, lock_only, unlock_only, yield,
           (unsigned long long)st.polls, (unsigned long long)st.idle_sleeps);
  }
  free(samples);
  MPI_Finalize();
  return 0;
}
