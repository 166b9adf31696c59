/*
 * pt_sched.c - stackless threads scheduled by ursa (include/ursa/pt_sched.h): executors, the
 * stackless semaphore, joins, timers and wait shells.
 *
 * Executors
 *   A stackless thread (struct ursa_pts) runs on one executor for its whole life: the executor of
 *   a VP (an ursa thread bound to that VP) or of a region (an ursa thread that is a member of the
 *   region), made at the first spawn there and kept in the registry until ursa_pts_fini.  The
 *   executor loop pops the head of its ready list and calls the thread's function; the result
 *   says what happened: WAITING (the thread queued itself on an object: the executor forgets it),
 *   YIELDED (back to the tail), EXITED or ENDED (finish: its joiner is woken).  Every
 *   URSA_PTS_BATCH calls, and whenever the list is empty, the executor serves the rest: it moves
 *   its inbox to the ready list, fires its expired timers, completes woken wait shells and yields
 *   to the other ursa threads of its VP; with nothing to run it blocks (below).  A timed wait
 *   that a post beat cancels its own timer when it resumes (URSA_PTS_SEM_TIMEDWAIT), so the loop
 *   reads nothing of the thread but its link and its function.
 *
 * Who may touch what
 *   - The ready list (q.head/q.tail), the timer heap, the shell pool: the executor's own ursa
 *     thread only, so none of them needs a lock or an atomic.  A thread running on executor E
 *     that makes a thread of E ready appends it there directly (the same-executor post of the
 *     header: a few stores).
 *   - The inbox, the completed shells, idle and stop: E->lock (taken when there are several
 *     VPs), by anyone.  A waker that makes a thread of E ready from anywhere else appends it to
 *     the inbox; in_n (atomic) lets the executor skip the lock while it is 0.
 *   - A thread's joiner field and its change to DONE or FREE: the lock of its executor, so that
 *     a join and the end cannot miss each other.
 *   - An ursa_pts_sem: its own lock (several VPs).  A thread's state is written by whoever
 *     queues or dequeues it, under the lock of that object; relaxed atomics, since ursa_pts_state
 *     and spawn read it without one.  With one VP and a cooperative model the header's inline
 *     paths do the same without the lock (ursa__pts_fast_magic says when).
 *   Lock order: a semaphore's lock or a core object's lock, then an executor's lock, then the
 *   core's (a VP's timer heap or inbox).  The registry's lock is taken with none of them held.
 *
 * Idle protocol (no wake-up lost, no busy wait): the executor, holding E->lock, finds its inbox
 *   and completed shells empty, sets idle = 1 and parks (ursa__park, which releases E->lock
 *   once it is BLOCKED), with a deadline when its heap holds a timer.  A waker appends under
 *   E->lock and, when idle is 1, clears it and wakes the executor, unless the executor's timer
 *   has claimed the wake-up (ursa__park_claim: several VPs, the waker/timer claim of
 *   src/sched/vp.c; one VP, the executor is then no longer BLOCKED).  Both sides decide under E->lock, so either the
 *   executor sees the new work before it blocks or the waker sees idle = 1.
 *
 * Shells: a stackless thread that joins an ursa thread, or waits on an ursa_sem_t or an I- or
 *   M-structure, takes a shell (struct pts_shell, a call waiter of src/core/waiter.h) from its
 *   executor's pool and starts the wait through the waiter interface (src/sync/waiter.h), which
 *   queues it where a blocked thread's waiter would go.  The waker calls shell_wake on its own
 *   VP, which puts the shell on the executor's completed list; the executor finishes the wait (a
 *   join releases the joined thread, a get or take stores the value) and makes the stackless
 *   thread ready.
 *
 * What this layer uses: the public API and the waiter interface (src/sync/waiter.h: call waiters,
 *   park/unpark, the reports' names of its waits, the base vocabulary of core/base.h), and the
 *   timer heap's algorithm (core/heap.h).  scripts/check-layers.sh checks it.
 *
 * Executed only by ursa threads (stackless ones run inside their executor's ursa thread).
 */
#define _GNU_SOURCE
#include "../sync/waiter.h"           /* the waiter interface: all this layer uses of ursa's inside */
#include "../core/heap.h"             /* the timer heap's algorithm (a template, no state) */
#include "ursa/pt_sched.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(struct ursa_pts) <= 64, "a stackless thread must take at most 64 bytes");
_Static_assert(sizeof(struct ursa_pts) == 56, "struct ursa_pts: 56 bytes expected on LP64");
_Static_assert(sizeof(struct ursa_pts_sem) == 32, "struct ursa_pts_sem: 32 bytes expected");

#define PTS_F_STACKFUL 1u            /* a node on an ursa thread's stack standing for it: arg */
#define PTS_BATCH 64u                /* calls between two services of the executor */

struct pts_timer {
  uint64_t             deadline;     /* CLOCK_MONOTONIC ns                                   */
  struct ursa_pts     *t;
  struct ursa_pts_sem *obj;          /* the semaphore of a timed wait, NULL for a sleep      */
};

