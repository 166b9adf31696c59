/*
 * rw.c - RW, readers and writers (Keen et al. 4.1, 4.2, 4.3).
 *
 * --readers readers and --writers writers each make --iters accesses to a database of --db
 * words.  An access: --work iterations of the calibrated work loop outside the critical section
 * (the papers' "work"), then the access itself: a reader scans every word and checks they are
 * all equal (a consistent version); a writer writes version + 1 into every word.  An access is
 * long: it does half the database, yields once (ursa_yield; sched_yield natively), then the other
 * half, so other threads run in the middle of it - readers overlap with readers, and writers must
 * wait for them.  Without that yield the cooperative versions would never even see a held lock.
 * Each word visited is a loop iteration with ursa_tick() at its back-edge.
 *
 * Styles:
 *   cp   the SR book's solution with semaphores and "passing the baton" (the papers' CP version:
 *        "a mutual exclusion semaphore and separate semaphores on which to block readers and
 *        writers"): e = 1, r = 0, w = 0, counters nr, nw, dr, dw.  A new reader waits while a
 *        writer writes or waits; a writer's exit prefers waiting readers.  A waiting writer is
 *        woken only when it can proceed.  Run under pcm on N VPs it is also the journal paper's
 *        PCM RW ("the same code for the CP versions and the PCM version", Table XII).
 *   cm   shared variables: nr, nw, ww (writers waiting).  A reader awaits nw == 0 && ww == 0, a
 *        writer (ww++ first) awaits nr == 0 && nw == 0, by URSA_WAITFOR: a waiting writer is woken
 *        at every turn of the run queue, whether it can proceed or not (section 4.3's "needless
 *        awakening").
 *
 * Checked: no reader ever saw a half-written database, no reader read while a writer wrote, no two
 * writers wrote at once, and the final version is writers * iters.  Reported: the largest number
 * of readers seen reading at once.
 */
#include "apps_common.h"

#define MAXT 1024
#define MAXDB 65536

static uint64_t nreaders = 4, nwriters = 2, iters = 100, work = 1000, dbsize = 64, cs_yield = 1;
static const char *style = "cp";

static uint64_t db[MAXDB];
static int active_readers, active_writers;    /* the check (atomics) */
static int max_readers;
static uint64_t inconsistent, overlaps;
static uint64_t digest_of[2 * MAXT];     /* per thread: xor of its work results (deterministic) */
static uint64_t readsum_of[2 * MAXT];    /* per reader: sum of the versions it read */

