/*
 * ursa/lc.h - local continuations: the one mechanism under ursa's stackless threads (ursa/pt.h).
 *
 * A local continuation records a point inside one function so that a later call of the same
 * function can jump straight back to it.  It holds no stack, no registers and no locals: only
 * "where", in a small ursa_lc_t.  Applications use ursa/pt.h; this header is its layer below.
 *
 * Two implementations, chosen per translation unit by URSA_LC_IMPL before the first include:
 *
 *   URSA_LC_SWITCH      (default)  ursa/lc-switch.h: a switch statement over the whole body, each
 *                      point a `case` label numbered by __COUNTER__ (Duff's device).  Portable
 *                      (any C or C++ compiler with __COUNTER__: GCC, Clang, MSVC).
 *                      ursa_lc_t is an unsigned short: 2 bytes.
 *                      Pitfall: a point cannot be set inside a switch statement of the body.
 *
 *   URSA_LC_ADDRLABELS             ursa/lc-addrlabels.h: GCC/Clang labels as values (&&label,
 *                      goto *p).  No restriction on switch statements.  ursa_lc_t is a void *:
 *                      8 bytes on LP64.  A GNU extension: accepted by -std=c11 (not only
 *                      -std=gnu11); under -pedantic the header silences the two warnings itself.
 *
 *     cc -DURSA_LC_IMPL=URSA_LC_ADDRLABELS ...     or     #define URSA_LC_IMPL URSA_LC_ADDRLABELS
 *
 * A translation unit has one implementation: including this header again with another
 * URSA_LC_IMPL is an #error.  Different translation units may differ; a struct ursa_pt must not
 * cross from one implementation to the other (its size and meaning differ).
 *
 * The operations (each implementation defines all five; s is an lvalue of type ursa_lc_t):
 *
 *   URSA_LC_INIT(s)     the start of the function: a zero ursa_lc_t means the same.
 *   URSA_LC_RESUME(s)   at the top of the body: jumps to the point recorded in s, if any.
 *   URSA_LC_SET(s)      records this point in s; a later URSA_LC_RESUME(s) continues here.
 *                       A statement list, meant for use inside do { ... } while (0).
 *   URSA_LC_END(s)      closes what URSA_LC_RESUME opened, after the last point.
 *   URSA_LC_FUNC_ATTR   attributes for a function holding points (used by URSA_PT_THREAD).
 *
 * Points are named by __COUNTER__, not __LINE__, so several on one source line (two waits in one
 * macro, say) are distinct.
 */
#ifndef URSA_LC_SWITCH
#define URSA_LC_SWITCH 1
#endif
#ifndef URSA_LC_ADDRLABELS
#define URSA_LC_ADDRLABELS 2
#endif
#ifndef URSA_LC_IMPL
#define URSA_LC_IMPL URSA_LC_SWITCH
#endif

/* Outside the include guard on purpose: a second include with another choice is an error rather
 * than a silent mix. */
#if defined(URSA_LC_CHOSEN_) && URSA_LC_CHOSEN_ != URSA_LC_IMPL
#error "ursa/lc.h: URSA_LC_IMPL differs from the one this translation unit first included it with"
#endif

#ifndef URSA_LC_H
#define URSA_LC_H

#if URSA_LC_IMPL == URSA_LC_SWITCH
#define URSA_LC_CHOSEN_ 1
#include "lc-switch.h"
#elif URSA_LC_IMPL == URSA_LC_ADDRLABELS
#define URSA_LC_CHOSEN_ 2
#include "lc-addrlabels.h"
#else
#error "ursa/lc.h: URSA_LC_IMPL must be URSA_LC_SWITCH or URSA_LC_ADDRLABELS"
#endif

/* Pastes after expanding, so that __COUNTER__ becomes its number first. */
#define URSA_LC_CAT_(a, b) URSA_LC_CAT2_(a, b)
#define URSA_LC_CAT2_(a, b) a##b

#endif /* URSA_LC_H */
