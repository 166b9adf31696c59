/*
 * pthread_exit_cost.c - what pthread_exit costs against a return from the start function: N
 * threads, each created and joined in turn, that return (`ret`) or call pthread_exit (`exit`).
 * Under ursa-run pthread_exit unwinds the stack with libgcc's forced unwind, as glibc does
 * (src/pthread/thread.c), so the difference is the unwind.  Not part of make bench (a check of
 * issue #17's unwinding, run by hand: docs/GUIDE.md gives the command and the figures).
 *   value = ns per thread (create + run + join)                           unit ns/thread
 * Usage: pthread_exit_cost ret|exit [N = 20,000]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *returns(void *a) { return a; }
static void *exits(void *a) { pthread_exit(a); }

int main(int argc, char **argv) {
  int n = argc > 2 ? atoi(argv[2]) : 20000, i;
  void *(*fn)(void *);
  struct timespec t0, t1;
  if (argc < 2 || (strcmp(argv[1], "ret") != 0 && strcmp(argv[1], "exit") != 0) || n <= 0) {
    fprintf(stderr, "usage: pthread_exit_cost ret|exit [N]\n");
    return 2;
  }
  fn = strcmp(argv[1], "exit") == 0 ? exits : returns;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("RESULT bench=pthread-exit-cost impl=%s value=%.1f unit=ns/thread n=%d\n", argv[1],
         ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n, n);
  return 0;
}
