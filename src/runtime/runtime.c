/*
 * runtime.c - ursa_init / ursa_fini, configuration (ursa_config_t and URSA_* variables), the
 * counters, error strings and the panic path.
 *
 * ursa_init turns the calling kernel thread into VP 0 and its caller into the ursa thread "main":
 * main keeps running on its own stack, and from then on it is scheduled like any other thread
 * (with several VPs, main stays on VP 0).  It starts VPs 1..N-1 (src/sched/vp.c).
 * ursa_init and ursa_fini are called by that kernel thread only.
 *
 * fork (issue #22 item 4).  ursa_init registers fork handlers once (pthread_atfork).  The child of
 * a fork has one kernel thread, the one that called fork.  With one VP, when that is VP 0's
 * thread, the child keeps the runtime: the caller is the only ursa thread that runs on, the others
 * are copies that run when it lets them (a yield, a wait), as in the parent; the dump thread and
 * the parent's timers are not there (cp-ts gets a new timer; the trace is not written by the
 * child).  Otherwise (several VPs: the other VPs' kernel threads are gone with whatever they held,
 * locks included; or forked by a kernel thread that was no VP) the runtime stays in the parent:
 * the child's thread leaves its VP and every ursa call returns -ECHILD (ursa__novp), ursa_init
 * included, so the child can only exec or _exit (or go on without ursa).
 */
#define _GNU_SOURCE
#include "runtime.h"
#include "../model/model.h"
#include "../sched/sched_smp.h"
#include "../sched/policy.h"
#include "../sync/sync.h"
#include "../io/io.h"
#include "../explore/explore.h"

#include <sched.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int atexit_registered;

/* Counters of every VP, kept for ursa_stats after ursa_fini (URSA_STATS prints them at exit). */
static ursa_stats_t kept[64];
static unsigned kept_n;

/* ---- configuration ---------------------------------------------------------------------------- */

/* The limits of the settings (ursa_config_t and URSA_*; docs/GUIDE.md, "Settings"). */
#define STACK_SIZE_MAX   ((size_t)1 << 40)       /* 1 TiB                                      */
#define STACK_CACHE_MAX  ((size_t)1 << 20)       /* free stacks kept per VP                    */
#define PREALLOC_MAX     ((size_t)1 << 16)       /* stacks mapped by ursa_init                 */
#define VPS_MAX          4096u
#define PQ_CAP_MAX       4096u
#define WQ_CAP_MAX       (1u << 24)

static const char *const sched_words[] = { NULL, "rotator", "lb2", "global", "steal" };   /* URSA_SCHED_* */
static const char *const guard_words[] = { "auto", "mprotect" };
static const char *const deadlock_words[] = { "exit", "wait" };

static unsigned cpus_allowed(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return (unsigned)CPU_COUNT(&set);
  return 1;
}

static void print_stats_at_exit(void) {
  if (ursa__g.stats) ursa_stats_print(stderr);
}

/* ---- fork (see the top) ---------------------------------------------------------------------- */

static int atfork_registered;

static void atfork_prepare(void) { ursa__stack_atfork_prepare(); }
static void atfork_parent(void) { ursa__stack_atfork_parent(); }
static void atfork_child(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  ursa__stack_atfork_child();                          /* no dump reads in the child */
  if (!ursa__g.initialized) return;
  ursa__dumpsig_atfork_child();
  ursa__trace_atfork_child();
  if (ursa__g.nvps == 1 && vp == &ursa__g.vp0) {      /* the VP itself forked: it goes on */
    ursa__model_atfork_child(vp);
    ursa__io_atfork_child();                           /* an engine of its own */
    return;
  }
  __atomic_store_n(&ursa__g.forked, 1, __ATOMIC_RELAXED);
  ursa__tls_vp = NULL;                                 /* every call: ursa__novp() == -ECHILD */
}

