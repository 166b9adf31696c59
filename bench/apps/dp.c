/*
 * dp.c - DP, dining philosophers (Keen et al., sections 2, 4.1, 4.2; Ishihara et al., 3.1, 3.2).
 *
 * N philosophers (default 16, as the papers' Figure 3) around a table, fork f between philosopher
 * f-1 and philosopher f: philosopher i's left fork is i, its right fork (i+1) mod N.  Each eats
 * --meals times: think (--think iterations of the calibrated work loop, default --work), take both
 * forks, eat (--eat iterations, default --work), put them down.
 *
 * Styles:
 *   cp          the papers' Figure 2(a): a semaphore per fork, P(left); P(right) ... V; V.  As in
 *               the SR book's solution, the last philosopher takes its right fork first, which
 *               breaks the cycle (no deadlock).  Runs under every model and natively.
 *   cm          Figure 2(b): an int per fork; "await fork[left]=1 & fork[right]=1" simulated by
 *               URSA_WAITFOR (yield until it holds), then both set to 0.  No switch can happen
 *               between the test and the taking.  Needs cm (or one VP).
 *   pcm         "pure" PCM (what section 4.2 says DP1 approximates): --regions groups of
 *               neighbouring philosophers (default 2, the papers' East and West), one ursa region
 *               each on VP g mod VPs, so the regions run in parallel and ursa guarantees that no two
 *               philosophers of a region ever run at once.  A fork between two philosophers of one
 *               region is an int (CM style, no lock); a fork between two regions is a semaphore.
 *               A border philosopher first P()s its cross-region fork, then waits for its in-region
 *               fork as in cm.  No protection or region synchronization is needed.
 *   pcm.dp1     the journal paper's DP1: the same three kinds of philosopher, but with no regions
 *               (threads start on VP g mod VPs and migrate freely, like MultiSR without processor
 *               affinity), so philosophers of one region may run at once on two VPs; the region's
 *               fork ints are therefore guarded by a per-region semaphore ("protection
 *               synchronization"): test-and-take under P/V, yield when they are not free.
 *   pcm.dp2     DP1 plus "region synchronization": a per-region semaphore a philosopher holds while
 *               it runs (released around every yield and every blocking P), so only one
 *               philosopher of a region runs at a time.
 * cm and pcm* call ursa_require_cooperative (exit 2 under cp-ts / cp-ic).
 *
 * Checked: every philosopher ate exactly --meals times (counted per philosopher), no fork was ever
 * held by two philosophers at once (each fork records its holder with an atomic exchange at take
 * and put), and at the end every fork is back on the table: its holder record empty, its
 * semaphore at 1 (every style: the ones a style does not use must still have their initial 1),
 * its shared int at 1 (the cooperative styles), and every region's protection and region
 * semaphore at 1 (pcm).  A P without its V, or a V too many, leaves a value other than 1.
 * digest: the xor of every philosopher's work results, the same for every style and model.
 */
#include "apps_common.h"

#define MAXPHIL 4096

static uint64_t nphil = 16, meals = 100, work = 1000, think_w = UINT64_MAX, eat_w = UINT64_MAX;
static uint64_t nregions = 2;
static const char *style = "cp";

static int holder[MAXPHIL];            /* fork f's holder + 1 (0: on the table): the check */
static uint64_t violations;
static uint64_t ate[MAXPHIL];
static uint64_t digest_of[MAXPHIL];

static inline unsigned L(unsigned i) { return i; }
static inline unsigned R(unsigned i) { return (unsigned)((i + 1) % nphil); }

static inline void take_check(unsigned f, unsigned i) {
  if (__atomic_exchange_n(&holder[f], (int)i + 1, __ATOMIC_RELAXED) != 0)
    __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
}
static inline void put_check(unsigned f, unsigned i) {
  if (__atomic_exchange_n(&holder[f], 0, __ATOMIC_RELAXED) != (int)i + 1)
    __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
}

static inline uint64_t seed(unsigned i, uint64_t m, unsigned what) {
  return apps_mix64(((uint64_t)i << 40) ^ (m << 1) ^ what);
}

