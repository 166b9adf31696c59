/*
 * switch_x86_64_sysv_elf_gas.S - context switch for x86-64, System V ABI, ELF, GNU as.
 *
 * A suspended context lives in a struct ursa__ctx (context.h) inside the thread descriptor, at
 * URSA__CTX_BASE (ctx_base.h: the jump is given the descriptors), not on the thread's stack:
 *
 *   offset | 0x00 | 0x08 | 0x10 | 0x18 | 0x20 | 0x28 | 0x30 | 0x38 | 0x40    0x44   |
 *   field  | RIP  | RSP  | RBX  | RBP  | R12  | R13  | R14  | R15  | MXCSR | x87 CW |
 *
 * RIP is the return address of the call to ursa__ctx_jump and RSP the stack pointer after that
 * return, so resuming a context is the return from the jump that suspended it.  With the
 * registers beside the rest of the descriptor, a switch to a thread reads the lines of its
 * descriptor only (which its waker has just touched), not a frame somewhere on its stack.
 *
 * A fresh context (ursa__ctx_make, inline in context.h) has RIP = ursa__ctx_trampoline, RSP =
 * the stack top aligned down to 16 minus 16, RBX = entry, RBP = 0 and the creator's MXCSR and
 * x87 control word (a new thread inherits the floating-point environment, as pthread_create's
 * threads do).
 */
#include "ctx_base.h"

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

        .text

/* void *ursa__ctx_jump(void *from, void *to, void *arg)
 *   rdi = from, rsi = to (objects with their context at URSA__CTX_BASE), rdx = arg.  Returns
 *   in the resumed context the arg of the jump that resumed it (RAX); a fresh context gets it as its entry's argument (RDI). */
        .globl  ursa__ctx_jump
        .hidden ursa__ctx_jump
        .type   ursa__ctx_jump, @function
        .globl  ursa__ctx_switch                /* int ursa__ctx_switch(void *, void *, intptr_t) */
        .hidden ursa__ctx_switch
        .type   ursa__ctx_switch, @function
        .p2align 4
ursa__ctx_jump:
ursa__ctx_switch:
        .cfi_startproc
        _CET_ENDBR
        movq    (%rsp), %r8             /* our return address ... */
        leaq    0x08(%rsp), %r9         /* ... and the stack pointer after that return */
        movq    %r8, URSA__CTX_BASE+0x00(%rdi)         /* save RIP */
        movq    %r9, URSA__CTX_BASE+0x08(%rdi)         /* save RSP */
        movq    %rbx, URSA__CTX_BASE+0x10(%rdi)        /* save RBX */
        movq    %rbp, URSA__CTX_BASE+0x18(%rdi)        /* save RBP */
        movq    %r12, URSA__CTX_BASE+0x20(%rdi)        /* save R12 */
        movq    %r13, URSA__CTX_BASE+0x28(%rdi)        /* save R13 */
        movq    %r14, URSA__CTX_BASE+0x30(%rdi)        /* save R14 */
        movq    %r15, URSA__CTX_BASE+0x38(%rdi)        /* save R15 */
        stmxcsr URSA__CTX_BASE+0x40(%rdi)              /* save MXCSR */
        fnstcw  URSA__CTX_BASE+0x44(%rdi)              /* save x87 control word */

        movq    URSA__CTX_BASE+0x00(%rsi), %r8         /* to's RIP, loaded early for the jump */
        movq    URSA__CTX_BASE+0x08(%rsi), %rsp        /* RSP = to's: from here on we are on the other stack */
        .globl  ursa__ctx_switch_moved          /* the first instruction on to's stack (the debug */
        .hidden ursa__ctx_switch_moved          /* check in src/model/preempt.c) */
ursa__ctx_switch_moved:
        .cfi_undefined rip
        movb    $0, URSA__CTX_BASE+0x46(%rdi)          /* on-CPU = 0: from is saved and its stack no longer ours
                                           (TSO orders it after the saves; pairs with the acquire
                                           load of a scheduler on another VP that takes from off
                                           a queue).  Only now that RSP has left from's stack:
                                           from this store on another VP may run from there, and
                                           a signal (cp-ts, URSA_ROTATE_US) taken while RSP still
                                           pointed into it would have the kernel write its frame
                                           below from's SP, into the frames of the resumed from
                                           (issue #22: with the store before the move, the two
                                           overwrote each other) */
        movq    URSA__CTX_BASE+0x10(%rsi), %rbx        /* restore RBX */
        movq    URSA__CTX_BASE+0x18(%rsi), %rbp        /* restore RBP */
        ldmxcsr URSA__CTX_BASE+0x40(%rsi)              /* restore MXCSR */
        fldcw   URSA__CTX_BASE+0x44(%rsi)              /* restore x87 control word: both among the
                                           GPR loads, not last.  Measured on an AMD family 25 model
                                           17 (2026-11-26, URSA_VPS=1 ursa_yield_pingpong, 11
                                           interleaved runs): 9.37 -> 6.31 ns per yield (Boost's raw
                                           switch 5.47 on the same host).  Right before the jump
                                           they cost 3-5 ns; anywhere from after the on-CPU store to
                                           before R15 about 0.3 ns; not understood beyond that
                                           (both are microcoded; leaving either one out was not
                                           faster everywhere, and comparing first was slower) */
        movq    URSA__CTX_BASE+0x20(%rsi), %r12        /* restore R12 */
        movq    URSA__CTX_BASE+0x28(%rsi), %r13        /* restore R13 */
        movq    URSA__CTX_BASE+0x30(%rsi), %r14        /* restore R14 */
        movq    URSA__CTX_BASE+0x38(%rsi), %r15        /* restore R15 */

        movq    %rdx, %rax              /* return arg to a resumed ursa__ctx_jump ... */
        movq    %rdx, %rdi              /* ... and pass it to a fresh context's entry */
        jmpq    *%r8                    /* an indirect jump, not ret: measured 2x faster here, as a
                                           ret into another stack defeats the return predictor
                                           (Boost.Context does the same) */
        .cfi_endproc
        .size   ursa__ctx_jump, .-ursa__ctx_jump

/* A fresh context is made in C (ursa__ctx_make in context.h): RIP = ursa__ctx_trampoline,
 * RSP = the stack top aligned down to 16 minus 16, RBX = entry, the other registers 0, and the
 * creator's MXCSR and x87 control word. */

/* The first code a fresh context runs.  RDI = arg (set by ursa__ctx_jump), RBX = entry,
 * RSP % 16 == 0.  .cfi_undefined rip tells debuggers and unwinders that the call chain ends here;
 * the leading nop keeps "return address - 1" of a frame that returns here inside this range. */
        .globl  ursa__ctx_trampoline
        .hidden ursa__ctx_trampoline
        .type   ursa__ctx_trampoline, @function
        .p2align 4
ursa__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        nop
        call    *%rbx                   /* entry(arg); never returns */
        call    abort@PLT               /* entry returned: there is no caller to go back to */
        hlt
        .cfi_endproc
        .size   ursa__ctx_trampoline, .-ursa__ctx_trampoline

        .section .note.GNU-stack,"",%progbits
