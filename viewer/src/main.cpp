// `inprof`: the viewer's command line. Parses options, loads the profile and hands both to
// one subcommand (top.cpp, annotate.cpp, heat.cpp).
//
// Exit codes: 0 success, 1 bad or unreadable input, 2 bad usage.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "codesearch.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;
constexpr int kUsage = 2;

constexpr const char* kMainHelp = R"(usage: inprof COMMAND [OPTIONS] PROFILE ...

Reads a profile written by inprof: annotation JSON (*.json), perf.log (*.log) or folded
stacks (anything else), and shows where the time went.

commands:
  top       hottest source lines and hottest functions
  annotate  source files with self %, inclusive % and heat in a gutter
  heat      heat levels per function and line (perf-heatmap `stat` style)
  hot       keep the hits of grep/rg/git grep/... (on stdin) that are on hot lines
  grep      regex search over the hot lines of the profiled sources
  query     heat of FILE:LINE or FILE:FIRST-LAST, for editors and scripts

Run `inprof COMMAND --help` for a command's options and examples.
)";

constexpr const char* kCommonHelp = R"(common options:
  -e, --event NAME   the event to show (default: the profile's first event)
      --absolute     weights instead of percentages of the event's total
      --json         machine-readable output
      --map OLD=NEW  read sources under NEW where the profile says OLD (repeatable)
  -h, --help         this text
Colour is used only on a terminal, and never when NO_COLOR is set.
)";

constexpr const char* kTopHelp = R"(usage: inprof top [OPTIONS] PROFILE

The hottest source lines and the hottest functions of one event, by self weight (samples
whose innermost frame is the line or function) or, with --inclusive, by inclusive weight.

options:
  -n N               entries per list (default 10)
      --inclusive    rank by inclusive weight

examples:
  inprof top profile.json
  inprof top -n 20 --inclusive perf.log
  inprof top --json out.folded | jq '.functions[0]'
)";

constexpr const char* kAnnotateHelp = R"(usage: inprof annotate [OPTIONS] PROFILE [SOURCE...]

Source files with a gutter: self, inclusive and the global heat level (0-5) of each line.
Without SOURCE, the file with the hottest line (or the -n hottest files). Only hot regions
(lines with a heat level, and --context lines around them) unless --all.

options:
      --all          whole files
      --function S   the line ranges of functions whose name contains S
  -C, --context N    lines of context around hot lines (default 2)
  -n N               files to show when none are named (default 1)

examples:
  inprof annotate profile.json
  inprof annotate profile.json src/parse.cpp --all
  inprof annotate --function compute --map /build/src=$HOME/src profile.json
)";

constexpr const char* kHeatHelp = R"(usage: inprof heat [OPTIONS] PROFILE

Heat levels after perf-heatmap: per function, one row per sampled line,
  line NNNN: <self> <inclusive> L=<level within the function> G=<level over the profile>
Levels 5 (hottest) to 1 cover the top share of lines (the threshold); the rest are 0.

options:
      --threshold T  share of lines that get a level, 0 < T <= 1 (default: the profile's,
                     normally 0.5)

examples:
  inprof heat profile.json
  inprof heat --threshold 0.25 --absolute perf.log
)";

int Usage(const std::string& message) {
  std::cerr << "inprof: " << message << "\n(run `inprof --help` for usage)\n";
  return kUsage;
}

bool ParseSize(std::string_view text, size_t* value) {
  if (text.empty() || text.size() > 9) return false;
  size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  *value = v;
  return true;
}