/* A stackless thread's wait on an object of the core: a call waiter (src/sync/waiter.h). */
enum { SH_JOIN = 1, SH_SEM, SH_IVAR, SH_MVAR_TAKE, SH_MVAR_PUT };
struct pts_shell {
  struct ursa__waiter_call c;        /* first: the core queues and wakes it                   */
  struct ursa_pts     *t;            /* the stackless thread that waits                       */
  void               **out;          /* a get or take: where the value goes                   */
  uint8_t              kind;         /* SH_*                                                  */
  struct pts_shell    *next;         /* on its executor's done list or pool                   */
};

struct ursa__pts_exec {
  struct ursa__pts_runq q;           /* first: the header's inline paths read it (owner only) */
  uint8_t              smp;          /* several VPs: the locks are taken                      */
  /* under lock */
  ursa__spin_t         lock;
  struct ursa_pts     *in_head, *in_tail;
  struct pts_shell    *done_shells;  /* woken shells, via next                                */
  uint32_t             in_n;         /* atomic: inbox + done_shells entries (a hint)          */
  uint8_t              idle;         /* the executor is blocked, or about to, for lack of work */
  uint8_t              timed;        /* ... with a deadline (several VPs): its timer may wake it */
  uint8_t              stop;         /* ursa_pts_fini: end once no thread is live             */
  int64_t              live;         /* atomic: its threads spawned and not ended             */
  /* owner only */
  struct pts_timer    *timers;       /* 1-based min-heap on deadline                          */
  uint32_t             ntimers, tcap;
  struct pts_shell    *shell_pool;   /* free shells, via next                                 */
  /* fixed once made */
  ursa_thread_t        thread;       /* the executor's ursa thread                            */
  ursa_region_t       *region;       /* NULL for a VP's executor                              */
  int                  vp_index;     /* the VP of a VP's executor, -1 for a region's          */
  struct ursa__pts_exec *next;       /* the registry's list of every executor                 */
};

/* The header's inline paths take a semaphore whose magic equals this (pt_sched.h). */
uint32_t ursa__pts_fast_magic = URSA__PTS_NO_FAST_MAGIC;

/* The registry: every executor, the VP ones also by index.  Guarded by reg_lock. */
static ursa__spin_t reg_lock;
static struct ursa__pts_exec **reg_vp;
static unsigned reg_nvps;
static struct ursa__pts_exec *reg_all;

static inline uint8_t st_get(const struct ursa_pts *t) { return __atomic_load_n(&t->state, __ATOMIC_RELAXED); }
static inline void st_set(struct ursa_pts *t, uint8_t s) { __atomic_store_n(&t->state, s, __ATOMIC_RELAXED); }

static unsigned reg_nregions;          /* atomic: region executors in reg_all */

/* Whether the runtime has several VPs (the locks are taken then). */
/* Several VPs run: the layer's objects lock.  Not while exploring, where ursa_vp_count() says what
 * the program asked for but one VP runs everything (and ursa__park keeps one-VP rules). */
static inline bool smp_now(void) { return ursa_vp_count() > 1 && !ursa__exploring(); }

/* The executor whose ursa thread is the caller, or NULL (vp: the caller's VP). */
static struct ursa__pts_exec *current_exec(int vp) {
  struct ursa__pts_exec **vps = __atomic_load_n(&reg_vp, __ATOMIC_ACQUIRE), *E;   /* pairs with */
  ursa_thread_t me = ursa_self();                                                /* exec_for   */
  if (vps && (E = __atomic_load_n(&vps[vp], __ATOMIC_ACQUIRE)) != NULL && E->thread == me) return E;
  if (__atomic_load_n(&reg_nregions, __ATOMIC_ACQUIRE) == 0) return NULL;
  ursa__spin_lock(&reg_lock);                        /* a region's executor: walk the registry */
  for (E = reg_all; E && !(E->region && E->thread == me); E = E->next) {}
  ursa__spin_unlock(&reg_lock);
  return E;
}

/* ---- ready lists ------------------------------------------------------------------------------ */

/* Appends t to E's ready list.  Executed only by E's ursa thread. */
static inline void local_push(struct ursa__pts_exec *E, struct ursa_pts *t) {
  t->next = NULL;
  if (E->q.head) E->q.tail->next = t; else E->q.head = t;
  E->q.tail = t;
}

/* Takes the idle executor's wake-up (E->lock held): true when the caller must wake it. */
static bool claim_idle(struct ursa__pts_exec *E) {
  if (!E->idle) return false;
  E->idle = 0;
  /* Several VPs: with a deadline the waker and the timer race for the claim (ursa__park_claim).
   * Not by anything of the thread's: a timer that won writes it outside E->lock (a waker that
   * read it there after the timer made the executor READY woke it twice: found by TSan). */
  return ursa__park_claim(E->thread, E->timed);
}

static void kick(struct ursa__pts_exec *E, bool wake) {
  if (wake) ursa__unpark(E->thread, 0);
}

/* Appends t to E's inbox and wakes E if it is idle.  Anyone. */
static void remote_push(struct ursa__pts_exec *E, struct ursa_pts *t) {
  bool wake;
  t->next = NULL;
  ursa__lock_if(E->smp, &E->lock);
  if (E->in_head) E->in_tail->next = t; else E->in_head = t;
  E->in_tail = t;
  __atomic_store_n(&E->in_n, E->in_n + 1, __ATOMIC_RELAXED);   /* the lock orders the list */
  wake = claim_idle(E);
  ursa__unlock_if(E->smp, &E->lock);
  kick(E, wake);
}

