/* Execution models (src/model/): choosing one, preemption by time-slicing (cp-ts) and iteration
 * counting (cp-ic), the no-preemption section, deferred preemption, ursa_require_cooperative. */
#include "task.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS 1000000ull

static int model_init(int model, unsigned vps, unsigned quantum_us, unsigned switch_count) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.model = model;
  c.vps = vps;
  c.quantum_us = quantum_us;
  c.switch_count = switch_count;
  return ursa_init(&c);
}

/* cp-ts is refused where it cannot be safe (ThreadSanitizer; a sanitizer runtime linked into the
 * executable): those builds skip the cp-ts tests. */
#define INIT_OR_SKIP(model, vps, q, n)                                                      \
  do {                                                                                      \
    int rc_ = model_init(model, vps, q, n);                                                 \
    if (rc_ == -ENOTSUP && (model) == URSA_MODEL_CP_TS)                                     \
      SKIP_IF_ABSENT(TEST_EXPECT_PREEMPT, "cp-ts is not available in this build (see the message above)"); \
    ASSERT_OK(rc_);                                                                         \
  } while (0)

/* ---- choosing a model --------------------------------------------------------------------------- */

TEST_IMPL(model_select) {
  /* contract: init-cpts-unsafe */
  int m;
  ASSERT_EQ(ursa_model(), 0);
  ASSERT_ERR(ursa_require_cooperative(), -EPERM);
  for (m = URSA_MODEL_CM; m <= URSA_MODEL_CP_IC; m++) {
    int rc = model_init(m, m == URSA_MODEL_CM ? 0 : 2, 0, 0);
    if (rc == -ENOTSUP && m == URSA_MODEL_CP_TS) {
      if (TEST_EXPECT_PREEMPT) FAIL("cp-ts refused, but this build must support it (tests/task.h)");
      continue;
    }
    ASSERT_OK(rc);
    ASSERT_EQ(ursa_model(), m);
    ASSERT_EQ(ursa_vp_count(), m == URSA_MODEL_CM ? 1 : 2);
    ASSERT_EQ(ursa_require_cooperative(), m <= URSA_MODEL_PCM ? 0 : -ENOTSUP);
    ASSERT_OK(ursa_fini());
  }
  ASSERT(strcmp(ursa_model_name(URSA_MODEL_CM), "cm") == 0);
  ASSERT(strcmp(ursa_model_name(URSA_MODEL_PCM), "pcm") == 0);
  ASSERT(strcmp(ursa_model_name(URSA_MODEL_CP_TS), "cp-ts") == 0);
  ASSERT(strcmp(ursa_model_name(URSA_MODEL_CP_IC), "cp-ic") == 0);
  ASSERT(strcmp(ursa_model_name(7), "?") == 0);
  /* the default: pcm with several VPs, cm with one */
  ASSERT_OK(model_init(0, 2, 0, 0));
  ASSERT_EQ(ursa_model(), URSA_MODEL_PCM);
  ASSERT_OK(ursa_fini());
  ASSERT_OK(model_init(0, 1, 0, 0));
  ASSERT_EQ(ursa_model(), URSA_MODEL_CM);
  ASSERT_OK(ursa_fini());
  /* the environment */
  setenv("URSA_MODEL", "cp-ic", 1);
  ASSERT_OK(model_init(0, 1, 0, 0));
  ASSERT_EQ(ursa_model(), URSA_MODEL_CP_IC);
  ASSERT_OK(ursa_fini());
  setenv("URSA_MODEL", "cm", 1);
  unsetenv("URSA_VPS");
  ASSERT_OK(model_init(0, 0, 0, 0));                 /* cm decides the VP count */
  ASSERT_EQ(ursa_vp_count(), 1);
  ASSERT_OK(ursa_fini());
  unsetenv("URSA_MODEL");
  return 0;
}