bool UseColor() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return isatty(STDOUT_FILENO) == 1;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return Usage("missing command (top, annotate, heat)");
  const std::string command = args[0];
  if (IsCodeSearchCommand(command)) return RunCodeSearch(args);
  if (command == "-h" || command == "--help" || command == "help") {
    std::cout << kMainHelp;
    return 0;
  }
  const char* help = command == "top"        ? kTopHelp
                     : command == "annotate" ? kAnnotateHelp
                     : command == "heat"     ? kHeatHelp
                                             : nullptr;
  if (!help) return Usage("unknown command '" + command + "' (top, annotate, heat)");

  ViewerOptions o;
  std::vector<std::string> positional;
  bool options_done = false;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_inline_value = false;
    if (!options_done && arg.starts_with("--") && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_inline_value = true;
    }
    auto take = [&](std::string* out) {
      if (has_inline_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    auto flag = [&](bool* out) {
      if (has_inline_value) return false;
      *out = true;
      return true;
    };
    const bool top = command == "top", annotate = command == "annotate", heat = command == "heat";
    std::string text;
    if (options_done || arg == "-" || !arg.starts_with("-")) {
      positional.push_back(args[i]);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << help << '\n' << kCommonHelp;
      return 0;
    } else if (arg == "-e" || arg == "--event") {
      if (!take(&o.event)) return Usage(arg + " needs an event name");
    } else if (arg == "--json") {
      if (!flag(&o.json)) return Usage("--json takes no value");
    } else if (arg == "--absolute") {
      if (!flag(&o.absolute)) return Usage("--absolute takes no value");
    } else if (arg == "--map") {
      if (!take(&text) || text.find('=') == std::string::npos || text.front() == '=') {
        return Usage("--map needs OLD=NEW (a source path prefix and its replacement)");
      }
      o.maps.emplace_back(text.substr(0, text.find('=')), text.substr(text.find('=') + 1));
    } else if ((top || annotate) && arg == "-n") {
      if (!take(&text) || !ParseSize(text, &o.limit) || o.limit == 0) {
        return Usage("-n needs a positive number");
      }
      o.limit_set = true;
    } else if (top && arg == "--inclusive") {
      if (!flag(&o.inclusive)) return Usage("--inclusive takes no value");
    } else if (annotate && arg == "--all") {
      if (!flag(&o.all)) return Usage("--all takes no value");
    } else if (annotate && arg == "--function") {
      if (!take(&o.function) || o.function.empty()) return Usage("--function needs a name");
    } else if (annotate && (arg == "-C" || arg == "--context")) {
      size_t context = 0;
      if (!take(&text) || !ParseSize(text, &context) || context > 100000) {
        return Usage(arg + " needs a number of lines");
      }
      o.context = static_cast<uint32_t>(context);
    } else if (heat && arg == "--threshold") {
      char* end = nullptr;
      if (!take(&text)) return Usage("--threshold needs a value in (0, 1]");
      o.threshold = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(o.threshold > 0 && o.threshold <= 1)) {
        return Usage("--threshold needs a value in (0, 1], not '" + text + "'");
      }
    } else {
      return Usage("unknown option '" + arg + "' for " + command);
    }
  }
  if (positional.empty()) return Usage(command + " needs a PROFILE file");
  if (command != "annotate" && positional.size() > 1) {
    return Usage(command + " takes one PROFILE, got '" + positional[1] + "' too");
  }
  o.profile = positional[0];
  o.sources.assign(positional.begin() + 1, positional.end());
  o.color = !o.json && UseColor();

  Annotations annotations;
  if (Status s = LoadAnnotations(o.profile, &annotations); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  RemapPaths(o.maps, annotations);
  size_t event = 0;
  std::string error;
  if (!FindEvent(annotations, o.event, &event, &error)) {
    std::cerr << "inprof: " << o.profile << ": " << error << '\n';
    return kBadInput;
  }
  int rc = 0;
  if (command == "top") rc = RunTop(o, annotations, event, std::cout);
  if (command == "annotate") rc = RunAnnotate(o, annotations, event, std::cout, std::cerr);
  if (command == "heat") rc = RunHeat(o, annotations, event, std::cout);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "inprof: cannot write the output: " << std::strerror(errno) << '\n';
    return kBadInput;
  }
  return rc;
}

}  // namespace
}  // namespace inprof::viewer

int main(int argc, char** argv) { return inprof::viewer::Main(argc, argv); }