/* Makes the WAITING thread (or stackful node) w ready with result res; cur is the executor
 * running the caller, or NULL. */
static void make_ready(struct ursa__pts_exec *cur, struct ursa_pts *w, int res) {
  if (w->flags & PTS_F_STACKFUL) {            /* an ursa thread parked in ursa_pts_*: wake it */
    ursa__unpark((ursa_thread_t)w->arg, res);
    return;
  }
  w->result = (int16_t)res;
  st_set(w, URSA_PTS_READY);
  if (w->exec == cur) local_push(cur, w);
  else remote_push(w->exec, w);
}

/* ---- timers (owner only) ---------------------------------------------------------------------- */

#define PTS_KEY(v)      ((v).deadline)
#define PTS_MOVED(v, i) ((v).t->heap_idx = (i))
URSA__HEAP(pheap, struct pts_timer, PTS_KEY, PTS_MOVED)

static int timer_arm(struct ursa__pts_exec *E, struct ursa_pts *t, uint64_t ns, struct ursa_pts_sem *obj) {
  uint64_t now = ursa__now();
  struct pts_timer v = { ns > UINT64_MAX - now ? UINT64_MAX : now + ns, t, obj };
  if (E->ntimers + 1 >= E->tcap) {
    uint32_t cap = E->tcap ? E->tcap * 2 : 64;
    struct pts_timer *n;
    if (URSA__FAIL() || (n = realloc(E->timers, cap * sizeof *n)) == NULL) return -ENOMEM;
    E->timers = n;
    E->tcap = cap;
  }
  E->timers[++E->ntimers] = v;
  pheap_up(E->timers, E->ntimers);
  return 0;
}

static void timer_cancel(struct ursa__pts_exec *E, struct ursa_pts *t) {
  pheap_remove(E->timers, E->ntimers--, t->heap_idx);
  t->heap_idx = 0;
}

/* URSA_PTS_SEM_TIMEDWAIT, resumed with its timer still armed: a post beat the timeout.  Executed
 * by self's executor (the owner of the heap). */
void ursa__pts_timer_cancel(struct ursa_pts *self) {
  timer_cancel(self->exec, self);
}

/* Removes w from the queue of s (s's lock held).  O(waiters): timeouts only. */
static void sem_unlink(struct ursa_pts_sem *s, struct ursa_pts *w) {
  struct ursa_pts **pp = &s->head, *prev = NULL;
  while (*pp && *pp != w) { prev = *pp; pp = &(*pp)->next; }
  if (*pp == NULL) return;
  *pp = w->next;
  if (s->tail == w) s->tail = prev;
}

static void timers_fire(struct ursa__pts_exec *E) {
  uint64_t now = ursa__now();
  while (E->ntimers && E->timers[1].deadline <= now) {
    struct pts_timer v = E->timers[1];
    timer_cancel(E, v.t);
    if (v.obj == NULL) {                                 /* a sleep */
      make_ready(E, v.t, 0);
      continue;
    }
    /* A timed wait: it is still WAITING (under the semaphore's lock) unless a post took it. */
    ursa__lock_if(E->smp, &v.obj->lock);
    if (st_get(v.t) == URSA_PTS_WAITING) {
      sem_unlink(v.obj, v.t);
      ursa__unlock_if(E->smp, &v.obj->lock);
      make_ready(E, v.t, -ETIMEDOUT);
    } else {
      ursa__unlock_if(E->smp, &v.obj->lock);
    }
  }
}

/* ---- wait shells ------------------------------------------------------------------------------ */

static void shell_wake(struct ursa__waiter_call *c, int res);

static struct pts_shell *shell_get(struct ursa__pts_exec *E, struct ursa_pts *t, int kind, void **out) {
  struct pts_shell *sh = E->shell_pool;
  if (sh) E->shell_pool = sh->next;
  else if (URSA__FAIL() || (sh = malloc(sizeof *sh)) == NULL) return NULL;
  ursa__waiter_call_init(&sh->c, shell_wake);
  sh->t = t;
  sh->out = out;
  sh->kind = (uint8_t)kind;
  return sh;
}

static void shell_put(struct ursa__pts_exec *E, struct pts_shell *sh) {
  sh->next = E->shell_pool;
  E->shell_pool = sh;
}

/* A shell's wake function (src/sync/waiter.h): runs on the waker's VP with the object's lock held,
 * so it takes only E->lock (a leaf) and hands the rest to the executor. */
static void shell_wake(struct ursa__waiter_call *c, int res) {
  struct pts_shell *sh = (struct pts_shell *)(void *)c;   /* c is its first member */
  struct ursa__pts_exec *E = sh->t->exec;
  bool wake;
  c->w.wake_result = res;
  ursa__lock_if(E->smp, &E->lock);
  sh->next = E->done_shells;
  E->done_shells = sh;
  __atomic_store_n(&E->in_n, E->in_n + 1, __ATOMIC_RELAXED);   /* the lock orders the list */
  wake = claim_idle(E);
  ursa__unlock_if(E->smp, &E->lock);
  kick(E, wake);
}

