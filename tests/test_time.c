/*
 * test_time.c - absolute deadlines at the edges (issue #22 item 7): a deadline too far to hold in
 * 64-bit nanoseconds waits (it saturates, it does not wrap into the past), and one before the
 * epoch has passed: the wait is tried once and then ends with -ETIMEDOUT, never -EINVAL.
 */
#include "task.h"

#include <limits.h>
#include <time.h>

static ursa_sem_t far_sem;

static void *poster(void *arg) {
  ursa_yield();                                      /* the waiter is blocked by now (one VP) */
  ursa_sem_post(&far_sem);
  return arg;
}

/* Waits on an empty semaphore until abstime, while another thread posts it: must be woken by
 * the post (0), not time out at once. */
static int wait_far(int clock, time_t sec) {
  struct timespec ts = { sec, 999999999L };
  ursa_thread_t t;
  int r;
  ASSERT_OK(ursa_sem_init(&far_sem, 0));
  ASSERT_OK(ursa_create(&t, NULL, poster, NULL));
  r = ursa_sem_timedwait(&far_sem, clock, &ts);
  ASSERT_OK(ursa_join(t, NULL));
  ASSERT_OK(ursa_sem_destroy(&far_sem));
  return r;
}

TEST_IMPL(time_far_future_deadline_waits) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = 1;
  ASSERT_OK(ursa_init(&c));
  ASSERT_EQ(wait_far(CLOCK_REALTIME, (time_t)LLONG_MAX), 0);
  ASSERT_EQ(wait_far(CLOCK_MONOTONIC, (time_t)9300000000LL), 0);    /* 9.3e9 s */
  ASSERT_EQ(wait_far(CLOCK_MONOTONIC, (time_t)(LLONG_MAX / 1000000000LL)), 0);
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(time_past_deadline_tries_once) {
  /* contract: deadline-passed */
  struct timespec neg = { -5, 0 }, zero = { 0, 0 }, min = { (time_t)LLONG_MIN, 0 };
  ursa_sem_t s;
  ursa_mutex_t m;
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = 1;
  ASSERT_OK(ursa_init(&c));
  ASSERT_OK(ursa_sem_init(&s, 1));
  ASSERT_OK(ursa_sem_timedwait(&s, CLOCK_REALTIME, &neg));             /* a unit is there: taken */
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_REALTIME, &neg), -ETIMEDOUT);
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &min), -ETIMEDOUT);
  ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &zero), -ETIMEDOUT);
  ASSERT_OK(ursa_sem_destroy(&s));
  ASSERT_OK(ursa_mutex_init(&m, URSA_MUTEX_NORMAL));
  ASSERT_OK(ursa_mutex_timedlock(&m, CLOCK_REALTIME, &neg));           /* free: taken */
  ASSERT_OK(ursa_mutex_unlock(&m));
  ASSERT_OK(ursa_mutex_destroy(&m));
  {
    struct timespec bad = { 0, 1000000000L };                          /* still a bad argument */
    ASSERT_OK(ursa_sem_init(&s, 0));
    ASSERT_ERR(ursa_sem_timedwait(&s, CLOCK_REALTIME, &bad), -EINVAL);
    ASSERT_OK(ursa_sem_destroy(&s));
  }
  ASSERT_OK(ursa_fini());
  return 0;
}
