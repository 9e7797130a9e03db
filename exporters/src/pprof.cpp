// pprof: profile.proto (github.com/google/pprof/proto/profile.proto), gzipped, as `go tool
// pprof` and google pprof read it.
//
// The model keeps one Frame per inline level, root first, with the inlined frames right after
// the native frame they were inlined into. pprof wants the opposite nesting: one Location per
// machine address carrying one Line per inline level, innermost first. So a native frame and
// the kInlined frames that follow it in a sample become one Location.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gzip.h"
#include "inprof/pprof.h"
#include "protobuf_writer.h"

namespace inprof {
namespace {

using internal::ProtobufWriter;

// Field numbers of profile.proto.
namespace field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                   kStringTable = 6, kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11,
                   kPeriod = 12, kComment = 13, kDefaultSampleType = 14;
}  // namespace field

class StringTable {
 public:
  StringTable() { Index(""); }  // index 0 must be the empty string
  int64_t Index(const std::string& s) {
    auto [it, added] = index_.emplace(s, static_cast<int64_t>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> strings_;
};

int64_t SaturatingMultiply(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

// One column of pprof sample values: an event's weight scaled by `scale`.
struct ValueColumn {
  std::string type;
  std::string unit;
  size_t event;
  int64_t scale;
};

// The sample type an event is written as: its name, but for the lock events, which take the
// names of Go's mutex and block profiles (contentions/count, delay/nanoseconds), so that
// `go tool pprof -sample_index=delay` and fleet backends read them as they read Go's.
std::string SampleTypeName(const std::string& event) {
  if (event == "lock_contentions") return "contentions";
  if (event == "lock_delay") return "delay";
  return event;
}

// Time-based events get two columns, the way Go's own CPU profiles do: the number of periods
// ("samples/count") and the time they stand for ("cpu/nanoseconds"). Counting events (period
// 1: the weight is already the count) get one.
std::vector<ValueColumn> Columns(const Profile& profile) {
  std::vector<ValueColumn> columns;
  for (size_t e = 0; e < profile.events.size(); ++e) {
    const EventInfo& info = profile.events[e];
    const int64_t period =
        info.period > 1 ? static_cast<int64_t>(std::min<uint64_t>(info.period, uint64_t{INT64_MAX}))
                        : 1;
    if (period > 1) {
      columns.push_back({e == 0 ? "samples" : info.name + "_samples", "count", e, 1});
    }
    columns.push_back(
        {SampleTypeName(info.name), info.unit.empty() ? "count" : info.unit, e, period});
  }
  return columns;
}

// Locations are keyed by the frame indices they group: the runtime creates one frame chain
// per distinct address, so equal chains are the same address.
struct LocationKey {
  std::vector<uint32_t> frames;  // root first, as in the sample
  bool operator<(const LocationKey& o) const { return frames < o.frames; }
};

class PprofBuilder {
 public:
  explicit PprofBuilder(const Profile& profile) : p_(profile) {}

  std::string Build() {
    ProtobufWriter out;
    const std::vector<ValueColumn> columns = Columns(p_);
    for (const ValueColumn& c : columns) out.Message(field::kSampleType, ValueType(c.type, c.unit));

    // Thread names: the profile's own list (the name a thread had when it was last seen),
    // else the health's (profiles made before the list existed, or readers that fill only
    // the health).
    std::unordered_map<int64_t, const std::string*> thread_names;
    for (const ThreadHealth& t : p_.health.threads) {
      if (!t.name.empty()) thread_names[t.tid] = &t.name;
    }
    for (const ThreadInfo& t : p_.threads) {
      if (!t.name.empty()) thread_names[t.tid] = &t.name;
    }

    for (const Sample& sample : p_.samples) {
      ProtobufWriter s;
      std::vector<uint64_t> ids;
      // Group root-first frames into locations, then emit them leaf first.
      for (size_t i = 0; i < sample.frames.size();) {
        size_t end = i + 1;
        while (end < sample.frames.size() && sample.frames[end] < p_.frames.size() &&
               p_.frames[sample.frames[end]].kind == FrameKind::kInlined) {
          ++end;
        }
        if (sample.frames[i] < p_.frames.size()) {
          ids.push_back(LocationId(
              std::vector<uint32_t>(sample.frames.begin() + i, sample.frames.begin() + end)));
        }
        i = end;
      }
      std::reverse(ids.begin(), ids.end());
      s.Packed(1, ids);
      std::vector<int64_t> values;
      for (const ValueColumn& c : columns) {
        const int64_t w = c.event < sample.weights.size() ? sample.weights[c.event] : 0;
        values.push_back(SaturatingMultiply(w, c.scale));
      }
      s.Packed(2, values);
      if (sample.tid != 0) {
        ProtobufWriter tid;
        tid.Signed(1, strings_.Index("thread id"));
        tid.Signed(3, sample.tid);
        s.Message(3, tid);
        auto t = thread_names.find(sample.tid);
        if (t != thread_names.end()) {
          ProtobufWriter name;
          name.Signed(1, strings_.Index("thread name"));
          name.Signed(2, strings_.Index(*t->second));
          s.Message(3, name);
        }
      }
      // The program's labels (inprof_label_set), one string label each, in key order:
      // `pprof -tagfocus endpoint=/api -top` selects them, `-tags` lists them.
      if (sample.labels != 0 && sample.labels <= p_.label_sets.size()) {
        for (const Label& label : p_.label_sets[sample.labels - 1]) {
          ProtobufWriter l;
          l.Signed(1, strings_.Index(label.key));
          l.Signed(2, strings_.Index(label.value));
          s.Message(3, l);
        }
      }
      out.Message(field::kSample, s);
    }

    for (const ProtobufWriter& m : mappings_) out.Message(field::kMapping, m);
    for (const ProtobufWriter& l : locations_) out.Message(field::kLocation, l);
    for (const ProtobufWriter& f : functions_) out.Message(field::kFunction, f);

    if (p_.meta.start_time_ns != 0) out.Signed(field::kTimeNanos, p_.meta.start_time_ns);
    if (p_.meta.duration_ns != 0) out.Signed(field::kDurationNanos, p_.meta.duration_ns);
    if (!p_.events.empty()) {
      const EventInfo& first = p_.events[0];
      // A profile of allocations (first event alloc_* or inuse_*, values already estimates)
      // is described as Go's heap profile is: period type space/bytes; in the runtime's order
      // (alloc_objects first) the bytes allocated are shown first.
      const bool alloc = first.name.starts_with("alloc_") || first.name.starts_with("inuse_");
      const bool objects_first = first.name == "alloc_objects" && p_.events.size() > 1 &&
                                 p_.events[1].name == "alloc_space";
      // A profile of lock or condition waits (first event lock_* or cond_*, or Go's names) as
      // Go's mutex and block profiles: period type contentions/count, and the delay shown
      // first (what a user of it looks at).
      const bool lock = first.name.starts_with("lock_") || first.name.starts_with("cond_") ||
                        first.name == "contentions";
      const std::string second = p_.events.size() > 1 ? p_.events[1].name : "";
      const bool delay_next = (first.name == "lock_contentions" && second == "lock_delay") ||
                              (first.name == "cond_waits" && second == "cond_delay") ||
                              (first.name == "contentions" && second == "delay");
      out.Message(field::kPeriodType,
                  alloc  ? ValueType("space", "bytes")
                  : lock ? ValueType("contentions", "count")
                         : ValueType(SampleTypeName(first.name),
                                     first.unit.empty() ? "count" : first.unit));
      out.Signed(field::kPeriod, static_cast<int64_t>(std::min<uint64_t>(
                                     std::max<uint64_t>(first.period, 1), uint64_t{INT64_MAX})));
      // pprof shows the last sample type unless told otherwise; the first event is the one
      // the profile was taken for.
      out.Signed(field::kDefaultSampleType,
                 strings_.Index(objects_first || delay_next ? SampleTypeName(p_.events[1].name)
                                                            : SampleTypeName(first.name)));
    }
    for (const std::string& c : Comments()) out.Signed(field::kComment, strings_.Index(c));

    // The string table goes last: every index above is known by now, and field order does
    // not matter to protobuf readers.
    for (const std::string& s : strings_.strings()) out.Bytes(field::kStringTable, s);
    return out.Take();
  }

 private:
  ProtobufWriter ValueType(const std::string& type, const std::string& unit) {
    ProtobufWriter v;
    v.Signed(1, strings_.Index(type));
    v.Signed(2, strings_.Index(unit));
    return v;
  }

  // `pprof -raw` prints comments: the quality the profile was taken with travels with it.
  std::vector<std::string> Comments() const {
    std::vector<std::string> c;
    const Health& h = p_.health;
    if (!p_.meta.program.empty()) {
      c.push_back("program: " + p_.meta.program + " (pid " + std::to_string(p_.meta.pid) + ")");
    }
    if (!h.engine.empty()) {
      // No rate where nothing was sampled in time (allocations alone).
      char rate[96] = "";
      if (h.requested_hz > 0) {
        std::snprintf(rate, sizeof rate, " requested=%.6gHz achieved=%.6gHz", h.requested_hz,
                      h.achieved_hz);
      }
      c.push_back(
          "inprof: engine=" + h.engine + " unwinder=" + h.unwinder + rate +
          " samples=" + std::to_string(h.samples) + " dropped=" + std::to_string(h.dropped) +
          " truncated=" + std::to_string(h.truncated) + " broken=" + std::to_string(h.broken) +
          " overflow=" + std::to_string(h.overflow) + " threads=" + std::to_string(h.threads_seen));
    }
    // The recorder's account of its symbolization rides in the warnings (every reader shows
    // them) but reports, it does not warn: it is not labelled a warning here.
    for (const std::string& w : h.warnings) {
      c.push_back((w.starts_with("symbolized by ") ? "inprof: " : "inprof: warning: ") + w);
    }
    return c;
  }

  uint64_t LocationId(std::vector<uint32_t> frames) {
    auto [it, added] = locations_index_.emplace(LocationKey{frames}, locations_.size() + 1);
    if (!added) return it->second;
    const uint64_t id = it->second;
    const Frame& native = p_.frames[frames.front()];
    ProtobufWriter loc;
    loc.Varint(1, id);
    if (native.kind != FrameKind::kSynthetic && !native.module.empty()) {
      loc.Varint(2, MappingId(native));
    }
    if (native.address != 0) loc.Varint(3, native.address);
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) {  // innermost first
      const Frame& frame = p_.frames[*f];
      ProtobufWriter line;
      line.Varint(1, FunctionId(frame));
      if (frame.line != 0) line.Signed(2, frame.line);
      if (frame.column != 0) line.Signed(3, frame.column);
      loc.Message(4, line);
    }
    locations_.push_back(std::move(loc));
    return id;
  }

  uint64_t FunctionId(const Frame& frame) {
    auto [it, added] =
        functions_index_.emplace(std::make_pair(frame.function, frame.file), functions_.size() + 1);
    if (!added) return it->second;
    ProtobufWriter fn;
    fn.Varint(1, it->second);
    fn.Signed(2, strings_.Index(frame.function));
    // The model keeps only the demangled name; it is also the best system name we have.
    fn.Signed(3, strings_.Index(frame.function));
    if (!frame.file.empty()) fn.Signed(4, strings_.Index(frame.file));
    functions_.push_back(std::move(fn));
    return it->second;
  }

  uint64_t MappingId(const Frame& frame) {
    auto [it, added] = mappings_index_.emplace(frame.module, mappings_.size() + 1);
    if (!added) return it->second;
    ProtobufWriter m;
    m.Varint(1, it->second);
    for (const Module& module : p_.modules) {
      if (module.path != frame.module) continue;
      m.Varint(2, module.start);
      m.Varint(3, module.limit);
      m.Varint(4, module.offset);
      break;
    }
    m.Signed(5, strings_.Index(frame.module));
    for (const Module& module : p_.modules) {
      if (module.path == frame.module && !module.build_id.empty()) {
        m.Signed(6, strings_.Index(module.build_id));
        break;
      }
    }
    // Everything is symbolized already: pprof must not try to symbolize these addresses
    // again (it would look for the binaries, or ask a server).
    m.Varint(7, 1);
    m.Varint(8, 1);
    m.Varint(9, 1);
    m.Varint(10, 1);
    mappings_.push_back(std::move(m));
    return it->second;
  }

  const Profile& p_;
  StringTable strings_;
  std::map<LocationKey, uint64_t> locations_index_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_index_;
  std::unordered_map<std::string, uint64_t> mappings_index_;
  std::vector<ProtobufWriter> mappings_, locations_, functions_;
};

}  // namespace

std::string EncodePprof(const Profile& profile) { return PprofBuilder(profile).Build(); }

std::vector<PprofSampleType> PprofSampleTypes(const Profile& profile) {
  std::vector<PprofSampleType> out;
  for (const ValueColumn& c : Columns(profile)) {
    // The periods column is the one a time-based event (period above 1) keeps unscaled.
    const bool periods = c.scale == 1 && profile.events[c.event].period > 1;
    out.push_back({c.type, c.unit, c.event, periods});
  }
  return out;
}

bool WritePprof(const Profile& profile, std::ostream& out) {
  std::string compressed;
  if (!internal::Gzip(EncodePprof(profile), &compressed)) return false;
  out.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
  return static_cast<bool>(out);
}

}  // namespace inprof
