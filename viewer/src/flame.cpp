// `inprof flame`: folded stacks or perf.log in, an interactive flame graph SVG out.
#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>

#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;

// Index of the event named `name` in a profile (empty: 0).
bool FindProfileEvent(const Profile& profile, const std::string& name, size_t* event,
                      std::string* error) {
  if (name.empty()) {
    *event = 0;
    return true;
  }
  std::string known;
  for (size_t i = 0; i < profile.events.size(); ++i) {
    if (profile.events[i].name == name) {
      *event = i;
      return true;
    }
    known += (i ? ", " : "") + profile.events[i].name;
  }
  *error = "no event '" + name + "' in the profile (it has: " + known + ")";
  return false;
}

}  // namespace

Status LoadStacks(const std::string& path, Profile* out, bool progress) {
  Input input;
  if (Status s = LoadInput(path, progress, &input, /*annotate=*/false); !s.ok()) return s;
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
  if (Status s = LoadStacks(options.profile, &profile, options.progress); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  FlameOptions flame = options.flame;
  std::string error;
  if (!FindProfileEvent(profile, options.event, &flame.event, &error)) {
    err << "inprof: " << options.profile << ": " << error << '\n';
    return kBadInput;
  }
  std::string svg;
  if (Status s = WriteFlameSvg(profile, flame, &svg); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  if (!options.output.empty()) {
    if (Status s = WriteFileAtomically(options.output, svg); !s.ok()) {
      err << "inprof: " << s.message() << '\n';
      return kBadInput;
    }
    return 0;
  }
  out.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  return 0;
}

}  // namespace inprof::viewer
