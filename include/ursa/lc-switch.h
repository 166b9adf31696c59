/*
 * ursa/lc-switch.h - local continuations as a switch over the function body (URSA_LC_SWITCH, the
 * default).  Included by ursa/lc.h only.
 *
 * URSA_LC_RESUME(s) opens `switch (s) { case 0:` and URSA_LC_END(s) closes it; URSA_LC_SET(s)
 * stores a number k and places `case k:` right after, so the next URSA_LC_RESUME jumps there.
 * k is __COUNTER__ + 1 (0 is the start), unique in the translation unit.
 *
 *   WARNING: the `case k:` label belongs to the innermost enclosing switch statement.  A point set
 *   inside a switch statement of the function body (any URSA_PT_WAIT..., URSA_PT_YIELD...,
 *   URSA_PT_SPAWN, URSA_PT_SEM_WAIT there) attaches to that inner switch: the resume never finds
 *   it.  The compiler says nothing (unless a user's case has the same number).  Use if/else
 *   around waits, or URSA_LC_ADDRLABELS.  At run time the first resume of such a wait finds no
 *   case of its number and lands on the `default:` that URSA_LC_RESUME places: it calls
 *   URSA_LC_ON_BAD_RESUME(s): by default a message on stderr and abort(); define it before the
 *   include to do otherwise.  (The same catches a struct ursa_pt passed to another protothread
 *   function of the same translation unit, where the numbers cannot repeat.)
 *
 * Caught at compile time: more points in one translation unit than ursa_lc_t can number (65,534).
 * In C++, a point placed where it would skip the initialisation of a local in scope is an error
 * ("jump to case label crosses initialization"); GCC's -Wjump-misses-init gives the same as a
 * warning in C.
 */
#ifndef URSA_LC_SWITCH_H
#define URSA_LC_SWITCH_H

#ifndef URSA_LC_H
#error "include <ursa/pt.h> (or <ursa/lc.h>), not <ursa/lc-switch.h>"
#endif

/* The point to resume at: 0 = the start, k = the `case k:` of one URSA_LC_SET.  2 bytes. */
typedef unsigned short ursa_lc_t;

#if defined(__cplusplus)
#define URSA_LC_STATIC_ASSERT_(cond, msg) static_assert(cond, msg)
#else
#define URSA_LC_STATIC_ASSERT_(cond, msg) _Static_assert(cond, msg)
#endif

/* Marks the fall-through from the store into the next case label as meant (-Wimplicit-fallthrough
 * is in -Wextra). */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define URSA_LC_FALLTHROUGH_ [[fallthrough]]
#elif defined(__has_attribute)
#if __has_attribute(__fallthrough__)
#define URSA_LC_FALLTHROUGH_ __attribute__((__fallthrough__))
#endif
#endif
#ifndef URSA_LC_FALLTHROUGH_
#define URSA_LC_FALLTHROUGH_ ((void)0)
#endif

#define URSA_LC_FUNC_ATTR

/* Called when s names no point of this function (see the warning above); must not return.  The
 * default names the function and aborts. */
#ifndef URSA_LC_ON_BAD_RESUME
#include <stdio.h>
#include <stdlib.h>
#define URSA_LC_ON_BAD_RESUME(s)                                                        \
  (fprintf(stderr, "%s:%d: %s: ursa/pt.h: resumed at point %u, which is not in this function's " \
           "switch: a wait inside a switch statement (use if/else or URSA_LC_ADDRLABELS), or a " \
           "struct ursa_pt of another function\n", __FILE__, __LINE__, __func__, (unsigned)(s)), \
   abort())
#endif

#define URSA_LC_INIT(s) ((s) = 0)

#define URSA_LC_RESUME(s)      \
  switch (s) {                 \
    default:                   \
      URSA_LC_ON_BAD_RESUME(s); \
      URSA_LC_FALLTHROUGH_;    \
    case 0:

/* n is one expansion of __COUNTER__, used three times. */
#define URSA_LC_SET_AT_(s, n)                                                          \
  URSA_LC_STATIC_ASSERT_((n) < 65535, "ursa/lc-switch.h: more than 65,534 waits in this " \
                         "translation unit: split it or use URSA_LC_ADDRLABELS");       \
  (s) = (ursa_lc_t)((n) + 1);                                                          \
  URSA_LC_FALLTHROUGH_;                                                                \
  case (n) + 1:

#define URSA_LC_SET(s) URSA_LC_SET_AT_(s, __COUNTER__)

#define URSA_LC_END(s) }

#endif /* URSA_LC_SWITCH_H */