int ursa_init(const ursa_config_t *cfg) {
  struct ursa__vp *vp = &ursa__g.vp0;
  ursa_config_t c;
  int err;
  if (ursa__g.forked) return -ECHILD;                  /* the runtime stayed in the parent */
  if (ursa__g.initialized || ursa__tls_vp) return -EBUSY;
  if (!atfork_registered) {
    if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0) return -ENOMEM;
    atfork_registered = 1;
  }
  ursa__sched_register_kinds();                        /* the reports' names of each wait */
  ursa__sync_register_kinds();
#if URSA_TEST_HARD
  ursa__fail_reset();
#endif
  memset(&c, 0, sizeof c);
  if (cfg) c = *cfg;
  /* a setting given in the config wins; else its variable (checked, env.c); else the default */
  if (c.stack_size == 0) c.stack_size = ursa__env_size("URSA_STACK_SIZE", URSA_STACK_MIN, STACK_SIZE_MAX, 0);
  if (c.stack_cache == 0) c.stack_cache = ursa__env_number("URSA_STACK_CACHE", 1, STACK_CACHE_MAX, 0);
  if (c.stack_prealloc == 0) c.stack_prealloc = ursa__env_number("URSA_STACK_PREALLOC", 1, PREALLOC_MAX, 0);
  if (c.stats == 0) c.stats = ursa__env_flag("URSA_STATS", 0);
  if (c.guard == 0) c.guard = ursa__env_word("URSA_GUARD", guard_words, 2, 0);
  if (c.vps == 0) c.vps = (unsigned)ursa__env_number("URSA_VPS", 1, VPS_MAX, 0);
  if (c.pin == 0) c.pin = ursa__env_flag("URSA_PIN", 0);
  if (c.sched == 0) c.sched = ursa__env_word("URSA_SCHED", sched_words, 5, 0);
  if (c.pq_cap == 0) c.pq_cap = (unsigned)ursa__env_number("URSA_PQ_CAP", 1, PQ_CAP_MAX, 0);
  if (c.wq_cap == 0) c.wq_cap = (unsigned)ursa__env_number("URSA_WQ_CAP", 1, WQ_CAP_MAX, 0);
  if (c.region_balance == 0) c.region_balance = ursa__env_flag("URSA_REGION_BALANCE", 0);
  if ((err = ursa__explore_config(&c, cfg)) != 0) return err;  /* exploration: one VP runs */
  if ((err = ursa__model_config(&c, cfg)) != 0) return err;   /* cm: one VP */
  if (c.vps == 0) c.vps = cpus_allowed();
  if (!ursa__g.explore) ursa__g.vps_api = c.vps;
  else c.vps = 1;
  if (c.sched == 0) c.sched = URSA_SCHED_ROTATOR;
#if URSA_TEST_HARD
  /* the hard test build: tiny queues, so threads overflow, travel the ring and migrate all the time */
  if (c.pq_cap == 0) c.pq_cap = 1;
  if (c.wq_cap == 0) c.wq_cap = 2;