/* ---- cp: a semaphore per fork (Figure 2(a)) ------------------------------------------------------ */

static ursa_sem_t fork_sem[MAXPHIL];

static void *phil_cp(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg, l = L(i), r = R(i);
  unsigned first = (i == nphil - 1) ? r : l, second = (i == nphil - 1) ? l : r;
  uint64_t m, acc = 0;
  for (m = 0; m < meals; m++) {
    acc ^= apps_work(think_w, seed(i, m, 0));                 /* think */
    APPS_CHECK(ursa_sem_wait(&fork_sem[first]));
    APPS_CHECK(ursa_sem_wait(&fork_sem[second]));
    take_check(l, i);
    take_check(r, i);
    acc ^= apps_work(eat_w, seed(i, m, 1));                   /* eat */
    put_check(l, i);
    put_check(r, i);
    APPS_CHECK(ursa_sem_post(&fork_sem[l]));
    APPS_CHECK(ursa_sem_post(&fork_sem[r]));
    ate[i]++;
  }
  digest_of[i] = acc;
  return NULL;
}

#ifndef APPS_PTHREADS
/* ---- cm: shared ints and waitfor (Figure 2(b)) ---------------------------------------------------- */

/* Shared by the cooperative styles: 1 = the fork is on the table.  External linkage, so that the
 * compiler re-reads them after every ursa call (URSA_WAITFOR's yield). */
int dp_fork_free[MAXPHIL];

static void *phil_cm(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg, l = L(i), r = R(i);
  uint64_t m, acc = 0;
  for (m = 0; m < meals; m++) {
    acc ^= apps_work(think_w, seed(i, m, 0));
    URSA_WAITFOR(dp_fork_free[l] && dp_fork_free[r]);
    dp_fork_free[l] = dp_fork_free[r] = 0;
    take_check(l, i);
    take_check(r, i);
    acc ^= apps_work(eat_w, seed(i, m, 1));
    put_check(l, i);
    put_check(r, i);
    dp_fork_free[l] = dp_fork_free[r] = 1;
    ate[i]++;
  }
  digest_of[i] = acc;
  return NULL;
}

/* ---- pcm, dp1, dp2: regions of neighbouring philosophers (Figure 3) -------------------------------- */

static unsigned region_of[MAXPHIL];     /* philosopher -> group */
static int cross[MAXPHIL];              /* fork f joins two groups: a semaphore (fork_sem[f]) */
static ursa_sem_t prot[MAXPHIL];        /* dp1, dp2: a group's protection semaphore */
static ursa_sem_t regsem[MAXPHIL];      /* dp2: a group's region semaphore */
static ursa_region_t regions[MAXPHIL];  /* pcm: one ursa region per group */
static int variant;                     /* 0 pure, 1 dp1, 2 dp2 */

