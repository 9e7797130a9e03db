// libFuzzer target: the raw profile reader (docs/raw-profile.md) on arbitrary bytes.
//
// The reader must return on any input; a refusal must read "input:LINE: what" with LINE
// within the input; what it accepts must hold the model's invariants that the rest of inprof
// indexes by (tags and timed samples name what exists, the timeline is in time order, label
// keys are sorted and unique) and survive a round trip: written, read back without error as a
// complete file, equal field by field to what was first read, and written again to the same
// bytes. CheckRawProfile is also replayed by tests/exporters/raw_profile_test.cpp
// over fuzz/corpus/raw_profile/.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/raw_profile.h"
#include "reader_checks.h"

namespace inprof::fuzz {
namespace {

constexpr const char* kName = kInputName;

// Equal as the text format carries them: NaN payloads are not kept, NaN's sign and -0 are.
bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  }
  return a == b && std::signbit(a) == std::signbit(b);
}

// The first field in which `a` and `b` differ (`complete` aside), or "".
std::string Difference(const RawProfile& a, const RawProfile& b) {
  if (a.meta.program != b.meta.program || a.meta.pid != b.meta.pid ||
      a.meta.start_time_ns != b.meta.start_time_ns || a.meta.duration_ns != b.meta.duration_ns ||
      a.ppid != b.ppid || a.comm != b.comm) {
    return "metadata";
  }
  if (a.events.size() != b.events.size()) return "event count";
  for (size_t i = 0; i < a.events.size(); ++i) {
    const EventInfo& x = a.events[i];
    const EventInfo& y = b.events[i];
    if (x.name != y.name || x.unit != y.unit || x.period != y.period ||
        !SameDouble(x.frequency_hz, y.frequency_hz) || x.total_weight != y.total_weight) {
      return "event " + std::to_string(i);
    }
  }
  const Health& h = a.health;
  const Health& g = b.health;
  if (h.engine != g.engine || h.engine_reason != g.engine_reason || h.unwinder != g.unwinder ||
      !SameDouble(h.requested_hz, g.requested_hz) || !SameDouble(h.achieved_hz, g.achieved_hz) ||
      h.samples != g.samples || h.dropped != g.dropped || h.truncated != g.truncated ||
      h.broken != g.broken || h.overflow != g.overflow || h.threads_seen != g.threads_seen ||
      h.unknown_frames != g.unknown_frames || h.overruns != g.overruns ||
      !SameDouble(h.symbolize_seconds, g.symbolize_seconds) ||
      !SameDouble(h.write_seconds, g.write_seconds) || h.symbol_cache_hits != g.symbol_cache_hits ||
      h.symbol_cache_misses != g.symbol_cache_misses || h.warnings != g.warnings) {
    return "health";
  }
  if (h.threads.size() != g.threads.size()) return "health thread count";
  for (size_t i = 0; i < h.threads.size(); ++i) {
    const ThreadHealth& x = h.threads[i];
    const ThreadHealth& y = g.threads[i];
    if (x.tid != y.tid || x.name != y.name || !SameDouble(x.cpu_seconds, y.cpu_seconds) ||
        !SameDouble(x.expected, y.expected) || x.taken != y.taken || x.weight != y.weight) {
      return "health thread " + std::to_string(i);
    }
  }
  if (a.modules.size() != b.modules.size()) return "module count";
  for (size_t i = 0; i < a.modules.size(); ++i) {
    const RawModule& x = a.modules[i];
    const RawModule& y = b.modules[i];
    if (x.kind != y.kind || x.path != y.path || x.bias != y.bias || x.build_id != y.build_id ||
        x.segments.size() != y.segments.size()) {
      return "module " + std::to_string(i);
    }
    for (size_t s = 0; s < x.segments.size(); ++s) {
      const RawSegment& p = x.segments[s];
      const RawSegment& q = y.segments[s];
      if (p.begin != q.begin || p.end != q.end || p.file_offset != q.file_offset ||
          p.executable != q.executable) {
        return "module " + std::to_string(i) + " segment " + std::to_string(s);
      }
    }
  }
  if (a.lua_frames != b.lua_frames) return "lua frames";
  if (a.threads.size() != b.threads.size()) return "thread count";
  for (size_t i = 0; i < a.threads.size(); ++i) {
    if (a.threads[i].tid != b.threads[i].tid || a.threads[i].name != b.threads[i].name) {
      return "thread " + std::to_string(i);
    }
  }
  if (a.label_sets != b.label_sets) return "label sets";
  if (a.stacks.size() != b.stacks.size()) return "stack count";
  for (size_t i = 0; i < a.stacks.size(); ++i) {
    if (a.stacks[i].addresses != b.stacks[i].addresses ||
        a.stacks[i].weights != b.stacks[i].weights) {
      return "stack " + std::to_string(i);
    }
  }
  if (a.timeline.size() != b.timeline.size()) return "timeline length";
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    const TimedSample& x = a.timeline[i];
    const TimedSample& y = b.timeline[i];
    if (x.time_ns != y.time_ns || x.sample != y.sample || x.event != y.event ||
        x.weight != y.weight) {
      return "timed sample " + std::to_string(i);
    }
  }
  return {};
}

