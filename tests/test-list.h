/* Every test, once: TEST(name) for a function TEST_IMPL(name).  CTest registers each of them
 * (tests/CMakeLists.txt reads this file and the list-*.h files it includes). */
TEST(thread_create_join)
TEST(thread_fifo_yield)
TEST(thread_yield_to)
TEST(thread_yield_to_blocked_is_plain_yield)
TEST(thread_errno_per_thread)
TEST(thread_exit_detach_self)
TEST(thread_sleep)
TEST(thread_stats)
TEST(thread_init_fini_again)
TEST(thread_dump)
TEST(thread_dump_signal)
TEST(thread_dump_signal_bad_value)
#include "list-core.h"
#include "list-sync.h"
#include "list-pt.h"
#include "list-pts.h"
#include "list-queues.h"
#include "list-smp.h"
#include "list-trace.h"
#include "list-model.h"
#include "list-config.h"
#include "list-time.h"
#include "list-owner.h"
#include "list-hardening.h"
#include "list-fuzz.h"
#include "list-contract.h"
#include "list-io.h"
#include "list-explore.h"
