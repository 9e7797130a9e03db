// Heat levels (docs/heat.md). Two methods:
//
// - "share" (the default): a line's level follows its share of the time, so levels are
//   monotonic in one documented weight and the lines where the time is spent are the hottest.
// - "perf-heatmap": perf-heatmap's rank chunking (github.com/quasilyte/perf-heatmap, used by
//   gogrep and its VS Code extension), reproduced exactly so that levels agree with its `stat`
//   output on the same data. Ranking by inclusive weight lets the call chain of a small
//   profile (`main`, a driver: every frame at 100 % inclusive) fill the top of the ranking and
//   push the lines that hold the self time to level 0, which is why it is not the default.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "inprof/annotations.h"

namespace inprof {
namespace {

// perf-heatmap's forChunks(len, n): calls `take(size, chunk)` for consecutive chunks whose
// sizes spread `len` items over `n` chunks, smaller chunks first; with len < n some chunk
// numbers get no call at all but the numbering still advances only on non-empty chunks.
template <typename Take>
void ForChunks(size_t len, size_t n, Take take) {
  size_t acc = 0, prev = 0, chunk = 0;
  while (prev < len) {
    acc += len;
    const size_t size = acc / n;
    if (size > 0) {
      take(prev, size, chunk);
      ++chunk;
      prev += size;
      acc %= n;
    }
  }
}

constexpr size_t kLevels = 5;

int64_t At(const std::vector<int64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; }

// Share method: a line's heat weight is its self weight plus the weight it passes on to callees,
// the latter capped at a tenth of the hottest line's self weight. So passing time on never
// lifts a line above level 1 (which ends at an eighth), and a line's own time always counts in
// full. Computed ten times over, so that the cap is exact in integers.
__int128 HeatWeight10(int64_t self, int64_t inclusive, const HeatScale& scale) {
  self = std::max<int64_t>(self, 0);
  const __int128 passed10 = static_cast<__int128>(std::max<int64_t>(inclusive - self, 0)) * 10;
  const __int128 cap10 = scale.max_self > 0 ? scale.max_self : passed10;
  return static_cast<__int128>(self) * 10 + std::min(passed10, cap10);
}

// A line is cold below 1 % of the event total (which 1 % self or 1 % inclusive reach), or
// below a tenth of the hottest line's self weight when that is less (a flat profile, where
// what a line passes on is capped under 1 %).
bool AboveFloor(__int128 weight10, const HeatScale& scale) {
  if (weight10 <= 0) return false;
  return weight10 * 10 >= scale.total || (scale.max_self > 0 && weight10 >= scale.max_self);
}

// Level 5 at the reference's weight or more, then one level down per halving: 4 from a half,
// 3 from a quarter, 2 from an eighth, 1 below (above the floor).
uint8_t LevelOf(__int128 weight, __int128 reference) {
  uint8_t level = kLevels;
  for (__int128 w = weight; level > 1 && w < reference; w *= 2) --level;
  return level;
}

}  // namespace

const char* HeatMethodName(HeatMethod method) {
  return method == HeatMethod::kPerfHeatmap ? "perf-heatmap" : "share";
}

bool ParseHeatMethod(std::string_view name, HeatMethod* method) {
  if (name == "share") {
    *method = HeatMethod::kShare;
  } else if (name == "perf-heatmap") {
    *method = HeatMethod::kPerfHeatmap;
  } else {
    return false;
  }
  return true;
}

std::vector<uint8_t> ShareHeatLevels(const std::vector<int64_t>& self,
                                     const std::vector<int64_t>& inclusive,
                                     const HeatScale& scale) {
  const size_t n = self.size();
  std::vector<uint8_t> levels(n, 0);
  std::vector<__int128> weight(n);
  // The reference (level 5) is the heat weight of the line with the most self weight (of these
  // lines; ties: the larger heat weight); when none has self weight, the largest heat weight.
  size_t hottest = n;
  __int128 largest = 0;
  for (size_t i = 0; i < n; ++i) {
    weight[i] = HeatWeight10(self[i], At(inclusive, i), scale);
    largest = std::max(largest, weight[i]);
    if (self[i] > 0 && (hottest == n || self[i] > self[hottest] ||
                        (self[i] == self[hottest] && weight[i] > weight[hottest]))) {
      hottest = i;
    }
  }
  const __int128 reference = hottest < n ? weight[hottest] : largest;
  if (reference <= 0) return levels;
  for (size_t i = 0; i < n; ++i) {
    if (!AboveFloor(weight[i], scale)) continue;
    levels[i] = LevelOf(weight[i], reference);
  }
  return levels;
}

std::vector<uint8_t> ShareLocalHeatLevels(const std::vector<int64_t>& self,
                                          const std::vector<int64_t>& inclusive,
                                          const HeatScale& scale) {
  const size_t n = self.size();
  std::vector<uint8_t> levels(n, 0);
  int64_t reference = 0;
  for (size_t i = 0; i < n; ++i) reference = std::max(reference, At(inclusive, i));
  for (size_t i = 0; i < n; ++i) {
    if (!AboveFloor(HeatWeight10(self[i], At(inclusive, i), scale), scale)) continue;
    levels[i] = LevelOf(std::max(At(inclusive, i), self[i]), reference);
  }
  return levels;
}

std::vector<uint8_t> PerfHeatmapLevels(const std::vector<int64_t>& values,
                                       const std::vector<uint32_t>& lines, double threshold) {
  std::vector<uint8_t> levels(values.size(), 0);
  std::vector<size_t> order;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > 0) order.push_back(i);
  }
  if (order.empty()) return levels;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (values[a] != values[b]) return values[a] > values[b];
    const uint32_t la = a < lines.size() ? lines[a] : 0, lb = b < lines.size() ? lines[b] : 0;
    if (la != lb) return la > lb;
    return a < b;  // equal points: input order, so the result never depends on sort internals
  });
  if (!(threshold > 0) || threshold > 1) threshold = 0.5;
  const size_t top = std::max<size_t>(
      1, static_cast<size_t>(std::floor(static_cast<double>(order.size()) * threshold)));
  ForChunks(top, kLevels, [&](size_t first, size_t size, size_t chunk) {
    for (size_t i = first; i < first + size; ++i) {
      levels[order[i]] = static_cast<uint8_t>(kLevels - chunk);
    }
  });
  return levels;
}

