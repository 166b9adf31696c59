/*
 * boost_fibers_peers.cpp - Boost.Fiber (the fiber library with its own scheduler, channels and
 * join, built on Boost.Context) as a peer of ursa: one binary, one benchmark per mode, all on one
 * kernel thread with Boost.Fiber's default round-robin scheduler.
 *
 *   yield  [N]  2 fibers alternating boost::this_fiber::yield()        ns/switch  (yield-pingpong)
 *   ring   [N]  503 fibers, an unbuffered channel each; a fiber pops the token, pushes token - 1 to
 *               the next one; the fiber that pops 0 records its id      ns/pass    (ring-sem)
 *   create [N]  boost::fibers::fiber of an empty function + join, 16 KiB stack     ns/op
 *   rss    [K]  K fibers blocked on a channel pop, 16 KiB stacks        KiB/thread (rss-blocked-<K>)
 *
 * Each prints one RESULT line (bench_common.h), impl boost-fibers.  The ring's answer is checked by
 * the driver (bench/run.py) like every ring's: (N mod 503) + 1.
 */
#include "../bench_common.h"

#include <boost/fiber/all.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace bf = boost::fibers;

static const char *kImpl = "boost-fibers";

static int yield_pingpong(uint64_t n) {
  uint64_t turns[2] = {0, 0};
  int turn = 0;
  uint64_t misses = 0;
  auto player = [&](int me) {
    for (uint64_t i = 0; i < n; i++) {
      if (turn != me) misses++;
      turn = 1 - me;
      turns[me]++;
      boost::this_fiber::yield();
    }
  };
  const uint64_t t0 = bench_now_ns();
  bf::fiber a(player, 0), b(player, 1);
  a.join();
  b.join();
  const uint64_t t1 = bench_now_ns();
  if (turns[0] != n || turns[1] != n) bench_die("a fiber did not finish its yields", 0);
  if (misses > n / 100) bench_die("the fibers did not alternate", 0);
  bench_result("yield-pingpong", kImpl, double(t1 - t0) / double(2 * n), "ns/switch", -1, n);
  return 0;
}

static int ring(uint64_t n) {
  enum { RING = 503 };
  std::vector<std::unique_ptr<bf::unbuffered_channel<uint64_t>>> ch;
  long long answer = -1;
  for (int i = 0; i < RING; i++) ch.emplace_back(new bf::unbuffered_channel<uint64_t>());
  std::vector<bf::fiber> members;
  for (int i = 0; i < RING; i++) {
    members.emplace_back([&, i] {
      uint64_t token;
      while (ch[i]->pop(token) == bf::channel_op_status::success) {
        if (token == 0) {
          answer = i + 1;
          for (auto &c : ch) c->close();                 // every other member ends
          return;
        }
        if (ch[(i + 1) % RING]->push(token - 1) != bf::channel_op_status::success) return;
      }
    });
  }
  boost::this_fiber::yield();                           // every member waits on its channel
  const uint64_t t0 = bench_now_ns();
  ch[0]->push(n);
  for (auto &m : members) m.join();
  const uint64_t t1 = bench_now_ns();
  bench_result("ring-sem", kImpl, double(t1 - t0) / double(n), "ns/pass", answer, n);
  return answer == bench_ring_answer(n, RING) ? 0 : 1;
}

static int create_join(uint64_t n) {
  uint64_t ran = 0;
  auto once = [&](uint64_t count) {
    for (uint64_t i = 0; i < count; i++) {
      bf::fiber f(std::allocator_arg, bf::fixedsize_stack(16384), [&ran] { ran++; });
      f.join();
    }
  };
  once(10000);                                          // warm malloc and caches
  const uint64_t t0 = bench_now_ns();
  once(n);
  const uint64_t t1 = bench_now_ns();
  if (ran != n + 10000) bench_die("a fiber did not run", 0);
  bench_result("create-join", kImpl, double(t1 - t0) / double(n), "ns/op", -1, n);
  return 0;
}

static int rss_blocked(uint64_t k) {
  bf::unbuffered_channel<int> never;
  uint64_t started = 0;
  std::vector<bf::fiber> fibers;
  fibers.reserve(k);
  const long before = bench_vmrss_kib();
  for (uint64_t i = 0; i < k; i++)
    fibers.emplace_back(std::allocator_arg, bf::fixedsize_stack(16384), [&] {
      int v;
      started++;
      (void)never.pop(v);                               // blocks until the channel closes
    });
  while (started < k) boost::this_fiber::yield();       // every fiber has run to its pop
  const long after = bench_vmrss_kib();
  bench_result(bench_count_name("rss-blocked", k).s, kImpl, double(after - before) / double(k),
               "KiB/thread", -1, k);
  std::_Exit(0);                                        // no teardown of K blocked fibers
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const uint64_t n = bench_arg(argc - 1, argv + 1, 1000000);
  if (std::strcmp(mode, "yield") == 0) return yield_pingpong(n);
  if (std::strcmp(mode, "ring") == 0) return ring(n);
  if (std::strcmp(mode, "create") == 0) return create_join(n);
  if (std::strcmp(mode, "rss") == 0) return rss_blocked(n);
  std::fprintf(stderr, "usage: %s yield|ring|create|rss [N]\n", argv[0]);
  return 2;
}
