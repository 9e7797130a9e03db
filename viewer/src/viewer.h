// The viewer's subcommands and what they share. commands.cpp parses each command's line into
// its options struct, loads the profile and calls one Run* function.
#ifndef INPROF_VIEWER_VIEWER_H_
#define INPROF_VIEWER_VIEWER_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli.h"
#include "inprof/annotations.h"
#include "inprof/flame.h"
#include "inprof/profile_filter.h"

namespace inprof::viewer {

// What every command that reads one profile shares (the common options of commands.cpp).
struct ProfileOptions {
  std::string profile;                                    // the file to read
  std::string event;                                      // name; empty: the first event
  std::vector<std::pair<std::string, std::string>> maps;  // --map OLD=NEW source prefixes
  bool json = false;
  bool absolute = false;  // weights instead of percentages
  bool color = false;     // ANSI colours (a terminal, and NO_COLOR unset)
  bool progress = true;   // --no-progress turns the load progress off
  ProfileFilter filter;   // --from, --to, --thread, --label: the samples looked at; --hide
  // Set once the profile is loaded: how its kind of input gets source lines, for commands
  // that find none ("folded stacks need frames written as 'function (file:line)'").
  std::string no_lines_hint;
};

// How to recompute heat levels before showing them (heat, annotate); nothing set keeps the
// profile's own.
struct HeatChoice {
  std::optional<HeatMethod> method;
  double threshold = 0;  // perf-heatmap's threshold; setting it implies that method
};

struct TopOptions : ProfileOptions {
  size_t limit = 10;        // entries per list
  bool inclusive = false;   // rank by inclusive weight
  bool full_names = false;  // function names as they are, unshortened
  std::string by_label;     // --by-label KEY: totals per value of KEY instead
};

struct AnnotateOptions : ProfileOptions {
  std::vector<std::string> sources;  // files to show; none: the files with most self weight
  bool all = false;                  // whole files
  size_t limit = 1;                  // files to show when none are named
  uint32_t context = 2;              // lines around hot regions
  std::string function;              // only functions whose name contains this
  std::string root;                  // --root: sources are read only from this tree
  HeatChoice heat;
};

struct HeatOptions : ProfileOptions {
  HeatChoice heat;
};

struct CallersOptions : ProfileOptions {
  std::string target;    // function, =NAME, FILE:LINE or FILE:START-END
  bool callees = false;  // callees instead of callers
  bool lines = false;    // one row per line of the other side
  size_t limit = 20;     // rows
  bool full_names = false;
};

struct DiffOptions : ProfileOptions {
  std::string other;       // the second profile (`profile` is the first)
  size_t limit = 10;       // entries per list
  bool inclusive = false;  // sort by the change in inclusive weight
  bool flame = false;      // write a differential flame graph to `output`
  std::string output;
  FlameOptions flame_options;
};

struct ConvertOptions : ProfileOptions {
  std::string output;  // -o OUT; its name says the format
  bool lines = false;  // folded frames as "function (file:line)"
};

struct FlameCommandOptions : ProfileOptions {
  std::string output;  // empty: standard output
  FlameOptions flame;  // title, width, min width, inverted, lines
};

enum class InputKind {
  kAnnotationJson,
  kFolded,
  kPerfLog,
  kPerfScript,
  kPerfReport,
  kSpeedscope,
  kPprof,   // gzipped or plain profile.proto
  kRaw,     // *.inprofraw: recognised and refused (symbolize-profile reads it)
  kElf,     // a program or library given by mistake: refused
  kBinary,  // NUL bytes and none of the above: refused
};

// What a file holds, from its content: an ELF file, a raw profile or pprof (by their magic
// bytes; pprof also uncompressed, by its framing), a speedscope profile (JSON with speedscope's
// schema URL), annotation JSON (other JSON: starts with '{'), perf report --stdio output (a
// "# Samples: N of event 'E'" header), perf script output (the first line is a sample header
// with a "TIME:" field), binary data (a NUL byte), perf.log (a name ending in .log) or
// folded stacks.
InputKind DetectInput(const std::string& path, std::string_view text);
// "folded stacks", "perf script output", ...: what a user calls the input.
const char* InputKindName(InputKind kind);
// How an input of `kind` gets file:line frames, for a profile that has none.
const char* NoLinesHint(InputKind kind);

// A loaded profile: always its annotations; its stacks too unless it was annotation JSON.
struct Input {
  InputKind kind = InputKind::kFolded;
  bool has_stacks = false;
  Profile profile;
  Annotations annotations;
};

// Reads `path` (any kind DetectInput knows). Errors read "PATH:LINE: what was expected".
// With `progress`, a long load shows its progress on stderr (progress.h). Without
// `annotate`, stacks are not summarised into `annotations` (annotation JSON still is read).
// A non-empty `filter` keeps only the samples it selects (FilterProfile) before anything is
// summarised; an input that cannot answer it (no times, threads or labels; annotation JSON)
// is an error that names the inputs that can, and so is a selection with no sample in it.
Status LoadInput(const std::string& path, bool progress, Input* out, bool annotate = true,
                 const ProfileFilter& filter = {});
Status LoadAnnotations(const std::string& path, Annotations* out, bool progress = false,
                       const ProfileFilter& filter = {});

// Reads `path` as stacks (folded, perf.log, perf script, perf report, speedscope). Annotation
// JSON has no stacks and is refused with a message that says so.
Status LoadStacks(const std::string& path, Profile* out, bool progress = false,
                  const ProfileFilter& filter = {});

// --from T, --to T, --thread NAME|TID, --label KEY=VALUE and --hide REGEX into `filter`, for
// every command that reads a profile. CheckFilter: "" or the usage error of a range that is
// empty or of a --hide that is not a regular expression.
std::vector<OptionSpec> FilterOptionSpecs(ProfileFilter* filter);
std::string CheckFilter(const ProfileFilter& filter);
// The filter as the options that ask for it ("--from 1.3 --to 1.6 --thread worker"), each
// value quoted for a shell where it needs it; empty for an empty filter.
std::string FilterArguments(const ProfileFilter& filter);
// `text` quoted for a POSIX shell when it needs it ('it'\''s'); as it is otherwise.
std::string ShellQuote(const std::string& text);
// The filter in words for a subtitle: "1.3-1.6 s, thread worker, phase=run, hiding ^std::";
// empty when empty.
std::string FilterSummary(const ProfileFilter& filter);

// Rewrites source paths that start with a map's OLD prefix to NEW (first match wins).
void RemapPaths(const std::vector<std::pair<std::string, std::string>>& maps, Annotations& a);

// Index of the event named `name` (empty: 0); kNotFound with a message when there is none.
StatusOr<size_t> FindEvent(const Annotations& a, const std::string& name);

// What an event's weights count, the one rule every command follows (docs/viewer.md,
// "Units"): "samples" when each weight stands for a period of the event's unit (CPU time
// sampled every 10.1 ms: 154 is 154 samples, not 154 nanoseconds), else the unit itself
// ("nanoseconds" from perf script, "count", "bytes").
std::string WeightUnit(const EventInfo& event);
// "event cpu (samples of 10.1 ms), total 154 (1.56 s)", "event cpu-clock (nanoseconds), total
// 50251250 (50.3 ms)", "event samples (count), total 89": the event, what its weights count
// and, for time, the total as a time.
std::string EventHeading(const EventInfo& event, int64_t total);
// "10.1 ms", "1.56 s", "250 ns": three significant digits.
std::string FormatDuration(double ns);
// "12.34%" or "1234" (right-aligned to `width`); empty weights print as blanks.
std::string FormatWeight(int64_t weight, int64_t total, bool absolute, int width);
// JSON value of a weight: an integer, or a percentage with two decimals.
std::string JsonWeight(int64_t weight, int64_t total, bool absolute);
std::string JsonString(const std::string& text);
// `text` with control characters shown as "\n", "\t" or "\xNN", for terminal output.
std::string Printable(const std::string& text);
// ANSI colour for a heat level (0-5), and the reset sequence; empty when colour is off.
const char* HeatColor(int level, bool color);
const char* ResetColor(bool color);

// --heat METHOD and --threshold T, for the commands that show levels.
std::vector<OptionSpec> HeatOptionSpecs(HeatChoice* heat);
// Recomputes `a`'s heat levels as `heat` asks (a threshold implies perf-heatmap); nothing asked
// keeps the profile's own levels.
void ApplyHeat(const HeatChoice& heat, Annotations& a);

int64_t WeightAt(const std::vector<int64_t>& weights, size_t event);
int LevelAt(const std::vector<uint8_t>& levels, size_t event);

// Subcommands. They print to `out`, warnings to `err`, and return the exit code.
int RunTop(const TopOptions& options, const Annotations& a, size_t event, std::ostream& out);
int RunAnnotate(const AnnotateOptions& options, const Annotations& a, size_t event,
                std::ostream& out, std::ostream& err);
int RunHeat(const HeatOptions& options, Annotations& a, size_t event, std::ostream& out);
// callers (options.callees false) or callees of options.target. `stacks` (null for annotation
// JSON) answers for functions that have no source lines.
int RunCallers(const CallersOptions& options, const Annotations& a, const Profile* stacks,
               size_t event, std::ostream& out, std::ostream& err);
// diff and convert load their own inputs (two profiles; stacks).
int RunDiff(const DiffOptions& options, std::ostream& out, std::ostream& err);
int RunConvert(const ConvertOptions& options, std::ostream& out, std::ostream& err);
// Loads options.profile itself (it needs stacks, not annotations).
int RunFlame(const FlameCommandOptions& options, std::ostream& out, std::ostream& err);
// The subtitle `inprof flame` gives a graph by default ("w - cpu-clock - 1,234 samples"), as
// the exporters' writer makes it, for graphs that add to it (a range, a thread).
std::string FlameSubtitle(const Profile& profile, const FlameOptions& options);
// "1,234,567".
std::string GroupedNumber(uint64_t value);
// `inprof top --by-label KEY`: the event's total per value of the label KEY. `stacks` (null for
// annotation JSON) is where labels come from; annotation JSON answers from its label totals.
int RunTopByLabel(const TopOptions& options, const Annotations& a, const Profile* stacks,
                  size_t event, std::ostream& out, std::ostream& err);
// `inprof timeline PROFILE -o OUT.html|OUT.svg`: the sub-second heat map (timeline.cpp).
int RunTimeline(const std::vector<std::string>& args);
// `inprof record ... -- COMMAND`: `args` from "record" on; returns inprof's exit code.
int RunRecord(const std::vector<std::string>& args);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_VIEWER_H_
