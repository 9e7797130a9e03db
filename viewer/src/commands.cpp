// The commands that read one profile (top, annotate, heat, callers, callees, diff, convert,
// flame): each one's help, its own options struct filled from a table of option specs, and
// the load-then-run step they share; and the table of every command (commands.h).
#include "commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "addr2line.h"
#include "cli.h"
#include "codesearch.h"
#include "inprof/status.h"
#include "progress.h"
#include "symbolize_profile.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr const char* kCommonHelp = R"(common options:
  -e, --event NAME   the event to show (default: the profile's first event)
      --absolute     weights instead of percentages of the event's total
      --json         machine-readable output
      --map OLD=NEW  read sources under NEW where the profile says OLD (repeatable)
      --no-progress  no progress line while a large profile loads
      --from T       only samples taken T seconds after the start or later (1.5, 300ms)
      --to T         only samples taken before T seconds after the start
      --thread NAME  only samples of this thread (a name or a tid; repeatable: any of them)
      --label K=V    only samples with label K=V (repeatable: all of them)
      --hide REGEX   remove frames whose function name matches REGEX from every stack;
                     their weight goes to the caller (repeatable: any of them)
  -h, --help         this text
--from/--to and --thread need sample times and threads: perf script output and
*.speedscope.json profiles have them (`inprof timeline` shows where the time went when).
--hide, as pprof's -hide, searches a function's name for an ECMAScript regular expression,
both as top shows it and in full as --full-names does (a match in either hides the frame):
'^std::' hides the standard library, 'parse' every name containing parse. A stack hidden
whole shows as [hidden], so totals do not change. It needs stacks: not annotation JSON.
Colour is used only on a terminal, and never when NO_COLOR is set. A load that takes over
half a second (or a file over 32 MB) shows its progress on stderr when stderr is a terminal,
--json or not (INPROF_PROGRESS=0 never, =1 always).
)";

constexpr const char* kTopHelp = R"help(usage: inprof top [OPTIONS] PROFILE

The hottest source lines and the hottest functions of one event, by self weight (samples
whose innermost frame is the line or function) or, with --inclusive, by inclusive weight.

options:
  -n N               entries per list (default 10)
      --inclusive    rank by inclusive weight
      --full-names   C++ names as they are (default: without template arguments,
                     parameters and return type, as pprof shows them; --json keeps them)
      --by-label KEY the event's total per value of the label KEY (and "(no KEY)" for
                     samples without it), largest first, with its share of the total

examples:
  inprof top profile.json
  inprof top -n 20 --inclusive perf.log
  inprof top --json out.folded | jq '.functions[0]'
  inprof top --from 1.3 --to 1.6 --thread worker perf.script
  inprof top --by-label tenant profile.speedscope.json
  inprof top --event alloc_space --hide '^std::|^__gnu_cxx::' heap.pb.gz
)help";

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
      --root DIR     read sources only from DIR (symlinks resolved; others are listed
                     as not read); relative profile paths are under DIR
Source files are read only if they are regular files of at most 64 MiB
(INPROF_MAX_SOURCE_BYTES); for a profile from elsewhere, use --root.

examples:
  inprof annotate profile.json
  inprof annotate profile.json src/parse.cpp --all
  inprof annotate --function compute --map /build/src=$HOME/src profile.json
  inprof annotate --root "$PWD" submitted.json
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
*.log (perf.log for perfanno.nvim), *.json (annotation JSON), *.speedscope.json (speedscope;
every sample's time and thread where IN has them), *.svg (interactive flame graph) or
*.pb.gz (pprof, for `go tool pprof`). IN can be any input the viewer reads (pprof too);
annotation JSON has no stacks and converts only to annotation JSON. OUT is written
atomically: it never exists half-written.

options:
  -o, --output OUT   the file to write (required)
  -e, --event NAME   the event for folded, perf.log, speedscope and SVG (default: the first)
      --lines        folded frames as "function (file:line)"

examples:
  perf script > perf.script && inprof convert perf.script -o out.folded
  perf script -F +srcline > perf.script && inprof convert perf.script -o perf.log
  inprof convert --lines stacks.folded -o lines.folded
  inprof convert cpu.pb.gz -o cpu.json
  inprof convert perf.script -o perf.speedscope.json
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
      --from T, --to T, --thread NAME, --label K=V
                     only the samples of a time range (seconds since the start), of
                     threads, with labels (perf script output, *.speedscope.json)
      --hide REGEX   remove frames whose function name matches REGEX (ECMAScript; short
                     or full name) from every stack; their width goes to the caller
  -h, --help         this text

examples:
  inprof flame out.folded > out.svg
  inprof flame -o perf.svg --title "parser, release build" perf.log
  inprof flame --inverted --width 1800 --minwidth 1 -o icicle.svg out.folded
  inprof flame --lines -o lines.svg perf.log
  inprof flame --from 1.3 --to 1.6 -o burst.svg perf.script
)";
bool UseColor() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return isatty(STDOUT_FILENO) == 1;
}

