/*
 * boost_fiber_radix.cpp - peer of radix_sort.c's fork-join variants with boost::context::fiber
 * on one kernel thread (no scheduler, no parallelism: compare it with ursa at 1 VP).  Each
 * parallel phase makes 2^8 fibers (64 KiB fixedsize_stack, like radix_sort.c's threads), then
 * resumes each in turn; a fiber runs its slice to the end and returns to main, which destroys it:
 * fork = create all, join = run each to completion.  The sort, the keys and the checks are
 * radix_sort.c's (peers/radix_common.h).
 *
 * Usage: boost_fiber_radix [all | r | r1,r2,... (1..12)] [log2 keys = 22] [log2 threads = 8]
 */
#include "radix_common.h"

#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace bc = boost::context;

static std::vector<bc::fiber> fibers;

static void phase_fiber(radix_slice_fn slice) {
  fibers.clear();
  for (uint32_t t = 0; t < radix_nthr; t++)
    fibers.emplace_back(std::allocator_arg, bc::fixedsize_stack(65536), [slice, t](bc::fiber &&caller) {
      slice(t);
      return std::move(caller);
    });
  for (auto &f : fibers) {
    f = std::move(f).resume();
    if (f) bench_die("a fiber did not finish", 0);
  }
}

int main(int argc, char **argv) {
  fibers.reserve((size_t)1 << 14);
  return radix_main(argc, argv, "boost-fiber", phase_fiber);
}