/* Finishes the wait of a woken shell and makes its thread ready.  Executed by E only. */
static void shell_done(struct ursa__pts_exec *E, struct pts_shell *sh) {
  if (sh->kind == SH_JOIN) ursa__join_waiter_end(&sh->c);
  else if (sh->kind == SH_IVAR) *sh->out = ursa__ivar_get_end(&sh->c);
  else if (sh->kind == SH_MVAR_TAKE) *sh->out = sh->c.data;
  make_ready(E, sh->t, sh->c.w.wake_result);
  shell_put(E, sh);
}

/* ---- the executor ----------------------------------------------------------------------------- */

/* Moves the inbox to the ready list and completes the woken shells.  E only. */
static void drain(struct ursa__pts_exec *E) {
  struct ursa_pts *h, *tl;
  struct pts_shell *sh;
  ursa__lock_if(E->smp, &E->lock);
  h = E->in_head;
  tl = E->in_tail;
  sh = E->done_shells;
  E->in_head = E->in_tail = NULL;
  E->done_shells = NULL;
  __atomic_store_n(&E->in_n, 0u, __ATOMIC_RELAXED);
  ursa__unlock_if(E->smp, &E->lock);
  if (h) {
    if (E->q.head) E->q.tail->next = h; else E->q.head = h;
    E->q.tail = tl;
  }
  while (sh) {
    struct pts_shell *n = sh->next;
    shell_done(E, sh);
    sh = n;
  }
}

/* Nothing ready: blocks until a waker or the earliest timer.  False when E must end. */
static bool idle_wait(struct ursa__pts_exec *E) {
  uint64_t deadline = E->ntimers ? E->timers[1].deadline : 0;
  ursa__lock_if(E->smp, &E->lock);
  if (E->in_head || E->done_shells) { ursa__unlock_if(E->smp, &E->lock); return true; }
  if (E->stop && __atomic_load_n(&E->live, __ATOMIC_ACQUIRE) == 0) {
    ursa__unlock_if(E->smp, &E->lock);
    return false;
  }
  E->idle = 1;
  E->timed = deadline != 0;
  ursa__park(URSA__W_PT_IDLE, E, &E->lock, deadline);   /* releases E->lock once BLOCKED */
  ursa__lock_if(E->smp, &E->lock);
  E->idle = 0;
  ursa__unlock_if(E->smp, &E->lock);
  return true;
}

/* The service between batches.  False when E must end. */
static bool service(struct ursa__pts_exec *E) {
  if (__atomic_load_n(&E->in_n, __ATOMIC_RELAXED) != 0) drain(E);
  if (E->ntimers) timers_fire(E);
  if (E->q.head) {
    (void)ursa_yield();                              /* the other ursa threads of the VP */
    return true;
  }
  return idle_wait(E);
}

static void finish(struct ursa__pts_exec *E, struct ursa_pts *t) {
  struct ursa_pts *j;
  ursa__lock_if(E->smp, &E->lock);
  j = t->joiner;
  t->joiner = NULL;
  st_set(t, j ? URSA_PTS_FREE : URSA_PTS_DONE);     /* a joiner takes it at once */
  __atomic_sub_fetch(&E->live, 1, __ATOMIC_RELEASE);  /* pairs with the acquire in fini/idle */
  ursa__unlock_if(E->smp, &E->lock);
  if (j) make_ready(E, j, 0);                        /* t is not touched after the unlock */
}

static void *exec_main(void *arg) {
  struct ursa__pts_exec *E = arg;
  unsigned left = PTS_BATCH;
  for (;;) {
    struct ursa_pts *t = E->q.head;
    if (ursa_likely(t != NULL) && ursa_likely(--left != 0)) {
      int r;
      E->q.head = t->next;
      r = t->fn(t);                                  /* a timed wait cancels its own timer */
      if (ursa_unlikely(r != URSA_PT_WAITING)) {
        if (r == URSA_PT_YIELDED) local_push(E, t);
        else finish(E, t);
      }
      continue;
    }
    left = PTS_BATCH;
    if (!service(E)) return NULL;
  }
}

/* ---- the registry ----------------------------------------------------------------------------- */

/* The kinds of wait of this layer, as the reports print them (src/sched/report.c): registered by
 * the first executor or stackless semaphore (idempotent: the same pointers every time). */
static const struct ursa__waitkind
  kind_join = { "ursa_pts_join on stackless thread", NULL, 0 },
  kind_sem  = { "ursa_pts_sem_wait on stackless semaphore", NULL, 0 },
  kind_idle = { "an executor's idle wait (no stackless thread ready) on executor", NULL, 0 };
static void register_kinds(void) {
  ursa__waitkind_register(URSA__W_PT_JOIN, &kind_join);
  ursa__waitkind_register(URSA__W_PT_SEM, &kind_sem);
  ursa__waitkind_register(URSA__W_PT_IDLE, &kind_idle);
}

