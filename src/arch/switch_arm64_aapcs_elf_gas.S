/*
 * switch_arm64_aapcs_elf_gas.S - context switch for AArch64, AAPCS64, ELF, GNU as.
 *
 * The frame ursa__ctx_jump stores on the suspended stack (the saved sp points at offset 0):
 *
 *   offset | 0x00 0x08 | 0x10 0x18 | 0x20 0x28 | 0x30 0x38 | 0x40 0x48 | 0x50 0x58 |
 *   field  |  D8   D9  |  D10  D11 |  D12  D13 |  D14  D15 |  X19  X20 |  X21  X22 |
 *   offset | 0x60 0x68 | 0x70 0x78 | 0x80 0x88 | 0x90 0x98 | 0xa0 | 0xa8 |
 *   field  |  X23  X24 |  X25  X26 |  X27  X28 |  X29  X30 | FPCR | pad  |
 *
 * X30 (LR) is where ursa__ctx_jump returns to.  A fresh context made by ursa__ctx_make holds
 * X19 = entry, X29 = 0, X30 = ursa__ctx_trampoline + 4 (past a nop, so that an unwinder's pc - 1
 * lookup lands in the trampoline's FDE) and the creator's FPCR.  The frame is 176 bytes, so SP
 * stays 16-byte aligned as AAPCS64 requires.
 *
 * With -mbranch-protection=bti|standard the global entry points start with a BTI landing pad and
 * the object carries the GNU property note, or the linker would drop BTI for the whole library.
 */
#include "ctx_base.h"

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define URSA_BTI_C hint #34                 /* bti c; a nop on cores without BTI */
#define URSA_FEATURE_1_AND 1                /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
#else
#define URSA_BTI_C
#define URSA_FEATURE_1_AND 0
#endif

        .text

/* void *ursa__ctx_jump(void *from, void *to, void *arg)
 *   x0 = from, x1 = to (objects whose context, at URSA__CTX_BASE (ctx_base.h), holds the saved sp
 *   as its first word), x2 = arg; returns arg of
 *   the jump that resumes us in x0. */
        .globl  ursa__ctx_jump
        .hidden ursa__ctx_jump
        .type   ursa__ctx_jump, %function
        .globl  ursa__ctx_switch                /* int ursa__ctx_switch(void *, void *, intptr_t) */
        .hidden ursa__ctx_switch
        .type   ursa__ctx_switch, %function
        .p2align 4
