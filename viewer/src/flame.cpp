// `inprof flame`: folded stacks or perf.log in, an interactive flame graph SVG out.
#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>

#include "inprof/atomic_write.h"
#include "inprof/flame.h"
#include "inprof/profile_filter.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;

// Index of the event named `name` in a profile (empty: 0).
StatusOr<size_t> FindProfileEvent(const Profile& profile, const std::string& name) {
  if (name.empty()) return size_t{0};
  std::string known;
  for (size_t i = 0; i < profile.events.size(); ++i) {
    if (profile.events[i].name == name) return i;
    known += (i ? ", " : "") + profile.events[i].name;
  }
  return Status::NotFound("no event '" + name + "' in the profile (it has: " + known + ")");
}

}  // namespace

std::string FlameSubtitle(const Profile& profile, const FlameOptions& options) {
  std::string subtitle;
  const std::string& program = profile.meta.program;
  if (!program.empty()) subtitle = program.substr(program.rfind('/') + 1) + " - ";
  // Folded stacks and perf.log call their one event "samples": no need to say it twice.
  const std::string event =
      options.event < profile.events.size() ? profile.events[options.event].name : std::string();
  if (!event.empty() && event != options.count_name) subtitle += event + " - ";
  uint64_t total = 0;
  for (const Sample& sample : profile.samples) {
    if (options.event < sample.weights.size() && sample.weights[options.event] > 0) {
      total += static_cast<uint64_t>(sample.weights[options.event]);
    }
  }
  return subtitle + GroupedNumber(total) + " " + options.count_name;
}

std::string GroupedNumber(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

Status LoadStacks(const std::string& path, Profile* out, bool progress,
                  const ProfileFilter& filter) {
  Input input;
  if (Status s = LoadInput(path, progress, &input, /*annotate=*/false, filter); !s.ok()) return s;
  if (!input.has_stacks) {
    return Status::Error(path +
                         ":1: this is annotation JSON, which keeps per-line totals but no "
                         "stacks; a flame graph needs folded stacks, perf.log or perf script "
                         "output (profile with INPROF_OUTPUT=out.folded or out.svg)");
  }
  *out = std::move(input.profile);
  return Status::Ok();
}

int RunFlame(const FlameCommandOptions& options, std::ostream& out, std::ostream& err) {
  Profile profile;
  if (Status s = LoadStacks(options.profile, &profile, options.progress, options.filter); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  FlameOptions flame = options.flame;
  StatusOr<size_t> event = FindProfileEvent(profile, options.event);
  if (!event.ok()) {
    err << "inprof: " << options.profile << ": " << event.status().message() << '\n';
    return kBadInput;
  }
  flame.event = *event;
  // A graph of part of a profile says which part, as the timeline page's graphs do.
  if (flame.subtitle.empty() && !options.filter.empty()) {
    flame.subtitle = FlameSubtitle(profile, flame) + " (" + FilterSummary(options.filter) + ")";
  }
  if (options.output.empty()) {
    // Straight to the stream: the whole document in memory first cost more than writing it.
    if (Status s = WriteFlameSvg(profile, flame, out); !s.ok()) {
      err << "inprof: " << s.message() << '\n';
      return kBadInput;
    }
    return 0;
  }
  std::string svg;
  if (Status s = WriteFlameSvg(profile, flame, &svg); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  if (Status s = WriteFileAtomically(options.output, svg); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  return 0;
}

}  // namespace inprof::viewer
