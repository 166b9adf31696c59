/*
 * backtrace.h - the call stack of a suspended thread, read from its saved registers (backtrace.c,
 * libunwind loaded at run time).
 */
#ifndef URSA_CORE_BACKTRACE_H
#define URSA_CORE_BACKTRACE_H

#include "thread.h"

/* The call stack of t (suspended, or self: the caller's own), one "#n pc function+off (module)"
 * line per frame, at most URSA__BT_MAX. */
#define URSA__BT_MAX 32
URSA_HIDDEN void ursa__print_backtrace(FILE *f, const struct ursa__thread *t, bool self);

#endif /* URSA_CORE_BACKTRACE_H */
