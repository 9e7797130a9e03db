#include "session/session.h"
#include "signal/raw_syscall.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <ctime>
#include <unordered_map>

#include <linux/perf_event.h>

#include "config/events.h"
#include "engines/itimer.h"
#include "inprof/formats.h"
#include "inprof/profile_filter.h"
#include "session/fork_child.h"
#include "signal/bootstrap.h"
#include "signal/lock_sampler.h"
#include "signal/signal_handler.h"
#include "threads/labels.h"

namespace inprof::internal {
namespace {

// Stack copies in flight per thread (unwind=dwarf or auto): memory per thread is this many
// times stack_bytes. The collector drains when a quarter may be used (DrainIntervalMs).
constexpr uint32_t kStackCopiesPerThread = 8;

// The runtime's clocks are the kernel's (the vDSO), never libc's clock_gettime, which a
// preloaded library may replace (libfaketime): sample times come from the same clock.
int64_t Now(clockid_t clock) { return ClockNsRaw(clock); }

// The runtime's own executable code (its mapped object): an allocation or a lock wait whose
// caller is in it is the runtime's, not the program's. Empty when it cannot be found.
struct CodeRange {
  uintptr_t lo = 0, hi = 0;
};
CodeRange RuntimeText() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&AllocState), &self) == 0 || self.dli_fbase == nullptr) {
    return {};
  }
  struct Range {
    uintptr_t base, lo = UINTPTR_MAX, hi = 0;
  } range{reinterpret_cast<uintptr_t>(self.dli_fbase)};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* r = static_cast<Range*>(data);
        if (info->dlpi_addr != r->base) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          r->lo = std::min<uintptr_t>(r->lo, info->dlpi_addr + ph.p_vaddr);
          r->hi = std::max<uintptr_t>(r->hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &range);
  return range.hi > range.lo ? CodeRange{range.lo, range.hi} : CodeRange{};
}

}  // namespace

Session::Session(Config config)
    : config_(std::move(config)),
      table_(TableBudget(), config_.events.size(), config_.timeline),
      builder_(config_, &engines_.events, &lua_),
      pipeline_(config_, [this](const StackTable& table, Health health, int64_t start_unix_ns,
                                int64_t duration_ns) {
        return builder_.Build(table, std::move(health), start_unix_ns, duration_ns);
      }) {
  sampler_.signal = config_.signal;
  sampler_.max_depth = config_.max_depth;
}

Session::~Session() {
  Stop();
  // A handler that never returned (UninstallSamplingHandler gave up) may still reach the
  // slots, rings and code tables: they are kept (the collector keeps its tables itself).
  if (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) {
    (void)registry_.release();
    (void)collector_.release();
    return;
  }
  collector_.reset();
  registry_.reset();
}

Status Session::Start(const std::vector<pid_t>& excluded) {
  if (started_) return Status::Error("session already started");
  started_ = true;
  times_.start_realtime_ns = Now(CLOCK_REALTIME);
  times_.start_monotonic_ns = Now(CLOCK_MONOTONIC);
  times_.start_cpu_ns = Now(CLOCK_PROCESS_CPUTIME_ID);
  {
    MutexLock lock(&data_mu_);  // uncontended: no collector yet
    table_.set_time_origin(times_.start_monotonic_ns);
  }

  // Engines first, then the unwinder: their warnings are listed in that order.
  Status chosen = ChooseEngines(config_, LuaIntervalMs(), &sampler_, &engines_);
  UnwinderChoice unwinder;
  if (chosen.ok()) {
    for (size_t e = 0; e < engines_.events.size(); ++e) {
      if (engines_.events[e]->source == EventSource::kAlloc && alloc_event_ < 0) {
        alloc_event_ = static_cast<int>(e);
      }
      if (engines_.events[e]->source == EventSource::kLock && lock_event_ < 0) {
        lock_event_ = static_cast<int>(e);
      }
      if (engines_.events[e]->source == EventSource::kCond && cond_event_ < 0) {
        cond_event_ = static_cast<int>(e);
      }
    }
    warnings_ = engines_.warnings;
    chosen = ChooseUnwinder(config_, &unwinder, &warnings_);
    sampler_.unwind = unwinder.mode;
  }
  if (chosen.ok()) chosen = StartSampling(excluded, std::move(unwinder.dwarf));
  if (!chosen.ok()) {
    stopped_ = true;
    return chosen;
  }
  if (config_.window > 0) {
    {
      // The collector thread runs already: its OnDrained reads the window clock.
      MutexLock lock(&data_mu_);
      window_.Start(times_.start_realtime_ns, times_.start_monotonic_ns, config_.window);
    }
    if (const pid_t exporter = pipeline_.Start(); exporter != 0) {
      registry_->Exclude(exporter);
    } else {
      warnings_.push_back(std::string("cannot start the window exporter thread (") +
                          std::strerror(errno) + "): windows are written only at exit");
    }
  }
  registry_->RegisterCurrentThread();
  registry_->Rescan();
  StartLockSampling(lock_event_, LockState());
  StartLockSampling(cond_event_, CondState());
  return StartAllocSampling();
}

