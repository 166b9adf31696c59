/*
 * base.h - the vocabulary of every layer (src/README.md has the map): branch hints, panics and
 * assertions, which sanitizer is on, the spin lock, failure injection, object magic checks, the
 * clock, and the environment reader.  Nothing here knows a thread or a VP.  Internal names are
 * ursa__<module>_<what> and hidden (-fvisibility=hidden).
 */
#ifndef URSA_CORE_BASE_H
#define URSA_CORE_BASE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE                         /* clock_nanosleep, MAP_STACK, pthread_getattr_np */
#endif

#include "ursa.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* ---- macro vocabulary ------------------------------------------------------------------------ */
#define ursa_likely(x)   __builtin_expect(!!(x), 1)
#define ursa_unlikely(x) __builtin_expect(!!(x), 0)
#define URSA_UNUSED(x)   ((void)(x))
#define URSA_CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))
#define URSA_HIDDEN      __attribute__((visibility("hidden")))
#define URSA_NOINLINE    __attribute__((noinline))
/* A hot path's function starts a cache line, so that where the linker happens to place it cannot
 * split its few fast-path instructions over two lines (ursa__tick: ~8% of a cp-ic program's time
 * moved with its placement). */
#define URSA_HOT_ALIGN   __attribute__((aligned(64)))

/* Always-on invariant check: a broken invariant is a bug in ursa; say where and abort. */
#define URSA_PANIC(msg) ursa__panic(__func__, msg)
#ifdef URSA_DEBUG
#  define URSA_ASSERT(c) do { if (ursa_unlikely(!(c))) URSA_PANIC("assertion failed: " #c); } while (0)
#else
#  define URSA_ASSERT(c) ((void)0)
#endif

#if defined(__SANITIZE_ADDRESS__)
#  define URSA_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define URSA_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_THREAD__)
#  define URSA_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define URSA_TSAN 1
#  endif
#endif

URSA_HIDDEN void ursa__panic(const char *where, const char *msg) __attribute__((noreturn, cold));

/* ---- spin locks (several VPs only) ------------------------------------------------------------- */
/* A word lock for the short critical sections of synchronization objects, timer heaps, inboxes and
 * the handle table's shared free list: test-and-test-and-set, spinning with a pause and then
 * sched_yield (a holder may have been preempted by the kernel).  Nothing blocks or switches while
 * holding one.  Lock order: object lock, then a thread's lock (join), then a timer-heap lock, then
 * an inbox lock; the global queue's and the handle table's locks are leaves. */
typedef uint32_t ursa__spin_t;
/* The word of a held lock is 1; in the debug build it is its holder's tag instead (URSA__SPIN_TAG
 * and a number of the kernel thread), so that the comments' "lock held" can be asserted
 * (ursa__spin_held), and a relock by the holder or an unlock by another thread panics. */
#define URSA__SPIN_TAG 0x55aa0000u
#ifdef URSA_DEBUG
URSA_HIDDEN uint32_t ursa__spin_me(void);
#  define URSA__SPIN_HELD_VALUE() ursa__spin_me()
#else
#  define URSA__SPIN_HELD_VALUE() 1u
#endif
URSA_HIDDEN void ursa__spin_lock_slow(ursa__spin_t *l);   /* one argument: callers stay frameless */
/* One attempt: exchange when every holder writes the same 1; with tags a failed exchange would
 * overwrite the holder's tag, so the debug build compares first.  Acquire: pairs with the release
 * store of ursa__spin_unlock. */
