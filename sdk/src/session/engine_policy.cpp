// The engine and unwinder choice (see engine_policy.h). Control path.
#include "session/engine_policy.h"

#include <signal.h>
#include <sys/mman.h>

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string_view>

#include "inprof/status.h"

namespace inprof::internal {

constexpr size_t kFdTableBytes = kMaxPerfFds * sizeof(std::atomic<uint64_t>);

void FdTableUnmap::operator()(std::atomic<uint64_t>* table) const { munmap(table, kFdTableBytes); }

namespace {

// What every probe of one session shares.
struct PolicyContext {
  const Config& config;
  Sampler* sampler;
  EngineSet* set;
  long cpu_period_ns;
  double tick_hz;
  std::string tick_text;  // "250 Hz"
  bool above_tick;        // the cpu rate asked for is above what timers deliver
};

// One candidate's outcome: the engine, or why it cannot run here (`why`).
struct Probe {
  std::unique_ptr<Engine> engine;
  std::string why;
};

// A table of kMaxPerfFds zeros (512 KiB), indexed by file descriptor. Fresh anonymous pages
// read as zero, and a process uses few descriptors: the pages are mapped and not touched, so
// only those the engines write (and the handler reads) are ever faulted in. Zeroing both
// tables faulted in 256 pages at every session start, in each followed child too: about 4 ms
// of CPU on this VM, a tenth of what a sampled python3 child cost.
FdTable MapFdTable() {
  void* table = mmap(nullptr, kFdTableBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
  if (table == MAP_FAILED) throw std::bad_alloc();
  return FdTable(static_cast<std::atomic<uint64_t>*>(table));
}

void EnsureFdTable(PolicyContext& ctx) {
  if (ctx.set->fd_tokens) return;
  ctx.set->fd_tokens = MapFdTable();
  ctx.set->fd_ids = MapFdTable();
  ctx.sampler->fd_tokens = ctx.set->fd_tokens.get();
  ctx.sampler->fd_ids = ctx.set->fd_ids.get();
  ctx.sampler->fd_token_count = kMaxPerfFds;
}

Probe ProbeCpu(EngineKind kind, PolicyContext& ctx, uint32_t event) {
  switch (kind) {
    case EngineKind::kPerf: {
      if (const int error = ProbePerfEvent(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK)) {
        return {nullptr, PerfErrorAdvice(error)};
      }
      EnsureFdTable(ctx);
      return {MakePerfEngine(ctx.sampler, ctx.config.signal, PERF_TYPE_SOFTWARE,
                             PERF_COUNT_SW_TASK_CLOCK, static_cast<uint64_t>(ctx.cpu_period_ns),
                             false, ctx.config.dither),
              {}};
    }
    case EngineKind::kTimer:
      if (const int error = ProbeThreadTimer()) return {nullptr, TimerErrorAdvice(error)};
      if (ctx.config.timer_jitter) {
        ctx.sampler->timer_jitter_ns = static_cast<int64_t>(1e9 / ctx.tick_hz);
      }
      return {MakeTimerEngine(ctx.config.signal, ctx.cpu_period_ns, false,
                              ctx.config.timer_jitter),
              {}};
    case EngineKind::kItimer:
      if (ctx.config.signal != SIGPROF) {
        return {nullptr, "the itimer engine can only signal with SIGPROF, not signal " +
                             std::to_string(ctx.config.signal)};
      }
      return {MakeItimerEngine(ctx.sampler, event, ctx.cpu_period_ns, ctx.config.max_threads),
              {}};
    case EngineKind::kNone:
      break;
  }
  return {nullptr, "no such engine"};
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (const std::string& part : parts) {
    if (!text.empty()) text += separator;
    text += part;
  }
  return text;
}

// Why `kind` samples the cpu event, given the candidates refused before it (their `why`).
std::string CpuReason(EngineKind kind, const PolicyContext& ctx,
                      const std::vector<std::string>& refused) {
  const EngineChoice choice = ctx.config.engine;
  switch (kind) {
    case EngineKind::kPerf:
      return choice == EngineChoice::kPerf
                 ? "perf_event task-clock per thread, as asked (engine=perf)"
                 : std::string("perf_event task-clock per thread: samples at dithered instants "
                               "of each thread's CPU time, so loops cannot alias with the "
                               "kernel tick (") +
                       ctx.tick_text + ") that CPU timers fire on; time inside system calls is "
                       "not sampled";
    case EngineKind::kTimer:
      if (choice == EngineChoice::kTimer) return "per-thread CPU-time timers, as asked (engine=timer)";
      if (!refused.empty()) {
        return Join(refused, "; ") +
               ": using per-thread CPU timers (they fire on the kernel tick: a loop whose round "
               "is near a multiple or divisor of it can be misread unless INPROF_TIMER_JITTER=1, "
               "docs/platform-facts.md)";
      }
      return "per-thread CPU-time timers";
    case EngineKind::kItimer:
      if (choice == EngineChoice::kItimer) return "process-wide ITIMER_PROF, as asked (engine=itimer)";
      // The perf reason (if any) stays: it says why perf was not used either.
      return Join(refused, "; ") +
             ": using the process-wide ITIMER_PROF timer (the last resort: at most one signal "
             "per tick, and the program may take it over)";
    case EngineKind::kNone:
      break;
  }
  return {};
}

// The error when the last candidate for the cpu event was refused too.
std::string CpuFailure(EngineKind last, const PolicyContext& ctx, const std::string& why,
                       const std::string& timer_why) {
  switch (ctx.config.engine) {
    case EngineChoice::kPerf:
      return "engine=perf: " + why + "; use engine=timer (or auto) to sample with CPU timers";
    case EngineChoice::kTimer:
      return "engine=timer: " + why + "; use engine=itimer (or auto) to sample with ITIMER_PROF";
    default:
      // The last resort failed: say why timers did not work either.
      return last == EngineKind::kItimer && !timer_why.empty() ? timer_why + "; " + why : why;
  }
}

// What the user should know about the chosen cpu engine at this rate.
void WarnAboveTick(EngineKind kind, PolicyContext& ctx) {
  if (!ctx.above_tick || kind == EngineKind::kPerf) return;
  ctx.set->warnings.push_back(
      "requested " + std::to_string(static_cast<long>(ctx.config.frequency)) +
      " Hz is above the kernel tick (" + ctx.tick_text +
      (kind == EngineKind::kItimer
           ? "): ITIMER_PROF delivers at most one signal per tick, so each sample stands for "
             "several periods (weighted by the thread's CPU time between its samples)"
           : "): CPU timers deliver at most one signal per tick; each sample is weighted by its "
             "timer overruns so totals stay exact"));
}

// The cpu event: the first candidate that works, in the order the configuration asks for.
Status ChooseCpu(PolicyContext& ctx, uint32_t event, Probe* chosen) {
  std::vector<EngineKind> order;
  switch (ctx.config.engine) {
    case EngineChoice::kAuto:
      // perf first at every rate: CPU-time timers only fire on the kernel tick, so their
      // samples sit on the tick's grid and a loop whose round is near a multiple or divisor
      // of the tick is seen at the same few points of its round (measured: 77/18/4 for
      // 50/30/20); perf's hrtimer samples at dithered instants of the thread's CPU time.
      // What timers do better (time inside system calls charged to the caller) is the
      // smaller error: docs/platform-facts.md, "Sampling bias".
      order = {EngineKind::kPerf, EngineKind::kTimer, EngineKind::kItimer};
      break;
    case EngineChoice::kPerf: order = {EngineKind::kPerf}; break;
    case EngineChoice::kTimer: order = {EngineKind::kTimer}; break;
    case EngineChoice::kItimer: order = {EngineKind::kItimer}; break;
  }
  std::vector<std::string> refused;
  std::string timer_why;
  for (EngineKind kind : order) {
    Probe probe = ProbeCpu(kind, ctx, event);
    if (probe.engine) {
      WarnAboveTick(kind, ctx);
      *chosen = {std::move(probe.engine), CpuReason(kind, ctx, refused)};
      return Status::Ok();
    }
    if (kind == order.back()) return Status::Unavailable(CpuFailure(kind, ctx, probe.why, timer_why));
    if (kind == EngineKind::kTimer) timer_why = probe.why;
    refused.push_back(std::move(probe.why));
  }
  return Status::Unavailable("no engine for the cpu event");
}

// Every other event has one engine: it works here or the session does not start.
Status ChooseOther(const EventSpec& spec, PolicyContext& ctx, int lua_interval_ms,
                   Probe* chosen, uint32_t* weight) {
  *weight = 1;
  if (spec.source == EventSource::kLua) {
    *chosen = {MakeNullEngine(), "lua: LuaJIT's profiler, every " + std::to_string(lua_interval_ms) +
                                     " ms at VM safe points (inprof/luajit.h)"};
    return Status::Ok();
  }
  if (spec.source == EventSource::kAlloc) {
    // One engine enters threads for the hooks; the other three events are weights of the
    // same samples (alloc_space) or of the live table (inuse_*).
    if (std::string_view(spec.name) == kAllocEvents[0]) {
      *chosen = {MakeAllocEngine(ctx.sampler, ctx.config.max_threads),
                 "alloc: allocations sampled every " + std::to_string(ctx.config.alloc_rate) +
                     " bytes on average (malloc and friends interposed)"};
    } else {
      *chosen = {MakeNullEngine(), ""};
    }
    return Status::Ok();
  }
  if (spec.source == EventSource::kLock || spec.source == EventSource::kCond) {
    // The lock and condition hooks look their thread up in the same tid -> slot table as the
    // allocation hooks: one engine fills it for all (the alloc events' when they are sampled,
    // else the lock events', else the condition events').
    bool alloc = false, lock = false;
    for (const std::string& e : ctx.config.events) {
      alloc = alloc || e == kAllocEvents[0];
      lock = lock || e == kLockEvents[0];
    }
    const bool lock_first = spec.source == EventSource::kLock;
    const bool fills = !alloc && (lock_first || !lock);
    if (std::string_view(spec.name) == kLockEvents[0]) {
      *chosen = {fills ? MakeAllocEngine(ctx.sampler, ctx.config.max_threads) : MakeNullEngine(),
                 "lock: waits for held locks of " + std::to_string(ctx.config.lock_rate) +
                     " ns or more recorded, shorter ones sampled in proportion (pthread mutex, "
                     "rwlock and spin lock functions interposed)"};
    } else if (std::string_view(spec.name) == kCondEvents[0]) {
      *chosen = {fills ? MakeAllocEngine(ctx.sampler, ctx.config.max_threads) : MakeNullEngine(),
                 "cond: condition waits of " + std::to_string(ctx.config.lock_rate) +
                     " ns or more recorded, shorter ones sampled in proportion "
                     "(pthread_cond_wait, _timedwait and _clockwait interposed)"};
    } else {
      *chosen = {MakeNullEngine(), ""};
    }
    return Status::Ok();
  }
  if (spec.source == EventSource::kWallTime) {
    if (const int error = ProbeThreadTimer()) {
      return Status::Unavailable("event wall needs per-thread timers: " + TimerErrorAdvice(error));
    }
    const long period = std::max(1L, static_cast<long>(1e9 / ctx.config.wall_frequency));
    *chosen = {MakeTimerEngine(ctx.config.signal, period, /*wall=*/true),
               "wall: per-thread CLOCK_MONOTONIC timers at " +
                   std::to_string(static_cast<long>(ctx.config.wall_frequency)) +
                   " Hz (blocked threads are sampled too; their nanosleep/poll/epoll_wait may "
                   "return EINTR)"};
    return Status::Ok();
  }
  // A perf event.
  if (const int error = ProbePerfEvent(spec.perf_type, spec.perf_config, spec.kernel_side)) {
    std::string message =
        std::string("event ") + spec.name + " needs perf_event: " + PerfErrorAdvice(error);
    if (spec.kernel_side && (error == EACCES || error == EPERM)) {
      message += "; it happens inside the kernel, so it needs kernel sampling: "
                 "perf_event_paranoid 1 or less, or CAP_PERFMON";
    }
    return Status::Unavailable(message);
  }
  EnsureFdTable(ctx);
  const uint64_t period =
      spec.time_based ? static_cast<uint64_t>(ctx.cpu_period_ns) : spec.count_period;
  *chosen = {MakePerfEngine(ctx.sampler, ctx.config.signal, spec.perf_type, spec.perf_config,
                            period, spec.kernel_side, spec.time_based && ctx.config.dither),
             std::string(spec.name) + ": perf_event per thread, one sample every " +
                 std::to_string(period) + (spec.time_based ? " ns" : " events")};
  *weight = spec.time_based ? 1u : static_cast<uint32_t>(period);
  return Status::Ok();
}

}  // namespace

Status ChooseEngines(const Config& config, int lua_interval_ms, Sampler* sampler,
                     EngineSet* out) {
  PolicyContext ctx{config, sampler, out,
                    std::max(1L, static_cast<long>(1e9 / config.frequency)), KernelTickHz(),
                    {}, false};
  char tick_text[64];
  std::snprintf(tick_text, sizeof tick_text, "%g Hz", ctx.tick_hz);
  ctx.tick_text = tick_text;
  ctx.above_tick = config.frequency > ctx.tick_hz * 1.001;
  sampler->event_count = static_cast<uint32_t>(config.events.size());
  for (size_t e = 0; e < config.events.size(); ++e) {
    const EventSpec* spec = FindEvent(config.events[e]);
    if (spec == nullptr) return Status::InvalidArgument("unknown event '" + config.events[e] + "'");
    out->events.push_back(spec);
    Probe chosen;
    uint32_t weight = 1;
    Status s = spec->source == EventSource::kCpuTime
                   ? ChooseCpu(ctx, static_cast<uint32_t>(e), &chosen)
                   : ChooseOther(*spec, ctx, lua_interval_ms, &chosen, &weight);
    if (!s.ok()) return s;
    sampler->event_weights[e] = weight;
    // A time event on perf_event: its period can be re-drawn after each sample (see
    // Sampler::event_dither_ns). Count events keep theirs: their weight is the period.
    const bool perf_time = chosen.engine && chosen.engine->kind() == EngineKind::kPerf &&
                           (spec->source == EventSource::kCpuTime || spec->time_based);
    sampler->event_dither_ns[e] =
        perf_time && config.dither ? static_cast<uint64_t>(ctx.cpu_period_ns) : 0;
    sampler->dither_every = PeriodDrawEvery(config.frequency);
    // The period a thread's perf event returns to after its first, shorter one.
    sampler->event_perf_period[e] = 0;
    if (chosen.engine && chosen.engine->kind() == EngineKind::kPerf) {
      sampler->event_perf_period[e] =
          perf_time ? static_cast<uint64_t>(ctx.cpu_period_ns) : spec->count_period;
    }
    if (config.events.size() > 1 && spec->source == EventSource::kCpuTime) {
      chosen.why = "cpu: " + chosen.why;
    }
    if (!chosen.why.empty()) out->reasons.push_back(std::move(chosen.why));
    out->engines.push_back(std::move(chosen.engine));
  }
  return Status::Ok();
}

Status ChooseUnwinder(const Config& config, UnwinderChoice* out,
                      std::vector<std::string>* warnings) {
  out->mode = UnwindMode::kFp;
  if (config.unwind == UnwindChoice::kFp) return Status::Ok();
  StatusOr<std::unique_ptr<DwarfUnwinder>> dwarf =
      DwarfUnwinder::Create(config.dwarf_backend == DwarfBackendChoice::kLibdwfl
                                ? DwarfBackend::kLibdwfl
                                : DwarfBackend::kLibunwind);
  if (!dwarf.ok()) {
    const std::string& error = dwarf.status().message();
    if (config.unwind == UnwindChoice::kDwarf) {
      return Status::Unavailable("unwind=dwarf: " + error);
    }
    warnings->push_back("DWARF unwinding is not available here (" + error +
                        "): stacks are walked with frame pointers only");
    return Status::Ok();
  }
  out->dwarf = std::move(*dwarf);
  out->mode = config.unwind == UnwindChoice::kDwarf ? UnwindMode::kDwarf : UnwindMode::kAuto;
  return Status::Ok();
}

}  // namespace inprof::internal
