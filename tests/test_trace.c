/* The scheduler trace (URSA_TRACE=file, src/core/trace.c, docs/TRACE.md): each scenario runs in a
 * forked child with URSA_TRACE set before ursa_init; the parent checks the file: valid JSON, one
 * lane per VP, a slice per thread, wake-ups, migrations, idle periods; and that a trace that is
 * off writes nothing, and a path that cannot be written costs one line and nothing else. */
#include "task.h"

#include <stdatomic.h>

#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000ull

/* ---- a minimal JSON checker (RFC 8259 grammar; no semantics) ---------------------------------- */

static const char *json_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *json_value(const char *p, int depth);

static const char *json_string(const char *p) {
  if (*p++ != '"') return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*p++;
    if (c == '"') return p;
    if (c < 0x20) return NULL;                          /* control bytes must be escaped */
    if (c == '\\') {
      c = (unsigned char)*p++;
      if (c == 'u') {
        int k;
        for (k = 0; k < 4; k++, p++)
          if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) return NULL;
      } else if (!strchr("\"\\/bfnrt", c) || c == 0) {
        return NULL;
      }
    }
  }
}

static const char *json_digits(const char *p) {
  if (*p < '0' || *p > '9') return NULL;
  while (*p >= '0' && *p <= '9') p++;
  return p;
}

static const char *json_number(const char *p) {
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if ((p = json_digits(p)) == NULL) return NULL;
  if (*p == '.' && (p = json_digits(p + 1)) == NULL) return NULL;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if ((p = json_digits(p)) == NULL) return NULL;
  }
  return p;
}

static const char *json_value(const char *p, int depth) {
  if (depth > 64) return NULL;
  p = json_ws(p);
  switch (*p) {
  case '{':
    p = json_ws(p + 1);
    if (*p == '}') return p + 1;
    for (;;) {
      if ((p = json_string(json_ws(p))) == NULL) return NULL;
      p = json_ws(p);
      if (*p++ != ':') return NULL;
      if ((p = json_value(p, depth + 1)) == NULL) return NULL;
      p = json_ws(p);
      if (*p == '}') return p + 1;
      if (*p++ != ',') return NULL;
    }
  case '[':
    p = json_ws(p + 1);
    if (*p == ']') return p + 1;
    for (;;) {
      if ((p = json_value(p, depth + 1)) == NULL) return NULL;
      p = json_ws(p);
      if (*p == ']') return p + 1;
      if (*p++ != ',') return NULL;
    }
  case '"': return json_string(p);
  case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
  case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
  case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
  default:  return json_number(p);
  }
}

