/*
 * thread.c - thread lifecycle: attributes, the handle table, create, join, detach, exit.
 *
 * Protocol
 *   create  takes a stack (warm pool first: no system call), puts the descriptor at its top,
 *           takes a handle slot, makes the context and appends the thread to the run queue.
 *           It never switches: the creator keeps running (SplitThreads' create).
 *   finish  (return from fn, or ursa_exit) runs key destructors, marks the thread ZOMBIE and
 *           wakes its joiner; a detached thread's handle is released at once and its stack by
 *           the next create or finish on its VP (ursa__reap).
 *   join    waits for ZOMBIE, takes the result and releases the thread: its slot's generation is
 *           bumped (so the handle goes stale) and its stack returns to the pool.
 *
 * Handles are generation-tagged indices (see struct ursa__slots in src/core/vp.h), so every misuse
 * of a handle (joined, detached and finished, never valid) is detected, never dereferenced.
 * Several VPs: a thread's lock (t->lock) orders finish against join and detach on other VPs; the
 * handle table's free list has a per-VP cache (no lock while it lasts) refilled from the shared
 * list under ursa__g.slot_lock; ids come in blocks per VP.  A joiner waits for the finished
 * thread's on-CPU byte before it reuses the stack (its VP may still be switching away from it).
 * Executed only by ursa threads.
 */
#define _GNU_SOURCE
#include "sched_smp.h"
#include "waiter.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if URSA_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define URSA__ATTR_MAGIC 0x75727361u                 /* "ursa" */

struct ursa__attr {
  uint32_t magic;
  uint32_t detached;
  size_t   stacksize;                                /* 0: the default                 */
  char     name[URSA_NAME_MAX];
  int32_t  vp;                                       /* URSA_VP_SELF, URSA_VP_ANY, index,
                                                        or VP_DEFAULT (never set)       */
  uint32_t bound;
  uint32_t region_id, region_gen;                    /* the region (region.c), id 0: none;
                                                        checked again by ursa_create    */
};
URSA__STATIC_ASSERT_FITS(struct ursa__attr, ursa_attr_t);

/* ---- attributes ------------------------------------------------------------------------------- */

/* Where a thread starts when the attribute does not say: the creator's VP, except under cp-ts and
 * cp-ic, where it is the least loaded VP.  A thread stopped by a time slice or a tick count must
 * resume on its own VP (src/model/model.c), so the scheduler cannot spread busy threads that
 * never block once they run: they are spread when they are created. */
#define VP_DEFAULT (-3)
static int start_vp(const struct ursa__attr *a) {
  int want = a ? a->vp : VP_DEFAULT;
  if (want != VP_DEFAULT) return want;
  return ursa__g.model >= URSA_MODEL_CP_TS ? URSA_VP_ANY : URSA_VP_SELF;
}

static struct ursa__attr *attr_get(const ursa_attr_t *a) {
  struct ursa__attr *x = (struct ursa__attr *)(uintptr_t)a;
  return (x && x->magic == URSA__ATTR_MAGIC) ? x : NULL;
}

int ursa_attr_init(ursa_attr_t *attr) {
  struct ursa__attr *a = (struct ursa__attr *)attr;
  if (attr == NULL) return -EINVAL;
  memset(attr, 0, sizeof *attr);
  a->magic = URSA__ATTR_MAGIC;
  a->vp = VP_DEFAULT;
  return 0;
}

int ursa_attr_setvp(ursa_attr_t *attr, int vp) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL || vp < URSA_VP_SELF) return -EINVAL;
  a->vp = vp;
  return 0;
}

int ursa_attr_setbound(ursa_attr_t *attr, int bound) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL) return -EINVAL;
  a->bound = bound != 0;
  return 0;
}

int ursa_attr_setregion(ursa_attr_t *attr, ursa_region_t *r) {
  struct ursa__attr *a = attr_get(attr);
  uint32_t id = 0, gen = 0;
  if (a == NULL || (r != NULL && ursa__region_name(r, &id, &gen) != 0)) return -EINVAL;
  a->region_id = id;
  a->region_gen = gen;
  return 0;
}

int ursa_attr_destroy(ursa_attr_t *attr) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL) return -EINVAL;
  a->magic = URSA__MAGIC_DEAD;
  return 0;
}

int ursa_attr_setstacksize(ursa_attr_t *attr, size_t size) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL || size < URSA_STACK_MIN || size > SIZE_MAX / 2) return -EINVAL;
  a->stacksize = size;
  return 0;
}

