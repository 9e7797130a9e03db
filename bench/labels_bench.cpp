// The cost of labels to the program (Google Benchmark), through the public API of the shared
// library as a program calls it: a set/restore pair the thread has made before (the cached
// move: what a request loop does), a value the thread never set before (the table's lock and
// an interned set), and for scale, a std::mutex lock/unlock pair and a relaxed atomic store.
//
//   build/bench/inprof_labels_bench
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <inprof/inprof.hpp>

namespace {

// The request loop: the same two values over and over, set and put back.
void BM_ScopedLabelSeenBefore(benchmark::State& state) {
  const char* values[] = {"/api/users", "/api/orders"};
  size_t i = 0;
  for (auto _ : state) {
    inprof::ScopedLabel label("endpoint", values[++i & 1]);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ScopedLabelSeenBefore);

// inprof_label_set and inprof_label_clear of one key, both cached moves.
void BM_SetThenClear(benchmark::State& state) {
  for (auto _ : state) {
    inprof_label_set("tenant", "acme");
    inprof_label_clear("tenant");
  }
}
BENCHMARK(BM_SetThenClear);

// A value built in a reused buffer: the cache is keyed by the caller's pointers and checks the
// text, so a buffer whose text changed is a lookup under the table's lock.
void BM_SetFromReusedBuffer(benchmark::State& state) {
  char buffer[32];
  size_t i = 0;
  for (auto _ : state) {
    std::snprintf(buffer, sizeof buffer, "/api/%zu", ++i % 8);
    inprof_label_set("endpoint", buffer);
  }
  inprof_label_clear(nullptr);
}
BENCHMARK(BM_SetFromReusedBuffer);

void BM_MutexLockUnlock(benchmark::State& state) {
  std::mutex mu;
  for (auto _ : state) {
    mu.lock();
    mu.unlock();
  }
}
BENCHMARK(BM_MutexLockUnlock);

void BM_RelaxedAtomicStore(benchmark::State& state) {
  static std::atomic<unsigned> word{0};
  unsigned i = 0;
  for (auto _ : state) word.store(++i, std::memory_order_relaxed);
}
BENCHMARK(BM_RelaxedAtomicStore);

}  // namespace

BENCHMARK_MAIN();
