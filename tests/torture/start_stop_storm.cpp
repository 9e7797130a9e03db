// Eight threads burn CPU with checked results while the main thread stops and starts the
// profiler again and again (inprof_stop / inprof_start(NULL), found with dlsym so the same
// program runs without the profiler). Every engine and unwinder is then set up and torn down
// under threads that are being sampled at the row's rate (4999 Hz): the results must be right,
// every call must succeed, and nothing may crash or hang.
//   start_stop_storm [cycles]   (default 100)
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "torture.h"

namespace {

constexpr int kThreads = 8;
std::atomic<bool> g_stop{false};
std::atomic<int> g_wrong{0};

void* Busy(void*) {
  while (!g_stop.load(std::memory_order_relaxed)) {
    uint64_t chunks = 0;
    if (torture::BurnCpu(0.01, &chunks) != torture::BurnExpected(chunks)) g_wrong.fetch_add(1);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? std::atoi(argv[1]) : 100;
  TORTURE_CHECK(cycles > 0, "usage: start_stop_storm [cycles]");
  using StartFn = int (*)(const char*);
  using StopFn = int (*)();
  using ErrorFn = const char* (*)();
  auto start = reinterpret_cast<StartFn>(dlsym(RTLD_DEFAULT, "inprof_start"));
  auto stop = reinterpret_cast<StopFn>(dlsym(RTLD_DEFAULT, "inprof_stop"));
  auto last_error = reinterpret_cast<ErrorFn>(dlsym(RTLD_DEFAULT, "inprof_last_error"));
  pthread_t threads[kThreads];
  for (pthread_t& t : threads) {
    TORTURE_CHECK(pthread_create(&t, nullptr, Busy, nullptr) == 0, "pthread_create");
  }
  uint64_t chunks = 0;
  for (int i = 0; i < cycles; ++i) {
    if (start != nullptr && stop != nullptr) {
      // The first stop ends the profile the environment started (autostart).
      const int stopped = stop();
      TORTURE_CHECK(stopped == 0 || (i == 0 && stopped == -3), "cycle %d: inprof_stop: %d (%s)", i,
                    stopped, last_error ? last_error() : "");
      TORTURE_CHECK(torture::BurnCpu(0.002, &chunks) == torture::BurnExpected(chunks),
                    "wrong value");
      const int started = start(nullptr);
      TORTURE_CHECK(started == 0, "cycle %d: inprof_start: %d (%s)", i, started,
                    last_error ? last_error() : "");
    }
    // Long enough for every thread to be sampled a few times at 4999 Hz.
    TORTURE_CHECK(torture::BurnCpu(0.005, &chunks) == torture::BurnExpected(chunks), "wrong value");
  }
  g_stop.store(true);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  TORTURE_CHECK(g_wrong.load() == 0, "%d wrong results in the busy threads", g_wrong.load());
  std::printf("start_stop_storm: %d cycles%s\n", cycles,
              start != nullptr ? "" : " (no profiler loaded: threads only)");
  return 0;
}
