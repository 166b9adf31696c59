/*
 * thread.c - POSIX threads on ursa threads: records, create / join / detach / exit, keys,
 * cancellation and cleanup buffers, the park / wake protocol every wait uses, the sleeps,
 * sched_yield, names, attributes and the signal functions.
 *
 * Every exported function starts with UPT_ENTER: a caller that is not an ursa thread, or ursa's
 * own code, goes to glibc's function (boot.c).
 *
 * Park / wake.  A wait puts a waiter (on the waiter's stack) in an object's queue under the
 * object's spin lock and blocks on its record's ursa semaphore.  Three parties may end the wait:
 * a waker (upt_wake, under the queue's lock), the deadline (ursa_sem_timedwait returns
 * -ETIMEDOUT) and a cancel request (pthread_cancel, under the target record's lock).  Each tries
 * the compare-and-swap of the waiter's state from WAITING; the winner alone decides, and a waker
 * or canceller that wins posts the semaphore once.  A waiter whose deadline passed but that lost
 * the race consumes that post (ursa_sem_wait returns at once), so the semaphore is 0 whenever its
 * thread is not waiting.  A waker never posts a waiter that timed out or was cancelled, so a
 * signal, a unit of a semaphore or a mutex handed over is never lost to a thread that leaves.
 *
 * Cancellation is deferred.  The cancellation points are pthread_join and its timed forms,
 * pthread_cond_wait / timedwait / clockwait, sem_wait / timedwait / clockwait, the sleeps and
 * pthread_testcancel.  A request that arrives while the target is parked at one of them (with
 * cancellation enabled) ends the wait at once.  PTHREAD_CANCEL_ASYNCHRONOUS is stored and reported
 * but acts as deferred.  Acting on a request (or pthread_exit) unwinds the stack
 * with libgcc's forced unwind ("The forced unwind" below): C++ destructors and the C++ and
 * -fexceptions forms of pthread_cleanup_push run, and the buffers of glibc's C macros (a sigjmp
 * buffer per push) are run in stack order among them by a longjmp into each, whose handler calls
 * __pthread_unwind_next, which goes on; past the last frame the thread finishes (key
 * destructors, then the joiner is woken).  Without the unwinder the buffers alone run.
 */
#include "upt.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UPT_ENTER(me)                                                                            \
  struct upt_thread *me = upt_from_ursa(__builtin_return_address(0)) ? NULL : upt_self()

static struct upt_thread main_record;
static size_t glibc_default_stacksize;   /* what glibc's attribute reports when none was set */

int upt_errno(int e) {
  errno = e;
  return -1;
}

/* ---- records ---------------------------------------------------------------------------------- */

/* Records are allocated UPT_CHUNK at a time, and every chunk stays on `chunks` for the life of
 * the process: a record is always reachable from a global (a thread still blocked when the
 * process exits is no leak for LeakSanitizer), and most creations take no malloc. */
#define UPT_CHUNK 32
struct upt_chunk {
  struct upt_chunk *next;
  struct upt_thread rec[UPT_CHUNK];
};
static uint32_t free_lock;
static struct upt_thread *free_list;     /* under free_lock */
static struct upt_chunk *chunks;         /* under free_lock */

static struct upt_thread *record_new(void) {
  struct upt_thread *t;
  upt_spin_lock(&free_lock);
  t = free_list;
  if (t) free_list = t->free_next;
  upt_spin_unlock(&free_lock);
  if (t == NULL) {
    struct upt_chunk *c = calloc(1, sizeof *c);
    int i;
    if (c == NULL) return NULL;
    for (i = 0; i < UPT_CHUNK; i++) {
      if (ursa_sem_init(&c->rec[i].park, 0) != 0) { free(c); return NULL; }
      c->rec[i].magic = UPT_MAGIC_FREE;
    }
    upt_spin_lock(&free_lock);
    c->next = chunks;
    __atomic_store_n(&chunks, c, __ATOMIC_RELEASE);   /* read without the lock: signal.c */
    for (i = UPT_CHUNK - 1; i >= 1; i--) {
      c->rec[i].free_next = free_list;
      free_list = &c->rec[i];
    }
    upt_spin_unlock(&free_lock);
    t = &c->rec[0];
  }
  t->finished = t->detached = t->adopted = 0;
  t->joiner = t->cur_wait = NULL;
  t->cur_sem = NULL;
  t->io_wait = NULL;
  t->result = NULL;
  t->cancel_pending = 0;
  t->cancel_state = PTHREAD_CANCEL_ENABLE;
  t->cancel_type = PTHREAD_CANCEL_DEFERRED;
  t->cleanup = NULL;
  t->stacksize = t->guardsize = 0;
  t->stackaddr = NULL;
  t->policy = SCHED_OTHER;
  memset(&t->param, 0, sizeof t->param);
  t->name[0] = '\0';
  t->sig_pending = 0;
  t->sig_mask = 0;
  t->wait_seq = 0;
  __atomic_store_n(&t->magic, UPT_MAGIC, __ATOMIC_RELEASE);
  return t;
}

/* Back to the free list: its memory stays a record forever, so a stale pthread_t reads
 * UPT_MAGIC_FREE (ESRCH) or names the record's next thread, as with glibc. */
static void record_free(struct upt_thread *t) {
  if (t == &main_record) return;
  __atomic_store_n(&t->magic, UPT_MAGIC_FREE, __ATOMIC_RELEASE);
  upt_spin_lock(&free_lock);
  t->free_next = free_list;
  free_list = t;
  upt_spin_unlock(&free_lock);
}

struct upt_thread *upt_record(pthread_t th) {
  struct upt_thread *t = (struct upt_thread *)th;
  if (t == NULL) return NULL;
  return __atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) == UPT_MAGIC ? t : NULL;
}

/* A pthread_t that is one of this layer's records, live or freed. */
static int is_record(pthread_t th) {
  struct upt_thread *t = (struct upt_thread *)th;
  uint32_t m;
  if (t == NULL) return 1;
  m = __atomic_load_n(&t->magic, __ATOMIC_ACQUIRE);
  return m == UPT_MAGIC || m == UPT_MAGIC_FREE;
}

