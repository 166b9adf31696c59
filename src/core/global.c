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

void ursa__spin_lock_slow(ursa__spin_t *l) {
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
  } while (__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE) != 0);   /* pairs with ursa__spin_unlock */
}

/* ---- time ------------------------------------------------------------------------------------- */

uint64_t ursa__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ursa__deadline(int clock, const struct timespec *abstime, uint64_t *out) {
  struct timespec now;
  int64_t delta;
  uint64_t mono;
  if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L || abstime->tv_sec < 0)
    return -EINVAL;
  if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return -EINVAL;
  if (clock_gettime(clock, &now) != 0) return -EINVAL;
  delta = ((int64_t)abstime->tv_sec - (int64_t)now.tv_sec) * 1000000000LL +
          (abstime->tv_nsec - now.tv_nsec);
  mono = ursa__now();
  *out = delta <= 0 ? 1 : mono + (uint64_t)delta;            /* 1: passed already */
  return 0;
}

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

