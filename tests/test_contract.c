/*
 * test_contract.c - rows of docs/GUIDE.md's error table that no other test asserted (issue #22
 * item 4; scripts/check-error-table.py finds each row's test by the contract marker in its body):
 * an rwlock whose reader total is full, and ursa_init when the system refuses a VP's kernel
 * thread or a cp-ts timer.
 */
#include "task.h"

#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000ull

/* ---- rwlock-readers-full ----------------------------------------------------------------------- */

/* 2^32 - 1 read holds take minutes to make one by one, so the test makes two and sets the total
 * the rwlock keeps (src/sync/rwlock.c: struct ursa__rwlock starts with uint32_t magic, then
 * uint32_t readers, the holds of every thread) to what 2^32 - 3 more holders would have made.
 * The layout is checked first, by what the field reads as holds come and go: if it changed, the
 * test says so rather than write elsewhere. */
static ursa_rwlock_t full_rw;

static uint32_t reader_total(void) {
  uint32_t v;
  memcpy(&v, (const char *)&full_rw + sizeof(uint32_t), sizeof v);
  return v;
}

static void set_reader_total(uint32_t v) { memcpy((char *)&full_rw + sizeof(uint32_t), &v, sizeof v); }

static void *read_elsewhere(void *arg) {
  struct timespec ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  (void)arg;
  ASSERT_ERR(ursa_rwlock_rdlock(&full_rw), -EAGAIN);        /* refused, not queued */
  ASSERT_ERR(ursa_rwlock_tryrdlock(&full_rw), -EAGAIN);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&full_rw, CLOCK_MONOTONIC, &ts), -EAGAIN);
  ASSERT_ERR(ursa_rwlock_trywrlock(&full_rw), -EBUSY);      /* still read-held */
  return NULL;
}

static void *write_elsewhere(void *arg) {
  (void)arg;
  ASSERT_OK(ursa_rwlock_trywrlock(&full_rw));
  ASSERT_OK(ursa_rwlock_unlock(&full_rw));
  return NULL;
}

static void in_thread(void *(*fn)(void *)) {
  ursa_thread_t t;
  ASSERT_OK(ursa_create(&t, NULL, fn, NULL));
  ASSERT_OK(ursa_join(t, NULL));
}

TEST_IMPL(contract_rwlock_reader_total_never_wraps) {
  /* contract: rwlock-readers-full */
  struct timespec ts;
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = 1;                                                /* nobody touches the lock meanwhile */
  ASSERT_OK(ursa_init(&c));
  ASSERT_OK(ursa_rwlock_init(&full_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&full_rw));
  ASSERT_OK(ursa_rwlock_rdlock(&full_rw));
  if (reader_total() != 2) FAIL("the rwlock's reader total is not where this test expects it (read "
                                "%u with 2 holds): update reader_total() to src/sync/rwlock.c", reader_total());
  ASSERT_OK(ursa_rwlock_unlock(&full_rw));
  ASSERT_EQ(reader_total(), 1);

  set_reader_total(UINT32_MAX - 1);                         /* 1 hold of ours, 2^32 - 3 phantom ones */
  ASSERT_OK(ursa_rwlock_rdlock(&full_rw));                  /* the (2^32 - 1)th hold: the last one */
  ASSERT_EQ(reader_total(), UINT32_MAX);
  ASSERT_ERR(ursa_rwlock_rdlock(&full_rw), -EAGAIN);        /* the 2^32th would wrap the total to 0 */
  ASSERT_ERR(ursa_rwlock_tryrdlock(&full_rw), -EAGAIN);
  ts = test_deadline_in(CLOCK_MONOTONIC, 10 * MS);
  ASSERT_ERR(ursa_rwlock_timedrdlock(&full_rw, CLOCK_MONOTONIC, &ts), -EAGAIN);
  in_thread(read_elsewhere);                                /* for another thread too */
  ASSERT_EQ(reader_total(), UINT32_MAX);                    /* nothing was counted */

  set_reader_total(2);                                      /* the phantoms leave; our 2 holds stay */
  ASSERT_OK(ursa_rwlock_unlock(&full_rw));
  ASSERT_OK(ursa_rwlock_unlock(&full_rw));
  ASSERT_ERR(ursa_rwlock_unlock(&full_rw), -EPERM);
  ASSERT_EQ(reader_total(), 0);
  in_thread(write_elsewhere);                               /* free: a writer gets it */
  ASSERT_OK(ursa_rwlock_destroy(&full_rw));
  ASSERT_OK(ursa_fini());
  return 0;
}

