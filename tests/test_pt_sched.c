/* Stackless threads scheduled by ursa (ursa/pt_sched.h) with switch-based local continuations,
 * the default: the cases of pts_cases.inc as pts_switch_*. */
#define PTS_PREFIX pts_switch_
#include "pts_cases.inc"