// Options every profile-reading command takes (flame: only --event and --no-progress).
std::vector<OptionSpec> CommonSpecs(ProfileOptions* o, bool flame = false) {
  std::vector<OptionSpec> specs = {
      Text({"-e", "--event"}, "an event name", &o->event),
      {{"--no-progress"}, nullptr, [o](const std::string&) { return !(o->progress = false); }},
  };
  for (OptionSpec& spec : FilterOptionSpecs(&o->filter)) specs.push_back(std::move(spec));
  if (flame) return specs;
  specs.push_back(Flag({"--json"}, &o->json));
  specs.push_back(Flag({"--absolute"}, &o->absolute));
  specs.push_back({{"--map"},
                   "OLD=NEW (a source path prefix and its replacement)",
                   [o](const std::string& text) {
                     const size_t eq = text.find('=');
                     if (eq == std::string::npos || eq == 0) return false;
                     o->maps.emplace_back(text.substr(0, eq), text.substr(eq + 1));
                     return true;
                   }});
  return specs;
}

// Parses `args` for `command` with the common specs plus `own`. Returns -1 to go on, or the
// exit code (help printed: 0; a usage error: 2).
int Parse(const std::vector<std::string>& args, const char* help, ProfileOptions* o,
          std::vector<OptionSpec> own, std::vector<std::string>* positional, bool flame = false) {
  std::vector<OptionSpec> specs = CommonSpecs(o, flame);
  for (OptionSpec& spec : own) specs.push_back(std::move(spec));
  bool want_help = false;
  if (Status s = ParseOptions(args[0], args, 1, specs, positional, &want_help); !s.ok()) {
    return UsageError(args[0], s.message());
  }
  if (want_help) {
    std::cout << help << '\n' << (flame ? "" : kCommonHelp);
    return 0;
  }
  if (const std::string problem = CheckFilter(o->filter); !problem.empty()) {
    return UsageError(args[0], problem);
  }
  o->progress = o->progress && ProgressAllowed();
  o->color = !o->json && UseColor();
  return -1;
}

// The one PROFILE of a command that takes exactly one. Returns -1 to go on, else 2.
int OneProfile(const std::vector<std::string>& args, const std::vector<std::string>& positional,
               ProfileOptions* o) {
  if (positional.empty()) return UsageError(args[0], args[0] + " needs a PROFILE file");
  if (positional.size() > 1) {
    return UsageError(args[0], args[0] + " takes one PROFILE, got '" + positional[1] + "' too");
  }
  o->profile = positional[0];
  return -1;
}

// What a command printed reached stdout, or the exit code says it did not.
int Flushed(int rc) {
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "inprof: cannot write the output: " << std::strerror(errno) << '\n';
    return kExitBadInput;
  }
  return rc;
}

// Loads o.profile, maps its paths and finds the event. Returns -1 to go on, else 1.
int Load(ProfileOptions& o, Input* input, size_t* event) {
  if (Status s = LoadInput(o.profile, o.progress, input, true, o.filter); !s.ok()) {
    std::cerr << "inprof: " << s.message() << '\n';
    return kExitBadInput;
  }
  o.no_lines_hint = NoLinesHint(input->kind);
  RemapPaths(o.maps, input->annotations);
  StatusOr<size_t> found = FindEvent(input->annotations, o.event);
  if (!found.ok()) {
    std::cerr << "inprof: " << o.profile << ": " << found.status().message() << '\n';
    return kExitBadInput;
  }
  *event = *found;
  return -1;
}

