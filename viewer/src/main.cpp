// `inprof`: the viewer's command line. Parses options, loads the profile and hands both to
// one subcommand (top.cpp, annotate.cpp, heat.cpp, callers.cpp); diff.cpp, convert.cpp and
// flame.cpp load their own inputs.
//
// Exit codes: 0 success, 1 bad or unreadable input, 2 bad usage.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "progress.h"
#include "addr2line.h"
#include "codesearch.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;
constexpr int kUsage = 2;

constexpr const char* kMainHelp = R"(usage: inprof COMMAND [OPTIONS] PROFILE ...

Reads a profile: annotation JSON written by inprof, perf.log, folded stacks, `perf script`
output or `perf report -g folded` output (told apart by their content), and shows where the
time went.

commands:
  top       hottest source lines and hottest functions
  annotate  source files with self %, inclusive % and heat in a gutter
  heat      heat levels per function and line (perf-heatmap `stat` style)
  callers   who calls a function or a range of lines, with weights
  callees   what a function or a range of lines calls, with weights
  diff      what got hotter or colder between two profiles
  convert   a profile in another format (folded, perf.log, annotation JSON)
  flame     interactive flame graph (SVG) from stacks (folded, perf.log, perf script)
  addr2line binutils addr2line, faster (same options and output; perf can use it)
  symbolize addresses of an ELF file to functions, lines and inline chains as JSON
  record    run a program under the profiler: inprof record -- COMMAND [ARGS...]
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
      --no-progress  no progress line while a large profile loads
  -h, --help         this text
Colour is used only on a terminal, and never when NO_COLOR is set. A load that takes over
half a second (or a file over 32 MB) shows its progress on stderr when stderr is a terminal,
--json or not (INPROF_PROGRESS=0 never, =1 always).
)";

constexpr const char* kTopHelp = R"(usage: inprof top [OPTIONS] PROFILE

The hottest source lines and the hottest functions of one event, by self weight (samples
whose innermost frame is the line or function) or, with --inclusive, by inclusive weight.

options:
  -n N               entries per list (default 10)
      --inclusive    rank by inclusive weight
      --full-names   C++ names as they are (default: without template arguments,
                     parameters and return type, as pprof shows them; --json keeps them)

examples:
  inprof top profile.json
  inprof top -n 20 --inclusive perf.log
  inprof top --json out.folded | jq '.functions[0]'
)";

constexpr const char* kAnnotateHelp = R"(usage: inprof annotate [OPTIONS] PROFILE [SOURCE...]

Source files with a gutter: self, inclusive and the global heat level (0-5) of each line.
Without SOURCE, the file with the most self weight (or the -n files with the most), its
hottest regions first. Only hot regions (lines with a heat level or with self weight, and
--context lines around them) unless --all; a named SOURCE is shown in line order.

options:
      --all          whole files
      --function S   the line ranges of functions whose name contains S
  -C, --context N    lines of context around hot lines (default 2)
  -n N               files to show when none are named (default 1)
      --heat METHOD  share (default) or perf-heatmap levels (see `inprof heat --help`)

examples:
  inprof annotate profile.json
  inprof annotate profile.json src/parse.cpp --all
  inprof annotate --function compute --map /build/src=$HOME/src profile.json
)";

constexpr const char* kHeatHelp = R"(usage: inprof heat [OPTIONS] PROFILE

Heat levels per function, one row per sampled line (perf-heatmap `stat` style),
  line NNNN: <self> <inclusive> L=<level within the function> G=<level over the profile>
Level 5 is the line with the most self weight; the others follow their share of its weight,
where time a line only passes on to callees counts a tenth (so such a line is at most 1);
every line with at least 1 % inclusive or 0.1 % self weight has a level, the rest are 0
(docs/heat.md).

options:
      --heat METHOD  share (the default, above) or perf-heatmap: rank the lines by inclusive
                     weight and cut the top share into five chunks, as gogrep does
      --threshold T  perf-heatmap's share of lines that get a level, 0 < T <= 1 (default
                     0.5; implies --heat perf-heatmap)

examples:
  inprof heat profile.json
  inprof heat --heat perf-heatmap --threshold 0.25 --absolute perf.log
)";

constexpr const char* kCallersHelp = R"help(usage: inprof callers [OPTIONS] TARGET PROFILE
       inprof callees [OPTIONS] TARGET PROFILE

