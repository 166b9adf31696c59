/*
 * gdb_target.c - the program tests/gdb_check.sh drives gdb on (issue #7, point 2).
 *
 * It makes named ursa threads parked in known places, each behind a known call chain
 * (<kind>_level1 -> <kind>_level2 -> <kind>_level3 -> the blocking call):
 *
 *   id name          state     waits on
 *    1 main          blocked   ursa_join on thread 8 (stopper), in main_wait <- main
 *    2 sem-waiter    blocked   ursa_sem_wait on g_sem
 *    3 mutex-waiter  blocked   ursa_mutex_lock on g_mutex (main holds it)
 *    4 sleeper       blocked   ursa_sleep_ns (an hour)
 *    5 joiner        blocked   ursa_join on thread 4 (sleeper)
 *    6 yielder       ready     -            (loops on ursa_yield)
 *    7 finished      finished  -            (returned, not joined)
 *    8 stopper       running   -            (stop_level1 -> gdb_target_stopped, where gdb breaks)
 *
 * Run alone, the program just ends: the stopper returns, main joins it and exits with the others
 * still parked (which ursa allows).  The level functions are noinline and do work after their
 * call, and the file is built with -fno-optimize-sibling-calls, so no frame is inlined or
 * tail-called away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ursa.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static ursa_sem_t   g_sem;
static ursa_mutex_t g_mutex;
static ursa_thread_t g_sleeper;
static volatile int g_sink;

static void check(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "gdb_target: %s: %s\n", what, ursa_strerror(rc));
    exit(2);
  }
}

/* Where gdb breaks: every thread but main is parked. */
NOINLINE void gdb_target_stopped(void);
NOINLINE void gdb_target_stopped(void) { BARRIER(); g_sink++; }

/* ---- the chains ---------------------------------------------------------------------------------- */
#define CHAIN(kind, blocking_call)                                                                 \
  static NOINLINE int kind##_level3(int x) { int r = (blocking_call); BARRIER(); g_sink += x; return r; } \
  static NOINLINE int kind##_level2(int x) { int r = kind##_level3(x + 1); BARRIER(); g_sink += r; return r; } \
  static NOINLINE int kind##_level1(int x) { int r = kind##_level2(x + 1); BARRIER(); g_sink += r; return r; } \
  static void *kind##_thread(void *arg) { int r = kind##_level1((int)(intptr_t)arg); BARRIER(); return (void *)(intptr_t)r; }

CHAIN(sem, ursa_sem_wait(&g_sem))
CHAIN(mutex, ursa_mutex_lock(&g_mutex))
CHAIN(sleep, ursa_sleep_ns(3600ull * 1000000000ull))
CHAIN(join, ursa_join(g_sleeper, NULL))

static void *yield_thread(void *arg) {
  (void)arg;
  for (;;) check(ursa_yield(), "ursa_yield");
  return NULL;
}

static void *finished_thread(void *arg) { return arg; }

/* Lets every other thread reach its parking place (the yielder's yields fire this sleep's timer),
 * then stops where gdb breaks. */
static NOINLINE int stop_level1(int x) {
  check(ursa_sleep_ns(1000000), "ursa_sleep_ns");
  gdb_target_stopped();
  BARRIER();
  return x;
}
static void *stop_thread(void *arg) { int r = stop_level1((int)(intptr_t)arg); BARRIER(); return (void *)(intptr_t)r; }

static NOINLINE int main_wait(ursa_thread_t t) { int r = ursa_join(t, NULL); BARRIER(); g_sink++; return r; }

static ursa_thread_t spawn(const char *name, void *(*fn)(void *)) {
  ursa_attr_t a;
  ursa_thread_t t;
  check(ursa_attr_init(&a), "ursa_attr_init");
  check(ursa_attr_setname(&a, name), "ursa_attr_setname");
  check(ursa_create(&t, &a, fn, NULL), "ursa_create");
  check(ursa_attr_destroy(&a), "ursa_attr_destroy");
  return t;
}

int main(void) {
  ursa_thread_t stopper;
  check(ursa_init(NULL), "ursa_init");
  check(ursa_sem_init(&g_sem, 0), "ursa_sem_init");
  check(ursa_mutex_init(&g_mutex, URSA_MUTEX_NORMAL), "ursa_mutex_init");
  check(ursa_mutex_lock(&g_mutex), "ursa_mutex_lock");
  (void)spawn("sem-waiter", sem_thread);
  (void)spawn("mutex-waiter", mutex_thread);
  g_sleeper = spawn("sleeper", sleep_thread);
  (void)spawn("joiner", join_thread);
  (void)spawn("yielder", yield_thread);
  (void)spawn("finished", finished_thread);
  stopper = spawn("stopper", stop_thread);
  check(main_wait(stopper), "ursa_join");
  printf("gdb_target: done\n");
  fflush(stdout);
  exit(0);
}
