// speedscope's file format (https://www.speedscope.app/file-format-schema.json; the types are
// speedscope's src/lib/file-format-spec.ts), written for one event of a profile.
//
// One "sampled" profile per thread, ordered by tid, its samples in time order when the profile
// has a timeline (each signal's sample is one entry, so speedscope's "Time Order" view shows
// the thread's life; weight the timeline lacks follows, untimed), else in Profile order with
// the samples' total weights. speedscope lays a sampled profile's samples end to end and never
// reads their times, so the exact times, tids, thread names and labels ride along in "inprof"
// objects that speedscope ignores (its JSON schema allows extra members; docs/speedscope.md
// has the layout), which is what lets ReadSpeedscope give back the profile that was written.
//
// Weights are the sample's weight times the event's period when the period is above 1, as in
// pprof's value columns: a CPU sample at 100 Hz is 10,000,000 ns, so speedscope shows times.
// speedscope refuses negative weights (an exception while importing) and drops zero ones, so
// both are left out here. Output is deterministic: no clock, no hash order.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/speedscope.h"
#include "inprof/json.h"
#include "stacks.h"

namespace inprof {
namespace {

using internal::AppendJsonNumber;
using internal::AppendJsonString;

constexpr std::string_view kSchema = "https://www.speedscope.app/file-format-schema.json";
// Text is handed to the stream in pieces of about this size, so a large profile is not held
// twice (once here, once in the stream's buffer) in full.
constexpr size_t kFlushBytes = 1 << 20;

// One sample as speedscope gets it: which Sample, its weight (already scaled) and its time.
struct Entry {
  uint32_t sample = 0;
  int64_t weight = 0;
  int64_t time_ns = 0;
};

struct Thread {
  int64_t tid = 0;
  std::vector<Entry> entries;
  size_t timed = 0;   // the first entries are timed samples, the rest have no time
  int64_t total = 0;  // sum of the scaled weights, saturated
};

// speedscope's units are a closed set; ours are free text. Only those that mean the same
// are passed on: speedscope formats "nanoseconds" as times and "bytes" as sizes.
const char* SpeedscopeUnit(const EventInfo& event, bool scaled) {
  if (!scaled) return "none";
  if (event.unit == "nanoseconds") return "nanoseconds";
  if (event.unit == "bytes") return "bytes";
  return "none";
}

const char* KindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kInlined:
      return "inlined";
    case FrameKind::kSynthetic:
      return "synthetic";
    case FrameKind::kNative:
      break;
  }
  return "native";
}

void Key(std::string& out, const char* key) {
  AppendJsonString(out, key);
  out += ':';
}

void Int(std::string& out, int64_t value) { AppendJsonNumber(out, value); }

