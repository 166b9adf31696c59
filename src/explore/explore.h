/*
 * explore.h - schedule exploration (issue #21): one kernel thread runs every ursa thread, and a
 * seeded strategy picks the thread that runs at every scheduling point; time is virtual; each run
 * records its decisions, prints its seed and schedule when it fails, and replays from the seed or
 * the trace file.  Called by src/runtime/ only (ursa_init, ursa_fini, the ursa_explore driver).
 */
#ifndef URSA_EXPLORE_H
#define URSA_EXPLORE_H

#include "../sched/sched.h"

/* ursa_init, before the model's set-up: reads cfg->explore / URSA_EXPLORE and the seed (cfg->seed,
 * URSA_SEED, URSA_REPLAY), and when exploration is asked for, sets ursa__g.explore and makes the
 * runtime one VP (c->vps becomes 1; ursa__g.vps_api keeps what was asked).  -EINVAL for a bad
 * strategy, seed or trace file (with a line on stderr); -ENOTSUP in a build without the trace's
 * hooks (-DURSA_WITH_TRACE=OFF).  0 when exploration is off. */
URSA_HIDDEN int  ursa__explore_config(ursa_config_t *c, const ursa_config_t *given);
/* ursa_init, once the model is set up and before VP 0's mode is set: the hooks, the virtual clock,
 * the failure reports.  -ENOMEM. */
URSA_HIDDEN int  ursa__explore_start(struct ursa__vp *vp0);
/* ursa_fini (and a failed ursa_init): exploration off, its memory freed. */
URSA_HIDDEN void ursa__explore_stop(struct ursa__vp *vp0);
/* The driver (src/runtime/explore_run.c): the file descriptor a child writes its step count to
 * when it exits ("steps N\n"), -1 for none (also URSA_EXPLORE_REPORT_FD). */
URSA_HIDDEN void ursa__explore_report_to(int fd);
/* The driver's child, done: what the exit handler does (the report of a failure, the step count),
 * then _exit(status): the handlers the parent registered (atexit) are not the child's to run, and
 * a sanitizer's exit work (TSan sleeps a second) is not paid per schedule. */
URSA_HIDDEN void ursa__explore_exit(int status) __attribute__((noreturn));
/* Parses a strategy ("random", "pct", "pct:D", "pct:D:K"): 0, or -EINVAL. */
URSA_HIDDEN int  ursa__explore_parse(const char *s, int *kind, unsigned *depth, uint64_t *steps);

#endif /* URSA_EXPLORE_H */
