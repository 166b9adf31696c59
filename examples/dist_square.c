/* dist_square.c - docs/GUIDE.md's first program across machines: rank 0 squares 7 on the
 * least-loaded rank.  mpiexec -n 2 build/dist_square */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ursa.h>
#include <ursa/dist.h>

static ssize_t square(const void *arg, size_t len, void *res, size_t cap) {
  int64_t x = *(const int64_t *)arg, y = x * x;   /* arg: a copy of the creator's bytes */
  (void)len; (void)cap;
  memcpy(res, &y, sizeof y);                       /* res: up to cap (4096) bytes of result */
  return sizeof y;                                 /* or a negative error for the joiner */
}

int main(int argc, char **argv) {
  ursa_init(NULL);
  ursa_dist_init(&argc, &argv);                    /* MPI_Init_thread, the progress thread */
  ursa_dist_register("square", square);            /* by name on every rank, never by address */
  ursa_dist_barrier_all();                         /* every rank has registered */
  if (ursa_dist_rank() == 0) {
    ursa_dist_thread_t t;
    int64_t x = 7, y = 0;
    ursa_dist_create(&t, URSA_RANK_ANY, "square", &x, sizeof x, 0);   /* or a rank, or 0 */
    ursa_dist_join(t, &y, sizeof y, NULL);         /* y == 49; any rank may join t, once */
    printf("7 squared on rank %d: %lld\n", ursa_dist_thread_rank(t), (long long)y);
  }
  ursa_dist_finalize();                            /* when every rank's main is here and */
  return ursa_fini();                              /* nothing is in flight anywhere      */
}
