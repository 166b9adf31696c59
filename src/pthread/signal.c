/*
 * signal.c - POSIX signal semantics for ursa threads (issue #17): the program's handlers run
 * through the layer's trampoline, sem_post is async-signal-safe, a process-directed signal that
 * finds every thread waiting ends one interruptible wait with EINTR, pthread_kill runs the handler
 * in its target, and each thread has its own signal mask.
 *
 * Handlers.  sigaction and signal called by the program (not by libursa, whose
 * own signals, cp-ts's tick, the balancing tick, the crash and dump handlers, go to glibc as they
 * are) keep the program's action in acts[] and install the trampoline in the kernel with the
 * program's flags and mask (plus SA_SIGINFO); a query answers the program's action; SIG_DFL and
 * SIG_IGN go to the kernel as they are.  The trampoline saves errno and then:
 *   - if its VP runs an ursa thread of the program (ursa__vp_running: the handler interrupted it),
 *     that thread got the signal: unless the thread blocks it (its own mask, below), the handler
 *     runs now, with upt_sig_depth (this kernel thread's "inside a handler" count) raised, so
 *     that sem_post, sem_trywait and sem_getvalue take no lock of the layer or of ursa;
 *   - otherwise (the VP is idle: every thread waits; or the signal came to a kernel thread that is
 *     not running a program thread) the signal is recorded in `arrived` and the dispatcher is
 *     woken (a write to its eventfd, async-signal-safe).  The dispatcher delivers it to one thread
 *     in an interruptible wait of the layer that does not block it, main first (as Linux prefers
 *     the thread group leader), then the one that has waited longest: that thread runs the
 *     handler in its wait function, on its own stack, in normal context, and its wait ends with
 *     EINTR.  With no such thread the dispatcher runs the handler itself.
 *   A handler with SA_RESETHAND always runs at once (the kernel has reset the action already).
 *
 * Deferred posts.  sem_post inside a handler (sync.c: sem_post_deferred) adds the unit to the
 * semaphore's `deferred` count (an atomic that sem_trywait and sem_wait take from as from the
 * value; sem_getvalue counts it), and, when that count was 0, puts the semaphore in a free slot
 * of `pending` (1024 atomic pointers: compare-and-swap from NULL) and wakes the dispatcher, which
 * posts the units in normal context (waking waiters through ursa).  Any thread's next post, wait,
 * yield, condition signal or general mutex call flushes them too (upt_sig_poll), so that a VP
 * whose running thread never blocks does not hold them back behind it.  Should all 1024 slots be
 * taken at once, the unit stays counted (a wait takes it) but its waiter is woken only when the
 * semaphore is posted again: said once on stderr.
 *
 * The dispatcher.  An ursa thread of the layer, made at the first handler that an ursa thread
 * installs, detached, a daemon (ursa__daemon: it never keeps the process alive).  It waits in
 * ursa_read on the eventfd, which puts its VP's idle wait in the I/O engine, where the handler's
 * write wakes it.  Consequence: while it exists, a process whose threads all wait is not
 * reported as a deadlock under URSA_DEADLOCK=exit (a signal could still end the wait).  A
 * process signal no waiting thread takes (every thread runs, or waits where a signal does not
 * end the wait) runs its handler on the dispatcher, standing in for a thread that does not block
 * it; when every thread blocks it, it stays pending for the process until one unblocks it.
 *
 * pthread_kill(t, sig) with a handler of the program: to the caller, the signal is raised on its
 * kernel thread (the trampoline runs the handler at once); to another thread, sig is marked
 * pending in t's record (sig_pending) and, if t is in a wait of the layer that a signal may end
 * (sleeps, semaphore waits, condition waits, rwlock waits), the wait is ended as pthread_cancel
 * ends it (cur_wait / cur_sem): t runs its pending handlers in its wait function, then a sleep or
 * a semaphore wait returns EINTR, a condition wait returns 0 (a spurious wake-up), an rwlock wait
 * waits again.  A t that runs or is ready runs its pending handlers at its next sleep, wait,
 * sched_yield or pthread_sigmask; for a t in a mutex, barrier or join wait (a signal does not end
 * those) the dispatcher runs the handler, as for a process signal.  A mutex wait is not
 * registered under t's lock (its fast path stays free of it): once the program handles signals,
 * t publishes it in in_mwait before its last look at sig_pending (sync.c, mutex_park_signals),
 * and the sender reads in_mwait after it has made the signal pending, so one of them sees the
 * other.  Without a handler (SIG_DFL, SIG_IGN) the signal goes to the
 * process as before.
 *
 * Masks.  Each record keeps its own mask (sig_mask, 64 bits: signals 1..64); pthread_create gives
 * the new thread its creator's.  pthread_sigmask and sigprocmask from an ursa thread set the
 * record's mask and, as before, the VP's kernel thread's (so that a signal without a handler of
 * the program is still held by the kernel); they answer the record's.  A signal the record blocks
 * stays pending for the thread (sigpending reports it) until it unblocks it.
 *
 * Who calls what: the trampoline runs on any kernel thread; it touches only atomics, acts[] and
 * the eventfd.  upt_sig_* functions run on ursa threads in normal context.
 */
