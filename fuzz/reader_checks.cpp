#include "reader_checks.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "inprof/perf_script.h"
#include "inprof/pprof.h"
#include "inprof/speedscope.h"

namespace inprof::fuzz {
namespace {

constexpr const char* kName = kInputName;


std::string Json(const Annotations& a) {
  std::ostringstream out;
  WriteAnnotationJson(a, out);
  return out.str();
}

// Writes `a`, reads it back, writes again: the two texts must be equal.
std::string RoundTripAnnotations(const Annotations& a, const char* what) {
  const std::string first = Json(a);
  Annotations again;
  if (Status s = ReadAnnotationJson(first, kName, &again); !s.ok()) {
    return std::string(what) +
           ": the annotation JSON writer's output does not read back: " + s.message();
  }
  if (Json(again) != first) return std::string(what) + ": annotation JSON round trip is unstable";
  return {};
}

template <typename Read, typename Write>
std::string RoundTripProfile(const Profile& profile, Read read, Write write, const char* format) {
  const std::string first = write(profile);
  Profile again;
  if (Status s = read(first, kName, &again); !s.ok()) {
    return std::string(format) + " writer's output does not read back: " + s.message() +
           "\n--- written:\n" + first;
  }
  const std::string second = write(again);
  if (second != first) {
    return std::string(format) + " round trip is unstable\n--- first:\n" + first +
           "\n--- second:\n" + second;
  }
  return RoundTripAnnotations(BuildAnnotations(profile), format);
}

std::string Folded(const Profile& p) {
  std::ostringstream out;
  ExportOptions options;
  options.folded_lines = true;
  WriteFolded(p, options, out);
  return out.str();
}

std::string PerfLog(const Profile& p) {
  std::ostringstream out;
  WritePerfLog(p, {}, out);
  return out.str();
}

std::string Speedscope(const Profile& p) {
  std::ostringstream out;
  WriteSpeedscope(p, {}, out);
  return out.str();
}

// What the profile model promises its users (exporters.h), for a profile a reader made.
std::string CheckProfileModel(const Profile& p) {
  for (size_t i = 0; i < p.samples.size(); ++i) {
    const Sample& s = p.samples[i];
    if (s.weights.size() != p.events.size()) return "sample " + std::to_string(i) + ": weights";
    for (uint32_t f : s.frames) {
      if (f >= p.frames.size()) return "sample " + std::to_string(i) + ": frame out of range";
    }
    if (s.labels > p.label_sets.size()) return "sample " + std::to_string(i) + ": labels";
  }
  for (const auto& set : p.label_sets) {
    if (set.empty()) return "an empty label set";
    for (size_t j = 1; j < set.size(); ++j) {
      if (!(set[j - 1].key < set[j].key)) return "a label set not sorted by unique keys";
    }
  }
  if (p.timeline.empty()) return {};
  std::vector<int64_t> sums(p.samples.size() * p.events.size(), 0);
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    const TimedSample& t = p.timeline[i];
    if (i > 0 && t.time_ns < p.timeline[i - 1].time_ns) return "timeline out of time order";
    if (t.sample >= p.samples.size() || t.event >= p.events.size()) return "timeline index";
    int64_t& sum = sums[t.sample * p.events.size() + t.event];
    if (__builtin_add_overflow(sum, t.weight, &sum)) sum = INT64_MAX;
  }
  for (size_t i = 0; i < p.samples.size(); ++i) {
    for (size_t e = 0; e < p.events.size(); ++e) {
      // Less is allowed: samples the runtime could not time count only in the weights.
      if (sums[i * p.events.size() + e] > p.samples[i].weights[e]) {
        return "sample " + std::to_string(i) + ": timed weights exceed its weight";
      }
    }
  }
  return {};
}

}  // namespace

std::string CheckAnnotationJson(std::string_view input) {
  Annotations a;
  const Status s = ReadAnnotationJson(input, kName, &a);
  if (!s.ok()) return CheckRefusal(s, input);
  return RoundTripAnnotations(a, "annotation JSON");
}

