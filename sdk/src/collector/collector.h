// The collector: the one thread ("inprof-collect") that takes samples out of the handler's
// per-thread rings, turns them into stacks (frame-pointer chains adjusted for lookup, or
// DWARF unwinding of stack copies) and hands each to its sink (the session, which
// aggregates). It also keeps the handler's code ranges current and rescans threads.
//
//   handler -> ThreadSlot rings / stack copies -> Collector::DrainLocked -> SampleSink
//
// Concurrency contract: the drain runs under the session's data_mu_ (given at construction,
// mu_ here), on the collector thread every few milliseconds, and on any thread that
// needs the newest samples (dump, tap, Lua stack, dlclose hook) with that lock held. The
// code-range tables are the collector thread's (and Start's, before it runs). Start/Stop are
// called by the session's Start/Stop. The handler reads only what the sampler publishes.
//
// Invariant of the handler's code ranges (Sampler::code): no address in a table a handler
// may read can be unmapped. The frame-pointer walk reads code bytes (and a PLT stub's GOT
// slot) at addresses it has checked against the table, so a library must leave the table,
// and every handler that may still hold the old table must have returned, before the library
// is unmapped. dlclose is the only way a module's mapping goes away; the dlclose hook calls
// BeforeDlcloseUnmap (the table without the modules the call may unload is published and
// in-flight handlers are waited for) before the real dlclose, and AfterDlcloseUnmap after it.
// Tables are built and published under one process-wide code lock (the collector thread's
// refresh, the dlclose hook, Start): a leaf lock, held only around dl_iterate_phdr and the
// table build, never while waiting for handlers or for another thread. Replaced tables are
// freed only when no handler is in flight, never while one is stuck (signal_handler.h).
// Not async-signal-safe.
#ifndef INPROF_SDK_COLLECTOR_H_
#define INPROF_SDK_COLLECTOR_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collector/stack_buffer.h"
#include "inprof/dwarf_unwind.h"
#include "inprof/thread_annotations.h"
#include "signal/sampler.h"
#include "threads/thread_registry.h"