#include "upt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread int upt_sig_depth __attribute__((tls_model("initial-exec")));
int upt_sig_on;

/* The program's action per signal.  fn is atomic (read by the trampoline on any kernel thread):
 * NULL when the program has no handler of its own through the layer. */
static struct {
  void (*fn)(int, siginfo_t *, void *);
  int flags;                     /* the program's sa_flags                                       */
  sigset_t mask;
} acts[NSIG];
static uint32_t acts_lock;       /* sigaction against sigaction (never taken by the trampoline) */

static int efd = -1;             /* the dispatcher's eventfd; written once before any handler   */
static uint64_t arrived;         /* atomic: signals (bit sig-1) for the dispatcher to deliver     */
static uint64_t standin;         /* atomic: pthread_kill signals the dispatcher runs for their
                                    target (which could not take them in its wait)             */
static uint64_t proc_pending;    /* atomic: signals pending for the process: every thread that
                                    could take them blocks them (delivered at an unblock)      */
static int disp_state;           /* atomic: 0 none, 1 being made, 2 running                       */
static struct ursa__thread *disp_tok;   /* the dispatcher's ursa thread (atomic; read by the
                                           trampoline: a handler that interrupts it defers too) */

#define UPT_SIG_SLOTS 1024
static struct upt_sem *pending[UPT_SIG_SLOTS];   /* atomic pointers: semaphores with deferred posts */
static int overflow_said;

static inline uint64_t bit(int sig) { return sig >= 1 && sig <= 64 ? (uint64_t)1 << (sig - 1) : 0; }

/* Wakes the dispatcher (async-signal-safe: one write system call). */
static void bell(void) {
  uint64_t one = 1;
  if (efd >= 0) (void)syscall(SYS_write, efd, &one, sizeof one);
}

/* ---- deferred posts (the semaphores' side is in sync.c) ------------------------------------- */

