/*
 * explore_cases.c - the programs of docs/GUIDE.md, "Finding concurrency bugs", one per argument:
 *   explore_cases lost-wakeup|atomicity|order|lock-order|philosophers|prodcons
 * Run them under ursa-explore, e.g. ursa-explore -n 1000 -s pct:3 -- ./explore_cases atomicity,
 * or alone (URSA_EXPLORE=pct:3 URSA_SEED=7 ./explore_cases atomicity runs one schedule).
 */
#include "cases.inc"

int main(int argc, char **argv) {
  size_t i;
  int r;
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
