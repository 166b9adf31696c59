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
 * The C surface is the same for both:
 *   void *ursa__ctx_make(void *stack_top, void (*entry)(void *arg))
 *       Prepares a context at the top of a stack and returns its saved stack pointer.  The first
 *       jump to it calls entry(arg) with the arg of that jump; entry must never return (if it
 *       does, the process aborts: the trampoline has nowhere to go).
 *   void *ursa__ctx_jump(void **from_sp, void *to_sp, void *arg)
 *       Saves the caller's context, stores its stack pointer in *from_sp, resumes to_sp.  Returns,
 *       when someone jumps back to *from_sp, the arg of that jump.
 * Neither touches errno, the signal mask (asm) or thread-local storage.
 */
#ifndef URSA_ARCH_CONTEXT_H
#define URSA_ARCH_CONTEXT_H

#include <stdint.h>

typedef struct ursa__ctx {
  void *sp;                          /* saved stack pointer while suspended */
} ursa__ctx_t;

__attribute__((visibility("hidden"))) void *ursa__ctx_make(void *stack_top, void (*entry)(void *));
__attribute__((visibility("hidden"))) void *ursa__ctx_jump(void **from_sp, void *to_sp, void *arg);

/* The same code as ursa__ctx_jump under a second name typed for the scheduler: the arg is the
 * resumed side's int result, so a function returning int can end in a tail call to it. */
__attribute__((visibility("hidden"))) int ursa__ctx_switch(void **from_sp, void *to_sp, intptr_t arg);

#endif
