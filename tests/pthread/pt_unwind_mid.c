/*
 * pt_unwind_mid.c - the C part of pt_unwind.cpp, compiled without -fexceptions: a C frame whose
 * pthread_cleanup_push is glibc's C macro (a jump buffer, no unwind action of its own) between
 * C++ frames.  The forced unwind must run, in stack order, the inner C++ destructors, this
 * frame's handler (by longjmp), then the outer destructors.
 */
#include <pthread.h>

void pt_unwind_note(const char *s);             /* pt_unwind.cpp */

static void mid_handler(void *arg) { pt_unwind_note((const char *)arg); }

void pt_unwind_c_middle(void (*inner)(void));
void pt_unwind_c_middle(void (*inner)(void)) {
  pthread_cleanup_push(mid_handler, (void *)"cmid");
  inner();
  pthread_cleanup_pop(0);
}
