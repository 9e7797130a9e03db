// From raw address stacks to the symbolized Profile the exporters write (see
// profile_builder.h). Control path.
#include "internal/profile_builder.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace inprof::internal {
namespace {

std::string ProgramPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

Frame SyntheticFrame(const char* name) {
  Frame f;
  f.function = name;
  f.kind = FrameKind::kSynthetic;
  return f;
}

}  // namespace

int LuaIntervalMs(const Config& config) {
  return std::max(1, static_cast<int>(1000.0 / config.frequency + 0.5));
}

ProfileBuilder::ProfileBuilder(const Config& config, const std::vector<const EventSpec*>* events,
                               const LuaSplicer* lua)
    : config_(config), events_(events), lua_(lua), symbolizer_([&config] {
        SymbolizerOptions options;
        options.path_map = config.path_map;
        return options;
      }()) {}

void ProfileBuilder::NoteModules() {
  std::lock_guard<std::mutex> lock(mu_);
  symbolizer_.RefreshModules();
}

// One piece: the frame table, the samples and the modules share the address -> chain cache
// and the symbolizer lock; split, each part would need both passed around.
Profile ProfileBuilder::Build(const StackTable& table, Health health, int64_t start_unix_ns,
                              int64_t duration_ns) {
  Profile profile;
  profile.health = std::move(health);
  profile.meta.program = ProgramPath();
  profile.meta.pid = getpid();
  profile.meta.start_time_ns = start_unix_ns;
  profile.meta.duration_ns = duration_ns;
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
    profile.events.push_back(info);
  }

  // Each distinct address becomes its chain of frames (outermost first), created once.
  std::unordered_map<uintptr_t, std::vector<uint32_t>> chains;
  uint64_t unknown = 0;
  auto chain_for = [&](uintptr_t address) -> const std::vector<uint32_t>& {
    auto it = chains.find(address);
    if (it != chains.end()) return it->second;
    std::vector<uint32_t> chain;
    if (IsLuaFrameMarker(address)) {
      chain.push_back(static_cast<uint32_t>(profile.frames.size()));
      profile.frames.push_back(lua_->FrameOf(address));
    } else if (address == kTruncatedMarker || address == kOverflowMarker) {
      chain.push_back(static_cast<uint32_t>(profile.frames.size()));
      profile.frames.push_back(
          SyntheticFrame(address == kTruncatedMarker ? "[truncated]" : "[overflow]"));
    } else {
      const std::vector<SymbolizedFrame>& resolved = symbolizer_.Symbolize(address);
      for (auto r = resolved.rbegin(); r != resolved.rend(); ++r) {
        Frame f;
        f.function = r->function;
        f.file = r->file;
        f.line = r->line;
        f.column = r->column;
        f.module = r->module;
        f.address = address;
        f.kind = r->inlined ? FrameKind::kInlined : FrameKind::kNative;
        if (f.module.empty()) ++unknown;
        chain.push_back(static_cast<uint32_t>(profile.frames.size()));
        profile.frames.push_back(std::move(f));
      }
    }
    return chains.emplace(address, std::move(chain)).first->second;
  };

  {
    std::lock_guard<std::mutex> lock(mu_);
    symbolizer_.RefreshModules();
    profile.samples.reserve(table.size());
    table.ForEach([&](std::span<const uintptr_t> frames, std::span<const uint64_t> weights) {
      Sample sample;
      // Raw stacks are leaf first; samples are root first.
      for (auto a = frames.rbegin(); a != frames.rend(); ++a) {
        if (IsThreadMarker(*a)) {
          sample.tid = ThreadOfMarker(*a);
          continue;
        }
        const std::vector<uint32_t>& chain = chain_for(*a);
        sample.frames.insert(sample.frames.end(), chain.begin(), chain.end());
      }
      sample.weights.assign(weights.begin(), weights.end());
      for (size_t e = 0; e < sample.weights.size() && e < profile.events.size(); ++e) {
        profile.events[e].total_weight += sample.weights[e];
      }
      profile.samples.push_back(std::move(sample));
    });
  }
  profile.health.unknown_frames = unknown;
  // The mappings of the modules the frames are in (pprof: ranges, file offsets, build-ids).
  {
    std::unordered_set<std::string> used;
    for (const Frame& f : profile.frames) {
      if (!f.module.empty()) used.insert(f.module);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (Symbolizer::MappedModule& m : symbolizer_.Modules()) {
      if (used.count(m.path) == 0) continue;
      profile.modules.push_back(Module{std::move(m.path), m.start, m.limit, m.offset, std::move(m.build_id)});
    }
  }
  return profile;
}

}  // namespace inprof::internal
