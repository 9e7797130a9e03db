// The annotation JSON writer (schema: docs/annotation-json.md).
//
// Keys are written in sorted order and every array in a fixed order, so equal input gives
// identical bytes. Large arrays (files, lines, edges) put one element per line: the file
// stays diffable and a reader that reports errors by line points somewhere useful.
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "inprof/annotation_json.h"
#include "inprof/json.h"

namespace inprof {
namespace {

using internal::AppendJsonNumber;
using internal::AppendJsonString;

// Entries per event in "hottest_lines" and "hottest_functions": enough for any editor
// panel; the full data is in "files".
constexpr size_t kHottest = 100;

void Key(std::string& out, const char* key) {
  AppendJsonString(out, key);
  out += ':';
}

void Weights(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    AppendJsonNumber(out, values[i]);
  }
  out += ']';
}

void Levels(std::string& out, const std::vector<uint8_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    AppendJsonNumber(out, static_cast<int64_t>(values[i]));
  }
  out += ']';
}

void Uint(std::string& out, uint64_t value) {
  // Counters never come near 2^63; clamp rather than wrap if one ever did.
  AppendJsonNumber(out, static_cast<int64_t>(value > INT64_MAX ? INT64_MAX : value));
}

void Bool(std::string& out, bool value) { out += value ? "true" : "false"; }

void WriteFunction(std::string& out, const FunctionStats& fn, bool with_lines) {
  out += '{';
  if (with_lines) {
    Key(out, "first_line");
    Uint(out, fn.first_line);
    out += ',';
  }
  Key(out, "inclusive");
  Weights(out, fn.inclusive);
  out += ',';
  Key(out, "inlined");
  Bool(out, fn.inlined);
  out += ',';
  if (with_lines) {
    Key(out, "last_line");
    Uint(out, fn.last_line);
    out += ',';
  }
  Key(out, "name");
  AppendJsonString(out, fn.name);
  out += ',';
  Key(out, "self");
  Weights(out, fn.self);
  out += '}';
}

void WriteLine(std::string& out, const LineStats& line) {
  out += '{';
  Key(out, "function");
  AppendJsonString(out, line.function);
  out += ',';
  Key(out, "global_heat");
  Levels(out, line.global_heat);
  out += ',';
  Key(out, "inclusive");
  Weights(out, line.inclusive);
  out += ',';
  Key(out, "inlined");
  Bool(out, line.inlined);
  out += ',';
  Key(out, "line");
  Uint(out, line.line);
  out += ',';
  Key(out, "local_heat");
  Levels(out, line.local_heat);
  out += ',';
  Key(out, "self");
  Weights(out, line.self);
  out += '}';
}

void WriteEvents(std::string& out, const std::vector<EventInfo>& events) {
  out += "\"events\":[";
  for (size_t i = 0; i < events.size(); ++i) {
    const EventInfo& e = events[i];
    out += i ? ",\n" : "\n";
    out += '{';
    Key(out, "frequency_hz");
    AppendJsonNumber(out, e.frequency_hz);
    out += ',';
    Key(out, "name");
    AppendJsonString(out, e.name);
    out += ',';
    Key(out, "period");
    Uint(out, e.period);
    out += ',';
    Key(out, "total_weight");
    AppendJsonNumber(out, e.total_weight);
    out += ',';
    Key(out, "unit");
    AppendJsonString(out, e.unit);
    out += '}';
  }
  out += "],\n";
}

void WriteHealth(std::string& out, const Health& h) {
  out += "\"health\":{";
  Key(out, "achieved_hz");
  AppendJsonNumber(out, h.achieved_hz);
  out += ',';
  Key(out, "broken");
  Uint(out, h.broken);
  out += ',';
  Key(out, "dropped");
  Uint(out, h.dropped);
  out += ',';
  Key(out, "engine");
  AppendJsonString(out, h.engine);
  out += ',';
  Key(out, "engine_reason");
  AppendJsonString(out, h.engine_reason);
  out += ',';
  Key(out, "overflow");
  Uint(out, h.overflow);
  out += ',';
  Key(out, "overruns");
  Uint(out, h.overruns);
  out += ',';
  Key(out, "requested_hz");
  AppendJsonNumber(out, h.requested_hz);
  out += ',';
  Key(out, "samples");
  Uint(out, h.samples);
  out += ',';
  // Written only when a symbol cache was used, so profiles made without one stay as they were.
  if (h.symbol_cache_hits != 0 || h.symbol_cache_misses != 0) {
    Key(out, "symbol_cache_hits");
    Uint(out, h.symbol_cache_hits);
    out += ',';
    Key(out, "symbol_cache_misses");
    Uint(out, h.symbol_cache_misses);
    out += ',';
  }
  Key(out, "symbolize_seconds");
  AppendJsonNumber(out, h.symbolize_seconds);
  out += ',';
  Key(out, "threads");
  out += '[';
  for (size_t i = 0; i < h.threads.size(); ++i) {
    const ThreadHealth& t = h.threads[i];
    out += i ? ",{" : "{";
    Key(out, "cpu_seconds");
    AppendJsonNumber(out, t.cpu_seconds);
    out += ',';
    Key(out, "expected");
    AppendJsonNumber(out, t.expected);
    out += ',';
    Key(out, "name");
    AppendJsonString(out, t.name);
    out += ',';
    Key(out, "taken");
    Uint(out, t.taken);
    out += ',';
    Key(out, "tid");
    out += std::to_string(t.tid);
    out += ',';
    Key(out, "weight");
    Uint(out, t.weight);
    out += '}';
  }
  out += "],";
  Key(out, "threads_seen");
  Uint(out, h.threads_seen);
  out += ',';
  Key(out, "truncated");
  Uint(out, h.truncated);
  out += ',';
  Key(out, "unknown_frames");
  Uint(out, h.unknown_frames);
  out += ',';
  Key(out, "unwinder");
  AppendJsonString(out, h.unwinder);
  out += ',';
  Key(out, "warnings");
  out += '[';
  for (size_t i = 0; i < h.warnings.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, h.warnings[i]);
  }
  out += "],";
  Key(out, "write_seconds");
  AppendJsonNumber(out, h.write_seconds);
  out += "},\n";
}

