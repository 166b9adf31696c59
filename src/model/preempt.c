/*
 * preempt.c - cp-ts, preemption by time-slicing (the journal paper's SRTS).
 *
 * Protocol
 *   Each VP has its own POSIX timer on CLOCK_MONOTONIC, periodic with the quantum, delivering
 *   URSA__PREEMPT_SIGNAL (a real-time signal, never SIGALRM) to that VP's kernel thread alone
 *   (SIGEV_THREAD_ID).  The handler runs on the interrupted thread's stack, on that kernel thread:
 *     1. A tick that finds vp->stats.switches changed since the previous tick only records it: the
 *        running thread started within this quantum.  So a thread runs one to two quanta.
 *     2. Otherwise the thread has run a whole quantum.  It is switched out right in the handler
 *        when the interrupted point is safe:
 *          - the program counter is in the main executable's code and not in ursa's (section
 *            ursa_text, see cmake/ursa_text.ld): never inside ursa (whose locks and per-VP state
 *            may be mid-update), libc (malloc's and stdio's locks belong to the kernel thread),
 *            the vDSO, the dynamic loader or any other shared library;
 *          - the thread has not disabled preemption (ursa_preempt_disable);
 *          - the stack pointer is on the thread's own ursa stack, and the interrupted signal mask
 *            is the VP's usual one (not inside another signal's handler).  On another stack (a
 *            handler on a sigaltstack, e.g. a crash report) ticks back off for 100 quanta, so
 *            that their signal frames do not pile up there.
 *        The switch is ursa__preempt_switch: a yield that keeps the thread on this VP.  When it
 *        is resumed, the handler returns and sigreturn restores every register, as for any signal.
 *     3. At an unsafe point the preemption is deferred (vp->pre_pending): it is taken at the next
 *        safe point, that is the next ursa_tick, ursa_preempt_enable, or ursa call that posts,
 *        unlocks, signals or creates (model.h: ursa__preempt_point), or the next tick that finds
 *        the thread in its own code, which comes after a quarter of a quantum (retry_soon); a
 *        switch for any other reason cancels it.
 *   SA_RESTART: interrupted system calls restart (those Linux restarts, see signal(7)).
 *   The tick is blocked while its handler runs, so ticks never nest (a tick that came during the
 *   handler's system calls would otherwise start another handler on top, and under CPU
 *   starvation that recursion overflowed the stack: found by a 10-minute run).  The handler
 *   unblocks it just before it switches the thread out, so the next thread runs with ticks on;
 *   a tick taken then finds the PC inside ursa and only defers (one level at most).  When the
 *   preempted thread resumes, sigreturn restores its own mask.
 *   A VP that waits in the kernel has its timer disarmed by the first tick that finds it waiting, and
 *   rearmed when it wakes (ursa__sigtimer_idle): short waits cost no system call.
 *
 * Where it cannot be safe, ursa_init refuses cp-ts (-ENOTSUP, with the reason on stderr): in a
 * ThreadSanitizer build (TSan runs handlers later, from inside its own interceptors), and when
 * malloc is not in a shared library (a static executable, or a sanitizer runtime linked into it),
 * because then libc's code cannot be told from the program's.
 *
 * Who calls what: the ursa__ts_* functions run on the VP's own kernel thread (install/uninstall
 * on VP 0's, from ursa_init and ursa_fini); the handler only on the thread its timer targets.
 */
#define _GNU_SOURCE
#include "model.h"
#include "../sched/sched_smp.h"
#include "../sched/policy.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ursa's own code: the bounds of section ursa_text (cmake/ursa_text.ld gathers every .text of
 * ursa's objects there).  Weak: a build that skipped that step refuses cp-ts when ursa's code is
 * inside the executable (as a shared library ursa is outside it anyway). */
extern const char ursa__text_lo[] __attribute__((weak, visibility("hidden")));
extern const char ursa__text_hi[] __attribute__((weak, visibility("hidden")));

#define MAX_RANGES 8
static struct { uintptr_t lo, hi; } exe[MAX_RANGES];   /* the executable's code, set by check */
static unsigned nexe;
static uintptr_t ursa_lo, ursa_hi;