static inline void overlap_check_read(void) {
  int n = __atomic_add_fetch(&active_readers, 1, __ATOMIC_SEQ_CST), m;
  if (__atomic_load_n(&active_writers, __ATOMIC_SEQ_CST) != 0) __atomic_add_fetch(&overlaps, 1, __ATOMIC_RELAXED);
  m = __atomic_load_n(&max_readers, __ATOMIC_RELAXED);
  while (n > m && !__atomic_compare_exchange_n(&max_readers, &m, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}
static inline void overlap_check_write(void) {
  if (__atomic_add_fetch(&active_writers, 1, __ATOMIC_SEQ_CST) != 1 ||
      __atomic_load_n(&active_readers, __ATOMIC_SEQ_CST) != 0)
    __atomic_add_fetch(&overlaps, 1, __ATOMIC_RELAXED);
}

/* The read: both halves must hold the version seen first.  Returns it. */
static uint64_t do_read(void) {
  uint64_t i, v = db[0], bad = 0, half = dbsize / 2;
  overlap_check_read();
  for (i = 0; i < half; i++) { bad |= db[i] ^ v; ursa_tick(); }
  if (cs_yield) APPS_CHECK(ursa_yield());
  for (i = half; i < dbsize; i++) { bad |= db[i] ^ v; ursa_tick(); }
  if (bad) __atomic_add_fetch(&inconsistent, 1, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&active_readers, 1, __ATOMIC_SEQ_CST);
  return v;
}

static void do_write(void) {
  uint64_t i, v = db[0] + 1, half = dbsize / 2;
  overlap_check_write();
  for (i = 0; i < half; i++) { db[i] = v; ursa_tick(); }
  if (cs_yield) APPS_CHECK(ursa_yield());
  for (i = half; i < dbsize; i++) { db[i] = v; ursa_tick(); }
  __atomic_sub_fetch(&active_writers, 1, __ATOMIC_SEQ_CST);
}

static inline uint64_t seed(uint64_t t, uint64_t k) { return apps_mix64((t << 32) ^ k); }

/* ---- cp: passing the baton (the SR book) ---------------------------------------------------------- */

static ursa_sem_t e, r, w;
static int nr, nw, dr, dw;

static void *reader_cp(void *arg) {
  uint64_t t = (uintptr_t)arg, k, acc = 0;
  for (k = 0; k < iters; k++) {
    acc ^= apps_work(work, seed(t, k));
    APPS_CHECK(ursa_sem_wait(&e));
    if (nw > 0 || dw > 0) { dr++; APPS_CHECK(ursa_sem_post(&e)); APPS_CHECK(ursa_sem_wait(&r)); }
    nr++;
    if (dr > 0) { dr--; APPS_CHECK(ursa_sem_post(&r)); }    /* pass the baton to the next reader */
    else APPS_CHECK(ursa_sem_post(&e));
    readsum_of[t] += do_read();
    APPS_CHECK(ursa_sem_wait(&e));
    nr--;
    if (nr == 0 && dw > 0) { dw--; APPS_CHECK(ursa_sem_post(&w)); }
    else APPS_CHECK(ursa_sem_post(&e));
  }
  digest_of[t] = acc;
  return NULL;
}

static void *writer_cp(void *arg) {
  uint64_t t = (uintptr_t)arg, k, acc = 0;
  for (k = 0; k < iters; k++) {
    acc ^= apps_work(work, seed(t, k));
    APPS_CHECK(ursa_sem_wait(&e));
    if (nr > 0 || nw > 0) { dw++; APPS_CHECK(ursa_sem_post(&e)); APPS_CHECK(ursa_sem_wait(&w)); }
    nw++;
    APPS_CHECK(ursa_sem_post(&e));
    do_write();
    APPS_CHECK(ursa_sem_wait(&e));
    nw--;
    if (dr > 0) { dr--; APPS_CHECK(ursa_sem_post(&r)); }
    else if (dw > 0) { dw--; APPS_CHECK(ursa_sem_post(&w)); }
    else APPS_CHECK(ursa_sem_post(&e));
  }
  digest_of[t] = acc;
  return NULL;
}

#ifndef APPS_PTHREADS
/* ---- cm: shared variables and waitfor ----------------------------------------------------------- */

int rw_nr, rw_nw, rw_ww;    /* external linkage: re-read after every ursa call */

static void *reader_cm(void *arg) {
  uint64_t t = (uintptr_t)arg, k, acc = 0;
  for (k = 0; k < iters; k++) {
    acc ^= apps_work(work, seed(t, k));
    URSA_WAITFOR(rw_nw == 0 && rw_ww == 0);
    rw_nr++;
    readsum_of[t] += do_read();
    rw_nr--;
  }
  digest_of[t] = acc;
  return NULL;
}

static void *writer_cm(void *arg) {
  uint64_t t = (uintptr_t)arg, k, acc = 0;
  for (k = 0; k < iters; k++) {
    acc ^= apps_work(work, seed(t, k));
    rw_ww++;
    URSA_WAITFOR(rw_nr == 0 && rw_nw == 0);
    rw_ww--;
    rw_nw = 1;
    do_write();
    rw_nw = 0;
  }
  digest_of[t] = acc;
  return NULL;
}
#endif

int main(int argc, char **argv) {
  static ursa_thread_t th[2 * MAXT];
  struct apps_opt opts[] = {
    { "style", APPS_STR, &style, "cp | cm" },
    { "work", APPS_U64, &work, "iterations of the work loop between accesses" },
    { "iters", APPS_U64, &iters, "accesses per reader and per writer" },
    { "readers", APPS_U64, &nreaders, "readers" },
    { "writers", APPS_U64, &nwriters, "writers" },
    { "db", APPS_U64, &dbsize, "words in the database" },
    { "cs-yield", APPS_U64, &cs_yield, "1: an access yields once in its middle; 0: it does not" },
    { NULL, 0, NULL, NULL } };
  struct apps_run run;
  uint64_t i, nt, final, want, digest = 0, readsum = 0;
  int ok;
  apps_parse(argc, argv, opts, "RW, readers and writers (Keen et al. 4.1, 4.2, 4.3)");
  if (!apps_one_of(style, "cp cm")) { fprintf(stderr, "rw: --style cp|cm\n"); return 2; }
  if (nreaders > MAXT || nwriters > MAXT || nreaders + nwriters == 0 || dbsize < 2 || dbsize > MAXDB) {
    fprintf(stderr, "rw: up to %d readers and writers, 2 <= --db <= %d\n", MAXT, MAXDB);
    return 2;
  }
  nt = nreaders + nwriters;
  apps_begin(&run, "rw", style, strcmp(style, "cp") == 0 ? APPS_CP : APPS_CM);
  APPS_CHECK(ursa_sem_init(&e, 1));
  APPS_CHECK(ursa_sem_init(&r, 0));
  APPS_CHECK(ursa_sem_init(&w, 0));

  apps_clock_start(&run);
  {
    uint64_t made_r = 0, made_w = 0;
    for (i = 0; i < nt; i++) {
      /* spread the writers evenly among the readers */
      int writer = made_w < nwriters && (made_r >= nreaders || (i + 1) * nwriters >= (made_w + 1) * nt);
      void *arg = (void *)(uintptr_t)i;
      void *(*fn)(void *);
      if (writer) made_w++; else made_r++;
#ifndef APPS_PTHREADS
      if (strcmp(style, "cm") == 0) fn = writer ? writer_cm : reader_cm;
      else
#endif
        fn = writer ? writer_cp : reader_cp;
      apps_spawn(&th[i], fn, arg);
    }
  }
  for (i = 0; i < nt; i++) APPS_CHECK(ursa_join(th[i], NULL));
  apps_clock_stop(&run);

  for (i = 0; i < nt; i++) { digest ^= digest_of[i]; readsum += readsum_of[i]; }
  final = db[0];
  want = nwriters * iters;
  for (i = 1; i < dbsize; i++) if (db[i] != final) inconsistent++;
  apps_result(&run, "work=%llu iters=%llu readers=%llu writers=%llu db=%llu cs_yield=%llu",
              (unsigned long long)work, (unsigned long long)iters, (unsigned long long)nreaders,
              (unsigned long long)nwriters, (unsigned long long)dbsize, (unsigned long long)cs_yield);
  ok = inconsistent == 0 && overlaps == 0 && final == want;
  apps_answer(&run, ok, "version=%llu expected=%llu inconsistent_reads=%llu overlaps=%llu max_concurrent_readers=%d "
              "versions_read_sum=%llu digest=%016llx",
              (unsigned long long)final, (unsigned long long)want, (unsigned long long)inconsistent,
              (unsigned long long)overlaps, max_readers, (unsigned long long)readsum, (unsigned long long)digest);
  return apps_end(&run, ok);
}