void Uint(std::string& out, uint64_t value) {
  AppendJsonNumber(out, static_cast<int64_t>(value > INT64_MAX ? INT64_MAX : value));
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

std::string ThreadName(const Profile& profile, int64_t tid) {
  for (const ThreadInfo& t : profile.threads) {
    if (t.tid == tid) return t.name;
  }
  // Profiles from before thread names were kept still name their threads in the health data.
  for (const ThreadHealth& t : profile.health.threads) {
    if (t.tid == tid) return t.name;
  }
  return {};
}

// What speedscope shows in its profile list: "main-loop (tid 4711)", or "tid 4711" for a
// thread without a name. Samples without a tid (profiles from formats that do not record one)
// are "all threads" when they are all there is.
std::string ProfileName(const std::string& thread, int64_t tid, bool only) {
  if (tid == 0) return only ? "all threads" : "unknown thread";
  if (thread.empty()) return "tid " + std::to_string(tid);
  return thread + " (tid " + std::to_string(tid) + ")";
}

std::string GroupName(const Profile& profile, const EventInfo* event) {
  const std::string& program = profile.meta.program;
  const size_t slash = program.rfind('/');
  std::string name = program.empty()              ? std::string("inprof")
                     : slash == std::string::npos ? program
                                                  : program.substr(slash + 1);
  if (event != nullptr && !event->name.empty()) name += ": " + event->name;
  return name;
}

// The samples of `event` grouped by thread (ordered by tid). With a timeline, each thread's
// timed samples come first, in time order, then what the timeline lacks of each sample's
// weight (samples the runtime could not time: its timeline was full, or they were taken before
// the session started); `timed` counts the former. Without a timeline, the
// samples in profile order. `scale` multiplies every weight. Timed samples naming a sample the
// profile does not have are left out.
std::vector<Thread> CollectThreads(const Profile& profile, size_t event, int64_t scale) {
  std::map<int64_t, Thread> threads;
  auto add = [&](uint32_t sample, int64_t weight, int64_t time_ns) {
    const int64_t tid = profile.samples[sample].tid;
    Thread& t = threads[tid];
    t.tid = tid;
    const int64_t scaled = weight > INT64_MAX / scale ? INT64_MAX : weight * scale;
    t.entries.push_back({sample, scaled, time_ns});
    t.total = SaturatingAdd(t.total, scaled);
  };
  std::vector<int64_t> timed(profile.samples.size(), 0);
  for (const TimedSample& ts : profile.timeline) {
    if (ts.event != event || ts.weight <= 0 || ts.sample >= profile.samples.size()) continue;
    add(ts.sample, ts.weight, ts.time_ns);
    timed[ts.sample] = SaturatingAdd(timed[ts.sample], ts.weight);
  }
  // The timeline is in time order by contract. Sorting anyway (stably: equal times keep their
  // order) means a profile assembled out of order still gives times that only go forward,
  // which the reader requires.
  for (auto& [tid, t] : threads) {
    std::stable_sort(t.entries.begin(), t.entries.end(),
                     [](const Entry& a, const Entry& b) { return a.time_ns < b.time_ns; });
    t.timed = t.entries.size();
  }
  // Untimed weight goes in an order that does not depend on sample indices (a reader numbers
  // samples as it meets them): samples seen on the timeline in the order first seen there,
  // then the others in profile order.
  std::vector<uint64_t> first_seen(profile.samples.size(), UINT64_MAX);
  for (const auto& [tid, t] : threads) {
    for (size_t k = 0; k < t.timed; ++k) {
      first_seen[t.entries[k].sample] = std::min<uint64_t>(first_seen[t.entries[k].sample], k);
    }
  }
  std::vector<uint32_t> untimed;
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    if (internal::SampleWeight(profile.samples[i], event) > static_cast<uint64_t>(timed[i])) {
      untimed.push_back(static_cast<uint32_t>(i));
    }
  }
  std::stable_sort(untimed.begin(), untimed.end(),
                   [&](uint32_t a, uint32_t b) { return first_seen[a] < first_seen[b]; });
  for (uint32_t i : untimed) {
    const int64_t weight = static_cast<int64_t>(internal::SampleWeight(profile.samples[i], event));
    add(i, weight - timed[i], 0);
  }
  std::vector<Thread> out;
  out.reserve(threads.size());
  for (auto& [tid, t] : threads) out.push_back(std::move(t));
  return out;
}

// The factor speedscope's weights carry: the period when it is above 1 and no weight times
// it overflows, else 1 (the weights are then counts of periods, and the unit "none").
int64_t WeightScale(const Profile& profile, const EventInfo* event, size_t e) {
  if (event == nullptr || event->period <= 1 || event->period > uint64_t{INT64_MAX}) return 1;
  const int64_t period = static_cast<int64_t>(event->period);
  const int64_t limit = INT64_MAX / period;
  for (const TimedSample& ts : profile.timeline) {
    if (ts.event == e && ts.weight > limit) return 1;
  }
  for (const Sample& s : profile.samples) {
    if (e < s.weights.size() && s.weights[e] > limit) return 1;
  }
  return period;
}

