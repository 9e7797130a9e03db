// The cost of DWARF unwinding split where it is paid:
//  - BM_CopyStack: in the handler, copying registers + the stack window into a prefaulted
//    buffer (what a sampled thread loses per sample, besides signal delivery);
//  - BM_Unwind/<backend>/<depth>: on the collector thread, unwinding one such copy, warm
//    (modules read, caches filled by earlier iterations), through frames built without
//    frame pointers.
// Copies come from getcontext() deep in a recursion: the same registers and stack a signal
// handler would see at that point, without the signal.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <ucontext.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "inprof/dwarf_unwind.h"
#include "inprof/unwind.h"
#include "unwind_frames.h"

namespace inprof::bench {
namespace {

StackBounds ThreadStack() {
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  return {reinterpret_cast<uintptr_t>(addr), reinterpret_cast<uintptr_t>(addr) + size};
}

void BM_CopyStack(benchmark::State& state) {
  const size_t window = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buffer(window);
  std::memset(buffer.data(), 1, buffer.size());  // prefaulted, as the runtime does
  const StackBounds bounds = ThreadStack();
  RunAtDepth(100, [&] {
    ucontext_t context;
    getcontext(&context);
    StackCopy copy;
    for (auto _ : state) {
      CopyStack(&context, bounds, buffer.data(), buffer.size(), &copy);
      benchmark::DoNotOptimize(copy.bytes);
      benchmark::ClobberMemory();
    }
    state.counters["bytes"] = copy.bytes;
  });
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(window));
}
BENCHMARK(BM_CopyStack)->Arg(4096)->Arg(16384)->Arg(65536);

void BM_Unwind(benchmark::State& state) {
  const auto backend = static_cast<DwarfBackend>(state.range(0));
  const int depth = static_cast<int>(state.range(1));
  auto created = DwarfUnwinder::Create(backend);
  if (!created.ok()) {
    state.SkipWithError(created.status().message().c_str());
    return;
  }
  std::unique_ptr<DwarfUnwinder> unwinder = std::move(*created);
  std::vector<uint8_t> buffer(64 * 1024);
  StackCopy copy;
  const StackBounds bounds = ThreadStack();
  RunAtDepth(depth, [&] {
    ucontext_t context;
    getcontext(&context);
    CopyStack(&context, bounds, buffer.data(), buffer.size(), &copy);
  });
  uintptr_t pcs[512];
  UnwindResult result;
  for (auto _ : state) {
    result = unwinder->Unwind(copy, buffer.data(), pcs, 512);
    benchmark::DoNotOptimize(result);
  }
  state.counters["frames"] = result.depth;
  if (result.stop != UnwindStop::kRoot) state.SkipWithError(UnwindStopName(result.stop));
  state.SetLabel(backend == DwarfBackend::kLibunwind ? "libunwind" : "libdwfl");
}
BENCHMARK(BM_Unwind)
    ->ArgNames({"backend", "depth"})
    ->Args({static_cast<int>(DwarfBackend::kLibunwind), 20})
    ->Args({static_cast<int>(DwarfBackend::kLibunwind), 100})
    ->Args({static_cast<int>(DwarfBackend::kLibdwfl), 20})
    ->Args({static_cast<int>(DwarfBackend::kLibdwfl), 100});

// A fresh unwinder per batch of samples: what the first samples after start or after a
// RefreshModules() cost (libunwind's cache and libdwfl's per-module CFI are empty).
void BM_UnwindCold(benchmark::State& state) {
  const auto backend = static_cast<DwarfBackend>(state.range(0));
  std::vector<uint8_t> buffer(64 * 1024);
  StackCopy copy;
  const StackBounds bounds = ThreadStack();
  RunAtDepth(20, [&] {
    ucontext_t context;
    getcontext(&context);
    CopyStack(&context, bounds, buffer.data(), buffer.size(), &copy);
  });
  auto unwinder = *DwarfUnwinder::Create(backend);
  uintptr_t pcs[512];
  for (auto _ : state) {
    unwinder->RefreshModules();
    benchmark::DoNotOptimize(unwinder->Unwind(copy, buffer.data(), pcs, 512));
  }
  state.SetLabel(backend == DwarfBackend::kLibunwind ? "libunwind" : "libdwfl");
}
BENCHMARK(BM_UnwindCold)
    ->ArgName("backend")
    ->Arg(static_cast<int>(DwarfBackend::kLibunwind))
    ->Arg(static_cast<int>(DwarfBackend::kLibdwfl));

}  // namespace
}  // namespace inprof::bench
