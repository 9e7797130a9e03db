// The profile model: what every exporter writes, every reader fills and every view computes on.
//
// A Profile holds resolved frames (function, canonical file, line, inline flag) in one table,
// and samples that are root-first lists of indices into that table with one weight per event.
// The runtime (sdk/) builds it from raw stacks; the viewer reads files back into it. Nothing
// here knows about signals, threads or the process that was profiled, nor about any file
// format (exporters/ holds those), so everything that computes on a profile can be tested on
// hand-made ones.
//
// Thread-safety: a Profile is a plain value.
#ifndef INPROF_PROFILE_H_
#define INPROF_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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


// A frame the profiler inserted ("[truncated]", a process's root name, ...).
inline Frame SyntheticFrame(std::string name) {
  Frame f;
  f.function = std::move(name);
  f.kind = FrameKind::kSynthetic;
  return f;
}

// A hash agreeing with Frame::operator==, for tables keyed by frame (equal frames, one index).
struct FrameHash {
  size_t operator()(const Frame& f) const;
};

// Puts a timeline in time order. The model keeps timelines in time order; a producer that
// drained threads one after another may not have. Stable, so samples at the same time keep
// their order.
void SortTimeline(std::vector<TimedSample>* timeline);

}  // namespace inprof

#endif  // INPROF_PROFILE_H_
