/*
 * test_hardening.c - issue #22's hardening items: a dump that reads descriptors while another VP
 * unmaps their stacks (item 2), the region registry in ursa-owned memory (item 3), fork from an
 * ursa thread (item 4), and the contract of a few error paths (item 9).
 */
#include "task.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void init_vps(unsigned vps) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = vps;
  ASSERT_OK(ursa_init(&c));
}

/* ---- item 2: a dump while another VP releases threads ---------------------------------------- */

/* Threads with a stack of a size other than the default: never pooled, so releasing one unmaps
 * its stack (and the descriptor at its top) at once. */
#define BIG_STACK (1024 * 1024)
#define CHURN_BATCH 8

static atomic_int churn_stop;

static void *churn_child(void *arg) {
  int i, n = (int)(intptr_t)arg;
  for (i = 0; i < n; i++) ursa_yield();      /* READY a while: the dump reads it, backtrace too */
  return NULL;
}

/* Creates batches of big-stack threads and joins (or detaches) them until told to stop, or for
 * `rounds` batches. */
static void *churn(void *arg) {
  int rounds = (int)(intptr_t)arg, r, i;
  ursa_attr_t a;
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setstacksize(&a, BIG_STACK));
  for (r = 0; r < rounds && !atomic_load(&churn_stop); r++) {
    ursa_thread_t t[CHURN_BATCH];
    for (i = 0; i < CHURN_BATCH; i++) ASSERT_OK(ursa_create(&t[i], &a, churn_child, (void *)(intptr_t)(i % 3)));
    for (i = 0; i < CHURN_BATCH; i++) {
      if ((r + i) % 4 == 0) ASSERT_OK(ursa_detach(t[i]));
      else ASSERT_OK(ursa_join(t[i], NULL));
    }
  }
  for (i = 0; i < 4; i++) ursa_yield();      /* the detached ones finish and are reaped */
  ASSERT_OK(ursa_attr_destroy(&a));
  return (void *)(intptr_t)r;
}

TEST_IMPL(hardening_dump_while_vp_releases) {
  ursa_attr_t a;
  ursa_thread_t c;
  FILE *devnull = fopen("/dev/null", "w");
  int i;
  void *rounds;
#if defined(__SANITIZE_THREAD__)
  RETURN_SKIP("ursa_dump reads other VPs' threads racily, by design (a snapshot); not under TSan");
#endif
  ASSERT(devnull != NULL);
  init_vps(2);
  atomic_store(&churn_stop, 0);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setvp(&a, 1));
  ASSERT_OK(ursa_attr_setbound(&a, 1));      /* the churn on VP 1, the dumps on VP 0 (main) */
  ASSERT_OK(ursa_create(&c, &a, churn, (void *)(intptr_t)100000));
  for (i = 0; i < 300; i++) ASSERT_OK(ursa_dump(devnull));
  atomic_store(&churn_stop, 1);
  ASSERT_OK(ursa_join(c, &rounds));
  printf("%d dumps while VP 1 ran %d batches of %d threads\n", i, (int)(intptr_t)rounds, CHURN_BATCH);
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  fclose(devnull);
  return 0;
}

TEST_IMPL(hardening_dump_signal_while_vp_releases) {
  /* The dump thread of URSA_DUMP_SIGNAL reads while VP 0 (main) creates and releases threads. */
  int saved, devnull, i;
#if defined(__SANITIZE_THREAD__)
  RETURN_SKIP("the signal dump reads the thread table racily, by design; not under TSan");
#endif
  setenv("URSA_DUMP_SIGNAL", "SIGUSR2", 1);
  fflush(stderr);
  saved = dup(2);
  devnull = open("/dev/null", O_WRONLY);
  ASSERT(saved >= 0 && devnull >= 0);
  ASSERT_EQ(dup2(devnull, 2), 2);            /* the dumps go to stderr */
  init_vps(1);
  atomic_store(&churn_stop, 0);
  for (i = 0; i < 2000; i++) {
    ASSERT_EQ(kill(getpid(), SIGUSR2), 0);   /* several posts may make one dump: fine */
    churn((void *)(intptr_t)4);
  }
  ASSERT_OK(ursa_fini());                    /* waits for the dump in progress */
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(devnull);
  unsetenv("URSA_DUMP_SIGNAL");
  return 0;
}

/* ---- item 3: the region registry ------------------------------------------------------------- */

static void *report_vp(void *arg) { (void)arg; return (void *)(intptr_t)ursa_vp_self(); }

TEST_IMPL(hardening_region_init_twice_refused) {
  ursa_region_t r;
  ursa_attr_t a;
  ursa_thread_t t;
  void *where;
  init_vps(2);
  ASSERT_OK(ursa_region_init(&r, 0));
  ASSERT_ERR(ursa_region_init(&r, 1), -EBUSY);   /* a live region: refused, unchanged */
  ASSERT_EQ(ursa_region_vp(&r), 0);
  ASSERT_OK(ursa_region_move(&r, 1));            /* (a registry linked to itself spun here) */
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r));
  ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
  ASSERT_OK(ursa_join(t, &where));
  ASSERT_EQ((intptr_t)where, 1);
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_ERR(ursa_region_destroy(&r), -EINVAL);
  ASSERT_OK(ursa_region_init(&r, 1));            /* destroyed: may be initialized again */
  ASSERT_EQ(ursa_region_vp(&r), 1);
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(hardening_region_freed_storage_isolated) {
  /* A region whose storage is reused without ursa_region_destroy (it never had threads) must not
   * take the other regions down. */
  ursa_region_t *lost = malloc(sizeof *lost), r2;
  ursa_attr_t a;
  ursa_thread_t t;
  void *where;
  int i;
  ASSERT(lost != NULL);
  init_vps(2);
  ASSERT_OK(ursa_region_init(lost, 0));
  ASSERT_OK(ursa_region_init(&r2, 0));
  memset(lost, 0xa5, sizeof *lost);              /* the storage, reused by other code */
  ASSERT_ERR(ursa_region_destroy(lost), -EINVAL);
  ASSERT_ERR(ursa_region_move(lost, 1), -EINVAL);
  free(lost);
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r2));
  for (i = 0; i < 4; i++) {
    int to = (i + 1) % 2;
    ASSERT_OK(ursa_region_move(&r2, to));
    ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
    ASSERT_OK(ursa_join(t, &where));
    ASSERT_EQ((intptr_t)where, to);
  }
  ASSERT_OK(ursa_region_destroy(&r2));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(hardening_create_in_destroyed_region) {
  ursa_region_t r;
  ursa_attr_t a;
  ursa_thread_t t;
  init_vps(1);
  ASSERT_OK(ursa_region_init(&r, 0));
  ASSERT_OK(ursa_attr_init(&a));
  ASSERT_OK(ursa_attr_setregion(&a, &r));
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_ERR(ursa_create(&t, &a, report_vp, NULL), -EINVAL);
  ASSERT_OK(ursa_region_init(&r, 0));            /* the same storage, a new region: still not */
  ASSERT_ERR(ursa_create(&t, &a, report_vp, NULL), -EINVAL);
  ASSERT_OK(ursa_attr_setregion(&a, &r));        /* named again: fine */
  ASSERT_OK(ursa_create(&t, &a, report_vp, NULL));
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_region_destroy(&r));
  ASSERT_OK(ursa_attr_destroy(&a));
  ASSERT_OK(ursa_fini());
  return 0;
}