int ursa_attr_getstacksize(const ursa_attr_t *attr, size_t *size) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL || size == NULL) return -EINVAL;
  *size = a->stacksize ? a->stacksize : (ursa__g.stack_size ? ursa__g.stack_size : 65536);
  return 0;
}

int ursa_attr_setname(ursa_attr_t *attr, const char *name) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL || name == NULL) return -EINVAL;
  strncpy(a->name, name, URSA_NAME_MAX - 1);
  a->name[URSA_NAME_MAX - 1] = '\0';
  return 0;
}

int ursa_attr_setdetached(ursa_attr_t *attr, int detached) {
  struct ursa__attr *a = attr_get(attr);
  if (a == NULL) return -EINVAL;
  a->detached = detached != 0;
  return 0;
}

/* ---- handle table ----------------------------------------------------------------------------- */

static struct ursa__slot *slot_at(uint32_t idx) {
  return &ursa__g.slots.slot[idx];
}

static int slot_grow(void) {
  struct ursa__slots *S = &ursa__g.slots;
  uint32_t i;
  if (S->slot == NULL) {
    /* Reserved inaccessible, and opened a step at a time: a core dump then holds only the
     * slots in use, not the whole 256 MiB. */
    void *m = URSA__FAIL() ? (errno = ENOMEM, MAP_FAILED)
                           : mmap(NULL, (size_t)URSA__SLOTS_MAX * sizeof *S->slot, PROT_NONE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -ENOMEM;
    S->slot = m;
  }
  if (S->nslots >= URSA__SLOTS_MAX) return -EAGAIN;
  if (URSA__FAIL() ||
      mprotect(&S->slot[S->nslots], URSA__SLOT_GROW * sizeof *S->slot, PROT_READ | PROT_WRITE) != 0)
    return -ENOMEM;
  for (i = 0; i < URSA__SLOT_GROW; i++) {
    S->slot[S->nslots + i].gen = 1;
    S->slot[S->nslots + i].next_free = i + 1 < URSA__SLOT_GROW ? S->nslots + i + 2 : 0;
  }
  S->free_head = S->nslots + 1;
  S->nslots += URSA__SLOT_GROW;
  return 0;
}

#define URSA__SLOT_BATCH 64u                 /* SMP: slots moved between a VP's cache and the list */

/* SMP: refills vp's cache with up to URSA__SLOT_BATCH slots from the shared list. */
static int slot_refill(struct ursa__smp *x) {
  struct ursa__slots *S = &ursa__g.slots;
  int err = 0;
  uint32_t n;
  ursa__spin_lock(&ursa__g.slot_lock);
  if (S->free_head == 0) err = slot_grow();
  for (n = 0; err == 0 && n < URSA__SLOT_BATCH && S->free_head != 0; n++) {
    uint32_t idx = S->free_head - 1;
    S->free_head = slot_at(idx)->next_free;
    slot_at(idx)->next_free = x->slot_free;
    x->slot_free = idx + 1;
    x->slot_nfree++;
  }
  ursa__spin_unlock(&ursa__g.slot_lock);
  return x->slot_nfree ? 0 : (err ? err : -ENOMEM);
}

static inline int slot_alloc(struct ursa__vp *vp, uint32_t *out, const bool smp) {
  struct ursa__slots *S = &ursa__g.slots;
  int err;
  if (smp) {
    struct ursa__smp *x = vp->x;
    if (x->slot_free == 0 && (err = slot_refill(x)) != 0) return err;
    *out = x->slot_free - 1;
    x->slot_free = slot_at(*out)->next_free;
    x->slot_nfree--;
    return 0;
  }
  if (ursa_unlikely(S->free_head == 0) && (err = slot_grow()) != 0) return err;
  *out = S->free_head - 1;
  S->free_head = slot_at(*out)->next_free;
  return 0;
}

/* SMP: the slot goes to the calling VP's cache; a full cache gives a batch back. */
static URSA_NOINLINE void slot_free_smp(struct ursa__slot *s, uint32_t idx) {
  struct ursa__smp *x = ursa__vp_current()->x;         /* (called after switches) */
  s->next_free = x->slot_free;
  x->slot_free = idx + 1;
  if (++x->slot_nfree > 2 * URSA__SLOT_BATCH) {
    uint32_t n;
    ursa__spin_lock(&ursa__g.slot_lock);
    for (n = 0; n < URSA__SLOT_BATCH; n++) {
      uint32_t i = x->slot_free - 1;
      x->slot_free = slot_at(i)->next_free;
      slot_at(i)->next_free = ursa__g.slots.free_head;
      ursa__g.slots.free_head = i + 1;
    }
    x->slot_nfree -= URSA__SLOT_BATCH;
    ursa__spin_unlock(&ursa__g.slot_lock);
  }
}

static void slot_free(uint32_t idx) {
  struct ursa__slot *s = slot_at(idx);
  __atomic_store_n(&s->t, NULL, __ATOMIC_RELAXED);   /* (a racing lookup is a misuse: it may
                                                        see either value, never freed memory) */
  {
    uint32_t gen = s->gen + 1;                       /* only the releasing thread writes it */
    if (ursa_unlikely(gen == 0)) gen = 1;            /* generation 0 is never used */
    __atomic_store_n(&s->gen, gen, __ATOMIC_RELAXED);   /* read by ursa__thread_get on any VP */
  }
  if (ursa_unlikely(ursa__g.nvps > 1)) {
    slot_free_smp(s, idx);
    return;
  }
  s->next_free = ursa__g.slots.free_head;
  ursa__g.slots.free_head = idx + 1;
}

static ursa_thread_t slot_handle(uint32_t idx) {
  return (ursa_thread_t)(uintptr_t)(((uint64_t)slot_at(idx)->gen << 32) | (uint64_t)(idx + 1));
}

static uint32_t handle_index(ursa_thread_t h) { return (uint32_t)(uintptr_t)h - 1u; }

void ursa__thread_foreach(void (*fn)(struct ursa__thread *, void *), void *arg) {
  uint32_t i;
  for (i = 0; i < ursa__g.slots.nslots; i++) {
    struct ursa__slot *s = slot_at(i);
    struct ursa__thread *t = __atomic_load_n(&s->t, __ATOMIC_RELAXED);
    if (t) fn(t, arg);
  }
}

/* ---- lifecycle -------------------------------------------------------------------------------- */

int ursa__threads_init(void) {
  struct ursa__vp *vp = &ursa__g.vp0;
  struct ursa__thread *m;
  uint32_t idx;
  int err;
  pthread_attr_t pa;
  memset(&ursa__g.slots, 0, sizeof ursa__g.slots);
  m = URSA__FAIL() ? NULL : calloc(1, sizeof *m);
  if (m == NULL) return -ENOMEM;
  if ((err = slot_alloc(vp, &idx, false)) != 0) { free(m); return err; }
  slot_at(idx)->t = m;
  m->handle = slot_handle(idx);
  m->vp = vp;
  ursa__set_state(m, URSA__RUNNING);
  m->own_stack = 1;
  m->id = ursa__g.next_id++;
  strcpy(m->name, "main");
  if (pthread_getattr_np(pthread_self(), &pa) == 0) {   /* the stack's bounds, for ASan */
    void *lo; size_t sz;
    if (pthread_attr_getstack(&pa, &lo, &sz) == 0) { m->stack_lo = lo; m->stack_size = sz; }
    pthread_attr_destroy(&pa);
  }
#if URSA_TSAN
  m->tsan_fiber = __tsan_get_current_fiber();
#endif
  vp->cur = m;
  vp->main_thread = m;
  vp->nthreads = 1;
  return 0;
}

void ursa__threads_fini(void) {
  struct ursa__thread *m = ursa__g.vp0.main_thread;
  if (m) { free(m->keys); free(m); }
  ursa__g.vp0.main_thread = NULL;
  if (ursa__g.slots.slot) munmap(ursa__g.slots.slot, (size_t)URSA__SLOTS_MAX * sizeof *ursa__g.slots.slot);
  memset(&ursa__g.slots, 0, sizeof ursa__g.slots);
}

void ursa__thread_release_handle(struct ursa__thread *t) {
  slot_free(handle_index(t->handle));
  if (t->keys) {
    free(t->keys);
    t->keys = NULL;
  }
}

void ursa__thread_release_stack(struct ursa__vp *vp, struct ursa__thread *t) {
  if (t->own_stack) return;                          /* main's descriptor lives until fini */
  ursa__stack_put(vp, t);
}

void ursa__thread_release(struct ursa__vp *vp, struct ursa__thread *t) {
  ursa__thread_release_handle(t);
  ursa__thread_release_stack(vp, t);
}

/* The SMP half of create: placement, pinning, region, and the first queue. */
static URSA_NOINLINE int create_smp(struct ursa__vp *vp, struct ursa__thread *t, const struct ursa__attr *a) {
  struct ursa__vp *where = vp;
  int want = start_vp(a);
  *ursa__ctx_oncpu(&t->ctx) = 0;                     /* (AArch64, ucontext: the word after sp) */
  t->timer_vp = NULL;
  t->lock = 0;
  if (want != URSA_VP_SELF) where = ursa__smp_place(vp, want);
  t->pinned = a && a->bound ? URSA__PIN_BOUND : URSA__PIN_NONE;
  t->home = where;
  t->hog = 0;                                        /* not the last owner's of the descriptor */
  __atomic_add_fetch(&ursa__g.live, 1, __ATOMIC_RELAXED);
  ursa__smp_start(vp, t, where);
  return 0;
}

/* create, written once for both instantiations (const smp; see URSA__ALWAYS_INLINE). */
static URSA__ALWAYS_INLINE int create_(struct ursa__vp *vp, ursa_thread_t *out, const struct ursa__attr *a,
                                       void *(*fn)(void *), void *arg, const bool smp) {
  struct ursa__thread *t;
  size_t size = a && a->stacksize ? a->stacksize : ursa__g.stack_size;
  uint32_t idx;
  int err;
  if (smp) {
    int64_t live = __atomic_load_n(&ursa__g.live, __ATOMIC_RELAXED);
    if ((err = ursa__smp_reserve((uint64_t)live + 1)) != 0) return err;
  } else if (ursa_unlikely(vp->nthreads + 2 > vp->timers_cap) &&
             (err = ursa__sched_reserve(vp, (uint64_t)vp->nthreads + 1)) != 0) {
    return err;
  }
  if (ursa_unlikely(vp->zombie != NULL)) ursa__reap(vp);   /* its stack may serve this thread */
  if ((err = slot_alloc(vp, &idx, smp)) != 0) return err;
  if ((t = ursa__stack_get(vp, size, &err)) == NULL) {
    slot_free(idx);
    return err;
  }
  /* A stack's descriptor is zero when fresh and keeps these invariants when recycled, so they
   * need no store: own_stack = 0, heap_idx = 0 (no timer outlives a wait), keys = NULL (released).
   * Nor does what belongs to the stack, not the thread: stack_lo, stack_size, the TSan fiber.
   * wake_result, wait_kind and wait_obj are read only while BLOCKED, result only when ZOMBIE. */
  URSA_ASSERT(!t->own_stack && t->w.heap_idx == 0 && t->keys == NULL);
  __atomic_store_n(&slot_at(idx)->t, t, __ATOMIC_RELAXED);   /* (foreach reads it from any VP) */
  t->handle = slot_handle(idx);
  t->vp = vp;
  t->saved_errno = 0;
  ursa__set_state(t, URSA__READY);
  t->fn = fn;
  t->arg = arg;
  t->layer = NULL;
  t->joiner = NULL;
  t->id = smp ? ursa__smp_next_id(vp) : ursa__g.next_id++;
  t->rdheld[0].lock = NULL;                          /* rdheld is packed: first NULL ends it */
  t->pin_depth = 0;
  if (ursa_likely(a == NULL)) {
    t->detached = 0;
    t->name[0] = '\0';
    t->region = NULL;
  } else {
    t->detached = (uint8_t)a->detached;
    if (a->name[0]) memcpy(t->name, a->name, URSA_NAME_MAX);
    else t->name[0] = '\0';
    /* (ursa_create checked the region; one destroyed since, by another thread, is a misuse) */
    t->region = a->region_id ? ursa__region_find(a->region_id, a->region_gen) : NULL;
    if (t->region != NULL) ursa__region_join(t->region);
  }
#if URSA_ASAN
  t->asan_fake = NULL;
#endif
  ursa__ctx_make(&t->ctx, t, ursa__thread_entry);
  vp->nthreads++;
  vp->stats.created++;
  if (out) *out = t->handle;
  if (!smp) {
    ursa__runq_push(vp, t);
    return 0;
  }
  return create_smp(vp, t, a);
}

/* The checked and SMP copies, out of line: the fast path tests the mode once, in memory (with the
 * test of both here, GCC kept the mode in a register: one instruction more per create). */
static URSA_NOINLINE int create_slow(struct ursa__vp *vp, ursa_thread_t *out, const struct ursa__attr *a,
                                     void *(*fn)(void *), void *arg) {
  int r = vp->mode == URSA__SMPMODE ? create_(vp, out, a, fn, arg, true) : create_(vp, out, a, fn, arg, false);
  ursa__preempt_point(vp);                          /* cp-ts: a deferred preemption */
  return r;
}

int ursa_create(ursa_thread_t *out, const ursa_attr_t *attr, void *(*fn)(void *), void *arg) {
  const struct ursa__attr *a = NULL;
  URSA_VP_OR_RETURN(vp);
  if (ursa_unlikely(fn == NULL)) return -EINVAL;
  if (attr != NULL && ((a = attr_get(attr)) == NULL || a->vp >= (int)ursa__g.vps_api ||
                       (a->region_id != 0 && ursa__region_find(a->region_id, a->region_gen) == NULL)))
    return -EINVAL;                                  /* (a region destroyed since setregion too) */
  if (ursa_unlikely(out == NULL && !(a && a->detached))) return -EINVAL;
  if (ursa_unlikely(vp->mode != URSA__FAST)) return create_slow(vp, out, a, fn, arg);   /* SMP, trace, cp-ts */
  return create_(vp, out, a, fn, arg, false);
}

/* The one join, for the caller's thread (ursa_join) and for a call waiter (ursa__join_waiter):
 * checks t and makes w its joiner.  0: t had finished (the caller collects it with join_end),
 * 1: w is t's joiner now and t's lock is still held (several VPs), or an error.  by_thread: w is
 * the joining thread's, which a cycle of two joins would block (a call waiter blocks none). */
static URSA__ALWAYS_INLINE int join_begin(struct ursa__thread *t, struct ursa__waiter *w,
                                          const bool by_thread, const bool smp) {
  ursa__lock_if(smp, &t->lock);
  if (t->detached || t->joiner) { ursa__unlock_if(smp, &t->lock); return -EINVAL; }
  if (by_thread && ursa__get_state(t) == URSA__BLOCKED &&
      __atomic_load_n(&t->wait_kind, __ATOMIC_RELAXED) == URSA__W_JOIN &&
      __atomic_load_n(&t->w.wait_obj, __ATOMIC_RELAXED) == ursa__thread_of(w)) {   /* t joins us: a cycle */
    ursa__unlock_if(smp, &t->lock);
    return -EDEADLK;
  }
  if (ursa__get_state(t) != URSA__ZOMBIE) {
    t->joiner = w;
    return 1;
  }
  ursa__unlock_if(smp, &t->lock);
  return 0;
}

/* The end of a join: t has finished; its result, then its handle and stack are released. */
static URSA__ALWAYS_INLINE void join_end(struct ursa__vp *vp, struct ursa__thread *t, void **result, const bool smp) {
  if (smp) ursa__oncpu_wait(t);                     /* its VP may still be switching away */
  if (result) *result = t->result;
  ursa__thread_release(vp, t);
}

static URSA__ALWAYS_INLINE int join_(struct ursa__vp *vp, struct ursa__thread *t, void **result, const int mode) {
  const bool smp = mode == URSA__SMPMODE;
  struct ursa__thread *cur = vp->cur;
  int r;
  if (t == cur) return -EDEADLK;
  if ((r = join_begin(t, &cur->w, true, smp)) < 0) return r;
  if (r) {
    ursa__block_m(mode, vp, URSA__W_JOIN, t, &t->lock, 0);
    vp = smp ? ursa__vp_current() : ursa__tls_vp;
  }
  join_end(vp, t, result, smp);
  return 0;
}

static URSA_NOINLINE int join_slow(struct ursa__vp *vp, struct ursa__thread *t, void **result) {
  if (vp->mode == URSA__SMPMODE) return join_(vp, t, result, URSA__SMPMODE);
  return join_(vp, t, result, URSA__CHECKED);
}

int ursa_join(ursa_thread_t h, void **result) {
  struct ursa__thread *t;
  URSA_VP_OR_RETURN(vp);
  t = ursa__thread_get(h);
  if (ursa_unlikely(t == NULL)) return -ESRCH;
  if (ursa_unlikely(vp->mode != URSA__FAST)) return join_slow(vp, t, result);
  return join_(vp, t, result, URSA__FAST);
}

/* The waiter interface (waiter.h): the join of a call waiter. */
int ursa__join_waiter(ursa_thread_t h, struct ursa__waiter_call *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  const bool smp = vp->mode == URSA__SMPMODE;
  struct ursa__thread *t = ursa__thread_get(h);
  int r;
  if (t == NULL) return -ESRCH;
  if (t == vp->cur) return -EDEADLK;
  c->w.wait_obj = t;
  if ((r = join_begin(t, &c->w, false, smp)) == 1) ursa__unlock_if(smp, &t->lock);
  else if (r == 0) join_end(vp, t, NULL, smp);
  return r;
}

void ursa__join_waiter_end(struct ursa__waiter_call *c) {
  struct ursa__vp *vp = ursa__tls_vp;
  join_end(vp, c->w.wait_obj, NULL, vp->mode == URSA__SMPMODE);
}

bool ursa__joined_by(ursa_thread_t h, bool (*match)(struct ursa__waiter_call *c, const void *arg),
                     const void *arg) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *t = ursa__thread_get(h);
  struct ursa__waiter *j;
  bool r;
  if (t == NULL) return false;
  ursa__olock(vp, &t->lock);
  j = t->joiner;
  r = j != NULL && ursa__waiter_is_call(j) && match(ursa__waiter_call_of(j), arg);
  ursa__ounlock(vp, &t->lock);
  return r;
}

