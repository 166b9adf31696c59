/*
 * explore.c - schedule exploration: the strategies (uniform random, PCT), the decision log, the
 * virtual clock, the failure report and replay (issue #21; docs/GUIDE.md, "Finding concurrency
 * bugs").
 *
 * Protocol
 *   Exploration runs one VP: every ursa thread runs on the kernel thread that called ursa_init,
 *   while ursa_vp_count() and the placement checks see the number of VPs the program asked for
 *   (placing or pinning a thread on VP i is accepted and changes nothing).  VP 0 runs in the
 *   checked mode with the exploration bit of the trace's flag set (core/trace.h), so every switch
 *   goes through ursa__switch_traced, which asks pick() here which thread runs; and VP 0's
 *   pre_pending stays 1, so every call that ends in a preemption point (post, unlock, a lock or a
 *   unit taken without waiting, signal, broadcast, create, put, ursa_tick, ursa_preempt_enable)
 *   calls point() here, which may switch the caller out (ursa__yield_involuntary).
 *
 *   A scheduling point is a step.  At a step with two or more candidates the strategy decides:
 *     random  uniform among the candidates;
 *     pct:D   (Burckhardt et al., ASPLOS 2010) every thread gets a random priority when first
 *             seen, the highest-priority candidate runs, and at D-1 steps chosen at random in
 *             [1, K] the running thread's priority drops below every initial one (to 1 .. D-1).
 *             K, the estimated number of steps, is part of the strategy ("pct:D:K", default 200;
 *             the drivers set it from the steps of the runs before) so that a seed names one
 *             schedule.
 *   The candidates at a switch are the threads of the run queue (and the joiner a finishing thread
 *   hands over to); at a preemption point, the running thread and the run queue.  A thread that
 *   yields (ursa_yield, ursa_yield_to, sched_yield) is no candidate while another one is ready,
 *   so that a loop that waits by yielding lets the others run under every strategy.
 *   The decision log keeps the id of the thread chosen at each decision (steps with one candidate
 *   are not logged).  Replay: URSA_REPLAY=<seed> reruns the strategy with that seed; URSA_REPLAY=
 *   <trace file> follows the file's decisions (and reports a divergence: a recorded thread that is
 *   not a candidate).
 *
 *   Virtual time: ursa__now() reads ursa__vclock.now, which each step advances by STEP_NS and
 *   next_ready (sched.c) moves to the earliest timer when no thread is ready.
 *
 *   Failure: a signal that ends the process (abort, assert, SIGSEGV, ...), or an exit with a
 *   nonzero status (ursa's deadlock report exits with 3; the step limit with 4; a test that
 *   reports a wrong result) prints the strategy, seed, step count, the tail of the schedule and
 *   the replay command, and writes the trace file (URSA_EXPLORE_TRACE, else
 *   $TMPDIR/ursa-explore-<pid>.trace).  With URSA_EXPLORE_TRACE set the file is written at every
 *   exit, a passing one too (and by ursa_fini).
 *
 * Everything here runs on VP 0's kernel thread (the only one), from the scheduler's hooks, from
 * ursa_init/ursa_fini, from the exit handler and from the fatal signals' handler.
 */
#define _GNU_SOURCE
#include "explore.h"
#include "../model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { S_RANDOM = 1, S_PCT = 2 };

#define STEP_NS        1000u              /* virtual time per step: 1 us                        */
#define PCT_DEPTH_MAX  16u
#define PCT_STEPS_DEF  200u
#define MAX_STEPS_DEF  10000000ull
#define LOG_SHOWN      48u                /* decisions printed in a failure report              */

