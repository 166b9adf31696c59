/*
 * backtrace.c - the call stack of an ursa thread, for ursa_dump and the dump signal.
 *
 * A suspended thread's registers are in its context (src/arch/context.h): on x86-64 the
 * descriptor holds RIP, RSP, RBX, RBP and R12-R15, exactly what a DWARF unwinder needs to start;
 * with the ucontext switch the context is a ucontext_t.  ursa hands them to libunwind, which
 * walks the frames by the program's .eh_frame tables (no frame pointers needed), and names each
 * frame from the symbol tables.  The calling thread's own stack starts from getcontext().
 *
 * libunwind is optional and loaded at run time (dlopen of libunwind.so.8, on the first dump):
 * libursa has no link dependency on it, and a program that never dumps never loads it.  Built
 * without its header, on AArch64 with the assembly switch, or when the library cannot be loaded,
 * a dump says "backtrace unavailable (<why>)" instead.
 *
 * Who may call: ursa_dump (any ursa thread) and the dump thread (src/runtime/dumpsig.c).  The thread
 * must not run while it is unwound: the caller checks that it is suspended (on-CPU byte 0) before
 * and after, and says so when another VP resumed it meanwhile (its frames may then be wrong).
 */
#define _GNU_SOURCE
#include "backtrace.h"
#include "vp.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#  if __has_include(<libunwind.h>) && (defined(__x86_64__) || defined(URSA_CONTEXT_UCONTEXT))
#    define URSA__HAVE_UNWIND 1
#  endif
#endif

#if URSA__HAVE_UNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <ucontext.h>
#if defined(__has_include)
#  if __has_include(<valgrind/valgrind.h>)
#    include <valgrind/valgrind.h>
#  endif
#endif

/* The four libunwind entry points, looked up by their real (macro-expanded) names. */
static struct {
  int (*init_local)(unw_cursor_t *, unw_context_t *);
  int (*step)(unw_cursor_t *);
  int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
  int (*get_proc_name)(unw_cursor_t *, char *, size_t, unw_word_t *);
  const char *why;                     /* set when loading failed */
} unw;
static pthread_once_t unw_once = PTHREAD_ONCE_INIT;

#define URSA__STR_(x) #x
#define URSA__STR(x) URSA__STR_(x)

static void unw_load(void) {
  void *h;
#if defined(__has_include)
#  if __has_include(<valgrind/valgrind.h>)
  if (RUNNING_ON_VALGRIND) {   /* libunwind probes addresses with write(2): memcheck reports them */
    unw.why = "not under Valgrind: libunwind's address probes upset memcheck";
    return;
  }
#  endif
#endif
  h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) { unw.why = "libunwind.so.8 not found"; return; }
  *(void **)&unw.init_local = dlsym(h, URSA__STR(unw_init_local));
  *(void **)&unw.step = dlsym(h, URSA__STR(unw_step));
  *(void **)&unw.get_reg = dlsym(h, URSA__STR(unw_get_reg));
  *(void **)&unw.get_proc_name = dlsym(h, URSA__STR(unw_get_proc_name));
  if (!unw.init_local || !unw.step || !unw.get_reg || !unw.get_proc_name) unw.why = "libunwind lacks a symbol";
}

/* Fills uc with t's suspended registers; false when this context layout is not supported, or when
 * t has no context yet: a thread being created on another VP is in the handle table (so a dump
 * finds it READY) a moment before its context is made, and its fresh descriptor holds zeros. */