void upt_sig_pend_sem(struct upt_sem *s) {
  unsigned i;
  for (i = 0; i < UPT_SIG_SLOTS; i++) {
    struct upt_sem *e = NULL;
    /* acq_rel: pairs with the dispatcher's exchange, which then sees the deferred count */
    if (__atomic_load_n(&pending[i], __ATOMIC_RELAXED) == NULL &&
        __atomic_compare_exchange_n(&pending[i], &e, s, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      __atomic_store_n(&upt_sig_work_flag, 1, __ATOMIC_RELEASE);
      bell();
      return;
    }
  }
  if (!__atomic_exchange_n(&overflow_said, 1, __ATOMIC_RELAXED)) {
    static const char m[] = "ursa-pthread: more than 1024 semaphores posted by signal handlers at once: "
                            "some posts wait for the next one\n";
    (void)syscall(SYS_write, 2, m, sizeof m - 1);
  }
  bell();
}

/* ---- running the program's handler ---------------------------------------------------------- */

static void run_handler(int sig, siginfo_t *si, void *uc) {
  void (*fn)(int, siginfo_t *, void *) = __atomic_load_n(&acts[sig].fn, __ATOMIC_ACQUIRE);
  siginfo_t local;
  if (fn == NULL) return;                       /* the program set SIG_DFL / SIG_IGN meanwhile */
  if (si == NULL) {
    memset(&local, 0, sizeof local);
    local.si_signo = sig;
    local.si_code = SI_TKILL;
    local.si_pid = getpid();
    si = &local;
  }
  fn(sig, si, uc);
}

/* Runs t's pending signals that it does not block, in normal context on t's own stack (t is the
 * caller).  A signal without a handler of the program (kept pending while blocked: raise) goes to
 * its kernel thread, for the kernel's action.  errno is kept. */
void upt_sig_deliver(struct upt_thread *me) {
  uint64_t p;
  int saved = errno;
  while ((p = __atomic_load_n(&me->sig_pending, __ATOMIC_ACQUIRE) & ~me->sig_mask) != 0) {
    int sig = __builtin_ctzll(p) + 1;
    if (!(__atomic_fetch_and(&me->sig_pending, ~bit(sig), __ATOMIC_ACQ_REL) & bit(sig))) continue;
    if (__atomic_load_n(&acts[sig].fn, __ATOMIC_ACQUIRE) != NULL) run_handler(sig, NULL, NULL);
    else (void)REAL(pthread_kill)(REAL(pthread_self)(), sig);
  }
  errno = saved;
}

/* The kernel's handler for every signal the program handles. */
static void trampoline(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  struct ursa__thread *run = ursa__vp_running();
  int flags = __atomic_load_n(&acts[sig].flags, __ATOMIC_RELAXED);
  struct upt_thread *t = run && run != __atomic_load_n(&disp_tok, __ATOMIC_RELAXED)
                            ? (struct upt_thread *)ursa__layer_self() : NULL;
  if (flags & SA_RESETHAND) {
    void (*fn)(int, siginfo_t *, void *) = __atomic_exchange_n(&acts[sig].fn, NULL, __ATOMIC_ACQ_REL);
    upt_sig_depth++;
    if (fn) fn(sig, si, uc);
    upt_sig_depth--;
  } else if ((t != NULL && !(t->sig_mask & bit(sig))) || __atomic_load_n(&efd, __ATOMIC_RELAXED) < 0) {
    /* the interrupted thread got it (or there is no dispatcher: the first handler was installed
     * by a kernel thread that ursa did not make, or its eventfd could not be had) */
    upt_sig_depth++;
    run_handler(sig, si, uc);
    upt_sig_depth--;
  } else if (t != NULL && si != NULL && si->si_code == SI_TKILL && si->si_pid == getpid()) {
    __atomic_or_fetch(&t->sig_pending, bit(sig), __ATOMIC_ACQ_REL);   /* its own, blocked */
  } else if (upt_sig_someone_takes(sig)) {      /* (lock-free) some thread could take it now */
    __atomic_or_fetch(&arrived, bit(sig), __ATOMIC_ACQ_REL);   /* the dispatcher picks a thread */
    bell();
  } else {
    __atomic_or_fetch(&proc_pending, bit(sig), __ATOMIC_ACQ_REL);   /* until a thread unblocks it */
  }
  errno = saved;
}

/* ---- the dispatcher ------------------------------------------------------------------------- */

/* Delivers sig, which arrived while no program thread ran: to a thread in an interruptible wait
 * (upt_sig_interrupt_one, thread.c), else here. */
static void deliver_arrived(int sig) {
  if (upt_sig_interrupt_one(sig)) return;
  run_handler(sig, NULL, NULL);   /* no thread waits: the dispatcher stands in (for a thread that
                                     did not block it when it arrived: the trampoline checked) */
}

/* The deferred posts: by the dispatcher, and by any thread at the layer's calls that post, wait
 * or yield (upt_sig_poll), so that a VP whose running thread never blocks (the dispatcher may
 * wait behind it) does not hold the posts back. */
int upt_sig_work_flag;

void upt_sig_work(void) {
  unsigned i;
  /* acq_rel: pairs with the handlers' release store of the flag after their slot or bit */
  if (!__atomic_exchange_n(&upt_sig_work_flag, 0, __ATOMIC_ACQ_REL)) return;
  for (i = 0; i < UPT_SIG_SLOTS; i++) {
      struct upt_sem *s;
      if (__atomic_load_n(&pending[i], __ATOMIC_RELAXED) == NULL) continue;
      s = __atomic_exchange_n(&pending[i], NULL, __ATOMIC_ACQ_REL);
      if (s) upt_sem_flush(s);
  }
}

static void *dispatcher(void *arg) {
  (void)arg;
  __atomic_store_n(&disp_tok, ursa__self_thread(), __ATOMIC_RELAXED);
  ursa__daemon();
  __atomic_store_n(&disp_state, 2, __ATOMIC_RELEASE);
  for (;;) {
    uint64_t v, a;
    (void)ursa_read(efd, &v, sizeof v);
    upt_sig_work();
    a = __atomic_exchange_n(&standin, 0, __ATOMIC_ACQ_REL);
    while (a) {
      int sig = __builtin_ctzll(a) + 1;
      a &= a - 1;
      run_handler(sig, NULL, NULL);
    }
    a = __atomic_exchange_n(&arrived, 0, __ATOMIC_ACQ_REL);
    while (a) {                                 /* signals that came while no thread ran */
      int sig = __builtin_ctzll(a) + 1;
      a &= a - 1;
      deliver_arrived(sig);
    }
  }
  return NULL;
}

/* Makes the dispatcher at the first handler installed by an ursa thread. */
static void dispatcher_start(void) {
  int z = 0;
  ursa_attr_t a;
  ursa_thread_t t;
  if (__atomic_load_n(&disp_state, __ATOMIC_ACQUIRE) != 0) return;
  if (!__atomic_compare_exchange_n(&disp_state, &z, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) {
    fprintf(stderr, "ursa-pthread: no eventfd for the signal dispatcher (%s): sem_post in a "
                    "signal handler will not wake its waiter\n", strerror(errno));
    return;
  }
  __atomic_store_n(&upt_sig_on, 1, __ATOMIC_RELEASE);
  ursa_attr_init(&a);
  ursa_attr_setdetached(&a, 1);
  ursa_attr_setname(&a, "upt-signals");
  if (ursa_create(&t, &a, dispatcher, NULL) != 0)
    fprintf(stderr, "ursa-pthread: cannot make the signal dispatcher\n");
  ursa_attr_destroy(&a);
}

/* ---- sigaction and its friends -------------------------------------------------------------- */

#define SIG_ENTER(ok)                                                                            \
  int ok = __atomic_load_n(&upt_booted, __ATOMIC_ACQUIRE) &&                                     \
           !upt_from_libursa(__builtin_return_address(0))

static int do_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  struct sigaction k;
  int rc;
  if (sig < 1 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP || (act == NULL && old == NULL))
    return REAL(sigaction)(sig, act, old);
  upt_spin_lock(&acts_lock);
  if (old) {
    if ((rc = REAL(sigaction)(sig, NULL, old)) != 0) { upt_spin_unlock(&acts_lock); return rc; }
    if (acts[sig].fn != NULL && old->sa_sigaction == trampoline) {
      old->sa_flags = acts[sig].flags;
      old->sa_mask = acts[sig].mask;
      if (acts[sig].flags & SA_SIGINFO) old->sa_sigaction = acts[sig].fn;
      else old->sa_handler = (void (*)(int))(void *)acts[sig].fn;
    }
  }
  if (act == NULL) { upt_spin_unlock(&acts_lock); return 0; }
  if (!(act->sa_flags & SA_SIGINFO) && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
    rc = REAL(sigaction)(sig, act, NULL);
    if (rc == 0) __atomic_store_n(&acts[sig].fn, NULL, __ATOMIC_RELEASE);
    upt_spin_unlock(&acts_lock);
    return rc;
  }
  acts[sig].flags = act->sa_flags;
  acts[sig].mask = act->sa_mask;
  __atomic_store_n(&acts[sig].fn, (act->sa_flags & SA_SIGINFO) ? act->sa_sigaction
                   : (void (*)(int, siginfo_t *, void *))(void *)act->sa_handler, __ATOMIC_RELEASE);
  k = *act;
  k.sa_sigaction = trampoline;
  k.sa_flags |= SA_SIGINFO;
  rc = REAL(sigaction)(sig, &k, NULL);
  upt_spin_unlock(&acts_lock);
  if (rc == 0 && ursa__self_thread() != NULL) dispatcher_start();
  return rc;
}

UPT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  SIG_ENTER(ok);
  if (!ok) return REAL(sigaction)(sig, act, old);
  return do_sigaction(sig, act, old);
}