Status Session::StartToWriteBootstrap() {
  if (started_) return Status::Error("session already started");
  started_ = true;
  bootstrap_only_ = true;
  times_.start_realtime_ns = Now(CLOCK_REALTIME);
  times_.start_monotonic_ns = Now(CLOCK_MONOTONIC);
  times_.start_cpu_ns = Now(CLOCK_PROCESS_CPUTIME_ID);
  {
    MutexLock lock(&data_mu_);  // uncontended: no collector thread, ever
    table_.set_time_origin(times_.start_monotonic_ns);
  }
  // The events name the profile's sample types; the engines are made and never started
  // (their reasons and warnings are about sampling that did not happen: not reported).
  Status chosen = ChooseEngines(config_, LuaIntervalMs(), &sampler_, &engines_);
  UnwinderChoice unwinder;
  if (chosen.ok()) {
    chosen = ChooseUnwinder(config_, &unwinder, &warnings_);
    sampler_.unwind = unwinder.mode;
  }
  if (!chosen.ok()) {
    stopped_ = true;
    return chosen;
  }
  // No engine: registering the bootstrap thread (ImportBootstrap) records its stack bounds
  // and starts nothing on it.
  registry_ = std::make_unique<ThreadRegistry>(&sampler_, std::vector<Engine*>{},
                                               config_.frequency, config_.max_threads);
  collector_ = std::make_unique<Collector>(&sampler_, &data_mu_, static_cast<SampleSink*>(this),
                                           std::move(unwinder.dwarf));
  collector_->RefreshCodeRanges(true);
  return Status::Ok();
}

void Session::BootstrapHealthLocked(Health* health) {
  Health& h = *health;
  h.engine = "timer";
  h.engine_reason = "the process ended before its session started: its CPU-time timer only";
  h.overruns = counts_.weight - std::min(counts_.weight, counts_.samples);
  // The child had one thread (a thread's start starts the session): its CPU time since the
  // fork is the process's.
  const double cpu_seconds =
      static_cast<double>(std::max<int64_t>(0, times_.stop_cpu_ns - times_.start_cpu_ns)) / 1e9;
  ThreadHealth* thread = nullptr;
  for (ThreadHealth& t : h.threads) {
    if (t.tid == bootstrap_tid_) thread = &t;
  }
  if (thread == nullptr) {
    thread = &h.threads.emplace_back();
    thread->tid = bootstrap_tid_;
    char name[17] = {};
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0) thread->name = name;
  }
  thread->cpu_seconds = cpu_seconds;
  thread->expected = cpu_seconds * config_.frequency;
  thread->taken = counts_.samples;
  thread->weight = counts_.weight;
}

void Session::StartLockSampling(int event, LockSampling& state) {
  if (event < 0) return;
  state.rate.store(config_.lock_rate, std::memory_order_relaxed);
  state.event.store(static_cast<uint32_t>(event), std::memory_order_relaxed);
  for (std::atomic<uint64_t>* c : {&state.sampled, &state.no_slot, &state.dropped}) {
    c->store(0, std::memory_order_relaxed);
  }
  if (const CodeRange self = RuntimeText(); self.hi > self.lo) {
    state.self_lo.store(self.lo, std::memory_order_relaxed);
    state.self_hi.store(self.hi, std::memory_order_relaxed);
  }
  LockState().epoch.fetch_add(1, std::memory_order_release);  // the generators' (both kinds)
  state.on.store(true, std::memory_order_release);
}

std::string Session::LockSummary(const LockSampling& state, const char* kind,
                                 const char* what) const {
  char text[320];
  std::snprintf(text, sizeof text,
                "inprof: %s: %" PRIu64 " %s sampled (all of %" PRIu32
                " ns or more, shorter ones in proportion)",
                kind, state.sampled.load(std::memory_order_relaxed), what, config_.lock_rate);
  std::string line = text;
  const uint64_t dropped = state.dropped.load(std::memory_order_relaxed);
  const uint64_t no_slot = state.no_slot.load(std::memory_order_relaxed);
  if (dropped != 0 || no_slot != 0) {
    std::snprintf(text, sizeof text,
                  "\ninprof: warning: %s: %" PRIu64 " sampled waits dropped (ring full), %" PRIu64
                  " on threads not sampled",
                  kind, dropped, no_slot);
    line += text;
  }
  return line;
}

Status Session::StartAllocSampling() {
  if (alloc_event_ < 0) return Status::Ok();
  AllocSampling& state = AllocState();
  if (!LiveTableInstalled()) {
    uint32_t entries = 1024;
    while (entries < config_.alloc_live_max && entries < (1u << 30)) entries <<= 1;
    void* map = mmap(nullptr, LiveTableBytes(entries), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map != MAP_FAILED) InstallLiveTable(map, entries);
  }
  if (!LiveTableInstalled()) {
    warnings_.push_back("cannot map the table of live allocations (" +
                        std::string(std::strerror(errno)) +
                        "): inuse_objects and inuse_space stay empty");
  }
  // Nothing is entered while sampling is off: the table can be emptied of an earlier
  // session's (or, in a forked child, the parent's) entries.
  ClearLiveTable();
  {
    MutexLock lock(&data_mu_);
    // A quarter of the stack budget for the stacks of live allocations.
    alloc_ = std::make_unique<AllocProfile>(std::max<size_t>(TableBudget() / 4, 1 << 16),
                                            config_.alloc_rate, config_.alloc_seed);
  }
  state.rate.store(config_.alloc_rate, std::memory_order_relaxed);
  state.seed.store(config_.alloc_seed, std::memory_order_relaxed);
  state.threads_seeded.store(0, std::memory_order_relaxed);
  state.event.store(static_cast<uint32_t>(alloc_event_), std::memory_order_relaxed);
  for (std::atomic<uint64_t>* c :
       {&state.sampled, &state.no_slot, &state.live_full, &state.dropped, &state.waits}) {
    c->store(0, std::memory_order_relaxed);
  }
  // The runtime's own object: the allocations its code makes are not the program's.
  if (const CodeRange self = RuntimeText(); self.hi > self.lo) {
    state.self_lo.store(self.lo, std::memory_order_relaxed);
    state.self_hi.store(self.hi, std::memory_order_relaxed);
  }
  state.epoch.fetch_add(1, std::memory_order_release);
  state.on.store(true, std::memory_order_release);
  // Something loaded before the runtime may define malloc (a sanitizer's runtime, an
  // allocator linked into the executable): then the program's calls never reach the hooks.
  auto* program_malloc = reinterpret_cast<void* (*)(size_t)>(dlsym(RTLD_DEFAULT, "malloc"));
  auto* program_free = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "free"));
  if (program_malloc != nullptr && program_free != nullptr &&
      !ProbeHooks(program_malloc, program_free)) {
    alloc_hooks_unreached_ = true;
    Dl_info info{};
    const char* where = dladdr(reinterpret_cast<void*>(program_malloc), &info) != 0 &&
                                info.dli_fname != nullptr
                            ? info.dli_fname
                            : "?";
    warnings_.push_back(std::string("alloc: the program's malloc is defined in ") + where +
                        ", which comes before the runtime: its allocations are not seen "
                        "(docs/allocations.md, \"Limits\")");
  }
  return Status::Ok();
}