static void *phil_pcm(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg, l = L(i), r = R(i), g = region_of[i];
  int xl = cross[l], xr = cross[r];
  uint64_t m, acc = 0;
  if (variant == 2) APPS_CHECK(ursa_sem_wait(&regsem[g]));
  for (m = 0; m < meals; m++) {
    acc ^= apps_work(think_w, seed(i, m, 0));
    /* the cross-region forks first, by semaphore, in fork order (a group of one has two) */
    if (xl || xr) {
      if (variant == 2) APPS_CHECK(ursa_sem_post(&regsem[g]));   /* never block holding it */
      if (xl && xr) {
        unsigned a = l < r ? l : r, b = l < r ? r : l;
        APPS_CHECK(ursa_sem_wait(&fork_sem[a]));
        APPS_CHECK(ursa_sem_wait(&fork_sem[b]));
      } else {
        APPS_CHECK(ursa_sem_wait(&fork_sem[xl ? l : r]));
      }
      if (variant == 2) APPS_CHECK(ursa_sem_wait(&regsem[g]));
    }
    /* then the in-region forks: await both free, take them */
    if (!(xl && xr)) {
      if (variant == 0) {
        URSA_WAITFOR((xl || dp_fork_free[l]) && (xr || dp_fork_free[r]));
        if (!xl) dp_fork_free[l] = 0;
        if (!xr) dp_fork_free[r] = 0;
      } else {
        for (;;) {
          int got = 0;
          APPS_CHECK(ursa_sem_wait(&prot[g]));
          if ((xl || dp_fork_free[l]) && (xr || dp_fork_free[r])) {
            if (!xl) dp_fork_free[l] = 0;
            if (!xr) dp_fork_free[r] = 0;
            got = 1;
          }
          APPS_CHECK(ursa_sem_post(&prot[g]));
          if (got) break;
          if (variant == 2) APPS_CHECK(ursa_sem_post(&regsem[g]));
          APPS_CHECK(ursa_yield());
          if (variant == 2) APPS_CHECK(ursa_sem_wait(&regsem[g]));
        }
      }
    }
    take_check(l, i);
    take_check(r, i);
    acc ^= apps_work(eat_w, seed(i, m, 1));
    put_check(l, i);
    put_check(r, i);
    if (!(xl && xr)) {
      if (variant != 0) APPS_CHECK(ursa_sem_wait(&prot[g]));
      if (!xl) dp_fork_free[l] = 1;
      if (!xr) dp_fork_free[r] = 1;
      if (variant != 0) APPS_CHECK(ursa_sem_post(&prot[g]));
    }
    if (xl) APPS_CHECK(ursa_sem_post(&fork_sem[l]));
    if (xr) APPS_CHECK(ursa_sem_post(&fork_sem[r]));
    ate[i]++;
  }
  if (variant == 2) APPS_CHECK(ursa_sem_post(&regsem[g]));
  digest_of[i] = acc;
  return NULL;
}
#endif /* !APPS_PTHREADS */