static inline bool in_exe(uintptr_t pc) {
  for (unsigned i = 0; i < nexe; i++)
    if (pc - exe[i].lo < exe[i].hi - exe[i].lo) return true;
  return false;
}

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg) {
  URSA_UNUSED(size);
  URSA_UNUSED(arg);
  nexe = 0;
  for (int i = 0; i < info->dlpi_phnum && nexe < MAX_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    exe[nexe].lo = info->dlpi_addr + ph->p_vaddr;
    exe[nexe].hi = exe[nexe].lo + ph->p_memsz;
    nexe++;
  }
  return 1;                                   /* the first object is the executable: stop */
}

/* Whether safe points can be told here (the code ranges above are then set); NULL when they can,
 * else why not.  Shared by cp-ts and the rotator's interval timer. */
static const char *unsafe_here(void) {
  void *m;
#if URSA_TSAN
  return "ThreadSanitizer runs signal handlers only from its own interceptors, where "
         "switching threads is not safe";
#endif
  dl_iterate_phdr(find_exe, NULL);
  if (nexe == 0) return "the executable's code was not found";
  if (ursa__text_lo != NULL && ursa__text_hi != NULL) {
    ursa_lo = (uintptr_t)ursa__text_lo;
    ursa_hi = (uintptr_t)ursa__text_hi;
  } else if (in_exe((uintptr_t)&ursa__ts_check)) {             /* any function of ursa */
    return "ursa's code is inside the executable but its section ursa_text is missing";
  }
  m = dlsym(RTLD_DEFAULT, "malloc");
  if (m == NULL || in_exe((uintptr_t)m))
    return "malloc is linked into the executable (a static executable, or a sanitizer "
           "runtime linked statically), so libc's code cannot be told from the program's";
  return NULL;
}


/* ---- the handler ------------------------------------------------------------------------------ */

static inline void pc_sp(const ucontext_t *uc, uintptr_t *pc, uintptr_t *sp) {
#if defined(__x86_64__)
  *pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  *sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  *pc = (uintptr_t)uc->uc_mcontext.pc;
  *sp = (uintptr_t)uc->uc_mcontext.sp;
#else
#  error "preempt.c: unsupported architecture"
#endif
}

#if defined(URSA_DEBUG) && !defined(URSA_CONTEXT_UCONTEXT)
/* Debug builds, several VPs: a signal taken inside the switch before it moved the stack pointer to
 * the resumed thread's stack must find the suspended thread's on-CPU byte still set.  The switch
 * (src/arch/) clears it only after the move: once it is 0 another VP may resume that thread on
 * its stack, and a signal taken while the stack pointer is still there has the kernel write the
 * signal's frame into the stack the other VP is running on (issue #22: the two corrupt each
 * other, and a VP resumed a wrong context or jumped to 0).  The first argument register holds
 * `from` (the thread, its context at URSA__CTX_BASE) until the move. */
extern const char ursa__ctx_switch_moved[] __attribute__((visibility("hidden")));
static void check_switch_window(const struct ursa__vp *vp, const ucontext_t *uc) {
  uintptr_t pc, sp, from;
  pc_sp(uc, &pc, &sp);
  if (vp->mode != URSA__SMPMODE || pc - (uintptr_t)&ursa__ctx_switch >=
                  (uintptr_t)ursa__ctx_switch_moved - (uintptr_t)&ursa__ctx_switch)
    return;
#if defined(__x86_64__)
  from = (uintptr_t)uc->uc_mcontext.gregs[REG_RDI];
#else
  from = (uintptr_t)uc->uc_mcontext.regs[0];
#endif
  if (__atomic_load_n(ursa__ctx_oncpu(ursa__ctx_of((void *)from)), __ATOMIC_RELAXED) == 0)
    URSA_PANIC("a signal was taken on the stack of a thread that the switch had already released");
}
#else
#  define check_switch_window(vp, uc) ((void)0)
#endif

static sigset_t base_mask;                    /* VP 0's mask at ursa_init (every VP inherits it) */
static sigset_t tick_set;                     /* { URSA__PREEMPT_SIGNAL } */

enum { SAFE, UNSAFE, ELSEWHERE };
/* SAFE, UNSAFE (wait for a safe point), or ELSEWHERE: the thread runs on some other stack, as a
 * signal handler on a sigaltstack does (a crash report, say): ticks would nest there. */