static struct {
  int       on;
  int       kind;                         /* S_RANDOM, S_PCT                                    */
  unsigned  depth;                        /* pct: D                                            */
  uint64_t  k;                            /* pct: the estimated steps K                        */
  uint64_t  seed, rng;
  uint64_t  steps, max_steps;
  uint64_t  change[PCT_DEPTH_MAX];        /* pct: the D-1 change points (steps), ascending     */
  unsigned  nchange, changed;
  uint64_t *prio;                         /* pct: priority by thread id, 0 = not seen yet      */
  size_t    prio_cap;
  uint32_t *log;                          /* the chosen thread's id at each decision           */
  size_t    nlog, log_cap;
  uint32_t *want;                         /* replay from a file: its decisions                 */
  size_t    nwant;
  struct ursa__thread **cand;             /* candidates of the decision being taken            */
  size_t    cand_cap;
  struct ursa__thread *forced;            /* point() chose it: the next pick() runs it         */
  char      strategy[64];                 /* as URSA_EXPLORE takes it, K included              */
  char      trace_path[256];
  int       report_fd;
  int       handlers;                     /* the exit and signal handlers are installed        */
  int       reported;
  int       trace_always;
  int       log_lost;                     /* the log could not grow: it ends early            */                 /* URSA_EXPLORE_TRACE is set: write it at every exit */
} X = { .report_fd = -1 };

static void (*prior_sig[32])(int);
static const int fatal[6];
static void on_fatal(int sig);
static void at_exit(int status, void *arg);

/* ---- the PRNG: splitmix64 (a seed and its neighbours give unrelated streams) ---------------- */
static uint64_t rnd(void) {
  uint64_t z = (X.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }   /* (bias below 2^-40 here) */

/* ---- configuration ---------------------------------------------------------------------------- */

int ursa__explore_parse(const char *s, int *kind, unsigned *depth, uint64_t *steps) {
  char *end;
  unsigned long long d = 3, k = PCT_STEPS_DEF;
  if (s == NULL) return -EINVAL;
  if (strcmp(s, "random") == 0) { *kind = S_RANDOM; *depth = 0; *steps = 0; return 0; }
  if (strncmp(s, "pct", 3) != 0) return -EINVAL;
  s += 3;
  if (*s == ':') {
    if (s[1] < '0' || s[1] > '9') return -EINVAL;
    d = strtoull(s + 1, &end, 10);
    s = end;
    if (*s == ':') {
      if (s[1] < '0' || s[1] > '9') return -EINVAL;
      k = strtoull(s + 1, &end, 10);
      s = end;
    }
  }
  if (*s != '\0' || d < 1 || d > PCT_DEPTH_MAX || k < 1 || k > (1ull << 40)) return -EINVAL;
  *kind = S_PCT;
  *depth = (unsigned)d;
  *steps = k;
  return 0;
}

static int parse_seed(const char *v, uint64_t *out) {
  char *end;
  if (v == NULL || *v < '0' || *v > '9') return -1;
  errno = 0;
  *out = strtoull(v, &end, 0);
  return errno == 0 && *end == '\0' ? 0 : -1;
}

/* A trace file: "ursa-explore-trace 1", "strategy S", "seed N", "decisions a b c ...". */
static int read_trace(const char *path) {
  FILE *f = fopen(path, "r");
  char word[64], strat[64];
  unsigned long long seed, id;
  int err = -EINVAL;
  if (f == NULL) {
    fprintf(stderr, "ursa: URSA_REPLAY=%s: %s (a seed or a trace file written by a failed run)\n", path, strerror(errno));
    return -EINVAL;
  }
  if (fscanf(f, "ursa-explore-trace 1 strategy %63s seed %llu decisions", strat, &seed) != 2 ||
      ursa__explore_parse(strat, &X.kind, &X.depth, &X.k) != 0)
    goto out;
  while (fscanf(f, "%llu", &id) == 1) {
    if (X.nwant % 1024 == 0) {
      uint32_t *n = realloc(X.want, (X.nwant + 1024) * sizeof *n);
      if (n == NULL) { err = -ENOMEM; goto out; }
      X.want = n;
    }
    X.want[X.nwant++] = (uint32_t)id;
  }
  if (fscanf(f, "%63s", word) == 1) goto out;         /* something else than decisions */
  snprintf(X.strategy, sizeof X.strategy, "%s", strat);
  X.seed = seed;
  err = 0;
out:
  fclose(f);
  if (err) fprintf(stderr, "ursa: URSA_REPLAY=%s: not a trace file of ursa's exploration\n", path);
  return err;
}

int ursa__explore_config(ursa_config_t *c, const ursa_config_t *given) {
  const char *s = given && given->explore ? given->explore : getenv("URSA_EXPLORE");
  const char *replay = getenv("URSA_REPLAY");
  int err;
  ursa__g.explore = 0;
  if (given == NULL || given->explore == NULL) {
    if (s != NULL && *s == '\0') s = NULL;
    if (replay != NULL && *replay == '\0') replay = NULL;
    if (s == NULL && replay == NULL) return 0;
  }
#ifdef URSA_NO_TRACE
  fprintf(stderr, "ursa: schedule exploration needs the scheduler's hooks, which this build left "
                  "out (-DURSA_WITH_TRACE=OFF)\n");
  return -ENOTSUP;
#endif
  free(X.want);
  X.want = NULL;
  X.nwant = 0;
  X.kind = 0;
  if (given && given->explore) {
    X.seed = given->seed;
  } else if (replay != NULL && parse_seed(replay, &X.seed) != 0) {   /* a trace file */
    if ((err = read_trace(replay)) != 0) return err;
  } else if (replay == NULL && getenv("URSA_SEED") != NULL && *getenv("URSA_SEED") != '\0') {
    if (parse_seed(getenv("URSA_SEED"), &X.seed) != 0) {
      fprintf(stderr, "ursa: URSA_SEED=%s: not a number (the seed of the schedule to explore)\n", getenv("URSA_SEED"));
      return -EINVAL;
    }
  } else if (replay == NULL) {
    X.seed = 0;
  }
  if (X.kind == 0) {                                    /* not from a trace file */
    if (s == NULL) {
      fprintf(stderr, "ursa: URSA_REPLAY=%s needs URSA_EXPLORE=<the strategy the failure printed>\n", replay);
      return -EINVAL;
    }
    if (ursa__explore_parse(s, &X.kind, &X.depth, &X.k) != 0) {
      fprintf(stderr, "ursa: %s=%s: not a strategy (random, pct, pct:DEPTH or pct:DEPTH:STEPS, "
                      "DEPTH 1..%u)\n", given && given->explore ? "ursa_config_t.explore" : "URSA_EXPLORE",
              s, PCT_DEPTH_MAX);
      return -EINVAL;
    }
    if (X.kind == S_PCT) snprintf(X.strategy, sizeof X.strategy, "pct:%u:%llu", X.depth, (unsigned long long)X.k);
    else snprintf(X.strategy, sizeof X.strategy, "random");
  }
  X.max_steps = ursa__env_number("URSA_EXPLORE_MAX_STEPS", 1, UINT64_MAX >> 1, MAX_STEPS_DEF);
  if (X.report_fd < 0 && getenv("URSA_EXPLORE_REPORT_FD") != NULL)     /* set by ursa-explore */
    X.report_fd = (int)ursa__env_number("URSA_EXPLORE_REPORT_FD", 0, 1 << 20, 0);
  if (!X.handlers) {                  /* before ursa's overflow handler, which chains to them */
    unsigned i;
    if (on_exit(at_exit, NULL) != 0) return -ENOMEM;
    for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++) prior_sig[fatal[i]] = signal(fatal[i], on_fatal);
    X.handlers = 1;
  }
  ursa__g.vps_api = c->vps ? c->vps : 1;              /* the VPs the program sees: 1 unless asked
                                                          (not the CPUs: a seed names one run on any
                                                          machine) */
  c->vps = 1;                                          /* one VP runs everything */
  ursa__g.explore = 1;
  return 0;
}

