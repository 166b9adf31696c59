/*
 * boost_fiber_create.cpp - peer of ursa_create_join: create + resume + finish of an empty
 * boost::context::fiber with a 16 KiB fixedsize_stack, N times one after another.
 *
 * Each iteration allocates the stack (fixedsize_stack: malloc), makes the fiber, resumes it; the
 * fiber returns at once to main, which ends it and frees its stack.
 *   value = ns per create + resume + finish = interval / N                  unit ns/op
 *
 * Usage: boost_fiber_create [N = 1,000,000]
 */
#include "../bench_common.h"

#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <memory>
#include <utility>

namespace bc = boost::context;

static uint64_t ran;

static void create_finish(uint64_t count) {
  for (uint64_t i = 0; i < count; i++) {
    bc::fiber f{std::allocator_arg, bc::fixedsize_stack(16384), [](bc::fiber &&caller) {
                  ran++;
                  return std::move(caller);
                }};
    f = std::move(f).resume();
    if (f) bench_die("fiber did not finish", 0);
  }
}

int main(int argc, char **argv) {
  const uint64_t n = bench_arg(argc, argv, 1000000);
  create_finish(10000);                                   // warm malloc and caches
  const uint64_t t0 = bench_now_ns();
  create_finish(n);
  const uint64_t t1 = bench_now_ns();
  if (ran != n + 10000) bench_die("a fiber did not run", 0);
  bench_result("create-join", "boost-fiber", double(t1 - t0) / double(n), "ns/op", -1, n);
  return 0;
}
