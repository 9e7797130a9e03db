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
#include <vector>

namespace inprof {

// Result of a control-path operation: ok, or a message a user can act on.
class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

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

struct Sample {
  std::vector<uint32_t> frames;  // root first; indices into Profile::frames
  std::vector<int64_t> weights;  // one per Profile::events entry
};

// What the profiler saw of its own quality. Every exporter that has room for it writes it.
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
  std::vector<std::string> warnings;
};

struct Metadata {
  std::string program;           // path of the profiled executable
  int64_t pid = 0;
  int64_t start_time_ns = 0;     // CLOCK_REALTIME at start
  int64_t duration_ns = 0;
};

struct Profile {
  Metadata meta;
  std::vector<EventInfo> events;
  std::vector<Frame> frames;
  std::vector<Sample> samples;
  Health health;
};

enum class Format {
  kFolded,   // *.folded: flame-graph folded stacks
  kPerfLog,  // perf.log / *.log: perfanno.nvim input
};

// The format a path asks for, from its name; nullopt when the name is not one we write.
std::optional<Format> FormatFromPath(std::string_view path);

struct ExportOptions {
  size_t event = 0;            // which of Profile::events the counts come from
  bool folded_lines = false;   // folded frames as "function (file:line)" instead of names
};

// Writers for one event of a profile. They never throw on well-formed profiles.
void WriteFolded(const Profile& profile, const ExportOptions& options, std::ostream& out);
void WritePerfLog(const Profile& profile, const ExportOptions& options, std::ostream& out);

// Writes `profile` to `path` in `format` atomically: a temporary file in the same directory,
// then rename(2). On failure nothing exists under `path` that was not there before and the
// message names the path and the reason. Not async-signal-safe.
Status WriteProfileFile(const Profile& profile, Format format, const std::string& path,
                        const ExportOptions& options = {});

// Writes `contents` to `path` atomically (temporary file + rename). Not async-signal-safe.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace inprof

#endif  // INPROF_EXPORTERS_H_
