/*
 * dumpsig.c - URSA_DUMP_SIGNAL: a signal that prints every ursa thread (ursa_dump's listing, with
 * backtraces and wait-for cycles) to stderr, for a program that hangs.
 *
 *   URSA_DUMP_SIGNAL=USR1 | SIGUSR2 | RTMIN+3 | <number>      then: kill -USR1 <pid>
 *
 * Protocol.  ursa_init (opt-in, the variable set) starts one kernel thread, "ursa-dump", with every
 * signal blocked, that sleeps in sem_wait on a POSIX semaphore; the signal's handler only posts
 * that semaphore (sem_post is async-signal-safe), so the signal may arrive on any kernel thread,
 * at any instruction.  The dump thread then prints from outside the VPs: it works when every VP
 * sleeps (a deadlock that the timers keep from being reported), and when a thread spins without
 * ever reaching ursa.  It reads the thread table as ursa_dump does with several VPs: a snapshot
 * while the VPs run on; running threads are listed without a backtrace, and a thread resumed
 * while its stack is read is flagged.  ursa_fini restores the previous handler, then stops and
 * joins the thread.
 *
 * Refused (a warning, and no dump signal): a signal ursa itself uses (SIGSEGV and SIGBUS for stack
 * overflow reports, cp-ts's SIGRTMIN+4), SIGKILL and SIGSTOP, and values that are not a signal.
 * In the child of a fork the thread is gone (it stayed in the parent): the signal does nothing
 * there.  Called by ursa_init, ursa_fini and the fork handler only.
 */
#define _GNU_SOURCE
#include "runtime.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct {
  int              sig;        /* 0: off */
  sem_t            bell;       /* posted by the handler, and by stop */
  pthread_t        thread;
  int              stop;       /* atomic: stop asks the thread to end; pairs with its acquire load */
  int              gone;       /* the child of a fork: the thread stayed in the parent */
  struct sigaction old;
} ds;

/* "USR1", "SIGUSR1", "RTMIN+3", "12" -> the signal number, or 0 when it is none. */
static int parse_signal(const char *v) {
  char *end;
  long n;
  int i;
  if (strncasecmp(v, "SIG", 3) == 0) v += 3;
  if (strncasecmp(v, "RTMIN", 5) == 0) {
    n = v[5] == '\0' ? 0 : (v[5] == '+' ? strtol(v + 6, &end, 10) : -1);
    if (n < 0 || (v[5] == '+' && (*end != '\0' || end == v + 6)) || SIGRTMIN + n > SIGRTMAX) return 0;
    return SIGRTMIN + (int)n;
  }
  for (i = 1; i < SIGRTMIN; i++) {           /* the classic signals by name (glibc's table) */
    const char *name = sigabbrev_np(i);
    if (name && strcasecmp(v, name) == 0) return i;
  }
  if (!isdigit((unsigned char)*v)) return 0;
  n = strtol(v, &end, 10);
  return *end == '\0' && n > 0 && n <= SIGRTMAX ? (int)n : 0;
}

static void on_signal(int sig) {
  int e = errno;                             /* sem_post may set it: the interrupted code's errno */
  URSA_UNUSED(sig);
  sem_post(&ds.bell);
  errno = e;
}

static void *dump_main(void *arg) {
  URSA_UNUSED(arg);
  for (;;) {
    while (sem_wait(&ds.bell) != 0) {}     /* EINTR: again */
    if (__atomic_load_n(&ds.stop, __ATOMIC_ACQUIRE)) return NULL;
    ursa__dump_all(stderr, NULL, NULL);
  }
}

void ursa__dumpsig_start(void) {
  const char *v = getenv("URSA_DUMP_SIGNAL");
  struct sigaction sa;
  sigset_t all, old;
  int sig, err;
  if (v == NULL || *v == '\0') return;
  sig = parse_signal(v);
  if (sig == 0 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
      sig == SIGRTMIN + 4) {
    fprintf(stderr, "ursa: ignoring URSA_DUMP_SIGNAL=%s: %s\n", v,
            sig == 0 ? "not a signal (USR1, SIGUSR2, RTMIN+n or a number)"
                     : "a signal that cannot be caught or that ursa uses itself");
    return;
  }
  if (sem_init(&ds.bell, 0, 0) != 0) return;
  ds.stop = 0;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  /* the dump thread is born with every signal blocked */
  err = pthread_create(&ds.thread, NULL, dump_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    fprintf(stderr, "ursa: URSA_DUMP_SIGNAL: no dump thread (%s); the signal is not handled\n", strerror(err));
    sem_destroy(&ds.bell);
    return;
  }
  pthread_setname_np(ds.thread, "ursa-dump");
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &ds.old);
  ds.sig = sig;
}

void ursa__dumpsig_stop(void) {
  if (ds.sig == 0) return;
  sigaction(ds.sig, &ds.old, NULL);          /* no post can come from here on */
  ds.sig = 0;
  if (!ds.gone) {
    __atomic_store_n(&ds.stop, 1, __ATOMIC_RELEASE);
    sem_post(&ds.bell);
    pthread_join(ds.thread, NULL);
  }
  ds.gone = 0;
  sem_destroy(&ds.bell);
}

/* In the child of a fork: the dump thread stayed in the parent.  The handler stays (it only posts
 * the semaphore), so the signal does nothing in the child, and ursa_fini joins no thread. */
void ursa__dumpsig_atfork_child(void) {
  if (ds.sig != 0) ds.gone = 1;
}