static struct ursa__pts_exec *exec_new(int vp, ursa_region_t *r, int *err) {
  struct ursa__pts_exec *E = calloc(1, sizeof *E);
  ursa_attr_t a;
  char name[URSA_NAME_MAX];
  register_kinds();
  if (URSA__FAIL() || E == NULL) { free(E); *err = -ENOMEM; return NULL; }
  E->smp = smp_now();
  /* The header's inline paths: one VP, cm/pcm (the same for every executor of a runtime).  Set
   * before the executor can run; relaxed: with several VPs it already holds the value stored. */
  __atomic_store_n(&ursa__pts_fast_magic,
                   E->smp || ursa_model() >= URSA_MODEL_CP_TS ? URSA__PTS_NO_FAST_MAGIC
                                                                : URSA__PTS_SEM_MAGIC,
                   __ATOMIC_RELAXED);
  E->region = r;
  E->vp_index = r ? -1 : vp;
  ursa_attr_init(&a);
  if (r) {
    snprintf(name, sizeof name, "pts-exec/region");
    ursa_attr_setregion(&a, r);
  } else {
    snprintf(name, sizeof name, "pts-exec/%d", vp);
    ursa_attr_setvp(&a, vp);
    ursa_attr_setbound(&a, 1);
  }
  ursa_attr_setname(&a, name);
  *err = ursa_create(&E->thread, &a, exec_main, E);
  ursa_attr_destroy(&a);
  if (*err) { free(E); return NULL; }
  E->next = reg_all;
  reg_all = E;
  if (r) __atomic_add_fetch(&reg_nregions, 1, __ATOMIC_RELEASE);   /* pairs with current_exec */
  return E;
}

/* The executor for a placement, made if needed; counts one more live thread on it. */
static struct ursa__pts_exec *exec_for(int vp, int want, ursa_region_t *r, int *err) {
  struct ursa__pts_exec *E = NULL, **vps;
  unsigned i;
  /* A VP's executor that exists: no lock (the registry changes only at creation and fini). */
  if (r == NULL && want != URSA_VP_ANY &&
      (vps = __atomic_load_n(&reg_vp, __ATOMIC_ACQUIRE)) != NULL &&        /* pairs with the */
      (E = __atomic_load_n(&vps[want == URSA_VP_SELF ? vp : want],               /* releases */
                           __ATOMIC_ACQUIRE)) != NULL) {                    /* below          */
    __atomic_add_fetch(&E->live, 1, __ATOMIC_RELAXED);
    return E;
  }
  ursa_preempt_disable();                            /* cp-ts: no switch while reg_lock is held */
  ursa__spin_lock(&reg_lock);
  if (reg_vp == NULL) {
    struct ursa__pts_exec **n;
    reg_nvps = ursa_vp_count();
    if (URSA__FAIL() || (n = calloc(reg_nvps, sizeof *n)) == NULL) {
      *err = -ENOMEM;
      goto out;
    }
    __atomic_store_n(&reg_vp, n, __ATOMIC_RELEASE);   /* pairs with the lock-free lookup */
  }
  if (r) {
    for (E = reg_all; E && E->region != r; E = E->next) {}
    if (E == NULL) E = exec_new(-1, r, err);
  } else {
    if (want == URSA_VP_SELF) want = vp;
    if (want == URSA_VP_ANY) {                       /* the fewest live stackless threads */
      int64_t best = INT64_MAX;
      for (i = 0; i < reg_nvps; i++) {
        int64_t l = reg_vp[i] ? __atomic_load_n(&reg_vp[i]->live, __ATOMIC_RELAXED) : 0;
        if (l < best) { best = l; want = (int)i; }
      }
    }
    if ((E = reg_vp[want]) == NULL && (E = exec_new(want, NULL, err)) != NULL)
      __atomic_store_n(&reg_vp[want], E, __ATOMIC_RELEASE);   /* published made: lookup */
  }
  if (E) __atomic_add_fetch(&E->live, 1, __ATOMIC_RELAXED);
out:
  ursa__spin_unlock(&reg_lock);
  ursa_preempt_enable();
  return E;
}

static int spawn(struct ursa_pts *t, int want, ursa_region_t *r, ursa_pts_fn fn, void *arg) {
  struct ursa__pts_exec *E, *self;
  uint8_t st;
  int err = 0, vp = ursa_vp_self();
  if (vp < 0) return vp;                             /* not an ursa thread */
  if (t == NULL || fn == NULL) return -EINVAL;
  if (r == NULL && (want < URSA_VP_SELF || want >= (int)ursa_vp_count())) return -EINVAL;
  if (r != NULL && ursa_region_vp(r) < 0) return -EINVAL;
  st = st_get(t);
  if (st == URSA_PTS_READY || st == URSA_PTS_WAITING) return -EBUSY;
  self = current_exec(vp);
  if (r == NULL && want == URSA_VP_SELF && self != NULL) {
    E = self;                                        /* stays on its executor (its region too) */
    __atomic_add_fetch(&E->live, 1, __ATOMIC_RELAXED);
  } else if ((E = exec_for(vp, want, r, &err)) == NULL) {
    return err;
  }
  t->exec = E;
  t->fn = fn;
  t->arg = arg;
  t->joiner = NULL;
  t->lc_space_ = 0;
  t->heap_idx = 0;
  t->result = 0;
  t->flags = 0;
  st_set(t, URSA_PTS_READY);
  if (E == self) local_push(E, t);
  else remote_push(E, t);
  return 0;
}

