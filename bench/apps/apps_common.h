/*
 * apps_common.h - what the papers' applications (bench/apps/<app>.c: dp, pc, rw, ji, mm, tsp) share:
 * option parsing, the calibrated work loop, start-up under the execution model the environment
 * chose, the clock, ursa's counters and the lines bench/apps_suite.py parses.
 *
 * Every program prints, on stdout:
 *   RESULT bench=<app> impl=<style>-<model> value=<seconds> unit=s vps=<n> <parameters...>
 *   ANSWER bench=<app> ok=<1|0> <what was checked...>
 *   COUNTERS bench=<app> impl=<impl> switches= yields= p_ops= p_blocking= blocks= preemptions=
 *            preempt_deferred= ticks= migrations=      (deltas over the timed part; the journal
 *                                                        paper's section 4 / 6 counters)
 * and exits 0 when the answer is right, 1 when it is wrong (or a call failed: a line on stderr
 * says which), 2 for a usage error or when a CM- or PCM-style program is started under a
 * preemptive model (ursa_require_cooperative, the journal paper's Table XXII), and 4 with a line
 *   REFUSED bench=<app> model=<URSA_MODEL> reason=<text>
 * when ursa_init refuses the model asked for (cp-ts returns -ENOTSUP where its safe points cannot
 * be told apart, e.g. a static or TSan build).
 *
 * impl: the style (cp, cm, pcm, with a variant after a dot: cm.named, pcm.dp1, pcm.dp2) and the
 * model ursa runs (ursa_model_name: cm, pcm, cp-ts, cp-ic), or "native" for the POSIX-threads
 * build of the CP style (-DAPPS_PTHREADS, apps_native.h).
 *
 * The clock (CLOCK_MONOTONIC) covers the concurrent part: creating the threads, their whole run
 * and joining them.  Building the input and checking the answer (sequential references) are
 * outside it.
 */
#ifndef APPS_COMMON_H
#define APPS_COMMON_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef APPS_PTHREADS
#  include "apps_native.h"
#else
#  include "ursa.h"
#endif

/* ---- errors ----------------------------------------------------------------------------------- */

static inline void apps_die(const char *what, int err) {
  if (err != 0) fprintf(stderr, "apps: %s: %s\n", what, strerror(err < 0 ? -err : err));
  else fprintf(stderr, "apps: %s\n", what);
  fflush(stdout);
  exit(1);
}

/* A call returning 0 or an errno value of either sign; anything else ends the program (status 1). */
#define APPS_CHECK(call)                                 \
  do {                                                   \
    int apps_err_ = (call);                              \
    if (apps_err_ != 0) apps_die(#call, apps_err_);      \
  } while (0)

/* ---- options: --name value or --name=value ------------------------------------------------------ */

enum { APPS_U64 = 1, APPS_STR = 2 };

/* --place, common to every program: where the CP (and CM) style's threads start, see apps_spawn. */
static const char *apps_place = "any";
struct apps_opt {
  const char *name;       /* without the dashes */
  int kind;               /* APPS_U64 or APPS_STR */
  void *ptr;              /* uint64_t * or const char ** */
  const char *help;
};

static inline void apps_usage(const char *prog, const char *what, const struct apps_opt *o) {
  fprintf(stderr, "usage: %s [options]\n  %s\noptions:\n", prog, what);
  fprintf(stderr, "  --%-10s %s (default %s)\n", "place",
          "any: CP-style threads start on the least loaded VP; self: on the creator's VP", apps_place);
  for (; o->name; o++) {
    if (o->kind == APPS_U64)
      fprintf(stderr, "  --%-10s %s (default %llu)\n", o->name, o->help,
              (unsigned long long)*(uint64_t *)o->ptr);
    else
      fprintf(stderr, "  --%-10s %s (default %s)\n", o->name, o->help, *(const char **)o->ptr);
  }
  exit(2);
}

static inline void apps_parse(int argc, char **argv, const struct apps_opt *opts, const char *what) {
  static const struct apps_opt common = { "place", APPS_STR, &apps_place,
    "any: CP-style threads start on the least loaded VP (URSA_VP_ANY); self: on the creator's" };
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL, *eq;
    size_t len;
    const struct apps_opt *o;
    if (strncmp(a, "--", 2) != 0) apps_usage(argv[0], what, opts);
    a += 2;
    eq = strchr(a, '=');
    len = eq ? (size_t)(eq - a) : strlen(a);
    for (o = opts; o->name; o++)
      if (strlen(o->name) == len && strncmp(o->name, a, len) == 0) break;
    if (o->name == NULL && len == 5 && strncmp(a, "place", 5) == 0) o = &common;
    if (o->name == NULL) {
      fprintf(stderr, "%s: unknown option --%.*s\n", argv[0], (int)len, a);
      apps_usage(argv[0], what, opts);
    }
    if (eq) val = eq + 1;
    else if (i + 1 < argc) val = argv[++i];
    else apps_usage(argv[0], what, opts);
    if (o->kind == APPS_STR) {
      *(const char **)o->ptr = val;
    } else {
      char *end = NULL;
      unsigned long long v;
      errno = 0;
      v = strtoull(val, &end, 10);
      if (errno || end == val || *end != '\0' || val[0] == '-') {
        fprintf(stderr, "%s: bad number '%s' for --%s\n", argv[0], val, o->name);
        exit(2);
      }
      *(uint64_t *)o->ptr = (uint64_t)v;
    }
  }
  if (strcmp(apps_place, "any") != 0 && strcmp(apps_place, "self") != 0) {
    fprintf(stderr, "%s: --place any|self\n", argv[0]);
    exit(2);
  }
}