/* An ursa thread that pthread_create did not make (made by ursa_create): it gets a record at its
 * first call of the layer, kept for the life of the process. */
static struct upt_thread *adopt(void) {
  struct upt_thread *t = record_new();
  if (t == NULL) {
    fprintf(stderr, "ursa-pthread: out of memory for a thread's record; aborting\n");
    abort();
  }
  t->tok = ursa__self_thread();
  ursa__layer_set(t);
  t->adopted = 1;
  t->detached = 1;
  (void)ursa_thread_getname(ursa_self(), t->name, sizeof t->name);
  return t;
}

/* upt_self found no record in the slot: before the constructor's end, outside an ursa thread,
 * or an ursa thread's first call of the layer. */
struct upt_thread *upt_self_slow(void) {
  if (!__atomic_load_n(&upt_booted, __ATOMIC_ACQUIRE)) return NULL;
  if (ursa_self() == URSA_THREAD_NULL) return NULL;
  return adopt();
}

/* The reports' name of every solo park (the object is the waiter; the wait's function is in the
 * thread's backtrace). */
static const struct ursa__waitkind upt_kind = { "a POSIX-threads wait (libursa-pthread)", NULL, 0 };

void upt_boot_threads(void) {
  pthread_attr_t a;
  if (ursa_sem_init(&main_record.park, 0) != 0) {
    fprintf(stderr, "ursa-pthread: cannot set up main's record; aborting\n");
    abort();
  }
  main_record.magic = UPT_MAGIC;
  main_record.adopted = 1;
  main_record.cancel_state = PTHREAD_CANCEL_ENABLE;
  main_record.policy = SCHED_OTHER;
  strcpy(main_record.name, "main");
  main_record.tok = ursa__self_thread();
  ursa__layer_set(&main_record);
  ursa__waitkind_register(URSA__W_UPT, &upt_kind);
  upt_sync_boot();
  REAL(pthread_attr_init)(&a);
  REAL(pthread_attr_getstacksize)(&a, &glibc_default_stacksize);
  REAL(pthread_attr_destroy)(&a);
}

/* ---- park and wake ---------------------------------------------------------------------------- */

