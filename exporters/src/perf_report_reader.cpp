// `perf report --no-children -g folded,0,caller,srcline,count --stdio` read into a Profile.
//
// Each event's section starts with "# Samples: N  of event 'E'"; under every histogram entry
// ("    98.97%  comm  dso  [.] sym") perf prints that entry's call chains, one per line, as
// "COUNT frame;frame;..." root first, each frame "symbol" or "symbol file:line" (srcline).
// With children (perf's default) every chain is listed under each function on it, so the
// counts would add up to far more than the samples: that output is refused with a hint, as is
// the percentage form (no "count" in -g), whose two decimals cannot give back the counts.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/perf_script.h"
#include "stacks.h"

namespace inprof {
namespace {

// Every chain keeps one weight per event, so distinct events multiply the memory of every
// chain (a file alternating new headers and chains would need chains^2 weights); perf
// reports a few events at a time.
constexpr size_t kMaxEvents = 256;

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "sym file.c:12" -> sym, file.c, 12; "sym" -> sym.
Frame ParseReportFrame(std::string_view raw) {
  // Control characters become spaces, as every writer turns them, and runs of spaces one
  // space (perf never prints two inside a frame): otherwise "f\4\4 (a.c:1)" is a bare name
  // here, written to folded stacks as "f   (a.c:1)", read back as "f   " at a.c:1 and written
  // again as "f (a.c:1)" (found by the perf_report fuzzer).
  std::string cleaned;
  std::string_view text = raw;
  bool clean = true;
  for (size_t i = 0; i < raw.size() && clean; ++i) {
    const auto u = static_cast<unsigned char>(raw[i]);
    clean = !(u < 0x20 || u == 0x7f || (u == ' ' && i > 0 && raw[i - 1] == ' '));
  }
  if (!clean) {
    std::string spaced(raw);
    internal::ReplaceControlChars(spaced);
    for (char c : spaced) {
      if (c != ' ' || cleaned.empty() || cleaned.back() != ' ') cleaned += c;
    }
    text = cleaned;
  }
  // A control character at either end is a space now: "f (a.c:1)\x1b" kept whole as
  // "f (a.c:1) " was written to folded stacks, read back as f at a.c:1 and written again
  // without the space (found by the perf_report fuzzer).
  text = TrimSpaces(text);
  Frame frame;
  const size_t space = text.rfind(' ');
  if (space != std::string_view::npos) {
    const std::string_view location = text.substr(space + 1);
    const size_t colon = location.rfind(':');
    uint32_t line = 0;
    if (colon != std::string_view::npos && colon > 0) {
      const std::string_view digits = location.substr(colon + 1);
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), line);
      if (r.ec == std::errc() && r.ptr == digits.data() + digits.size()) {
        frame.function = std::string(TrimSpaces(text.substr(0, space)));
        if (line > 0 && location.substr(0, colon) != "??") {
          frame.file = std::string(location.substr(0, colon));
          frame.line = line;
        }
        return frame;
      }
    }
  }
  // "sym (file.c:12)": not perf's form, but the one folded stacks give it, so a name that
  // ends like it means what it will mean once converted ("f (a.c:09)" kept whole was
  // written to folded stacks as it is and read back as f at a.c:9; found by the fuzzer).
  std::string_view function, file;
  uint32_t line = 0;
  if (internal::SplitFrameLocation(text, &function, &file, &line) &&
      !TrimSpaces(function).empty()) {
    frame.function = std::string(TrimSpaces(function));
    frame.file = std::string(file);
    frame.line = line;
    return frame;
  }
  frame.function = std::string(text);
  if (frame.function.empty()) frame.function = "[unknown]";
  if (frame.function == "[unknown]") frame.kind = FrameKind::kSynthetic;
  return frame;
}

// The index of the event called `name`, added (counted in samples) when new; kMaxEvents
// when it is new and there are that many already.
size_t EventIndex(Profile& profile, const std::string& name) {
  for (size_t i = 0; i < profile.events.size(); ++i) {
    if (profile.events[i].name == name) return i;
  }
  if (profile.events.size() >= kMaxEvents) return kMaxEvents;  // refused by the caller
  EventInfo info;
  info.name = name;
  info.unit = "samples";
  info.period = 1;
  profile.events.push_back(std::move(info));
  return profile.events.size() - 1;
}

