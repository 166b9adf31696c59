/*
 * arm64_regs.c - standalone check of src/arch/switch_arm64_aapcs_elf_gas.S (AArch64 only).
 *
 * Not part of the CMake build: scripts/test-aarch64.sh compiles it together with the .S file and
 * runs it under qemu-aarch64.  Two contexts, main and one made by ursa__ctx_make, bounce control
 * back and forth through ursa__ctx_jump.  Before each jump, one inline-asm block loads its own
 * patterns into X19-X29, D8-D15 and FPCR; after the jump returns, it reads every one back, with SP
 * and the returned arg.  The other side loads different patterns before jumping back, so a
 * register the switch forgets to save or restore shows up as the other side's value.
 * Also checked: a fresh context gets the first jump's arg, a 16-byte aligned SP and its creator's
 * FPCR, even from an unaligned stack top; and the unwinder stops at the trampoline
 * (.cfi_undefined x30) instead of walking off the top of the thread's stack.
 *
 * Prints "arm64_regs: N passed, N failed"; exits 0 only when nothing failed.
 */
#if !defined(__aarch64__)
#error "arm64_regs.c is an AArch64 test"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "../../src/arch/ctx_base.h"

/* From src/arch/context.h (not included: this program is built on its own). */
/* context.h's interface; on AArch64 a struct ursa__ctx is two words: the saved stack pointer and
 * the on-CPU byte (word 1), which every jump clears in the context it suspends.  The jump is given
 * the objects that hold a context at URSA__CTX_BASE (ctx_base.h), as thread descriptors do. */
void ursa__ctx_make(void **ctx, void *stack_top, void (*entry)(void *));
void *ursa__ctx_jump(void *from_obj, void *to_obj, void *arg);

/* One switch: inputs, then what was found after control came back.  Word indices, used by the asm
 * (so plain macros: the asm text needs the numbers). */
#define T_X_IN      0        /* X19..X29: 11 words */
#define T_D_IN      11       /* D8..D15: 8 words */
#define T_FPCR_IN   19
#define T_FROM      20       /* void *from_obj */
#define T_TO        21       /* void *to_obj */
#define T_ARG       22       /* void *arg */
#define T_X_OUT     23       /* X19..X29 after the jump returned */
#define T_D_OUT     34       /* D8..D15 after */
#define T_FPCR_OUT  42
#define T_SP_BEFORE 43
#define T_SP_AFTER  44
#define T_RET       45       /* what ursa__ctx_jump returned */
#define T_WORDS     46
#define S_(x) #x
#define S(x) S_(x)
#define OFF(i) S(i) "*8"

static int passed, failed;

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (cond) { passed++; } else {                                                \
      failed++;                                                                   \
      fprintf(stderr, "arm64_regs: FAIL line %d: ", __LINE__);                    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
    }                                                                             \
  } while (0)

/* FPCR bits that user mode may set and QEMU keeps: AHP(26) DN(25) FZ(24) RMode(23:22) FZ16(19). */
#define FPCR_AHP  (1u << 26)
#define FPCR_DN   (1u << 25)
#define FPCR_FZ   (1u << 24)
#define FPCR_RM(m) ((uint64_t)(m) << 22)
#define FPCR_FZ16 (1u << 19)