static int cas_state(struct upt_waiter *w, int to) {
  int from = UPT_W_WAITING;
  if (upt_solo) {
    if (w->state != UPT_W_WAITING) return 0;
    w->state = to;
    return 1;
  }
  return __atomic_compare_exchange_n(&w->state, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Solo: whether the waker or canceller may end w's park (w still waits, and its deadline has not
 * made its thread ready already: then the thread decides TIMEDOUT itself when it runs). */
static int solo_claim(struct upt_waiter *w) {
  /* untimed: WAITING means blocked (nothing runs between a push and its park), unless a fork
   * left the thread behind (upt_forked: then ursa says) */
  return w->state == UPT_W_WAITING &&
         (!(w->timed | upt_forked) || ursa__park_claim_thread(w->tok, w->timed));
}

int upt_wake(struct upt_waiter *w) {
  if (upt_solo) {
    if (!solo_claim(w)) return 0;
    w->state = UPT_W_WOKEN;
    ursa__unpark_thread(w->tok, 0);
    return 1;
  }
  if (!cas_state(w, UPT_W_WOKEN)) return 0;
  (void)ursa_sem_post(&w->t->park);
  return 1;
}

uint64_t upt_deadline_ns(int clock, const struct timespec *abs) {
  struct timespec now;
  int64_t a, n;
  if (abs->tv_sec < 0) return 1;
  if (abs->tv_sec > INT64_MAX / 1000000000 - 2) return UINT64_MAX;
  a = (int64_t)abs->tv_sec * 1000000000 + abs->tv_nsec;
  if (clock != CLOCK_MONOTONIC) {               /* CLOCK_REALTIME: the distance from now */
    clock_gettime(clock, &now);
    a -= (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    clock_gettime(CLOCK_MONOTONIC, &now);
    n = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    a = a <= 0 ? 0 : (a > INT64_MAX - n ? INT64_MAX : a + n);
  }
  return a <= 0 ? 1 : (uint64_t)a;
}

/* Solo park: the thread blocks in ursa itself; a waker or canceller decided the state before its
 * unpark, a deadline is decided here. */
static int park_solo(struct upt_waiter *w, int clock, const struct timespec *abs) {
  int rc = ursa__park(URSA__W_UPT, w, NULL, abs ? upt_deadline_ns(clock, abs) : 0);
  if (rc == -ETIMEDOUT && w->state == UPT_W_WAITING) w->state = UPT_W_TIMEDOUT;
  return w->state;
}

void upt_q_remove(struct upt_queue *q, struct upt_waiter *w) {
  struct upt_waiter **p = &q->head, *prev = NULL;
  while (*p && *p != w) { prev = *p; p = &(*p)->next; }
  if (*p == NULL) return;                       /* a waker popped it already */
  *p = w->next;
  if (q->tail == w) q->tail = prev;
}

uint64_t upt_sig_seq;

int upt_park(struct upt_thread *me, struct upt_waiter *w, int clock, const struct timespec *abs,
             int cancellable) {
  int st, rc, registered = 0;
  w->cancel = cancellable && me->cancel_state == PTHREAD_CANCEL_ENABLE;
  /* Signals that came for it before the wait are handled before it (as the kernel would have
   * run their handlers before the call): they do not end the wait. */
  if (upt_sig_ready(me)) upt_sig_deliver(me);
  if (w->cancel || __atomic_load_n(&upt_sig_on, __ATOMIC_RELAXED)) {   /* (signals: every wait) */
    upt_spin_lock(&me->lock);
    me->cur_wait = w;
    if (w->intr) me->wait_seq = __atomic_add_fetch(&upt_sig_seq, 1, __ATOMIC_RELAXED);
    upt_spin_unlock(&me->lock);
    registered = 1;
    /* seq_cst: pairs with pthread_cancel's store, then its read of cur_wait under the lock */
    if (w->cancel && __atomic_load_n(&me->cancel_pending, __ATOMIC_SEQ_CST) &&
        cas_state(w, UPT_W_CANCELED)) {
      st = UPT_W_CANCELED;
      goto out;
    }
    /* seq_cst: pairs with upt_sig_kill's or of sig_pending, then its read of cur_wait */
    if (w->intr && (__atomic_load_n(&me->sig_pending, __ATOMIC_SEQ_CST) & ~me->sig_mask) &&
        cas_state(w, UPT_W_INTR)) {
      st = UPT_W_INTR;
      goto out;
    }
  }
  w->timed = abs != NULL;                       /* (read by solo wakers only) */
  if (upt_solo) {
    st = park_solo(w, clock, abs);
    goto out;
  }
  for (;;) {
    rc = abs ? ursa_sem_timedwait(&me->park, clock, abs) : ursa_sem_wait(&me->park);
    if (rc == 0) break;
    if (rc == -ETIMEDOUT && cas_state(w, UPT_W_TIMEDOUT)) { st = UPT_W_TIMEDOUT; goto out; }
    abs = NULL;             /* decided by a waker or a canceller: its post comes, take it */
  }
  st = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
out:
  if (registered) {
    upt_spin_lock(&me->lock);
    me->cur_wait = NULL;
    upt_spin_unlock(&me->lock);
  }
  if (st == UPT_W_INTR) upt_sig_deliver(me);    /* the handlers run here, on its own stack */
  return st;
}

/* ---- signals: ending a wait (signal.c describes the protocol) -------------------------------- */

/* Only while the signal is still pending for t: a sender sets the bit, then comes here, and in
 * between t may have taken the signal (its handler ran at the end of one wait, or before the
 * next) and entered its next wait, which this would end with EINTR though no signal came during
 * it (pt_conform's sig_eintr under cp-ts beside two busy loops: a stage ended with no handler run,
 * ~1 run in 100).  t clears the bit only outside a registered wait (upt_sig_deliver runs after
 * `out:` in upt_park clears cur_wait, or before the wait registers), and registering takes this
 * lock, so a bit seen here under the lock belongs to the wait seen here. */
int upt_sig_interrupt(struct upt_thread *t, uint64_t sigs) {
  int done = 0;
  upt_spin_lock(&t->lock);
  if (!(__atomic_load_n(&t->sig_pending, __ATOMIC_SEQ_CST) & sigs)) {
    done = 0;                                   /* taken already: its handler has run */
  } else if (t->cur_wait && !t->cur_wait->intr) {
    done = -1;                                  /* a wait a signal does not end */
  } else
  if (upt_solo) {
    if (t->cur_sem && upt_sem_unpark(t, -EINTR)) {
      done = 1;
    } else if (t->cur_wait && t->cur_wait->intr && solo_claim(t->cur_wait)) {
      t->cur_wait->state = UPT_W_INTR;
      ursa__unpark_thread(t->tok, 0);
      done = 1;
    }
  } else if (t->cur_wait && t->cur_wait->intr && cas_state(t->cur_wait, UPT_W_INTR)) {
    (void)ursa_sem_post(&t->park);
    done = 1;
  }
  upt_spin_unlock(&t->lock);
  return done;
}

/* Whether t is in a wait that a signal ends with EINTR (under t's lock). */
static int in_eintr_wait(const struct upt_thread *t) {
  return (upt_solo && t->cur_sem) || (t->cur_wait && t->cur_wait->intr == UPT_INTR_EINTR);
}

/* Lock-free (the trampoline calls it): chunks are only prepended (release) and never freed. */
int upt_sig_someone_takes(int sig) {
  uint64_t b = (uint64_t)1 << (sig - 1);
  struct upt_chunk *c;
  int i;
  if (!__atomic_load_n(&main_record.finished, __ATOMIC_RELAXED) &&
      !(__atomic_load_n(&main_record.sig_mask, __ATOMIC_RELAXED) & b))
    return 1;
  for (c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c; c = c->next)
    for (i = 0; i < UPT_CHUNK; i++)
      if (__atomic_load_n(&c->rec[i].magic, __ATOMIC_ACQUIRE) == UPT_MAGIC &&
          !__atomic_load_n(&c->rec[i].finished, __ATOMIC_RELAXED) &&
          !(__atomic_load_n(&c->rec[i].sig_mask, __ATOMIC_RELAXED) & b))
        return 1;
  return 0;
}

/* A thread whose wait has ended (woken or timed out) still shows that wait until it runs again,
 * so a thread that could not be interrupted is passed over in the following looks of the same
 * delivery: otherwise, with one VP and a cooperative model, the dispatcher would pick it again and
 * again without ever letting it run (a livelock: the Open POSIX Test Suite's pthread_create/14-1,
 * two signals racing a sleep that has ended, hung so under every configuration). */
#define UPT_SIG_TRIES 16

static int tried(struct upt_thread *const *failed, int n, const struct upt_thread *t) {
  for (int i = 0; i < n; i++)
    if (failed[i] == t) return 1;
  return 0;
}

int upt_sig_interrupt_one(int sig) {
  uint64_t b = (uint64_t)1 << (sig - 1);
  struct upt_thread *failed[UPT_SIG_TRIES];
  int nfailed = 0;
  for (;;) {
    struct upt_thread *best = NULL;
    uint64_t best_seq = UINT64_MAX;
    struct upt_chunk *c;
    int i;
    upt_spin_lock(&main_record.lock);
    if (main_record.magic == UPT_MAGIC && !main_record.finished && !(main_record.sig_mask & b) &&
        in_eintr_wait(&main_record) && !tried(failed, nfailed, &main_record))
      best = &main_record;
    upt_spin_unlock(&main_record.lock);
    upt_spin_lock(&free_lock);
    c = chunks;
    upt_spin_unlock(&free_lock);
    for (; best == NULL && c; c = c->next) {     /* chunks are never freed; only prepended to */
      for (i = 0; i < UPT_CHUNK; i++) {
        struct upt_thread *t = &c->rec[i];
        if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != UPT_MAGIC) continue;
        upt_spin_lock(&t->lock);
        if (!t->finished && !(t->sig_mask & b) && in_eintr_wait(t) && t->wait_seq < best_seq &&
            !tried(failed, nfailed, t)) {
          best_seq = t->wait_seq;
          best = t;
        }
        upt_spin_unlock(&t->lock);
      }
    }
    if (best == NULL) return 0;
    /* seq_cst: pairs with upt_park's load after it registered its wait */
    if (__atomic_fetch_or(&best->sig_pending, b, __ATOMIC_SEQ_CST) & b) return 1;   /* merged */
    if (upt_sig_interrupt(best, b) <= 0) {
      /* its wait ended meanwhile (woken, timed out): take the signal back and look again, so
       * that it is not left pending in a thread that may never wait again; past it */
      if (__atomic_fetch_and(&best->sig_pending, ~b, __ATOMIC_SEQ_CST) & b) {
        if (nfailed == UPT_SIG_TRIES) return 0;   /* the dispatcher runs the handler itself */
        failed[nfailed++] = best;
        continue;
      }
    }
    return 1;                                   /* it runs the handler, then returns EINTR */
  }
}

int upt_check_deadline(int clock, const struct timespec *abs) {
  if (abs == NULL || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L) return EINVAL;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) return EINVAL;
  return 0;
}