Status Session::StartSampling(const std::vector<pid_t>& excluded,
                              std::unique_ptr<DwarfUnwinder> dwarf) {
  std::vector<Engine*> engines;
  for (const auto& engine : engines_.engines) engines.push_back(engine.get());
  registry_ = std::make_unique<ThreadRegistry>(&sampler_, std::move(engines), config_.frequency,
                                               config_.max_threads);
  if (sampler_.unwind != UnwindMode::kFp) {
    registry_->EnableStackCopies(kStackCopiesPerThread, config_.stack_bytes,
                                 config_.max_copy_memory);
  }
  for (pid_t tid : excluded) registry_->Exclude(tid);
  collector_ = std::make_unique<Collector>(&sampler_, &data_mu_, static_cast<SampleSink*>(this),
                                           std::move(dwarf));
  collector_->RefreshCodeRanges(true);
  if (const int error = InstallSamplingHandler(&sampler_); error != 0) {
    return Status::Unavailable(std::string("cannot install the handler for signal ") +
                               std::to_string(config_.signal) + ": " + std::strerror(error));
  }
  const pid_t collector = collector_->Start(registry_.get(), DrainIntervalMs());
  if (collector == 0) {
    const int error = errno;
    registry_->RetireAll();
    UninstallSamplingHandler(&sampler_);
    return Status::Unavailable(std::string("cannot start the collector thread: ") +
                               std::strerror(error));
  }
  registry_->Exclude(collector);
  return Status::Ok();
}

void Session::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  // The hooks first: the wait for handlers below waits for those still inside one.
  if (alloc_event_ >= 0) AllocState().on.store(false, std::memory_order_release);
  if (lock_event_ >= 0) LockState().on.store(false, std::memory_order_release);
  if (cond_event_ >= 0) CondState().on.store(false, std::memory_order_release);
  for (const auto& engine : engines_.engines) engine->StopAll();
  registry_->RetireAll();
  if (!UninstallSamplingHandler(&sampler_)) {
    warnings_.push_back("a sampling handler is still running after " +
                        std::to_string(kHandlerWaitMs / 1000) +
                        " s (a program signal handler interrupted it and has not returned): "
                        "its memory is kept");
  }
  collector_->Stop();
  times_.stop_monotonic_ns = Now(CLOCK_MONOTONIC);
  times_.stop_cpu_ns = Now(CLOCK_PROCESS_CPUTIME_ID);
  {
    MutexLock lock(&data_mu_);
    DrainLocked();
    registry_->ReleaseRetired();
    // Mixed Lua mode: samples still waiting for a Lua stack get the last one.
    if (lua_.has_pending()) SpliceLuaPendingLocked();
    // Continuous mode: the last, partial window.
    if (config_.window > 0) RotateWindowLocked(times_.stop_monotonic_ns);
  }
  // Continuous mode: the exporter finishes the queue (the listeners hear of every window)
  // and ends.
  if (config_.window > 0) pipeline_.Finish();
}

std::vector<std::pair<std::string, size_t>> Session::FilesFor(const std::string& path) const {
  return internal::FilesFor(config_, path);
}

Status Session::Dump(const std::vector<std::string>& outputs, bool heap) {
  if (heap && alloc_event_ < 0) {
    return Status::FailedPrecondition(
        "allocations are not sampled (start with events=alloc or events=cpu,alloc)");
  }
  const int64_t begin_ns = Now(CLOCK_MONOTONIC);
  // Raw outputs need no symbolization: a process inside a recording only writes those.
  bool symbolized_outputs = false;
  for (const std::string& path : outputs) {
    if (FormatFromPath(path) != Format::kRaw) symbolized_outputs = true;
  }
  RawProfile raw = SnapshotRaw();
  Profile profile;
  if (symbolized_outputs) profile = builder_.Symbolize(raw);
  // A heap snapshot: inuse_space, inuse_objects, alloc_space, alloc_objects, what is live
  // shown first; per-event files are named after these.
  Config heap_config;
  if (heap) {
    const size_t a = static_cast<size_t>(alloc_event_);
    profile = KeepEvents(profile, {a + 3, a + 2, a + 1, a});
    heap_config = config_;
    heap_config.events = {kAllocEvents[3], kAllocEvents[2], kAllocEvents[1], kAllocEvents[0]};
  }
  const int64_t symbolized_ns = Now(CLOCK_MONOTONIC);
  profile.health.symbolize_seconds = static_cast<double>(symbolized_ns - begin_ns) / 1e9;
  Status s = WriteOutputs(
      profile, heap ? heap_config : config_, outputs, symbolized_ns,
      [&profile, &raw](const std::string& file, Format format, const ExportOptions& options) {
        if (format == Format::kRaw) {
          return WriteRawFile(raw, file, true, options.mode);
        }
        return WriteProfileFile(profile, format, file, options);
      });
  dump_symbolize_ns_.store(symbolized_ns - begin_ns, std::memory_order_relaxed);
  dump_write_ns_.store(Now(CLOCK_MONOTONIC) - symbolized_ns, std::memory_order_relaxed);
  return s;
}