/* signal() as glibc's (BSD semantics: SA_RESTART, the handler stays, the signal is blocked while
 * its handler runs). */
static sighandler_t set_handler(int sig, sighandler_t h, int flags) {
  struct sigaction a, o;
  memset(&a, 0, sizeof a);
  a.sa_handler = h;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  if (sig >= 1 && sig < NSIG) sigaddset(&a.sa_mask, sig);
  if (do_sigaction(sig, &a, &o) != 0) return SIG_ERR;
  return o.sa_handler;
}

UPT_EXPORT sighandler_t signal(int sig, sighandler_t h) {
  SIG_ENTER(ok);
  if (!ok) return REAL(signal)(sig, h);
  return set_handler(sig, h, SA_RESTART);
}


/* ---- masks ---------------------------------------------------------------------------------- */

static uint64_t set_bits(const sigset_t *s) {
  uint64_t b = 0;
  int sig;
  for (sig = 1; sig <= 64 && sig < NSIG; sig++)
    if (sigismember(s, sig) == 1) b |= bit(sig);
  return b & ~(bit(SIGKILL) | bit(SIGSTOP));
}

static void bits_set(uint64_t b, sigset_t *s) {
  int sig;
  sigemptyset(s);
  for (sig = 1; sig <= 64 && sig < NSIG; sig++)
    if (b & bit(sig)) sigaddset(s, sig);
}