void WriteHottest(std::string& out, const Annotations& a) {
  // Per event, in event order: the lists are a convenience for editors and scripts that
  // want "the top N" without sorting themselves.
  out += "\"hottest_functions\":[";
  for (size_t e = 0; e < a.events.size(); ++e) {
    out += e ? ",\n[" : "\n[";
    const auto fns = HottestFunctions(a, e, false, kHottest);
    for (size_t i = 0; i < fns.size(); ++i) {
      const FunctionStats& fn = *fns[i];
      out += i ? ",\n" : "\n";
      out += '{';
      Key(out, "file");
      if (fn.file.empty()) {
        out += "null";
      } else {
        AppendJsonString(out, fn.file);
      }
      out += ',';
      Key(out, "first_line");
      Uint(out, fn.first_line);
      out += ',';
      Key(out, "inclusive");
      AppendJsonNumber(out, e < fn.inclusive.size() ? fn.inclusive[e] : 0);
      out += ',';
      Key(out, "name");
      AppendJsonString(out, fn.name);
      out += ',';
      Key(out, "self");
      AppendJsonNumber(out, e < fn.self.size() ? fn.self[e] : 0);
      out += '}';
    }
    out += ']';
  }
  out += "],\n\"hottest_lines\":[";
  for (size_t e = 0; e < a.events.size(); ++e) {
    out += e ? ",\n[" : "\n[";
    const auto lines = HottestLines(a, e, false, kHottest);
    for (size_t i = 0; i < lines.size(); ++i) {
      const FileStats& file = a.files[lines[i].first];
      const LineStats& line = file.lines[lines[i].second];
      out += i ? ",\n" : "\n";
      out += '{';
      Key(out, "file");
      AppendJsonString(out, file.path);
      out += ',';
      Key(out, "function");
      AppendJsonString(out, line.function);
      out += ',';
      Key(out, "inclusive");
      AppendJsonNumber(out, e < line.inclusive.size() ? line.inclusive[e] : 0);
      out += ',';
      Key(out, "line");
      Uint(out, line.line);
      out += ',';
      Key(out, "self");
      AppendJsonNumber(out, e < line.self.size() ? line.self[e] : 0);
      out += '}';
    }
    out += ']';
  }
  out += "],\n";
}

// "labels": the weight of each label the program set (docs/annotation-json.md), one entry per
// line. Left out when the profile has none, so files of unlabelled programs stay as they were.
void WriteLabels(std::string& out, const std::vector<LabelTotal>& labels) {
  if (labels.empty()) return;
  out += "\"labels\":[";
  for (size_t i = 0; i < labels.size(); ++i) {
    const LabelTotal& label = labels[i];
    out += i ? ",\n" : "\n";
    out += '{';
    Key(out, "key");
    AppendJsonString(out, label.key);
    out += ',';
    Key(out, "value");
    AppendJsonString(out, label.value);
    out += ',';
    Key(out, "weight");
    Weights(out, label.weight);
    out += '}';
  }
  out += "],\n";
}

// Labels sorted by key, then value, each pair once (weights of repeats added). The model
// promises that order; repairing invalid UTF-8 can make two values equal or change their
// order, and the file must still list each pair once, sorted, to read back to itself.
std::vector<LabelTotal> SortedUniqueLabels(std::vector<LabelTotal> labels) {
  std::stable_sort(labels.begin(), labels.end(), [](const LabelTotal& a, const LabelTotal& b) {
    return std::tie(a.key, a.value) < std::tie(b.key, b.value);
  });
  std::vector<LabelTotal> out;
  for (LabelTotal& label : labels) {
    if (!out.empty() && out.back().key == label.key && out.back().value == label.value) {
      std::vector<int64_t>& total = out.back().weight;
      if (total.size() < label.weight.size()) total.resize(label.weight.size(), 0);
      for (size_t i = 0; i < label.weight.size(); ++i) {
        if (__builtin_add_overflow(total[i], label.weight[i], &total[i])) {
          total[i] = label.weight[i] > 0 ? INT64_MAX : INT64_MIN;
        }
      }
    } else {
      out.push_back(std::move(label));
    }
  }
  return out;
}