void ursa__explore_report_to(int fd) { X.report_fd = fd; }

/* ---- the failure report ----------------------------------------------------------------------- */

/* No tail call to write or close here: libursa-pthread.so tells libursa's calls by their return
 * address (tests/CMakeLists.txt, pthread_ursa_no_tail_calls; clang made both jumps). */
static void put(const char *s) {
  (void)!write(2, s, strlen(s));
  __asm__ volatile("" ::: "memory");
}

static void write_trace_file(void) {
  char buf[160];
  int fd;
  size_t i;
  if (X.trace_path[0] == '\0') return;
  fd = open(X.trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  snprintf(buf, sizeof buf, "ursa-explore-trace 1\nstrategy %s\nseed %llu\ndecisions", X.strategy,
           (unsigned long long)X.seed);
  (void)!write(fd, buf, strlen(buf));
  for (i = 0; i < X.nlog; i++) {
    snprintf(buf, sizeof buf, "%s%u", i % 20 == 0 ? "\n" : " ", X.log[i]);
    (void)!write(fd, buf, strlen(buf));
  }
  (void)!write(fd, "\n", 1);
  close(fd);
  __asm__ volatile("" ::: "memory");                   /* no tail call (put, above) */
}

/* The schedule's tail, run-length coded ("3 1x4 2": thread 3, thread 1 four times, thread 2). */
static void put_schedule(void) {
  char buf[64];
  size_t i = X.nlog > LOG_SHOWN ? X.nlog - LOG_SHOWN : 0;
  put("ursa: explore: schedule (the thread chosen at each decision");
  if (i) { snprintf(buf, sizeof buf, ", the last %u of %zu", LOG_SHOWN, X.nlog); put(buf); }
  put("):");
  while (i < X.nlog) {
    size_t j = i;
    while (j + 1 < X.nlog && X.log[j + 1] == X.log[i]) j++;
    if (j > i) snprintf(buf, sizeof buf, " %ux%zu", X.log[i], j - i + 1);
    else snprintf(buf, sizeof buf, " %u", X.log[i]);
    put(buf);
    i = j + 1;
  }
  put("\n");
}

static void report(const char *what) {
  char buf[512];
  if (X.reported) return;
  X.reported = 1;
  snprintf(buf, sizeof buf, "ursa: explore: FAILED (%s) under %s, seed %llu, after %llu steps and %zu decisions\n",
           what, X.strategy, (unsigned long long)X.seed, (unsigned long long)X.steps, X.nlog);
  put(buf);
  put_schedule();
  if (X.log_lost) put("ursa: explore: (out of memory: the log ends early and no trace file is written; the seed replays the run)\n");
  else write_trace_file();
  snprintf(buf, sizeof buf, "ursa: explore: replay: URSA_EXPLORE=%s URSA_REPLAY=%llu <the same command>, or "
           "URSA_REPLAY=%s\n", X.strategy, (unsigned long long)X.seed, X.trace_path);
  put(buf);
}

static void report_steps(void) {
  char buf[48];
  if (X.report_fd < 0) return;
  snprintf(buf, sizeof buf, "steps %llu\n", (unsigned long long)X.steps);
  (void)!write(X.report_fd, buf, strlen(buf));
  X.report_fd = -1;
}

static void at_exit(int status, void *arg) {
  char what[48];
  URSA_UNUSED(arg);
  if (!X.on) return;
  report_steps();
  if (status == 0) {
    if (X.trace_always && !X.log_lost) write_trace_file();   /* URSA_EXPLORE_TRACE asked for it */
    return;
  }
  if (status == 3) snprintf(what, sizeof what, "deadlock: exit status 3");
  else if (status == 4) snprintf(what, sizeof what, "step limit: exit status 4");
  else snprintf(what, sizeof what, "exit status %d", status);
  report(what);
}

void ursa__explore_exit(int status) {
  fflush(NULL);
  at_exit(status, NULL);
  _exit(status);
}

static const int fatal[6] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP };

