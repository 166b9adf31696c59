/*
 * stack.c - thread stacks: mapping, guard pages, the per-VP pool, and the stack-overflow report.
 *
 * Layout of one stack mapping (addresses grow to the right):
 *
 *   | guard (1 page) | usable stack ............................ | descriptor |
 *   ^ map            ^ stack_lo                       initial SP ^            ^ stack_lo + size
 *
 * The thread descriptor (struct ursa__thread) lives at the top of its own stack (lowered by a
 * cache colour of 0-23 steps of 128 bytes, see below), so a thread costs one mapping and, while it
 * has not used much stack, one touched page.
 *
 * Guard pages.  MADV_GUARD_INSTALL (Linux 6.13+) makes the guard without splitting the mapping,
 * so adjacent stacks merge into one VMA and vm.max_map_count does not limit the thread count.
 * Where the kernel lacks it (EINVAL) ursa falls back to mprotect(PROT_NONE) for good, which costs
 * two VMAs per stack; when the VMA limit is reached, mmap or mprotect fails with ENOMEM and
 * ursa_create returns -EAGAIN after printing one line that names vm.max_map_count (only when the
 * process is at that limit: a size beyond memory or address space gets its own line).
 *
 * The pool (SplitThreads' queue of uninitialized threads).  A finished thread's default-size stack
 * goes to its VP's LIFO pool (up to stack_cache stacks); ursa_create takes from it first, so
 * creating from a warm pool makes no system call.  Other sizes are unmapped when released.
 * The depot.  When threads are created on one VP and finish on another (the POSIX layer's
 * detached threads, URSA_VP_ANY placement), one pool fills while the other empties, and every
 * create would map a stack that another VP is about to unmap.  So a VP whose pool is full puts
 * the stack in the depot, one list shared by all VPs under its lock (up to stack_cache stacks; only
 * beyond that is a stack unmapped), and a VP whose pool is empty takes up to DEPOT_BATCH stacks
 * from the depot before it maps one.  The fast paths (ursa__stack_get / _put, stack.h) never see
 * it: only a full or an empty pool does.
 *
 * ThreadSanitizer.  Each mapping gets its TSan fiber when it is made and loses it when it is
 * unmapped (and so at ursa_fini, which drains the pools): every thread the stack is given to
 * switches to the same fiber, and a warm create makes none (creating one costs TSan a 0.8 MB
 * memset, destroying one an munmap).  t->tsan_fiber survives reuse because create never clears
 * the descriptor; VP 0's idle context, which does, keeps it (src/sched/vp.c).  A finished thread
 * leaves the fiber as it found it (sched.c, ursa__thread_entry).
 *
 * Readers (issue #22 item 2).  The dumps (ursa_dump, the URSA_DUMP_SIGNAL thread) read every
 * thread's descriptor, and the stack below it, while other VPs run on; a thread they found may be
 * released meanwhile.  A pooled stack stays mapped (a stale read, never a fault), but an unmapped
 * one would fault, so a reader counts itself in `readers` for its whole walk and, while any is
 * counted, stacks are not unmapped but put on `deferred`, which the last reader to leave unmaps.
 * Only the unmapping paths (a stack of another size, a full pool, draining a pool) look at the
 * count: the pool and the one-VP fast paths of create, join and exit are unchanged.  The handshake
 * is Dekker's: a reader increments the count, fences, then reads the handle table; a releaser has
 * cleared the thread's slot before, fences, then reads the count.  So either the reader cannot
 * find the thread any more, or the releaser sees the reader and defers.
 *
 * Overflow.  Every VP's kernel thread runs a SIGSEGV/SIGBUS handler on an alternate signal stack.
 * A fault inside the running thread's guard page prints
 *   ursa: stack overflow in thread <id> (<name>): stack [lo,hi) <size> bytes, fault at <addr>
 * and aborts; any other fault gets the handler that was there before ursa (normally the default
 * action and its core dump).
 * Executed only by the VP's own kernel thread (the pool is per VP and unlocked), except the
 * readers' count and the deferred list (any kernel thread, under readers.lock).
 */
#define _GNU_SOURCE
#include "stack.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if URSA_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if URSA_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#if URSA_VALGRIND
#include <valgrind/valgrind.h>                /* client requests: a few no-op instructions natively */
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* The descriptor's share of the top of a stack, a multiple of 64 bytes. */
#define URSA__DESC_SIZE ((sizeof(struct ursa__thread) + 63) & ~(size_t)63)

