// From raw address stacks to the symbolized Profile the exporters write (see
// profile_builder.h). Control path.
#include "session/profile_builder.h"

#include "inprof/symbolize_raw.h"
#include "threads/labels.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

namespace inprof::internal {

std::string ProgramPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

// The command name, as ps and perf show it (/proc/self/comm, set at exec or by prctl).
std::string ProcessComm() {
  char buf[64] = {};
  const int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  std::string comm(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

int LuaIntervalMs(const Config& config) {
  return std::max(1, static_cast<int>(1000.0 / config.frequency + 0.5));
}

ProfileBuilder::ProfileBuilder(const Config& config, const std::vector<const EventSpec*>* events,
                               const LuaSplicer* lua)
    : config_(config), events_(events), lua_(lua), symbolizer_([&config] {
        SymbolizerOptions options;
        options.path_map = config.path_map;
        // The per-user cache of answers by build-id (docs/symbolizer.md): a small profile's
        // export takes milliseconds once the program's libraries have been seen. Not by
        // default for a long-running profile (continuous windows, the pull endpoint): there
        // the cost of opening debug info is paid once over hours, while a partly warm cache
        // defers it to whenever the first unseen function is sampled, so resident memory
        // steps up at an unpredictable time instead of during warm-up, and every window
        // would rewrite the cache files.
        // Nor for a privileged program: $HOME and $XDG_CACHE_HOME are its caller's, who would
        // choose where the program writes (docs/security.md); it may name a directory itself.
        const bool long_running = config.window > 0 || !config.http.empty();
        if (config.symbol_cache.empty() && !long_running && !ProcessIsSecure()) {
          options.cache_dir = DefaultSymbolCacheDir();
        } else if (config.symbol_cache != "off" && config.symbol_cache != "0") {
          options.cache_dir = config.symbol_cache;
        }
        return options;
      }()) {}

void ProfileBuilder::NoteModules() {
  MutexLock lock(&mu_);
  symbolizer_.RefreshModules();
}

Profile ProfileBuilder::Symbolize(const RawProfile& raw) {
  MutexLock lock(&mu_);
  const SymbolizerStats before = symbolizer_.Stats();
  Profile profile = SymbolizeRawProfile(raw, symbolizer_);
  // New answers reach the cache now: the process may end without another chance.
  symbolizer_.SaveCache();
  const SymbolizerStats after = symbolizer_.Stats();
  profile.health.symbol_cache_hits = after.cache_hits - before.cache_hits;
  profile.health.symbol_cache_misses = after.cache_misses - before.cache_misses;
  return profile;
}

std::vector<EventInfo> ProfileBuilder::EventInfos() const {
  std::vector<EventInfo> infos;
  for (size_t e = 0; e < events_->size(); ++e) {
    const EventSpec& spec = *(*events_)[e];
    EventInfo info;
    info.name = spec.name;
    info.unit = spec.unit;
    const double hz = spec.source == EventSource::kWallTime ? config_.wall_frequency
                      : spec.source == EventSource::kLua    ? 1000.0 / LuaIntervalMs(config_)
                                                            : config_.frequency;
    if (spec.time_based) {
      info.period = static_cast<uint64_t>(1e9 / hz);
      info.frequency_hz = hz;
    } else {
      info.period = 1;  // sample weights are already event counts (period x samples)
    }
    infos.push_back(info);
  }
  return infos;
}

RawProfile ProfileBuilder::BuildRawHeader(Health health, int64_t start_unix_ns) {
  RawProfile raw;
  raw.meta.program = ProgramPath();
  raw.meta.pid = getpid();
  raw.meta.start_time_ns = start_unix_ns;
  raw.ppid = getppid();
  raw.comm = ProcessComm();
  raw.events = EventInfos();
  raw.health = std::move(health);
  return raw;
}

RawProfile ProfileBuilder::BuildRaw(const StackTable& table, Health health,
                                    int64_t start_unix_ns, int64_t duration_ns) {
  RawProfile raw = BuildRawHeader(std::move(health), start_unix_ns);
  raw.meta.duration_ns = duration_ns;
  for (const ThreadHealth& t : raw.health.threads) raw.threads.push_back({t.tid, t.name});
  // Lua frames: the splicer's interned index becomes an index into raw.lua_frames.
  std::unordered_map<uintptr_t, uint64_t> lua_index;
  // Label sets: the process-wide id becomes an index into raw.label_sets, in order of use.
  std::unordered_map<uint32_t, uint64_t> label_index;
  raw.stacks.reserve(table.size());
  table.ForEach([&](std::span<const uintptr_t> frames, std::span<const uint64_t> weights) {
    RawStack& stack = raw.stacks.emplace_back();
    stack.addresses.reserve(frames.size());
    for (uintptr_t a : frames) {
      if (IsLuaFrameMarker(a)) {
        auto [it, inserted] = lua_index.try_emplace(a, raw.lua_frames.size());
        if (inserted) raw.lua_frames.push_back(lua_->FrameOf(a));
        stack.addresses.push_back(kRawLuaTag | it->second);
      } else if (IsLabelsMarker(a)) {
        auto [it, inserted] = label_index.try_emplace(LabelSetOfMarker(a), raw.label_sets.size());
        if (inserted) raw.label_sets.push_back(LabelSetOf(LabelSetOfMarker(a)));
        stack.addresses.push_back(kRawLabelsTag | (it->second + 1));
      } else {
        stack.addresses.push_back(a);
      }
    }
    stack.weights.assign(weights.begin(), weights.end());
    for (size_t e = 0; e < weights.size() && e < raw.events.size(); ++e) {
      raw.events[e].total_weight += static_cast<int64_t>(weights[e]);
    }
  });
  // The timeline, in time order (drains interleave threads), from the table's start; the
  // [overflow] stack, when it has weight, is the last one ForEach gave.
  raw.timeline.reserve(table.timeline().size());
  for (const TimedEntry& t : table.timeline()) {
    const uint32_t stack =
        t.stack == kOverflowStack ? static_cast<uint32_t>(raw.stacks.size() - 1) : t.stack;
    if (stack >= raw.stacks.size()) continue;
    raw.timeline.push_back(TimedSample{std::max<int64_t>(0, t.time_ns - table.time_origin()),
                                       stack, t.event, t.weight});
  }
  std::stable_sort(raw.timeline.begin(), raw.timeline.end(),
                   [](const TimedSample& a, const TimedSample& b) { return a.time_ns < b.time_ns; });
  MutexLock lock(&mu_);
  symbolizer_.RefreshModules();
  raw.modules = symbolizer_.RecordedModules();
  return raw;
}

}  // namespace inprof::internal
