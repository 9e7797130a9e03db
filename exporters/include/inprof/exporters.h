// The profile model and the file formats inprof writes.
//
// A Profile is what every exporter consumes: resolved frames (function, canonical file, line,
// inline flag) in one table, and samples that are root-first lists of indices into that
// table with one weight per event. The runtime (sdk/) builds it from raw stacks; the viewer
// reads files back into it. Nothing here knows about signals, threads or the process that
// was profiled, so every writer can be tested on hand-made profiles.
//
// Thread-safety: all functions are reentrant; a Profile is a plain value.
#ifndef INPROF_EXPORTERS_H_
#define INPROF_EXPORTERS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inprof/status.h"

namespace inprof {

enum class FrameKind : uint8_t {
  kNative,     // a real call frame of native code
  kInlined,    // a function inlined into the frame below it (same machine frame)
  kSynthetic,  // inserted by the profiler: "[truncated]", "[overflow]", "[unknown]"
};

struct Frame {
  std::string function;  // demangled name; "module+0xoff" when no symbol is known
  std::string file;      // canonical absolute source path; empty when unknown
  uint32_t line = 0;     // 0 when unknown
  uint32_t column = 0;   // 0 when unknown
  std::string module;    // path of the ELF object the address belongs to; empty if none
  uint64_t address = 0;  // absolute address looked up (pc, or return address - 1)
  FrameKind kind = FrameKind::kNative;

