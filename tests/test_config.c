/*
 * test_config.c - settings from ursa_config_t and the environment (src/core/env.c): every bad value
 * is refused with one line naming the variable and what it takes, the default applies, and no
 * value wraps, overflows or is taken silently (issue #22 item 8).
 */
#include "task.h"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

static void init_print_fini(void) {
  ursa_stats_t s;
  if (ursa_init(NULL) != 0) _exit(90);
  if (ursa_stats(&s) != 0) _exit(91);
  printf("vps %u\n", ursa_vp_count());
  fflush(stdout);
  exit(ursa_fini() == 0 ? 0 : 92);                    /* exit: URSA_STATS prints at exit */
}

static void bad_sizes_child(void) {
  setenv("URSA_VPS", "1", 1);
  setenv("URSA_STACK_SIZE", "17179869185G", 1);       /* 2^34 G: the shift would overflow */
  setenv("URSA_STACK_CACHE", "-1", 1);                /* strtoull would make it SIZE_MAX */
  setenv("URSA_STACK_PREALLOC", "-1", 1);             /* ... and map until memory is gone */
  init_print_fini();
}

TEST_IMPL(config_env_sizes_never_wrap) {
  int status;
  char out[4096];
  run_child(bad_sizes_child, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);                  /* and quickly: nothing huge was mapped */
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_SIZE=17179869185G: not a size from 16384 to 1099511627776 bytes");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_CACHE=-1: not a number from 1 to 1048576");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_PREALLOC=-1: not a number from 1 to 65536");
  ASSERT_STR_CONTAINS(out, "vps 1");
  return 0;
}

static void bad_words_child(void) {
  setenv("URSA_VPS", "1", 1);
  setenv("URSA_GUARD", "please", 1);
  setenv("URSA_PIN", "maybe", 1);
  setenv("URSA_STATS", "verbose", 1);
  setenv("URSA_REGION_BALANCE", "2", 1);
  setenv("URSA_MODEL", "fast", 1);
  setenv("URSA_STACK_SIZE", "64KiB", 1);              /* a good one among them: taken */
  init_print_fini();
}

TEST_IMPL(config_env_words_and_flags_checked) {
  int status;
  char out[4096];
  run_child(bad_words_child, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_GUARD=please: not auto or mprotect");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_PIN=maybe: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STATS=verbose: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_REGION_BALANCE=2: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_MODEL=fast: not cm, pcm, cp-ts or cp-ic");
  ASSERT(strstr(out, "URSA_STACK_SIZE") == NULL);
  ASSERT(strstr(out, "counters") == NULL && strstr(out, "switches") == NULL);   /* stats stayed off */
  return 0;
}

static void good_words_child(void) {
  setenv("URSA_VPS", "1", 1);
  setenv("URSA_GUARD", "mprotect", 1);
  setenv("URSA_STATS", "on", 1);
  setenv("URSA_STACK_SIZE", "1M", 1);
  init_print_fini();
}

TEST_IMPL(config_env_good_values_taken) {
  int status;
  char out[8192];
  run_child(good_words_child, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT(strstr(out, "ignoring") == NULL);
  ASSERT_STR_CONTAINS(out, "switches");               /* URSA_STATS=on printed the counters */
  return 0;
}

TEST_IMPL(config_limits_are_errors) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = 1;
  c.stack_cache = (size_t)-1;
  ASSERT_ERR(ursa_init(&c), -EINVAL);
  c.stack_cache = 0;
  c.stack_prealloc = (size_t)1 << 40;
  ASSERT_ERR(ursa_init(&c), -EINVAL);
  c.stack_prealloc = 0;
  c.stack_size = ((size_t)1 << 40) + 1;
  ASSERT_ERR(ursa_init(&c), -EINVAL);
  c.stack_size = 0;
  c.pq_cap = 5000;
  ASSERT_ERR(ursa_init(&c), -EINVAL);
  c.pq_cap = 0;
  c.guard = 7;
  ASSERT_ERR(ursa_init(&c), -EINVAL);
  c.guard = 0;
  ASSERT_OK(ursa_init(&c));                           /* nothing was left half made */
  ASSERT_OK(ursa_fini());
  return 0;
}

TEST_IMPL(config_strerror_any_int) {
  ASSERT(ursa_strerror(INT_MIN) != NULL && *ursa_strerror(INT_MIN) != '\0');
  ASSERT(ursa_strerror(INT_MAX) != NULL);
  ASSERT_STR_CONTAINS(ursa_strerror(-ETIMEDOUT), "timed out");
  return 0;
}