#endif
  if (c.pq_cap == 0) c.pq_cap = 16;
  if (c.wq_cap == 0) c.wq_cap = 1024;
  if (c.vps > VPS_MAX || c.sched < URSA_SCHED_ROTATOR || c.sched > URSA_SCHED_STEAL || c.wq_cap > WQ_CAP_MAX ||
      c.pq_cap > PQ_CAP_MAX || c.stack_cache > STACK_CACHE_MAX || c.stack_prealloc > PREALLOC_MAX ||
      c.guard < 0 || c.guard > 1)
    return -EINVAL;
  if (c.stack_size == 0) c.stack_size = 65536;
  if (c.stack_cache == 0) c.stack_cache = 1024;
  if (c.stack_prealloc == 0) c.stack_prealloc = 8;
  if (c.stack_size < URSA_STACK_MIN || c.stack_size > STACK_SIZE_MAX) return -EINVAL;   /* the config's */

  ursa__g.page = (size_t)sysconf(_SC_PAGESIZE);
  ursa__g.stack_size = (c.stack_size + ursa__g.page - 1) & ~(ursa__g.page - 1);
  ursa__g.stack_cache = c.stack_cache;
  ursa__g.guard_size = ursa__g.page;
  ursa__g.stats = c.stats;
  ursa__g.guard_mode = c.guard == 1;
  ursa__g.next_id = 1;
  ursa__g.nvps = c.vps;
  ursa__g.solo_sleepers = (int)c.vps - 1;           /* core/vp.h, ursa__solo */
  kept_n = 0;
  ursa__g.policy = c.sched - URSA_SCHED_ROTATOR;       /* enum ursa__policy */
  ursa__g.pq_cap = c.pq_cap;
  ursa__g.wq_cap = c.wq_cap;
  ursa__g.pin = c.pin;
  ursa__g.unstack = !c.pin && ursa__env_flag("URSA_UNSTACK", 1);   /* and VPs <= CPUs: vp.c */
  ursa__g.region_balance = c.region_balance != 0;
  /* (exploration always reports a deadlock: the schedule that led to it is the finding) */
  ursa__g.deadlock_wait = !ursa__g.explore && ursa__env_word("URSA_DEADLOCK", deadlock_words, 2, 0) == 1;
  ursa__g.model = c.model;                            /* 0: ursa__model_start decides */
  if ((err = ursa__rot_config(c.rotate_us, cfg && cfg->rotate_us)) != 0) return err;

  memset(vp, 0, sizeof *vp);
  vp->errno_p = &errno;
  if ((err = ursa__sched_reserve(vp, 64)) != 0) goto fail;
  if ((err = ursa__threads_init()) != 0) goto fail;
  if ((err = ursa__overflow_handler_install()) != 0) goto fail;
  ursa__tls_vp = vp;
  ursa__g.initialized = 1;
  (void)ursa__stack_prealloc(vp, c.stack_prealloc);   /* best effort: create maps on demand */
  ursa__trace_init();                                 /* URSA_TRACE: before VPs 1..N-1 start */
  err = ursa__model_start(vp);                        /* cp-ts: the signal handler */
  if (err == 0 && ursa__g.nvps > 1) err = ursa__smp_init();
  if (err == 0) {                                     /* an engine per VP; the offload pool's size */
    static const char *const io_words[] = { NULL, "epoll", "uring" };
    if (c.io == 0) c.io = ursa__env_word("URSA_IO", io_words, 3, 0);
    if (c.offload_threads == 0) c.offload_threads = (unsigned)ursa__env_number("URSA_OFFLOAD_THREADS", 1, 1024, 0);
    if (c.offload_threads == 0) c.offload_threads = 4;
    if (c.io < 0 || c.io > URSA_IO_URING || c.offload_threads > 1024) err = -EINVAL;
    else if (!ursa__g.explore) err = ursa__io_init(c.io, c.offload_threads);   /* exploration refuses I/O */
  }
  if (err == 0) err = ursa__explore_start(vp);       /* exploration: the hooks, before the mode */
  /* VP 0's hottest paths take their checked copies (which also end in preemption points) */
  ursa__vp_mode_set(vp);
  if (err == 0) err = ursa__model_go(vp);            /* cp-ts: VP 0's timer; handlers act */
  if (err != 0) {
    ursa__io_fini();                                  /* engines made (no poller yet) */
    if (vp->mode == URSA__SMPMODE) ursa__smp_fini(NULL);                /* VPs 1..N-1 delete their timers */
    ursa__io_free();                                  /* closed once no VP looks at them */
    ursa__explore_stop(vp);
    ursa__model_stop(vp);                             /* then the handler goes */
    ursa__trace_discard();
    ursa__tls_vp = NULL;
    ursa__g.initialized = 0;
    ursa__overflow_handler_remove();
    ursa__stack_pool_drain(vp);
    ursa__stack_depot_drain();
    goto fail;
  }
  ursa__dumpsig_start();                              /* URSA_DUMP_SIGNAL, opt-in */
  if (ursa__g.stats && !atexit_registered) {
    atexit(print_stats_at_exit);
    atexit_registered = 1;
  }
  return 0;