Who calls TARGET (callers) or what TARGET calls (callees), with the weight of the stacks
through each call as a percentage of the event's total, from the profile's caller -> callee
source line pairs. Rows are functions (or lines with --lines); inlined calls are marked
[inlined] and kept apart from real calls; each row lists its call sites.

TARGET is one of
  NAME              a function whose name contains NAME; when several do, they are listed
                    and nothing else is done (exit 1): pick one with =NAME or FILE:LINE
  =NAME             the function named exactly NAME
  FILE:LINE         a source line; FILE is a profile path or its trailing components
  FILE:START-END    a range of lines (a loop, a block): calls in and out of the range
Calls inside the target (recursion, calls within the range) are not listed.

options:
  -n N               rows (default 20)
      --lines        one row per line of the other side instead of per function
      --full-names   C++ names as they are, not shortened (--json keeps them)

examples:
  inprof callers compute profile.json
  inprof callees --lines '=parse(Reader&)' profile.json
  inprof callers src/parse.cpp:120-180 perf.script
)help";

constexpr const char* kDiffHelp = R"help(usage: inprof diff [OPTIONS] BEFORE AFTER

What got hotter or colder from BEFORE to AFTER, by function and by line: self and inclusive
weight in each, as a percentage of each profile's own total (so runs of different length
compare), and the change, sorted by the size of the change. Functions are matched by name,
lines by path and line (use --map to line up two source trees). The event is -e NAME in
both, else BEFORE's first event and AFTER's event of that name (or AFTER's first event).

options:
  -n N               entries per list (default 10)
      --inclusive    sort by the change in inclusive weight
      --flame -o OUT a differential flame graph (SVG) instead: widths from AFTER, red
                     hotter, blue colder; needs stacks (folded, perf.log, perf script)

examples:
  inprof diff before.json after.json
  inprof diff -n 20 --absolute old.folded new.folded
  inprof diff --json --map /build/a=/src --map /build/b=/src a.json b.json
)help";

constexpr const char* kConvertHelp = R"help(usage: inprof convert [OPTIONS] IN -o OUT

Writes the profile IN in the format OUT's name asks for: *.folded (flame graph stacks),
*.log (perf.log for perfanno.nvim) or *.json (annotation JSON). IN can be any input the
viewer reads; annotation JSON has no stacks and converts only to annotation JSON. OUT is
written atomically: it never exists half-written.

options:
  -o, --output OUT   the file to write (required)
  -e, --event NAME   the event for folded and perf.log (default: the first)
      --lines        folded frames as "function (file:line)"

examples:
  perf script > perf.script && inprof convert perf.script -o out.folded
  perf script -F +srcline > perf.script && inprof convert perf.script -o perf.log
  inprof convert --lines stacks.folded -o lines.folded
)help";

constexpr const char* kFlameHelp = R"(usage: inprof flame [OPTIONS] PROFILE

An interactive flame graph of folded stacks or perf.log, as one self-contained SVG (no
external files; open it in a browser). Each box is a function in a stack, as wide as its
share of the samples; callers below, callees above (or the reverse with --inverted).
Hover for the function, its samples and percentage; click a box to zoom into it (its
callers stay shown); Search (or Ctrl-F) takes a regular expression, highlights the matches
and shows the share of samples under them ("Matched: 12.3%"); Reset Zoom, Reset Search.
Annotation JSON has no stacks: profile with INPROF_OUTPUT=out.folded or out.svg instead.