static int safe_point(const struct ursa__thread *t, const ucontext_t *uc) {
  uintptr_t pc, sp;
  pc_sp(uc, &pc, &sp);
  if (!t->own_stack && sp - (uintptr_t)t->stack_lo >= t->stack_size) return ELSEWHERE;
  if (t->preempt_off) return UNSAFE;
  if (!in_exe(pc) || pc - ursa_lo < ursa_hi - ursa_lo) return UNSAFE;
  return memcmp(&uc->uc_sigmask, &base_mask, sizeof(unsigned long)) == 0 ? SAFE : UNSAFE;
}

static void sigtimer_set(struct ursa__vp *vp, int kind, uint64_t first);
static bool asleep_tick(struct ursa__vp *vp, int kind);

/* A deferred preemption: the next tick comes after a quarter of the quantum (at least 25 us)
 * instead of a whole one, so a thread that spends most of its time in libc is still caught in
 * its own code soon. */
static void retry_soon(struct ursa__vp *vp) {
  uint64_t q4 = ursa__g.quantum_ns / 4;
  sigtimer_set(vp, URSA__SIGTIMER_TS, q4 < 25000 ? 25000 : q4);
}

/* The thread runs on another stack (a handler on a sigaltstack): every tick would push a signal
 * frame there, and a long handler (ASan's report) would overflow it.  Tick again only after 100
 * quanta, and at least 100 ms. */
static void back_off(struct ursa__vp *vp) {
  uint64_t q = ursa__g.quantum_ns * 100;
  sigtimer_set(vp, URSA__SIGTIMER_TS, q < 100000000u ? 100000000u : q);
}

/* Whether another thread might run on vp: its queues, or a timer that may have expired.  Reads
 * counts only (the handler may have interrupted ursa in the middle of changing them). */
static bool others_waiting(struct ursa__vp *vp) {
  if (__atomic_load_n(&vp->ntimers, __ATOMIC_RELAXED) != 0) return true;
  return (vp->mode == URSA__SMPMODE) ? ursa__smp_has_work(vp) : !ursa__runq_empty(vp);
}

static void on_tick(int sig, siginfo_t *si, void *ucv) {
  ucontext_t *uc = ucv;
  struct ursa__vp *vp = ursa__tls_vp, *now;
  struct ursa__thread *t;
  uint64_t sw;
  int saved;
  URSA_UNUSED(sig);
  if (vp != NULL) check_switch_window(vp, uc);
  if (vp == NULL || !(vp->timers_on & (1u << URSA__SIGTIMER_TS)) || si->si_code != SI_TIMER ||
      !__atomic_load_n(&ursa__g.preempt_live, __ATOMIC_RELAXED) || asleep_tick(vp, URSA__SIGTIMER_TS))
    return;
  saved = *vp->errno_p;
  sw = __atomic_load_n(&vp->stats.switches, __ATOMIC_RELAXED);
  if (sw != vp->pre_sw) { vp->pre_sw = sw; return; }   /* began within this quantum */
  t = vp->cur;
  if (vp->x && t == vp->x->idle) return;
  switch (safe_point(t, uc)) {
  case ELSEWHERE:
    back_off(vp);
    return;
  case UNSAFE:
    if (!others_waiting(vp)) return;          /* nothing else would run: owe nothing */
    vp->stats.preempt_deferred++;
    ursa__pending_set(vp, 1);
    retry_soon(vp);
    return;
  default:
    break;
  }
  ursa__pending_set(vp, 0);
  pthread_sigmask(SIG_UNBLOCK, &tick_set, NULL);   /* the next thread runs with ticks on */
  now = ursa__preempt_switch(vp, false);             /* the same VP, unless t's region moved */
  if (now != vp) sigaltstack(NULL, &uc->uc_stack);   /* sigreturn installs uc_stack: keep now's */
  *now->errno_p = saved;
}

/* ---- the per-VP signal timers ------------------------------------------------------------------
 * cp-ts's tick and the rotator's interval timer are one facility with two kinds: each kind has a
 * signal, a handler that runs only at safe points (safe_point above), a period, and on each VP a
 * CLOCK_MONOTONIC timer aimed at that VP's kernel thread, disarmed while the VP waits in the
 * kernel.  Who calls what: install/uninstall on VP 0's kernel thread (ursa_init, ursa_fini);
 * start/stop/idle/set on the VP's own kernel thread (model.c's hooks, the handlers). */
