// Raw profiles into symbolized ones (symbolize_raw.h).
#include "inprof/symbolize_raw.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "inprof/saturating.h"

namespace inprof {
namespace {

constexpr uint64_t kTagPayload = ~kRawTagMask;

}  // namespace

// One piece, as the runtime's profile builder was: the frame table, the samples and the
// unknown count share the address -> chain cache.
Profile SymbolizeRawProfile(const RawProfile& raw, Symbolizer& symbolizer) {
  Profile profile;
  profile.meta = raw.meta;
  profile.events = raw.events;
  for (EventInfo& e : profile.events) e.total_weight = 0;
  profile.health = raw.health;
  profile.label_sets = raw.label_sets;
  profile.threads.reserve(raw.threads.size());
  for (const RawThread& t : raw.threads) profile.threads.push_back(ThreadInfo{t.tid, t.name});
  std::stable_sort(profile.threads.begin(), profile.threads.end(),
                   [](const ThreadInfo& a, const ThreadInfo& b) { return a.tid < b.tid; });
  if (!raw.threads.empty()) {
    std::unordered_map<int64_t, const std::string*> names;
    for (const RawThread& t : raw.threads) {
      if (!t.name.empty()) names.emplace(t.tid, &t.name);
    }
    for (ThreadHealth& t : profile.health.threads) {
      if (auto it = names.find(t.tid); it != names.end()) t.name = *it->second;
    }
  }

  // Each distinct address becomes its chain of frames (outermost first), created once.
  std::unordered_map<uint64_t, std::vector<uint32_t>> chains;
  uint64_t unknown = 0;
  auto chain_for = [&](uint64_t address) -> const std::vector<uint32_t>& {
    auto it = chains.find(address);
    if (it != chains.end()) return it->second;
    std::vector<uint32_t> chain;
    if ((address & kRawTagMask) == kRawLuaTag) {
      const uint64_t index = address & kTagPayload;
      chain.push_back(static_cast<uint32_t>(profile.frames.size()));
      profile.frames.push_back(index < raw.lua_frames.size() ? raw.lua_frames[index]
                                                             : SyntheticFrame("[lua]"));
    } else if (address == kRawTruncated || address == kRawOverflow) {
      chain.push_back(static_cast<uint32_t>(profile.frames.size()));
      profile.frames.push_back(
          SyntheticFrame(address == kRawTruncated ? "[truncated]" : "[overflow]"));
    } else {
      const std::vector<SymbolizedFrame>& resolved = symbolizer.Symbolize(address);
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

  profile.samples.reserve(raw.stacks.size());
  for (const RawStack& stack : raw.stacks) {
    Sample sample;
    // Raw stacks are leaf first; samples are root first.
    for (auto a = stack.addresses.rbegin(); a != stack.addresses.rend(); ++a) {
      if ((*a & kRawTagMask) == kRawThreadTag) {
        sample.tid = static_cast<int64_t>(*a & kTagPayload);
        continue;
      }
      if ((*a & kRawTagMask) == kRawLabelsTag) {
        // A set the profile does not have (a hand-made RawProfile: the reader refuses it)
        // leaves the sample without labels rather than pointing past label_sets.
        const uint64_t set = *a & kTagPayload;
        sample.labels = set <= raw.label_sets.size() ? static_cast<uint32_t>(set) : 0;
        continue;
      }
      const std::vector<uint32_t>& chain = chain_for(*a);
      sample.frames.insert(sample.frames.end(), chain.begin(), chain.end());
    }
    sample.weights = stack.weights;
    for (size_t e = 0; e < sample.weights.size() && e < profile.events.size(); ++e) {
      profile.events[e].total_weight =
          SaturatingAdd(profile.events[e].total_weight, sample.weights[e]);
    }
    profile.samples.push_back(std::move(sample));
  }
  profile.health.unknown_frames = unknown;

  // One sample per raw stack, in order: a timed sample's stack index is its sample index.
  profile.timeline.reserve(raw.timeline.size());
  for (const TimedSample& t : raw.timeline) {
    if (t.sample < profile.samples.size() && t.event < profile.events.size()) {
      profile.timeline.push_back(t);
    }
  }
  SortTimeline(&profile.timeline);

  // The mappings of the modules the frames are in (pprof: ranges, file offsets, build-ids).
  std::unordered_set<std::string> used;
  for (const Frame& f : profile.frames) {
    if (!f.module.empty()) used.insert(f.module);
  }
  for (Symbolizer::MappedModule& m : symbolizer.Modules()) {
    if (used.count(m.path) == 0) continue;
    profile.modules.push_back(
        Module{std::move(m.path), m.start, m.limit, m.offset, std::move(m.build_id)});
  }
  return profile;
}

}  // namespace inprof