/* glibc's siglongjmp under a name whose first parameter is the cleanup buffer's jump buffer
 * (shorter than a jmp_buf: pthread_cleanup_push saves no signal mask, so longjmp reads no more). */
extern void upt_siglongjmp(struct __cancel_jmp_buf_tag *env, int val)
    __asm__("siglongjmp") __attribute__((__noreturn__));

/* ---- the child of a fork (boot.c) -------------------------------------------------------------- */

int upt_forked;

void upt_forget_records(struct upt_thread *me) {
  struct upt_chunk *c;
  int i;
  upt_forked = 1;
  if (&main_record != me) main_record.magic = UPT_MAGIC_FREE;
  for (c = chunks; c; c = c->next)
    for (i = 0; i < UPT_CHUNK; i++)
      if (&c->rec[i] != me && c->rec[i].magic == UPT_MAGIC) c->rec[i].magic = UPT_MAGIC_FREE;
}

/* ---- finishing, exit, cancellation ------------------------------------------------------------ */

static void keys_run_destructors(struct upt_thread *t);

/* The thread's last steps: destructors, then a joiner is woken or a detached record freed.  After
 * the unlock the record may belong to another thread: nothing touches it. */
static void finish(struct upt_thread *t, void *value) {
  t->result = value;
  keys_run_destructors(t);
  upt_spin_lock(&t->lock);
  t->finished = 1;
  if (t->detached) {
    upt_spin_unlock(&t->lock);
    record_free(t);
    return;
  }
  if (t->joiner) upt_wake(t->joiner);
  upt_spin_unlock(&t->lock);
}

/* The forced unwind.  Cancellation and pthread_exit unwind the thread's stack with libgcc's
 * unwinder (_Unwind_ForcedUnwind), as glibc does, so that C++ destructors, the C++ and
 * -fexceptions forms of pthread_cleanup_push, and catch (...) blocks (which must rethrow:
 * abi::__forced_unwind) run.  The unwinder calls unwind_stop before each frame, innermost first;
 * the C macros' buffers (pushed by frames the unwinder may pass without running anything, C code
 * without exceptions) are interleaved by stack address: when the next frame is the one that
 * pushed the innermost buffer (its stack pointer, noted by __pthread_register_cancel, is not
 * above the frame's CFA) the stop function longjmps into that frame's handler, which calls
 * __pthread_unwind_next, which starts a new forced unwind from there.  At the end of the stack
 * (ursa's trampoline, whose CFI marks the outermost frame, src/arch/; _start for main; or a frame
 * without unwind information, where the unwinder stops) the remaining buffers run by longjmp and
 * then the thread finishes on top of the unwinder's frames, which are dead: keys' destructors,
 * the joiner, ursa_exit.  Without libgcc_s (or when the unwinder fails) the buffers alone run by
 * longjmp, the way the layer worked before.  libgcc_s is found at the first unwind: in the
 * process already (every C++ program), else loaded. */
typedef _Unwind_Reason_Code (*upt_forced_fn)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
typedef _Unwind_Word (*upt_cfa_fn)(struct _Unwind_Context *);
static upt_forced_fn forced_unwind;     /* relaxed atomics; published by unwinder_state */
static upt_cfa_fn get_cfa;
static int unwinder_state;              /* 0 not looked for yet, 1 found, -1 none */

static int unwinder(void) {
  int s = __atomic_load_n(&unwinder_state, __ATOMIC_ACQUIRE);   /* pairs with the release below */
  if (upt_unlikely(s == 0)) {
    void *f = dlsym(RTLD_DEFAULT, "_Unwind_ForcedUnwind"), *g = dlsym(RTLD_DEFAULT, "_Unwind_GetCFA");
    if (f == NULL || g == NULL) {
      void *h = dlopen("libgcc_s.so.1", RTLD_NOW);             /* kept for the process's life */
      f = h ? dlsym(h, "_Unwind_ForcedUnwind") : NULL;
      g = h ? dlsym(h, "_Unwind_GetCFA") : NULL;
    }
    s = f && g ? 1 : -1;
    /* two threads may race here: they store the same values */
    __atomic_store_n(&forced_unwind, (upt_forced_fn)f, __ATOMIC_RELAXED);
    __atomic_store_n(&get_cfa, (upt_cfa_fn)g, __ATOMIC_RELAXED);
    __atomic_store_n(&unwinder_state, s, __ATOMIC_RELEASE);
  }
  return s > 0;
}

/* Runs the innermost cleanup buffer: a longjmp into pthread_cleanup_push's frame, whose handler
 * calls __pthread_unwind_next, which comes back to unwind. */
static void __attribute__((noreturn)) run_buffer(struct upt_thread *me, __pthread_unwind_buf_t *buf) {
  me->cleanup = (__pthread_unwind_buf_t *)buf->__pad[0];
  upt_siglongjmp(buf->__cancel_jmp_buf, 1);
}

static void __attribute__((noreturn)) end_thread(struct upt_thread *me) {
  finish(me, me->result);
  ursa_exit(NULL);
}