ursa__ctx_jump:
ursa__ctx_switch:
        .cfi_startproc
        URSA_BTI_C
        sub     sp, sp, #0xb0           /* room for the frame */
        .cfi_adjust_cfa_offset 0xb0
        stp     d8,  d9,  [sp, #0x00]   /* save D8-D15 (low halves of V8-V15) */
        stp     d10, d11, [sp, #0x10]
        stp     d12, d13, [sp, #0x20]
        stp     d14, d15, [sp, #0x30]
        stp     x19, x20, [sp, #0x40]   /* save X19-X28 */
        stp     x21, x22, [sp, #0x50]
        stp     x23, x24, [sp, #0x60]
        stp     x25, x26, [sp, #0x70]
        stp     x27, x28, [sp, #0x80]
        stp     x29, x30, [sp, #0x90]   /* save FP and LR (the return address) */
        .cfi_rel_offset x29, 0x90
        .cfi_rel_offset x30, 0x98
        mrs     x9, fpcr
        str     x9, [sp, #0xa0]         /* save FPCR */

        mov     x9, sp
        str     x9, [x0, #URSA__CTX_BASE]      /* from->sp = SP */
        ldr     x1, [x1, #URSA__CTX_BASE]      /* to->sp */
        mov     sp, x1                  /* SP = to->sp: now on the other stack */
        .globl  ursa__ctx_switch_moved          /* the first instruction on to's stack (the debug */
        .hidden ursa__ctx_switch_moved          /* check in src/model/preempt.c) */
ursa__ctx_switch_moved:
        add     x9, x0, #(URSA__CTX_BASE + 8)
        stlrb   wzr, [x9]               /* from's on-CPU byte = 0, release: every save above is
                                           visible before it (pairs with the acquire load of a
                                           scheduler on another VP that takes from off a queue).
                                           Only now that SP has left from's stack: from this store
                                           on another VP may run from there, and a signal (cp-ts,
                                           URSA_ROTATE_US) taken while SP still pointed into it
                                           would have the kernel write its frame into the resumed
                                           from's frames (issue #22) */

        ldr     x9, [sp, #0xa0]
        msr     fpcr, x9                /* restore FPCR */
        ldp     d8,  d9,  [sp, #0x00]   /* restore D8-D15 */
        ldp     d10, d11, [sp, #0x10]
        ldp     d12, d13, [sp, #0x20]
        ldp     d14, d15, [sp, #0x30]
        ldp     x19, x20, [sp, #0x40]   /* restore X19-X28 */
        ldp     x21, x22, [sp, #0x50]
        ldp     x23, x24, [sp, #0x60]
        ldp     x25, x26, [sp, #0x70]
        ldp     x27, x28, [sp, #0x80]
        ldp     x29, x30, [sp, #0x90]   /* restore FP and LR */
        .cfi_restore x29
        .cfi_restore x30
        add     sp, sp, #0xb0           /* pop the frame */
        .cfi_adjust_cfa_offset -0xb0

        mov     x0, x2                  /* arg: the return value, or entry's first argument */
        ret                             /* branch to LR */
        .cfi_endproc
        .size   ursa__ctx_jump, .-ursa__ctx_jump

/* void ursa__ctx_make(struct ursa__ctx *c, void *stack_top, void (*entry)(void *))
 *   x0 = c, x1 = stack_top, x2 = entry; stores the saved sp of the new context in c->sp. */
        .globl  ursa__ctx_make
        .hidden ursa__ctx_make
        .type   ursa__ctx_make, %function
        .p2align 4
ursa__ctx_make:
        .cfi_startproc
        URSA_BTI_C
        mov     x10, x0                 /* c */
        mov     x0, x1                  /* stack_top */
        mov     x1, x2                  /* entry */
        and     x0, x0, #~15            /* align the top down to 16 bytes */
        sub     x0, x0, #0xc0           /* frame (0xb0) + 16 bytes of headroom */
        stp     xzr, xzr, [x0, #0xb0]   /* zero the headroom */
        stp     xzr, xzr, [x0, #0x00]   /* D8-D15 = 0 */
        stp     xzr, xzr, [x0, #0x10]
        stp     xzr, xzr, [x0, #0x20]
        stp     xzr, xzr, [x0, #0x30]
        stp     x1,  xzr, [x0, #0x40]   /* X19 = entry, X20 = 0 */
        stp     xzr, xzr, [x0, #0x50]   /* X21-X28 = 0 */
        stp     xzr, xzr, [x0, #0x60]
        stp     xzr, xzr, [x0, #0x70]
        stp     xzr, xzr, [x0, #0x80]
        adr     x9, ursa__ctx_trampoline + 4
        stp     xzr, x9,  [x0, #0x90]   /* X29 = 0 (end of the frame chain), X30 = trampoline + 4 */
        mrs     x9, fpcr
        stp     x9,  xzr, [x0, #0xa0]   /* inherit the creator's FPCR */
        str     x0, [x10]               /* c->sp */
        ret
        .cfi_endproc
        .size   ursa__ctx_make, .-ursa__ctx_make

/* A fresh context starts at ursa__ctx_trampoline + 4, with X0 = arg (set by ursa__ctx_jump) and
 * X19 = entry.  .cfi_undefined x30 tells debuggers and unwinders that the call chain ends here.
 * Entered by a ret, so it needs no BTI landing pad. */
        .hidden ursa__ctx_trampoline
        .type   ursa__ctx_trampoline, %function
        .p2align 4
ursa__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined x30
        nop                             /* never run: puts a fresh context's X30 - 1 in this FDE */
        blr     x19                     /* entry(arg); never returns */
        bl      abort                   /* entry returned: there is no caller to go back to */
        brk     #0
        .cfi_endproc
        .size   ursa__ctx_trampoline, .-ursa__ctx_trampoline

        .section .note.GNU-stack,"",%progbits

#if URSA_FEATURE_1_AND
/* NT_GNU_PROPERTY_TYPE_0 note: GNU_PROPERTY_AARCH64_FEATURE_1_AND = BTI (see the header). */
        .section .note.gnu.property,"a"
        .p2align 3
        .word   4                       /* n_namesz: "GNU" and its NUL */
        .word   16                      /* n_descsz: one 8-byte aligned property */
        .word   5                       /* n_type: NT_GNU_PROPERTY_TYPE_0 */
        .asciz  "GNU"                   /* n_name */
        .word   0xc0000000              /* pr_type: GNU_PROPERTY_AARCH64_FEATURE_1_AND */
        .word   4                       /* pr_datasz */
        .word   URSA_FEATURE_1_AND      /* pr_data: the features this object supports */
        .word   0                       /* pad to 8 bytes */
#endif