namespace inprof::internal {

// The process-wide code lock (collector.cpp): the handler's code tables are built and
// published under it.
class CAPABILITY("mutex") CodeLock;
CodeLock& TheCodeLock();

// Where the collector delivers. Called under the collector's lock (the session's data_mu_).
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // One sample of `slot`'s thread: `stack` leaf first, without the thread marker (there is
  // room to append it).
  virtual void OnSample(ThreadSlot& slot, StackBuffer& stack, const SampleMeta& meta) = 0;
  // After each drain on the collector thread (continuous mode closes windows here).
  virtual void OnDrained() = 0;
  // The process loaded or unloaded a module (without the collector's lock).
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
  Collector(Sampler* sampler, Mutex* mu, SampleSink* sink,
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
  // (`before_dlclose`: the hook's own drain, just before its unload).
  // An exception from the sink or the unwinder drops that one sample (counted, see
  // Warnings) and the drain goes on.
  void DrainLocked(bool before_dlclose = false) REQUIRES(mu_);
  bool unwinds_copies() const { return dwarf_ != nullptr; }
  // A stack copy taken before the session started (a bootstrap sample, signal/bootstrap.h),
  // unwound into `out` as a drained copy is. False when copies are not unwound (unwind=fp) or
  // the unwinder failed: the caller keeps the sample's fp walk then.
  bool UnwindEarlyCopyLocked(const CopyRecord& copy, const uint8_t* bytes, StackBuffer* out)
      REQUIRES(mu_);
  const DrainCounts& counts() const REQUIRES(mu_) { return counts_; }
  // What went wrong on the collector's side, for the health block's warnings: samples
  // dropped by an exception, and whether the thread stopped early.
  std::vector<std::string> Warnings() const REQUIRES(mu_);
  // The lock the collector drains under: the session's data_mu_.
  Mutex* lock() const RETURN_CAPABILITY(mu_) { return mu_; }

 private:
  // Code ranges published to the handler (the newest is in sampler->code) and the ones
  // replaced since, which a handler may still be reading: freed by ReclaimCodeRanges once no
  // handler is in flight, so dlopen/dlclose churn does not grow them.
  struct CodeTable {
    std::vector<uintptr_t> bounds;
    std::vector<uintptr_t> readable_bounds;
    CodeRanges view;
  };
  friend struct CodeGateAccess;
  static void* Entry(void* self);
  void Main();
  // One round of Main: drain, modules, rescan.
  void Tick(int tick, int rescan_every);
  // Publishes `table` (built under the code lock).
  void PublishCodeTableLocked(std::unique_ptr<CodeTable> table) REQUIRES(TheCodeLock());
  void ReclaimCodeRanges() REQUIRES(TheCodeLock());
  // Counts an exception caught on the collector's side; keeps the first message.
  void NoteFailure(const char* where, const char* what) REQUIRES(mu_);
  // A sample's frames, adjusted for lookup (return address - 1) with a stop marker, into
  // `out`.
  void AdjustFrames(std::span<const uintptr_t> frames, WalkStop stop, StackBuffer* out)
      REQUIRES(mu_);
  void UnwindCopy(const CopyRecord& copy, const uint8_t* bytes, StackBuffer* out) REQUIRES(mu_);
  // Hands stack_ to the sink as slot `index`'s sample, and keeps it as that thread's last.
  void EmitLocked(uint32_t index, ThreadSlot& slot, const SampleMeta& meta) REQUIRES(mu_);
  // The sample an exiting thread took for the periods its signals missed
  // (SampleRecord::repeat_last): with the stack of the thread's last sample, else `record`'s.
  void EmitExitSampleLocked(uint32_t index, ThreadSlot& slot, const SampleRecord& record)
      REQUIRES(mu_);

  Sampler* sampler_;
  Mutex* const mu_;
  SampleSink* sink_;
  ThreadRegistry* registry_ = nullptr;
  std::unique_ptr<DwarfUnwinder> dwarf_;
  std::vector<uintptr_t> dwarf_pcs_ GUARDED_BY(mu_);
  StackBuffer stack_ GUARDED_BY(mu_);  // the sample being drained
  // Per slot: the stack of the last sample drained from it (as handed to the sink) and the
  // slot's generation then, for the sample its thread's exit takes.
  struct LastStack {
    uint32_t generation = 0;
    std::vector<uintptr_t> frames;
  };
  std::vector<LastStack> last_ GUARDED_BY(mu_);
  DrainCounts counts_ GUARDED_BY(mu_);
  // Under the process-wide code lock, not mu_.
  std::unique_ptr<CodeTable> code_current_ GUARDED_BY(TheCodeLock());
  std::vector<std::unique_ptr<CodeTable>> code_retired_ GUARDED_BY(TheCodeLock());
  unsigned long long modules_stamp_ GUARDED_BY(TheCodeLock()) = ~0ull;
  // Exceptions caught (the thread's own count is atomic: Main's failures outside the drain
  // happen without the lock).
  uint64_t failed_samples_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> thread_failures_{0};
  std::atomic<bool> thread_gave_up_{false};
  std::string first_failure_ GUARDED_BY(mu_);
  int drain_ms_ = 10;
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<bool> stop_requested_{false};
};

// Threads inside dlclose right now (dlclose_hook.cpp): stack copies are not unwound meanwhile.
extern std::atomic<int> g_dlclose_in_progress;

// One dlclose in progress, between BeforeDlcloseUnmap and AfterDlcloseUnmap.
struct DlcloseTicket {
  uint64_t id = 0;         // 0: nothing was excluded (no collector)
  bool handlers_idle = true;  // false: a handler that may hold the old table is still running
  bool withdrew = false;      // no table could be built: every code range was withdrawn
};

// Before the real dlclose(handle): publishes code ranges without every module the call may
// unload (the handle's module, those loaded after it, and earlier ones it needs that nothing
// permanent needs; every module that is not permanent when the handle cannot be resolved),
// keeps them out of every table built until AfterDlcloseUnmap, and waits (at most
// kHandlerWaitMs) until no handler that may have loaded the old table is still running.
// Safe from any thread, from library constructors and destructors (a dlclose nested in
// another), and concurrently with other dlcloses and the collector's refresh.
// Throws nothing: when no table can be built (no memory), no code ranges at all are
// published until AfterDlcloseUnmap. Not async-signal-safe.
DlcloseTicket BeforeDlcloseUnmap(void* handle) noexcept;
// After the real dlclose returned: the modules are no longer held out; modules still
// loaded (the library had other references) are back in the next table, published now.
// Throws nothing. Not async-signal-safe.
void AfterDlcloseUnmap(const DlcloseTicket& ticket) noexcept;

}  // namespace inprof::internal

#endif  // INPROF_SDK_COLLECTOR_H_