int ursa_detach(ursa_thread_t h) {
  struct ursa__thread *t;
  URSA_VP_OR_RETURN(vp);
  t = ursa__thread_get(h);
  if (t == NULL) return -ESRCH;
  ursa__olock(vp, &t->lock);
  if (t->detached || t->joiner) { ursa__ounlock(vp, &t->lock); return -EINVAL; }
  if (ursa__get_state(t) == URSA__ZOMBIE) {
    ursa__ounlock(vp, &t->lock);
    if (vp->mode == URSA__SMPMODE) ursa__oncpu_wait(t);
    ursa__thread_release(vp, t);
  } else {
    t->detached = 1;
    ursa__ounlock(vp, &t->lock);
  }
  return 0;
}

void ursa_exit(void *result) {
  struct ursa__vp *vp = ursa__tls_vp;
  if (ursa_unlikely(vp == NULL)) {                   /* a misuse, not an ursa bug; cannot return */
    fprintf(stderr, "ursa: ursa_exit called from a thread that is not an ursa thread%s; aborting "
                    "(ursa_exit ends an ursa thread and cannot return)\n",
            __atomic_load_n(&ursa__g.forked, __ATOMIC_RELAXED)
                ? " (in the child of a fork, which left the runtime in the parent)" : "");
    abort();
  }
  ursa__thread_finish(vp, result);
}

