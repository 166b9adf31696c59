/*
 * boost_fiber_ring.cpp - peer of ursa_ring_yield_to: thread-ring of 503 boost::context::fiber,
 * each pass one direct resume() from fiber i to fiber i + 1 (no scheduler at all).
 *
 * A suspended fiber is a value: table[i] holds fiber i while it is suspended.  Fiber i takes
 * table[i + 1] and resumes it; fiber i + 1 receives fiber i (now suspended) as the value of its
 * resume() (or as its entry argument) and stores it back in table[i].  `from` names the resumer
 * (RING = main) so the first entry of fiber 0 keeps main's fiber aside.  The fiber that receives
 * token 0 prints its 1-based id (361 for N = 10,000,000) and returns to main.
 *
 * As in ursa_ring_yield_to the token starts at N + 503: the first lap enters every fiber, and the
 * clock runs from token N to token 0.
 *   value = ns per pass = interval / N                                      unit ns/pass
 * Fibers use boost's default fixedsize_stack.
 *
 * Usage: boost_fiber_ring [N = 10,000,000 passes]
 */
#include "../bench_common.h"

#include <boost/context/fiber.hpp>

#include <utility>

namespace bc = boost::context;

static const unsigned RING = 503;

static bc::fiber table[RING];     // fiber i while it is suspended
static bc::fiber main_fiber;      // main, while the ring runs
static unsigned from = RING;      // who resumed the fiber that runs now (RING: main)
static uint64_t token, n_passes;
static long long answer = -1;
static uint64_t t_start, t_end;

// Stores the fiber that just resumed us where it belongs.
static void park(bc::fiber &&resumer) {
  if (from == RING) main_fiber = std::move(resumer);
  else table[from] = std::move(resumer);
}

static bc::fiber member(unsigned me, bc::fiber &&caller) {
  const unsigned next = me + 1 == RING ? 0 : me + 1;
  park(std::move(caller));
  for (;;) {
    if (token == n_passes) t_start = bench_now_ns();
    if (token == 0) break;
    token--;
    from = me;
    park(std::move(table[next]).resume());
  }
  t_end = bench_now_ns();
  answer = me + 1;
  return std::move(main_fiber);   // ends this fiber and resumes main
}

int main(int argc, char **argv) {
  n_passes = bench_arg(argc, argv, 10000000);
  for (unsigned i = 0; i < RING; i++)
    table[i] = bc::fiber{[i](bc::fiber &&c) { return member(i, std::move(c)); }};
  token = n_passes + RING;
  from = RING;
  bc::fiber back = std::move(table[0]).resume();    // runs the whole ring
  (void)back;
  bench_result("ring-direct", "boost-fiber", double(t_end - t_start) / double(n_passes), "ns/pass",
               answer, n_passes);
  // The 502 fibers left in the table are unwound by their destructors at exit.
  return answer == bench_ring_answer(n_passes, RING) ? 0 : 1;
}
