/*
 * context_ucontext.c - the portable fallback of context.h on getcontext/makecontext/swapcontext
 * (-DURSA_CONTEXT=ucontext).  Same contract as the assembly: see context.h.
 *
 * A context (ursa__ctx_t, one word) holds the address of a struct ursa__uc_ctx.  A suspended
 * ursa__ctx_jump keeps that struct in its own frame, on the stack it suspends; a fresh context
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
static __thread ursa__ctx_t *ursa__uc_prev;                  /* the context the jump suspends */

/* A resumed context may run on another kernel thread than the one it was suspended on, and a
 * compiler may keep a thread-local variable's address across the swapcontext call; these
 * accessors are never inlined or analysed, so each call finds the current kernel thread's slots. */
__attribute__((noinline, noipa)) static void **uc_arg_slot(void) { return &ursa__uc_arg; }
__attribute__((noinline, noipa)) static ursa__ctx_t **uc_prev_slot(void) { return &ursa__uc_prev; }

/* Runs first on the resumed side: the suspended context is saved now, so its on-CPU byte drops
 * (release: pairs with the acquire load of a scheduler on another VP, see context.h). */
static void uc_release_prev(void) {
  ursa__ctx_t *p = *uc_prev_slot();
  if (p) __atomic_store_n(ursa__ctx_oncpu(p), 0, __ATOMIC_RELEASE);
}

struct ursa__uc_ctx {
  ucontext_t uc;
  void (*entry)(void *);
};

static void ursa__uc_trampoline(void) {
  /* Runs on the new stack; the jump that got here left its arg and our entry in the slots. */
  void (*entry)(void *) = ursa__uc_entry;
  uc_release_prev();
  entry(*uc_arg_slot());
  abort();                                                    /* entry must not return */
}

void ursa__ctx_make(ursa__ctx_t *c, void *stack_top, void (*entry)(void *)) {
  uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)63;
  struct ursa__uc_ctx *f = (struct ursa__uc_ctx *)(top - ((sizeof *f + 63) & ~(size_t)63));
  char *lo = (char *)f - 1;                                   /* the stack grows down from f */
  if (getcontext(&f->uc) != 0) abort();
  /* ucontext wants the stack as [base, base+size); give it the 1 MiB below f (only its top is
   * used: the caller's guard page bounds the real stack). */
  f->uc.uc_stack.ss_sp = lo - (1u << 20) + 1;
  f->uc.uc_stack.ss_size = (1u << 20) - 64;
  f->uc.uc_link = NULL;
  f->entry = entry;
  makecontext(&f->uc, ursa__uc_trampoline, 0);
  c->w[0] = (uint64_t)(uintptr_t)f;
}

void *ursa__ctx_jump(void *from_obj, void *to_obj, void *arg) {
  struct ursa__uc_ctx self;         /* entry NULL: a suspended, not a fresh, context */
  ursa__ctx_t *from = ursa__ctx_of(from_obj), *to = ursa__ctx_of(to_obj);
  struct ursa__uc_ctx *t = (struct ursa__uc_ctx *)(uintptr_t)to->w[0];
  self.entry = NULL;
  from->w[0] = (uint64_t)(uintptr_t)&self;
  *uc_arg_slot() = arg;
  *uc_prev_slot() = from;
  if (t->entry) ursa__uc_entry = t->entry;
  if (swapcontext(&self.uc, &t->uc) != 0) abort();
  uc_release_prev();
  return *uc_arg_slot();
}

int ursa__ctx_switch(void *from, void *to, intptr_t arg) {
  return (int)(intptr_t)ursa__ctx_jump(from, to, (void *)arg);
}