static int madv_guard_ok = 1;                 /* cleared when the kernel lacks MADV_GUARD_INSTALL */
static unsigned color_next;                   /* atomic: cache colour of the next stack mapped */

/* Cache colouring.  Without it every descriptor and every top-of-stack frame would sit at the same
 * offset in its page, so all threads would compete for the same few cache sets (an L1 set holds 8
 * lines; an L2 set 8 more): a 503-thread ring then missed in L2 at every pass.  Each new stack puts
 * its descriptor one of URSA__COLORS steps of 128 bytes lower, cycling; it costs at most 3 KiB of
 * the stack and leaves 1 KiB for descriptor and first frames in the top page (so a shallow blocked
 * thread still costs one page).  The step is 128, not 64: the hot part of a descriptor (saved
 * registers and queue fields) is 128 bytes, and with a 64-byte step one thread's saved-register
 * stores and the next thread's loads met at the same page offset (4K aliasing), which made the
 * two-thread semaphore hand-off 30% slower.  Measured on the named-yield ring of 503: 14.7 ns/pass
 * with 1 colour, 11.9 with 16, 11.2 with 48. */
#define URSA__COLORS 24u
#define URSA__COLOR_STEP 128u
static int warned_vma, warned_size;

/* Whether the process is at vm.max_map_count, the other reason (besides memory and address space)
 * for mmap and mprotect to fail with ENOMEM: its mappings (the lines of /proc/self/maps) against
 * the limit, with room for the two that a guarded stack needs.  Only asked on a failure. */
static bool at_map_limit(long *limit) {
  char line[512];
  long maps = 0;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  *limit = 0;
  if (f == NULL) return false;
  if (fscanf(f, "%ld", limit) != 1) *limit = 0;
  fclose(f);
  if (*limit <= 0 || (f = fopen("/proc/self/maps", "r")) == NULL) return false;
  while (fgets(line, sizeof line, f) != NULL)
    if (strchr(line, '\n') != NULL) maps++;
  fclose(f);
  return maps + 3 >= *limit;
}

/* One line, once per cause, when a stack cannot be made: what failed and why, naming
 * vm.max_map_count only when the process is at it (issue #22 item 9). */
static void warn_stack(const char *what, size_t size) {
  int e = errno;
  long limit;
  if (e == ENOMEM && at_map_limit(&limit)) {
    if (warned_vma) return;
    warned_vma = 1;
    fprintf(stderr,
            "ursa: cannot %s for a new thread (%s): the process has reached vm.max_map_count (%ld "
            "mappings); ursa_create returns -EAGAIN (raise vm.max_map_count or use fewer threads)\n",
            what, strerror(e), limit);
    return;
  }
  if (warned_size) return;
  warned_size = 1;
  fprintf(stderr,
          "ursa: cannot %s of %zu bytes for a new thread (%s): not enough memory or address space "
          "(RLIMIT_AS, overcommit, or a size beyond the address space); ursa_create returns -EAGAIN\n",
          what, size, strerror(e));
}

#if URSA_ASAN
/* Unpoisons [lo, lo + size) in ASan's shadow memory (one byte per 8 bytes of stack), at a cost
 * that follows what was touched, not the size.  __asan_unpoison_memory_region memsets the
 * shadow: for a 1 TiB stack that is 128 GiB of writes and as much RSS, though frames poison only
 * the part of a stack that was used.  So the shadow's whole pages are dropped with MADV_DONTNEED
 * instead (they read as zero again, as ASan does itself for large ranges; the kernel's work
 * follows the pages that were present), and only the partial pages at the two ends are written.
 * Below 64 KiB of shadow (512 KiB of stack: every default stack) the memset is cheaper. */
#define URSA__SHADOW_DROP_MIN 65536u
static void shadow_clear(char *lo, size_t size) {
  size_t scale, offset, page = ursa__g.page;
  uintptr_t s_lo, s_hi, p_lo, p_hi;
  char *mid_lo, *mid_hi;
  __asan_get_shadow_mapping(&scale, &offset);
  s_lo = ((uintptr_t)lo >> scale) + offset;
  s_hi = (((uintptr_t)lo + size) >> scale) + offset;
  p_lo = (s_lo + page - 1) & ~(uintptr_t)(page - 1);
  p_hi = s_hi & ~(uintptr_t)(page - 1);
  if (p_hi <= p_lo || p_hi - p_lo < URSA__SHADOW_DROP_MIN ||
      madvise((void *)p_lo, p_hi - p_lo, MADV_DONTNEED) != 0) {
    ASAN_UNPOISON_MEMORY_REGION(lo, size);
    return;
  }
  mid_lo = (char *)((p_lo - offset) << scale);           /* the stack bytes those pages cover */
  mid_hi = (char *)((p_hi - offset) << scale);
  ASAN_UNPOISON_MEMORY_REGION(lo, (size_t)(mid_lo - lo));
  ASAN_UNPOISON_MEMORY_REGION(mid_hi, (size_t)(lo + size - mid_hi));
}
#endif

