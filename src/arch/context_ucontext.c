/*
 * context_ucontext.c - the portable fallback of context.h on getcontext/makecontext/swapcontext
 * (-DURSA_CONTEXT=ucontext).  Same contract as the assembly: see context.h.
 *
 * The "stack pointer" of a suspended context is the address of its struct ursa__uc_ctx.  A
 * suspended ursa__ctx_jump keeps it in its own frame, on the stack it suspends; a fresh context
 * keeps it at the top of its new stack.  makecontext passes only int arguments, so the jump's arg
 * travels through a per-kernel-thread slot that the resumed side reads at once.
 */
#define _GNU_SOURCE
#include "context.h"

#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

static __thread void *ursa__uc_arg;                          /* the arg of the jump in flight */
static __thread void (*ursa__uc_entry)(void *);

struct ursa__uc_ctx {
  ucontext_t uc;
  void (*entry)(void *);
};

static void ursa__uc_trampoline(void) {
  /* Runs on the new stack; the jump that got here left its arg and our entry in the slots. */
  void (*entry)(void *) = ursa__uc_entry;
  entry(ursa__uc_arg);
  abort();                                                    /* entry must not return */
}

void *ursa__ctx_make(void *stack_top, void (*entry)(void *)) {
  uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)63;
  struct ursa__uc_ctx *f = (struct ursa__uc_ctx *)(top - ((sizeof *f + 63) & ~(size_t)63));
  char *lo = (char *)f - 1;                                   /* the stack grows down from f */
  if (getcontext(&f->uc) != 0) abort();
  /* ucontext wants the stack as [base, base+size); give it everything below f (at most 1 GiB
   * is assumed; the caller's guard page bounds it in practice). */
  f->uc.uc_stack.ss_sp = lo - (1u << 20) + 1;
  f->uc.uc_stack.ss_size = (1u << 20) - 64;
  f->uc.uc_link = NULL;
  f->entry = entry;
  makecontext(&f->uc, ursa__uc_trampoline, 0);
  return f;
}

void *ursa__ctx_jump(void **from_sp, void *to_sp, void *arg) {
  struct ursa__uc_ctx self;         /* entry NULL: a suspended, not a fresh, context */
  struct ursa__uc_ctx *to = to_sp;
  self.entry = NULL;
  *from_sp = &self;
  ursa__uc_arg = arg;
  if (to->entry) ursa__uc_entry = to->entry;
  if (swapcontext(&self.uc, &to->uc) != 0) abort();
  return ursa__uc_arg;
}

int ursa__ctx_switch(void **from_sp, void *to_sp, intptr_t arg) {
  return (int)(intptr_t)ursa__ctx_jump(from_sp, to_sp, (void *)arg);
}
