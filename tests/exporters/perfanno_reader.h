// A perf.log reader that follows perfanno.nvim's own parsing (:PerfLoadFlameGraph), for tests.
//
// perfanno reads the file line by line. The count is `line:match("(%d+)$")`; the frames are
// `line:gmatch(";?(.-:%d+)")` -- the shortest text ending in ":<digits>", the line is NOT
// split on ';' -- and each frame is then matched as "^(.-)%s*(/.+):(%d+)$" (symbol optional,
// absolute path, line). This reader finds frames and counts exactly the way those patterns
// do, so a test sees what the plugin would see, and it fails where the plugin would break or
// silently mis-read (docs/formats.md, "perf.log for perfanno.nvim"):
//   - CR, blank lines, trailing spaces, comments or any line not ending in digits (a Lua
//     error in the plugin, nothing loads);
//   - anything but one space between the last frame and the count;
//   - a frame that is not "symbol /abs/path:line" or "/abs/path:line" (a frame without a
//     location, glued onto the next one, shows up here as a symbol containing ';');
//   - symbols with leading spaces (kept by perfanno's pattern) or with no space before the
//     path; stacks without frames; zero counts; a missing final newline.
#ifndef INPROF_TESTS_EXPORTERS_PERFANNO_READER_H_
#define INPROF_TESTS_EXPORTERS_PERFANNO_READER_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::test {

struct PerfannoFrame {
  std::string symbol;  // empty when the frame is a bare "/path:line"
  std::string path;
  uint64_t line = 0;
  bool operator==(const PerfannoFrame&) const = default;
};

struct PerfannoStack {
  std::vector<PerfannoFrame> frames;  // root first, as written
  uint64_t count = 0;
  bool operator==(const PerfannoStack&) const = default;
};

struct PerfannoLog {
  std::vector<PerfannoStack> stacks;  // in file order
  std::string error;                  // empty when the whole text parsed; else "line N: what"
  bool ok() const { return error.empty(); }
};

// Parses perf.log text. On the first problem, stops and sets `error` (stacks parsed so far
// are kept).
PerfannoLog ParsePerfannoLog(std::string_view text);

// Reads and parses a file; a read failure is reported in `error`.
PerfannoLog ReadPerfannoLog(const std::string& path);

// For readable gtest failures.
std::ostream& operator<<(std::ostream& out, const PerfannoFrame& frame);
std::ostream& operator<<(std::ostream& out, const PerfannoStack& stack);

}  // namespace inprof::test

#endif  // INPROF_TESTS_EXPORTERS_PERFANNO_READER_H_
