/* Stackless threads (ursa/pt.h) with switch-based local continuations, the default: the cases of
 * pt_cases.inc as pt_switch_*. */
#define PT_PREFIX pt_switch_
#define PT_EXPECT_IMPL URSA_LC_SWITCH
#include "pt_cases.inc"