// One "frame;frame;..." chain with `count` samples of `event`; frames are shared by text.
void AddStack(std::string_view stack, size_t event, int64_t count,
              std::unordered_map<std::string, uint32_t>& frame_ids, Profile& profile) {
  Sample sample;
  while (!stack.empty()) {
    const size_t semi = stack.find(';');
    const std::string_view frame = stack.substr(0, semi);
    auto [it, added] = frame_ids.try_emplace(std::string(frame), 0);
    if (added) {
      it->second = static_cast<uint32_t>(profile.frames.size());
      profile.frames.push_back(ParseReportFrame(frame));
    }
    sample.frames.push_back(it->second);
    if (semi == std::string_view::npos) break;
    stack.remove_prefix(semi + 1);
  }
  sample.weights.assign(event + 1, 0);
  sample.weights[event] = count;
  int64_t& total = profile.events[event].total_weight;
  if (__builtin_add_overflow(total, count, &total)) total = INT64_MAX;
  profile.samples.push_back(std::move(sample));
}

}  // namespace

Status ReadPerfReport(std::string_view text, const std::string& name, Profile* out) {
  Profile profile;
  std::string error;
  size_t event = SIZE_MAX;
  auto fail = [&](size_t number, const std::string& what) {
    error = name + ":" + std::to_string(number) + ": " + what;
    return false;
  };
  std::unordered_map<std::string, uint32_t> frame_ids;
  const bool ok = internal::ForEachLine(text, [&](std::string_view line, size_t number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("#")) {
      const size_t samples = line.find("# Samples:");
      const size_t of = line.find(" of event '");
      if (samples == 0 && of != std::string_view::npos && line.ends_with("'")) {
        event = EventIndex(profile, std::string(line.substr(of + 11, line.size() - of - 12)));
        if (event >= kMaxEvents) {
          return fail(number, "expected at most " + std::to_string(kMaxEvents) +
                                  " distinct events (this header names one more)");
        }
      } else if (line.find("Children") != std::string_view::npos &&
                 line.find("Self") != std::string_view::npos) {
        return fail(number,
                    "expected perf report output without children: run perf report with "
                    "--no-children -g folded,0,caller,srcline,count --stdio");
      }
      return true;
    }
    const std::string_view trimmed = TrimSpaces(line);
    if (trimmed.empty()) return true;
    // Histogram entries ("    98.97%  w  w  [.] leaf") are indented; chains start at column 0.
    if (line.front() == ' ' || line.front() == '\t') return true;
    const size_t space = trimmed.find(' ');
    const std::string_view count_text = trimmed.substr(0, space);
    int64_t count = 0;
    if (count_text.ends_with('%')) {
      return fail(number,
                  "expected a sample count, not a percentage: add 'count' to perf report's -g "
                  "option (-g folded,0,caller,srcline,count)");
    }
    if (space == std::string_view::npos || !internal::ParseCount(count_text, &count)) {
      return fail(number, "expected 'COUNT frame;frame;...' (perf report -g folded output)");
    }
    if (event == SIZE_MAX) {
      return fail(number, "expected a '# Samples: N of event 'NAME'' header before the stacks");
    }
    AddStack(TrimSpaces(trimmed.substr(space + 1)), event, count, frame_ids, profile);
    return true;
  });
  if (!ok) return Status::Error(error);
  if (profile.events.empty()) {
    return Status::Error(name +
                         ":1: expected perf report output (no '# Samples: N of event' header)");
  }
  for (Sample& sample : profile.samples) sample.weights.resize(profile.events.size(), 0);
  *out = std::move(profile);
  return Status::Ok();
}

bool LooksLikePerfReport(std::string_view text) {
  // perf report --stdio starts with comment lines (many with --header) and names the event
  // in one of them.
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (TrimSpaces(line).empty()) continue;
    if (!line.starts_with("#")) return false;
    if (line.starts_with("# Samples:") && line.find(" of event '") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace inprof
