/*
 * boost_fiber_rss.cpp - peer of ursa_rss_blocked: resident memory per suspended
 * boost::context::fiber with a 16 KiB fixedsize_stack.
 *
 * Creates K fibers and resumes each once; each suspends straight back to main, which keeps the
 * suspended fiber in a vector.  VmRSS is read before and after.
 *   value = (VmRSS after - VmRSS before) / K                                unit KiB/thread
 * The vector (8 bytes per fiber) is reserved before the first reading, so it is not counted.
 * main then leaves with _Exit: destroying K suspended fibers would unwind each one.
 *
 * Usage: boost_fiber_rss [K = 100,000]
 */
#include "../bench_common.h"

#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace bc = boost::context;

static uint64_t suspended;

int main(int argc, char **argv) {
  const uint64_t k = bench_arg(argc, argv, 100000);
  std::vector<bc::fiber> fibers;
  fibers.reserve(k);
  const long before = bench_vmrss_kib();
  for (uint64_t i = 0; i < k; i++) {
    bc::fiber f{std::allocator_arg, bc::fixedsize_stack(16384), [](bc::fiber &&caller) {
                  suspended++;
                  caller = std::move(caller).resume();          // suspend; never resumed again
                  return std::move(caller);
                }};
    fibers.push_back(std::move(f).resume());
  }
  const long after = bench_vmrss_kib();
  if (suspended != k) bench_die("a fiber did not run", 0);
  bench_result(bench_count_name("rss-blocked", k).s, "boost-fiber", double(after - before) / double(k),
               "KiB/thread", -1, k);
  std::_Exit(0);
}
