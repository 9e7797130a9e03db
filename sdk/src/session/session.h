// One profiling session, from inprof_start to inprof_stop: wires the parts for one run.
//
// Where a sample goes, and who owns each thread:
//   signal handler (any sampled thread)  -> its ThreadSlot ring / stack copies (threads/)
//   Collector, thread "inprof-collect"   -> drains, unwinds, hands stacks to the session
//   Session (this class, as SampleSink)  -> the LuaSplicer (mixed mode), the stack table of
//                                           the run or the current window, and the Taps
//   ExportPipeline, thread "inprof-export" -> closed windows symbolized and written
//   ProfileBuilder (any thread)          -> symbolized profiles for Dump, windows and taps
// Engines (engine_policy.h) and the ThreadRegistry arm each thread's signal source.
//
// Concurrency contract: Start/Stop are called by the runtime under its exclusive lifecycle
// lock; Dump, AddTap/TakeTap, the Lua calls and OnThreadStart/OnThreadExit under its shared
// lock, from any thread and concurrently. data_mu_ guards the stack table, the taps, the Lua
// splicer, the window clock and the sample counters; the collector drains under it. The
// profile builder and the export pipeline have their own locks (see their headers). The
// handler touches only sampler_ (see sampler.h).
#ifndef INPROF_SDK_SESSION_H_
#define INPROF_SDK_SESSION_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collector/collector.h"
#include "collector/stack_buffer.h"
#include "collector/stack_table.h"
#include "config/config.h"
#include "config/events.h"
#include "engines/engine.h"
#include "inprof/profile.h"
#include "inprof/status.h"
#include "inprof/thread_annotations.h"
#include "lua/lua_splicer.h"
#include "session/alloc_profile.h"
#include "session/engine_policy.h"
#include "session/export_pipeline.h"
#include "session/profile_builder.h"
#include "session/taps.h"
#include "signal/lock_sampler.h"
#include "signal/sampler.h"
#include "threads/thread_registry.h"