static _Unwind_Reason_Code unwind_stop(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
                                       struct _Unwind_Exception *exc, struct _Unwind_Context *ctx,
                                       void *arg) {
  struct upt_thread *me = arg;
  __pthread_unwind_buf_t *buf = me->cleanup;
  (void)version;
  (void)cls;
  (void)exc;
  if (buf && ((actions & _UA_END_OF_STACK) ||
              (uintptr_t)__atomic_load_n(&get_cfa, __ATOMIC_RELAXED)(ctx) >= (uintptr_t)buf->__pad[1]))
    run_buffer(me, buf);
  if (actions & _UA_END_OF_STACK) end_thread(me);
  return _URC_NO_REASON;
}

/* A catch block ended the forced unwind without rethrowing it (libstdc++ deletes the exception at
 * the end of the catch): the thread cannot go on, as with glibc. */
static void unwind_not_rethrown(_Unwind_Reason_Code reason, struct _Unwind_Exception *exc) {
  (void)reason;
  (void)exc;
  fprintf(stderr, "ursa-pthread: a catch block ended the unwinding of a cancelled or exiting thread "
                  "without rethrowing it (abi::__forced_unwind must be rethrown); aborting\n");
  abort();
}

/* Unwinds the thread (above), then ends it.  Never returns. */
static void __attribute__((noreturn)) unwind(struct upt_thread *me) {
  if (unwinder()) {
    memset(&me->exc, 0, sizeof me->exc);
    me->exc.exception_class = 0x5552534150544852ull;   /* "URSAPTHR" (libstdc++ sets its own) */
    me->exc.exception_cleanup = unwind_not_rethrown;
    (void)__atomic_load_n(&forced_unwind, __ATOMIC_RELAXED)(&me->exc, unwind_stop, me);
    /* returned: the unwinder could not go on (a frame it cannot read): buffers by longjmp */
  }
  if (me->cleanup) run_buffer(me, me->cleanup);
  end_thread(me);
}

static void __attribute__((noreturn)) exit_with(struct upt_thread *me, void *value) {
  me->result = value;
  unwind(me);
}

void upt_cancel_now(struct upt_thread *me) {
  me->cancel_state = PTHREAD_CANCEL_DISABLE;    /* cleanup handlers are not cancelled again */
  exit_with(me, PTHREAD_CANCELED);
}

void upt_testcancel(struct upt_thread *me) {
  if (me->cancel_state == PTHREAD_CANCEL_ENABLE &&
      __atomic_load_n(&me->cancel_pending, __ATOMIC_SEQ_CST))
    upt_cancel_now(me);
}

UPT_EXPORT void pthread_exit(void *value) {
  UPT_ENTER(me);
  if (me == NULL) { REAL(pthread_exit)(value); __builtin_unreachable(); }
  exit_with(me, value);
}

UPT_EXPORT int pthread_cancel(pthread_t th) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_cancel)(th);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  __atomic_store_n(&t->cancel_pending, 1, __ATOMIC_SEQ_CST);
  upt_spin_lock(&t->lock);
  if (upt_solo) {
    if (upt_sem_cancel(t)) {
      /* (its sem_wait acts on the request) */
    } else if (t->cur_wait && t->cur_wait->cancel && solo_claim(t->cur_wait)) {
      t->cur_wait->state = UPT_W_CANCELED;
      ursa__unpark_thread(t->tok, -ECANCELED);
    } else if (t->io_wait) {
      (void)ursa__io_wait_end(t->io_wait, -ECANCELED);   /* its read, poll, ... acts on it (io.c) */
    }
  } else if (t->cur_wait && t->cur_wait->cancel && cas_state(t->cur_wait, UPT_W_CANCELED)) {
    (void)ursa_sem_post(&t->park);
  } else if (t->io_wait) {
    (void)ursa__io_wait_end(t->io_wait, -ECANCELED);     /* under t->lock: src/io/waiter.h */
  }
  upt_spin_unlock(&t->lock);
  return 0;
}

UPT_EXPORT int pthread_setcancelstate(int state, int *old) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_setcancelstate)(state, old);
  if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE) return EINVAL;
  if (old) *old = me->cancel_state;
  me->cancel_state = state;
  return 0;
}

UPT_EXPORT int pthread_setcanceltype(int type, int *old) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_setcanceltype)(type, old);
  if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS) return EINVAL;
  if (old) *old = me->cancel_type;
  me->cancel_type = type;
  return 0;
}

UPT_EXPORT void pthread_testcancel(void) {
  UPT_ENTER(me);
  if (me == NULL) { REAL(pthread_testcancel)(); return; }
  upt_testcancel(me);
}

UPT_EXPORT void __pthread_register_cancel(__pthread_unwind_buf_t *buf) {
  UPT_ENTER(me);
  if (me == NULL) { REAL(__pthread_register_cancel)(buf); return; }
  buf->__pad[0] = me->cleanup;
  buf->__pad[1] = __builtin_dwarf_cfa();        /* the pushing frame's stack pointer (unwind_stop) */
  me->cleanup = buf;
}

UPT_EXPORT void __pthread_unregister_cancel(__pthread_unwind_buf_t *buf) {
  UPT_ENTER(me);
  if (me == NULL) { REAL(__pthread_unregister_cancel)(buf); return; }
  me->cleanup = (__pthread_unwind_buf_t *)buf->__pad[0];
}

UPT_EXPORT void __pthread_unwind_next(__pthread_unwind_buf_t *buf) {
  UPT_ENTER(me);
  if (me == NULL) { REAL(__pthread_unwind_next)(buf); __builtin_unreachable(); }
  unwind(me);
}

/* ---- create, join, detach, self ---------------------------------------------------------------- */

static void *start(void *arg) {
  struct upt_thread *t = arg;
  t->tok = ursa__self_thread();
  ursa__layer_set(t);
  finish(t, t->fn(t->arg));
  return NULL;
}