fail:                                                 /* each undo is a no-op if not done */
  ursa__threads_fini();
  free(vp->timers);
  free(vp->runq.buf);
  memset(vp, 0, sizeof *vp);
  return err;
}

static void stats_keep(void) {
  unsigned i;
  kept_n = ursa__g.nvps < 64 ? ursa__g.nvps : 64;
  for (i = 0; i < kept_n; i++) kept[i] = ursa__g.vps[i]->stats;
}

static void count_live(struct ursa__thread *t, void *arg) {
  URSA_UNUSED(t);
  ++*(size_t *)arg;
}

int ursa_fini(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  size_t live = 0;
  if (vp == NULL) return ursa__novp();
  if (vp->cur != vp->main_thread) return -EPERM;
  {
    size_t pollers = ursa__io_pollers_live();          /* the I/O layer's own threads: first, so
                                                          one that ends meanwhile is not missed */
    ursa__thread_foreach(count_live, &live);
    if (live > 1 + pollers) return -EBUSY;            /* threads alive or not yet joined */
  }
  if (vp != &ursa__g.vp0) return -EPERM;
  ursa__io_fini();                                    /* its pollers end, its pool stops */
  ursa__dumpsig_stop();                               /* no dump reads what fini frees */
  __atomic_store_n(&ursa__g.preempt_live, 0, __ATOMIC_RELAXED);   /* cp-ts: ticks are ignored */
  ursa__reap(vp);
  if (vp->mode == URSA__SMPMODE) ursa__smp_fini(stats_keep);            /* keeps the counters first */
  ursa__io_free();                                    /* the engines: no VP looks at them now */
  ursa__explore_stop(vp);                             /* before the model's hooks are reset */
  ursa__model_stop(vp);
  ursa__trace_fini();                                 /* URSA_TRACE: every VP has stopped */
  ursa__overflow_handler_remove();
  ursa__stack_pool_drain(vp);
  ursa__stack_depot_drain();                          /* after every VP's last release */
  ursa__threads_fini();
  ursa__regions_fini();
  free(vp->timers);
  free(vp->runq.buf);
  {
    ursa_stats_t keep = vp->stats;                   /* URSA_STATS prints them at exit */
    memset(vp, 0, sizeof *vp);
    vp->stats = keep;
  }
  ursa__tls_vp = NULL;
  ursa__g.initialized = 0;
  return 0;
}

/* ---- counters --------------------------------------------------------------------------------- */

const char *ursa_sched_policy(void) {
  return ursa__g.nvps > 1 ? ursa__pol_name(ursa__g.policy) : "rotator";
}

#if URSA_TSAN
/* The dynamic annotations of the TSan runtime: the snapshot below races by design. */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#endif

/* The counters of VP i: live ones while initialized (read racily from other VPs: a snapshot, each
 * counter as it was at some moment; the VPs' increments stay plain on their hot paths), else
 * those kept at ursa_fini. */
static int stats_of(unsigned i, ursa_stats_t *out) {
  if (ursa__g.initialized) {
    if (i >= ursa__g.nvps) return -EINVAL;
#if URSA_TSAN
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
    *out = ursa__g.nvps > 1 ? ursa__g.vps[i]->stats : ursa__g.vp0.stats;
#if URSA_TSAN
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
    return 0;
  }
  if (kept_n > 1) {
    if (i >= kept_n) return -EINVAL;
    *out = kept[i];
    return 0;
  }
  if (i != 0) return -EINVAL;
  *out = ursa__g.vp0.stats;
  return 0;
}

