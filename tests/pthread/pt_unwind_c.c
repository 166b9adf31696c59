/*
 * pt_unwind_c.c - a C program compiled with -fexceptions (tests/CMakeLists.txt), where glibc's
 * pthread_cleanup_push is the cleanup-attribute form: its handlers run only when the stack is
 * unwound (issue #17: the forced unwind of src/pthread/thread.c).  Run through ursa-run at 1 VP
 * (cm), 2 VPs and under cp-ts: threads cancelled in pthread_cond_wait and in nanosleep, and one
 * calling pthread_exit, each with two nested handlers, which must run innermost first; popped
 * handlers must not run.  Prints "unwind-c ok"; a failed check prints its line and exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); exit(1); } } while (0)

#ifndef __EXCEPTIONS
#error "build with -fexceptions: the test is of the cleanup-attribute form of pthread_cleanup_push"
#endif

static char trail[256];
static volatile int waiting;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void note(void *s) { strcat(trail, (const char *)s); strcat(trail, " "); }
static void unlock(void *mx) { pthread_mutex_unlock(mx); note("unlock"); }

static void on_ursa(void) {
  void *(*self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  CHECK(self != NULL && self() != NULL);
}

static void *in_cond(void *a) {
  on_ursa();
  pthread_cleanup_push(note, "outer1");
  pthread_cleanup_push(note, "popped1");
  pthread_cleanup_pop(0);
  pthread_mutex_lock(&m);
  pthread_cleanup_push(unlock, &m);
  waiting = 1;
  for (;;) pthread_cond_wait(&cv, &m);
  pthread_cleanup_pop(1);
  pthread_cleanup_pop(1);
  return a;
}

static void *in_sleep(void *a) {
  struct timespec d = { 100, 0 };
  on_ursa();
  pthread_cleanup_push(note, "outer2");
  pthread_cleanup_push(note, "inner2");
  waiting = 1;
  for (;;) nanosleep(&d, NULL);
  pthread_cleanup_pop(1);
  pthread_cleanup_pop(1);
  return a;
}

static void nested_exit(void) {
  pthread_cleanup_push(note, "inner3");
  pthread_exit((void *)(intptr_t)5);
  pthread_cleanup_pop(0);
}
static void *exits(void *a) {
  on_ursa();
  pthread_cleanup_push(note, "outer3");
  nested_exit();
  pthread_cleanup_pop(0);
  return a;
}

static void expect(const char *want) {
  if (strcmp(trail, want) != 0) {
    fprintf(stderr, "trail \"%s\", expected \"%s\"\n", trail, want);
    exit(1);
  }
  trail[0] = '\0';
  waiting = 0;
}

static void cancel_when_waiting(pthread_t t) {
  while (!waiting) sched_yield();
  pthread_mutex_lock(&m);                       /* (in_cond: in its wait once it let m go) */
  pthread_mutex_unlock(&m);
  for (int i = 0; i < 3; i++) sched_yield();
  CHECK(pthread_cancel(t) == 0);
}

int main(void) {
  pthread_t t;
  void *r;
  on_ursa();
  CHECK(pthread_create(&t, NULL, in_cond, NULL) == 0);
  cancel_when_waiting(t);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("unlock outer1 ");
  CHECK(pthread_mutex_trylock(&m) == 0);
  CHECK(pthread_mutex_unlock(&m) == 0);
  CHECK(pthread_create(&t, NULL, in_sleep, NULL) == 0);
  cancel_when_waiting(t);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  expect("inner2 outer2 ");
  CHECK(pthread_create(&t, NULL, exits, NULL) == 0);
  CHECK(pthread_join(t, &r) == 0 && r == (void *)(intptr_t)5);
  expect("inner3 outer3 ");
  printf("unwind-c ok\n");
  return 0;
}