int TopCommand(const std::vector<std::string>& args) {
  TopOptions o;
  std::vector<std::string> positional;
  int rc = Parse(args, kTopHelp, &o,
                 {Count({"-n"}, "a positive number", &o.limit, 1, 999999999),
                  Flag({"--inclusive"}, &o.inclusive), Flag({"--full-names"}, &o.full_names),
                  Text({"--by-label"}, "a label key", &o.by_label)},
                 &positional);
  if (rc < 0) rc = OneProfile(args, positional, &o);
  if (rc >= 0) return rc;
  Input input;
  size_t event = 0;
  if ((rc = Load(o, &input, &event)) >= 0) return rc;
  if (!o.by_label.empty()) {
    return Flushed(RunTopByLabel(o, input.annotations, input.has_stacks ? &input.profile : nullptr,
                                 event, std::cout, std::cerr));
  }
  return Flushed(RunTop(o, input.annotations, event, std::cout));
}

int AnnotateCommand(const std::vector<std::string>& args) {
  AnnotateOptions o;
  std::vector<std::string> positional;
  size_t context = o.context;
  std::vector<OptionSpec> own = {
      Flag({"--all"}, &o.all), Text({"--function"}, "a name", &o.function),
      Text({"--root"}, "a directory", &o.root),
      Count({"-C", "--context"}, "a number of lines", &context, 0, 100000),
      Count({"-n"}, "a positive number", &o.limit, 1, 999999999)};
  for (OptionSpec& spec : HeatOptionSpecs(&o.heat)) own.push_back(std::move(spec));
  int rc = Parse(args, kAnnotateHelp, &o, std::move(own), &positional);
  if (rc >= 0) return rc;
  if (positional.empty()) return UsageError(args[0], "annotate needs a PROFILE file");
  o.profile = positional[0];
  o.sources.assign(positional.begin() + 1, positional.end());
  o.context = static_cast<uint32_t>(context);
  Input input;
  size_t event = 0;
  if ((rc = Load(o, &input, &event)) >= 0) return rc;
  ApplyHeat(o.heat, input.annotations);
  return Flushed(RunAnnotate(o, input.annotations, event, std::cout, std::cerr));
}

int HeatCommand(const std::vector<std::string>& args) {
  HeatOptions o;
  std::vector<std::string> positional;
  int rc = Parse(args, kHeatHelp, &o, HeatOptionSpecs(&o.heat), &positional);
  if (rc < 0) rc = OneProfile(args, positional, &o);
  if (rc >= 0) return rc;
  Input input;
  size_t event = 0;
  if ((rc = Load(o, &input, &event)) >= 0) return rc;
  ApplyHeat(o.heat, input.annotations);
  return Flushed(RunHeat(o, input.annotations, event, std::cout));
}

int CallersCommand(const std::vector<std::string>& args) {
  CallersOptions o;
  o.callees = args[0] == "callees";
  std::vector<std::string> positional;
  int rc = Parse(args, kCallersHelp, &o,
                 {Count({"-n"}, "a positive number", &o.limit, 1, 999999999),
                  Flag({"--lines"}, &o.lines), Flag({"--full-names"}, &o.full_names)},
                 &positional);
  if (rc >= 0) return rc;
  if (positional.size() != 2) return UsageError(args[0], args[0] + " needs TARGET and PROFILE");
  o.target = positional[0];
  if (o.target.empty() || o.target == "=") return UsageError(args[0], args[0] + " needs a TARGET");
  o.profile = positional[1];
  // The two the other way round (the profile first, as most commands take it): said as such,
  // not as a profile named like the target that cannot be read.
  if (access(o.profile.c_str(), F_OK) != 0 && access(o.target.c_str(), F_OK) == 0) {
    return UsageError(args[0], "no file '" + o.profile + "'; the target comes first: inprof " +
                                   args[0] + " " + ShellQuote(o.profile) + " " +
                                   ShellQuote(o.target));
  }
  Input input;
  size_t event = 0;
  if ((rc = Load(o, &input, &event)) >= 0) return rc;
  return Flushed(RunCallers(o, input.annotations, input.has_stacks ? &input.profile : nullptr,
                            event, std::cout, std::cerr));
}

int DiffCommand(const std::vector<std::string>& args) {
  DiffOptions o;
  std::vector<std::string> positional;
  int rc = Parse(args, kDiffHelp, &o,
                 {Count({"-n"}, "a positive number", &o.limit, 1, 999999999),
                  Flag({"--inclusive"}, &o.inclusive), Flag({"--flame"}, &o.flame),
                  Text({"-o", "--output"}, "a file name", &o.output)},
                 &positional);
  if (rc >= 0) return rc;
  if (positional.size() != 2) return UsageError(args[0], "diff needs BEFORE and AFTER profiles");
  if (o.flame && o.output.empty()) return UsageError(args[0], "diff --flame needs -o FILE.svg");
  if (!o.flame && !o.output.empty()) {
    return UsageError(args[0], "diff -o needs --flame (the listing goes to stdout)");
  }
  o.profile = positional[0];
  o.other = positional[1];
  return Flushed(RunDiff(o, std::cout, std::cerr));
}