void Session::MarkRawOutputsStarted() {
  bool any = false;
  for (const std::string& path : config_.outputs) any = any || FormatFromPath(path) == Format::kRaw;
  if (!any) return;
  Health health;
  {
    MutexLock lock(&data_mu_);
    health = CurrentHealth();
  }
  const RawProfile header = builder_.BuildRawHeader(std::move(health), times_.start_realtime_ns);
  for (const std::string& path : config_.outputs) {
    if (FormatFromPath(path) != Format::kRaw) continue;
    for (const auto& [file, event] : FilesFor(path)) {
      // Best effort: the exit-time write reports a path that cannot be written.
      [[maybe_unused]] Status s =
          WriteRawFile(header, file, false, static_cast<int>(config_.output_mode));
    }
  }
}

// The highest rate at which one thread can fill its ring, from the engines in use: timers
// deliver at most one signal per kernel tick; perf time events follow the frequency; count
// events have no bound, so they get the shortest interval.
int Session::DrainIntervalMs() const {
  // A quarter of the 31-record ring, or of the stack copies when the stack is copied.
  const double kRecordsPerDrain =
      sampler_.unwind == UnwindMode::kFp ? 8 : kStackCopiesPerThread / 4.0;
  const double tick = KernelTickHz();
  double rate = 0;
  for (size_t e = 0; e < engines_.events.size(); ++e) {
    const EventSpec& spec = *engines_.events[e];
    const bool perf = engines_.engines[e]->kind() == EngineKind::kPerf;
    if (spec.source == EventSource::kLua) {
      continue;  // never through the rings
    } else if (spec.source == EventSource::kWallTime) {
      rate += std::min(config_.wall_frequency, tick);
    } else if (!perf) {
      rate += std::min(config_.frequency, tick);
    } else if (spec.time_based) {
      rate += config_.frequency;
    } else {
      rate += 4000;
    }
  }
  const double ms = rate > 0 ? 1000.0 * kRecordsPerDrain / rate : 25;
  return static_cast<int>(std::clamp(ms, 2.0, 25.0));
}

Health Session::CurrentHealth() {
  Health h;
  // The engine of the first event names the session ("engine=timer"); every event's reason
  // is listed.
  h.engine = engines_.engines.empty() ? "none"
             : engines_.events.front()->source == EventSource::kAlloc
                 ? "alloc"
             : engines_.events.front()->source == EventSource::kLock
                 ? "lock"
             : engines_.events.front()->source == EventSource::kCond
                 ? "cond"
                 : EngineName(engines_.engines.front()->kind());
  for (const std::string& reason : engines_.reasons) {
    if (!h.engine_reason.empty()) h.engine_reason += "; ";
    h.engine_reason += reason;
  }
  h.unwinder = sampler_.unwind == UnwindMode::kFp      ? "fp"
               : sampler_.unwind == UnwindMode::kDwarf ? "dwarf"
                                                       : "auto";
  // A rate only where an event is sampled in time (not allocations or waits alone): the
  // summary and the outputs then say nothing of a frequency that nothing was sampled at.
  const bool timed = std::any_of(engines_.events.begin(), engines_.events.end(), [](const EventSpec* e) {
    return !IsHookEvent(e->source);
  });
  h.requested_hz = timed ? config_.frequency : 0;
  const int64_t cpu_ns = (stopped_ ? times_.stop_cpu_ns : Now(CLOCK_PROCESS_CPUTIME_ID)) - times_.start_cpu_ns;
  // Rate of the first event per CPU-second (meaningful for cpu; for other events it is
  // their samples per CPU-second of the process).
  h.achieved_hz = timed && cpu_ns > 0 ? static_cast<double>(counts_.first_event_weight) * 1e9 /
                                            static_cast<double>(cpu_ns)
                                      : 0;
  const SamplerCounters& c = sampler_.counters;
  DrainCounts drained;
  if (collector_) {
    CollectorLockHeld();
    drained = collector_->counts();
  }
  h.samples = counts_.samples;
  h.dropped =
      c.ring_full.load(std::memory_order_relaxed) + c.reentered.load(std::memory_order_relaxed);
  h.truncated = drained.truncated + drained.copy_truncated;
  h.broken = drained.broken;
  h.overflow = table_.overflow_samples();
  h.threads_seen = registry_ ? registry_->threads_seen() : 0;
  h.overruns = counts_.overruns;
  AddHealthWarnings(&h);
  if (bootstrap_only_) BootstrapHealthLocked(&h);
  return h;
}

