// The raw profile: what a process sampled, before symbolization (docs/raw-profile.md).
//
// Addresses, the module map that places them (paths, load biases, segments with file
// offsets, build-ids), per-thread stacks and weights, thread names, events and health. A
// process inside `inprof record` writes one at exit instead of symbolizing; the recorder (or
// `inprof symbolize-profile`, later or on another machine) symbolizes each binary once for all
// of them. The file is line-oriented text (`inprof-raw 1`, or `inprof-raw 2` when it holds
// labels or times, first; `end` last), written atomically; a file without its `end` line is a process that started sampling and never
// finished writing (killed), and reads back with `complete == false`.
//
// Thread-safety: plain values and reentrant functions.
#ifndef INPROF_RAW_PROFILE_H_
#define INPROF_RAW_PROFILE_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Values in RawStack::addresses that are not code addresses (no user-space code lives there
// on x86-64 or aarch64, whose user address spaces are 48-bit).
inline constexpr uint64_t kRawTruncated = 1;  // the stack went on past the depth limit
inline constexpr uint64_t kRawOverflow = 2;   // charged to [overflow]: the stack table was full
inline constexpr uint64_t kRawThreadTag = uint64_t{0xfffe} << 48;  // | tid: the thread (root)
inline constexpr uint64_t kRawLuaTag = uint64_t{0xfffd} << 48;     // | index into lua_frames
// | (1 + index into RawProfile::label_sets): the labels the thread had set (at the root end,
// beside the thread tag). A stack without labels has no such tag.
inline constexpr uint64_t kRawLabelsTag = uint64_t{0xfffc} << 48;
inline constexpr uint64_t kRawTagMask = uint64_t{0xffff} << 48;

struct RawSegment {
  uint64_t begin = 0;  // absolute addresses in the recorded process, [begin, end)
  uint64_t end = 0;
  uint64_t file_offset = 0;  // p_offset of the PT_LOAD segment
  bool executable = false;
};

struct RawModule {
  enum class Kind : uint8_t { kMainExecutable, kSharedObject, kVdso };
  Kind kind = Kind::kSharedObject;
  std::string path;      // canonical path in the recorded process ("[vdso]" for the vDSO)
  uint64_t bias = 0;     // load bias: absolute address = bias + ELF vaddr
  std::string build_id;  // lower-case hex; empty when the object has none
  std::vector<RawSegment> segments;
};

struct RawStack {
  std::vector<uint64_t> addresses;  // leaf first, return addresses already minus one; tags above
  std::vector<int64_t> weights;     // one per RawProfile::events entry
};

struct RawThread {
  int64_t tid = 0;
  std::string name;
};

struct RawProfile {
  Metadata meta;                  // program, pid, start, duration
  int64_t ppid = 0;
  std::string comm;               // the process's command name (/proc/PID/comm)
  std::vector<EventInfo> events;  // total_weight filled
  Health health;                  // as the process saw it; symbolize_seconds 0
  std::vector<RawModule> modules;
  std::vector<Frame> lua_frames;  // resolved in the process (Lua frames have no module)
  std::vector<RawThread> threads;
  std::vector<RawStack> stacks;
  std::vector<std::vector<Label>> label_sets;  // each sorted by key, keys unique
  // Every sample in time order (when the process kept times): TimedSample::sample indexes
  // `stacks`; time_ns counts from meta.start_time_ns.
  std::vector<TimedSample> timeline;
  bool complete = true;  // false: read from a file that ends before its `end` line
};

// Writes `profile` in the raw format. Never fails on a well-formed profile.
void WriteRawProfile(const RawProfile& profile, std::ostream& out);

// Reads a raw profile. A file cut short (no `end` line) is not an error: `complete` is
// false and everything before the cut that parses is kept. Malformed lines are errors that
// name `source` and the line number.
Status ReadRawProfile(std::istream& in, const std::string& source, RawProfile* profile);

}  // namespace inprof

#endif  // INPROF_RAW_PROFILE_H_
