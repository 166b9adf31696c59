/*
 * report.c - the deadlock report, ursa_dump and the registry of waitable kinds they read.
 *
 * A thread blocked in a wait says what it waits on with wait_kind and wait_obj; the kind's entry
 * in the registry (ursa__waitkind_register, sched.h) names it and, for objects with an owner,
 * says who holds the object: that is the wait-for graph's edge.  The walks below read other
 * VPs' threads without stopping them: state and wait fields are relaxed atomics (a snapshot that
 * may be stale, never torn), and a backtrace is taken only of a suspended thread.  A dump counts
 * itself as a reader of descriptors (ursa__stack_readers_enter, src/core/stack.c) for its whole
 * walk, so a thread released meanwhile by another VP keeps its stack mapped until the dump ends:
 * what it reads may be stale, never unmapped.
 * Who calls what: ursa__deadlock_report from the one-VP block path (sched.c) and the SMP idle
 * loop (vp.c) when nothing can run again; ursa__dump_all from ursa_dump and the dump thread
 * (src/runtime/dumpsig.c).
 *
 * URSA_DEADLOCK=wait (libursa-pthread sets it for POSIX programs): no report, no exit; the VP
 * blocks in the kernel for good, as a deadlocked process of kernel threads does, so that a
 * signal handler still runs (and may exit) and the process can be killed or dumped
 * (URSA_DUMP_SIGNAL).  POSIX requires a relocked NORMAL mutex to deadlock, not to end the
 * process, and a program may well wait for a signal with every thread blocked.
 */
#define _GNU_SOURCE
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>


/* The registry of waitable kinds: what a blocked thread's wait_kind means.  Each layer that blocks
 * threads registers its kinds once, from ursa_init before any other VP runs (sched: join and
 * sleep; src/sync/: the objects; src/pt/: the stackless executors' waits), so the report never
 * calls into a layer above it.  Read-only once VPs run. */
static const struct ursa__waitkind *kinds[URSA__W_MAX];

void ursa__waitkind_register(int kind, const struct ursa__waitkind *k) {
  URSA_ASSERT(kind > URSA__W_NONE && kind < URSA__W_MAX);
  __atomic_store_n(&kinds[kind], k, __ATOMIC_RELEASE);   /* pairs with kind_of's acquire load */
}

static const struct ursa__waitkind *kind_of(int kind) {
  if (kind <= URSA__W_NONE || kind >= URSA__W_MAX) return NULL;
  return __atomic_load_n(&kinds[kind], __ATOMIC_ACQUIRE);   /* pairs with the release above */
}

static const struct ursa__waitkind join_kind = { "ursa_join on thread", NULL, URSA__WK_THREAD },
                                   sleep_kind = { "ursa_sleep_ns", NULL, URSA__WK_NOOBJ };

void ursa__sched_register_kinds(void) {
  ursa__waitkind_register(URSA__W_JOIN, &join_kind);
  ursa__waitkind_register(URSA__W_SLEEP, &sleep_kind);
}

const char *ursa__wait_name(int kind) {
  const struct ursa__waitkind *k = kind_of(kind);
  return k ? k->what : "nothing";
}

/* t's current wait, as its blocking thread wrote it (ursa__set_blocked, core/thread.h: kind and
 * object first, then the state with release, which the acquire load below pairs with): false
 * when t is not blocked, or its wait changed while it was read.  So a dump never takes an earlier
 * wait's object for this one (a joined thread of an earlier wait may have been released, and its
 * stack unmapped, before the dump counted itself a reader: src/core/stack.c, "Readers"). */
struct wait_snap { int kind; void *obj; const struct ursa__waitkind *k; };

static bool wait_of(const struct ursa__thread *t, struct wait_snap *w) {
  if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != URSA__BLOCKED) return false;
  w->kind = __atomic_load_n(&t->wait_kind, __ATOMIC_ACQUIRE);
  w->obj = __atomic_load_n(&t->w.wait_obj, __ATOMIC_ACQUIRE);
  w->k = kind_of(w->kind);
  return __atomic_load_n(&t->wait_kind, __ATOMIC_RELAXED) == w->kind &&
         __atomic_load_n(&t->state, __ATOMIC_RELAXED) == URSA__BLOCKED;
}