static struct ursa__thread *stack_map(size_t size, int *err) {
  size_t guard = ursa__g.guard_size, page = ursa__g.page;
  char *map;
  struct ursa__thread *t;
  size = (size + page - 1) & ~(page - 1);
  if (size > SIZE_MAX - guard) { *err = -EAGAIN; return NULL; }
  map = URSA__FAIL() ? (errno = ENOMEM, MAP_FAILED)
                     : mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) {
    warn_stack("map a stack", size);
    *err = -EAGAIN;
    return NULL;
  }
#if URSA_ASAN
  /* The range may have held an earlier stack (unmapped by a previous ursa_fini) whose frames
   * left redzones in ASan's shadow memory: a fresh mapping starts clean. */
  shadow_clear(map, size + guard);
#endif
  if (ursa__g.guard_mode == 0 && madv_guard_ok) {
    if (madvise(map, guard, MADV_GUARD_INSTALL) != 0) {
      if (errno == EINVAL) madv_guard_ok = 0;                 /* older kernel: use mprotect */
      else goto fail;
    }
  }
  if (ursa__g.guard_mode == 1 || !madv_guard_ok) {
    if (mprotect(map, guard, PROT_NONE) != 0) goto fail;
  }
  t = (struct ursa__thread *)(map + guard + size - URSA__DESC_SIZE - URSA__COLOR_STEP * (__atomic_fetch_add(&color_next, 1u, __ATOMIC_RELAXED) % URSA__COLORS));
  t->stack_lo = map + guard;
  t->stack_size = size;
#if URSA_VALGRIND
  t->vg_stack = VALGRIND_STACK_REGISTER(t->stack_lo, t->stack_lo + size);
#endif
#if URSA_TSAN
  t->tsan_fiber = __tsan_create_fiber(0);
#endif
  return t;
fail:
  warn_stack("add a guard page to a stack", size);
  munmap(map, size + guard);
  *err = -EAGAIN;
  return NULL;
}

static void stack_unmap(struct ursa__thread *t) {
#if URSA_TSAN
  __tsan_destroy_fiber(t->tsan_fiber);
#endif
#if URSA_VALGRIND
  VALGRIND_STACK_DEREGISTER(t->vg_stack);
#endif
  munmap(t->stack_lo - ursa__g.guard_size, t->stack_size + ursa__g.guard_size);
}

/* ThreadSanitizer does not model fences, and GCC >= 12 warns about each seq_cst fence under
 * -fsanitize=thread (src/sched/deque.h does the same).  The two below only order a store before a
 * load (Dekker); TSan builds skip the dump tests, whose reads are racy by design. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wtsan"
#endif

/* The readers of descriptors (see the comment at the top). */
static struct {
  unsigned             count;         /* atomic: readers walking now                            */
  ursa__spin_t         lock;          /* guards deferred, and the last reader's leaving         */
  struct ursa__thread *deferred;      /* stacks released while a reader walked (linked by w.next) */
} readers;

void ursa__stack_readers_enter(void) {
  __atomic_add_fetch(&readers.count, 1u, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* then the handle table: pairs with stack_release's */
}

void ursa__stack_readers_exit(void) {
  struct ursa__thread *list = NULL;
  ursa__spin_lock(&readers.lock);
  if (__atomic_sub_fetch(&readers.count, 1u, __ATOMIC_SEQ_CST) == 0) {
    list = readers.deferred;
    readers.deferred = NULL;
  }
  ursa__spin_unlock(&readers.lock);
  while (list) {
    struct ursa__thread *t = list;
    list = t->w.next;
    stack_unmap(t);
  }
}

/* Unmaps the stack of a released thread, or defers it while a reader walks.  The thread's slot was
 * cleared before (a pooled stack's long before), so a reader that counts itself after the fence
 * below cannot find it. */
static void stack_release(struct ursa__thread *t) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* pairs with ursa__stack_readers_enter's */
  if (__atomic_load_n(&readers.count, __ATOMIC_RELAXED) != 0) {
    ursa__spin_lock(&readers.lock);
    if (__atomic_load_n(&readers.count, __ATOMIC_RELAXED) != 0) {
      t->w.next = readers.deferred;           /* (no reader reads w.next) */
      readers.deferred = t;
      ursa__spin_unlock(&readers.lock);
      return;
    }
    ursa__spin_unlock(&readers.lock);
  }
  stack_unmap(t);
}

