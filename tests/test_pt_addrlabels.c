/* Stackless threads (ursa/pt.h) with labels-as-values local continuations: the cases of
 * pt_cases.inc as pt_addrlabels_*. */
#define URSA_LC_IMPL URSA_LC_ADDRLABELS
#define PT_PREFIX pt_addrlabels_
#define PT_EXPECT_IMPL URSA_LC_ADDRLABELS
#include "pt_cases.inc"
