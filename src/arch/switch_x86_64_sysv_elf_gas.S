/*
 * switch_x86_64_sysv_elf_gas.S - context switch for x86-64, System V ABI, ELF, GNU as.
 *
 * The frame ursa__ctx_jump pushes on the suspended stack (the saved sp points at offset 0):
 *
 *   offset | 0x00    0x04   | 0x08 | 0x10 | 0x18 | 0x20 | 0x28 | 0x30 | 0x38 |
 *   field  | MXCSR | x87 CW | R12  | R13  | R14  | R15  | RBX  | RBP  | RIP  |
 *
 * RIP is the return address pushed by the call to ursa__ctx_jump; the resumed side pops it and
 * jumps to it.  A fresh context made by
 * ursa__ctx_make holds the same frame with RBX = entry, RBP = 0, RIP = ursa__ctx_trampoline, and
 * MXCSR / x87 CW copied from the creator (so a new thread inherits the floating-point environment,
 * as pthread_create's threads do).  After the frame is popped the trampoline starts with
 * RSP % 16 == 0, so the call to entry sees the ABI's alignment.
 */
#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

        .text

/* void *ursa__ctx_jump(void **from_sp, void *to_sp, void *arg)
 *   rdi = from_sp, rsi = to_sp, rdx = arg; returns arg of the jump that resumes us in rax. */
        .globl  ursa__ctx_jump
        .hidden ursa__ctx_jump
        .type   ursa__ctx_jump, @function
        .globl  ursa__ctx_switch                /* int ursa__ctx_switch(void **, void *, intptr_t) */
        .hidden ursa__ctx_switch
        .type   ursa__ctx_switch, @function
        .p2align 4
ursa__ctx_jump:
ursa__ctx_switch:
        .cfi_startproc
        _CET_ENDBR
        leaq    -0x38(%rsp), %rsp       /* room for the frame below the return address */
        .cfi_adjust_cfa_offset 0x38
        stmxcsr (%rsp)                  /* save MXCSR */
        fnstcw  0x04(%rsp)              /* save x87 control word */
        movq    %r12, 0x08(%rsp)        /* save R12 */
        movq    %r13, 0x10(%rsp)        /* save R13 */
        movq    %r14, 0x18(%rsp)        /* save R14 */
        movq    %r15, 0x20(%rsp)        /* save R15 */
        movq    %rbx, 0x28(%rsp)        /* save RBX */
        movq    %rbp, 0x30(%rsp)        /* save RBP */

        movq    %rsp, (%rdi)            /* *from_sp = RSP */
        movq    %rsi, %rsp              /* RSP = to_sp: now on the other stack */

        ldmxcsr (%rsp)                  /* restore MXCSR */
        fldcw   0x04(%rsp)              /* restore x87 control word */
        movq    0x08(%rsp), %r12        /* restore R12 */
        movq    0x10(%rsp), %r13        /* restore R13 */
        movq    0x18(%rsp), %r14        /* restore R14 */
        movq    0x20(%rsp), %r15        /* restore R15 */
        movq    0x28(%rsp), %rbx        /* restore RBX */
        movq    0x30(%rsp), %rbp        /* restore RBP */
        movq    0x38(%rsp), %r8         /* the saved RIP */
        leaq    0x40(%rsp), %rsp        /* pop the frame and the RIP */
        .cfi_adjust_cfa_offset -0x40

        movq    %rdx, %rax              /* return arg to a resumed ursa__ctx_jump ... */
        movq    %rdx, %rdi              /* ... and pass it to a fresh context's entry */
        jmp     *%r8                    /* an indirect jump, not ret: measured 2x faster here,
                                           as a ret into another stack defeats the return
                                           predictor (Boost.Context does the same) */
        .cfi_endproc
        .size   ursa__ctx_jump, .-ursa__ctx_jump

/* void *ursa__ctx_make(void *stack_top, void (*entry)(void *))
 *   rdi = stack_top, rsi = entry; returns the saved sp of the new context in rax. */
        .globl  ursa__ctx_make
        .hidden ursa__ctx_make
        .type   ursa__ctx_make, @function
        .p2align 4
ursa__ctx_make:
        .cfi_startproc
        _CET_ENDBR
        movq    %rdi, %rax
        andq    $-16, %rax              /* align the top down to 16 bytes */
        leaq    -0x50(%rax), %rax       /* frame (0x40) + 16 bytes: RSP = top - 0x10 after ret */
        stmxcsr (%rax)                  /* inherit the creator's MXCSR */
        fnstcw  0x04(%rax)              /* inherit the creator's x87 control word */
        movq    $0, 0x08(%rax)          /* R12 */
        movq    $0, 0x10(%rax)          /* R13 */
        movq    $0, 0x18(%rax)          /* R14 */
        movq    $0, 0x20(%rax)          /* R15 */
        movq    %rsi, 0x28(%rax)        /* RBX = entry, called by the trampoline */
        movq    $0, 0x30(%rax)          /* RBP = 0: the end of the frame-pointer chain */
        leaq    ursa__ctx_trampoline(%rip), %rcx
        movq    %rcx, 0x38(%rax)        /* RIP = trampoline */
        movq    $0, 0x40(%rax)          /* a zero return-address slot above the trampoline */
        movq    $0, 0x48(%rax)
        ret
        .cfi_endproc
        .size   ursa__ctx_make, .-ursa__ctx_make

/* The first instruction a fresh context runs.  RDI = arg (set by ursa__ctx_jump), RBX = entry.
 * .cfi_undefined rip tells debuggers and unwinders that the call chain ends here. */
        .hidden ursa__ctx_trampoline
        .type   ursa__ctx_trampoline, @function
        .p2align 4
ursa__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        call    *%rbx                   /* entry(arg); never returns */
        call    abort@PLT               /* entry returned: there is no caller to go back to */
        hlt
        .cfi_endproc
        .size   ursa__ctx_trampoline, .-ursa__ctx_trampoline

        .section .note.GNU-stack,"",%progbits
