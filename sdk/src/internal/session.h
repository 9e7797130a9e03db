// One profiling session: from inprof_start to inprof_stop.
//
// Owns everything the handler reaches (Sampler, thread slots and rings), the collector
// thread that drains rings into the stack table every 10 ms and rescans threads every
// 100 ms, and the symbolizer used at dump time.
//
// Concurrency contract: Start/Stop are called by the runtime under its exclusive lifecycle
// lock; Dump, OnThreadStart/OnThreadExit under its shared lock, from any thread and
// concurrently. data_mu_ guards draining and the stack table; symbolize_mu_ the symbolizer.
// The handler touches only sampler_ (see sampler.h).
#ifndef INPROF_SDK_SESSION_H_
#define INPROF_SDK_SESSION_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/exporters.h"
#include "inprof/dwarf_unwind.h"
#include "inprof/symbolize.h"
#include "internal/config.h"
#include "internal/engine.h"
#include "internal/engine_policy.h"
#include "internal/export_pipeline.h"
#include "internal/lua_splicer.h"
#include "internal/stack_buffer.h"
#include "internal/taps.h"
#include "internal/events.h"
#include "internal/sampler.h"
#include "internal/stack_table.h"
#include "internal/thread_registry.h"

namespace inprof::internal {

class Session {
 public:
  explicit Session(Config config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts sampling every thread except `excluded` ones. Not async-signal-safe.
  Status Start(const std::vector<pid_t>& excluded);
  // Stops sampling and drains what is left; the profile stays available. Idempotent.
  // Not async-signal-safe.
  void Stop();
  // Writes the profile so far to `outputs`. Every output is attempted; the status names
  // the ones that failed. Not async-signal-safe.
  Status Dump(const std::vector<std::string>& outputs);
  // The files an output path becomes, with the event each holds. Not async-signal-safe.
  std::vector<std::pair<std::string, size_t>> FilesFor(const std::string& path) const;
  // The symbolized profile so far. Not async-signal-safe.
  Profile Snapshot();
  // "inprof: engine=timer unwinder=fp ..." Not async-signal-safe.
  std::string SummaryLine(const std::vector<std::string>& written);

  void OnThreadStart() { registry_->RegisterCurrentThread(); }
  void OnThreadExit() { registry_->UnregisterCurrentThread(); }
  void ExcludeThread(pid_t tid) { registry_->Exclude(tid); }
  // In a forked child: drop inherited engine resources (perf fds still controlling the
  // parent's events) without touching locks or the parent's events.
  void ForgetInChild() {
    if (registry_) registry_->ForgetInChild();
  }
  // Records the modules loaded now in the symbolizer, which keeps them after they are
  // unloaded. Called before dlclose and when the collector sees the module list change.
  void NoteModules();
  // Called by the dlclose hook (after it raised g_dlclose_in_progress): unwinds the stack
  // copies taken so far while the library is still loaded, and notes the modules.
  void BeforeDlclose();
  const Config& config() const { return config_; }

  // Continuous mode (config window > 0). Called on the exporter thread, after the window's
  // files are written, for every completed window including the last partial one at Stop, in
  // order. Register before Start. Listeners must not block for long (the push client only
  // enqueues). Not async-signal-safe.
  void AddWindowListener(std::function<void(const Window&)> listener);
  // Starts accumulating, in parallel with everything else, a private copy of every sample
  // from now on (a "tap", for pull requests of the next N seconds); TakeTap ends it and
  // returns the symbolized profile of its span (nullopt for an unknown id). At most kMaxTaps
  // are open at once: AddTap returns 0 beyond that. Works with and without windows.
  // Not async-signal-safe.
  static constexpr size_t kMaxTaps = Taps::kMaxTaps;
  uint64_t AddTap();
  std::optional<Window> TakeTap(uint64_t tap);
  // The LuaJIT bridge (lua_bridge.cpp). SetLuaVm names the thread running the VM and the code
  // ranges of the LuaJIT library (where the VM's own frames are); with `mixed`, native samples
  // of that thread get the VM's latest Lua stack spliced in at the VM boundary.
  // AddLuaStack takes a stack from luaJIT_profile_dumpstack (format kLuaDumpFormat, root
  // first): in Lua mode it is a sample of the `lua` event with `weight` periods; in mixed mode
  // it becomes the latest stack. Called on the VM's thread at a safe point, never in a signal
  // handler. Not async-signal-safe.
  static constexpr const char* kLuaDumpFormat = "pf\x01l\n";
  void SetLuaVm(pid_t tid, std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges, bool mixed);
  void ClearLuaVm();
  void AddLuaStack(std::string_view dump, uint32_t weight, char vmstate);
  // The LuaJIT profiler's interval for this session's rate (at least 1 ms).
  int LuaIntervalMs() const;

  // Windows exported so far, and dropped because the exporter fell two windows behind.
  uint64_t windows_exported() const { return pipeline_.windows_exported(); }

 private:
  // The symbolized profile of `table`. Takes symbolize_mu_; the caller owns `table` (no other
  // thread may change it meanwhile).
  Profile BuildProfile(const StackTable& table, Health health, int64_t start_unix_ns,
                       int64_t duration_ns);
  // Closes the current window: moves the stack table to the export queue and starts the next.
  // Caller holds data_mu_.
  void RotateWindowLocked(int64_t now_monotonic_ns);
  // Bytes of the stack table for the current window (or the whole run) and for each tap.
  size_t TableBudget() const;
  size_t TapBudget() const;

  static void* CollectorEntry(void* self);
  void CollectorMain();
  // Drains every ring into the stack table, unwinding stack copies unless a dlclose is in
  // progress (`before_dlclose`: the hook's own drain, just before its unload).
  void DrainLocked(bool before_dlclose = false);
  // Drain helpers: a sample's frames (adjusted, with stop markers) into `out`; then its
  // accounting and aggregation (`stack` leaf first, without the thread marker, which
  // AddSample appends). Caller holds data_mu_.
  void AdjustFrames(std::span<const uintptr_t> frames, WalkStop stop, StackBuffer* out);
  void UnwindCopy(const CopyRecord& copy, const uint8_t* bytes, StackBuffer* out);
  void AddSample(ThreadSlot& slot, StackBuffer& stack, uint32_t weight, uint16_t event);
  void CountSample(ThreadSlot& slot, uint32_t weight, uint16_t event);
  // Into the session's table and every tap. Caller holds data_mu_.
  void AggregateLocked(std::span<const uintptr_t> stack, uint32_t weight, uint16_t event);
  // Publishes new code ranges to the handler when the module list changed (or `force`);
  // returns whether it did. Collector thread (or Start) only.
  bool RefreshCodeRanges(bool force);
  Health CurrentHealth();
  int DrainIntervalMs() const;

  Config config_;
  Sampler sampler_;
  // Per event, in config order. Engines and the perf fd table outlive registry_ (declared
  // before it).
  EngineSet engines_;
  std::vector<std::string> warnings_;  // from Start, shown in every summary
  std::unique_ptr<ThreadRegistry> registry_;

  std::mutex data_mu_;
  StackTable table_;
  StackBuffer stack_;  // the sample being drained (collector thread, under data_mu_)
  uint64_t samples_ = 0;
  uint64_t weight_ = 0;
  uint64_t first_event_weight_ = 0;
  uint64_t overruns_ = 0;
  // DWARF unwinding of stack copies (unwind=dwarf or auto); null with unwind=fp.
  std::unique_ptr<DwarfUnwinder> dwarf_;
  std::vector<uintptr_t> dwarf_pcs_;
  uint64_t copy_truncated_ = 0;  // the copied window was too small for the whole stack
  uint64_t dwarf_chains_ = 0;    // samples whose chain came from DWARF
  uint64_t fp_chains_ = 0;       // ... from the fp walk (auto, where DWARF stopped earlier)
  uint64_t truncated_ = 0;
  uint64_t broken_ = 0;
  uint64_t leaf_only_ = 0;
  uint64_t recovered_leaf_callers_ = 0;

  std::mutex symbolize_mu_;
  Symbolizer symbolizer_;

  // Code ranges published to the handler (the newest is in sampler_.code) and the ones
  // replaced since, which a handler may still be reading: freed by ReclaimCodeRanges once no
  // handler is in flight, so dlopen/dlclose churn does not grow them. Collector only.
  struct CodeTable {
    std::vector<uintptr_t> bounds;
    CodeRanges view;
  };
  std::unique_ptr<CodeTable> code_current_;
  std::vector<std::unique_ptr<CodeTable>> code_retired_;
  void ReclaimCodeRanges();
  unsigned long long modules_stamp_ = ~0ull;

  Taps taps_;       // under data_mu_
  LuaSplicer lua_;  // under data_mu_ (its frames under its own lock)
  void SpliceLuaPendingLocked();
  // Continuous mode: the current window (table_ holds its stacks), under data_mu_, and the
  // pipeline that exports closed windows (it symbolizes through BuildProfile, so it is
  // declared after everything it uses).
  WindowClock window_;
  ExportPipeline pipeline_;

  int wake_fd_ = -1;
  int drain_interval_ms_ = 10;
  pthread_t collector_{};
  bool collector_running_ = false;
  std::atomic<bool> stop_requested_{false};
  bool started_ = false;
  bool stopped_ = false;
  int64_t start_realtime_ns_ = 0;
  int64_t start_monotonic_ns_ = 0;
  int64_t stop_monotonic_ns_ = 0;
  int64_t start_cpu_ns_ = 0;
  int64_t stop_cpu_ns_ = 0;
  // The last Dump's cost (monotonic ns), for the summary line; -1 before the first.
  // Atomic: Dump may run on several threads at once (under the shared lock).
  std::atomic<int64_t> dump_symbolize_ns_{-1};
  std::atomic<int64_t> dump_write_ns_{0};
};

// Threads inside dlclose right now (dlclose_hook.cpp): stack copies are not unwound meanwhile.
extern std::atomic<int> g_dlclose_in_progress;

// pthread_create as the C library provides it, bypassing our hook. Not async-signal-safe.
int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                      void* arg);

// Starts one of the profiler's own threads: all signals blocked, not registered for
// sampling, and returns only once the thread runs, with its tid (0 on failure) so callers
// can exclude it before any scan could see it. Not async-signal-safe.
pid_t StartInternalThread(pthread_t* thread, void* (*start)(void*), void* arg);

}  // namespace inprof::internal

#endif  // INPROF_SDK_SESSION_H_