static uint64_t get_fpcr(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
static void set_fpcr(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }

/* run_switch's argument, read by its asm from memory: every general register is clobbered there,
 * so none is left to pass it in. */
static uint64_t *run_table __attribute__((used));

/* Load t's patterns, jump, record the registers found after coming back.  Everything the other
 * context may run (C code, libc) can clobber the caller-saved registers; the callee-saved ones are
 * declared clobbered because this block sets them, so the compiler saves its own around it. */
__attribute__((noinline)) static void run_switch(uint64_t *t) {
  run_table = t;
  __asm__ volatile(
      "adrp  x9, run_table\n\t"
      "ldr   x9, [x9, #:lo12:run_table]\n\t"
      "mrs   x10, fpcr\n\t"
      "sub   sp, sp, #32\n\t"
      "stp   x29, x9, [sp, #0]\n\t"               /* keep the compiler's FP and the table */
      "str   x10, [sp, #16]\n\t"                  /* and the caller's FPCR */
      "ldr   x10, [x9, #" OFF(T_FPCR_IN) "]\n\t"
      "msr   fpcr, x10\n\t"
      "ldp   d8,  d9,  [x9, #" OFF(T_D_IN) "+0x00]\n\t"
      "ldp   d10, d11, [x9, #" OFF(T_D_IN) "+0x10]\n\t"
      "ldp   d12, d13, [x9, #" OFF(T_D_IN) "+0x20]\n\t"
      "ldp   d14, d15, [x9, #" OFF(T_D_IN) "+0x30]\n\t"
      "ldp   x19, x20, [x9, #" OFF(T_X_IN) "+0x00]\n\t"
      "ldp   x21, x22, [x9, #" OFF(T_X_IN) "+0x10]\n\t"
      "ldp   x23, x24, [x9, #" OFF(T_X_IN) "+0x20]\n\t"
      "ldp   x25, x26, [x9, #" OFF(T_X_IN) "+0x30]\n\t"
      "ldp   x27, x28, [x9, #" OFF(T_X_IN) "+0x40]\n\t"
      "ldr   x29,      [x9, #" OFF(T_X_IN) "+0x50]\n\t"
      "ldr   x0, [x9, #" OFF(T_FROM) "]\n\t"
      "ldr   x1, [x9, #" OFF(T_TO) "]\n\t"
      "ldr   x2, [x9, #" OFF(T_ARG) "]\n\t"
      "mov   x10, sp\n\t"
      "str   x10, [x9, #" OFF(T_SP_BEFORE) "]\n\t"
      "bl    ursa__ctx_jump\n\t"
      "ldr   x9, [sp, #8]\n\t"                    /* the table again (SP must be ours again) */
      "str   x0, [x9, #" OFF(T_RET) "]\n\t"
      "mov   x10, sp\n\t"
      "str   x10, [x9, #" OFF(T_SP_AFTER) "]\n\t"
      "stp   x19, x20, [x9, #" OFF(T_X_OUT) "+0x00]\n\t"
      "stp   x21, x22, [x9, #" OFF(T_X_OUT) "+0x10]\n\t"
      "stp   x23, x24, [x9, #" OFF(T_X_OUT) "+0x20]\n\t"
      "stp   x25, x26, [x9, #" OFF(T_X_OUT) "+0x30]\n\t"
      "stp   x27, x28, [x9, #" OFF(T_X_OUT) "+0x40]\n\t"
      "str   x29,      [x9, #" OFF(T_X_OUT) "+0x50]\n\t"
      "stp   d8,  d9,  [x9, #" OFF(T_D_OUT) "+0x00]\n\t"
      "stp   d10, d11, [x9, #" OFF(T_D_OUT) "+0x10]\n\t"
      "stp   d12, d13, [x9, #" OFF(T_D_OUT) "+0x20]\n\t"
      "stp   d14, d15, [x9, #" OFF(T_D_OUT) "+0x30]\n\t"
      "mrs   x10, fpcr\n\t"
      "str   x10, [x9, #" OFF(T_FPCR_OUT) "]\n\t"
      "ldr   x10, [sp, #16]\n\t"
      "msr   fpcr, x10\n\t"                       /* give the caller its FPCR back */
      "ldr   x29, [sp, #0]\n\t"
      "add   sp, sp, #32\n\t"
      :
      :
      : "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28", "x30", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10",
        "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",
        "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
}

/* Distinct, recognisable patterns: tag in the top byte, register number in the low byte. */
static void fill(uint64_t *t, uint64_t tag, uint64_t fpcr, void *from, void *to, void *arg) {
  memset(t, 0, T_WORDS * sizeof *t);
  for (int i = 0; i < 11; i++) t[T_X_IN + i] = tag << 56 | 0x00a5a5a5a5a50000u | (uint64_t)(19 + i);
  for (int i = 0; i < 8; i++) t[T_D_IN + i] = tag << 56 | 0x005a5a5a5a5a0000u | (uint64_t)(8 + i);
  t[T_FPCR_IN] = fpcr;
  t[T_FROM] = (uint64_t)(uintptr_t)from;
  t[T_TO] = (uint64_t)(uintptr_t)to;
  t[T_ARG] = (uint64_t)(uintptr_t)arg;
}

static void verify(const char *who, const uint64_t *t, void *want_ret) {
  for (int i = 0; i < 11; i++)
    CHECK(t[T_X_OUT + i] == t[T_X_IN + i], "%s: x%d = %#llx, want %#llx", who, 19 + i,
          (unsigned long long)t[T_X_OUT + i], (unsigned long long)t[T_X_IN + i]);
  for (int i = 0; i < 8; i++)
    CHECK(t[T_D_OUT + i] == t[T_D_IN + i], "%s: d%d = %#llx, want %#llx", who, 8 + i,
          (unsigned long long)t[T_D_OUT + i], (unsigned long long)t[T_D_IN + i]);
  CHECK(t[T_FPCR_OUT] == t[T_FPCR_IN], "%s: fpcr = %#llx, want %#llx", who,
        (unsigned long long)t[T_FPCR_OUT], (unsigned long long)t[T_FPCR_IN]);
  CHECK(t[T_SP_AFTER] == t[T_SP_BEFORE], "%s: sp = %#llx, want %#llx", who,
        (unsigned long long)t[T_SP_AFTER], (unsigned long long)t[T_SP_BEFORE]);
  CHECK(t[T_RET] == (uint64_t)(uintptr_t)want_ret, "%s: jump returned %#llx, want %p", who,
        (unsigned long long)t[T_RET], want_ret);
}

#define ARG1 ((void *)0x1111)
#define ARG2 ((void *)0x2222)
#define ARG3 ((void *)0x3333)
#define ARG4 ((void *)0x4444)

static const uint64_t FPCR_CREATOR = FPCR_AHP | FPCR_RM(2) | FPCR_FZ16;
static const uint64_t FPCR_A = FPCR_FZ | FPCR_RM(3);
static const uint64_t FPCR_B = FPCR_DN | FPCR_RM(1);
static const uint64_t FPCR_C = FPCR_AHP | FPCR_DN | FPCR_FZ | FPCR_RM(2);

struct ctx2 { char head[URSA__CTX_BASE]; void *sp; uint64_t oncpu; };   /* a descriptor's layout */
static struct ctx2 main_ctx2 = { {0}, 0, 1 }, other_ctx2 = { {0}, 0, 1 };
#define main_sp  (main_ctx2.sp)
#define other_sp (other_ctx2.sp)
static uint64_t t1[T_WORDS], t2[T_WORDS], t3[T_WORDS];

struct walk { int depth; };
static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *p) {
  struct walk *w = p;
  (void)ctx;
  return ++w->depth > 64 ? _URC_NORMAL_STOP : _URC_NO_REASON;
}

__attribute__((noreturn)) static void other_entry(void *arg) {
  uint64_t fpcr = get_fpcr();
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t sp_now;
  struct walk w = {0};
  _Unwind_Reason_Code r;

  __asm__ volatile("mov %0, sp" : "=r"(sp_now));
  CHECK(arg == ARG1, "fresh context: entry arg = %p, want %p", arg, ARG1);
  CHECK(fpcr == FPCR_CREATOR, "fresh context: fpcr = %#llx, want the creator's %#llx",
        (unsigned long long)fpcr, (unsigned long long)FPCR_CREATOR);
  CHECK(sp % 16 == 0 && sp_now % 16 == 0,
        "fresh context: sp not 16-byte aligned (fp %#lx, sp %#lx)", (unsigned long)sp,
        (unsigned long)sp_now);
  set_fpcr(0);

  /* other_entry <- trampoline, and then the end: .cfi_undefined x30 must stop the walk. */
  r = _Unwind_Backtrace(walk_frame, &w);
  CHECK(r == _URC_END_OF_STACK && w.depth <= 4,
        "unwinding from the entry: reason %d after %d frames, want END_OF_STACK (5) within 4",
        (int)r, w.depth);

  fill(t2, 0xb2, FPCR_B, &other_ctx2, &main_ctx2, ARG2);
  run_switch(t2);                                 /* back to main; resumed by its second jump */
  verify("other", t2, ARG3);

  ursa__ctx_jump(&other_ctx2, &main_ctx2, ARG4);      /* never resumed */
  abort();
}

int main(void) {
  size_t size = 256 * 1024;
  char *stack = malloc(size);
  if (!stack) { perror("malloc"); return 1; }

  set_fpcr(FPCR_CREATOR);
  CHECK(get_fpcr() == FPCR_CREATOR, "this CPU (emulator) keeps fpcr %#llx only as %#llx",
        (unsigned long long)FPCR_CREATOR, (unsigned long long)get_fpcr());
  ursa__ctx_make(&other_sp, stack + size - 5, other_entry);    /* an unaligned top on purpose */
  set_fpcr(0);
  CHECK((uintptr_t)other_sp % 16 == 0, "ursa__ctx_make returned an unaligned sp %p", other_sp);
  CHECK((char *)other_sp > stack && (char *)other_sp < stack + size - 5,
        "ursa__ctx_make returned %p outside the stack [%p, %p)", other_sp, (void *)stack,
        (void *)(stack + size - 5));

  fill(t1, 0xa1, FPCR_A, &main_ctx2, &other_ctx2, ARG1);
  run_switch(t1);                                 /* into the fresh context */
  verify("main, 1st return", t1, ARG2);

  fill(t3, 0xc3, FPCR_C, &main_ctx2, &other_ctx2, ARG3);
  run_switch(t3);                                 /* resume the other context */
  verify("main, 2nd return", t3, ARG4);

  CHECK(get_fpcr() == 0, "main: fpcr %#llx after the switches, want 0",
        (unsigned long long)get_fpcr());
  CHECK(main_ctx2.oncpu == 0, "main's on-CPU word %#llx after it was suspended, want 0",
        (unsigned long long)main_ctx2.oncpu);
  CHECK(other_ctx2.oncpu == 0, "the other context's on-CPU word %#llx after it was suspended, want 0",
        (unsigned long long)other_ctx2.oncpu);
  printf("arm64_regs: %d passed, %d failed\n", passed, failed);
  free(stack);
  return failed ? 1 : 0;
}