static void on_fatal(int sig) {
  char what[48];
  if (X.on) {
    report_steps();
    snprintf(what, sizeof what, "signal %d, %s", sig, strsignal(sig));
    report(what);
  }
  signal(sig, prior_sig[sig] == SIG_ERR ? SIG_DFL : prior_sig[sig]);
  raise(sig);
}

/* ---- decisions -------------------------------------------------------------------------------- */

static uint64_t *prio_of(const struct ursa__thread *t) {
  uint64_t id = t->id;
  if (id >= X.prio_cap) {
    size_t cap = X.prio_cap ? X.prio_cap : 256;
    uint64_t *n;
    while (cap <= id) cap *= 2;
    if ((n = realloc(X.prio, cap * sizeof *n)) == NULL) URSA_PANIC("explore: out of memory");
    memset(n + X.prio_cap, 0, (cap - X.prio_cap) * sizeof *n);
    X.prio = n;
    X.prio_cap = cap;
  }
  if (X.prio[id] == 0) X.prio[id] = PCT_DEPTH_MAX + 1 + (rnd() >> 8);   /* above every changed one */
  return &X.prio[id];
}

static void cand_room(size_t n) {
  if (n > X.cand_cap) {
    size_t cap = X.cand_cap ? X.cand_cap * 2 : 64;
    struct ursa__thread **c;
    while (cap < n) cap *= 2;
    if ((c = realloc(X.cand, cap * sizeof *c)) == NULL) URSA_PANIC("explore: out of memory");
    X.cand = c;
    X.cand_cap = cap;
  }
}