TEST_IMPL(model_bad_configuration) {
  ASSERT_ERR(model_init(URSA_MODEL_CM, 2, 0, 0), -EINVAL);       /* cm is one VP */
  ASSERT_ERR(model_init(9, 1, 0, 0), -EINVAL);
  ASSERT_ERR(model_init(-1, 1, 0, 0), -EINVAL);
  ASSERT_ERR(model_init(URSA_MODEL_CP_TS, 1, 99, 0), -EINVAL);   /* below 100 us */
  ASSERT_ERR(model_init(URSA_MODEL_CP_TS, 1, 10000001, 0), -EINVAL);
  ASSERT_EQ(ursa_model(), 0);                        /* nothing was left initialized */
  /* bad environment values are ignored with a warning: the defaults apply */
  setenv("URSA_MODEL", "preemptive", 1);
  setenv("URSA_QUANTUM_US", "5", 1);
  setenv("URSA_SWITCH_COUNT", "many", 1);
  ASSERT_OK(model_init(0, 1, 0, 0));
  ASSERT_EQ(ursa_model(), URSA_MODEL_CM);
  ASSERT_OK(ursa_fini());
  unsetenv("URSA_MODEL");
  unsetenv("URSA_QUANTUM_US");
  unsetenv("URSA_SWITCH_COUNT");
  /* the section's misuse */
  ASSERT_ERR(ursa_preempt_disable(), -EPERM);       /* outside ursa */
  ASSERT_ERR(ursa_preempt_enable(), -EPERM);
  ursa_tick();                                       /* a no-op outside ursa */
  ASSERT_OK(model_init(URSA_MODEL_CP_IC, 1, 0, 0));
  ursa_tick();
  ASSERT_ERR(ursa_preempt_enable(), -EPERM);        /* no disable to end */
  ASSERT_OK(ursa_preempt_disable());
  ASSERT_OK(ursa_preempt_disable());
  ASSERT_OK(ursa_preempt_enable());
  ASSERT_OK(ursa_preempt_enable());
  ASSERT_ERR(ursa_preempt_enable(), -EPERM);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- two busy loops ---------------------------------------------------------------------------- */

/* A busy loop that never yields: it waits (calling only ursa_tick, as a compiler-inserted
 * back-edge check would) until the other loop has set its flag, or until `limit` ns passed. */
static _Atomic int flag[2];
static uint64_t spin_limit_ns;
static _Atomic int saw_other[2];

static void *busy(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t end = test_now_ns() + spin_limit_ns;
  atomic_store(&flag[me], 1);
  while (!atomic_load(&flag[!me]) && test_now_ns() < end) ursa_tick();
  atomic_store(&saw_other[me], atomic_load(&flag[!me]));
  return NULL;
}

static int run_two_loops(void) {
  ursa_thread_t t[2];
  int i;
  for (i = 0; i < 2; i++) { atomic_store(&flag[i], 0); atomic_store(&saw_other[i], 0); }
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_create(&t[i], NULL, busy, (void *)(intptr_t)i));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_join(t[i], NULL));
  return 0;
}