static bool suspended_regs(const struct ursa__thread *t, ucontext_t *uc) {
#if defined(URSA_CONTEXT_UCONTEXT)
  const void *c = (const void *)(uintptr_t)__atomic_load_n(&t->ctx.w[0], __ATOMIC_RELAXED);
  if (c == NULL) return false;
  memcpy(uc, c, sizeof *uc);              /* ucontext_t comes first */
  return true;
#else
  const uint64_t *w = t->ctx.w;           /* RIP RSP RBX RBP R12 R13 R14 R15: the .S file's table */
  if (__atomic_load_n(&w[1], __ATOMIC_RELAXED) == 0) return false;   /* no context yet */
  memset(uc, 0, sizeof *uc);
  uc->uc_mcontext.gregs[REG_RIP] = (greg_t)w[0];
  uc->uc_mcontext.gregs[REG_RSP] = (greg_t)w[1];
  uc->uc_mcontext.gregs[REG_RBX] = (greg_t)w[2];
  uc->uc_mcontext.gregs[REG_RBP] = (greg_t)w[3];
  uc->uc_mcontext.gregs[REG_R12] = (greg_t)w[4];
  uc->uc_mcontext.gregs[REG_R13] = (greg_t)w[5];
  uc->uc_mcontext.gregs[REG_R14] = (greg_t)w[6];
  uc->uc_mcontext.gregs[REG_R15] = (greg_t)w[7];
  return true;
#endif
}

extern const char ursa__text_lo[] __attribute__((weak, visibility("hidden")));   /* cmake/ursa_text.ld */
extern const char ursa__text_hi[] __attribute__((weak, visibility("hidden")));

static bool in_ursa(unw_word_t ip) {
  return ursa__text_lo != NULL && ip - 1 >= (uintptr_t)ursa__text_lo && ip - 1 < (uintptr_t)ursa__text_hi;
}

static void print_frame(FILE *f, unw_cursor_t *c, unw_word_t ip, int n) {
  unw_word_t off = 0;
  char name[160];
  Dl_info di;
  const char *mod = "?";
  if (unw.get_proc_name(c, name, sizeof name, &off) < 0) snprintf(name, sizeof name, "??");
  memset(&di, 0, sizeof di);
  if (dladdr((void *)(uintptr_t)(ip - 1), &di) && di.dli_fname)
    mod = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname;
  fprintf(f, "ursa:       #%-2d 0x%016" PRIxPTR " %s+0x%" PRIxPTR " (%s)\n", n, (uintptr_t)ip, name,
          (uintptr_t)off, mod);
}

/* Prints the frames from uc on.  The innermost frames inside ursa (the switch, the scheduler,
 * the dump itself) are left out except the outermost of them, the ursa call the thread is in. */
static void print_frames(FILE *f, unw_context_t *uc) {
  unw_cursor_t c, last;
  unw_word_t ip = 0, last_ip = 0;
  int n = 0, more;
  if (unw.init_local(&c, uc) < 0) { fprintf(f, "ursa:       (libunwind could not start)\n"); return; }
  for (;;) {                                   /* skip the leading ursa frames, keep the last */
    if (unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) return;
    if (!in_ursa(ip)) break;
    last = c;
    last_ip = ip;
    if (unw.step(&c) <= 0) { print_frame(f, &last, last_ip, 0); return; }
  }
  if (last_ip) print_frame(f, &last, last_ip, n++);
  do {
    if (unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    print_frame(f, &c, ip, n);
    if (++n == URSA__BT_MAX) { fprintf(f, "ursa:       ...\n"); break; }
    more = unw.step(&c);
  } while (more > 0);
}
#endif /* URSA__HAVE_UNWIND */

void ursa__print_backtrace(FILE *f, const struct ursa__thread *t, bool self) {
#if URSA__HAVE_UNWIND
  ucontext_t uc;
  pthread_once(&unw_once, unw_load);
  if (unw.why) { fprintf(f, "ursa:       backtrace unavailable (%s)\n", unw.why); return; }
  if (self) {
    if (getcontext(&uc) != 0) return;
    print_frames(f, (unw_context_t *)&uc);
    return;
  }
  if (!suspended_regs(t, &uc)) return;
  print_frames(f, (unw_context_t *)&uc);
#else
  URSA_UNUSED(t);
  URSA_UNUSED(self);
  fprintf(f, "ursa:       backtrace unavailable (ursa was built without libunwind's header, "
             "or for a context switch it cannot read)\n");
#endif
}