int ConvertCommand(const std::vector<std::string>& args) {
  ConvertOptions o;
  std::vector<std::string> positional;
  int rc = Parse(args, kConvertHelp, &o,
                 {Text({"-o", "--output"}, "a file name", &o.output), Flag({"--lines"}, &o.lines)},
                 &positional);
  if (rc < 0) rc = OneProfile(args, positional, &o);
  if (rc >= 0) return rc;
  if (o.output.empty()) return UsageError(args[0], "convert needs -o OUT");
  return Flushed(RunConvert(o, std::cout, std::cerr));
}

int FlameCommand(const std::vector<std::string>& args) {
  FlameCommandOptions o;
  std::vector<std::string> positional;
  size_t width = o.flame.width;
  int rc = Parse(args, kFlameHelp, &o,
                 {Text({"-o", "--output"}, "a file name", &o.output),
                  {{"--title"},
                   "a text",
                   [&o](const std::string& text) { return (o.flame.title = text), true; }},
                  Count({"--width"}, "a number of pixels from 100 to 100000", &width, 100, 100000),
                  {{"--minwidth"},
                   "a number of pixels from 0 to 1000",
                   [&o](const std::string& text) {
                     return ParseDecimal(text, &o.flame.min_width) && o.flame.min_width >= 0 &&
                            o.flame.min_width <= 1000;
                   }},
                  Flag({"--inverted"}, &o.flame.inverted),
                  Flag({"--lines"}, &o.flame.lines)},
                 &positional, /*flame=*/true);
  if (rc < 0) rc = OneProfile(args, positional, &o);
  if (rc >= 0) return rc;
  o.flame.width = static_cast<uint32_t>(width);
  // Megabytes of XML are no use on a terminal (and can leave it in a strange state).
  if (o.output.empty() && isatty(STDOUT_FILENO) == 1) {
    return UsageError(args[0], "flame writes an SVG: give -o FILE, or redirect it (inprof flame " +
                                   o.profile + " > flame.svg)");
  }
  return Flushed(RunFlame(o, std::cout, std::cerr));
}

// Commands with binutils-style or their own argument conventions.
int Addr2lineCommand(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return Addr2lineMain(static_cast<int>(args.size()), argv.data());
}
int SymbolizeCommand(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return SymbolizeMain(static_cast<int>(args.size()), argv.data());
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"top", "hottest source lines and hottest functions", TopCommand},
      {"annotate", "source files with self %, inclusive % and heat in a gutter", AnnotateCommand},
      {"heat", "heat levels per function and line (perf-heatmap `stat` style)", HeatCommand},
      {"callers", "who calls a function or a range of lines, with weights", CallersCommand},
      {"callees", "what a function or a range of lines calls, with weights", CallersCommand},
      {"diff", "what got hotter or colder between two profiles", DiffCommand},
      {"convert", "a profile in another format (folded, perf.log, JSON, speedscope, SVG, pprof)",
       ConvertCommand},
      {"flame", "interactive flame graph (SVG) from stacks (folded, perf.log, perf script)",
       FlameCommand},
      {"timeline", "sub-second heat map over time; pick a range to see its flame graph (HTML)",
       RunTimeline},
      {"addr2line", "binutils addr2line, faster (same options and output; perf can use it)",
       Addr2lineCommand},
      {"symbolize", "addresses of an ELF file to functions, lines and inline chains as JSON",
       SymbolizeCommand},
      {"record", "run a program under the profiler: inprof record -- COMMAND [ARGS...]", RunRecord},
      {"symbolize-profile", "raw profiles (*.inprofraw) into the outputs, later or elsewhere",
       RunSymbolizeProfile},
      {"hot", "keep the hits of grep/rg/git grep/... (on stdin) that are on hot lines", RunHot},
      {"grep", "regex search over the hot lines of the profiled sources", RunGrep},
      {"query", "heat of FILE:LINE or FILE:FIRST-LAST, for editors and scripts", RunQuery},
  };
  return commands;
}

const Command* FindCommand(std::string_view name) {
  for (const Command& command : Commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

}  // namespace inprof::viewer