/* ---- init-no-kernel-thread ---------------------------------------------------------------------- */

/* Waits for the child and returns its exit status (a failure if it died of a signal). */
static int child_exit(pid_t pid, const char *what) {
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status)) FAIL("%s: the child died of signal %d", what, WTERMSIG(status));
  return WEXITSTATUS(status);
}

/* The child's exit status for ursa_init's result r when want was expected: 0, or 100 + -r. */
static int verdict(int r, int want) { return r == want ? 0 : 100 + (-r & 0x3f); }

/* In a child where no new kernel thread can be made (RLIMIT_NPROC at 0; as root, whom it does not
 * bind, after becoming nobody): ursa_init with 2 VPs gets -EAGAIN and leaves nothing behind, so
 * that ursa_init with 1 VP (no kernel thread to make) then works. */
static void no_thread_child(void) {
  struct rlimit zero = { 0, 0 };
  ursa_config_t c;
  int r;
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
  if (setrlimit(RLIMIT_NPROC, &zero) != 0) _exit(91);
  memset(&c, 0, sizeof c);
  c.vps = 2;
  if ((r = ursa_init(&c)) != -EAGAIN) _exit(verdict(r, -EAGAIN));
  c.vps = 1;
  if ((r = ursa_init(&c)) != 0) _exit(verdict(r, 0) + 50);
  _exit(ursa_fini() == 0 ? 0 : 92);
}

/* In a child whose timers cannot be made (RLIMIT_SIGPENDING at 0: timer_create fails with EAGAIN):
 * ursa_init with cp-ts gets -EAGAIN (or -ENOTSUP where cp-ts cannot run: exit 77). */
static void no_timer_child(void) {
  struct rlimit zero = { 0, 0 };
  ursa_config_t c;
  int r;
  if (setrlimit(RLIMIT_SIGPENDING, &zero) != 0) _exit(91);
  memset(&c, 0, sizeof c);
  c.vps = 1;
  c.model = URSA_MODEL_CP_TS;
  r = ursa_init(&c);
  if (r == -ENOTSUP) _exit(77);
  if (r != -EAGAIN) _exit(verdict(r, -EAGAIN));
  c.model = URSA_MODEL_CM;
  if ((r = ursa_init(&c)) != 0) _exit(verdict(r, 0) + 50);  /* cm needs no timer */
  _exit(ursa_fini() == 0 ? 0 : 92);
}

TEST_IMPL(contract_init_refused_thread_or_timer) {
  /* contract: init-no-kernel-thread */
  pid_t pid;
  int st;
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) no_thread_child();
  st = child_exit(pid, "ursa_init under RLIMIT_NPROC = 0");
  if (st != 0)
    FAIL("ursa_init with 2 VPs where no kernel thread can be made: exit %d (90-92: the setup or "
         "ursa_fini failed; 100+k: returned -k, not -EAGAIN; 150+k: then 1 VP returned -k)", st);

  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) no_timer_child();
  st = child_exit(pid, "ursa_init with cp-ts under RLIMIT_SIGPENDING = 0");
  if (st == 77) SKIP_IF_ABSENT(TEST_EXPECT_PREEMPT, "cp-ts is not available in this build");
  if (st != 0)
    FAIL("ursa_init with cp-ts where no timer can be made: exit %d (91-92: the setup or ursa_fini "
         "failed; 100+k: returned -k, not -EAGAIN; 150+k: then cm returned -k)", st);
  return 0;
}
