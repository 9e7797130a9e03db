// The profile builder: raw stacks (addresses, Lua frame ids, markers) into the symbolized
// Profile the exporters write, with the event descriptions and the modules the frames are in.
//
// Concurrency contract: Build and NoteModules may run on any thread, concurrently (dumps,
// the exporter thread, pull requests, the dlclose hook): mu_ guards the symbolizer. The
// caller of Build owns the table it passes (no other thread changes it meanwhile).
// Not async-signal-safe.
#ifndef INPROF_SDK_PROFILE_BUILDER_H_
#define INPROF_SDK_PROFILE_BUILDER_H_

#include <cstdint>
#include <vector>

#include "collector/stack_table.h"
#include "config/config.h"
#include "config/events.h"
#include "inprof/profile.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "inprof/thread_annotations.h"
#include "lua/lua_splicer.h"

namespace inprof::internal {

// The LuaJIT profiler's interval for `config`'s rate (at least 1 ms).
int LuaIntervalMs(const Config& config);
// The executable's path (/proc/self/exe) and the command name (/proc/self/comm, as ps and
// perf show it), as raw profiles record them.
std::string ProgramPath();
std::string ProcessComm();

class ProfileBuilder {
 public:
  // `events` (the session's, in config order) and `lua` outlive the builder.
  ProfileBuilder(const Config& config, const std::vector<const EventSpec*>* events,
                 const LuaSplicer* lua);
  Profile Build(const StackTable& table, Health health, int64_t start_unix_ns,
                int64_t duration_ns) {
    return Symbolize(BuildRaw(table, std::move(health), start_unix_ns, duration_ns));
  }
  // Symbolizes a raw profile of this process (SymbolizeRawProfile with the live symbolizer).
  Profile Symbolize(const RawProfile& raw);
  // The same profile unsymbolized (docs/raw-profile.md): the stacks as they are, the modules
  // loaded now and kept since, the Lua frames the stacks use. No symbolization.
  RawProfile BuildRaw(const StackTable& table, Health health, int64_t start_unix_ns,
                      int64_t duration_ns);
  // The raw profile's metadata only (pid, ppid, comm, program, events): what a process writes
  // when its session starts, so that one killed before its exit write is still known.
  RawProfile BuildRawHeader(Health health, int64_t start_unix_ns);
  // Records the modules loaded now, which the symbolizer keeps after they are unloaded.
  void NoteModules();

 private:
  const Config& config_;
  const std::vector<const EventSpec*>* events_;
  const LuaSplicer* lua_;
  std::vector<EventInfo> EventInfos() const;
  Mutex mu_;
  Symbolizer symbolizer_ GUARDED_BY(mu_);
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_PROFILE_BUILDER_H_
