// Heat levels after perf-heatmap (github.com/quasilyte/perf-heatmap, used by gogrep and its
// VS Code extension): rank the points, keep the top share, cut it into five chunks. The chunking is
// perf-heatmap's forChunks, reproduced exactly so that our levels agree with its `stat`
// output on the same data (FORMATS.md "Heat levels" has the algorithm and the table the
// tests check).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "inprof/exporters.h"

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

}  // namespace

std::vector<uint8_t> HeatLevels(const std::vector<int64_t>& values,
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

void AssignHeat(Annotations& annotations, double threshold) {
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
  auto assign = [&](const std::vector<LineStats*>& points, size_t event, bool local) {
    std::vector<int64_t> values;
    std::vector<uint32_t> lines;
    values.reserve(points.size());
    lines.reserve(points.size());
    for (const LineStats* p : points) {
      values.push_back(event < p->inclusive.size() ? p->inclusive[event] : 0);
      lines.push_back(p->line);
    }
    const std::vector<uint8_t> levels = HeatLevels(values, lines, threshold);
    for (size_t i = 0; i < points.size(); ++i) {
      (local ? points[i]->local_heat : points[i]->global_heat)[event] = levels[i];
    }
  };
  for (size_t event = 0; event < events; ++event) {
    for (const auto& [key, points] : groups) assign(points, event, true);
    assign(all, event, false);
  }
}

}  // namespace inprof
