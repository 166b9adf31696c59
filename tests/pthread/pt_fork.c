/*
 * pt_fork.c - fork in a POSIX-threads program at 1 VP (issue #17: src/pthread/boot.c's fork
 * handler, src/sched/forget.c): the child has the calling thread only.  tests/CMakeLists.txt runs
 * it through ursa-run at 1 VP under cm and cp-ts: pt_fork main (main forks) or pt_fork thread
 * (a created thread forks, so main is among the threads the child does not have).
 *
 * Ten threads are busy when the fork comes: four blocked on a mutex the forker holds (each
 * would count in `counter` once it has it), three that count in `ticks` between short sleeps,
 * one in a condition wait, one in sem_wait and one in a read of a pipe (each would count in
 * `woken`).  The child checks that none of them ever runs: it unlocks the mutex (which it then
 * takes at once: no thread was handed it), broadcasts the condition, posts the semaphore (and
 * takes the unit back: nobody took it), writes the pipe and sleeps; the counters stay put, a
 * join of a thread that is gone answers ESRCH at once, and its own pthread_exit ends the child
 * with status 0.  The parent checks that status and that its own threads still run.
 * Prints "fork ok" when every check holds; a failed check prints its line and exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { \
  fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, a_, b_); exit(1); } } while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem, started;
static int pfd[2];
static volatile int counter, ticks, woken, stop, go;

static void *locker(void *a) {
  CHECK_EQ(sem_post(&started), 0);
  CHECK_EQ(pthread_mutex_lock(&m), 0);
  counter++;
  CHECK_EQ(pthread_mutex_unlock(&m), 0);
  return a;
}
static void *ticker(void *a) {
  CHECK_EQ(sem_post(&started), 0);
  while (!stop) { ticks++; usleep(500); }
  return a;
}
static void *cond_waiter(void *a) {
  CHECK_EQ(pthread_mutex_lock(&cm), 0);
  CHECK_EQ(sem_post(&started), 0);
  while (!go) CHECK_EQ(pthread_cond_wait(&cv, &cm), 0);
  woken++;
  CHECK_EQ(pthread_mutex_unlock(&cm), 0);
  return a;
}
static void *sem_waiter(void *a) {
  CHECK_EQ(sem_post(&started), 0);
  CHECK_EQ(sem_wait(&sem), 0);
  woken++;
  return a;
}
static void *reader(void *a) {
  char c;
  CHECK_EQ(sem_post(&started), 0);
  CHECK_EQ(read(pfd[0], &c, 1), 1);
  woken++;
  return a;
}

static pthread_t ts[10];

/* The child: runs in the thread that forked; never returns. */
static void child(void) {
  int c0 = counter, t0 = ticks, w0 = woken;
  struct timespec d = { 0, 20 * 1000000L };
  void *r;
  CHECK_EQ(pthread_mutex_unlock(&m), 0);
  CHECK_EQ(pthread_mutex_trylock(&m), 0);                      /* no gone locker was handed it */
  CHECK_EQ(pthread_mutex_lock(&cm), 0);
  go = 1;
  CHECK_EQ(pthread_cond_broadcast(&cv), 0);
  CHECK_EQ(pthread_mutex_unlock(&cm), 0);
  CHECK_EQ(sem_post(&sem), 0);
  CHECK_EQ(sem_trywait(&sem), 0);                              /* the unit went to nobody */
  CHECK_EQ(sem_post(&sem), 0);
  CHECK_EQ(write(pfd[1], "x", 1), 1);
  for (int i = 0; i < 5; i++) { sched_yield(); CHECK_EQ(nanosleep(&d, NULL), 0); }
  CHECK_EQ(counter, c0);
  CHECK_EQ(ticks, t0);
  CHECK_EQ(woken, w0);
  CHECK_EQ(pthread_join(ts[0], &r), ESRCH);                    /* gone: answered at once */
  CHECK_EQ(pthread_cancel(ts[4]), ESRCH);
  printf("child ok\n");
  fflush(stdout);
  pthread_exit(NULL);                                          /* the last thread: status 0 */
}

static sem_t fork_now;

/* Holds m (the lockers wait for it), forks, and in the parent lets m go once the child is done. */
static void *forker(void *a) {
  pid_t pid;
  int st;
  if (a != NULL) {                                             /* a thread of its own */
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    CHECK_EQ(sem_post(&started), 0);
    CHECK_EQ(sem_wait(&fork_now), 0);
  }
  fflush(NULL);
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) child();
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  CHECK_EQ(pthread_mutex_unlock(&m), 0);
  return NULL;
}

int main(int argc, char **argv) {
  void *(*self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  int from_thread = argc == 2 && strcmp(argv[1], "thread") == 0;
  pthread_t f;
  CHECK(self != NULL && self() != NULL);
  if (argc != 2 || (!from_thread && strcmp(argv[1], "main") != 0)) {
    fprintf(stderr, "usage: pt_fork main|thread\n");
    return 2;
  }
  CHECK_EQ(sem_init(&sem, 0, 0), 0);
  CHECK_EQ(sem_init(&started, 0, 0), 0);
  CHECK_EQ(sem_init(&fork_now, 0, 0), 0);
  CHECK_EQ(pipe(pfd), 0);
  if (from_thread) {
    CHECK_EQ(pthread_create(&f, NULL, forker, &f), 0);
    CHECK_EQ(sem_wait(&started), 0);
  } else {
    CHECK_EQ(pthread_mutex_lock(&m), 0);
  }
  for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&ts[i], NULL, locker, NULL), 0);
  for (int i = 4; i < 7; i++) CHECK_EQ(pthread_create(&ts[i], NULL, ticker, NULL), 0);
  CHECK_EQ(pthread_create(&ts[7], NULL, cond_waiter, NULL), 0);
  CHECK_EQ(pthread_create(&ts[8], NULL, sem_waiter, NULL), 0);
  CHECK_EQ(pthread_create(&ts[9], NULL, reader, NULL), 0);
  for (int i = 0; i < 10; i++) CHECK_EQ(sem_wait(&started), 0);
  for (int i = 0; i < 10; i++) sched_yield();                  /* (the lockers reach the lock) */
  if (from_thread) {
    CHECK_EQ(sem_post(&fork_now), 0);
    CHECK_EQ(pthread_join(f, NULL), 0);
  } else {
    forker(NULL);
  }
  /* the parent's threads are all there */
  CHECK_EQ(pthread_mutex_lock(&cm), 0);
  go = 1;
  CHECK_EQ(pthread_cond_broadcast(&cv), 0);
  CHECK_EQ(pthread_mutex_unlock(&cm), 0);
  CHECK_EQ(sem_post(&sem), 0);
  CHECK_EQ(write(pfd[1], "y", 1), 1);
  stop = 1;
  for (int i = 0; i < 10; i++) CHECK_EQ(pthread_join(ts[i], NULL), 0);
  CHECK_EQ(counter, 4);
  CHECK_EQ(woken, 3);
  printf("fork ok\n");
  return 0;
}