void WriteEvent(std::string& out, const EventInfo& e) {
  out += '{';
  Key(out, "name");
  AppendJsonString(out, e.name);
  out += ',';
  Key(out, "unit");
  AppendJsonString(out, e.unit);
  out += ',';
  Key(out, "period");
  Uint(out, e.period);
  out += ',';
  Key(out, "frequency_hz");
  AppendJsonNumber(out, e.frequency_hz);
  out += ',';
  Key(out, "total_weight");
  Int(out, e.total_weight);
  out += '}';
}

void WriteInprofHeader(std::string& out, const Profile& profile, const EventInfo* event,
                       int64_t scale, bool timeline) {
  out += "\"inprof\":{";
  Key(out, "version");
  out += "1,";
  Key(out, "program");
  AppendJsonString(out, profile.meta.program);
  out += ',';
  Key(out, "pid");
  Int(out, profile.meta.pid);
  out += ',';
  Key(out, "start_time_ns");
  Int(out, profile.meta.start_time_ns);
  out += ',';
  Key(out, "duration_ns");
  Int(out, profile.meta.duration_ns);
  out += ',';
  if (event != nullptr) {
    Key(out, "event");
    WriteEvent(out, *event);
    out += ',';
  }
  Key(out, "weight_scale");
  Int(out, scale);
  out += ',';
  Key(out, "timeline");
  out += timeline ? "true," : "false,";
  Key(out, "label_sets");
  out += '[';
  for (size_t i = 0; i < profile.label_sets.size(); ++i) {
    out += i ? ",\n[" : "\n[";
    const std::vector<Label>& set = profile.label_sets[i];
    for (size_t j = 0; j < set.size(); ++j) {
      if (j) out += ',';
      out += '[';
      AppendJsonString(out, set[j].key);
      out += ',';
      AppendJsonString(out, set[j].value);
      out += ']';
    }
    out += ']';
  }
  out += "]},\n";
}

void WriteFrame(std::string& out, const Frame& frame) {
  out += '{';
  Key(out, "name");
  AppendJsonString(out, frame.function);
  if (!frame.file.empty()) {
    out += ',';
    Key(out, "file");
    AppendJsonString(out, frame.file);
  }
  if (frame.line != 0) {
    out += ',';
    Key(out, "line");
    Uint(out, frame.line);
  }
  if (frame.column != 0) {
    out += ',';
    Key(out, "col");
    Uint(out, frame.column);
  }
  // What speedscope has no field for; left out when it says nothing.
  if (frame.kind != FrameKind::kNative || !frame.module.empty() || frame.address != 0) {
    out += ",\"inprof\":{";
    bool first = true;
    auto sep = [&] {
      if (!first) out += ',';
      first = false;
    };
    if (frame.kind != FrameKind::kNative) {
      sep();
      Key(out, "kind");
      AppendJsonString(out, KindName(frame.kind));
    }
    if (!frame.module.empty()) {
      sep();
      Key(out, "module");
      AppendJsonString(out, frame.module);
    }
    if (frame.address != 0) {
      // A string: addresses reach 2^64, past what a JSON reader in JavaScript keeps exactly.
      sep();
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%" PRIx64, frame.address);
      Key(out, "address");
      AppendJsonString(out, hex);
    }
    out += '}';
  }
  out += '}';
}