options:
  -o, --output FILE  write the SVG to FILE (atomically) instead of standard output
      --title TEXT   the title (default "Flame Graph", or "Icicle Graph" with --inverted)
      --width PX     image width in pixels, 100-100000 (default 1200)
      --minwidth PX  leave out boxes narrower than PX pixels (default 0.1); their samples
                     still count in every caller's width and total
      --inverted     icicle graph: the root at the top, callees below
      --lines        one box per source line, named function (file:line), where the
                     profile has lines (perf.log; folded stacks written with lines)
  -e, --event NAME   the event to draw (default: the profile's first event)
  -h, --help         this text

examples:
  inprof flame out.folded > out.svg
  inprof flame -o perf.svg --title "parser, release build" perf.log
  inprof flame --inverted --width 1800 --minwidth 1 -o icicle.svg out.folded
  inprof flame --lines -o lines.svg perf.log
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
  // Symbolization subcommands have binutils-style options of their own; also run as
  // `addr2line` through a link of that name (how perf finds it on PATH).
  const char* self = std::strrchr(argv[0], '/');
  if (std::strcmp(self != nullptr ? self + 1 : argv[0], "addr2line") == 0) {
    return Addr2lineMain(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "addr2line") == 0) return Addr2lineMain(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "symbolize") == 0) return SymbolizeMain(argc - 1, argv + 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  constexpr const char* kCommands = "top, annotate, heat, callers, callees, diff, convert, flame";
  if (args.empty()) return Usage(std::string("missing command (") + kCommands + ")");
  const std::string command = args[0];
  // record runs a program rather than reading a profile: its own options (record.cpp).
  if (command == "record") return RunRecord(args);
  if (IsCodeSearchCommand(command)) return RunCodeSearch(args);
  if (command == "-h" || command == "--help" || command == "help") {
    std::cout << kMainHelp;
    return 0;
  }
  const bool calls_command = command == "callers" || command == "callees";
  const char* help = command == "top"        ? kTopHelp
                     : command == "annotate" ? kAnnotateHelp
                     : command == "heat"     ? kHeatHelp
                     : calls_command         ? kCallersHelp
                     : command == "diff"     ? kDiffHelp
                     : command == "convert"  ? kConvertHelp
                     : command == "flame"    ? kFlameHelp
                                             : nullptr;
  if (!help) return Usage("unknown command '" + command + "' (" + kCommands + ")");

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
    const bool calls = command == "callers" || command == "callees";
    const bool diff = command == "diff", convert = command == "convert";
    const bool flame = command == "flame";
    std::string text;
    if (options_done || arg == "-" || !arg.starts_with("-")) {
      positional.push_back(args[i]);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << help << '\n' << (flame ? "" : kCommonHelp);
      return 0;
    } else if (arg == "-e" || arg == "--event") {
      if (!take(&o.event)) return Usage(arg + " needs an event name");
    } else if (flame && (arg == "-o" || arg == "--output")) {
      if (!take(&o.output) || o.output.empty()) return Usage(arg + " needs a file name");
    } else if (flame && arg == "--title") {
      if (!take(&o.flame.title)) return Usage("--title needs a text");
    } else if (flame && arg == "--width") {
      size_t width = 0;
      if (!take(&text) || !ParseSize(text, &width) || width < 100 || width > 100000) {
        return Usage("--width needs a number of pixels from 100 to 100000");
      }
      o.flame.width = static_cast<uint32_t>(width);
    } else if (flame && arg == "--minwidth") {
      char* end = nullptr;
      if (!take(&text)) return Usage("--minwidth needs a number of pixels");
      o.flame.min_width = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(o.flame.min_width >= 0 && o.flame.min_width <= 1000)) {
        return Usage("--minwidth needs a number of pixels from 0 to 1000, not '" + text + "'");
      }
    } else if (flame && arg == "--inverted") {
      if (!flag(&o.flame.inverted)) return Usage("--inverted takes no value");
    } else if (flame && arg == "--lines") {
      if (!flag(&o.flame.lines)) return Usage("--lines takes no value");
    } else if (flame && (arg == "--json" || arg == "--absolute" || arg == "--map")) {
      return Usage("unknown option '" + arg + "' for flame");
    } else if (arg == "--json") {
      if (!flag(&o.json)) return Usage("--json takes no value");
    } else if (arg == "--absolute") {
      if (!flag(&o.absolute)) return Usage("--absolute takes no value");
    } else if (arg == "--map") {
      if (!take(&text) || text.find('=') == std::string::npos || text.front() == '=') {
        return Usage("--map needs OLD=NEW (a source path prefix and its replacement)");
      }
      o.maps.emplace_back(text.substr(0, text.find('=')), text.substr(text.find('=') + 1));
    } else if (arg == "--no-progress") {
      bool on = false;
      if (!flag(&on)) return Usage("--no-progress takes no value");
      o.progress = false;
    } else if ((diff || convert) && (arg == "-o" || arg == "--output")) {
      if (!take(&o.output) || o.output.empty()) return Usage(arg + " needs a file name");
    } else if ((calls || convert) && arg == "--lines") {
      if (!flag(&o.lines)) return Usage("--lines takes no value");
    } else if (diff && arg == "--flame") {
      if (!flag(&o.diff_flame)) return Usage("--flame takes no value");
    } else if ((top || annotate || calls || diff) && arg == "-n") {
      if (!take(&text) || !ParseSize(text, &o.limit) || o.limit == 0) {
        return Usage("-n needs a positive number");
      }
      o.limit_set = true;
    } else if ((top || diff) && arg == "--inclusive") {
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
    } else if ((heat || annotate) && arg == "--heat") {
      HeatMethod method;
      if (!take(&text) || !ParseHeatMethod(text, &method)) {
        return Usage("--heat needs share or perf-heatmap, not '" + text + "'");
      }
      o.heat_method = method;
    } else if ((top || annotate || calls) && arg == "--full-names") {
      if (!flag(&o.full_names)) return Usage("--full-names takes no value");
    } else if ((heat || annotate) && arg == "--threshold") {
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
  o.progress = o.progress && ProgressAllowed();
  const bool calls = command == "callers" || command == "callees";
  if (calls || command == "diff") {
    const char* what = calls ? "TARGET and PROFILE" : "BEFORE and AFTER profiles";
    if (positional.size() != 2) return Usage(command + " needs " + what);
    if (command == "diff" && o.diff_flame && o.output.empty()) {
      return Usage("diff --flame needs -o FILE.svg");
    }
    if (command == "diff" && !o.diff_flame && !o.output.empty()) {
      return Usage("diff -o needs --flame (the listing goes to stdout)");
    }
    if (calls) {
      o.target = positional[0];
      if (o.target.empty() || o.target == "=") return Usage(command + " needs a TARGET");
      positional.erase(positional.begin());
    } else {
      o.other = positional[1];
    }
  }
  if (positional.empty()) return Usage(command + " needs a PROFILE file");
  if (command != "annotate" && command != "diff" && positional.size() > 1) {
    return Usage(command + " takes one PROFILE, got '" + positional[1] + "' too");
  }
  o.profile = positional[0];
  if (command == "convert" && o.output.empty()) return Usage("convert needs -o OUT");
  if (command == "annotate") o.sources.assign(positional.begin() + 1, positional.end());
  o.color = !o.json && UseColor();
  if (command == "flame") {
    // Megabytes of XML are no use on a terminal (and can leave it in a strange state).
    if (o.output.empty() && isatty(STDOUT_FILENO) == 1) {
      return Usage("flame writes an SVG: give -o FILE, or redirect it (inprof flame " +
                   o.profile + " > flame.svg)");
    }
    const int rc = RunFlame(o, std::cout, std::cerr);
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "inprof: cannot write the output: " << std::strerror(errno) << '\n';
      return kBadInput;
    }
    return rc;
  }

  if (command == "diff" || command == "convert") {
    const int rc =
        command == "diff" ? RunDiff(o, std::cout, std::cerr) : RunConvert(o, std::cout, std::cerr);
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "inprof: cannot write the output: " << std::strerror(errno) << '\n';
      return kBadInput;
    }
    return rc;
  }

  Input input;
  if (Status s = LoadInput(o.profile, o.progress, &input); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  Annotations& annotations = input.annotations;
  RemapPaths(o.maps, annotations);
  size_t event = 0;
  std::string error;
  if (!FindEvent(annotations, o.event, &event, &error)) {
    std::cerr << "inprof: " << o.profile << ": " << error << '\n';
    return kBadInput;
  }
  if (o.heat_method || o.threshold > 0) {
    // A threshold only means something to perf-heatmap's ranking, so it asks for it.
    AssignHeat(annotations, o.heat_method.value_or(HeatMethod::kPerfHeatmap),
               o.threshold > 0 ? o.threshold : annotations.heat_threshold);
  }
  int rc = 0;
  if (command == "top") rc = RunTop(o, annotations, event, std::cout);
  if (command == "annotate") rc = RunAnnotate(o, annotations, event, std::cout, std::cerr);
  if (command == "heat") rc = RunHeat(o, annotations, event, std::cout);
  if (calls) {
    rc = RunCallers(o, annotations, input.has_stacks ? &input.profile : nullptr, event,
                    command == "callees", std::cout, std::cerr);
  }
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
