// In-handler cost per sample: the real handler, called on a real stack 32 or 128 frames deep
// with the context of that stack, writing into a real ring. This is the time a sampled
// thread loses per sample, without the kernel's signal delivery (measured separately by
// BM_SignalRoundTrip for scale: raise() + an empty handler).
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>

#include "signal/sample_record.h"
#include "signal/sampler.h"
#include "signal/signal_handler.h"

namespace inprof::internal {
namespace {

Sampler g_sampler;
ThreadSlot g_slot;
siginfo_t g_info;

void Setup() {
  static bool done = false;
  if (done) return;
  done = true;
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  g_slot.ring = new SampleRing(1023);
  g_slot.tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
  g_slot.stack_lo.store(reinterpret_cast<uintptr_t>(addr));
  g_slot.stack_hi.store(reinterpret_cast<uintptr_t>(addr) + size);
  g_slot.state.store(SlotState::kActive);
  g_sampler.slots = &g_slot;
  g_sampler.slot_count = 1;
  g_sampler.max_depth = kMaxFrames;
  g_sampler.signal = SIGPROF;
  InstallSamplingHandler(&g_sampler);
  std::memset(&g_info, 0, sizeof g_info);
  g_info.si_signo = SIGPROF;
  g_info.si_code = SI_TIMER;
  g_info.si_value.sival_ptr = reinterpret_cast<void*>(TimerToken::Encode(0, 0, 0));
}

__attribute__((noinline)) void Measure(benchmark::State& state) {
  ucontext_t uc;
  getcontext(&uc);
  int pending = 0;
  for (auto _ : state) {
    SamplingSignalHandler(SIGPROF, &g_info, &uc);
    if (++pending == 1000) {
      while (g_slot.ring->pop()) {
      }
      pending = 0;
    }
  }
  while (g_slot.ring->pop()) {
  }
  state.counters["dropped"] = static_cast<double>(g_sampler.counters.ring_full.load());
}

__attribute__((noinline)) int Recurse(benchmark::State& state, int depth) {
  if (depth <= 1) {
    Measure(state);
    return 0;
  }
  int r = Recurse(state, depth - 1);
  benchmark::DoNotOptimize(r);
  return r + 1;
}

void BM_HandlerSample(benchmark::State& state) {
  Setup();
  Recurse(state, static_cast<int>(state.range(0)));
  state.SetLabel(std::to_string(state.range(0)) + " frames");
}
BENCHMARK(BM_HandlerSample)->Arg(32)->Arg(128);

volatile sig_atomic_t g_hits;
void BM_SignalRoundTrip(benchmark::State& state) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = [](int) { g_hits = g_hits + 1; };
  sigaction(SIGUSR1, &sa, &old);
  for (auto _ : state) raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
}
BENCHMARK(BM_SignalRoundTrip);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