int64_t EventTotal(const Annotations& a, size_t event) {
  if (event < a.events.size() && a.events[event].total_weight > 0) {
    return a.events[event].total_weight;
  }
  int64_t total = 0;
  for (const FileStats& file : a.files) {
    for (const FunctionStats& fn : file.functions) total += At(fn.self, event);
  }
  for (const FunctionStats& fn : a.functions_without_source) total += At(fn.self, event);
  return total;
}

void AssignHeat(Annotations& annotations, HeatMethod method, double threshold) {
  annotations.heat_method = method;
  annotations.heat_threshold = threshold;
  const size_t events = annotations.events.size();
  for (FileStats& file : annotations.files) {
    for (LineStats& line : file.lines) {
      line.local_heat.assign(events, 0);
      line.global_heat.assign(events, 0);
    }
  }
  // Local groups: the lines owned by one function of one file.
  std::map<std::pair<uint32_t, std::string>, std::vector<LineStats*>> groups;
  std::vector<LineStats*> all;
  for (uint32_t f = 0; f < annotations.files.size(); ++f) {
    for (LineStats& line : annotations.files[f].lines) {
      groups[{f, line.function}].push_back(&line);
      all.push_back(&line);
    }
  }
  for (size_t event = 0; event < events; ++event) {
    HeatScale scale;
    scale.total = EventTotal(annotations, event);
    for (const LineStats* p : all) scale.max_self = std::max(scale.max_self, At(p->self, event));
    auto assign = [&](const std::vector<LineStats*>& points, bool local) {
      std::vector<int64_t> self, inclusive;
      std::vector<uint32_t> lines;
      for (const LineStats* p : points) {
        self.push_back(At(p->self, event));
        inclusive.push_back(At(p->inclusive, event));
        lines.push_back(p->line);
      }
      const std::vector<uint8_t> levels =
          method == HeatMethod::kPerfHeatmap ? PerfHeatmapLevels(inclusive, lines, threshold)
          : local                            ? ShareLocalHeatLevels(self, inclusive, scale)
                                             : ShareHeatLevels(self, inclusive, scale);
      for (size_t i = 0; i < points.size(); ++i) {
        (local ? points[i]->local_heat : points[i]->global_heat)[event] = levels[i];
      }
    };
    for (const auto& [key, points] : groups) assign(points, true);
    assign(all, false);
  }
}

}  // namespace inprof