/* The wait-for graph: the thread that a wait waits for, when its kind says who that is (a mutex's
 * owner, an rwlock's writer, a joined thread); NULL otherwise (semaphores, cells and barriers have
 * no owner).  Every thread has at most one such edge, so cycles are found in linear time. */
static struct ursa__thread *holder_of(const struct wait_snap *w) {
  if (w->k == NULL) return NULL;
  if (w->k->flags & URSA__WK_THREAD) return w->obj;
  return w->k->owner ? w->k->owner(w->obj) : NULL;
}

static struct ursa__thread *waits_for(const struct ursa__thread *t) {
  struct wait_snap w;
  return wait_of(t, &w) ? holder_of(&w) : NULL;
}

/* Prints what t waits on, e.g. "ursa_mutex_lock on mutex 0x... held by thread 3 (b)". */
static void print_wait(FILE *f, const struct ursa__thread *t) {
  struct wait_snap w;
  const struct ursa__thread *h;
  unsigned flags;
  if (!wait_of(t, &w)) {
    fprintf(f, "(its wait changed while it was read)");
    return;
  }
  h = holder_of(&w);
  flags = w.k ? w.k->flags : URSA__WK_NOOBJ;
  if ((flags & URSA__WK_THREAD) && h) {
    fprintf(f, "%s %llu (%s)", ursa__wait_name(w.kind), (unsigned long long)h->id, h->name);
    return;
  }
  if (flags & URSA__WK_NOOBJ) fprintf(f, "%s", ursa__wait_name(w.kind));
  else fprintf(f, "%s %p", ursa__wait_name(w.kind), w.obj);
  if (h) fprintf(f, " held by thread %llu (%s)", (unsigned long long)h->id, h->name);
}

/* Prints one thread as "thread <id> (<name>): <state or what it waits on>". */
static void print_thread(FILE *f, const struct ursa__thread *t) {
  fprintf(f, "ursa:   thread %llu (%s): ", (unsigned long long)t->id, t->name);
  switch (t->state) {
  case URSA__RUNNING: fprintf(f, "running on VP %u\n", t->vp ? t->vp->index : 0u); return;
  case URSA__READY:   fprintf(f, "ready\n"); return;
  case URSA__ZOMBIE:  fprintf(f, "finished, not yet joined\n"); return;
  case URSA__GONE:    fprintf(f, "gone (the child of a fork kept only the thread that forked)\n"); return;
  default: break;
  }
  print_wait(f, t);
  if (t->w.heap_idx) fprintf(f, ", until %.3f s from now", (double)(int64_t)(t->deadline - ursa__now()) / 1e9);
  fprintf(f, "\n");
}

struct dump { FILE *f; int only_blocked; int n; int bt; struct ursa__thread *self; };

/* Whether t is suspended, so that its saved registers and stack can be read: never for a running
 * thread; with several VPs also not while its last switch is still saving it (on-CPU byte). */
/* With one VP a BLOCKED thread may still be the VP's current one: the VP sleeps in the kernel on
 * that thread's stack (a timed wait with nothing else to run), and its saved registers are old. */
static bool suspended(struct ursa__thread *t) {
  uint8_t s = __atomic_load_n(&t->state, __ATOMIC_RELAXED);
  if (s != URSA__READY && s != URSA__BLOCKED) return false;
  if (ursa__g.nvps == 1) return __atomic_load_n(&ursa__g.vp0.cur, __ATOMIC_RELAXED) != t;
  return !ursa__oncpu(t);
}

static void dump_one(struct ursa__thread *t, void *arg) {
  struct dump *d = arg;
  if (d->only_blocked && t->state != URSA__BLOCKED) return;
  d->n++;
  if (d->f == NULL) return;
  print_thread(d->f, t);
  if (!d->bt) return;
  if (t == d->self) ursa__print_backtrace(d->f, t, true);
  else if (suspended(t)) {
    uint8_t s = __atomic_load_n(&t->state, __ATOMIC_RELAXED);
    ursa__print_backtrace(d->f, t, false);
    if (!suspended(t) || __atomic_load_n(&t->state, __ATOMIC_RELAXED) != s)
      fprintf(d->f, "ursa:       (it was resumed while this was read: the frames may be wrong)\n");
  }
}