/* Is s one of the words of the space-separated list? */
static inline int apps_one_of(const char *s, const char *list) {
  size_t n = strlen(s);
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ' ');
    size_t m = e ? (size_t)(e - p) : strlen(p);
    if (m == n && strncmp(p, s, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

/* ---- work ------------------------------------------------------------------------------------- */

/* The papers' calibrated "work": a loop of n iterations of integer arithmetic (a 64-bit linear
 * congruential step: a multiply and an add that depend on the previous iteration, so the compiler
 * can neither drop nor shorten it; an empty asm makes each value "used") with ursa_tick() at its back-edge, as SR's compiler put the
 * iteration count there.  Returns the final value, which the callers fold into a digest, so the
 * work is never dead code.  Under cp-ic every switch_count-th tick on a VP switches; elsewhere
 * the tick is a load and a branch (nothing at all in the native build). */
static inline uint64_t apps_work(uint64_t n, uint64_t x) {
  uint64_t i;
  for (i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));       /* x is "used": the loop stays even if a caller drops it */
    ursa_tick();
  }
  return x;
}

/* splitmix64's finalizer: seeds and "real computation" (pc.c). */
static inline uint64_t apps_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t apps_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline unsigned apps_ncpus(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) return 1;
  return (unsigned)CPU_COUNT(&s);
}

/* ---- one run ---------------------------------------------------------------------------------- */

struct apps_run {
  const char *bench;
  char impl[64];
  unsigned vps;          /* ursa's VPs, or the CPUs the native build may use */
  int native;
  uint64_t t0, t1;
#ifndef APPS_PTHREADS
  ursa_stats_t s0, s1;
#endif
};

/* What a style needs of the model (apps_begin). */
enum { APPS_CP = 0,      /* anything: synchronizes with semaphores                               */
       APPS_CM = 1,      /* a cooperative model and one VP: shared variables without locks       */
       APPS_PCM = 2 };   /* a cooperative model; shared variables only within an ursa region     */

/* Starts ursa under the model of the environment (URSA_MODEL, URSA_VPS, ...) and checks that the
 * style may run there (exit 2 if not).  style: "cp", "cm", "pcm", optionally with ".variant". */
static inline void apps_begin(struct apps_run *r, const char *bench, const char *style, int cooperative) {
  memset(r, 0, sizeof *r);
  r->bench = bench;
#ifdef APPS_PTHREADS
  (void)cooperative;
  if (strcmp(style, "cp") != 0) {
    fprintf(stderr, "%s: the native (POSIX threads) build has the cp style only, not '%s'\n", bench, style);
    exit(2);
  }
  r->native = 1;
  r->vps = apps_ncpus();
  snprintf(r->impl, sizeof r->impl, "cp-native");
#else
  {
    int err = ursa_init(NULL);
    if (err == -ENOTSUP) {
      const char *m = getenv("URSA_MODEL");
      printf("REFUSED bench=%s model=%s reason=ursa_init_returned_ENOTSUP\n", bench, m && *m ? m : "default");
      fflush(stdout);
      fprintf(stderr, "%s: ursa_init refused model %s: %s\n", bench, m && *m ? m : "default", ursa_strerror(err));
      exit(4);
    }
    if (err != 0) apps_die("ursa_init", err);
  }
  if (cooperative && ursa_require_cooperative() != 0) {
    fprintf(stderr, "%s: the %s style uses shared variables without locks and runs only under a "
                    "cooperative model (URSA_MODEL=cm or pcm), not %s\n",
            bench, style, ursa_model_name(ursa_model()));
    exit(2);
  }
  if (cooperative == APPS_CM && ursa_vp_count() != 1) {
    fprintf(stderr, "%s: the cm style assumes one thread at a time and needs one VP (URSA_MODEL=cm, or "
                    "pcm with URSA_VPS=1), not %u\n", bench, ursa_vp_count());
    exit(2);
  }
  r->vps = ursa_vp_count();
  snprintf(r->impl, sizeof r->impl, "%s-%s", style, ursa_model_name(ursa_model()));
#endif
}

