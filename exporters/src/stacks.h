// Pieces shared by the text stack formats (folded, perf.log): sample weights, text clean-up,
// and merging of rendered stacks into sorted "stack count" lines.
#ifndef INPROF_EXPORTERS_STACKS_H_
#define INPROF_EXPORTERS_STACKS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/profile.h"

namespace inprof::internal {

// The weight `sample` carries for event `event`; 0 when it has none or a negative one, so
// callers can skip it. Not async-signal-safe.
uint64_t SampleWeight(const Sample& sample, size_t event);

// Replaces ASCII control characters (newline, CR, tab, ... and DEL) with spaces: a newline
// would end the line early and a CR makes perfanno's count pattern fail on the whole file.
// Not async-signal-safe.
void ReplaceControlChars(std::string& text);

// Removes leading and trailing spaces. Not async-signal-safe.
void TrimSpaces(std::string& text);

// Sums weights of identical rendered stacks and writes them as "stack count\n" lines, sorted
// bytewise by stack so equal profiles give identical files. The stack text must already be
// clean (no newline). Not async-signal-safe.
class StackMerger {
 public:
  void Add(std::string stack, uint64_t weight);
  void WriteSorted(std::ostream& out) const;

 private:
  std::unordered_map<std::string, uint64_t> counts_;
};

// Builds a one-event profile from stacks read back from a text format: frames are interned
// by their text, weights summed into the event's total. Not async-signal-safe.
class ProfileAssembler {
 public:
  explicit ProfileAssembler(std::string event_name = "samples", std::string unit = "count");
  // The index of the frame read as `key` (its text in the file); `make` builds it on first use.
  template <typename Make>
  uint32_t Intern(std::string_view key, Make make) {
    auto [it, added] = frames_.try_emplace(std::string(key), 0);
    if (added) {
      it->second = static_cast<uint32_t>(profile_.frames.size());
      profile_.frames.push_back(make());
    }
    return it->second;
  }
  void AddSample(std::vector<uint32_t> frames, int64_t weight);
  // Room for `count` samples in all, so that a reader that can guess the count early does
  // not grow the samples by copies (each touching twice the memory, page by page).
  void ReserveSamples(size_t count) { profile_.samples.reserve(count); }
  Profile Finish() { return std::move(profile_); }

 private:
  Profile profile_;
  std::unordered_map<std::string, uint32_t> frames_;
};

// Calls `line(text, number)` for each line of `text` (1-based numbers, without the '\n');
// stops early and returns false when `line` does. Not async-signal-safe.
template <typename Line>
bool ForEachLine(std::string_view text, Line line) {
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view current = text.substr(0, end);
    ++number;
    if (!line(current, number)) return false;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return true;
}

// Parses a non-negative decimal count; false when `text` is not one. Not async-signal-safe.
bool ParseCount(std::string_view text, int64_t* count);

// Splits a frame "name (file:line)" (folded stacks' form with line numbers) into its parts:
// false when `text` does not end in " (FILE:LINE)" with a non-empty FILE and a LINE from 1 to
// 2^32-1. `function` is what comes before, untrimmed.
bool SplitFrameLocation(std::string_view text, std::string_view* function, std::string_view* file,
                        uint32_t* line);

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_STACKS_H_
