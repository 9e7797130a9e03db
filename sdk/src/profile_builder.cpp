// From raw address stacks to the symbolized Profile the exporters write. Control path.
#include <unistd.h>

#include <climits>
#include <unordered_map>

#include "internal/session.h"

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

Profile Session::Snapshot() {
  std::vector<RawStack> raw;
  Profile profile;
  {
    std::lock_guard<std::mutex> lock(data_mu_);
    DrainLocked();
    table_.ForEach([&](std::span<const uintptr_t> frames, std::span<const uint64_t> weights) {
      raw.push_back(RawStack{{frames.begin(), frames.end()}, {weights.begin(), weights.end()}});
    });
    profile.health = CurrentHealth();
  }

  profile.meta.program = ProgramPath();
  profile.meta.pid = getpid();
  profile.meta.start_time_ns = start_realtime_ns_;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t end =
      stopped_ ? stop_monotonic_ns_ : static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  profile.meta.duration_ns = end - start_monotonic_ns_;

  for (size_t e = 0; e < events_.size(); ++e) {
    const EventSpec& spec = *events_[e];
    EventInfo info;
    info.name = spec.name;
    info.unit = spec.unit;
    const double hz = spec.source == EventSource::kWallTime ? config_.wall_frequency : config_.frequency;
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
    if (address == kTruncatedMarker || address == kOverflowMarker) {
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
    std::lock_guard<std::mutex> lock(symbolize_mu_);
    symbolizer_.RefreshModules();
    profile.samples.reserve(raw.size());
    for (const RawStack& stack : raw) {
      Sample sample;
      // Raw stacks are leaf first; samples are root first.
      for (auto a = stack.frames.rbegin(); a != stack.frames.rend(); ++a) {
        const std::vector<uint32_t>& chain = chain_for(*a);
        sample.frames.insert(sample.frames.end(), chain.begin(), chain.end());
      }
      sample.weights.assign(stack.weights.begin(), stack.weights.end());
      for (size_t e = 0; e < sample.weights.size() && e < profile.events.size(); ++e) {
        profile.events[e].total_weight += sample.weights[e];
      }
      profile.samples.push_back(std::move(sample));
    }
  }
  profile.health.unknown_frames = unknown;
  return profile;
}

}  // namespace inprof::internal