/* The depot (see the note at the top). */
#define DEPOT_BATCH 32u                       /* stacks an empty pool takes from the depot at once */
static struct {
  ursa__spin_t         lock;                  /* guards list and len; a leaf lock */
  struct ursa__thread *list;                  /* linked through w.next, like the pools */
  size_t               len;                   /* written under lock (relaxed atomic stores) */
} depot;

/* fork (src/runtime/): the locks are held across the fork, so the child's copy is consistent; the
 * child has no reader (only the forking kernel thread lives on), so what was deferred goes now. */
void ursa__stack_atfork_prepare(void) { ursa__spin_lock(&readers.lock); ursa__spin_lock(&depot.lock); }
void ursa__stack_atfork_parent(void) { ursa__spin_unlock(&depot.lock); ursa__spin_unlock(&readers.lock); }
void ursa__stack_atfork_child(void) {
  struct ursa__thread *list = readers.deferred;
  depot.lock = 0;
  readers.deferred = NULL;
  readers.count = 0;
  readers.lock = 0;
  while (list) {
    struct ursa__thread *t = list;
    list = t->w.next;
    stack_unmap(t);
  }
}

/* ---- the depot -------------------------------------------------------------------------------- */

/* Puts t in the depot: 1, or 0 when the depot is full (the caller unmaps t). */
static int depot_put(struct ursa__thread *t) {
  int ok = 0;
  ursa__spin_lock(&depot.lock);
  if (depot.len < ursa__g.stack_cache) {
    t->w.next = depot.list;
    depot.list = t;
    /* relaxed atomic: depot_refill reads it without the lock, as a hint */
    __atomic_store_n(&depot.len, depot.len + 1, __ATOMIC_RELAXED);
    ok = 1;
  }
  ursa__spin_unlock(&depot.lock);
  return ok;
}

/* Moves up to DEPOT_BATCH stacks from the depot to vp's (empty) pool. */
static void depot_refill(struct ursa__vp *vp) {
  unsigned n = 0;
  if (__atomic_load_n(&depot.len, __ATOMIC_RELAXED) == 0) return;   /* (a hint: rechecked below) */
  ursa__spin_lock(&depot.lock);
  while (depot.list != NULL && n < DEPOT_BATCH && vp->pool_len < ursa__g.stack_cache) {
    struct ursa__thread *t = depot.list;
    depot.list = t->w.next;
    __atomic_store_n(&depot.len, depot.len - 1, __ATOMIC_RELAXED);
    t->w.next = vp->pool;
    vp->pool = t;
    vp->pool_len++;
    n++;
  }
  ursa__spin_unlock(&depot.lock);
}

/* ursa_fini: unmaps what the depot holds (every VP has stopped). */
void ursa__stack_depot_drain(void) {
  while (depot.list) {
    struct ursa__thread *t = depot.list;
    depot.list = t->w.next;
    stack_release(t);
  }
  depot.len = 0;
}

struct ursa__thread *ursa__stack_get_slow(struct ursa__vp *vp, size_t size, int *err) {
  struct ursa__thread *t;
  if (size == ursa__g.stack_size && vp->pool == NULL) depot_refill(vp);
  if (size == ursa__g.stack_size && vp->pool != NULL) {
    t = vp->pool;
    vp->pool = t->w.next;
    vp->pool_len--;
#if URSA_ASAN
    /* Frames of the previous owner never returned; their redzones must not poison the new one. */
    shadow_clear(t->stack_lo, t->stack_size);
#endif
  } else if ((t = stack_map(size, err)) == NULL) {
    return NULL;                                  /* (a fresh mapping was cleared by stack_map) */
  } else {
    vp->stats.stacks_mapped++;
  }
  return t;
}

void ursa__stack_put_slow(struct ursa__vp *vp, struct ursa__thread *t) {
  if (t->stack_size == ursa__g.stack_size && vp->pool_len < ursa__g.stack_cache) {
    t->w.next = vp->pool;
    vp->pool = t;
    vp->pool_len++;
    return;
  }
  if (t->stack_size == ursa__g.stack_size && depot_put(t)) return;
  stack_release(t);
}

