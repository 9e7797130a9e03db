// Heat levels must match perf-heatmap's chunking exactly (FORMATS.md "Heat levels").
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "inprof/exporters.h"

namespace inprof {
namespace {

// Points with distinct values n, n-1, ..., 1 on lines 1..n; returns how many points got
// each level, from level 5 down to level 1.
std::vector<int> ChunkSizes(size_t n, double threshold) {
  std::vector<int64_t> values;
  std::vector<uint32_t> lines;
  for (size_t i = 0; i < n; ++i) {
    values.push_back(static_cast<int64_t>(n - i));
    lines.push_back(static_cast<uint32_t>(i + 1));
  }
  const std::vector<uint8_t> levels = HeatLevels(values, lines, threshold);
  std::vector<int> sizes(5, 0);
  for (uint8_t level : levels) {
    if (level > 0) ++sizes[5 - level];
  }
  return sizes;
}

TEST(HeatLevels, ChunkSizesFromTheTable) {
  EXPECT_EQ(ChunkSizes(7, 1.0), (std::vector<int>{1, 1, 2, 1, 2}));
  EXPECT_EQ(ChunkSizes(8, 1.0), (std::vector<int>{1, 2, 1, 2, 2}));
  EXPECT_EQ(ChunkSizes(10, 1.0), (std::vector<int>{2, 2, 2, 2, 2}));
}

TEST(HeatLevels, DefaultThresholdRanksTheTopHalf) {
  // 14 points at 0.5: the top 7 are chunked 1,1,2,1,2; the other 7 get level 0.
  EXPECT_EQ(ChunkSizes(14, 0.5), (std::vector<int>{1, 1, 2, 1, 2}));
  std::vector<int64_t> values(14);
  std::vector<uint32_t> lines(14);
  for (size_t i = 0; i < 14; ++i) values[i] = 100 - static_cast<int64_t>(i), lines[i] = 1;
  const auto levels = HeatLevels(values, lines);
  EXPECT_EQ(levels, (std::vector<uint8_t>{5, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(HeatLevels, FewerThanFivePointsCountDownFromFive) {
  for (size_t n = 1; n < 5; ++n) {
    std::vector<int64_t> values;
    std::vector<uint32_t> lines;
    for (size_t i = 0; i < n; ++i) {
      values.push_back(static_cast<int64_t>(10 * (n - i)));
      lines.push_back(static_cast<uint32_t>(i + 1));
    }
    const auto levels = HeatLevels(values, lines, 1.0);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(levels[i], 5 - i) << "n=" << n << " i=" << i;
  }
  // One point at the default threshold: max(1, floor(0.5)) = 1 point, level 5.
  EXPECT_EQ(HeatLevels({7}, {3}), (std::vector<uint8_t>{5}));
}

TEST(HeatLevels, TiesGoToTheHigherLine) {
  // Equal values: the higher line ranks first.
  const auto levels = HeatLevels({10, 10, 10}, {5, 9, 7}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{3, 5, 4}));
}

TEST(HeatLevels, ZeroValuesGetNoLevel) {
  const auto levels = HeatLevels({0, 5, 0, 3}, {1, 2, 3, 4}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{0, 5, 0, 4}));
}

TEST(HeatLevels, OutputFollowsInputOrder) {
  // Values out of order: the levels come back in the order the points were given.
  const auto levels = HeatLevels({1, 5, 3, 4, 2}, {1, 2, 3, 4, 5}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{1, 5, 3, 4, 2}));
}

}  // namespace
}  // namespace inprof
