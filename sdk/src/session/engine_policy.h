// Which engine samples each event, and which unwinder reads the stacks: the choice made once
// at start from the parsed configuration, in words the user can act on.
//
// For the cpu event the candidates are tried in order and the first that works here wins
// (async-profiler's Engine::check()/start() is the model):
//   engine=auto    timer, itimer; perf first when the rate is above the kernel tick
//   engine=perf    perf only;   engine=timer  timer only;   engine=itimer  itimer only
// Each probe returns its engine or why it cannot run; the reason recorded for the winner
// names the candidates refused before it. Why timers are the default for cpu: unprivileged
// perf_event must exclude the kernel, so every sample that lands in a syscall is dropped and
// I/O-heavy code looks idle, while CPU timers charge syscall time to the user stack that
// made the call. Other events have one engine each (wall: monotonic timers, perf events:
// perf_event, lua: none, LuaJIT's profiler feeds it).
//
// Called by the session's Start, on the starting thread. Not async-signal-safe.
#ifndef INPROF_SDK_ENGINE_POLICY_H_
#define INPROF_SDK_ENGINE_POLICY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/events.h"
#include "engines/engine.h"
#include "inprof/dwarf_unwind.h"
#include "inprof/status.h"
#include "signal/sampler.h"

namespace inprof::internal {

// Unmaps a perf fd table (kMaxPerfFds entries, mapped by ChooseEngines).
struct FdTableUnmap {
  void operator()(std::atomic<uint64_t>* table) const;
};
using FdTable = std::unique_ptr<std::atomic<uint64_t>[], FdTableUnmap>;

// The engines chosen for a session, one per configured event, in config order.
struct EngineSet {
  std::vector<const EventSpec*> events;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::string> reasons;   // why each event's engine (for the health block)
  std::vector<std::string> warnings;  // what the user should know (shown in every summary)
  // fd -> token table of perf engines, published in Sampler::fd_tokens; null without perf.
  FdTable fd_tokens;
  FdTable fd_ids;  // Sampler::fd_ids
};

// Chooses and creates the engines for `config`'s events, setting the sampler's event count,
// weights and fd table. `lua_interval_ms` is LuaJIT's profiling interval (for the reason of
// the lua event). An error names the event and what to do.
Status ChooseEngines(const Config& config, int lua_interval_ms, Sampler* sampler,
                     EngineSet* out);

// The unwinder for `config`: frame pointers alone, or DWARF over stack copies (with the fp
// walk beside them for `auto`). unwind=dwarf where DWARF cannot work is an error; auto falls
// back to fp with a warning appended to `warnings`.
struct UnwinderChoice {
  UnwindMode mode = UnwindMode::kFp;
  std::unique_ptr<DwarfUnwinder> dwarf;  // null with kFp
};
Status ChooseUnwinder(const Config& config, UnwinderChoice* out,
                      std::vector<std::string>* warnings);

}  // namespace inprof::internal

#endif  // INPROF_SDK_ENGINE_POLICY_H_
