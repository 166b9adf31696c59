/*
 * test_config.c - settings from ursa_config_t and the environment (src/core/env.c): every bad value
 * is refused with one line naming the variable and what it takes, the default applies, and no
 * value wraps, overflows or is taken silently (issue #22 item 8).
 */
#include "task.h"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

/* The variables a child sets before ursa_init: name, value pairs, NULL-terminated. */
static const char *const *child_env;

static void env_child(void) {
  ursa_stats_t s;
  const char *const *e;
  for (e = child_env; *e != NULL; e += 2) setenv(e[0], e[1], 1);
  if (ursa_init(NULL) != 0) _exit(90);
  if (ursa_stats(&s) != 0) _exit(91);
  printf("vps %u\n", ursa_vp_count());
  fflush(stdout);
  exit(ursa_fini() == 0 ? 0 : 92);                    /* exit: URSA_STATS prints at exit */
}

/* Runs ursa_init and ursa_fini in a child with env set; its output (stdout and stderr) in out. */
static void run_with_env(const char *const *env, char *out, size_t size) {
  int status;
  child_env = env;
  run_child(env_child, &status, out, size);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("the child failed (status %d):\n%s", status, out);
}

TEST_IMPL(config_env_sizes_never_wrap) {
  static const char *const env[] = {
    "URSA_VPS", "1",
    "URSA_STACK_SIZE", "17179869185G",                /* 2^34 G: the shift would overflow */
    "URSA_STACK_CACHE", "-1",                         /* strtoull would make it SIZE_MAX */
    "URSA_STACK_PREALLOC", "-1",                      /* ... and map until memory is gone */
    NULL };
  char out[4096];
  run_with_env(env, out, sizeof out);                 /* and quickly: nothing huge was mapped */
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_SIZE=17179869185G: not a size from 16384 to 1099511627776 bytes");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_CACHE=-1: not a number from 1 to 1048576");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STACK_PREALLOC=-1: not a number from 1 to 65536");
  ASSERT_STR_CONTAINS(out, "vps 1");
  return 0;
}

TEST_IMPL(config_env_words_and_flags_checked) {
  static const char *const env[] = {
    "URSA_VPS", "1", "URSA_GUARD", "please", "URSA_PIN", "maybe", "URSA_STATS", "verbose",
    "URSA_REGION_BALANCE", "2", "URSA_MODEL", "fast",
    "URSA_STACK_SIZE", "64KiB",                       /* a good one among them: taken */
    NULL };
  char out[4096];
  run_with_env(env, out, sizeof out);
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_GUARD=please: not auto or mprotect");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_PIN=maybe: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_STATS=verbose: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_REGION_BALANCE=2: not 0 or 1");
  ASSERT_STR_CONTAINS(out, "ursa: ignoring URSA_MODEL=fast: not cm, pcm, cp-ts or cp-ic");
  ASSERT(strstr(out, "URSA_STACK_SIZE") == NULL);
  ASSERT(strstr(out, "switches") == NULL);            /* stats stayed off */
  return 0;
}

TEST_IMPL(config_env_good_values_taken) {
  static const char *const env[] = {
    "URSA_VPS", "1", "URSA_GUARD", "mprotect", "URSA_STATS", "on", "URSA_STACK_SIZE", "1M", NULL };
  char out[8192];
  run_with_env(env, out, sizeof out);
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