bool LabelsSortedAndUnique(const std::vector<LabelTotal>& labels) {
  for (size_t i = 1; i < labels.size(); ++i) {
    if (!(std::tie(labels[i - 1].key, labels[i - 1].value) <
          std::tie(labels[i].key, labels[i].value))) {
      return false;
    }
  }
  return true;
}

// Calls `f` on every string of the model.
template <typename A, typename F>
void ForEachString(A& a, F f) {
  f(a.meta.program);
  for (auto& e : a.events) {
    f(e.name);
    f(e.unit);
  }
  f(a.health.engine);
  f(a.health.engine_reason);
  f(a.health.unwinder);
  for (auto& w : a.health.warnings) f(w);
  for (auto& file : a.files) {
    f(file.path);
    for (auto& line : file.lines) f(line.function);
    for (auto& fn : file.functions) {
      f(fn.name);
      f(fn.file);
    }
  }
  for (auto& fn : a.functions_without_source) f(fn.name);
  for (auto& label : a.labels) {
    f(label.key);
    f(label.value);
  }
}

void WriteValidUtf8(const Annotations& a, std::ostream& stream);

}  // namespace

void WriteAnnotationJson(const Annotations& a, std::ostream& stream) {
  // Strings are written as valid UTF-8 (invalid bytes become U+FFFD), and the hottest lists
  // are ranked with names as a tie-break. Ranking the raw names would order them differently
  // from the written ones, and the file would not read back to itself. The copy is made only
  // for the rare model that needs it (invalid UTF-8, or labels out of order).
  bool valid = true;
  ForEachString(a, [&](const std::string& s) { valid = valid && internal::IsValidUtf8(s); });
  if (valid && LabelsSortedAndUnique(a.labels)) return WriteValidUtf8(a, stream);
  Annotations repaired = a;
  ForEachString(repaired, [](std::string& s) { s = internal::RepairUtf8(s); });
  repaired.labels = SortedUniqueLabels(std::move(repaired.labels));
  WriteValidUtf8(repaired, stream);
}

namespace {

void WriteValidUtf8(const Annotations& a, std::ostream& stream) {
  std::string out;
  out.reserve(4096);
  auto flush = [&] {
    stream.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
  };
  out += "{\"edges\":[";
  for (size_t i = 0; i < a.edges.size(); ++i) {
    const CallEdge& edge = a.edges[i];
    out += i ? ",\n" : "\n";
    out += "{\"callee\":[";
    Uint(out, edge.callee.file);
    out += ',';
    Uint(out, edge.callee.line);
    out += "],\"caller\":[";
    Uint(out, edge.caller.file);
    out += ',';
    Uint(out, edge.caller.line);
    out += "],\"inlined\":";
    Bool(out, edge.inlined);
    out += ",\"weight\":";
    Weights(out, edge.weight);
    out += '}';
    if (out.size() > (1 << 16)) flush();
  }
  out += "],\n";
  WriteEvents(out, a.events);
  out += "\"files\":[";
  for (size_t f = 0; f < a.files.size(); ++f) {
    const FileStats& file = a.files[f];
    out += f ? ",\n" : "\n";
    out += "{\"functions\":[";
    for (size_t i = 0; i < file.functions.size(); ++i) {
      out += i ? ",\n" : "\n";
      WriteFunction(out, file.functions[i], true);
    }
    out += "],\n\"lines\":[";
    for (size_t i = 0; i < file.lines.size(); ++i) {
      out += i ? ",\n" : "\n";
      WriteLine(out, file.lines[i]);
      if (out.size() > (1 << 16)) flush();
    }
    out += "],\n\"path\":";
    AppendJsonString(out, file.path);
    out += '}';
  }
  out += "],\n\"format\":\"inprof-annotations\",\n\"functions_without_source\":[";
  for (size_t i = 0; i < a.functions_without_source.size(); ++i) {
    out += i ? ",\n" : "\n";
    WriteFunction(out, a.functions_without_source[i], false);
  }
  out += "],\n";
  WriteHealth(out, a.health);
  out += "\"heat_method\":";
  AppendJsonString(out, HeatMethodName(a.heat_method));
  out += ",\n\"heat_threshold\":";
  AppendJsonNumber(out, a.heat_threshold);
  out += ",\n";
  WriteHottest(out, a);
  WriteLabels(out, a.labels);
  out += "\"metadata\":{";
  Key(out, "duration_ns");
  AppendJsonNumber(out, a.meta.duration_ns);
  out += ',';
  Key(out, "pid");
  AppendJsonNumber(out, a.meta.pid);
  out += ',';
  Key(out, "program");
  AppendJsonString(out, a.meta.program);
  out += ',';
  Key(out, "start_time_ns");
  AppendJsonNumber(out, a.meta.start_time_ns);
  out += "},\n\"version\":1}\n";
  flush();
}

}  // namespace

void WriteAnnotationJson(const Profile& profile, std::ostream& out) {
  WriteAnnotationJson(BuildAnnotations(profile), out);
}

}  // namespace inprof