  bool has_source() const { return !file.empty() && line != 0; }
  bool operator==(const Frame&) const = default;
};

struct EventInfo {
  std::string name;          // "cpu"
  std::string unit;          // "nanoseconds", "count"
  uint64_t period = 0;       // weight units represented by one unit of sample weight
  double frequency_hz = 0;   // requested sampling frequency (0 when not time based)
  int64_t total_weight = 0;  // sum of weights over all samples for this event
};

// One key/value pair of context the program set on its thread (inprof_label_set).
struct Label {
  std::string key;
  std::string value;
  auto operator<=>(const Label&) const = default;
};

// Samples with the same stack, thread and labels are one Sample: their weights add up.
struct Sample {
  std::vector<uint32_t> frames;  // root first; indices into Profile::frames
  std::vector<int64_t> weights;  // one per Profile::events entry
  int64_t tid = 0;               // the thread it was taken on; 0 when not recorded
  uint32_t labels = 0;           // 0: no labels; else Profile::label_sets[labels - 1]
};

// When one signal's sample was taken: it added `weight` for `event` to Profile::samples[sample].
struct TimedSample {
  int64_t time_ns = 0;  // since the profile's start (Metadata::start_time_ns when known)
  uint32_t sample = 0;  // index into Profile::samples
  uint32_t event = 0;   // index into Profile::events
  int64_t weight = 0;
};

// A thread's name as the profile saw it (comm; the last one seen when it was renamed).
struct ThreadInfo {
  int64_t tid = 0;
  std::string name;
  bool operator==(const ThreadInfo&) const = default;
};

// What the profiler saw of its own quality. Every exporter that has room for it writes it.
// One sampled thread: what its CPU time promised at the requested rate, and what came.
struct ThreadHealth {
  int64_t tid = 0;
  std::string name;          // comm at the time the thread was seen
  double cpu_seconds = 0;    // the thread's CPU time while it was sampled
  double expected = 0;       // cpu_seconds x requested rate (the first event, when it is CPU time)
  uint64_t taken = 0;        // signals handled for the first event
  uint64_t weight = 0;       // their weight: taken + timer overruns
};

struct Health {
  std::string engine;         // "timer"
  std::string engine_reason;  // why this engine was chosen
  std::string unwinder;       // "fp"
  double requested_hz = 0;
  double achieved_hz = 0;        // signals delivered per CPU second of sampled threads
  uint64_t samples = 0;          // signals handled and recorded
  uint64_t dropped = 0;          // lost: ring full, re-entry, thread not ready
  uint64_t truncated = 0;        // stacks cut at the depth limit
  uint64_t broken = 0;           // walks that stopped at an invalid frame pointer
  uint64_t overflow = 0;         // samples charged to [overflow] because memory was full
  uint64_t threads_seen = 0;
  uint64_t unknown_frames = 0;   // frames in no known module
  uint64_t overruns = 0;         // timer expirations folded into the weight of later samples
  // Export cost of this dump, from the dump request (inprof_stop, exit, inprof_dump): time
  // to snapshot and symbolize the stacks, and time spent writing the outputs written before
  // this file (annotation JSON is written last, so it excludes only its own write). 0 when
  // unknown (older files, profiles not made by the SDK).
  double symbolize_seconds = 0;
  double write_seconds = 0;
  // The per-user symbol cache (docs/symbolizer.md, "Cache"): addresses of this dump answered
  // from it, and addresses looked up in it and not found there (resolved from the binary's
  // debug info, then added). Both 0 when no cache was used.
  uint64_t symbol_cache_hits = 0;
  uint64_t symbol_cache_misses = 0;
  std::vector<ThreadHealth> threads;  // sorted by tid
  std::vector<std::string> warnings;
};

struct Metadata {
  std::string program;           // path of the profiled executable
  int64_t pid = 0;
  int64_t start_time_ns = 0;     // CLOCK_REALTIME at start
  int64_t duration_ns = 0;
};

// An ELF object mapped into the profiled process, for formats that describe mappings (pprof).
struct Module {
  std::string path;      // as in Frame::module
  uint64_t start = 0;    // first and one-past-last address of its executable mapping
  uint64_t limit = 0;
  uint64_t offset = 0;   // file offset `start` maps
  std::string build_id;  // lower-case hex; empty when the object has none
};

struct Profile {
  Metadata meta;
  std::vector<EventInfo> events;
  std::vector<Frame> frames;
  std::vector<Sample> samples;
  Health health;
  std::vector<Module> modules;  // optional: frames whose module is not listed still export
  // Each distinct set of labels, sorted by key, keys unique; Sample::labels points here.
  std::vector<std::vector<Label>> label_sets;
  // Every sample in time order, when the source kept times (the SDK, perf script, speedscope);
  // empty otherwise. The weights of a Sample's timed samples add up to its weights.
  std::vector<TimedSample> timeline;
  std::vector<ThreadInfo> threads;  // names of the threads samples were taken on, by tid
};

enum class Format {
  kFolded,          // *.folded: flame-graph folded stacks
  kPerfLog,         // perf.log / *.log: perfanno.nvim input
  kAnnotationJson,  // *.json: per-line annotations for editors and the viewer
  kFlameSvg,        // *.svg: interactive flame graph (docs/flame-graphs.md)
  kPprof,           // *.pb.gz: gzipped profile.proto for `go tool pprof` (docs/pprof.md)
  kSpeedscope,      // *.speedscope.json: per-thread samples in time order (docs/speedscope.md)
  kRaw,             // *.inprofraw: unsymbolized addresses and module map (docs/raw-profile.md);
                    // written from a RawProfile (raw_profile.h), never from a Profile
};

// The format a path asks for, from its name; nullopt when the name is not one we write.
std::optional<Format> FormatFromPath(std::string_view path);

// Output lists (INPROF_OUTPUT, `output=` of a configuration string, inprof_dump) separate
// paths with ','. Within an item, `\,` is a comma, `\\` a backslash and `\xHH` the byte HH
// (any but 00); any other backslash is itself (docs/record.md, "Paths with commas").
//
// The position of the first ',' at or after `from` that separates items (not escaped), or
// npos.
size_t FindOutputListSeparator(std::string_view text, size_t from);
// One item (between separators) as the path it names; false for `\x00`.
bool UnescapeOutputListItem(std::string_view item, std::string* path);
// `path` as an item that UnescapeOutputListItem reads back as `path`: commas, backslashes,
// control characters and spaces at either end (an item is trimmed) escaped.
std::string EscapeOutputListItem(std::string_view path);

// `path` with ".part" inserted before its extension, as per-event, per-process and window
// files are named: out.folded -> out.cpu.folded; pprof's two-part extension stays whole
// (profile.cpu.pb.gz); a name without extension gets ".part" at its end.
std::string InsertBeforeExtension(const std::string& path, const std::string& part);

struct ExportOptions {
  size_t event = 0;            // which of Profile::events the counts come from
  bool folded_lines = false;   // folded frames as "function (file:line)" instead of names
  bool replace = true;         // false: fail (EEXIST) rather than replace an existing file
  int mode = -1;               // the file's permission bits (WriteFileAtomically); -1: umask's
  // Folded only: an extra root frame per stack: "" none, "thread" the thread's name (the tid
  // when it has none), "label:KEY" the value of label KEY ("[no KEY]" when unset).
  std::string folded_root;
};

// Writers for one event of a profile. They never throw on well-formed profiles.
void WriteFolded(const Profile& profile, const ExportOptions& options, std::ostream& out);
void WritePerfLog(const Profile& profile, const ExportOptions& options, std::ostream& out);

// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one "sampled"
// profile per thread, its samples in time order, frames with file and line; inprof's own
// fields (exact times, tids, labels) ride along where speedscope ignores them
// (docs/speedscope.md). Deterministic. Not async-signal-safe.
void WriteSpeedscope(const Profile& profile, const ExportOptions& options, std::ostream& out);
// Reads a speedscope file ("sampled" and "evented" profiles; inprof's fields when present)
// into a profile with a timeline: one event, samples per thread (profile), times from
// inprof's fields or else from the running sum of weights.
Status ReadSpeedscope(std::string_view text, const std::string& name, Profile* out);
bool LooksLikeSpeedscope(std::string_view text);

// Which samples a viewer command looks at. Empty fields select everything.
struct ProfileFilter {
  std::optional<int64_t> from_ns;  // timeline: samples at or after (ns since the start)
  std::optional<int64_t> to_ns;    // ... and before
  std::vector<std::string> threads;  // a thread's name or decimal tid; any of them
  std::vector<Label> labels;         // every one must be set on the sample
  bool empty() const { return !from_ns && !to_ns && threads.empty() && labels.empty(); }
};
// `in` restricted to `filter`: samples outside it are removed, weights and event totals are
// recomputed (from the timeline when a time range is given). Fails, naming the profile, when
// the filter needs what the profile lacks (a time range without a timeline).
Status FilterProfile(const Profile& in, const ProfileFilter& filter, Profile* out);

// Writes the annotation JSON (docs/annotation-json.md) of every event of `profile`, with heat
// levels at the default threshold. Deterministic: equal profiles give identical bytes.
void WriteAnnotationJson(const Profile& profile, std::ostream& out);

// Flame graphs: stacks merged into a tree, one box per (function, caller path), as wide as its
// inclusive weight, written as a self-contained interactive SVG (inline CSS and JavaScript:
// hover details, click to zoom, regex search with the matched share, icicle layout).
struct FlameOptions {
  size_t event = 0;                    // which of Profile::events the widths come from
  std::optional<size_t> before_event;  // diff only: the event of `before` (default: `event`)
  std::string title;                   // empty: "Flame Graph" ("Icicle Graph" when inverted)
  std::string subtitle;                // empty: the program, the event and its total
  uint32_t width = 1200;               // image width in pixels, 100..100000
  double min_width = 0.1;              // boxes narrower than this (pixels) are left out; their
                                       // weight stays in every ancestor's width and count
  bool inverted = false;               // icicle: the root at the top, callees below
  bool lines = false;                  // one box per source line: "function (file:line)"
  std::string count_name = "samples";  // what the counts are called in tooltips
};

// Writes the flame graph of one event of `profile` to `*out` (replacing its contents).
// Deterministic: equal profiles give identical bytes. Fails only on bad options (event out of
// range, width or min_width out of bounds). A profile without samples gives a valid SVG that
// says so. Not async-signal-safe.
Status WriteFlameSvg(const Profile& profile, const FlameOptions& options, std::string* out);

// Differential flame graph (after flamegraph.pl's difffolded.pl -n): boxes are laid out from
// `after`; each box is coloured by how its self weight changed, with `before` first scaled to
// `after`'s total: red where it got hotter, blue where it got colder, white where unchanged,
// saturated at the largest change. Tooltips add the change as a share of `after`'s total.
// Functions that vanished take no room (they have no width in `after`). Not async-signal-safe.
Status WriteDiffFlameSvg(const Profile& before, const Profile& after, const FlameOptions& options,
                         std::string* out);
// pprof's profile.proto of every event of `profile` (docs/pprof.md): EncodePprof gives the
// uncompressed message, WritePprof writes it gzipped; false when the stream or zlib fails.
// Deterministic: equal profiles give identical bytes. Not async-signal-safe.
std::string EncodePprof(const Profile& profile);
bool WritePprof(const Profile& profile, std::ostream& out);

// Writes `profile` to `path` in `format` atomically: a temporary file in the same directory,
// then rename(2). On failure nothing exists under `path` that was not there before and the
// message names the path and the reason. Not async-signal-safe.
Status WriteProfileFile(const Profile& profile, Format format, const std::string& path,
                        const ExportOptions& options = {});

// Writes `contents` to `path` atomically (temporary file + rename). The temporary file is
// created with O_EXCL | O_NOFOLLOW under a random name, so nothing planted in a shared
// directory (a symlink, another process's file) is followed or written through. With
// `replace` false an existing `path` is never replaced: the write fails with
// StatusCode::kAlreadyExists (renameat2 RENAME_NOREPLACE, or link(2) where the file system lacks
// it). With `durable` (the default) the file and its directory are synced before the call returns.
// `mode` -1 gives a new file's usual permissions (0666 less the umask); any other value gives
// exactly those permission bits whatever the umask (fchmod), and the temporary file is never
// readable by others before that (created 0600). Not async-signal-safe.
Status WriteFileAtomically(const std::string& path, std::string_view contents, bool replace = true,
                           bool durable = true, int mode = -1);

// ---------------------------------------------------------------------------------------------
// Annotations: a profile summarised per source line, the model behind the annotation JSON and
// the viewer. Every per-event vector has one entry per Annotations::events entry.

enum class HeatMethod { kShare, kPerfHeatmap };  // heat levels: see AssignHeat

// One line of one source file, aggregated over every function that has it.
struct LineStats {
  uint32_t line = 0;
  std::string function;            // the function that owns the line (most inclusive weight)
  bool inlined = false;            // seen in an inlined frame
  std::vector<int64_t> self;       // weight of samples whose innermost frame is this line
  std::vector<int64_t> inclusive;  // weight of samples with this line anywhere (once per stack)
  std::vector<uint8_t> local_heat;   // 0-5 among the lines of `function`
  std::vector<uint8_t> global_heat;  // 0-5 among all lines of the profile
};

struct FunctionStats {
  std::string name;
  std::string file;              // empty for functions without source information
  uint32_t first_line = 0;       // range of the lines sampled in it; 0 when unknown
  uint32_t last_line = 0;
  bool inlined = false;          // seen as an inlined frame at least once
  std::vector<int64_t> self;
  std::vector<int64_t> inclusive;  // once per stack, so recursion is not counted twice
};

struct FileStats {
  std::string path;
  std::vector<LineStats> lines;          // sorted by line
  std::vector<FunctionStats> functions;  // sorted by first line, then name
};

struct LineRef {
  uint32_t file = 0;  // index into Annotations::files
  uint32_t line = 0;
  auto operator<=>(const LineRef&) const = default;
};

// The caller's line called (or inlined) the callee's line in at least one stack.
struct CallEdge {
  LineRef caller;
  LineRef callee;
  bool inlined = false;          // the callee frame is inlined into the caller's machine frame
  std::vector<int64_t> weight;   // once per stack
};

// The weight of the samples that carried label key=value, per event.
struct LabelTotal {
  std::string key;
  std::string value;
  std::vector<int64_t> weight;
  auto operator<=>(const LabelTotal&) const = default;
};

struct Annotations {
  Metadata meta;
  std::vector<EventInfo> events;
  Health health;
  HeatMethod heat_method = HeatMethod::kShare;
  double heat_threshold = 0.5;                        // perf-heatmap only
  std::vector<FileStats> files;                       // sorted by path
  std::vector<FunctionStats> functions_without_source;  // sorted by name
  std::vector<CallEdge> edges;                        // sorted by caller, then callee
  std::vector<LabelTotal> labels;                     // sorted by key, then value
};

// Heat levels 0-5 (docs/heat.md). kShare, the default: levels follow each line's heat weight
// (its self weight plus what it passes on to callees, the latter capped at a tenth of the
// hottest line's self weight). The line with the most self weight is level 5, and each level
// below holds half as much: 4 from half its heat weight, 3 from a quarter, 2 from an eighth,
// 1 below that; lines under the floor (1 % of the event total, which 1 % self or 1 %
// inclusive reach; a tenth of the hottest line's self weight when that is less) are 0. So a
// line that only passes time on is at most level 1.
// Monotonic: a line never has a lower level than one with less heat weight, and more self or
// more inclusive weight never lowers a line's heat weight. kPerfHeatmap: perf-heatmap's rank
// chunking by inclusive weight at a threshold, as gogrep shows it.
//
// "share" / "perf-heatmap".
const char* HeatMethodName(HeatMethod method);
bool ParseHeatMethod(std::string_view name, HeatMethod* method);

// What the share method measures a line against, per event: the event's total weight and the
// largest self weight of any line in the profile.
struct HeatScale {
  int64_t total = 0;
  int64_t max_self = 0;
};
// Share-method global levels of the profile's lines (level 5 goes to the line with the most
// self weight), one per line in input order.
std::vector<uint8_t> ShareHeatLevels(const std::vector<int64_t>& self,
                                     const std::vector<int64_t>& inclusive,
                                     const HeatScale& scale);
// Share-method local levels of one function's lines: where the function's time goes, callees
// included, so they follow inclusive weight (level 5 for the function's line with the most,
// one level down per halving); a line under the global floor is 0 here too.
std::vector<uint8_t> ShareLocalHeatLevels(const std::vector<int64_t>& self,
                                          const std::vector<int64_t>& inclusive,
                                          const HeatScale& scale);

// perf-heatmap's levels. `values[i]` is the inclusive weight of the point on source line
// `lines[i]`; returns one level (0-5) per point, in input order. Points are ranked by value
// descending, then line descending; the top max(1, floor(n * threshold)) are cut into five
// chunks by perf-heatmap's forChunks (levels 5..1; 7 points give chunks of 1, 1, 2, 1, 2), the
// rest get 0. Points with a zero value are not ranked and get 0. Not async-signal-safe.
std::vector<uint8_t> PerfHeatmapLevels(const std::vector<int64_t>& values,
                                       const std::vector<uint32_t>& lines,
                                       double threshold = 0.5);

// The weight 100 % stands for: the event's total, or the sum of self weights if unknown.
int64_t EventTotal(const Annotations& annotations, size_t event);

// Recomputes every line's local and global heat levels with `method` (`threshold`, in (0, 1],
// is the share of lines perf-heatmap ranks; the share method has no threshold).
void AssignHeat(Annotations& annotations, HeatMethod method, double threshold = 0.5);

// Summarises `profile` per line, function and call edge, with share-method heat levels.
Annotations BuildAnnotations(const Profile& profile);

void WriteAnnotationJson(const Annotations& annotations, std::ostream& out);

// Hottest lines of an event: (file index, line index) pairs ordered by weight (self, or
// inclusive with `by_inclusive`) descending, then the other weight descending, then path and
// line ascending; lines with zero weight are left out. At most `limit` entries.
std::vector<std::pair<uint32_t, uint32_t>> HottestLines(const Annotations& annotations,
                                                        size_t event, bool by_inclusive,
                                                        size_t limit);
// Hottest functions of an event, ordered like HottestLines (then by name).
std::vector<const FunctionStats*> HottestFunctions(const Annotations& annotations, size_t event,
                                                   bool by_inclusive, size_t limit);

// Readers. `name` is used in error messages, which read "NAME:LINE: what was expected".
Status ReadAnnotationJson(std::string_view text, const std::string& name, Annotations* out);
// Folded stacks ("a;b;c 12", frames optionally "function (file:line)", "_[i]" marks inlined)
// into a one-event profile ("samples").
Status ReadFolded(std::string_view text, const std::string& name, Profile* out);
// perf.log as perfanno.nvim reads it (each frame "symbol /path:line") into a one-event profile.
Status ReadPerfLog(std::string_view text, const std::string& name, Profile* out);
// `perf script` output (default fields, or any -F set with time and event; `-F +srcline`
// lines and `--inline` frames understood) into a profile with one event per perf event
// name. Weight is the period when printed, else 1 per sample. Identical stacks are merged.
Status ReadPerfScript(std::string_view text, const std::string& name, Profile* out);
// `perf report --no-children -g folded,0,caller,srcline,count --stdio` output: one event
// per "# Samples: N of event 'E'" section, weights in samples.
Status ReadPerfReport(std::string_view text, const std::string& name, Profile* out);
// pprof's profile.proto, gzipped (as pprof files are) or not, as inprof and Go write it:
// one event per sample type, values in the type's unit, the default sample type first
// (pprof's rule: the one default_sample_type names, else the last); Lines become frames
// with their inline chain, "thread id"/"thread name" labels the sample's thread, other
// labels Labels. A gzipped input that decompresses to more than `max_bytes` is refused.
// Errors read "NAME: pprof: what is wrong" (docs/pprof.md, "Reading pprof").
Status ReadPprof(std::string_view bytes, const std::string& name, Profile* out,
                 uint64_t max_bytes = uint64_t{1} << 32);
// A gzip stream (the magic bytes 1f 8b), or bytes that frame as an uncompressed
// profile.proto message with its string table.
bool LooksLikePprof(std::string_view bytes);
bool IsGzip(std::string_view bytes);
// Decompresses a gzip (or zlib) stream, at most `max_bytes` of output; errors name `name`.
Status Gunzip(std::string_view gz, const std::string& name, uint64_t max_bytes, std::string* out);
// Content sniffing for the readers above (the first non-comment line, the comment header).
bool LooksLikePerfScript(std::string_view text);
bool LooksLikePerfReport(std::string_view text);

}  // namespace inprof

#endif  // INPROF_EXPORTERS_H_