static inline void apps_clock_start(struct apps_run *r) {
#ifndef APPS_PTHREADS
  APPS_CHECK(ursa_stats(&r->s0));
#endif
  r->t0 = apps_now_ns();
}

static inline double apps_clock_stop(struct apps_run *r) {
  r->t1 = apps_now_ns();
#ifndef APPS_PTHREADS
  APPS_CHECK(ursa_stats(&r->s1));
#endif
  return (double)(r->t1 - r->t0) / 1e9;
}

/* RESULT (with the parameters given as "key=value ..." by fmt) and COUNTERS. */
static inline void apps_result(struct apps_run *r, const char *fmt, ...) {
  va_list ap;
  printf("RESULT bench=%s impl=%s value=%.6f unit=s vps=%u place=%s ", r->bench, r->impl,
         (double)(r->t1 - r->t0) / 1e9, r->vps, r->native ? "kernel" : apps_place);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
#ifdef APPS_PTHREADS
  printf("COUNTERS bench=%s impl=%s native=1\n", r->bench, r->impl);
#else
#  define D(f) (unsigned long long)(r->s1.f - r->s0.f)
  printf("COUNTERS bench=%s impl=%s switches=%llu yields=%llu p_ops=%llu p_blocking=%llu blocks=%llu "
         "preemptions=%llu preempt_deferred=%llu ticks=%llu migrations=%llu\n",
         r->bench, r->impl, D(switches), D(yields), D(p_ops), D(p_blocking), D(blocks),
         D(preemptions), D(preempt_deferred), D(ticks), D(migrations));
#  undef D
#endif
  fflush(stdout);
}

/* ANSWER line; ok = 0 also prints "WRONG ..." on stderr.  Returns ok. */
static inline int apps_answer(struct apps_run *r, int ok, const char *fmt, ...) {
  va_list ap;
  printf("ANSWER bench=%s ok=%d ", r->bench, ok ? 1 : 0);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  if (!ok) {
    fprintf(stderr, "%s (%s): WRONG ANSWER: ", r->bench, r->impl);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
  }
  return ok;
}

/* Releases ursa; the exit status: 0 right, 1 wrong. */
static inline int apps_end(struct apps_run *r, int ok) {
  (void)r;
#ifndef APPS_PTHREADS
  APPS_CHECK(ursa_fini());
#endif
  return ok ? 0 : 1;
}

/* Starts a CP-style (or CM-style) thread.  CP processes may run on any processor (SR's MultiSR, the
 * kernel for native threads), so by default (--place any) ursa places each new thread on the least
 * loaded VP (URSA_VP_ANY) and lets the scheduler move it later; --place self keeps ursa's default
 * attributes (the creator's VP: with ursa's rotator a VP keeps up to URSA_PQ_CAP = 16 ready threads
 * before it gives any away, so 16 philosophers created by main may all stay on VP 0).  The native
 * build ignores it.  With one VP both are the same. */
static inline void apps_spawn(ursa_thread_t *t, void *(*fn)(void *), void *arg) {
#ifdef APPS_PTHREADS
  APPS_CHECK(ursa_create(t, NULL, fn, arg));
#else
  if (strcmp(apps_place, "any") == 0) {
    ursa_attr_t a;
    APPS_CHECK(ursa_attr_init(&a));
    APPS_CHECK(ursa_attr_setvp(&a, URSA_VP_ANY));
    APPS_CHECK(ursa_create(t, &a, fn, arg));
    APPS_CHECK(ursa_attr_destroy(&a));
  } else {
    APPS_CHECK(ursa_create(t, NULL, fn, arg));
  }
#endif
}

#ifndef APPS_PTHREADS
/* A thread in region reg (NULL: default attributes) on VP vp (URSA_VP_SELF: the creator's). */
static inline void apps_create_in(ursa_thread_t *t, ursa_region_t *reg, int vp, void *(*fn)(void *), void *arg) {
  ursa_attr_t a;
  APPS_CHECK(ursa_attr_init(&a));
  if (reg) APPS_CHECK(ursa_attr_setregion(&a, reg));
  else APPS_CHECK(ursa_attr_setvp(&a, vp));
  APPS_CHECK(ursa_create(t, &a, fn, arg));
  APPS_CHECK(ursa_attr_destroy(&a));
}
#endif

#endif /* APPS_COMMON_H */