/* The signals the program handles through the layer (bit sig-1). */
static uint64_t handled_bits(void) {
  uint64_t b = 0;
  int sig;
  for (sig = 1; sig <= 64 && sig < NSIG; sig++)
    if (__atomic_load_n(&acts[sig].fn, __ATOMIC_RELAXED) != NULL) b |= bit(sig);
  return b;
}

static int set_mask(struct upt_thread *me, int how, const sigset_t *set, sigset_t *old) {
  uint64_t was = me->sig_mask, b, p;
  int rc, sig;
  if (set != NULL && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK) return EINVAL;
  if (set != NULL && how != SIG_UNBLOCK) {
    /* The kernel blocks only the signals the program does not handle (their default action or
     * SIG_IGN is the kernel's): the trampoline honours each thread's mask for the others. */
    sigset_t k = *set;
    uint64_t h = handled_bits();
    for (sig = 1; sig <= 64 && sig < NSIG; sig++)
      if (h & bit(sig)) sigdelset(&k, sig);
    rc = REAL(pthread_sigmask)(how, &k, NULL);
  } else {
    rc = REAL(pthread_sigmask)(how, set, NULL);
  }
  if (rc != 0) return rc;
  if (old) bits_set(was, old);
  if (set == NULL) return 0;
  b = set_bits(set);
  me->sig_mask = how == SIG_BLOCK ? was | b : how == SIG_UNBLOCK ? was & ~b : b;
  /* the process's pending signals this thread now takes */
  if ((p = __atomic_load_n(&proc_pending, __ATOMIC_ACQUIRE) & ~me->sig_mask) != 0) {
    p = __atomic_fetch_and(&proc_pending, ~p, __ATOMIC_ACQ_REL) & p;
    __atomic_or_fetch(&me->sig_pending, p, __ATOMIC_ACQ_REL);
  }
  if (upt_sig_ready(me)) upt_sig_deliver(me);
  return 0;
}

UPT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self();
  if (me == NULL) return REAL(pthread_sigmask)(how, set, old);
  return set_mask(me, how, set, old);
}