int ursa__stack_prealloc(struct ursa__vp *vp, size_t n) {
  while (n-- && vp->pool_len < ursa__g.stack_cache) {
    int err;
    struct ursa__thread *t = stack_map(ursa__g.stack_size, &err);
    if (t == NULL) return err;
    ursa__stack_put_slow(vp, t);
  }
  return 0;
}

void ursa__stack_pool_drain(struct ursa__vp *vp) {
  while (vp->pool) {
    struct ursa__thread *t = vp->pool;
    vp->pool = t->w.next;
    stack_release(t);
  }
  vp->pool_len = 0;
}

/* ---- stack overflow --------------------------------------------------------------------------- */

static struct sigaction old_segv, old_bus;
static void *altstack_mem;
static size_t altstack_size;
static int handler_installed;

/* Async-signal-safe formatting into a fixed buffer. */
struct sbuf { char b[256]; size_t n; };
static void put_s(struct sbuf *s, const char *x) { while (*x && s->n < sizeof s->b - 1) s->b[s->n++] = *x++; }
static void put_u(struct sbuf *s, uint64_t v, unsigned base) {
  char tmp[24]; int i = 0;
  if (base == 16) put_s(s, "0x");
  do { tmp[i++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
  while (i-- && s->n < sizeof s->b - 1) s->b[s->n++] = tmp[i];
}

static void overflow_handler(int sig, siginfo_t *si, void *uctx) {
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *t = vp ? vp->cur : NULL;
  char *addr = si->si_addr;
  if (t && !t->own_stack && t->stack_lo && addr >= t->stack_lo - ursa__g.guard_size && addr < t->stack_lo) {
    struct sbuf s = { .n = 0 };
    put_s(&s, "ursa: stack overflow in thread ");
    put_u(&s, t->id, 10);
    put_s(&s, " (");
    put_s(&s, t->name[0] ? t->name : "unnamed");
    put_s(&s, "): stack [");
    put_u(&s, (uintptr_t)t->stack_lo, 16);
    put_s(&s, ",");
    put_u(&s, (uintptr_t)t->stack_lo + t->stack_size, 16);
    put_s(&s, ") ");
    put_u(&s, t->stack_size, 10);
    put_s(&s, " bytes, fault at ");
    put_u(&s, (uintptr_t)addr, 16);
    put_s(&s, "\n");
    if (write(STDERR_FILENO, s.b, s.n) < 0) { /* nothing more can be done */ }
    abort();
  }
  /* Not ours: give the fault to whoever had it before ursa. */
  {
    const struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) { old->sa_sigaction(sig, si, uctx); return; }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) { old->sa_handler(sig); return; }
    sigaction(sig, old, NULL);                   /* the faulting instruction runs again and gets */
    if (si->si_code <= 0) raise(sig);            /* the old action; a sent signal is re-raised   */
  }
}

int ursa__overflow_handler_install(void) {
  struct sigaction sa;
  stack_t ss, cur;
  if (handler_installed) return 0;
  if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    altstack_size = 65536;
    altstack_mem = URSA__FAIL() ? (errno = ENOMEM, MAP_FAILED)
                                : mmap(NULL, altstack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (altstack_mem == MAP_FAILED) { altstack_mem = NULL; return -ENOMEM; }
    ss.ss_sp = altstack_mem;
    ss.ss_size = altstack_size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0) { munmap(altstack_mem, altstack_size); altstack_mem = NULL; return -ENOMEM; }
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = overflow_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, URSA__PREEMPT_SIGNAL);       /* no cp-ts tick on the small altstack */
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  handler_installed = 1;
  return 0;
}

void ursa__altstack_setup(void **mem) {
  stack_t ss;
  void *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *mem = NULL;
  if (m == MAP_FAILED) return;                 /* an overflow then gets the default action */
  ss.ss_sp = m;
  ss.ss_size = 65536;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) != 0) { munmap(m, 65536); return; }
  *mem = m;
}

void ursa__altstack_teardown(void *mem) {
  stack_t ss = { .ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0 };
  if (mem == NULL) return;
  sigaltstack(&ss, NULL);
  munmap(mem, 65536);
}

void ursa__overflow_handler_remove(void) {
  if (!handler_installed) return;
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  if (altstack_mem) {
    stack_t ss = { .ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0 };
    sigaltstack(&ss, NULL);
    munmap(altstack_mem, altstack_size);
    altstack_mem = NULL;
  }
  handler_installed = 0;
}
