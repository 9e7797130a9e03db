// Heat levels 0-5 of source lines (docs/heat.md): the share method and perf-heatmap's.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_HEAT_H_
#define INPROF_HEAT_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace inprof {

enum class HeatMethod { kShare, kPerfHeatmap };  // heat levels: see AssignHeat (annotations.h)

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

}  // namespace inprof

#endif  // INPROF_HEAT_H_
