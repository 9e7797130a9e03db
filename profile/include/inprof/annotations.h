// Annotations: a profile summarised per source line, function and call edge, the model behind
// the annotation JSON and the viewer. Every per-event vector has one entry per
// Annotations::events entry.
//
// Thread-safety: an Annotations is a plain value; the functions are reentrant.
#ifndef INPROF_ANNOTATIONS_H_
#define INPROF_ANNOTATIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inprof/heat.h"
#include "inprof/profile.h"

namespace inprof {

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

// The weight 100 % stands for: the event's total, or the sum of self weights if unknown.
int64_t EventTotal(const Annotations& annotations, size_t event);

// Recomputes every line's local and global heat levels with `method` (`threshold`, in (0, 1],
// is the share of lines perf-heatmap ranks; the share method has no threshold).
void AssignHeat(Annotations& annotations, HeatMethod method, double threshold = 0.5);

// Summarises `profile` per line, function and call edge, with share-method heat levels.
Annotations BuildAnnotations(const Profile& profile);

// Hottest lines of an event: (file index, line index) pairs ordered by weight (self, or
// inclusive with `by_inclusive`) descending, then the other weight descending, then path and
// line ascending; lines with zero weight are left out. At most `limit` entries.
std::vector<std::pair<uint32_t, uint32_t>> HottestLines(const Annotations& annotations,
                                                        size_t event, bool by_inclusive,
                                                        size_t limit);
// Hottest functions of an event, ordered like HottestLines (then by name).
std::vector<const FunctionStats*> HottestFunctions(const Annotations& annotations, size_t event,
                                                   bool by_inclusive, size_t limit);

}  // namespace inprof

#endif  // INPROF_ANNOTATIONS_H_
