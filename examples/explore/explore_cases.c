#define _GNU_SOURCE
/*
 * explore_cases.c - the programs of docs/GUIDE.md, "Finding concurrency bugs", one per argument:
 *   explore_cases lost-wakeup|atomicity|order|lock-order|philosophers|prodcons|readers-writers|steps
 *   explore_cases --explore CASE STRATEGY N    (the same under ursa_explore(), with its figures)
 * Run them under ursa-explore, e.g. ursa-explore -n 1000 -s pct:3 -- ./explore_cases atomicity,
 * or alone (URSA_EXPLORE=pct:3 URSA_SEED=7 ./explore_cases atomicity runs one schedule).
 */
#include "cases.inc"

#include <time.h>

/* explore_cases --explore CASE STRATEGY N: ursa_explore() over N schedules, with its figures. */
static int explore_in_process(const char *name, const char *strategy, unsigned n) {
  size_t i;
  for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++) {
    ursa_explore_opts_t o;
    struct timespec a, b;
    double t;
    int r;
    if (strcmp(name, explore_cases[i].name) != 0) continue;
    memset(&o, 0, sizeof o);
    o.strategy = strategy;
    o.schedules = n;
    clock_gettime(CLOCK_MONOTONIC, &a);
    r = ursa_explore(explore_cases[i].fn, NULL, &o);
    clock_gettime(CLOCK_MONOTONIC, &b);
    t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    if (r < 0) { fprintf(stderr, "ursa_explore: %s\n", ursa_strerror(r)); return 2; }
    if (r == 1) {
      printf("ursa_explore: failed after %u schedules: seed %llu, strategy %s\n", o.ran,
             (unsigned long long)o.failed_seed, o.replay);
      return 1;
    }
    printf("ursa_explore: passed %u schedules: %llu steps in %.2f s, %.0f steps/s, %.0f schedules/s\n", o.ran,
           (unsigned long long)o.steps, t, (double)o.steps / t, o.ran / t);
    return 0;
  }
  fprintf(stderr, "no case %s\n", name);
  return 2;
}

int main(int argc, char **argv) {
  size_t i;
  int r;
  if (argc == 5 && strcmp(argv[1], "--explore") == 0) return explore_in_process(argv[2], argv[3], (unsigned)atoi(argv[4]));
  if (argc != 2) {
    fprintf(stderr, "usage: %s CASE  (", argv[0]);
    for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++)
      fprintf(stderr, "%s%s", i ? ", " : "", explore_cases[i].name);
    fprintf(stderr, ")\n");
    return 2;
  }
  for (i = 0; i < sizeof explore_cases / sizeof explore_cases[0]; i++) {
    if (strcmp(argv[1], explore_cases[i].name) != 0) continue;
    if ((r = ursa_init(NULL)) != 0) {
      fprintf(stderr, "ursa_init: %s\n", ursa_strerror(r));
      return 2;
    }
    r = explore_cases[i].fn(NULL);
    if (r == 0) r = ursa_fini() != 0;
    return r;
  }
  fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
  return 2;
}