static void on_tick(int sig, siginfo_t *si, void *ucv);
static void on_rotate(int sig, siginfo_t *si, void *ucv);

static struct sigkind {
  int              signo;
  const char      *who;                      /* for messages */
  void           (*handler)(int, siginfo_t *, void *);
  const uint64_t  *period;                   /* ns */
  struct sigaction old;                      /* the program's action, given back at uninstall */
  int              installed;
} kinds[2] = {
  [URSA__SIGTIMER_TS]  = { .who = "cp-ts", .handler = on_tick, .period = &ursa__g.quantum_ns },
  [URSA__SIGTIMER_ROT] = { .who = "URSA_ROTATE_US", .handler = on_rotate, .period = &ursa__g.rotate_ns },
};

/* Puts k's handler on its signal (SA_RESTART; the signal is blocked while the handler runs, so
 * ticks never nest), keeping the program's action.  -EBUSY with a message when the program
 * handles that signal itself.  The first kind installed records the VPs' usual mask (safe_point). */
int ursa__sigtimer_install(int kind) {
  struct sigkind *k = &kinds[kind];
  struct sigaction sa;
  k->signo = kind == URSA__SIGTIMER_TS ? URSA__PREEMPT_SIGNAL : URSA__ROTATE_SIGNAL;
  if (!kinds[URSA__SIGTIMER_TS].installed && !kinds[URSA__SIGTIMER_ROT].installed) {
    pthread_sigmask(SIG_BLOCK, NULL, &base_mask);
    sigdelset(&base_mask, URSA__PREEMPT_SIGNAL);
    sigdelset(&base_mask, URSA__ROTATE_SIGNAL);
    sigemptyset(&tick_set);
    sigaddset(&tick_set, URSA__PREEMPT_SIGNAL);
  }
  if (sigaction(k->signo, NULL, &k->old) != 0) return -errno;
  if (k->old.sa_handler != SIG_DFL && k->old.sa_handler != SIG_IGN) {
    fprintf(stderr, "ursa: %s needs signal SIGRTMIN+%d (%d), but the program handles it\n", k->who,
            k->signo - SIGRTMIN, k->signo);
    return -EBUSY;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = k->handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(k->signo, &sa, NULL) != 0) return -errno;
  k->installed = 1;
  return 0;
}

/* Gives the signal back to the program's action, discarding a tick still pending. */
void ursa__sigtimer_uninstall(int kind) {
  struct sigkind *k = &kinds[kind];
  struct sigaction ign;
  if (!k->installed) return;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(k->signo, &ign, NULL);
  sigaction(k->signo, &k->old, NULL);
  k->installed = 0;
}

/* The period of vp's timer of this kind: cp-ts's quantum; the balancing tick's URSA_ROTATE_US,
 * lengthened while the VP switches often (rot_pace below). */
static uint64_t sigtimer_period(const struct ursa__vp *vp, int kind) {
  return kind == URSA__SIGTIMER_ROT ? *kinds[kind].period << vp->rot_shift : *kinds[kind].period;
}

/* The next signal of vp's timer of this kind after `first` ns, then one every period; 0: off. */
static void sigtimer_set(struct ursa__vp *vp, int kind, uint64_t first) {
  struct itimerspec its;
  uint64_t period = first ? sigtimer_period(vp, kind) : 0;
  its.it_value.tv_sec = (time_t)(first / 1000000000u);
  its.it_value.tv_nsec = (long)(first % 1000000000u);
  its.it_interval.tv_sec = (time_t)(period / 1000000000u);
  its.it_interval.tv_nsec = (long)(period % 1000000000u);
  timer_settime((timer_t)vp->sigtimer[kind].id, 0, &its, NULL);
}

static void sigtimer_arm(struct ursa__vp *vp, int kind, bool on) {
  if (kind == URSA__SIGTIMER_ROT) vp->rot_shift = 0;   /* (re)armed: the whole pace again */
  sigtimer_set(vp, kind, on ? sigtimer_period(vp, kind) : 0);
  vp->sigtimer[kind].armed = on;
}

