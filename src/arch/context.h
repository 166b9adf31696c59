/*
 * context.h - the machine layer: make a fresh context on a stack, and jump between contexts.
 *
 * Two implementations, chosen at configure time (-DURSA_CONTEXT=asm|ucontext):
 *   asm       switch_<arch>_<abi>_elf_gas.S, one file per ABI (x86-64 System V, AArch64 AAPCS64).
 *             A switch saves the callee-saved registers and the floating-point control state
 *             (MXCSR + x87 control word; FPCR) on the suspended stack and stores the stack pointer.
 *   ucontext  context_ucontext.c, getcontext/makecontext/swapcontext: portable and slow (glibc's
 *             swapcontext makes a sigprocmask system call at every switch).
 *
 * The C surface is the same for all:
 *   void ursa__ctx_make(ursa__ctx_t *c, void *stack_top, void (*entry)(void *arg))
 *       Prepares in *c a fresh context on the stack that ends at stack_top.  The first jump to it
 *       calls entry(arg) with the arg of that jump; entry must never return (if it does, the
 *       process aborts: the trampoline has nowhere to go).
 *   void *ursa__ctx_jump(void *from, void *to, void *arg)
 *       Saves the caller's context in from's and resumes to's: from and to are the objects (thread
 *       descriptors) that hold a context at byte URSA__CTX_BASE (ctx_base.h, ursa__ctx_of), so
 *       that the caller needs no address arithmetic.  Returns, when someone jumps back to from,
 *       the arg of that jump.
 * Where the registers go: on x86-64 into the ursa__ctx_t itself (it lives in the thread
 * descriptor, so a switch touches no stack frame of the thread it resumes); on AArch64 onto the
 * suspended stack, the ursa__ctx_t holding the stack pointer; with ucontext, a ucontext_t on the
 * suspended stack.  Neither touches errno, the signal mask (asm) or thread-local storage.
 */
#ifndef URSA_ARCH_CONTEXT_H
#define URSA_ARCH_CONTEXT_H

#include <stdint.h>

#include "ctx_base.h"

/* x86-64: RIP RSP RBX RBP R12-R15 MXCSR|FCW (9 words, see the .S file); AArch64: the saved SP;
 * ucontext: the address of the suspended ucontext. */
#if defined(__x86_64__) && !defined(URSA_CONTEXT_UCONTEXT)
#  define URSA__CTX_WORDS 9
#  define URSA__CTX_SP_WORD 1
#  define URSA__CTX_ONCPU_BYTE 0x46         /* beside MXCSR (0x40) and FCW (0x44) */
#else
#  define URSA__CTX_WORDS 2
#  define URSA__CTX_SP_WORD 0
#  define URSA__CTX_ONCPU_BYTE 8            /* w[1] */
#endif

typedef struct ursa__ctx {
  uint64_t w[URSA__CTX_WORDS];
} ursa__ctx_t;

/* The "on CPU" byte of a context: 1 while a kernel thread runs it or is still saving it, 0 once
 * a switch has saved every register of it.  The switch clears it itself, as its last store to the
 * suspended context and only once the stack pointer is on the resumed context's stack (x86-64: a
 * plain store, ordered after the saves by TSO; AArch64: a store-release; ucontext: the resumed
 * side clears its predecessor's, after swapcontext returned): from then on another VP may run the
 * suspended thread on its stack, where a signal taken by this kernel thread would put its frame.  A
 * scheduler that takes a thread another kernel thread put on a queue must see 0 here (acquire)
 * before it switches to it: see the SMP protocol in src/sched/vp.c. */
static inline unsigned char *ursa__ctx_oncpu(ursa__ctx_t *c) {
  return (unsigned char *)c + URSA__CTX_ONCPU_BYTE;
}

/* The stack pointer a suspended context resumes with (ucontext: its ucontext, also on that stack). */
#define URSA__CTX_SP(c) ((void *)(uintptr_t)(c)->w[URSA__CTX_SP_WORD])

#if URSA__CTX_WORDS == 9
/* x86-64: the fresh context is only register values, so it is made here, inline (the layout is the
 * table at the top of switch_x86_64_sysv_elf_gas.S). */
__attribute__((visibility("hidden"))) extern char ursa__ctx_trampoline[];
static inline void ursa__ctx_make(ursa__ctx_t *c, void *stack_top, void (*entry)(void *)) {
  uint64_t *sp = (uint64_t *)(((uintptr_t)stack_top & ~(uintptr_t)15) - 16);
  uint32_t mxcsr;
  uint16_t fcw;
  __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fcw));  /* inherit the creator's */
  sp[0] = 0;                                   /* headroom: no return address above the entry */
  sp[1] = 0;
  c->w[0] = (uint64_t)(uintptr_t)ursa__ctx_trampoline;   /* RIP */
  c->w[1] = (uint64_t)(uintptr_t)sp;                     /* RSP, 16-aligned at the trampoline */
  c->w[2] = (uint64_t)(uintptr_t)entry;                  /* RBX: called by the trampoline */
  c->w[3] = 0;                                           /* RBP: the end of the frame chain */
  c->w[4] = c->w[5] = c->w[6] = c->w[7] = 0;             /* R12-R15 */
  c->w[8] = (uint64_t)mxcsr | (uint64_t)fcw << 32;       /* MXCSR, x87 control word; on-CPU 0 */
}
#else
__attribute__((visibility("hidden"))) void ursa__ctx_make(ursa__ctx_t *c, void *stack_top, void (*entry)(void *));
#endif
/* from and to are the objects (thread descriptors) whose contexts sit at URSA__CTX_BASE. */
__attribute__((visibility("hidden"))) void *ursa__ctx_jump(void *from, void *to, void *arg);

/* The same code as ursa__ctx_jump under a second name typed for the scheduler: the arg is the
 * resumed side's int result, so a function returning int can end in a tail call to it. */
__attribute__((visibility("hidden"))) int ursa__ctx_switch(void *from, void *to, intptr_t arg);

/* The context of an object given to the jump. */
static inline ursa__ctx_t *ursa__ctx_of(void *obj) {
  return (ursa__ctx_t *)(void *)((char *)obj + URSA__CTX_BASE);
}

#endif
