/*
 * ursa/lc-addrlabels.h - local continuations as label addresses (URSA_LC_ADDRLABELS).  Included by
 * ursa/lc.h only.
 *
 * URSA_LC_SET(s) places a label `ursa_lc_label_<__COUNTER__>:` and stores its address (&&label)
 * in s; URSA_LC_RESUME(s) is `if (s) goto *s;`.  Unlike lc-switch.h, waits may sit anywhere,
 * switch statements included.  ursa_lc_t is a pointer: 8 bytes on LP64.
 *
 * Labels as values are a GNU extension (GCC, Clang; not MSVC): this file is an #error elsewhere.
 * GCC and Clang accept them with -std=c11 and -std=c++11 as well as with the gnu modes; under
 * -pedantic (-Wpedantic) the `&&label` is wrapped in __extension__ and the `goto *p` in a
 * diagnostic push/ignored/pop, so a -pedantic -Werror build stays clean without an opt-out.
 *
 * The address of a label is only valid in the very function that holds it.  A compiler may
 * duplicate a function (inlining, cloning for constant arguments), and a continuation stored by
 * one copy must not be resumed by another: URSA_LC_FUNC_ATTR (used by URSA_PT_THREAD) marks the
 * function noinline (and noclone on GCC).  GCC and Clang already refuse to inline a function with
 * a computed goto; declare protothread functions with URSA_PT_THREAD all the same.
 *
 * Not caught: a local variable does not survive a resume here either; the compiler gives no
 * warning for a computed goto that skips an initialisation.
 */
#ifndef URSA_LC_ADDRLABELS_H
#define URSA_LC_ADDRLABELS_H

#ifndef URSA_LC_H
#error "include <ursa/pt.h> (or <ursa/lc.h>), not <ursa/lc-addrlabels.h>"
#endif
#if !defined(__GNUC__)
#error "ursa/lc-addrlabels.h needs labels as values (GCC or Clang): use URSA_LC_SWITCH"
#endif

/* The point to resume at: a label address, or null for the start.  8 bytes on LP64. */
typedef void *ursa_lc_t;

#if defined(__clang__)
#define URSA_LC_FUNC_ATTR __attribute__((__noinline__))
#else
#define URSA_LC_FUNC_ATTR __attribute__((__noinline__, __noclone__))
#endif

#define URSA_LC_INIT(s) ((s) = 0)

/* The label and its unused address at the end give every protothread at least one
 * address-of-label expression: Clang refuses an indirect goto in a function without any (a
 * protothread that never waits).  The caller's `;` ends the last statement. */
#define URSA_LC_RESUME(s)                                   \
  do {                                                      \
    if ((s) != 0) {                                         \
      _Pragma("GCC diagnostic push")                        \
      _Pragma("GCC diagnostic ignored \"-Wpedantic\"")      \
      goto *(s);                                            \
      _Pragma("GCC diagnostic pop")                         \
    }                                                       \
  } while (0);                                              \
  ursa_lc_resume_:                                          \
  (void)(__extension__ &&ursa_lc_resume_)

/* GCC 12 and later take a label's address for a local's in -Wdangling-pointer (in -Wall) and
 * warn when it is stored through a pointer; a label's address outlives the call, so that warning
 * is silenced around the store. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define URSA_LC_STORE_(s, label)                            \
  _Pragma("GCC diagnostic push")                            \
  _Pragma("GCC diagnostic ignored \"-Wdangling-pointer\"")  \
  (s) = __extension__ &&label;                              \
  _Pragma("GCC diagnostic pop")
#else
#define URSA_LC_STORE_(s, label) (s) = __extension__ &&label;
#endif

#define URSA_LC_SET_AT_(s, label) \
  label:                          \
  URSA_LC_STORE_(s, label)

#define URSA_LC_SET(s) URSA_LC_SET_AT_(s, URSA_LC_CAT_(ursa_lc_label_, __COUNTER__))

#define URSA_LC_END(s)

#endif /* URSA_LC_ADDRLABELS_H */