int ursa_stats_vp(unsigned vp, ursa_stats_t *out) {
  if (out == NULL) return -EINVAL;
  return stats_of(vp, out);
}

static unsigned stats_vps(void) {
  if (ursa__g.initialized) return ursa__g.nvps;
  return kept_n > 1 ? kept_n : 1;
}

int ursa_stats(ursa_stats_t *out) {
  unsigned i, n = stats_vps();
  if (out == NULL) return -EINVAL;
  memset(out, 0, sizeof *out);
  for (i = 0; i < n; i++) {
    ursa_stats_t s;
    uint64_t *d = (uint64_t *)out, *v = (uint64_t *)&s;
    size_t k;
    if (stats_of(i, &s) != 0) break;
    for (k = 0; k < sizeof s / sizeof(uint64_t); k++) d[k] += v[k];
  }
  return 0;
}

static void print_row(FILE *f, const char *who, const ursa_stats_t *s) {
  fprintf(f, "ursa: %-6s %12llu %12llu %12llu %12llu %12llu %10llu %10llu %8llu %10.3f %10llu %10llu %10llu %12llu %10llu %8llu %9llu\n", who,
          (unsigned long long)s->switches, (unsigned long long)s->yields,
          (unsigned long long)s->p_ops, (unsigned long long)s->p_blocking,
          (unsigned long long)s->blocks, (unsigned long long)s->created,
          (unsigned long long)s->timers, (unsigned long long)s->idle_waits,
          (double)s->idle_ns / 1e6, (unsigned long long)s->migrations,
          (unsigned long long)s->preemptions, (unsigned long long)s->preempt_deferred,
          (unsigned long long)s->ticks, (unsigned long long)s->stacks_mapped, (unsigned long long)s->steals,
          (unsigned long long)s->unstacks);
}

int ursa_stats_print(FILE *f) {
  ursa_stats_t s;
  if (f == NULL) return -EINVAL;
  fprintf(f, "ursa: %-6s %12s %12s %12s %12s %12s %10s %10s %8s %10s %10s %10s %10s %12s %10s %8s %9s\n", "VP", "switches", "yields",
          "P ops", "blocking P", "blocks", "created", "timers", "idle", "idle ms", "migrated",
          "preempted", "deferred", "ticks", "stacks", "stolen", "unstacked");
  {
    unsigned i, n = stats_vps();
    for (i = 0; i < n; i++) {
      char who[16];
      if (ursa_stats_vp(i, &s) != 0) break;
      snprintf(who, sizeof who, "%u", i);
      print_row(f, who, &s);
    }
  }
  ursa_stats(&s);
  print_row(f, "total", &s);
  if (*ursa__io_why()) fprintf(f, "ursa: I/O engine: %s (not io_uring: %s)\n", ursa__io_name(), ursa__io_why());
  else fprintf(f, "ursa: I/O engine: %s\n", ursa__io_name());
  return 0;
}

/* ---- errors ----------------------------------------------------------------------------------- */

const char *ursa_strerror(int err) {
  if (err == INT_MIN) return "unknown error";          /* -INT_MIN does not exist */
  if (err < 0) err = -err;
  switch (err) {
  case 0:          return "success";
  case EINVAL:     return "invalid argument (bad value, uninitialized or destroyed object)";
  case EPERM:      return "operation not permitted (not the owner, or not an ursa thread)";
  case ESRCH:      return "no such thread (stale or invalid handle)";
  case EDEADLK:    return "operation would deadlock";
  case EBUSY:      return "resource busy (held, has waiters, or already set)";
  case EAGAIN:     return "resource temporarily unavailable";
  case ENOMEM:     return "out of memory";
  case ETIMEDOUT:  return "timed out";
  case ECHILD:     return "the runtime stayed in the parent (a call in the child of a fork)";
  case EOVERFLOW:  return "value too large";
  default:         return strerror(err);
  }
}