int ursa_pts_spawn(struct ursa_pts *t, int vp, ursa_pts_fn fn, void *arg) {
  return spawn(t, vp, NULL, fn, arg);
}

int ursa_pts_spawn_region(struct ursa_pts *t, ursa_region_t *r, ursa_pts_fn fn, void *arg) {
  if (r == NULL) { int vp = ursa_vp_self(); return vp < 0 ? vp : -EINVAL; }
  return spawn(t, URSA_VP_SELF, r, fn, arg);
}

int ursa_pts_fini(void) {
  struct ursa__pts_exec *all, *E;
  int vp = ursa_vp_self();
  if (vp < 0) return vp;
  if (current_exec(vp)) return -EPERM;
  ursa__spin_lock(&reg_lock);
  for (E = reg_all; E; E = E->next) {
    if (__atomic_load_n(&E->live, __ATOMIC_ACQUIRE) != 0) {
      ursa__spin_unlock(&reg_lock);
      return -EBUSY;
    }
  }
  all = reg_all;
  reg_all = NULL;
  free(reg_vp);
  __atomic_store_n(&reg_vp, NULL, __ATOMIC_RELAXED);   /* no spawn runs during fini (its contract) */
  __atomic_store_n(&reg_nregions, 0u, __ATOMIC_RELAXED);
  ursa__spin_unlock(&reg_lock);
  for (E = all; E; E = E->next) {
    bool wake;
    ursa__lock_if(E->smp, &E->lock);
    E->stop = 1;
    wake = claim_idle(E);
    ursa__unlock_if(E->smp, &E->lock);
    kick(E, wake);
  }
  while ((E = all) != NULL) {
    all = E->next;
    ursa_join(E->thread, NULL);
    while (E->shell_pool) {
      struct pts_shell *sh = E->shell_pool;
      E->shell_pool = sh->next;
      free(sh);
    }
    free(E->timers);
    free(E);
  }
  /* No executor: a later runtime (several VPs, say) starts from the library's paths again. */
  __atomic_store_n(&ursa__pts_fast_magic, URSA__PTS_NO_FAST_MAGIC, __ATOMIC_RELAXED);
  return 0;
}

int ursa_pts_state(const struct ursa_pts *t) {
  return t ? st_get(t) : -EINVAL;
}

/* ---- join ------------------------------------------------------------------------------------- */

/* The checks of a join, with t's executor's lock held: 0 (t ended: now FREE), 1 (the caller may
 * become its joiner), or an error. */
static int join_check(struct ursa_pts *t) {
  uint8_t st = st_get(t);
  if (st == URSA_PTS_FREE) return -ESRCH;
  if (t->joiner) return -EINVAL;
  if (st == URSA_PTS_DONE) { st_set(t, URSA_PTS_FREE); return 0; }
  return 1;
}

/* Join cycles of two, as ursa_join finds them: whether w already waits for t's end.  t's joiner
 * is read under its executor's lock; w is a stackless thread, or an ursa thread's handle (its
 * node's arg).
 * Two joins started at once on two VPs may both miss the cycle: the deadlock report is the net. */
static bool joins_pts(struct ursa_pts *t, const void *w) {
  struct ursa__pts_exec *E = t->exec;
  const struct ursa_pts *j;
  bool r;
  ursa__lock_if(E->smp, &E->lock);
  j = t->joiner;
  r = j != NULL && (j == w || ((j->flags & PTS_F_STACKFUL) && j->arg == w));
  ursa__unlock_if(E->smp, &E->lock);
  return r;
}

/* Whether the call waiter c (an ursa thread's joiner) is a join shell of the stackless thread w:
 * every call waiter that joins a thread is one of this layer's shells. */
static bool shell_of(struct ursa__waiter_call *c, const void *w) {
  return ((const struct pts_shell *)(const void *)c)->t == w;
}

int ursa_pts_join(struct ursa_pts *t) {
  struct ursa__pts_exec *E;
  struct ursa_pts node;
  int r, vp = ursa_vp_self();
  if (vp < 0) return vp;
  if (t == NULL || (t->flags & PTS_F_STACKFUL)) return -EINVAL;
  if (current_exec(vp)) return -EPERM;               /* a stackless thread: URSA_PTS_JOIN */
  if (st_get(t) == URSA_PTS_FREE || (E = t->exec) == NULL) return -ESRCH;
  if (ursa__joined_by(ursa_self(), shell_of, t)) return -EDEADLK;   /* t waits in
                                                        URSA_PTS_JOIN_THREAD for us */
  ursa__lock_if(E->smp, &E->lock);
  if ((r = join_check(t)) != 1) { ursa__unlock_if(E->smp, &E->lock); return r; }
  memset(&node, 0, sizeof node);
  node.flags = PTS_F_STACKFUL;
  node.arg = ursa_self();
  t->joiner = &node;
  ursa__park(URSA__W_PT_JOIN, t, &E->lock, 0);       /* releases the lock once BLOCKED */
  return 0;
}

