// The collector: the one thread ("inprof-collect") that takes samples out of the handler's
// per-thread rings, turns them into stacks (frame-pointer chains adjusted for lookup, or
// DWARF unwinding of stack copies) and hands each to its sink (the session, which
// aggregates). It also keeps the handler's code ranges current and rescans threads.
//
//   handler -> ThreadSlot rings / stack copies -> Collector::DrainLocked -> SampleSink
//
// Concurrency contract: the drain runs under the session's data lock (`mu`, given at
// construction), on the collector thread every few milliseconds, and on any thread that
// needs the newest samples (dump, tap, Lua stack, dlclose hook) with that lock held. The
// code-range tables are the collector thread's (and Start's, before it runs). Start/Stop are
// called by the session's Start/Stop. The handler reads only what the sampler publishes.
// Not async-signal-safe.
#ifndef INPROF_SDK_COLLECTOR_H_
#define INPROF_SDK_COLLECTOR_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "inprof/dwarf_unwind.h"
#include "internal/sampler.h"
#include "internal/stack_buffer.h"
#include "internal/thread_registry.h"

namespace inprof::internal {

// Where the collector delivers. Called under the data lock.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // One sample of `slot`'s thread: `stack` leaf first, without the thread marker (there is
  // room to append it).
  virtual void OnSample(ThreadSlot& slot, StackBuffer& stack, uint32_t weight,
                        uint16_t event) = 0;
  // After each drain on the collector thread (continuous mode closes windows here).
  virtual void OnDrained() = 0;
  // The process loaded or unloaded a module (outside the data lock).
  virtual void OnModulesChanged() = 0;
};

// How the drained stacks ended, for the health block.
struct DrainCounts {
  uint64_t truncated = 0;       // deeper than max_depth: cut at [truncated]
  uint64_t copy_truncated = 0;  // the copied window was too small for the whole stack
  uint64_t broken = 0;          // the walk met a bad frame
  uint64_t leaf_only = 0;       // the thread's stack bounds were not yet known
  uint64_t dwarf_chains = 0;    // samples whose chain came from DWARF
  uint64_t fp_chains = 0;       // ... from the fp walk (auto, where DWARF stopped earlier)
  uint64_t recovered_leaf_callers = 0;
};

class Collector {
 public:
  // `dwarf` null: stack copies are not unwound (unwind=fp).
  Collector(Sampler* sampler, std::mutex* mu, SampleSink* sink,
            std::unique_ptr<DwarfUnwinder> dwarf);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Publishes new code ranges to the handler when the module list changed (or `force`);
  // returns whether it did. Collector thread, or before Start.
  bool RefreshCodeRanges(bool force);
  // Starts the thread, draining every `drain_ms` and rescanning `registry` every 100 ms.
  // Returns its tid, or 0 with errno set.
  pid_t Start(ThreadRegistry* registry, int drain_ms);
  // Ends the thread (idempotent). The last drain is the caller's.
  void Stop();
  // Drains every ring, unwinding stack copies unless a dlclose is in progress
  // (`before_dlclose`: the hook's own drain, just before its unload). Caller holds the lock.
  void DrainLocked(bool before_dlclose = false);
  bool unwinds_copies() const { return dwarf_ != nullptr; }
  const DrainCounts& counts() const { return counts_; }  // under the lock

 private:
  // Code ranges published to the handler (the newest is in sampler->code) and the ones
  // replaced since, which a handler may still be reading: freed by ReclaimCodeRanges once no
  // handler is in flight, so dlopen/dlclose churn does not grow them.
  struct CodeTable {
    std::vector<uintptr_t> bounds;
    CodeRanges view;
  };
  static void* Entry(void* self);
  void Main();
  void ReclaimCodeRanges();
  // A sample's frames, adjusted for lookup (return address - 1) with a stop marker, into
  // `out`. Caller holds the lock.
  void AdjustFrames(std::span<const uintptr_t> frames, WalkStop stop, StackBuffer* out);
  void UnwindCopy(const CopyRecord& copy, const uint8_t* bytes, StackBuffer* out);

  Sampler* sampler_;
  std::mutex* mu_;
  SampleSink* sink_;
  ThreadRegistry* registry_ = nullptr;
  std::unique_ptr<DwarfUnwinder> dwarf_;
  std::vector<uintptr_t> dwarf_pcs_;  // under the lock
  StackBuffer stack_;                  // the sample being drained, under the lock
  DrainCounts counts_;                 // under the lock
  std::unique_ptr<CodeTable> code_current_;
  std::vector<std::unique_ptr<CodeTable>> code_retired_;
  unsigned long long modules_stamp_ = ~0ull;
  int wake_fd_ = -1;
  int drain_ms_ = 10;
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<bool> stop_requested_{false};
};

// Threads inside dlclose right now (dlclose_hook.cpp): stack copies are not unwound meanwhile.
extern std::atomic<int> g_dlclose_in_progress;

}  // namespace inprof::internal

#endif  // INPROF_SDK_COLLECTOR_H_