int main(int argc, char **argv) {
  static ursa_thread_t th[MAXPHIL];
  const char *variant_name = "pure";
  struct apps_opt opts[] = {
    { "style", APPS_STR, &style, "cp | cm | pcm" },
    { "variant", APPS_STR, &variant_name, "pcm only: pure | dp1 | dp2" },
    { "work", APPS_U64, &work, "iterations of the work loop to think and to eat" },
    { "think", APPS_U64, &think_w, "iterations to think (default: --work)" },
    { "eat", APPS_U64, &eat_w, "iterations to eat (default: --work)" },
    { "meals", APPS_U64, &meals, "meals per philosopher" },
    { "phil", APPS_U64, &nphil, "philosophers" },
    { "regions", APPS_U64, &nregions, "pcm: groups of neighbouring philosophers" },
    { NULL, 0, NULL, NULL } };
  struct apps_run run;
  char style_tag[32];
  uint64_t i, total = 0, bad = 0, digest = 0, meals_min = UINT64_MAX, meals_max = 0;
  uint64_t forks_wrong = 0, sems_wrong = 0;
  int ok, coop;
  apps_parse(argc, argv, opts, "DP, dining philosophers (Keen et al. 4.1, 4.2)");
  if (think_w == UINT64_MAX) think_w = work;
  if (eat_w == UINT64_MAX) eat_w = work;
  if (nphil < 2 || nphil > MAXPHIL || nregions < 1 || nregions > nphil) {
    fprintf(stderr, "dp: need 2 <= --phil <= %d and 1 <= --regions <= --phil\n", MAXPHIL);
    return 2;
  }
  if (!apps_one_of(style, "cp cm pcm")) { fprintf(stderr, "dp: --style cp|cm|pcm\n"); return 2; }
  if (strcmp(style, "pcm") == 0) {
    if (!apps_one_of(variant_name, "pure dp1 dp2")) { fprintf(stderr, "dp: --variant pure|dp1|dp2\n"); return 2; }
    snprintf(style_tag, sizeof style_tag, strcmp(variant_name, "pure") ? "pcm.%s" : "pcm", variant_name);
  } else {
    snprintf(style_tag, sizeof style_tag, "%s", style);
  }
  coop = strcmp(style, "cp") == 0 ? APPS_CP : strcmp(style, "cm") == 0 ? APPS_CM : APPS_PCM;
  apps_begin(&run, "dp", style_tag, coop);

  for (i = 0; i < nphil; i++) APPS_CHECK(ursa_sem_init(&fork_sem[i], 1));
#ifndef APPS_PTHREADS
  for (i = 0; i < nphil; i++) dp_fork_free[i] = 1;
  if (strcmp(style, "pcm") == 0) {
    variant = strcmp(variant_name, "dp1") == 0 ? 1 : strcmp(variant_name, "dp2") == 0 ? 2 : 0;
    for (i = 0; i < nphil; i++) region_of[i] = (unsigned)(i * nregions / nphil);
    for (i = 0; i < nphil; i++)       /* fork f: philosophers f-1 and f */
      cross[i] = region_of[(i + nphil - 1) % nphil] != region_of[i];
    for (i = 0; i < nregions; i++) {
      APPS_CHECK(ursa_sem_init(&prot[i], 1));
      APPS_CHECK(ursa_sem_init(&regsem[i], 1));
      if (variant == 0) APPS_CHECK(ursa_region_init(&regions[i], (int)(i % run.vps)));
    }
  }
#endif

  apps_clock_start(&run);
  for (i = 0; i < nphil; i++) {
    void *arg = (void *)(uintptr_t)i;
    if (strcmp(style, "cp") == 0) apps_spawn(&th[i], phil_cp, arg);
#ifndef APPS_PTHREADS
    else if (strcmp(style, "cm") == 0) apps_spawn(&th[i], phil_cm, arg);
    else if (variant == 0) apps_create_in(&th[i], &regions[region_of[i]], 0, phil_pcm, arg);
    else apps_create_in(&th[i], NULL, (int)(region_of[i] % run.vps), phil_pcm, arg);
#endif
  }
  for (i = 0; i < nphil; i++) APPS_CHECK(ursa_join(th[i], NULL));
  apps_clock_stop(&run);

  for (i = 0; i < nphil; i++) {
    total += ate[i];
    if (ate[i] != meals) bad++;
    if (ate[i] < meals_min) meals_min = ate[i];
    if (ate[i] > meals_max) meals_max = ate[i];
    digest ^= digest_of[i];
  }
  /* every fork back on the table, every semaphore back at its initial 1 */
  for (i = 0; i < nphil; i++) {
    int v = -1;
    APPS_CHECK(ursa_sem_getvalue(&fork_sem[i], &v));
    if (v != 1 || holder[i] != 0) forks_wrong++;
#ifndef APPS_PTHREADS
    if (dp_fork_free[i] != 1) forks_wrong++;
#endif
  }
#ifndef APPS_PTHREADS
  if (strcmp(style, "pcm") == 0) {
    for (i = 0; i < nregions; i++) {
      int v = -1, w = -1;
      APPS_CHECK(ursa_sem_getvalue(&prot[i], &v));
      APPS_CHECK(ursa_sem_getvalue(&regsem[i], &w));
      if (v != 1 || w != 1) sems_wrong++;
    }
  }
#endif
  apps_result(&run, "work=%llu think=%llu eat=%llu meals=%llu phil=%llu regions=%llu",
              (unsigned long long)work, (unsigned long long)think_w, (unsigned long long)eat_w,
              (unsigned long long)meals, (unsigned long long)nphil,
              (unsigned long long)(strcmp(style, "pcm") == 0 ? nregions : 0));
  ok = bad == 0 && violations == 0 && total == meals * nphil && forks_wrong == 0 && sems_wrong == 0;
  apps_answer(&run, ok, "meals_eaten=%llu expected=%llu meals_min=%llu meals_max=%llu hungry_philosophers=%llu "
              "fork_violations=%llu forks_not_on_table=%llu region_sems_wrong=%llu digest=%016llx",
              (unsigned long long)total, (unsigned long long)(meals * nphil), (unsigned long long)meals_min,
              (unsigned long long)meals_max, (unsigned long long)bad, (unsigned long long)violations,
              (unsigned long long)forks_wrong, (unsigned long long)sems_wrong, (unsigned long long)digest);
#ifndef APPS_PTHREADS
  if (strcmp(style, "pcm") == 0 && variant == 0)
    for (i = 0; i < nregions; i++) APPS_CHECK(ursa_region_destroy(&regions[i]));
#endif
  return apps_end(&run, ok);
}