/* One VP: only preemption lets the second loop run while the first spins. */
TEST_IMPL(model_busy_loops_progress) {
  ursa_stats_t s;
  /* cm: the first loop spins its whole 200 ms without the second one ever running */
  spin_limit_ns = 200 * MS;
  ASSERT_OK(model_init(URSA_MODEL_CM, 1, 0, 0));
  ASSERT_EQ(run_two_loops(), 0);
  ASSERT_EQ(atomic_load(&saw_other[0]), 0);
  ASSERT_EQ(atomic_load(&saw_other[1]), 1);          /* it ran once the first had finished */
  ASSERT_OK(ursa_stats(&s));
  ASSERT_EQ(s.preemptions, 0);
  ASSERT_OK(ursa_fini());
  /* cp-ic: every 1000th tick switches */
  spin_limit_ns = 10000 * MS * TEST_TIME_FACTOR;
  ASSERT_OK(model_init(URSA_MODEL_CP_IC, 1, 0, 1000));
  ASSERT_EQ(run_two_loops(), 0);
  ASSERT_EQ(atomic_load(&saw_other[0]) + atomic_load(&saw_other[1]), 2);
  ASSERT_OK(ursa_stats(&s));
  ASSERT_GE(s.preemptions, 1);
  ASSERT_GE(s.ticks, 1000);
  ASSERT_OK(ursa_fini());
  /* cp-ts: a 1 ms quantum */
  INIT_OR_SKIP(URSA_MODEL_CP_TS, 1, 1000, 0);
  ASSERT_EQ(run_two_loops(), 0);
  ASSERT_EQ(atomic_load(&saw_other[0]) + atomic_load(&saw_other[1]), 2);
  ASSERT_OK(ursa_stats(&s));
  ASSERT_GE(s.preemptions, 1);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* cp-ic counts exactly: with switch count 100, 10,000 ticks of one thread switch 100 times. */
static _Atomic int other_runs;
static void *count_runs(void *arg) {
  volatile int *stop = arg;
  while (!*stop) { atomic_fetch_add(&other_runs, 1); ursa_yield(); }
  return NULL;
}

TEST_IMPL(model_tick_counts) {
  ursa_thread_t t;
  ursa_stats_t s0, s1;
  volatile int stop = 0;
  int i;
  ASSERT_OK(model_init(URSA_MODEL_CP_IC, 1, 0, 100));
  ASSERT_OK(ursa_create(&t, NULL, count_runs, (void *)&stop));
  ASSERT_OK(ursa_yield());                           /* let it start */
  ASSERT_OK(ursa_stats(&s0));
  for (i = 0; i < 10000; i++) ursa_tick();
  ASSERT_OK(ursa_stats(&s1));
  ASSERT_EQ(s1.ticks - s0.ticks, 10000);
  ASSERT_EQ(s1.preemptions - s0.preemptions, 100);
  ASSERT_EQ(s1.yields - s0.yields, 100);             /* the other thread's: a preemption is no yield */
  stop = 1;
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- no preemption inside a disabled section ---------------------------------------------------- */

static _Atomic int other_ran;
static void *set_other(void *arg) { (void)arg; atomic_store(&other_ran, 1); return NULL; }

static int disabled_section(int model) {
  ursa_thread_t t;
  ursa_stats_t s;
  uint64_t end;
  atomic_store(&other_ran, 0);
  ASSERT_OK(ursa_preempt_disable());                 /* before the create: a tick between the two
                                                        let the new thread run first (qemu) */
  ASSERT_OK(ursa_preempt_disable());                 /* nested */
  ASSERT_OK(ursa_create(&t, NULL, set_other, NULL));
  end = test_now_ns() + 50 * MS;
  while (test_now_ns() < end) ursa_tick();           /* 50 ms: many quanta, many counts */
  ASSERT_OK(ursa_preempt_enable());
  end = test_now_ns() + 20 * MS;
  while (test_now_ns() < end) ursa_tick();           /* still disabled (one level left) */
  ASSERT_EQ(atomic_load(&other_ran), 0);
  ASSERT_OK(ursa_stats(&s));
  ASSERT_EQ(s.preemptions, 0);
  if (model == URSA_MODEL_CP_TS) ASSERT_GE(s.preempt_deferred, 1);
  ASSERT_OK(ursa_preempt_enable());                  /* the owed preemption happens here */
  ASSERT_EQ(atomic_load(&other_ran), 1);
  ASSERT_OK(ursa_stats(&s));
  ASSERT_EQ(s.preemptions, 1);
  ASSERT_OK(ursa_join(t, NULL));
  return 0;
}

TEST_IMPL(model_preempt_disabled_section) {
  ASSERT_OK(model_init(URSA_MODEL_CP_IC, 1, 0, 1000));
  ASSERT_EQ(disabled_section(URSA_MODEL_CP_IC), 0);
  ASSERT_OK(ursa_fini());
  INIT_OR_SKIP(URSA_MODEL_CP_TS, 1, 100, 0);
  ASSERT_EQ(disabled_section(URSA_MODEL_CP_TS), 0);
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- preempted threads stay on their VP ---------------------------------------------------------- */

static _Atomic int moved;
static void *spin_on_vp(void *arg) {
  int vp = ursa_vp_self();
  uint64_t end = test_now_ns() + 300 * MS;
  (void)arg;
  while (test_now_ns() < end)
    if (ursa_vp_self() != vp) atomic_store(&moved, 1);   /* ursa_vp_self never switches */
  return NULL;
}

TEST_IMPL(model_preempted_thread_keeps_its_vp) {
  ursa_thread_t t[6];
  ursa_stats_t s;
  int i;
  INIT_OR_SKIP(URSA_MODEL_CP_TS, 2, 200, 0);
  atomic_store(&moved, 0);
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_create(&t[i], NULL, spin_on_vp, NULL));
  for (i = 0; i < 6; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_stats(&s));
  ASSERT_OK(ursa_fini());
  ASSERT_EQ(atomic_load(&moved), 0);
  ASSERT_GE(s.preemptions, 1);
  return 0;
}

/* ---- malloc and stdio under a 100 us quantum ---------------------------------------------------- */

/* Threads that spend most of their time in malloc, free and stdio (whose locks belong to the
 * kernel thread), preempted every 100 us on every VP: no deadlock, no corruption, no sanitizer
 * report.  URSA_TEST_MALLOC_SECONDS runs it longer (issue #4 asks for 10 minutes once). */
static _Atomic int malloc_failures;
static double malloc_seconds;

static void *malloc_stdio(void *arg) {
  uint64_t seed = 0x9e3779b97f4a7c15ull * ((uint64_t)(intptr_t)arg + 1);
  uint64_t end = test_now_ns() + (uint64_t)(malloc_seconds * 1e9);
  FILE *f = tmpfile();
  char *blocks[64] = { 0 };
  size_t sizes[64] = { 0 };
  char line[128];
  unsigned long lines = 0;
  if (f == NULL) { atomic_fetch_add(&malloc_failures, 1); return NULL; }
  while (test_now_ns() < end) {
    unsigned k = rnd(&seed, 64);
    if (blocks[k]) {                                  /* check the pattern, then free */
      for (size_t j = 0; j < sizes[k]; j += 61)
        if (blocks[k][j] != (char)(k + j)) atomic_fetch_add(&malloc_failures, 1);
      free(blocks[k]);
      blocks[k] = NULL;
    } else {
      sizes[k] = 1 + rnd(&seed, 8192);
      if ((blocks[k] = malloc(sizes[k])) == NULL) { atomic_fetch_add(&malloc_failures, 1); continue; }
      for (size_t j = 0; j < sizes[k]; j += 61) blocks[k][j] = (char)(k + j);
    }
    snprintf(line, sizeof line, "%u %zu %p\n", k, sizes[k], (void *)blocks[k]);
    fputs(line, f);
    if (rnd(&seed, 64) == 0) { rewind(f); while (fgets(line, sizeof line, f)) {} }
    if (++lines % 4096 == 0) {                        /* keep the file small: a new one */
      fclose(f);
      if ((f = tmpfile()) == NULL) { atomic_fetch_add(&malloc_failures, 1); break; }
    }
  }
  for (int k = 0; k < 64; k++) free(blocks[k]);
  if (f) fclose(f);
  return NULL;
}

TEST_IMPL(model_malloc_stdio_preempted) {
  ursa_thread_t t[8];
  ursa_stats_t s;
  const char *e = getenv("URSA_TEST_MALLOC_SECONDS");
  int i;
  malloc_seconds = e && *e ? atof(e) : 1.0;
  INIT_OR_SKIP(URSA_MODEL_CP_TS, 2, 100, 0);
  atomic_store(&malloc_failures, 0);
  for (i = 0; i < 8; i++) ASSERT_OK(ursa_create(&t[i], NULL, malloc_stdio, (void *)(intptr_t)i));
  for (i = 0; i < 8; i++) ASSERT_OK(ursa_join(t[i], NULL));
  ASSERT_OK(ursa_stats(&s));
  ASSERT_OK(ursa_fini());
  ASSERT_EQ(atomic_load(&malloc_failures), 0);
  printf("malloc/stdio under cp-ts 100 us: %.1f s, %llu preemptions, %llu deferred\n", malloc_seconds,
         (unsigned long long)s.preemptions, (unsigned long long)s.preempt_deferred);
  ASSERT_GE(s.preemptions + s.preempt_deferred, 1);
  return 0;
}

/* ---- timed waits with short quanta -------------------------------------------------------------- */

static ursa_sem_t tw_sem;
static _Atomic int tw_bad, tw_stop;

static void *timed_waiter(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < 40; i++) {
    uint64_t wait = (1 + (uint64_t)(i % 4)) * MS, t0 = test_now_ns();
    struct timespec d = test_deadline_in(CLOCK_MONOTONIC, wait);
    int rc = ursa_sem_timedwait(&tw_sem, CLOCK_MONOTONIC, &d);
    uint64_t took = test_now_ns() - t0;
    const char *bad = rc == -ETIMEDOUT && took < wait ? "timed out early"
                      : rc != 0 && rc != -ETIMEDOUT ? "an undocumented result"
                      : took > (wait + 5000 * MS) * TEST_TIME_FACTOR ? "a lost wake-up" : NULL;   /* (1.4 s
                      were seen beside three copies of this test and make test: no bound below
                      seconds is about ursa) */
    if (bad) {
      fprintf(stderr, "timed wait %d: %s: rc %d after %llu ns of %llu\n", i, bad, rc,
              (unsigned long long)took, (unsigned long long)wait);
      atomic_fetch_add(&tw_bad, 1);
    }
  }
  return NULL;
}

static void *spinner(void *arg) {
  (void)arg;
  while (!atomic_load(&tw_stop)) {}
  return NULL;
}

static void *poster(void *arg) {
  (void)arg;
  while (!atomic_load(&tw_stop)) {
    uint64_t end = test_now_ns() + 3 * MS;
    while (test_now_ns() < end) {}
    ursa_sem_post(&tw_sem);
  }
  return NULL;
}

TEST_IMPL(model_timed_waits_short_quanta) {
  ursa_thread_t w[4], sp[2], po;
  int i;
  INIT_OR_SKIP(URSA_MODEL_CP_TS, 2, 100, 0);
  atomic_store(&tw_bad, 0);
  atomic_store(&tw_stop, 0);
  ASSERT_OK(ursa_sem_init(&tw_sem, 0));
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_create(&sp[i], NULL, spinner, NULL));
  ASSERT_OK(ursa_create(&po, NULL, poster, NULL));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_create(&w[i], NULL, timed_waiter, NULL));
  for (i = 0; i < 4; i++) ASSERT_OK(ursa_join(w[i], NULL));
  atomic_store(&tw_stop, 1);
  for (i = 0; i < 2; i++) ASSERT_OK(ursa_join(sp[i], NULL));
  ASSERT_OK(ursa_join(po, NULL));
  ASSERT_OK(ursa_sem_destroy(&tw_sem));
  ASSERT_OK(ursa_fini());
  ASSERT_EQ(atomic_load(&tw_bad), 0);
  return 0;
}
