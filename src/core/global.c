/*
 * global.c - what every layer shares and nothing else owns: the process-wide state (ursa__g), the
 * calling kernel thread's VP (ursa__tls_vp), the panic path, the slow half of the spin lock, the
 * clock and deadline conversion, the environment reader, and the hard build's failure injection.
 * Calls nothing above src/core/.
 */
#define _GNU_SOURCE
#include "base.h"
#include "vp.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ursa__global ursa__g;

__thread struct ursa__vp *ursa__tls_vp __attribute__((tls_model("initial-exec")));


/* ---- spin locks ------------------------------------------------------------------------------ */

#ifdef URSA_DEBUG
/* The calling kernel thread's lock tag (base.h): numbered in the order threads first take a lock. */
uint32_t ursa__spin_me(void) {
  static __thread uint32_t me;
  static uint32_t next;
  if (me == 0) me = URSA__SPIN_TAG | (__atomic_add_fetch(&next, 1, __ATOMIC_RELAXED) % 0xffffu + 1u);
  return me;
}
#endif

void ursa__spin_lock_slow(ursa__spin_t *l) {
  uint32_t held = URSA__SPIN_HELD_VALUE();
  unsigned spins = 0;
  do {
    while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0) {   /* read-only wait: no line ping-pong */
      if (++spins < 128) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
      } else {
        sched_yield();                                 /* the holder may be preempted */
      }
    }
  } while (!ursa__spin_try(l, held));                  /* pairs with ursa__spin_unlock */
}

/* ---- time ------------------------------------------------------------------------------------- */


int ursa__deadline(int clock, const struct timespec *abstime, uint64_t *out) {
  struct timespec now;
  uint64_t mono, secs, delta;
  long nsec;
  if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L) return -EINVAL;
  if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return -EINVAL;
  if (clock_gettime(clock, &now) != 0) return -EINVAL;
  mono = ursa__now();
  /* Compared before any arithmetic, so that no tv_sec overflows anything: a deadline at or before
   * now (a negative tv_sec too) has passed (1: try once, then -ETIMEDOUT); one beyond what 64-bit
   * nanoseconds hold saturates (UINT64_MAX: never, in practice). */
  if (abstime->tv_sec < now.tv_sec || (abstime->tv_sec == now.tv_sec && abstime->tv_nsec <= now.tv_nsec)) {
    *out = 1;
    return 0;
  }
  secs = (uint64_t)abstime->tv_sec - (uint64_t)now.tv_sec;     /* > 0, or 0 with more nanoseconds */
  nsec = abstime->tv_nsec - now.tv_nsec;                        /* -999999999 .. 999999999 */
  if (secs >= (UINT64_MAX - mono) / 1000000000u - 1) {
    *out = UINT64_MAX;
    return 0;
  }
  delta = secs * 1000000000u + (uint64_t)nsec;                  /* wraps back for a negative nsec */
  *out = mono + delta;
  return 0;
}

struct ursa__vclock ursa__vclock;                     /* base.h: exploration's clock */

int ursa__novp(void) { return __atomic_load_n(&ursa__g.forked, __ATOMIC_RELAXED) ? -ECHILD : -EPERM; }

/* ---- panic and failure injection ------------------------------------------------------------------ */

void ursa__panic(const char *where, const char *msg) {
  fprintf(stderr, "ursa: internal error in %s: %s\n", where, msg);
  abort();
}


#if URSA_TEST_HARD
static long fail_at, alloc_count;

void ursa__fail_reset(void) {
  fail_at = (long)ursa__env_number("URSA_FAIL_AT", 1, 1000000000, 0);
  alloc_count = 0;
}

bool ursa__fail_now(void) {
  return fail_at > 0 && ++alloc_count == fail_at;
}
#endif

