/*
 * regs_x86_64.S - test helper: long ursa_test_regs(void (*fn)(void), long seed)
 * Loads RBX, RBP, R12-R15 with seed+1 .. seed+6, calls fn (which switches threads), and returns a
 * bit mask of the registers that no longer hold their value (0: all survived).  The caller's
 * values of those registers are preserved as the ABI requires.
 */
        .text
        .globl  ursa_test_regs
        .type   ursa_test_regs, @function
ursa_test_regs:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp                /* 6 pushes + return address: align RSP to 16 */
        leaq    1(%rsi), %rbx
        leaq    2(%rsi), %rbp
        leaq    3(%rsi), %r12
        leaq    4(%rsi), %r13
        leaq    5(%rsi), %r14
        leaq    6(%rsi), %r15
        movq    %rsi, (%rsp)            /* keep seed */
        call    *%rdi
        movq    (%rsp), %rsi
        xorl    %eax, %eax
        leaq    1(%rsi), %rcx
        cmpq    %rcx, %rbx
        je      1f
        orq     $1, %rax
1:      leaq    2(%rsi), %rcx
        cmpq    %rcx, %rbp
        je      2f
        orq     $2, %rax
2:      leaq    3(%rsi), %rcx
        cmpq    %rcx, %r12
        je      3f
        orq     $4, %rax
3:      leaq    4(%rsi), %rcx
        cmpq    %rcx, %r13
        je      4f
        orq     $8, %rax
4:      leaq    5(%rsi), %rcx
        cmpq    %rcx, %r14
        je      5f
        orq     $16, %rax
5:      leaq    6(%rsi), %rcx
        cmpq    %rcx, %r15
        je      6f
        orq     $32, %rax
6:      addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   ursa_test_regs, .-ursa_test_regs
        .section .note.GNU-stack,"",%progbits
