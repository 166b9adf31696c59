/*
 * io.h - the I/O layer (src/io/): an I/O engine per VP, the calls of include/ursa.h that block
 * only the calling ursa thread (ursa_read, ursa_accept, ursa_poll, ...) and the offload pool
 * (ursa_offload).  It sits above src/sync/ and below src/pt/ (scripts/check-layers.sh); the
 * scheduler reaches it only through ursa__io_hooks (src/sched/sched.h), filled by ursa__io_init.
 * io.c describes the protocol.
 */
#ifndef URSA_IO_H
#define URSA_IO_H

#include "../sched/sched.h"

enum { URSA__IO_NONE = 0, URSA__IO_EPOLL = 1, URSA__IO_URING = 2 };

/* ursa_init, after VPs 1..N-1 exist (their engines are made here, one per VP): the engine (want:
 * URSA__IO_* from URSA_IO / ursa_config_t.io, 0 for the default) and the offload pool's size. */
URSA_HIDDEN int  ursa__io_init(int want, unsigned offload_threads);
/* ursa_fini, on main with no other user thread live: the pollers still live (their threads are
 * not the user's: ursa_fini's -EBUSY check leaves them out). */
URSA_HIDDEN size_t ursa__io_pollers_live(void);
/* ursa_fini: stops the pollers (waits for their threads to finish) and the offload pool.  Before
 * the VPs stop. */
URSA_HIDDEN void ursa__io_fini(void);
/* ursa_fini: closes and frees the engines.  After the VPs stop: until then an idle VP may look
 * into another VP's engine (the stalled-VP help, src/sched/vp.c "Stealing") and a kick may write
 * a sleeping VP's eventfd. */
URSA_HIDDEN void ursa__io_free(void);
/* "epoll", "io_uring" or "none" (before ursa_init): ursa_stats_print and ursa_io_engine. */
URSA_HIDDEN const char *ursa__io_name(void);
/* The child of a fork that keeps the runtime (runtime.c's atfork handler). */
URSA_HIDDEN void ursa__io_atfork_child(void);
/* Why the engine is not io_uring ("URSA_IO=epoll", "io_uring_setup: ..."), "" when it is. */
URSA_HIDDEN const char *ursa__io_why(void);

#endif /* URSA_IO_H */