/* Makes vp's timer of this kind (a CLOCK_MONOTONIC timer that signals the calling kernel thread
 * alone) and arms it.  -EAGAIN when the system has no timer for it. */
int ursa__sigtimer_start(struct ursa__vp *vp, int kind) {
  struct sigevent sev;
  timer_t tm;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = kind == URSA__SIGTIMER_TS ? URSA__PREEMPT_SIGNAL : URSA__ROTATE_SIGNAL;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  if (URSA__FAIL() || timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0) return -EAGAIN;
  vp->sigtimer[kind].id = (void *)tm;
  if (kind == URSA__SIGTIMER_TS) vp->pre_sw = vp->stats.switches;
  __atomic_store_n(&vp->timers_on, (uint8_t)(vp->timers_on | (1u << kind)), __ATOMIC_RELAXED);  /* the
                                                       handlers, on this thread, read it */
  sigtimer_arm(vp, kind, true);
  return 0;
}

void ursa__sigtimer_stop(struct ursa__vp *vp, int kind) {
  if (!(vp->timers_on & (1u << kind))) return;
  __atomic_store_n(&vp->timers_on, (uint8_t)(vp->timers_on & ~(1u << kind)), __ATOMIC_RELAXED);
  timer_delete((timer_t)vp->sigtimer[kind].id);
  if (kind == URSA__SIGTIMER_TS) ursa__pending_set(vp, 0);
}

/* Around a wait of vp in the kernel (sleep = 1 before, 0 after): the timers stay armed, so that a
 * short wait (a hand-off to another VP and back) costs no system call; the first tick of a kind
 * that comes while the VP waits disarms that timer (asleep_tick, in the handler, on this kernel
 * thread), and the end of the wait rearms what was disarmed.  So an idle VP takes at most one
 * tick of each kind, and only when its wait lasts.  sig_asleep is read by the handlers on this
 * same kernel thread: signal fences order it. */
void ursa__sigtimer_idle(struct ursa__vp *vp, int sleep) {
  int kind;
  if (sleep) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    vp->sig_asleep = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return;
  }
  vp->sig_asleep = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  for (kind = 0; kind < 2; kind++)
    if ((vp->timers_on & (1u << kind)) && !vp->sigtimer[kind].armed) sigtimer_arm(vp, kind, true);
}

/* A tick of this kind while vp waits in the kernel: disarm the timer (the wait's end rearms it).
 * True when that was the case. */
static bool asleep_tick(struct ursa__vp *vp, int kind) {
  int saved;
  if (!vp->sig_asleep) return false;
  saved = errno;                                      /* timer_settime is async-signal-safe */
  sigtimer_arm(vp, kind, false);
  errno = saved;
  return true;
}

int ursa__ts_check(void) {
  const char *why = unsafe_here();
  if (why == NULL) return 0;
  fprintf(stderr, "ursa: URSA_MODEL=cp-ts is not available here: %s (cp-ic, pcm and cm are)\n", why);
  return -ENOTSUP;
}

/* ---- the balancing tick: the rotator's interval timer (URSA_ROTATE_US) --------------------------
 * Lesser Bear's LB3 runs the ring step from an interval timer as well as at every switch: a VP
 * that runs a thread which never switches would otherwise never take the threads its backward
 * neighbour passed on (its Waiver Queue has no other consumer), and they would wait there while
 * other VPs sit idle.  With several VPs each VP has a second periodic timer on CLOCK_MONOTONIC
 * (every 1,000 us by default; URSA_ROTATE_US sets it, 0 turns it off), signal URSA__ROTATE_SIGNAL,
 * aimed at its own kernel thread.  Its handler, only at a safe point by the rules of cp-ts above
 * (the running thread in the program's own code, not in ursa, libc or another library;
 * preemption not disabled; on its own stack; the usual mask), where no structure of this VP is
 * half-changed and the step takes no lock that this kernel thread could hold:
 *   - marks the running thread a hog when the VP has not switched since the previous tick (it
 *     ran a whole period: src/sched/vp.c, "Spread");
 *   - runs the ring step (ursa__pol_timer: take backward(i)'s Waiver Queue, pass a surplus
 *     forward, and all the ready threads when forward(i) has none; wake forward(i));
 *   - gives ready threads to idle VPs (ursa__pol_spread), under every policy;
 *   the last two leave a thread that a wake-up handed off to runq.next where it is while the VP
 *   switches often (at least ROT_BUSY times per period, as rot_pace counts): a thread-ring or a
 *   ping-pong pair stays on one VP (src/sched/policy.c, ursa__pol_timer).
 * Elsewhere the tick does nothing (the next one tries again), except that when it finds the
 * thread blocked in a system call with threads ready on the VP it wakes an idle VP to take them
 * (in_blocking_call, below).  It never switches the running thread.  While the VP switches often
 * the ticks come less often (rot_pace, below).  An idle VP disarms it (it runs the step itself).
 * Like any timer signal it ends some system calls early with EINTR (SA_RESTART restarts the
 * others; signal(7) lists those it never restarts).  Off where cp-ts is refused: quietly for the
 * default, with a message when asked for in the environment, -ENOTSUP when asked for in the
 * config. */