// The first invariant of the model `p` breaks, or "".
std::string BrokenInvariant(const RawProfile& p) {
  for (size_t i = 0; i < p.label_sets.size(); ++i) {
    const std::vector<Label>& set = p.label_sets[i];
    for (size_t k = 1; k < set.size(); ++k) {
      if (!(set[k - 1].key < set[k].key)) return "label set " + std::to_string(i) + " unsorted";
    }
  }
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const RawStack& s = p.stacks[i];
    if (s.weights.size() != p.events.size()) return "stack " + std::to_string(i) + " weights";
    for (uint64_t a : s.addresses) {
      const uint64_t tag = a & kRawTagMask;
      const uint64_t payload = a & ~kRawTagMask;
      if ((tag == kRawLuaTag && payload >= p.lua_frames.size()) ||
          (tag == kRawLabelsTag && (payload == 0 || payload > p.label_sets.size()))) {
        return "stack " + std::to_string(i) + " names what is not there";
      }
    }
  }
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    const TimedSample& t = p.timeline[i];
    if (t.sample >= p.stacks.size() || t.event >= p.events.size()) {
      return "timed sample " + std::to_string(i) + " names what is not there";
    }
    if (i > 0 && t.time_ns < p.timeline[i - 1].time_ns) {
      return "timed sample " + std::to_string(i) + " out of time order";
    }
  }
  return {};
}

std::string Text(const RawProfile& p) {
  std::ostringstream out;
  WriteRawProfile(p, out);
  return out.str();
}

}  // namespace

std::string CheckRawProfile(std::string_view input) {
  RawProfile first;
  {
    std::istringstream in{std::string(input)};
    if (Status s = ReadRawProfile(in, kName, &first); !s.ok()) return CheckRefusal(s, input);
  }
  if (std::string broken = BrokenInvariant(first); !broken.empty()) {
    return "raw profile reader accepted a profile with " + broken;
  }
  const std::string text = Text(first);
  RawProfile again;
  {
    std::istringstream in(text);
    if (Status s = ReadRawProfile(in, kName, &again); !s.ok()) {
      return "raw profile writer's output does not read back: " + s.message() + "\n--- written:\n" +
             text;
    }
  }
  if (!again.complete) return "raw profile writer's output does not read back complete";
  if (std::string field = Difference(first, again); !field.empty()) {
    return "raw profile round trip changes the " + field + "\n--- written:\n" + text;
  }
  if (Text(again) != text) return "raw profile round trip is unstable\n--- written:\n" + text;
  return {};
}

}  // namespace inprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string problem =
      inprof::fuzz::CheckRawProfile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!problem.empty()) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