/* One step taken by `cur`: the clock, the step limit, pct's change points. */
static void step(const struct ursa__thread *cur) {
  X.steps++;
  ursa__vclock.now += STEP_NS;
  if (ursa_unlikely(X.steps > X.max_steps)) {
    char buf[160];
    snprintf(buf, sizeof buf, "ursa: explore: more than %llu steps (URSA_EXPLORE_MAX_STEPS): a livelock, or "
             "a run longer than the limit\n", (unsigned long long)X.max_steps);
    put(buf);
    exit(4);
  }
  while (X.kind == S_PCT && X.changed < X.nchange && X.change[X.changed] <= X.steps) {
    X.changed++;
    if (cur != NULL && ursa__get_state(cur) != URSA__ZOMBIE) *prio_of(cur) = X.changed;   /* 1 .. D-1 */
  }
}

/* Chooses among X.cand[0..n) except index `skip` (-1: none): the index. */
static size_t decide(size_t n, long skip) {
  size_t i, best = 0, eligible = n - (skip >= 0);
  if (eligible <= 1) {
    for (i = 0; i < n; i++) if ((long)i != skip) return i;
    return 0;
  }
  if (X.kind == S_RANDOM) {
    uint64_t r = rnd_below(eligible);
    for (i = 0; i < n; i++) {
      if ((long)i == skip) continue;
      if (r-- == 0) { best = i; break; }
    }
  } else {
    uint64_t bp = 0;
    for (i = 0; i < n; i++) {
      uint64_t p;
      if ((long)i == skip) continue;
      p = *prio_of(X.cand[i]);
      if (p > bp || (p == bp && X.cand[i]->id < X.cand[best]->id)) { bp = p; best = i; }
    }
  }
  if (X.nlog < X.nwant) {                             /* replay from a file: its choice */
    uint32_t want = X.want[X.nlog];
    for (i = 0; i < n && ((long)i == skip || X.cand[i]->id != want); i++) {}
    if (i == n) {
      char buf[160];
      snprintf(buf, sizeof buf, "ursa: explore: the replay diverged at decision %zu: thread %u is not ready "
               "(the program or its input changed since the trace was written)\n", X.nlog, want);
      put(buf);
      exit(5);
    }
    best = i;
  }
  if (X.nlog == X.log_cap && !X.log_lost) {
    size_t cap = X.log_cap ? X.log_cap * 2 : 4096;
    uint32_t *l = realloc(X.log, cap * sizeof *l);
    if (l == NULL) X.log_lost = 1;                    /* the seed still replays the run */
    else { X.log = l; X.log_cap = cap; }
  }
  if (!X.log_lost) X.log[X.nlog++] = (uint32_t)X.cand[best]->id;
  return best;
}

/* The scheduler's hook (sched.h, ursa__explore_hooks.pick). */
static struct ursa__thread *pick(struct ursa__vp *vp, struct ursa__thread *from, struct ursa__thread *to) {
  struct ursa__thread *t, *chosen;
  size_t n = 0, i, c;
  long skip = -1;
  cand_room(ursa__runq_len(vp) + 2);
  X.cand[n++] = to;
  while ((t = ursa__runq_pop(vp)) != NULL) {
    cand_room(n + 1);
    if (t == from) skip = (long)n;                    /* a yield: others first */
    X.cand[n++] = t;
  }
  if (X.forced != NULL) {                             /* point() decided already */
    for (c = 0; c < n && X.cand[c] != X.forced; c++) {}
    X.forced = NULL;
    if (c == n) c = 0;
  } else {
    step(from);
    c = decide(n, skip);
  }
  chosen = X.cand[c];
  for (i = 0; i < n; i++) {
    if (i == c) continue;
    if (ursa__get_state(X.cand[i]) == URSA__BLOCKED) {   /* a finishing thread's joiner */
      X.cand[i]->w.wake_result = 0;
      ursa__set_state(X.cand[i], URSA__READY);
    }
    ursa__runq_push(vp, X.cand[i]);
  }
  return chosen;
}