int ursa__rot_config(unsigned rotate_us, int given) {
  const char *why, *env = getenv("URSA_ROTATE_US");
  int asked = given;                                  /* asked for, not the default: say why not */
  ursa__g.rotate_ns = 0;
  if (rotate_us == URSA_ROTATE_OFF) return 0;
  if (rotate_us == 0) {                               /* the environment, else the default */
    if (env != NULL && (strcmp(env, "0") == 0 || strcasecmp(env, "off") == 0)) return 0;
    rotate_us = (unsigned)ursa__env_number("URSA_ROTATE_US", 100, 10000000, URSA__ROTATE_DEFAULT_US);
    asked = env != NULL && *env != '\0' && rotate_us != URSA__ROTATE_DEFAULT_US;
  } else if (rotate_us < 100 || rotate_us > 10000000) {
    return -EINVAL;
  }
  if (ursa__g.nvps < 2) return 0;                     /* one VP: nothing to balance */
  if ((why = unsafe_here()) != NULL) {
    if (asked) fprintf(stderr, "ursa: the balancing tick (URSA_ROTATE_US) is off here: %s\n", why);
    return given ? -ENOTSUP : 0;                     /* asked for in the config: an error */
  }
  ursa__g.rotate_ns = (uint64_t)rotate_us * 1000u;
  return 0;
}

/* The tick's pace.  On this machine kind (a virtual machine) each timer signal costs the thread
 * it interrupts about 20 us (its interrupt, the signal's delivery, the caches: 1.8-2.4% of a
 * computing thread's time at 1,000 signals a second, bench/signal_cost), and the tick does
 * nothing a VP that switches often does not do itself: every switch runs the ring step and gives
 * ready threads to idle VPs.  So the interval doubles (up to ROT_MAX_SHIFT
 * doublings) while the VP switched at least ROT_BUSY times per URSA_ROTATE_US since the last tick,
 * and goes back to URSA_ROTATE_US at the first tick that finds fewer.  A thread that runs a whole
 * URSA_ROTATE_US without a switch (a hog, the case the tick is for) leaves at most one switch in
 * that period, so the pace is URSA_ROTATE_US again from the tick after its start at the latest:
 * it is marked at most 2^ROT_MAX_SHIFT periods later than at a fixed pace, and only when it
 * started right after a burst of switches.  Every tick paces, wherever it lands: one that finds
 * the thread at an unsafe point (inside ursa, libc) or blocked in a system call counts the
 * switches too.  (Pacing only at safe points kept a VP that switches in ursa's code most of the
 * time at the whole pace: the 2-VP thread-ring took a tick every 1 ms, ~7 in 8 of them inside
 * ursa, and ran ~5% slower than with the tick off, 13.46 against 12.83 ns a pass, 16 interleaved
 * runs.)
 * Changing the pace costs one timer_settime, in the handler (async-signal-safe); a steady pace
 * costs none. */
#define ROT_BUSY      8u
#define ROT_MAX_SHIFT 3u

static void rot_pace(struct ursa__vp *vp, uint64_t sw) {    /* sw: stats.switches now */
  uint64_t switched = sw - vp->rot_sw;
  unsigned shift = vp->rot_shift;
  vp->rot_sw = sw;
  unsigned next = switched < ((uint64_t)ROT_BUSY << shift) ? 0 : shift < ROT_MAX_SHIFT ? shift + 1 : shift;
  if (next == shift) return;
  vp->rot_shift = (uint8_t)next;
  sigtimer_set(vp, URSA__SIGTIMER_ROT, sigtimer_period(vp, URSA__SIGTIMER_ROT));
}