unsigned ursa_vp_count(void) { return ursa__g.initialized ? ursa__g.vps_api : 0u; }   /* exploration: what was asked */

int ursa_vp_self(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp ? (int)vp->index : ursa__novp();
}

int ursa_vp_pin(void) {
  struct ursa__thread *cur;
  URSA_VP_OR_RETURN(vp);
  cur = vp->cur;
  if (cur->pin_depth++ == 0 && !cur->pinned) {
    cur->pinned = URSA__PIN_WHILE;                   /* pinned by ursa_vp_pin only */
    cur->home = vp;
  }
  return 0;
}

int ursa_vp_unpin(void) {
  struct ursa__thread *cur;
  URSA_VP_OR_RETURN(vp);
  cur = vp->cur;
  if (cur->pin_depth == 0) return -EINVAL;
  if (--cur->pin_depth == 0 && cur->pinned == URSA__PIN_WHILE) cur->pinned = URSA__PIN_NONE;
  return 0;
}

ursa_thread_t ursa_self(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp ? vp->cur->handle : URSA_THREAD_NULL;
}

void *ursa__layer_self(void) {
  struct ursa__vp *vp = ursa__tls_vp;
  return vp ? vp->cur->layer : NULL;
}

void ursa__layer_set(void *record) {
  struct ursa__vp *vp = ursa__tls_vp;
  URSA_ASSERT(vp != NULL);
  vp->cur->layer = record;
}

uint64_t ursa_thread_id(ursa_thread_t h) {
  struct ursa__thread *t;
  if (ursa__tls_vp == NULL) return 0;
  t = ursa__thread_get(h);
  return t ? t->id : 0;
}

int ursa_thread_getname(ursa_thread_t h, char *buf, size_t size) {
  struct ursa__thread *t;
  URSA_VP_OR_RETURN(vp);
  URSA_UNUSED(vp);
  if (buf == NULL || size == 0) return -EINVAL;
  if ((t = ursa__thread_get(h)) == NULL) return -ESRCH;
  strncpy(buf, t->name, size - 1);
  buf[size - 1] = '\0';
  return 0;
}