UPT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self();
  int rc;
  if (me == NULL) return REAL(sigprocmask)(how, set, old);
  if ((rc = set_mask(me, how, set, old)) != 0) return upt_errno(rc);
  return 0;
}

UPT_EXPORT int sigpending(sigset_t *set) {
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self();
  sigset_t k;
  int sig;
  if (me == NULL) return REAL(sigpending)(set);
  if (REAL(sigpending)(&k) != 0) return -1;
  bits_set(__atomic_load_n(&me->sig_pending, __ATOMIC_ACQUIRE) |
           __atomic_load_n(&proc_pending, __ATOMIC_ACQUIRE), set);
  for (sig = 1; sig < NSIG; sig++)
    if (sigismember(&k, sig) == 1) sigaddset(set, sig);
  return 0;
}

/* ---- pthread_kill --------------------------------------------------------------------------- */

/* Whether the program handles sig through the layer. */
int upt_sig_handled(int sig) {
  return sig >= 1 && sig <= 64 && sig < NSIG && __atomic_load_n(&acts[sig].fn, __ATOMIC_ACQUIRE) != NULL;
}

/* pthread_kill(me, sig) and raise(sig) from an ursa thread: pending while me blocks sig, else
 * raised on its kernel thread (the trampoline runs the handler at once). */
int upt_sig_self(struct upt_thread *me, int sig) {
  int e;
  if (me->sig_mask & bit(sig)) {
    __atomic_or_fetch(&me->sig_pending, bit(sig), __ATOMIC_ACQ_REL);
    return 0;
  }
  e = REAL(pthread_kill)(REAL(pthread_self)(), sig);
  upt_sig_poll();                               /* the posts its handler deferred */
  return e;
}

UPT_EXPORT int raise(int sig) {
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self();
  int e;
  if (me == NULL || sig < 1 || sig >= NSIG) return REAL(raise)(sig);
  if ((e = upt_sig_self(me, sig)) != 0) return upt_errno(e);
  return 0;
}

/* pthread_kill(t, sig) from me to another thread t, sig handled by the program. */
int upt_sig_kill(struct upt_thread *me, struct upt_thread *t, int sig) {
  int r, i;
  (void)me;
  /* seq_cst: pairs with upt_park's load after it registered its wait */
  __atomic_or_fetch(&t->sig_pending, bit(sig), __ATOMIC_SEQ_CST);
  if (t->sig_mask & bit(sig)) return 0;         /* pending until t unblocks it */
  r = upt_sig_interrupt(t, bit(sig));
  /* t runs or is ready (or, with several VPs, is on its way into a wait, where its state is not
   * BLOCKED yet): let it go on a little, a few times, before leaving the signal pending for its
   * next wait or call.  A thread in a mutex wait (in_mwait, seq_cst: pairs with
   * mutex_park_signals in sync.c, after the or above) is handed to the stand-in at once. */
  for (i = 0; r == 0 && i < 64 && !ursa__thread_blocked(t->tok) &&
              !__atomic_load_n(&t->in_mwait, __ATOMIC_SEQ_CST); i++) {
    (void)ursa_yield();
    if (!(__atomic_load_n(&t->sig_pending, __ATOMIC_SEQ_CST) & bit(sig))) return 0;   /* taken */
    r = upt_sig_interrupt(t, bit(sig));
  }
  if (r > 0) return 0;                          /* t runs the handler in its wait */
  if (r == 0 && !ursa__thread_blocked(t->tok) && !__atomic_load_n(&t->in_mwait, __ATOMIC_SEQ_CST))
    return 0;                                   /* at its next wait or call */
  /* t waits where a signal does not end the wait (a mutex, a barrier, a join): the dispatcher
   * runs the handler for it (unless t took the signal meanwhile) */
  if (__atomic_fetch_and(&t->sig_pending, ~bit(sig), __ATOMIC_SEQ_CST) & bit(sig)) {
    __atomic_or_fetch(&standin, bit(sig), __ATOMIC_ACQ_REL);
    bell();
  }
  return 0;
}
