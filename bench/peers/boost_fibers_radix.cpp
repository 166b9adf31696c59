/*
 * boost_fibers_radix.cpp - peer of radix_sort.c's fork-join phases with Boost.Fiber (the fiber
 * library): per phase 2^r boost::fibers::fiber (64 KiB stacks) made, then joined, on one kernel
 * thread with Boost.Fiber's default scheduler.  The sort, its check and the RESULT line are
 * radix_common.h's, as for the other radix peers.
 *
 * Usage: boost_fibers_radix [r = 8] [log2 keys = 22]   (radix_common.h: radix_main)
 */
#include "radix_common.h"

#include <boost/fiber/all.hpp>

#include <vector>

namespace bf = boost::fibers;

static std::vector<bf::fiber> fibers;

static void phase_fibers(radix_slice_fn slice) {
  fibers.clear();
  for (uint32_t t = 0; t < radix_nthr; t++)
    fibers.emplace_back(std::allocator_arg, bf::fixedsize_stack(65536), [slice, t] { slice(t); });
  for (auto &f : fibers) f.join();
}

int main(int argc, char **argv) {
  fibers.reserve((size_t)1 << 14);
  return radix_main(argc, argv, "boost-fibers", phase_fibers);
}