/* Cycle search: walk from each unvisited thread along waits_for, stamping the walk's number in
 * mark; meeting the current walk's stamp again closes a cycle, which is then printed once.  Each
 * search's stamps lie above every earlier search's (base, from dump_seq), so a mark below base
 * means "not visited yet" and no pass clears the marks first; two dumps at once (two VPs, the
 * dump thread) cannot make each other loop: a mark at or above one's base stops its walk. */
struct cycles { FILE *f; uint64_t base, walk; int n; };

static uint64_t dump_seq;                     /* atomic: the last search's base */

static uint64_t mark_of(const struct ursa__thread *t) { return __atomic_load_n(&t->mark, __ATOMIC_RELAXED); }

static void find_cycle(struct ursa__thread *t, void *arg) {
  struct cycles *c = arg;
  struct ursa__thread *u = t, *v;
  size_t len = 0;
  c->walk++;
  while (u && mark_of(u) < c->base) {
    __atomic_store_n(&u->mark, c->walk, __ATOMIC_RELAXED);
    len++;
    u = waits_for(u);
  }
  if (u == NULL || mark_of(u) != c->walk) return;  /* ended, or joined an earlier walk */
  c->n++;
  fprintf(c->f, "ursa: wait-for cycle:");
  v = u;
  for (;;) {                     /* (with other VPs running the graph may change meanwhile) */
    fprintf(c->f, " thread %llu (%s) waits in ", (unsigned long long)v->id, v->name);
    print_wait(c->f, v);
    v = waits_for(v);
    if (v == u) { fprintf(c->f, ".\n"); return; }
    if (v == NULL || mark_of(v) != c->walk || len-- == 0) {
      fprintf(c->f, "; (it changed while it was read)\n");
      return;
    }
    fprintf(c->f, ";");
  }
}

/* Prints every cycle of the wait-for graph; returns how many. */
static int print_cycles(FILE *f) {
  struct cycles c = { f, 0, 0, 0 };
  c.base = __atomic_add_fetch(&dump_seq, (uint64_t)1 << 32, __ATOMIC_RELAXED);   /* 2^32 walks each */
  c.walk = c.base;
  ursa__thread_foreach(find_cycle, &c);
  return c.n;
}

void ursa__deadlock_report(struct ursa__vp *vp) {
  /* one VP: called by the thread that blocks last, still on its own stack (self) */
  struct dump count = { NULL, 1, 0, 0, NULL }, print = { stderr, 1, 0, 1, vp->cur };
  if (ursa__g.deadlock_wait)
    for (;;) pause();                                         /* handlers run; EINTR: again */
  ursa__thread_foreach(dump_one, &count);
  fprintf(stderr, "ursa: deadlock: all %d user threads blocked, no timer pending\n", count.n);
  ursa__thread_foreach(dump_one, &print);
  print_cycles(stderr);
  fflush(stderr);
  exit(3);
}

void ursa__dump_all(FILE *f, struct ursa__vp *vp, struct ursa__thread *self) {
  struct dump count = { NULL, 0, 0, 0, NULL }, print = { f, 0, 0, 1, self };
  ursa__stack_readers_enter();                                /* no stack unmapped until exit */
  ursa__thread_foreach(dump_one, &count);
  if (vp)
    fprintf(f, "ursa: %d threads; dumped by thread %llu on VP %u (%u VPs); %u ready on it, %u timers armed\n",
            count.n, (unsigned long long)self->id, vp->index, ursa__g.nvps, ursa__runq_len(vp), vp->ntimers);
  else
    fprintf(f, "ursa: %d threads on %u VPs; dumped on signal (URSA_DUMP_SIGNAL) while they run\n", count.n,
            ursa__g.nvps);
  ursa__thread_foreach(dump_one, &print);
  print_cycles(f);                                            /* a partial deadlock, on demand */
  ursa__stack_readers_exit();
  fflush(f);
}

int ursa_dump(FILE *f) {
  URSA_VP_OR_RETURN(vp);
  if (f == NULL) return -EINVAL;
  ursa__dump_all(f, vp, vp->cur);
  return 0;
}
