// pt_cxx.cpp - a C++ program using std::thread, std::mutex and std::condition_variable, compiled
// normally; tests/CMakeLists.txt runs it through ursa-run (issue #17's acceptance: 2 VPs).  Eight
// producers push 1..1000 each through a bounded queue to four consumers; the total must be
// 8 * 500500, and the program must have run on ursa (ursa_self names a thread).
#include <dlfcn.h>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

int main() {
  auto self = reinterpret_cast<void *(*)()>(dlsym(RTLD_DEFAULT, "ursa_self"));
  if (self == nullptr || self() == nullptr) { std::fprintf(stderr, "not on ursa\n"); return 1; }
  std::mutex m;
  std::condition_variable not_empty, not_full;
  std::deque<long> q;
  long total = 0;
  int producers_left = 8;
  std::vector<std::thread> ts;
  for (int p = 0; p < 8; p++)
    ts.emplace_back([&] {
      for (long i = 1; i <= 1000; i++) {
        std::unique_lock<std::mutex> l(m);
        not_full.wait(l, [&] { return q.size() < 16; });
        q.push_back(i);
        not_empty.notify_one();
      }
      std::lock_guard<std::mutex> g(m);
      producers_left--;
      not_empty.notify_all();
    });
  for (int c = 0; c < 4; c++)
    ts.emplace_back([&] {
      for (;;) {
        std::unique_lock<std::mutex> l(m);
        if (!not_empty.wait_for(l, std::chrono::seconds(30), [&] { return !q.empty() || producers_left == 0; }))
          continue;
        if (q.empty()) return;
        total += q.front();
        q.pop_front();
        not_full.notify_one();
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (auto &t : ts) t.join();
  std::printf("%ld\n", total);
  return total == 8 * 500500L ? 0 : 1;
}