int ursa__pts_join(struct ursa_pts *self, struct ursa_pts *t) {
  struct ursa__pts_exec *E;
  int r;
  if (t == NULL || (t->flags & PTS_F_STACKFUL)) r = -EINVAL;
  else if (t == self) r = -EDEADLK;
  else if (st_get(t) == URSA_PTS_FREE || (E = t->exec) == NULL) r = -ESRCH;
  else if (joins_pts(self, t)) r = -EDEADLK;         /* t waits in URSA_PTS_JOIN for self */
  else {
    ursa__lock_if(E->smp, &E->lock);
    if ((r = join_check(t)) == 1) {
      st_set(self, URSA_PTS_WAITING);
      t->joiner = self;
    }
    ursa__unlock_if(E->smp, &E->lock);
  }
  if (r != 1) self->result = (int16_t)r;
  return r;
}

/* The waits of a stackless thread on the core's objects, through a shell (src/sync/waiter.h):
 * r is what the waiter interface answered (1: queued, the executor finishes the wait when the
 * shell is woken). */
static int shell_started(struct ursa__pts_exec *E, struct ursa_pts *self, struct pts_shell *sh, int r) {
  if (r != 1) {
    st_set(self, URSA_PTS_READY);
    shell_put(E, sh);
  }
  self->result = (int16_t)(r == 1 ? 0 : r);
  return r;
}

/* A stackless thread waits for an ursa thread. */
int ursa__pts_join_thread(struct ursa_pts *self, ursa_thread_t th) {
  struct ursa__pts_exec *E = self->exec;
  struct pts_shell *sh;
  int r;
  if (joins_pts(self, th)) r = -EDEADLK;             /* th waits in ursa_pts_join for self */
  else if ((sh = shell_get(E, self, SH_JOIN, NULL)) == NULL) r = -ENOMEM;
  else {
    st_set(self, URSA_PTS_WAITING);                  /* before a waker can see the shell */
    return shell_started(E, self, sh, ursa__join_waiter(th, &sh->c));
  }
  self->result = (int16_t)r;
  return r;
}

/* A stackless thread waits on an ursa_sem_t. */
int ursa__pts_ursa_sem_wait(struct ursa_pts *self, ursa_sem_t *s) {
  struct ursa__pts_exec *E = self->exec;
  struct pts_shell *sh = shell_get(E, self, SH_SEM, NULL);
  if (sh == NULL) { self->result = -ENOMEM; return -ENOMEM; }
  st_set(self, URSA_PTS_WAITING);
  return shell_started(E, self, sh, ursa__sem_wait_waiter(s, &sh->c));
}

/* A stackless thread gets an I-structure, or takes from / puts into an M-structure.  out (get,
 * take) must outlive the wait: the executor stores the value there when the shell is woken. */
static int cell_wait(struct ursa_pts *self, int kind, void *cell, void **out, void *value) {
  struct ursa__pts_exec *E = self->exec;
  struct pts_shell *sh;
  int r;
  if (cell == NULL || (kind != SH_MVAR_PUT && out == NULL)) r = -EINVAL;
  else if ((sh = shell_get(E, self, kind, out)) == NULL) r = -ENOMEM;
  else {
    st_set(self, URSA_PTS_WAITING);
    return shell_started(E, self, sh,
                         kind == SH_IVAR ? ursa__ivar_get_waiter(cell, &sh->c, out)
                         : kind == SH_MVAR_TAKE ? ursa__mvar_take_waiter(cell, &sh->c, out)
                         : ursa__mvar_put_waiter(cell, &sh->c, value));
  }
  self->result = (int16_t)r;
  return r;
}

int ursa__pts_ivar_get(struct ursa_pts *self, ursa_ivar_t *v, void **out) {
  return cell_wait(self, SH_IVAR, v, out, NULL);
}

int ursa__pts_mvar_take(struct ursa_pts *self, ursa_mvar_t *v, void **out) {
  return cell_wait(self, SH_MVAR_TAKE, v, out, NULL);
}

int ursa__pts_mvar_put(struct ursa_pts *self, ursa_mvar_t *v, void *value) {
  return cell_wait(self, SH_MVAR_PUT, v, NULL, value);
}

/* ---- sleep ------------------------------------------------------------------------------------ */

int ursa__pts_sleep(struct ursa_pts *self, uint64_t ns) {
  int r;
  st_set(self, URSA_PTS_WAITING);
  if ((r = timer_arm(self->exec, self, ns, NULL)) != 0) {
    st_set(self, URSA_PTS_READY);
    self->result = (int16_t)r;
    return r;
  }
  self->result = 0;
  return 1;
}

/* ---- semaphores ------------------------------------------------------------------------------- */

/* The caller's VP, or return the error of a caller that is not an ursa thread. */
#define PTS_VP_OR_RETURN(vp)                                                     \
  int vp = ursa_vp_self();                                                       \
  if (ursa_unlikely(vp < 0)) return vp

#define PSEM_OR_RETURN(s)                                                        \
  do {                                                                           \
    if (ursa_unlikely((s) == NULL || (s)->magic != URSA__PTS_SEM_MAGIC)) return -EINVAL; \
  } while (0)