std::string CheckFolded(std::string_view input) {
  Profile p;
  const Status s = ReadFolded(input, kName, &p);
  if (!s.ok()) return CheckRefusal(s, input);
  return RoundTripProfile(p, ReadFolded, Folded, "folded");
}

std::string CheckPerfLog(std::string_view input) {
  Profile p;
  const Status s = ReadPerfLog(input, kName, &p);
  if (!s.ok()) return CheckRefusal(s, input);
  return RoundTripProfile(p, ReadPerfLog, PerfLog, "perf.log");
}

std::string CheckSpeedscope(std::string_view input) {
  Profile p;
  const Status s = ReadSpeedscope(input, kName, &p);
  if (!s.ok()) return CheckRefusal(s, input);
  if (std::string broken = CheckProfileModel(p); !broken.empty()) return "speedscope: " + broken;
  return RoundTripProfile(p, ReadSpeedscope, Speedscope, "speedscope");
}

// pprof is binary: a refusal has no line, it reads "input: pprof: what" (or "input: gzip:
// what") on one line. What is accepted must survive inprof's pprof writer and reader. The
// decompressed size is capped well below the fuzzer's memory limit.
constexpr uint64_t kPprofFuzzCap = uint64_t{64} << 20;

std::string CheckPprof(std::string_view input) {
  Profile p;
  const Status s = ReadPprof(input, kName, &p, kPprofFuzzCap);
  if (!s.ok()) {
    const std::string& m = s.message();
    if (!m.starts_with(std::string(kName) + ": pprof: ") &&
        !m.starts_with(std::string(kName) + ": gzip: ")) {
      return "error does not start with 'input: pprof: ' or 'input: gzip: ': " + m;
    }
    if (m.find('\n') != std::string::npos) return "error message spans lines: " + m;
    return {};
  }
  if (std::string broken = CheckProfileModel(p); !broken.empty()) return "pprof: " + broken;
  return RoundTripProfile(
      p,
      [](std::string_view text, const std::string& name, Profile* out) {
        return ReadPprof(text, name, out, kPprofFuzzCap);
      },
      [](const Profile& profile) { return EncodePprof(profile); }, "pprof");
}

#ifdef INPROF_HAVE_PERF_SCRIPT_READER
// There is no perf script writer: what the reader accepts goes through folded stacks (every
// frame kept) and the annotation JSON instead.
std::string CheckPerfScript(std::string_view input) {
  Profile p;
  const Status s = ReadPerfScript(input, kName, &p);
  if (!s.ok()) return CheckRefusal(s, input);
  return RoundTripProfile(p, ReadFolded, Folded, "perf script -> folded");
}

// perf report's folded call chains have no writer either: checked as perf script is.
std::string CheckPerfReport(std::string_view input) {
  Profile p;
  const Status s = ReadPerfReport(input, kName, &p);
  if (!s.ok()) return CheckRefusal(s, input);
  return RoundTripProfile(p, ReadFolded, Folded, "perf report -> folded");
}
#endif

std::string CheckRefusal(const Status& status, std::string_view input) {
  const std::string& m = status.message();
  const std::string prefix = std::string(kInputName) + ":";
  if (m.rfind(prefix, 0) != 0) return "error does not start with '" + prefix + "': " + m;
  size_t line = 0;
  const char* begin = m.data() + prefix.size();
  const char* end = m.data() + m.size();
  const auto r = std::from_chars(begin, end, line);
  if (r.ec != std::errc() || r.ptr == begin || r.ptr + 2 > end || r.ptr[0] != ':' ||
      r.ptr[1] != ' ') {
    return "error is not 'input:LINE: what': " + m;
  }
  const size_t lines = static_cast<size_t>(std::count(input.begin(), input.end(), '\n')) + 1;
  if (line < 1 || line > lines) {
    return "error names line " + std::to_string(line) + " of an input with " +
           std::to_string(lines) + " lines: " + m;
  }
  if (m.find('\n') != std::string::npos) return "error message spans lines: " + m;
  return {};
}

}  // namespace inprof::fuzz
