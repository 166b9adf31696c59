/*
 * test_owner.c - a lock's owner is a thread, not an address (issue #22 item 6): a thread that ends
 * holding a mutex or a write lock leaves it held, and the next thread, which gets the same
 * descriptor and stack from the pool, is not its owner.
 */
#include "task.h"

static void init_one_vp(void) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = 1;
  ASSERT_OK(ursa_init(&c));
}

static ursa_mutex_t om;
static ursa_rwlock_t orw;
static char *where[2];

static void *lock_and_end(void *arg) {
  char here;
  where[0] = &here;
  ASSERT_OK(ursa_mutex_lock(&om));
  ASSERT_OK(ursa_rwlock_wrlock(&orw));
  return arg;                                         /* ends holding both */
}

static void *try_unlock(void *arg) {
  char here;
  where[1] = &here;
  ASSERT_ERR(ursa_mutex_unlock(&om), -EPERM);
  ASSERT_ERR(ursa_mutex_trylock(&om), -EBUSY);
  ASSERT_ERR(ursa_rwlock_unlock(&orw), -EPERM);
  ASSERT_ERR(ursa_rwlock_trywrlock(&orw), -EBUSY);
  ASSERT_ERR(ursa_rwlock_tryrdlock(&orw), -EBUSY);
  return arg;
}

TEST_IMPL(owner_not_inherited_with_descriptor) {
  /* contract: unlock-ended-owner */
  ursa_thread_t a, b;
  long gap;
  init_one_vp();
  ASSERT_OK(ursa_mutex_init(&om, URSA_MUTEX_ERRORCHECK));
  ASSERT_OK(ursa_rwlock_init(&orw));
  ASSERT_OK(ursa_create(&a, NULL, lock_and_end, NULL));
  ASSERT_OK(ursa_join(a, NULL));                      /* a's stack goes back to the pool */
  ASSERT_OK(ursa_create(&b, NULL, try_unlock, NULL)); /* ... and b takes it (LIFO) */
  ASSERT_OK(ursa_join(b, NULL));
  gap = where[0] > where[1] ? where[0] - where[1] : where[1] - where[0];
  if (gap > 65536 && !TEST_SANITIZED)                 /* (ASan builds bypass the pool's fast path) */
    FAIL("b did not reuse a's stack: the test did not test what it means to");
  ASSERT_ERR(ursa_mutex_destroy(&om), -EBUSY);        /* still held by the thread that ended */
  ASSERT_ERR(ursa_rwlock_destroy(&orw), -EBUSY);
  ASSERT_OK(ursa_fini());
  return 0;
}

static ursa_mutex_t rm;

static void *trylock_rm(void *arg) {
  int r = ursa_mutex_trylock(&rm);
  (void)arg;
  if (r == 0) ASSERT_OK(ursa_mutex_unlock(&rm));
  return (void *)(intptr_t)r;
}

/* A trylock of rm by a thread other than its owner: its result. */
static int trylock_rm_elsewhere(void) {
  ursa_thread_t t;
  void *r;
  ASSERT_OK(ursa_create(&t, NULL, trylock_rm, NULL));
  ASSERT_OK(ursa_join(t, &r));
  return (int)(intptr_t)r;
}

TEST_IMPL(owner_recursive_trylock_counts) {
  /* contract: trylock-held */
  init_one_vp();
  ASSERT_OK(ursa_mutex_init(&rm, URSA_MUTEX_RECURSIVE));
  ASSERT_OK(ursa_mutex_lock(&rm));
  ASSERT_OK(ursa_mutex_trylock(&rm));                 /* its owner: one more level (POSIX) */
  ASSERT_ERR(trylock_rm_elsewhere(), -EBUSY);         /* anyone else: held */
  ASSERT_OK(ursa_mutex_unlock(&rm));
  ASSERT_ERR(trylock_rm_elsewhere(), -EBUSY);         /* still held: one level left */
  ASSERT_OK(ursa_mutex_unlock(&rm));
  ASSERT_OK(trylock_rm_elsewhere());                  /* free now (the helper unlocks it) */
  ASSERT_ERR(ursa_mutex_unlock(&rm), -EPERM);         /* both levels were counted, no more */
  ASSERT_OK(ursa_mutex_destroy(&rm));
  ASSERT_OK(ursa_fini());
  return 0;
}