namespace inprof::internal {

class Session : private SampleSink {
 public:
  explicit Session(Config config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts sampling every thread except `excluded` ones. Not async-signal-safe.
  Status Start(const std::vector<pid_t>& excluded);
  // Instead of Start, in a forked child that ends before its own session started (all its
  // samples are in the bootstrap table, fork_child.h): a session made only to write them.
  // It chooses the events and the unwinder (the stack copies are unwound as a started
  // session's are) and starts nothing: no engine, handler, collector thread, or thread ring
  // and stack copies, about half of what a sampled child paid at exit. ImportBootstrap, Stop
  // and Dump then work as after Start; the health names what took the samples (the
  // bootstrap's CPU-time timer) and the thread's CPU time since the fork. Not
  // async-signal-safe.
  Status StartToWriteBootstrap();
  // Stops sampling and drains what is left; the profile stays available. Idempotent.
  // Not async-signal-safe.
  void Stop();
  // Writes the profile so far to `outputs`. Every output is attempted; the status names
  // the ones that failed. Not async-signal-safe.
  // `heap`: only the allocation events, what is live first (inprof_heap_snapshot); fails
  // when allocations are not sampled.
  Status Dump(const std::vector<std::string>& outputs, bool heap = false);
  // The files an output path becomes, with the event each holds. Not async-signal-safe.
  std::vector<std::pair<std::string, size_t>> FilesFor(const std::string& path) const;
  // The symbolized profile so far. Not async-signal-safe.
  Profile Snapshot();
  // The profile so far, unsymbolized (docs/raw-profile.md). Not async-signal-safe.
  RawProfile SnapshotRaw();
  // For each raw output: writes the header of a raw profile without its `end` line, which
  // the exit-time write replaces. A process killed before that write (SIGKILL, a crash) is
  // still known, by pid and command name, to whoever reads the raw files (inprof record).
  // Not async-signal-safe.
  void MarkRawOutputsStarted();
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
  // The handler's state, read by the fork child handler (fork_child.h) to find the forking
  // thread's stack. Async-signal-safe to read.
  const Sampler& sampler() const { return sampler_; }
  // Samples aggregated so far. Not async-signal-safe.
  uint64_t samples();
  // A forked child's session, just started: takes the stacks its bootstrap sampler took on
  // thread `tid` before (fork_child.h; after BootstrapDisarm), as samples of the first event.
  // Not async-signal-safe.
  void ImportBootstrap(pid_t tid);

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
  // Runs inside the bridge's ProfilerWorkScope: samples the VM's thread takes meanwhile (the
  // drain unwinds stack copies there) are the profiler's and left out by the handler.
  void AddLuaStack(std::string_view dump, uint32_t weight, char vmstate);
  // The LuaJIT profiler's interval for this session's rate (at least 1 ms).
  int LuaIntervalMs() const { return internal::LuaIntervalMs(config_); }

  // Windows exported so far, and dropped because the exporter fell two windows behind.
  uint64_t windows_exported() const { return pipeline_.windows_exported(); }

 private:
  // SampleSink, called by the collector under data_mu_ (the collector's lock).
  void OnSample(ThreadSlot& slot, StackBuffer& stack, const SampleMeta& meta) override
      REQUIRES(data_mu_);
  void OnDrained() override REQUIRES(data_mu_);
  void OnModulesChanged() override { NoteModules(); }
  // Into the session's table and every tap.
  void AggregateLocked(std::span<const uintptr_t> stack, const SampleMeta& meta)
      REQUIRES(data_mu_);
  void CountSample(ThreadSlot& slot, uint32_t weight, uint16_t event) REQUIRES(data_mu_);
  // Mixed Lua mode: the deferred native samples, spliced.
  void SpliceLuaPendingLocked() REQUIRES(data_mu_);
  // Drains the rings now (the collector's drain).
  void DrainLocked() REQUIRES(data_mu_) {
    if (!collector_) return;
    CollectorLockHeld();
    collector_->DrainLocked();
  }
  // The collector was given data_mu_ as its lock: tells the analysis that the two names are
  // one mutex. Checks nothing at run time; collector_ is set.
  void CollectorLockHeld() const REQUIRES(data_mu_) ASSERT_CAPABILITY(collector_->lock()) {}
  // Closes the current window: moves the stack table to the export pipeline and starts the
  // next.
  void RotateWindowLocked(int64_t now_monotonic_ns) REQUIRES(data_mu_);
  // Event `alloc`: the sampled allocations live now, into `table` (a snapshot's or a
  // window's copy; never table_, whose weights add up over time).
  void AddLiveLocked(StackTable* table) REQUIRES(data_mu_);
  // Event `alloc`: turns the hooks' sampling on for this session (at the end of Start) and
  // off (first thing in Stop).
  Status StartAllocSampling();
  // Event `alloc`: the summary's lines (what was sampled, what is still live, what was lost).
  std::string AllocSummary() EXCLUDES(data_mu_);
  // Events `lock` and `cond`: turn the hooks' sampling on (at the end of Start; off is the
  // first thing in Stop), and the summary's lines.
  // Turns on the lock or condition hooks' sampling for the event at `event` (-1: none).
  void StartLockSampling(int event, LockSampling& state);
  // "inprof: lock: N waits for held locks sampled ..." and the drop warning, for `state`.
  std::string LockSummary(const LockSampling& state, const char* kind, const char* what) const;

 public:
  // Event `alloc`: the estimated bytes of the sampled allocations live now (0 without it),
  // and lines naming the stacks that hold most of them (symbolized), for the leak report.
  double LiveBytes() EXCLUDES(data_mu_);
  // The program's malloc never reached the allocation hooks (StartAllocSampling's probe).
  bool alloc_hooks_unreached() const { return alloc_hooks_unreached_; }
  std::string TopLiveStacks(size_t count);

 private:
  // Bytes of the stack table for the current window (or the whole run) and for each tap.
  size_t TableBudget() const;
  size_t TapBudget() const;
  // Start's steps after the engines are chosen: the collector, the handler, the threads.
  Status StartSampling(const std::vector<pid_t>& excluded, std::unique_ptr<DwarfUnwinder> dwarf);
  Health CurrentHealth() REQUIRES(data_mu_);
  // StartToWriteBootstrap's session: what sampled, and the bootstrap thread's numbers.
  void BootstrapHealthLocked(Health* h) REQUIRES(data_mu_);
  // The warnings of the health block: the engines', the registry's, the drain's.
  void AddHealthWarnings(Health* h) REQUIRES(data_mu_);
  int DrainIntervalMs() const;

  Config config_;
  Sampler sampler_;
  // Per event, in config order. Engines and the perf fd table outlive registry_ (declared
  // before it).
  EngineSet engines_;
  std::vector<std::string> warnings_;  // from Start, shown in every summary
  std::unique_ptr<ThreadRegistry> registry_;

  // The collector drains under it too (Collector::lock()).
  Mutex data_mu_;
  StackTable table_ GUARDED_BY(data_mu_);
  // Samples aggregated so far.
  struct SampleCounts {
    uint64_t samples = 0;
    uint64_t weight = 0;
    uint64_t first_event_weight = 0;  // the rate in the health block is the first event's
    uint64_t overruns = 0;            // timer expirations the kernel could not deliver
  };
  SampleCounts counts_ GUARDED_BY(data_mu_);
  Taps taps_ GUARDED_BY(data_mu_);
  // Event `alloc`: the index of alloc_objects among the events (-1: not sampled), and the
  // weights and live stacks of sampled allocations.
  int alloc_event_ = -1;
  bool alloc_hooks_unreached_ = false;
  std::unique_ptr<AllocProfile> alloc_ GUARDED_BY(data_mu_);
  // Event `lock`: the index of lock_contentions among the events (-1: not sampled), and the
  // generator that rounds a sampled wait's fractional count (LockWaitWeights) without bias.
  int lock_event_ = -1;
  // Event `cond`: the index of cond_waits (-1: not sampled); weighted as lock waits.
  int cond_event_ = -1;
  uint64_t lock_rng_ GUARDED_BY(data_mu_) = 0x2545F4914F6CDD1Dull;
  LuaSplicer lua_ GUARDED_BY(data_mu_);  // its frames under its own frames_mu_
  ProfileBuilder builder_;
  // Publishes the handler's code ranges: declared after registry_, destroyed before it.
  std::unique_ptr<Collector> collector_;
  // Continuous mode: the current window (table_ holds its stacks), and the pipeline that
  // exports closed windows (it symbolizes through builder_, so it is declared after
  // everything it uses).
  WindowClock window_ GUARDED_BY(data_mu_);
  ExportPipeline pipeline_;

  bool started_ = false;
  bool stopped_ = false;
  bool bootstrap_only_ = false;  // StartToWriteBootstrap
  pid_t bootstrap_tid_ = 0;      // ImportBootstrap's thread
  // Set by Start and Stop (the runtime's exclusive lock), read by everything after.
  struct RunTimes {
    int64_t start_realtime_ns = 0;
    int64_t start_monotonic_ns = 0;
    int64_t stop_monotonic_ns = 0;
    int64_t start_cpu_ns = 0;  // CLOCK_PROCESS_CPUTIME_ID
    int64_t stop_cpu_ns = 0;
  };
  RunTimes times_;
  // The last Dump's cost (monotonic ns), for the summary line; -1 before the first.
  // Atomic: Dump may run on several threads at once (under the shared lock).
  std::atomic<int64_t> dump_symbolize_ns_{-1};
  std::atomic<int64_t> dump_write_ns_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_SESSION_H_