UPT_EXPORT int pthread_create(pthread_t *out, const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg) {
  struct upt_thread *t;
  ursa_attr_t ua;
  ursa_thread_t ut;
  size_t ss = 0, gs = 0;
  void *sa = NULL;
  int det = PTHREAD_CREATE_JOINABLE, inherit = PTHREAD_INHERIT_SCHED, policy, rc;
  struct sched_param param;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_create)(out, attr, fn, arg);
  policy = me->policy;                          /* PTHREAD_INHERIT_SCHED: the creator's */
  param = me->param;
  if (attr) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (REAL(pthread_attr_getdetachstate)(attr, &det) != 0 ||
        REAL(pthread_attr_getstacksize)(attr, &ss) != 0 ||
        REAL(pthread_attr_getguardsize)(attr, &gs) != 0 ||
        REAL(pthread_attr_getstackaddr)(attr, &sa) != 0 ||
        REAL(pthread_attr_getinheritsched)(attr, &inherit) != 0)
      return EINVAL;
#pragma GCC diagnostic pop
    if (ss == glibc_default_stacksize && sa == NULL) ss = 0;   /* not set: ursa's default */
    /* PTHREAD_EXPLICIT_SCHED: the attribute's policy and parameter, stored and reported by
     * pthread_getschedparam (ursa has no priorities), as POSIX says the new thread has them. */
    if (inherit == PTHREAD_EXPLICIT_SCHED &&
        (REAL(pthread_attr_getschedpolicy)(attr, &policy) != 0 ||
         REAL(pthread_attr_getschedparam)(attr, &param) != 0))
      return EINVAL;
  }
  if ((t = record_new()) == NULL) return EAGAIN;
  t->sig_mask = me->sig_mask;                   /* POSIX: the creator's mask */
  t->policy = policy;
  t->param = param;
  t->fn = fn;
  t->arg = arg;
  t->detached = det == PTHREAD_CREATE_DETACHED;
  t->guardsize = gs;
  t->stackaddr = sa ? (char *)sa - ss : NULL;   /* glibc keeps the top; report the bottom */
  ursa_attr_init(&ua);
  ursa_attr_setdetached(&ua, 1);                /* the record does join and detach */
  if (ss) {
    if (ss < URSA_STACK_MIN) ss = URSA_STACK_MIN;
    ursa_attr_setstacksize(&ua, ss);
  }
  t->stacksize = ss ? ss : 65536;
  *out = (pthread_t)t;                          /* before it can run, as glibc */
  rc = ursa_create(&ut, &ua, start, t);
  ursa_attr_destroy(&ua);
  if (rc != 0) {
    record_free(t);
    return rc == -EINVAL ? EINVAL : EAGAIN;
  }
  return 0;
}

UPT_EXPORT pthread_t pthread_self(void) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_self)();
  return (pthread_t)me;
}

/* pthread_join and its timed and trying forms: mode 0 waits, 1 tries (EBUSY), 2 has a deadline. */
static int join(struct upt_thread *me, pthread_t th, void **res, int mode, int clock,
                const struct timespec *abs) {
  struct upt_thread *t = upt_record(th);
  struct upt_waiter w = { NULL, me, UPT_W_WAITING, 0, 0, me->tok, UPT_INTR_NO, 0 };
  int st;
  if (t == NULL) return ESRCH;
  if (t == me) return EDEADLK;
  if (mode == 2 && upt_check_deadline(clock, abs)) return EINVAL;
  upt_spin_lock(&t->lock);
  if (t->detached || t->joiner) { upt_spin_unlock(&t->lock); return EINVAL; }
  if (!t->finished) {
    if (mode == 1) { upt_spin_unlock(&t->lock); return EBUSY; }
    t->joiner = &w;
    upt_spin_unlock(&t->lock);
    st = upt_park(me, &w, clock, mode == 2 ? abs : NULL, 1);
    upt_spin_lock(&t->lock);
    if (st != UPT_W_WOKEN) {
      t->joiner = NULL;
      upt_spin_unlock(&t->lock);
      if (st == UPT_W_CANCELED) upt_cancel_now(me);
      return ETIMEDOUT;
    }
  }
  upt_spin_unlock(&t->lock);
  if (res) *res = t->result;
  record_free(t);
  return 0;
}

UPT_EXPORT int pthread_join(pthread_t th, void **res) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_join)(th, res);
  return join(me, th, res, 0, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int pthread_tryjoin_np(pthread_t th, void **res) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_tryjoin_np)(th, res);
  return join(me, th, res, 1, CLOCK_REALTIME, NULL);
}

UPT_EXPORT int pthread_timedjoin_np(pthread_t th, void **res, const struct timespec *abs) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_timedjoin_np)(th, res, abs);
  return join(me, th, res, abs ? 2 : 0, CLOCK_REALTIME, abs);
}

UPT_EXPORT int pthread_clockjoin_np(pthread_t th, void **res, clockid_t clock,
                                    const struct timespec *abs) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_clockjoin_np)(th, res, clock, abs);
  return join(me, th, res, abs ? 2 : 0, clock, abs);
}

UPT_EXPORT int pthread_detach(pthread_t th) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_detach)(th);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  upt_spin_lock(&t->lock);
  if (t->detached || t->joiner) { upt_spin_unlock(&t->lock); return EINVAL; }
  t->detached = 1;
  if (t->finished) { upt_spin_unlock(&t->lock); record_free(t); return 0; }
  upt_spin_unlock(&t->lock);
  return 0;
}

/* ---- keys ------------------------------------------------------------------------------------- */

/* A key is UPT_KEY_TAG | generation << 10 | index: a deleted key is told from its successor, and
 * a key glibc made (below PTHREAD_KEYS_MAX, before the constructor or by a kernel thread that
 * ursa did not make) is told from the layer's and served by glibc. */
#define UPT_KEY_TAG 0x40000000u
static struct { uint32_t seq; void (*destructor)(void *); } keys[PTHREAD_KEYS_MAX];  /* seq odd: in use */
static uint32_t keys_lock;

static int key_index(pthread_key_t k, uint32_t *seq) {
  unsigned i = k & (PTHREAD_KEYS_MAX - 1);
  uint32_t s;
  if (!(k & UPT_KEY_TAG) || (k & ~(UPT_KEY_TAG | 0x3fffffffu))) return -1;
  s = __atomic_load_n(&keys[i].seq, __ATOMIC_ACQUIRE);
  if (!(s & 1) || ((s >> 1) & 0xfffffu) != ((k >> 10) & 0xfffffu)) return -1;
  *seq = s;
  return (int)i;
}