int ursa_pts_sem_init(struct ursa_pts_sem *s, unsigned value) {
  int vp = ursa_vp_self();
  register_kinds();
  if (vp < 0) return vp;
  if (s == NULL || value > URSA_SEM_VALUE_MAX) return -EINVAL;
  memset(s, 0, sizeof *s);
  s->count = value;
  s->magic = URSA__PTS_SEM_MAGIC;
  return 0;
}

int ursa_pts_sem_destroy(struct ursa_pts_sem *s) {
  PTS_VP_OR_RETURN(vp);
  const bool smp = smp_now();
  PSEM_OR_RETURN(s);
  ursa__lock_if(smp, &s->lock);
  if (s->head) { ursa__unlock_if(smp, &s->lock); return -EBUSY; }
  s->magic = URSA__MAGIC_DEAD;
  ursa__unlock_if(smp, &s->lock);
  return 0;
}

static void sem_enqueue(struct ursa_pts_sem *s, struct ursa_pts *w) {
  w->next = NULL;
  if (s->head) s->tail->next = w; else s->head = w;
  s->tail = w;
}

int ursa__pts_sem_wait(struct ursa_pts *self, struct ursa_pts_sem *s, uint64_t ns, int timed) {
  struct ursa__pts_exec *E = self->exec;
  if (s == NULL || s->magic != URSA__PTS_SEM_MAGIC) { self->result = -EINVAL; return -EINVAL; }
  ursa__lock_if(E->smp, &s->lock);
  if (s->count > 0) {
    s->count--;
    ursa__unlock_if(E->smp, &s->lock);
    self->result = 0;
    return 0;
  }
  if (timed && (ns == 0 || timer_arm(E, self, ns, s) != 0)) {   /* timer_arm: owner only */
    ursa__unlock_if(E->smp, &s->lock);
    self->result = ns == 0 ? -ETIMEDOUT : -ENOMEM;
    return self->result;
  }
  st_set(self, URSA_PTS_WAITING);                    /* before a poster can see it */
  sem_enqueue(s, self);
  ursa__unlock_if(E->smp, &s->lock);
  return 1;
}

/* URSA_PTS_SEM_WAIT when the header's inline path does not apply. */
int ursa__pts_sem_wait_slow(struct ursa_pts *self, struct ursa_pts_sem *s) {
  return ursa__pts_sem_wait(self, s, 0, 0);
}

int ursa_pts_sem_wait(struct ursa_pts_sem *s) {
  struct ursa_pts node;
  PTS_VP_OR_RETURN(vp);
  const bool smp = smp_now();
  PSEM_OR_RETURN(s);
  if (current_exec(vp)) return -EPERM;               /* a stackless thread: URSA_PTS_SEM_WAIT */
  ursa__lock_if(smp, &s->lock);
  if (s->count > 0) {
    s->count--;
    ursa__unlock_if(smp, &s->lock);
    return 0;
  }
  memset(&node, 0, sizeof node);
  node.flags = PTS_F_STACKFUL;
  node.arg = ursa_self();
  sem_enqueue(s, &node);
  ursa__park(URSA__W_PT_SEM, s, &s->lock, 0);        /* 0: a post handed us its unit */
  return 0;
}

int ursa_pts_sem_trywait(struct ursa_pts_sem *s) {
  int r = -EAGAIN;
  PTS_VP_OR_RETURN(vp);
  const bool smp = smp_now();
  PSEM_OR_RETURN(s);
  ursa__lock_if(smp, &s->lock);
  if (s->count > 0) { s->count--; r = 0; }
  ursa__unlock_if(smp, &s->lock);
  return r;
}

int ursa__pts_sem_post(struct ursa_pts_sem *s) {
  struct ursa_pts *w;
  PTS_VP_OR_RETURN(vp);
  const bool smp = smp_now();
  PSEM_OR_RETURN(s);
  ursa__lock_if(smp, &s->lock);
  if ((w = s->head) == NULL) {
    int r = 0;
    if (s->count >= URSA_SEM_VALUE_MAX) r = -EOVERFLOW; else s->count++;
    ursa__unlock_if(smp, &s->lock);
    return r;
  }
  s->head = w->next;                                  /* the unit goes to w */
  if (!(w->flags & PTS_F_STACKFUL)) st_set(w, URSA_PTS_READY);   /* under the lock: the timer
                                                         reads it there (timers_fire) */
  ursa__unlock_if(smp, &s->lock);
  make_ready(current_exec(vp), w, 0);                 /* w is ours now; a stackful one stays
                                                         blocked, its node valid, until woken */
  return 0;
}

int ursa_pts_sem_post(struct ursa_pts_sem *s) { return ursa__pts_sem_post(s); }

/* URSA_PTS_SEM_POST when the header's inline path does not apply. */
int16_t ursa__pts_sem_post_slow(struct ursa_pts *self, struct ursa_pts_sem *s) {
  return self->result = (int16_t)ursa__pts_sem_post(s);
}

int ursa_pts_sem_getvalue(struct ursa_pts_sem *s, int *value) {
  PTS_VP_OR_RETURN(vp);
  URSA_UNUSED(vp);
  PSEM_OR_RETURN(s);
  if (value == NULL) return -EINVAL;
  *value = (int)__atomic_load_n(&s->count, __ATOMIC_RELAXED);
  return 0;
}