/* True when the whole text is one JSON value. */
static int json_valid(const char *text) {
  const char *p = json_value(text, 0);
  return p != NULL && *json_ws(p) == '\0';
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static char g_dir[64];            /* a fresh directory per test (left behind when a check fails) */
static char g_path[128];          /* the trace file in it */

static void make_dir(void) {
  strcpy(g_dir, "/tmp/ursa-trace-XXXXXX");
  if (mkdtemp(g_dir) == NULL) FAIL("mkdtemp: %s", strerror(errno));
  snprintf(g_path, sizeof g_path, "%s/trace.json", g_dir);
}

static void remove_dir(void) {
  DIR *d = opendir(g_dir);
  struct dirent *e;
  char p[512];
  while (d && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(g_dir);
}

/* The file's contents (malloc'd, NUL-terminated), or NULL when it does not exist. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  ASSERT(buf != NULL);
  ASSERT_EQ(fread(buf, 1, (size_t)n, f), n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  while ((hay = strstr(hay, needle)) != NULL) { n++; hay++; }
  return n;
}

/* Checks that the trace is valid JSON: here, and with Python's parser too when there is one. */
static char *load_valid_trace(void) {
  char *t = slurp(g_path), cmd[512];
  if (t == NULL) FAIL("no trace file %s", g_path);
  if (!json_valid(t)) FAIL("%s is not valid JSON; it begins:\n%.2000s", g_path, t);
  ASSERT(strncmp(t, "{\"displayTimeUnit\":\"ns\"", 23) == 0);
  ASSERT_STR_CONTAINS(t, "\"traceEvents\":[");
  if (system("command -v python3 >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s", g_path);
    ASSERT_EQ(system(cmd), 0);
  }
  return t;
}

static int smp_init(unsigned vps) {
  ursa_config_t c;
  memset(&c, 0, sizeof c);
  c.vps = vps;
  c.pq_cap = 64;                  /* (the hard build would shrink it to 1: threads would wander) */
  /* Under Valgrind, stacks of 2 MB or more (its --max-stackframe): then a switch between two
   * thread stacks never looks like a move within one stack (see MIGRATE for the rest). */
  if (TEST_UNDER_VALGRIND) c.stack_size = 4u << 20;
  return ursa_init(&c);
}

/* ---- 1: a ring on two VPs --------------------------------------------------------------------- */

#define RING 4
#define LAPS 50
static ursa_sem_t ring_sem[RING], ring_ready;

static void *ring_member(void *arg) {
  int i = (int)(intptr_t)arg, lap;
  ursa_sem_post(&ring_ready);
  for (lap = 0; lap < LAPS; lap++) {
    ursa_sem_wait(&ring_sem[i]);
    ursa_sem_post(&ring_sem[(i + 1) % RING]);
  }
  return NULL;
}

/* Whether the ring migrates.  Not under Valgrind: since the VP kernel stacks are mapped by ursa,
 * a thread that resumes on another VP makes Memcheck report "uninitialised" values in the switch
 * (false reports, with or without the trace; the smp_* tests show them too). */
#define MIGRATE (!TEST_UNDER_VALGRIND)

/* The members belong to a region on VP 1, so they run only there, and each posts ring_ready and
 * waits for the token there.  Then main moves the region to VP 0 and posts the token: from then
 * on every member runs on VP 0, each one a migration.  (The region makes the scenario independent
 * of where the run policy would place free threads.)  Without MIGRATE the region stays on VP 1:
 * main's post and the joins still cross VPs. */
static void ring_two_vps(void) {
  ursa_thread_t t[RING];
  ursa_region_t r;
  int i;
  if (smp_init(2) != 0) _exit(90);
  if (ursa_region_init(&r, 1) != 0) _exit(95);
  ursa_sem_init(&ring_ready, 0);
  for (i = 0; i < RING; i++) {
    ursa_attr_t a;
    char name[16];
    ursa_sem_init(&ring_sem[i], 0);
    ursa_attr_init(&a);
    snprintf(name, sizeof name, "ring-%d", i);
    ursa_attr_setname(&a, name);
    ursa_attr_setregion(&a, &r);
    if (ursa_create(&t[i], &a, ring_member, (void *)(intptr_t)i) != 0) _exit(91);
    ursa_attr_destroy(&a);
  }
  for (i = 0; i < RING; i++) ursa_sem_wait(&ring_ready);
  if (MIGRATE && ursa_region_move(&r, 0) != 0) _exit(96);
  ursa_sem_post(&ring_sem[0]);
  for (i = 0; i < RING; i++) ursa_join(t[i], NULL);
  if (ursa_region_destroy(&r) != 0) _exit(97);
  if (ursa_fini() != 0) _exit(92);
}

static void ring_traced(void) {
  setenv("URSA_TRACE", g_path, 1);
  ring_two_vps();
}

TEST_IMPL(trace_two_vps_ring_json) {
  int status, i;
  char out[4096], *t, want[64];
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  make_dir();
  run_child(ring_traced, &status, out, sizeof out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
  ASSERT_EQ(out[0], '\0');                               /* nothing printed */
  t = load_valid_trace();
  /* one lane per VP, named */
  ASSERT_EQ(count(t, "\"name\":\"thread_name\""), 2);
  ASSERT_STR_CONTAINS(t, "\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":\"VP 0\"}");
  ASSERT_STR_CONTAINS(t, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"VP 1\"}");
  /* a slice for every thread, main included */
  ASSERT_STR_CONTAINS(t, "\"name\":\"main\",\"cat\":\"run\",\"args\":{\"id\":1}");
  for (i = 0; i < RING; i++) {
    snprintf(want, sizeof want, "\"name\":\"ring-%d\",\"cat\":\"run\"", i);
    if (count(t, want) < LAPS) FAIL("fewer than %d slices of ring-%d", LAPS, i);
    snprintf(want, sizeof want, "\"name\":\"migrate ring-%d\"", i);
    if (MIGRATE && count(t, want) < 1) FAIL("no migration of ring-%d", i);
  }
  /* wake-ups (every hop), each with its flow arrow, sent to the region's VP of the moment */
  ASSERT_GE(count(t, "\"cat\":\"wake\",\"args\""), RING * LAPS);
  ASSERT_GE(count(t, "\"ph\":\"s\""), RING * LAPS - RING);
  ASSERT_EQ(count(t, "\"ph\":\"s\""), count(t, "\"ph\":\"f\""));
  if (MIGRATE) {                   /* the hops after the move: on VP 0; each member migrated */
    ASSERT_STR_CONTAINS(t, "\"to_vp\":0}");
    ASSERT_GE(count(t, "\"cat\":\"migrate\""), RING);
    ASSERT_STR_CONTAINS(t, "\"from_vp\":1,\"to_vp\":0}");
  } else {                         /* every hop on VP 1 */
    ASSERT_STR_CONTAINS(t, "\"to_vp\":1}");
    fprintf(stderr, "(under Valgrind: the ring does not migrate; see MIGRATE)\n");
  }
  /* VP 1 ran the members first, then had nothing: its idle context; nothing was dropped */
  ASSERT_STR_CONTAINS(t, "\"tid\":1,\"ts\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"polling\"");
  ASSERT_STR_CONTAINS(t, "\"dropped_events\":0}");
  free(t);
  remove_dir();
  return 0;
}

/* ---- 2: off writes nothing -------------------------------------------------------------------- */

static void ring_unset(void) {
  if (chdir(g_dir) != 0) _exit(93);
  unsetenv("URSA_TRACE");
  ring_two_vps();
}

static void ring_empty(void) {
  if (chdir(g_dir) != 0) _exit(93);
  setenv("URSA_TRACE", "", 1);                           /* empty: off too */
  ring_two_vps();
}

TEST_IMPL(trace_off_writes_nothing) {
  int status, files = 0, k;
  char out[4096];
  DIR *d;
  struct dirent *e;
  make_dir();
  for (k = 0; k < 2; k++) {
    run_child(k == 0 ? ring_unset : ring_empty, &status, out, sizeof out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
    ASSERT_EQ(out[0], '\0');
  }
  d = opendir(g_dir);
  ASSERT(d != NULL);
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) files++;
  closedir(d);
  ASSERT_EQ(files, 0);
  remove_dir();
  return 0;
}

/* ---- 3: a path that cannot be written ---------------------------------------------------------- */

static void ring_bad_path(void) {
  setenv("URSA_TRACE", "/nonexistent-ursa-dir/trace.json", 1);
  ring_two_vps();
  printf("ring done\n");
}

TEST_IMPL(trace_unwritable_path_runs_normally) {
  int status;
  char out[4096];
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  run_child(ring_bad_path, &status, out, sizeof out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
  if (strcmp(out, "ursa: URSA_TRACE=/nonexistent-ursa-dir/trace.json: No such file or directory; "
                  "tracing off\nring done\n") != 0)
    FAIL("unexpected output:\n%s", out);
  ASSERT(access("/nonexistent-ursa-dir", F_OK) != 0);
  return 0;
}

/* ---- 4: one VP: the idle wait, a timer's wake-up, and the file written at exit ------------------ */

static void *sleeper(void *arg) {
  ursa_sleep_ns(3 * MS * TEST_TIME_FACTOR);               /* main joins: nothing else to run; longer
                                                             than a slow build takes to get to the wait */
  return arg;
}

static void one_vp_exit(void) {
  ursa_config_t c;
  ursa_attr_t a;
  ursa_thread_t t;
  setenv("URSA_TRACE", g_path, 1);
  memset(&c, 0, sizeof c);
  c.vps = 1;
  if (ursa_init(&c) != 0) _exit(90);
  ursa_attr_init(&a);
  ursa_attr_setname(&a, "napper \"q\"");                  /* escaped in the JSON */
  if (ursa_create(&t, &a, sleeper, NULL) != 0) _exit(91);
  ursa_join(t, NULL);
  exit(0);                                                /* no ursa_fini: atexit writes */
}

TEST_IMPL(trace_one_vp_idle_timeout_written_at_exit) {
  int status;
  char out[4096], *t;
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  make_dir();
  run_child(one_vp_exit, &status, out, sizeof out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
  t = load_valid_trace();
  ASSERT_EQ(count(t, "\"name\":\"thread_name\""), 1);
  ASSERT_STR_CONTAINS(t, "\"name\":\"VP 0\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"napper \\\"q\\\"\",\"cat\":\"run\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"idle\",\"cat\":\"idle\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"wake napper \\\"q\\\"\",\"cat\":\"wake\"");
  ASSERT_STR_CONTAINS(t, "\"timeout\":true");
  ASSERT_STR_CONTAINS(t, "\"name\":\"wake main\"");       /* the finished sleeper wakes its joiner */
  ASSERT_EQ(count(t, "\"cat\":\"migrate\""), 0);
  free(t);
  remove_dir();
  return 0;
}

/* ---- 5: a deadlock report's exit still writes the trace ------------------------------------------ */

static ursa_sem_t never;

static void *waits_forever(void *arg) {
  ursa_sem_wait(&never);
  return arg;
}

static void deadlock_traced(void) {
  ursa_attr_t a;
  ursa_thread_t t;
  setenv("URSA_TRACE", g_path, 1);
  if (smp_init(2) != 0) _exit(90);
  ursa_sem_init(&never, 0);
  ursa_attr_init(&a);
  ursa_attr_setname(&a, "stuck");
  ursa_attr_setvp(&a, 1);
  if (ursa_create(&t, &a, waits_forever, NULL) != 0) _exit(91);
  ursa_join(t, NULL);                                     /* deadlock: exit status 3 */
  _exit(94);
}

TEST_IMPL(trace_deadlock_exit_writes_file) {
  int status;
  char out[8192], *t;
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  make_dir();
  run_child(deadlock_traced, &status, out, sizeof out);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);
  ASSERT_STR_CONTAINS(out, "ursa: deadlock");
  t = load_valid_trace();
  ASSERT_STR_CONTAINS(t, "\"name\":\"stuck\",\"cat\":\"run\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"idle\",\"cat\":\"idle\"");  /* both VPs went to sleep */
  free(t);
  remove_dir();
  return 0;
}

/* ---- 6: the per-VP event limit ---------------------------------------------------------------- */

static void ring_limited(void) {
  setenv("URSA_TRACE", g_path, 1);
  setenv("URSA_TRACE_EVENTS", "100", 1);
  ring_two_vps();
}

TEST_IMPL(trace_event_limit_drops_and_says_so) {
  int status;
  char out[4096], *t;
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  make_dir();
  run_child(ring_limited, &status, out, sizeof out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
  ASSERT_STR_CONTAINS(out, "ursa: URSA_TRACE=");
  ASSERT_STR_CONTAINS(out, "/trace.json: VP ");
  ASSERT_STR_CONTAINS(out, " dropped ");
  ASSERT_STR_CONTAINS(out, " events past URSA_TRACE_EVENTS=100\n");
  t = load_valid_trace();
  ASSERT_STR_CONTAINS(t, "\"name\":\"trace full: ");
  ASSERT_EQ(count(t, "\"dropped_events\":0}"), 0);
  free(t);
  remove_dir();
  return 0;
}

/* ---- 7: a cp-ts preemption is marked in the trace ---------------------------------------------- */

static atomic_int spin_stop;

static void *spin_until_preempted(void *arg) {
  ursa_stats_t s;
  while (!atomic_load(&spin_stop)) {                      /* the program's own code: a safe point */
    if (ursa_stats(&s) == 0 && s.preemptions >= 2) atomic_store(&spin_stop, 1);
  }
  return arg;
}

static void preempt_traced(void) {
  ursa_config_t c;
  ursa_attr_t a;
  ursa_thread_t t[2];
  int i, rc;
  setenv("URSA_TRACE", g_path, 1);
  memset(&c, 0, sizeof c);
  c.vps = 1;
  c.model = URSA_MODEL_CP_TS;
  c.quantum_us = 1000;
  if ((rc = ursa_init(&c)) == -ENOTSUP) _exit(77);        /* cp-ts refused in this build */
  if (rc != 0) _exit(90);
  ursa_attr_init(&a);
  ursa_attr_setname(&a, "spinner");
  for (i = 0; i < 2; i++)
    if (ursa_create(&t[i], &a, spin_until_preempted, NULL) != 0) _exit(91);
  for (i = 0; i < 2; i++) ursa_join(t[i], NULL);
  exit(ursa_fini() == 0 ? 0 : 92);
}

TEST_IMPL(trace_cp_ts_preemption_marked) {
  int status;
  char out[4096], *t;
#ifdef URSA_NO_TRACE
  RETURN_SKIP("built with -DURSA_WITH_TRACE=OFF");
#endif
  if (TEST_UNDER_VALGRIND)   /* its timer signals reach a spinning thread only at Valgrind's own
                                switch points: 207 s of 300 (the model_ tests run cp-ts there) */
    RETURN_SKIP("a spinning thread takes minutes to be preempted under Valgrind");
  make_dir();
  run_child(preempt_traced, &status, out, sizeof out);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    remove_dir();
    SKIP_IF_ABSENT(TEST_EXPECT_PREEMPT, "cp-ts is not available in this build (ThreadSanitizer, or a sanitizer runtime linked in)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %#x, output:\n%s", status, out);
  t = load_valid_trace();
  ASSERT_STR_CONTAINS(t, "\"cat\":\"preempt\"");
  ASSERT_STR_CONTAINS(t, "\"name\":\"preempt spinner\"");
  free(t);
  remove_dir();
  return 0;
}