void Session::AddHealthWarnings(Health* health) {
  Health& h = *health;
  if (const uint64_t n = table_.timeline_dropped(); n != 0) {
    h.warnings.push_back("the timeline is full: " + std::to_string(n) +
                         " later samples have no time (they are in every aggregate; "
                         "max_memory bounds the timeline)");
  }
  if (const LabelStats labels = LabelStatsNow(); labels.overflows != 0) {
    h.warnings.push_back(std::to_string(labels.overflows) +
                         " label changes were refused (at most 16 labels per thread, 4096 "
                         "distinct sets): those threads' samples are labelled [overflow]");
  }
  DrainCounts drained;
  if (collector_) {
    CollectorLockHeld();
    drained = collector_->counts();
    for (std::string& w : collector_->Warnings()) h.warnings.push_back(std::move(w));
  }
  if (registry_) {
    // What each thread's CPU time promised: only a CPU-time first event has a rate per
    // CPU-second (wall samples follow real time, count events their counts).
    const EventSpec* first = engines_.events.empty() ? nullptr : engines_.events.front();
    const bool cpu_time = first != nullptr && (first->source == EventSource::kCpuTime ||
                                               (first->source == EventSource::kPerf &&
                                                first->time_based));
    h.threads = registry_->ThreadHealthSnapshot(cpu_time ? config_.frequency : 0);
    for (const ThreadHealth& t : h.threads) {
      // Worth a word only when the thread ran long enough for the shortfall to be real: at
      // 100 expected samples the count's standard deviation is 10, so 20 % short is 2 sigma.
      if (t.expected >= 100 && static_cast<double>(t.weight) < 0.8 * t.expected) {
        char text[256];
        std::snprintf(text, sizeof text,
                      "thread %lld (%s) got %.0f%% of the samples its CPU time should give "
                      "(%" PRIu64 " of %.0f)",
                      static_cast<long long>(t.tid), t.name.c_str(),
                      100.0 * static_cast<double>(t.weight) / t.expected, t.weight, t.expected);
        h.warnings.push_back(text);
      }
    }
    for (std::string& w : registry_->TakeWarnings()) h.warnings.push_back(std::move(w));
    if (uint64_t n = registry_->threads_unsampled()) {
      h.warnings.push_back(std::to_string(n) + " threads were not sampled (max_threads)");
    }
    if (uint64_t n = registry_->threads_without_copies()) {
      h.warnings.push_back(std::to_string(n) +
                           " threads were sampled with frame pointers only: their stack copies "
                           "would have gone past max_copy_memory");
    }
  }
  for (const auto& engine : engines_.engines) {
    for (std::string& w : engine->Warnings()) h.warnings.push_back(std::move(w));
  }
  h.warnings.insert(h.warnings.begin(), warnings_.begin(), warnings_.end());
  if (drained.leaf_only != 0) {
    h.warnings.push_back(std::to_string(drained.leaf_only) +
                         " samples have only their leaf frame (stack bounds not yet known)");
  }
  if (drained.copy_truncated != 0) {
    h.warnings.push_back(std::to_string(drained.copy_truncated) +
                         " stacks were deeper than the copied window (stack_bytes=" +
                         std::to_string(config_.stack_bytes) +
                         "): their outer frames are cut at [truncated]; raise INPROF_STACK_BYTES");
  }
  if (const uint64_t full = sampler_.counters.copy_full.load(std::memory_order_relaxed)) {
    h.warnings.push_back(std::to_string(full) +
                         " samples came while all of their thread's stack copies were in use: "
                         "they kept only the frame-pointer walk");
  }
  // The program's threads inside the runtime (inprof_start, stop, dumps): left out of the
  // profile, and worth a word only when they are more than a trace of it.
  if (const uint64_t own = sampler_.counters.profiler_work.load(std::memory_order_relaxed);
      own * 100 > counts_.weight + own) {
    h.warnings.push_back(std::to_string(own) +
                         " samples fell in the profiler's own work on the program's threads "
                         "(starting, stopping, dumping): they are left out of the profile");
  }
  if (lua_.unspliced() != 0) {
    h.warnings.push_back(std::to_string(lua_.unspliced()) +
                         " native samples inside the LuaJIT VM came before its first Lua stack: "
                         "they have no Lua frames");
  }
  if (h.overflow != 0) {
    h.warnings.push_back(std::to_string(h.overflow) +
                         " samples went to [overflow]: the stack table reached max_memory");
  }
}

double Session::LiveBytes() {
  MutexLock lock(&data_mu_);
  return alloc_ ? alloc_->Live().bytes : 0;
}

std::string Session::TopLiveStacks(size_t count) {
  if (alloc_event_ < 0) return "";
  Profile profile = Snapshot();
  const size_t event = static_cast<size_t>(alloc_event_) + 3;  // inuse_space
  std::vector<const Sample*> samples;
  for (const Sample& s : profile.samples) {
    if (event < s.weights.size() && s.weights[event] > 0) samples.push_back(&s);
  }
  std::sort(samples.begin(), samples.end(), [event](const Sample* a, const Sample* b) {
    return a->weights[event] > b->weights[event];
  });
  std::string text;
  for (size_t i = 0; i < samples.size() && i < count; ++i) {
    const Sample& s = *samples[i];
    text += "inprof: leak: " + std::to_string(s.weights[event]) + " bytes in " +
            std::to_string(s.weights[event - 1]) + " objects at ";
    // The leaf-most frames that are the program's, with file:line where known.
    size_t shown = 0;
    for (size_t f = s.frames.size(); f-- > 0 && shown < 4;) {
      const Frame& frame = profile.frames[s.frames[f]];
      if (frame.kind == FrameKind::kSynthetic) continue;
      if (shown++ != 0) text += " < ";
      text += frame.function;
      if (frame.has_source()) {
        const size_t slash = frame.file.rfind('/');
        text += " (" + frame.file.substr(slash == std::string::npos ? 0 : slash + 1) + ":" +
                std::to_string(frame.line) + ")";
      }
    }
    text += "\n";
  }
  return text;
}

