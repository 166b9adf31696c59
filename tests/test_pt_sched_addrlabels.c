/* Stackless threads scheduled by ursa (ursa/pt_sched.h) with labels-as-values local
 * continuations: the cases of pts_cases.inc as pts_addrlabels_*. */
#define URSA_LC_IMPL URSA_LC_ADDRLABELS
#define PTS_PREFIX pts_addrlabels_
#include "pts_cases.inc"