static inline bool ursa__spin_try(ursa__spin_t *l, uint32_t held) {
#ifdef URSA_DEBUG
  uint32_t free_ = 0;
  return __atomic_compare_exchange_n(l, &free_, held, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
#else
  return __atomic_exchange_n(l, held, __ATOMIC_ACQUIRE) == 0;
#endif
}
static inline void ursa__spin_lock(ursa__spin_t *l) {
  uint32_t held = URSA__SPIN_HELD_VALUE();
#ifdef URSA_DEBUG
  if (__atomic_load_n(l, __ATOMIC_RELAXED) == held) URSA_PANIC("spin lock taken again by its holder");
#endif
  if (ursa_unlikely(!ursa__spin_try(l, held))) ursa__spin_lock_slow(l);
}
/* Whether the calling kernel thread holds l: known in the debug build only (elsewhere true, and
 * only URSA_ASSERT asks). */
static inline bool ursa__spin_held(const ursa__spin_t *l) {
#ifdef URSA_DEBUG
  return __atomic_load_n(l, __ATOMIC_RELAXED) == ursa__spin_me();
#else
  URSA_UNUSED(l);
  return true;
#endif
}
static inline void ursa__spin_unlock(ursa__spin_t *l) {
#ifdef URSA_DEBUG
  if (!ursa__spin_held(l)) URSA_PANIC("spin lock released by a thread that does not hold it");
#endif
  __atomic_store_n(l, 0u, __ATOMIC_RELEASE);       /* pairs with the acquire exchange above */
}
/* A lock taken only when smp (the runtime has several VPs): with one VP nothing needs one. */
static inline void ursa__lock_if(bool smp, ursa__spin_t *l) { if (ursa_unlikely(smp)) ursa__spin_lock(l); }
static inline void ursa__unlock_if(bool smp, ursa__spin_t *l) { if (ursa_unlikely(smp)) ursa__spin_unlock(l); }
/* Whether v is a value a lock word can have (objects check it to tell garbage). */
static inline bool ursa__spin_word_ok(uint32_t v) {
  return v <= 1 || (v & 0xffff0000u) == URSA__SPIN_TAG;
}


/* Allocation-failure injection for the hard test build (-DURSA_TEST_HARD=ON): every allocation
 * and mapping ursa makes first asks URSA__FAIL(), which is true for the URSA_FAIL_AT-th one
 * counted from ursa_init (Argobots' rtrace method).  Always false in other builds. */
#if URSA_TEST_HARD
URSA_HIDDEN bool ursa__fail_now(void);
#  define URSA__FAIL() ursa_unlikely(ursa__fail_now())
#else
#  define URSA__FAIL() false
#endif

/* Object magic numbers: 0 is "statically initialized", DEAD is "destroyed". */
#define URSA__MAGIC_DEAD 0xdeadbeefu

#define URSA__STATIC_ASSERT_FITS(internal, public) \
  _Static_assert(sizeof(internal) <= sizeof(public), #internal " does not fit in " #public)


/* ---- object validation (sync/) ---------------------------------------------------------------- */

/* Checks an object's magic: OK when it is `magic`; when it is 0 and the object has a static
 * initializer (zeroable), the object is initialized lazily here.  -EINVAL otherwise (never
 * initialized, or destroyed). */
static inline int ursa__obj_check(uint32_t *m, uint32_t magic, bool zeroable) {
  uint32_t v = __atomic_load_n(m, __ATOMIC_RELAXED);
  if (ursa_likely(v == magic)) return 0;
  if (zeroable && v == 0) {                  /* two VPs may race here: both store the same value */
    __atomic_compare_exchange_n(m, &v, magic, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return 0;
  }
  return -EINVAL;
}

/* The hottest operations (semaphores, create, join) are written once as an always-inline body
 * taking the VP's mode as a constant and instantiated once per mode (core/vp.h), so the fast copy
 * has no SMP or trace test left in it. */
#define URSA__ALWAYS_INLINE inline __attribute__((always_inline))

/* ---- the signals ursa takes (need <signal.h>) ------------------------------------------------- */
#define URSA__PREEMPT_SIGNAL (SIGRTMIN + 4)      /* cp-ts's per-VP time-slice timer (src/model/) */
#define URSA__ROTATE_SIGNAL  (SIGRTMIN + 5)      /* the rotator's interval timer (src/model/)   */

/* ---- clock and environment (global.c) ---------------------------------------------------------- */
/* The virtual clock of schedule exploration (src/explore/): while `on`, ursa__now() reads `now`,
 * which the explorer advances by a fixed amount at each scheduling decision and moves to the
 * earliest timer when no thread is ready (sched.c, next_ready), so that sleeps and timeouts cost
 * no real time and happen at the same point of every replay.  Written only by VP 0's kernel thread
 * (exploration runs one VP); off in every other run, where the test costs a load and a branch on
 * paths that then call clock_gettime anyway. */
struct ursa__vclock {
  int      on;
  uint64_t now;
};
URSA_HIDDEN extern struct ursa__vclock ursa__vclock;

/* CLOCK_MONOTONIC in nanoseconds: every clock reading of ursa (timers, the trace, the reports);
 * the virtual clock under exploration. */
static inline uint64_t ursa__now(void) {
  struct timespec ts;
  if (ursa_unlikely(ursa__vclock.on)) return ursa__vclock.now;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* Converts an absolute deadline on clock to CLOCK_MONOTONIC ns: -EINVAL for a bad clock or
 * tv_nsec.  A deadline already passed (a negative tv_sec too) gives 1, the earliest
 * representable; one too far to represent saturates at UINT64_MAX. */
URSA_HIDDEN int ursa__deadline(int clock, const struct timespec *abstime, uint64_t *out);
/* The environment (env.c): each returns def when the variable is unset, empty, or (with a warning
 * naming the variable and what it takes) not a valid value.  A whole number in [lo, hi]; a size
 * in bytes in [lo, hi] (K, M, G, T suffixes); a flag (0/1, off/on, no/yes, false/true); one of n
 * words (its index; NULL entries are skipped). */
URSA_HIDDEN unsigned long long ursa__env_number(const char *name, unsigned long long lo,
                                                unsigned long long hi, unsigned long long def);
URSA_HIDDEN unsigned long long ursa__env_size(const char *name, unsigned long long lo,
                                              unsigned long long hi, unsigned long long def);
URSA_HIDDEN int ursa__env_flag(const char *name, int def);
URSA_HIDDEN int ursa__env_word(const char *name, const char *const *words, int n, int def);
#if URSA_TEST_HARD
URSA_HIDDEN void ursa__fail_reset(void);
#endif

#endif /* URSA_CORE_BASE_H */