std::string Session::AllocSummary() {
  AllocProfile::LiveTotals live;
  uint64_t unattached = 0;
  {
    MutexLock lock(&data_mu_);
    if (alloc_) {
      live = alloc_->Live();
      unattached = alloc_->unattached();
    }
  }
  const AllocSampling& state = AllocState();
  char text[512];
  std::snprintf(text, sizeof text,
                "inprof: alloc: %" PRIu64 " allocations sampled (one per %zu bytes on average); "
                "still live at the end: %" PRIu64 " sampled, estimated %.0f objects, %.0f bytes",
                state.sampled.load(std::memory_order_relaxed), config_.alloc_rate, live.sampled,
                live.objects, live.bytes);
  std::string line = text;
  if (const uint64_t waits = state.waits.load(std::memory_order_relaxed); waits != 0) {
    // Worth knowing when a program runs slower under the profiler than without.
    std::snprintf(text, sizeof text,
                  "; %" PRIu64 " times a thread waited for room for a sample (at most 1 ms each)",
                  waits);
    line += text;
  }
  const uint64_t dropped = state.dropped.load(std::memory_order_relaxed);
  const uint64_t full = state.live_full.load(std::memory_order_relaxed);
  if (dropped != 0 || full != 0 || unattached != 0) {
    std::snprintf(text, sizeof text,
                  "\ninprof: warning: alloc: %" PRIu64 " sampled allocations dropped (ring full), %" PRIu64
                  " not tracked as live (live table full: alloc_live_max), %" PRIu64
                  " live ones without a stack (stack budget)",
                  dropped, full, unattached);
    line += text;
  }
  return line;
}

std::string Session::SummaryLine(const std::vector<std::string>& written) {
  Health h;
  {
    MutexLock lock(&data_mu_);
    h = CurrentHealth();
  }
  const int64_t end = stopped_ ? times_.stop_monotonic_ns : Now(CLOCK_MONOTONIC);
  const int64_t cpu = (stopped_ ? times_.stop_cpu_ns : Now(CLOCK_PROCESS_CPUTIME_ID)) - times_.start_cpu_ns;
  char buf[768];
  char frequency[48] = "";
  if (h.requested_hz > 0) std::snprintf(frequency, sizeof frequency, " frequency=%gHz", h.requested_hz);
  std::snprintf(buf, sizeof buf,
                "inprof: engine=%s unwinder=%s%s samples=%" PRIu64 " dropped=%" PRIu64
                " truncated=%" PRIu64 " overflow=%" PRIu64 " threads=%" PRIu64
                " duration=%.2fs cpu=%.2fs",
                h.engine.c_str(), h.unwinder.c_str(), frequency, h.samples, h.dropped,
                h.truncated, h.overflow, h.threads_seen,
                static_cast<double>(end - times_.start_monotonic_ns) / 1e9,
                static_cast<double>(cpu) / 1e9);
  std::string line = buf;
  if (h.requested_hz > 0) {
    std::snprintf(buf, sizeof buf, " rate=%.1fHz", h.achieved_hz);
    line += buf;
  }
  if (!written.empty()) {
    line += " outputs=";
    // In INPROF_OUTPUT's own syntax: a comma or newline in a path stays one item of one line.
    for (size_t i = 0; i < written.size(); ++i) {
      line += (i ? "," : "") + EscapeOutputListItem(written[i]);
    }
  }
  if (const int64_t symbolize_ns = dump_symbolize_ns_.load(std::memory_order_relaxed);
      symbolize_ns >= 0) {
    // Dump request to every output written: snapshot + symbolization, then the writes.
    const int64_t write_ns = dump_write_ns_.load(std::memory_order_relaxed);
    char text[96];
    std::snprintf(text, sizeof text, " export=%.3fs (symbolize=%.3fs write=%.3fs)",
                  static_cast<double>(symbolize_ns + write_ns) / 1e9,
                  static_cast<double>(symbolize_ns) / 1e9, static_cast<double>(write_ns) / 1e9);
    line += text;
  }
  if (config_.window > 0) {
    uint64_t closed;
    {
      MutexLock lock(&data_mu_);
      closed = window_.closed();
    }
    line += "\n" + pipeline_.SummaryLines(closed);
  }
  line += "\ninprof: engine: " + h.engine_reason;
  if (alloc_event_ >= 0) line += "\n" + AllocSummary();
  if (lock_event_ >= 0) {
    line += "\n" + LockSummary(LockState(), "lock", "waits for held locks");
  }
  if (cond_event_ >= 0) line += "\n" + LockSummary(CondState(), "cond", "condition waits");
  double expected = 0, cpu_s = 0;
  uint64_t weight = 0, taken = 0;
  for (const ThreadHealth& t : h.threads) {
    expected += t.expected;
    cpu_s += t.cpu_seconds;
    weight += t.weight;
    taken += t.taken;
  }
  if (expected > 0) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "\ninprof: threads: %zu sampled, %.2f CPU-s, expected %.0f samples at %g Hz, "
                  "got %" PRIu64 " (%.1f%%: %" PRIu64 " signals + %" PRIu64 " overruns)",
                  h.threads.size(), cpu_s, expected, h.requested_hz, weight,
                  100.0 * static_cast<double>(weight) / expected, taken, weight - taken);
    line += text;
  }
  for (const std::string& w : h.warnings) line += "\ninprof: warning: " + w;
  return line;
}

