// Pieces shared by the text stack formats (folded, perf.log): sample weights, text clean-up,
// and merging of rendered stacks into sorted "stack count" lines.
#ifndef INPROF_EXPORTERS_INTERNAL_STACKS_H_
#define INPROF_EXPORTERS_INTERNAL_STACKS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>

#include "inprof/exporters.h"

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

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_INTERNAL_STACKS_H_
