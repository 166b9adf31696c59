/*
 * runtime.h - the top layer: ursa_init and ursa_fini wire the layers below together (runtime.c),
 * and the dump thread of URSA_DUMP_SIGNAL (dumpsig.c).
 */
#ifndef URSA_RUNTIME_H
#define URSA_RUNTIME_H

#include "../sched/sched.h"

/* URSA_DUMP_SIGNAL: started at the end of ursa_init, stopped first in ursa_fini. */
URSA_HIDDEN void ursa__dumpsig_start(void);
URSA_HIDDEN void ursa__dumpsig_stop(void);
URSA_HIDDEN void ursa__dumpsig_atfork_child(void);   /* the fork handler, in the child */

#endif /* URSA_RUNTIME_H */