void Session::CountSample(ThreadSlot& slot, uint32_t weight, uint16_t event) {
  ++counts_.samples;
  counts_.weight += weight;
  if (event == 0) {
    counts_.first_event_weight += weight;
    ++slot.drained_samples;
    slot.drained_weight += weight;
  }
  // A timer sample's weight beyond 1 is expirations the kernel could not deliver.
  if (event < engines_.engines.size() && engines_.engines[event]->kind() != EngineKind::kPerf &&
      engines_.engines[event]->kind() != EngineKind::kNone && weight > 1) {
    counts_.overruns += weight - 1;
  }
}

void Session::OnSample(ThreadSlot& slot, StackBuffer& stack, const SampleMeta& meta) {
  const pid_t tid = slot.tid.load(std::memory_order_relaxed);
  if (meta.alloc.size != 0 && ((lock_event_ >= 0 && meta.event == lock_event_) ||
                               (cond_event_ >= 0 && meta.event == cond_event_))) {
    // A sampled lock or condition wait of alloc.size ns: Go's block-profile weights (lock_sampler.h), the
    // fractional count rounded up with the probability of its fraction, so that the
    // rounding adds no bias. Not on the timeline, as allocations.
    const LockWeights w = LockWaitWeights(meta.alloc.size, config_.lock_rate);
    lock_rng_ ^= lock_rng_ >> 12;
    lock_rng_ ^= lock_rng_ << 25;
    lock_rng_ ^= lock_rng_ >> 27;
    const double u = static_cast<double>((lock_rng_ * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
    const double whole = std::floor(w.contentions);
    const uint64_t contentions =
        static_cast<uint64_t>(whole) + (u < w.contentions - whole ? 1 : 0);
    const uint64_t delay = static_cast<uint64_t>(std::llround(w.delay_ns));
    if (tid > 0) stack.push(kThreadMarker | static_cast<uintptr_t>(tid));
    if (meta.labels != 0) stack.push(kLabelsMarker | meta.labels);
    table_.Add(stack.frames(), contentions, meta.event);
    table_.Add(stack.frames(), delay, meta.event + 1u);
    taps_.Add(stack.frames(), contentions, meta.event, 0);
    taps_.Add(stack.frames(), delay, meta.event + 1u, 0);
    ++counts_.samples;
    return;
  }
  if (meta.alloc.size != 0) {
    // A sampled allocation: its weights for alloc_objects and alloc_space. Not spliced with
    // Lua stacks, not on the timeline (its byte weights do not fit a timed entry).
    if (!alloc_ || alloc_event_ < 0 || meta.event != alloc_event_) return;
    if (tid > 0) stack.push(kThreadMarker | static_cast<uintptr_t>(tid));
    if (meta.labels != 0) stack.push(kLabelsMarker | meta.labels);
    const AllocProfile::Rounded w = alloc_->OnSample(stack.frames(), meta.alloc);
    table_.Add(stack.frames(), w.objects, meta.event);
    table_.Add(stack.frames(), w.bytes, meta.event + 1u);
    taps_.Add(stack.frames(), w.objects, meta.event, 0);
    taps_.Add(stack.frames(), w.bytes, meta.event + 1u, 0);
    ++counts_.samples;
    return;
  }
  // Mixed Lua mode: a sample inside the VM waits for the VM's next Lua stack.
  if (lua_.Splices(tid) &&
      lua_.Defer(stack.frames(), meta, sampler_.code.load(std::memory_order_acquire))) {
    CountSample(slot, meta.weight, meta.event);
    return;
  }
  if (tid > 0) stack.push(kThreadMarker | static_cast<uintptr_t>(tid));
  if (meta.labels != 0) stack.push(kLabelsMarker | meta.labels);
  AggregateLocked(stack.frames(), meta);
  CountSample(slot, meta.weight, meta.event);
}

void Session::AggregateLocked(std::span<const uintptr_t> stack, const SampleMeta& meta) {
  table_.Add(stack, meta.weight, meta.event, meta.time_ns);
  taps_.Add(stack, meta.weight, meta.event, meta.time_ns);
}

uint64_t Session::samples() {
  MutexLock lock(&data_mu_);
  return counts_.samples;
}

void Session::ImportBootstrap(pid_t tid) {
  bootstrap_tid_ = tid;
  // The session may have started on another thread (the exit watcher, for a deferred start):
  // the bootstrap thread's stack is known, so its first samples unwind in full.
  if (tid > 0 && g_bootstrap.bounds.hi != 0 && registry_ != nullptr) {
    registry_->RegisterKnownThread(tid, g_bootstrap.bounds.lo, g_bootstrap.bounds.hi);
  }
  // The child's profile covers it from the fork on.
  times_.start_realtime_ns = g_bootstrap.start_realtime_ns;
  times_.start_monotonic_ns = g_bootstrap.start_monotonic_ns;
  times_.start_cpu_ns = g_bootstrap.start_cpu_ns;
  MutexLock lock(&data_mu_);
  table_.set_time_origin(times_.start_monotonic_ns);
  // Into the table directly (no tap can be open yet), then the samples' times, which name
  // the bootstrap table's entries.
  std::vector<uintptr_t> stack;
  std::unordered_map<uint32_t, uint32_t> stack_of_entry;
  // The samples whose stack was copied too are unwound as the session's own copies are: a
  // frame-pointer walk stops at the first caller without frame pointers (main's, in a C
  // library built without them), and those samples would form a second tower beside the same
  // path unwound from _start (docs/lifecycle.md). Their weight and time move from their fp
  // walk's entry to the unwound stack; a copy that does not unwind stays on its fp walk.
  std::unordered_map<uint32_t, uint64_t> moved;  // entry -> weight now on unwound stacks
  std::vector<bool> moved_time;                  // by index in the table's times
  if (collector_ && collector_->unwinds_copies()) {
    std::unordered_map<uint32_t, BootstrapStack> walks;
    BootstrapForEach([&](const BootstrapStack& s) { walks.emplace(s.entry, s); });
    auto record = std::make_unique<CopyRecord>();
    StackBuffer unwound;
    BootstrapCopiesForEach([&](const BootstrapTable::Copy& c, const uint8_t* bytes)
                               REQUIRES(data_mu_) {
      CopyRecord& r = *record;
      r.tid = static_cast<uint32_t>(tid);
      r.weight = c.weight;
      r.labels = c.labels;
      r.time_ns = c.time_ns;
      r.event = 0;
      r.copy = c.copy;
      // As the handler fills a copy's record: the fp walk too in auto mode, for the
      // collector to keep whichever chain is better.
      r.fp_depth = 0;
      r.fp_stop = WalkStop::kRoot;
      if (const auto w = walks.find(c.entry);
          w != walks.end() && sampler_.unwind == UnwindMode::kAuto) {
        const size_t n = std::min<size_t>(w->second.frames.size(), kMaxFrames);
        std::copy_n(w->second.frames.begin(), n, r.fp_frames);
        r.fp_depth = static_cast<uint16_t>(n);
        r.fp_stop = w->second.stop;
      }
      CollectorLockHeld();
      if (!collector_->UnwindEarlyCopyLocked(r, bytes, &unwound)) return;
      if (tid > 0) unwound.push(kThreadMarker | static_cast<uintptr_t>(tid));
      if (c.labels != 0) unwound.push(kLabelsMarker | c.labels);
      table_.Add(unwound.frames(), c.weight, 0,
                 c.time_index != BootstrapTable::kNoEntry ? c.time_ns : 0);
      moved[c.entry] += c.weight;
      if (c.time_index != BootstrapTable::kNoEntry) {
        if (moved_time.size() <= c.time_index) moved_time.resize(c.time_index + 1);
        moved_time[c.time_index] = true;
      }
    });
  }
  const auto remaining = [&](uint32_t entry, uint64_t weight) {
    const auto it = moved.find(entry);
    return it == moved.end() ? weight : weight - std::min(weight, it->second);
  };
  BootstrapForEach([&](const BootstrapStack& s) REQUIRES(data_mu_) {
    const uint64_t weight = remaining(s.entry, s.weight);
    if (weight == 0) return;
    BootstrapStackForLookup(s, tid, &stack);
    stack_of_entry[s.entry] = table_.Add(stack, weight, 0);
  });
  if (const uint64_t lost = remaining(BootstrapTable::kNoEntry, BootstrapOverflowWeight());
      lost != 0) {
    static constexpr uintptr_t kOverflow[] = {kOverflowMarker};
    stack_of_entry[BootstrapTable::kNoEntry] = table_.Add(kOverflow, lost, 0);
  }
  uint32_t time_index = 0;
  BootstrapTimesForEach([&](int64_t time_ns, uint32_t entry, uint32_t weight) REQUIRES(data_mu_) {
    const uint32_t i = time_index++;
    if (i < moved_time.size() && moved_time[i]) return;
    if (const auto it = stack_of_entry.find(entry); it != stack_of_entry.end()) {
      table_.AddTime(it->second, weight, 0, time_ns);
    }
  });
  // The table's totals count every sample, those that found it full included.
  const BootstrapTotals totals = BootstrapTotalsNow();
  counts_.samples += totals.samples;
  counts_.weight += totals.weight;
  counts_.first_event_weight += totals.weight;
}

void Session::BeforeDlclose() {
  {
    MutexLock lock(&data_mu_);
    // Only when no other dlclose is under way: that one may be unmapping right now.
    if (collector_ && g_dlclose_in_progress.load(std::memory_order_acquire) == 1) {
      CollectorLockHeld();
      collector_->DrainLocked(true);
    }
  }
  NoteModules();
}

void Session::NoteModules() { builder_.NoteModules(); }

size_t Session::TableBudget() const {
  // Continuous mode keeps up to three tables of this size alive (the window being filled and
  // two waiting for the exporter) plus the taps': together within max_memory.
  return config_.window > 0 ? config_.max_memory / 4 : config_.max_memory * 3 / 4;
}

size_t Session::TapBudget() const { return config_.max_memory / (4 * kMaxTaps); }

void Session::AddWindowListener(std::function<void(const Window&)> listener) {
  pipeline_.AddListener(std::move(listener));
}

void Session::OnDrained() {
  if (config_.window <= 0) return;
  const int64_t now = Now(CLOCK_MONOTONIC);
  if (window_.Due(now)) RotateWindowLocked(now);
}

void Session::AddLiveLocked(StackTable* table) {
  if (alloc_ && alloc_event_ >= 0) alloc_->AddLive(table, static_cast<size_t>(alloc_event_) + 2);
}

void Session::RotateWindowLocked(int64_t now_monotonic_ns) {
  RawWindow window;
  window.table = StackTable(TableBudget(), config_.events.size(), config_.timeline);
  window.table.set_time_origin(now_monotonic_ns);
  Health health = CurrentHealth();
  window_.Close(now_monotonic_ns, Now(CLOCK_REALTIME), &health, &window);
  window.health = std::move(health);
  std::swap(window.table, table_);  // table_ is now the next window's, empty
  // alloc_* are the window's (deltas); inuse_* what is live as it closes.
  AddLiveLocked(&window.table);
  pipeline_.Push(std::move(window));
}

}  // namespace inprof::internal
