/*
 * ctx_base.h - where a saved context sits in the object the scheduler switches (a thread
 * descriptor, src/core/thread.h): ursa__ctx_jump and ursa__ctx_switch take the objects and find
 * the context at this byte offset themselves, in their addressing modes, so a switch costs no
 * address arithmetic in its callers.  The descriptor starts with its waiter (40 bytes,
 * src/core/waiter.h), which the wait queues link, and core/thread.h checks the offset.
 * Included by context.h and by the assembly (no C here).
 */
#ifndef URSA_ARCH_CTX_BASE_H
#define URSA_ARCH_CTX_BASE_H

#define URSA__CTX_BASE 40

#endif