UPT_EXPORT int pthread_key_create(pthread_key_t *k, void (*destructor)(void *)) {
  unsigned i;
  UPT_ENTER(me);
  if (me == NULL) return REAL(pthread_key_create)(k, destructor);
  upt_spin_lock(&keys_lock);
  for (i = 0; i < PTHREAD_KEYS_MAX; i++) {
    if (!(keys[i].seq & 1)) {
      uint32_t s = keys[i].seq + 1;
      __atomic_store_n(&keys[i].destructor, destructor, __ATOMIC_RELAXED);
      __atomic_store_n(&keys[i].seq, s, __ATOMIC_RELEASE);
      upt_spin_unlock(&keys_lock);
      *k = UPT_KEY_TAG | ((s >> 1) & 0xfffffu) << 10 | i;
      return 0;
    }
  }
  upt_spin_unlock(&keys_lock);
  return EAGAIN;
}

UPT_EXPORT int pthread_key_delete(pthread_key_t k) {
  uint32_t seq;
  int i;
  UPT_ENTER(me);
  if (me == NULL || !(k & UPT_KEY_TAG)) return REAL(pthread_key_delete)(k);
  upt_spin_lock(&keys_lock);
  if ((i = key_index(k, &seq)) < 0) { upt_spin_unlock(&keys_lock); return EINVAL; }
  __atomic_store_n(&keys[i].seq, seq + 1, __ATOMIC_RELEASE);
  upt_spin_unlock(&keys_lock);
  return 0;
}

UPT_EXPORT void *pthread_getspecific(pthread_key_t k) {
  struct upt_kv *b;
  uint32_t seq;
  int i;
  UPT_ENTER(me);
  if (me == NULL || !(k & UPT_KEY_TAG)) return REAL(pthread_getspecific)(k);
  if ((i = key_index(k, &seq)) < 0 || (b = me->kv[i / UPT_KEY_BLOCK]) == NULL) return NULL;
  b += i % UPT_KEY_BLOCK;
  return b->seq == seq ? b->value : NULL;
}

UPT_EXPORT int pthread_setspecific(pthread_key_t k, const void *value) {
  struct upt_kv *b;
  uint32_t seq;
  int i;
  UPT_ENTER(me);
  if (me == NULL || !(k & UPT_KEY_TAG)) return REAL(pthread_setspecific)(k, value);
  if ((i = key_index(k, &seq)) < 0) return EINVAL;
  if ((b = me->kv[i / UPT_KEY_BLOCK]) == NULL) {
    if ((b = calloc(UPT_KEY_BLOCK, sizeof *b)) == NULL) return ENOMEM;
    me->kv[i / UPT_KEY_BLOCK] = b;
  }
  b += i % UPT_KEY_BLOCK;
  b->value = (void *)value;
  b->seq = seq;
  return 0;
}

static void keys_run_destructors(struct upt_thread *t) {
  int round, again = 1;
  unsigned i;
  for (round = 0; again && round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
    again = 0;
    for (i = 0; i < PTHREAD_KEYS_MAX; i++) {
      struct upt_kv *b = t->kv[i / UPT_KEY_BLOCK];
      void (*d)(void *);
      void *v;
      if (b == NULL) { i += UPT_KEY_BLOCK - 1; continue; }
      b += i % UPT_KEY_BLOCK;
      if (b->value == NULL || b->seq != __atomic_load_n(&keys[i].seq, __ATOMIC_ACQUIRE)) continue;
      d = __atomic_load_n(&keys[i].destructor, __ATOMIC_RELAXED);
      if (d == NULL) continue;
      v = b->value;
      b->value = NULL;
      d(v);
      again = 1;
    }
  }
  for (i = 0; i < UPT_KEY_BLOCKS; i++)          /* the record is reused: no value survives */
    if (t->kv[i]) memset(t->kv[i], 0, UPT_KEY_BLOCK * sizeof *t->kv[i]);
}

/* ---- names, attributes, scheduling, signals ---------------------------------------------------- */

UPT_EXPORT int pthread_setname_np(pthread_t th, const char *name) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_setname_np)(th, name);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  if (strlen(name) >= sizeof t->name) return ERANGE;
  strcpy(t->name, name);
  return 0;
}

UPT_EXPORT int pthread_getname_np(pthread_t th, char *buf, size_t len) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_getname_np)(th, buf, len);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  if (strlen(t->name) >= len) return ERANGE;
  strcpy(buf, t->name);
  return 0;
}

UPT_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_getattr_np)(th, attr);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  if (t == &main_record)      /* main runs on VP 0's kernel thread, on that thread's stack */
    return REAL(pthread_getattr_np)(REAL(pthread_self)(), attr);
  REAL(pthread_attr_init)(attr);
  REAL(pthread_attr_setdetachstate)(attr, t->detached ? PTHREAD_CREATE_DETACHED
                                                      : PTHREAD_CREATE_JOINABLE);
  if (t->stackaddr) REAL(pthread_attr_setstack)(attr, t->stackaddr, t->stacksize);
  else if (t->stacksize) REAL(pthread_attr_setstacksize)(attr, t->stacksize);
  REAL(pthread_attr_setguardsize)(attr, t->guardsize ? t->guardsize : (size_t)getpagesize());
  REAL(pthread_attr_setschedpolicy)(attr, t->policy);
  REAL(pthread_attr_setschedparam)(attr, &t->param);
  return 0;
}

UPT_EXPORT int pthread_getschedparam(pthread_t th, int *policy, struct sched_param *param) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_getschedparam)(th, policy, param);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  *policy = t->policy;
  *param = t->param;
  return 0;
}

/* Stored and reported; ursa has no priorities. */
UPT_EXPORT int pthread_setschedparam(pthread_t th, int policy, const struct sched_param *param) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_setschedparam)(th, policy, param);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR &&
      policy != SCHED_BATCH && policy != SCHED_IDLE)
    return EINVAL;
  t->policy = policy;
  t->param = *param;
  return 0;
}

UPT_EXPORT int pthread_setschedprio(pthread_t th, int prio) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_setschedprio)(th, prio);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  t->param.sched_priority = prio;
  return 0;
}