/* The calls the kernel restarts after a handler (SA_RESTART) that wait for another thread or
 * process: a tick that finds one of them about to be made again counts as finding it blocked.
 * Not write, futex or the signal calls, which ursa's own kick and the POSIX layer make (a tick
 * may come just before one of them, and they do not wait for long). */
static bool restarted_wait(long nr) {
  switch (nr) {
  case SYS_read: case SYS_readv: case SYS_pread64: case SYS_recvfrom: case SYS_recvmsg:
  case SYS_accept: case SYS_accept4: case SYS_wait4: case SYS_waitid: case SYS_flock:
    return true;
  default:
    return false;
  }
}

/* Whether the signal interrupted a system call that blocked: the kernel leaves the program
 * counter just after the system-call instruction with -EINTR as its result, or, for a call it
 * will restart (SA_RESTART), on the instruction itself with the call's number (restarted_wait).
 * Outside ursa's own code only: ursa blocks in the kernel only in a VP's idle context. */
static bool in_blocking_call(const ucontext_t *uc) {
  uintptr_t pc, sp;
  const unsigned char *p;
  pc_sp(uc, &pc, &sp);
  if (pc - ursa_lo < ursa_hi - ursa_lo) return false;
  if ((pc & 4095u) < 4 || (pc & 4095u) > 4092) return false;          /* read pc's page only */
  p = (const unsigned char *)pc;
#if defined(__x86_64__)
  if (p[0] == 0x0f && p[1] == 0x05) return restarted_wait((long)uc->uc_mcontext.gregs[REG_RAX]);
  return p[-2] == 0x0f && p[-1] == 0x05 && uc->uc_mcontext.gregs[REG_RAX] == -EINTR;
#elif defined(__aarch64__)
  {
    uint32_t insn, prev;
    memcpy(&insn, p, 4);
    memcpy(&prev, p - 4, 4);
    if (insn == 0xd4000001u) return restarted_wait((long)uc->uc_mcontext.regs[8]);   /* svc #0 */
    return prev == 0xd4000001u && (int64_t)uc->uc_mcontext.regs[0] == -EINTR;
  }
#else
  return false;
#endif
}

static void on_rotate(int sig, siginfo_t *si, void *ucv) {
  struct ursa__vp *vp = ursa__tls_vp;
  uint64_t sw;
  bool busy;
  int saved;
  URSA_UNUSED(sig);
  if (vp != NULL) check_switch_window(vp, ucv);
  /* preempt_live before vp->x: ursa_fini clears it (on VP 0, whose timer still runs) before it
   * frees the SMP state, and a tick taken inside that free read vp->x->idle from the freed block
   * (ASan, fuzz_api_short, session 26) */
  if (vp == NULL || !(vp->timers_on & (1u << URSA__SIGTIMER_ROT)) || si->si_code != SI_TIMER ||
      !__atomic_load_n(&ursa__g.preempt_live, __ATOMIC_RELAXED) || vp->x == NULL ||
      asleep_tick(vp, URSA__SIGTIMER_ROT) || vp->cur == vp->x->idle)
    return;
  sw = __atomic_load_n(&vp->stats.switches, __ATOMIC_RELAXED);
  saved = *vp->errno_p;
  if (safe_point(vp->cur, ucv) == SAFE) {
    if (sw == vp->rot_sw) vp->cur->hog = 1;         /* no switch for a whole period: a long runner */
    busy = sw - vp->rot_sw >= ((uint64_t)ROT_BUSY << vp->rot_shift);   /* as rot_pace counts it */
    ursa__pol_timer(vp, busy);                      /* busy: a hand-off stays (policy.c) */
    ursa__pol_spread(vp, busy);
  } else if (in_blocking_call(ucv) && vp->mode == URSA__SMPMODE) {   /* else the next tick tries */
    ursa__smp_stalled_in_kernel(vp);                /* its ready threads: to an idle VP */
  }
  rot_pace(vp, sw);                                 /* at every tick, safe point or not */
  *vp->errno_p = saved;
}

