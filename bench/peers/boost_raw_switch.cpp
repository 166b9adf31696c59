/*
 * boost_raw_switch.cpp - peer of ursa_yield_pingpong: Boost.Context's raw context switch.
 *
 * One context made by make_fcontext on a 64 KiB stack; main and the context jump to each other
 * with jump_fcontext, N round trips.  This is the floor a user-level thread switch can reach
 * (registers saved and restored, nothing else: no run queue, no scheduler, no errno).
 *   value = ns per switch = interval / (2 N)                                unit ns/switch
 * The context counts its resumptions; a wrong count fails the program.
 *
 * Usage: boost_raw_switch [N = 50,000,000 round trips]
 */
#include "../bench_common.h"

#include <boost/context/detail/fcontext.hpp>

#include <cstdio>
#include <cstdlib>

namespace ctx = boost::context::detail;

static uint64_t resumed;          // times the context was entered or resumed

// The context: forever hands control straight back to whoever jumped to it.
static void bouncer(ctx::transfer_t t) {
  for (;;) {
    resumed++;
    t = ctx::jump_fcontext(t.fctx, nullptr);
  }
}

int main(int argc, char **argv) {
  const uint64_t n = bench_arg(argc, argv, 50000000);
  const std::size_t size = 65536;
  void *stack = std::malloc(size);
  if (stack == nullptr) bench_die("malloc", ENOMEM);
  ctx::fcontext_t other = ctx::make_fcontext(static_cast<char *>(stack) + size, size, bouncer);

  other = ctx::jump_fcontext(other, nullptr).fctx;        // start it once, unmeasured
  const uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < n; i++) other = ctx::jump_fcontext(other, nullptr).fctx;
  const uint64_t t1 = bench_now_ns();

  if (resumed != n + 1) {
    std::fprintf(stderr, "boost_raw_switch: context resumed %llu times, expected %llu\n",
                 static_cast<unsigned long long>(resumed), static_cast<unsigned long long>(n + 1));
    return 1;
  }
  bench_result("raw-switch", "boost-fcontext", double(t1 - t0) / double(2 * n), "ns/switch", -1,
               2 * n);
  return 0;    // the context is left suspended: its stack is just memory
}