/* An ursa thread's CPUs are those of the VP it runs on now; setting them is ignored (ursa moves
 * threads between VPs; use URSA_PIN). */
UPT_EXPORT int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *set) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_getaffinity_np)(th, size, set);
  if (upt_record(th) == NULL) return ESRCH;
  return REAL(pthread_getaffinity_np)(REAL(pthread_self)(), size, set);
}

UPT_EXPORT int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *set) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_setaffinity_np)(th, size, set);
  return upt_record(th) == NULL ? ESRCH : 0;
}

UPT_EXPORT int pthread_getcpuclockid(pthread_t th, clockid_t *clock) {
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_getcpuclockid)(th, clock);
  if (upt_record(th) == NULL) return ESRCH;
  if (upt_record(th) != me) return ENOTSUP;     /* ursa keeps no CPU time per thread */
  return REAL(pthread_getcpuclockid)(REAL(pthread_self)(), clock);
}

/* Signals (signal.c describes the semantics).  pthread_kill to the calling thread raises the
 * signal on its kernel thread, whose trampoline runs the handler at once (or leaves it pending
 * when the thread blocks it); to another ursa thread, with a handler of the program, it is
 * pending for that thread and ends its wait (upt_sig_kill); without one (SIG_DFL, SIG_IGN) it
 * goes to the process.  sig 0 tells whether the thread exists.  A thread that has ended but is
 * not joined (or detached and gone) still exists: its ID stays valid until then, so the answer
 * is 0 and the signal goes nowhere (POSIX.1-2024; glibc since 2.34, whose earlier ESRCH here
 * raced with every sender that saw the thread a moment before it ended). */
UPT_EXPORT int pthread_kill(pthread_t th, int sig) {
  struct upt_thread *t;
  UPT_ENTER(me);
  if (me == NULL || !is_record(th)) return REAL(pthread_kill)(th, sig);
  if ((t = upt_record(th)) == NULL) return ESRCH;
  if (sig < 0 || sig >= NSIG) return EINVAL;
  if (sig == 0 || __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE)) return 0;
  if (t == me) return upt_sig_self(me, sig);
  if (upt_sig_handled(sig)) return upt_sig_kill(me, t, sig);
  return kill(getpid(), sig) == 0 ? 0 : errno;
}

/* ---- yield and the sleeps ---------------------------------------------------------------------- */

UPT_EXPORT int sched_yield(void) {
  UPT_ENTER(me);
  if (me == NULL) return REAL(sched_yield)();
  upt_sig_poll();
  (void)ursa_yield();
  if (upt_sig_ready(me)) upt_sig_deliver(me);
  return 0;
}

/* Blocks the caller until abs on clock; a cancellation point.  0, or EINTR when a signal for the
 * thread ended the sleep (its handler has run); then *rem (if not NULL) is the time left. */
static int sleep_until(struct upt_thread *me, int clock, const struct timespec *abs,
                       struct timespec *rem) {
  struct upt_waiter w = { NULL, me, UPT_W_WAITING, 0, 0, me->tok, UPT_INTR_EINTR, 0 };
  int st;
  upt_sig_poll();
  st = upt_park(me, &w, clock, abs, 1);
  if (st == UPT_W_CANCELED) upt_cancel_now(me);
  if (st != UPT_W_INTR) return 0;
  if (rem) {
    struct timespec now;
    int64_t left;
    clock_gettime(clock, &now);
    left = ((int64_t)abs->tv_sec - now.tv_sec) * 1000000000 + (abs->tv_nsec - now.tv_nsec);
    if (left < 0) left = 0;
    rem->tv_sec = (time_t)(left / 1000000000);
    rem->tv_nsec = (long)(left % 1000000000);
  }
  return EINTR;
}

static struct timespec deadline_after(int clock, const struct timespec *rel) {
  struct timespec now;
  clock_gettime(clock, &now);
  if (rel->tv_sec > (time_t)1 << 40) { now.tv_sec = (time_t)1 << 41; return now; }   /* forever */
  now.tv_sec += rel->tv_sec;
  now.tv_nsec += rel->tv_nsec;
  if (now.tv_nsec >= 1000000000L) { now.tv_sec++; now.tv_nsec -= 1000000000L; }
  return now;
}

UPT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                               struct timespec *rem) {
  struct timespec abs;
  UPT_ENTER(me);
  if (me == NULL || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
    return REAL(clock_nanosleep)(clock, flags, req, rem);
  if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000L) return EINVAL;
  abs = (flags & TIMER_ABSTIME) ? *req : deadline_after(clock, req);
  if (sleep_until(me, clock, &abs, (flags & TIMER_ABSTIME) ? NULL : rem)) return EINTR;
  if (rem && !(flags & TIMER_ABSTIME)) rem->tv_sec = 0, rem->tv_nsec = 0;
  return 0;
}

UPT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
  struct timespec abs;
  UPT_ENTER(me);
  if (me == NULL) return REAL(nanosleep)(req, rem);
  if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0) return upt_errno(EINVAL);
  abs = deadline_after(CLOCK_MONOTONIC, req);
  if (sleep_until(me, CLOCK_MONOTONIC, &abs, rem)) return upt_errno(EINTR);
  if (rem) rem->tv_sec = 0, rem->tv_nsec = 0;
  return 0;
}

UPT_EXPORT unsigned sleep(unsigned seconds) {
  struct timespec rel = { (time_t)seconds, 0 }, abs, rem;
  UPT_ENTER(me);
  if (me == NULL) return REAL(sleep)(seconds);
  abs = deadline_after(CLOCK_MONOTONIC, &rel);
  if (sleep_until(me, CLOCK_MONOTONIC, &abs, &rem))   /* the seconds left, rounded as glibc */
    return (unsigned)rem.tv_sec + (rem.tv_nsec >= 500000000L);
  return 0;
}

UPT_EXPORT int usleep(useconds_t us) {
  struct timespec rel = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L }, abs;
  UPT_ENTER(me);
  if (me == NULL) return REAL(usleep)(us);
  abs = deadline_after(CLOCK_MONOTONIC, &rel);
  if (sleep_until(me, CLOCK_MONOTONIC, &abs, NULL)) return upt_errno(EINTR);
  return 0;
}