/* The model's deferred-preemption hook, called at every preemption point (sched.h). */
static void point(struct ursa__vp *vp) {
  struct ursa__thread *cur = vp->cur;
  const struct ursa__runq *q = &vp->runq;
  size_t n = 0, c;
  uint32_t p;
  step(cur);
  if (ursa__runq_empty(vp) || cur->preempt_off) return;
  cand_room(ursa__runq_len(vp) + 1);
  X.cand[n++] = cur;
  if (q->next) X.cand[n++] = q->next;
  for (p = q->head; p != q->tail; p++) X.cand[n++] = q->buf[p & q->mask];
  c = decide(n, -1);
  if (c == 0) return;
  X.forced = X.cand[c];
  /* the model's involuntary yield without its pinning and spreading (one VP runs everything) */
  if (URSA__RECORDING()) ursa__trace_preempt(vp, cur);
  vp->stats.preemptions++;
  (void)ursa__yield_involuntary(vp);
}

/* ---- start and stop --------------------------------------------------------------------------- */

int ursa__explore_start(struct ursa__vp *vp0) {
  unsigned i;
  if (!ursa__g.explore) return 0;
  X.rng = X.seed ^ 0x5851F42D4C957F2Dull;
  X.steps = 0;
  X.nlog = 0;
  X.forced = NULL;
  X.reported = 0;
  X.log_lost = 0;
  if (X.prio) memset(X.prio, 0, X.prio_cap * sizeof *X.prio);
  X.nchange = X.changed = 0;
  if (X.kind == S_PCT) {                              /* D-1 distinct change points in [1, K] */
    unsigned d = X.depth - 1;
    while (X.nchange < d && X.nchange < X.k) {
      uint64_t s = 1 + rnd_below(X.k), j;
      for (j = 0; j < X.nchange && X.change[j] != s; j++) {}
      if (j < X.nchange) continue;
      X.change[X.nchange++] = s;
    }
    for (i = 1; i < X.nchange; i++) {                 /* ascending */
      uint64_t v = X.change[i];
      unsigned j = i;
      while (j > 0 && X.change[j - 1] > v) { X.change[j] = X.change[j - 1]; j--; }
      X.change[j] = v;
    }
  }
  {
    const char *tp = getenv("URSA_EXPLORE_TRACE"), *tmp = getenv("TMPDIR");
    X.trace_always = tp && *tp;
    if (tp && *tp) snprintf(X.trace_path, sizeof X.trace_path, "%s", tp);
    else snprintf(X.trace_path, sizeof X.trace_path, "%s/ursa-explore-%d.trace", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  }
  ursa__vclock.now = ursa__now();                     /* virtual from here, from the real start */
  ursa__vclock.on = 1;
  ursa__explore_hooks.pick = pick;
  ursa__model_hooks.deferred = point;
  __atomic_store_n(&vp0->pre_pending, 1, __ATOMIC_RELAXED);     /* every preemption point asks */
  __atomic_or_fetch(&ursa__tick_flag, 1, __ATOMIC_RELAXED);     /* ... and every ursa_tick      */
  vp0->ic_left = 1;
  X.on = 1;
  __atomic_or_fetch(&ursa__trace_flag.on, URSA__TRACE_EXPLORE, __ATOMIC_RELAXED);
  return 0;
}

void ursa__explore_stop(struct ursa__vp *vp0) {
  if (!X.on) { ursa__g.explore = 0; return; }
  report_steps();
  if (X.trace_always && !X.log_lost) write_trace_file();
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_EXPLORE, __ATOMIC_RELAXED);
  __atomic_store_n(&vp0->pre_pending, 0, __ATOMIC_RELAXED);
  ursa__model_hooks.deferred = ursa__preempt_deferred;
  ursa__vclock.on = 0;
  X.on = 0;
  ursa__g.explore = 0;
  free(X.log); X.log = NULL; X.nlog = X.log_cap = 0;
  free(X.prio); X.prio = NULL; X.prio_cap = 0;
  free(X.cand); X.cand = NULL; X.cand_cap = 0;
  free(X.want); X.want = NULL; X.nwant = 0;
}