void WriteThread(std::string& out, std::ostream& stream, const Profile& profile,
                 const Thread& thread, bool only, const char* unit, bool timeline,
                 uint32_t unknown) {
  const std::string thread_name = ThreadName(profile, thread.tid);
  out += "{\"type\":\"sampled\",";
  Key(out, "name");
  AppendJsonString(out, ProfileName(thread_name, thread.tid, only));
  out += ',';
  Key(out, "unit");
  AppendJsonString(out, unit);
  out += ",\"startValue\":0,";
  Key(out, "endValue");
  Int(out, thread.total);
  out += ",\n\"inprof\":{";
  Key(out, "tid");
  Int(out, thread.tid);
  out += ',';
  Key(out, "thread");
  AppendJsonString(out, thread_name);
  if (timeline) {
    out += ",\n";
    Key(out, "times_ns");
    out += '[';
    for (size_t i = 0; i < thread.timed; ++i) {
      if (i) out += ',';
      Int(out, thread.entries[i].time_ns);
    }
    out += ']';
  }
  const bool labelled =
      std::any_of(thread.entries.begin(), thread.entries.end(),
                  [&](const Entry& e) { return profile.samples[e.sample].labels != 0; });
  if (labelled) {
    out += ",\n";
    Key(out, "labels");
    out += '[';
    for (size_t i = 0; i < thread.entries.size(); ++i) {
      if (i) out += ',';
      const uint32_t set = profile.samples[thread.entries[i].sample].labels;
      Uint(out, set <= profile.label_sets.size() ? set : 0);
    }
    out += ']';
  }
  out += "},\n\"samples\":[";
  for (size_t i = 0; i < thread.entries.size(); ++i) {
    out += i ? ",\n[" : "\n[";
    const std::vector<uint32_t>& frames = profile.samples[thread.entries[i].sample].frames;
    for (size_t j = 0; j < frames.size(); ++j) {
      if (j) out += ',';
      Uint(out, frames[j] < profile.frames.size() ? frames[j] : unknown);
    }
    out += ']';
    if (out.size() >= kFlushBytes) {
      stream << out;
      out.clear();
    }
  }
  out += "],\n\"weights\":[";
  for (size_t i = 0; i < thread.entries.size(); ++i) {
    if (i) out += ',';
    Int(out, thread.entries[i].weight);
    if (out.size() >= kFlushBytes) {
      stream << out;
      out.clear();
    }
  }
  out += "]}";
}

}  // namespace

void WriteSpeedscope(const Profile& profile, const ExportOptions& options, std::ostream& stream) {
  const size_t e = options.event;
  const EventInfo* event = e < profile.events.size() ? &profile.events[e] : nullptr;
  const int64_t scale = WeightScale(profile, event, e);
  const bool scaled = event != nullptr && (event->period <= 1 || scale > 1);
  const char* unit = event != nullptr ? SpeedscopeUnit(*event, scaled) : "none";
  const bool timeline = !profile.timeline.empty();
  const std::vector<Thread> threads = CollectThreads(profile, e, scale);

  // A sample naming a frame the profile does not have points at one extra "[unknown]" frame:
  // the output must stay a file speedscope loads (it would fail on the missing frame).
  bool dangling = false;
  for (const Thread& t : threads) {
    for (const Entry& entry : t.entries) {
      for (uint32_t f : profile.samples[entry.sample].frames)
        dangling |= f >= profile.frames.size();
    }
  }
  const uint32_t unknown = static_cast<uint32_t>(profile.frames.size());

  // speedscope opens the profile at activeProfileIndex: the thread with the most weight.
  size_t active = 0;
  for (size_t i = 1; i < threads.size(); ++i) {
    if (threads[i].total > threads[active].total) active = i;
  }

  std::string out;
  out += '{';
  Key(out, "$schema");
  AppendJsonString(out, kSchema);
  out += ",\n";
  Key(out, "exporter");
  AppendJsonString(out, "inprof");
  out += ",\n";
  Key(out, "name");
  AppendJsonString(out, GroupName(profile, event));
  out += ",\n";
  Key(out, "activeProfileIndex");
  Uint(out, active);
  out += ",\n";
  WriteInprofHeader(out, profile, event, scale, timeline);
  out += "\"shared\":{\"frames\":[";
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    out += i ? ",\n" : "\n";
    WriteFrame(out, profile.frames[i]);
    if (out.size() >= kFlushBytes) {
      stream << out;
      out.clear();
    }
  }
  if (dangling) {
    Frame frame;
    frame.function = "[unknown]";
    frame.kind = FrameKind::kSynthetic;
    out += profile.frames.empty() ? "\n" : ",\n";
    WriteFrame(out, frame);
  }
  out += "]},\n\"profiles\":[";
  for (size_t i = 0; i < threads.size(); ++i) {
    out += i ? ",\n" : "\n";
    WriteThread(out, stream, profile, threads[i], threads.size() == 1, unit, timeline, unknown);
  }
  out += "]}\n";
  stream << out;
}

}  // namespace inprof
