// Heat levels. The share method (the default): monotonic in the documented heat weight, every
// line with a real share hot, the hottest self line at 5, pass-through lines at most 1, on
// hand-made and random profiles. The perf-heatmap method must match perf-heatmap's chunking
// exactly (docs/heat.md has its algorithm and the chunk table checked here).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "inprof/annotations.h"
#include "test_profiles.h"

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
  const std::vector<uint8_t> levels = PerfHeatmapLevels(values, lines, threshold);
  std::vector<int> sizes(5, 0);
  for (uint8_t level : levels) {
    if (level > 0) ++sizes[5 - level];
  }
  return sizes;
}

TEST(PerfHeatmapLevels, ChunkSizesFromTheTable) {
  EXPECT_EQ(ChunkSizes(7, 1.0), (std::vector<int>{1, 1, 2, 1, 2}));
  EXPECT_EQ(ChunkSizes(8, 1.0), (std::vector<int>{1, 2, 1, 2, 2}));
  EXPECT_EQ(ChunkSizes(10, 1.0), (std::vector<int>{2, 2, 2, 2, 2}));
}

TEST(PerfHeatmapLevels, DefaultThresholdRanksTheTopHalf) {
  // 14 points at 0.5: the top 7 are chunked 1,1,2,1,2; the other 7 get level 0.
  EXPECT_EQ(ChunkSizes(14, 0.5), (std::vector<int>{1, 1, 2, 1, 2}));
  std::vector<int64_t> values(14);
  std::vector<uint32_t> lines(14);
  for (size_t i = 0; i < 14; ++i) values[i] = 100 - static_cast<int64_t>(i), lines[i] = 1;
  const auto levels = PerfHeatmapLevels(values, lines);
  EXPECT_EQ(levels, (std::vector<uint8_t>{5, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(PerfHeatmapLevels, FewerThanFivePointsCountDownFromFive) {
  for (size_t n = 1; n < 5; ++n) {
    std::vector<int64_t> values;
    std::vector<uint32_t> lines;
    for (size_t i = 0; i < n; ++i) {
      values.push_back(static_cast<int64_t>(10 * (n - i)));
      lines.push_back(static_cast<uint32_t>(i + 1));
    }
    const auto levels = PerfHeatmapLevels(values, lines, 1.0);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(levels[i], 5 - i) << "n=" << n << " i=" << i;
  }
  // One point at the default threshold: max(1, floor(0.5)) = 1 point, level 5.
  EXPECT_EQ(PerfHeatmapLevels({7}, {3}), (std::vector<uint8_t>{5}));
}

TEST(PerfHeatmapLevels, TiesGoToTheHigherLine) {
  // Equal values: the higher line ranks first.
  const auto levels = PerfHeatmapLevels({10, 10, 10}, {5, 9, 7}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{3, 5, 4}));
}

TEST(PerfHeatmapLevels, ZeroValuesGetNoLevel) {
  const auto levels = PerfHeatmapLevels({0, 5, 0, 3}, {1, 2, 3, 4}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{0, 5, 0, 4}));
}

TEST(PerfHeatmapLevels, OutputFollowsInputOrder) {
  // Values out of order: the levels come back in the order the points were given.
  const auto levels = PerfHeatmapLevels({1, 5, 3, 4, 2}, {1, 2, 3, 4, 5}, 1.0);
  EXPECT_EQ(levels, (std::vector<uint8_t>{1, 5, 3, 4, 2}));
}

using test::ProfileBuilder;

const LineStats* Line(const Annotations& a, const std::string& path, uint32_t line) {
  for (const FileStats& file : a.files) {
    if (file.path != path) continue;
    for (const LineStats& l : file.lines) {
      if (l.line == line) return &l;
    }
  }
  return nullptr;
}

// The first thing a user profiles: three one-line loops with 50/30/20 % of the time, called
// from main through one driver, under libc's start-up frames.
Annotations FiftyThirtyTwenty(HeatMethod method) {
  ProfileBuilder b;
  const uint32_t start = b.Frame("__libc_start_main", "/glibc/csu/libc-start.c", 360);
  const uint32_t main = b.Frame("main", "/src/loops.cpp", 40);
  const uint32_t drive50 = b.Frame("drive(int)", "/src/loops.cpp", 30);
  const uint32_t drive30 = b.Frame("drive(int)", "/src/loops.cpp", 31);
  const uint32_t drive20 = b.Frame("drive(int)", "/src/loops.cpp", 32);
  const uint32_t hot50 = b.Frame("hot50(int)", "/src/loops.cpp", 10);
  const uint32_t hot30 = b.Frame("hot30(int)", "/src/loops.cpp", 15);
  const uint32_t hot20 = b.Frame("hot20(int)", "/src/loops.cpp", 20);
  b.Sample({start, main, drive50, hot50}, {50});
  b.Sample({start, main, drive30, hot30}, {30});
  b.Sample({start, main, drive20, hot20}, {20});
  Annotations a = BuildAnnotations(b.profile());
  if (method != HeatMethod::kShare) AssignHeat(a, method);
  return a;
}

TEST(ShareHeat, SmallProfileLoopsAreTheHottestLines) {
  const Annotations a = FiftyThirtyTwenty(HeatMethod::kShare);
  auto level = [&](const char* path, uint32_t line) {
    const LineStats* l = Line(a, path, line);
    EXPECT_NE(l, nullptr) << path << ":" << line;
    return l ? l->global_heat[0] : -1;
  };
  EXPECT_EQ(level("/src/loops.cpp", 10), 5);
  EXPECT_EQ(level("/src/loops.cpp", 15), 4);  // 30 is at least half of 50
  EXPECT_EQ(level("/src/loops.cpp", 20), 3);  // 20 is at least a quarter
  // The call chain passes the time on: hot, but never above a line that spends it.
  EXPECT_EQ(level("/glibc/csu/libc-start.c", 360), 1);
  EXPECT_EQ(level("/src/loops.cpp", 40), 1);
  for (uint32_t line : {30u, 31u, 32u}) EXPECT_EQ(level("/src/loops.cpp", line), 1);
  // Within each loop function its only line is the hottest.
  EXPECT_EQ(Line(a, "/src/loops.cpp", 20)->local_heat[0], 5);
  EXPECT_EQ(a.heat_method, HeatMethod::kShare);
}

TEST(ShareHeat, PerfHeatmapMethodKeepsItsRanking) {
  // The same profile under perf-heatmap's ranking: the call chain takes the top levels and
  // the loops fall behind it, two of them to 0. Kept as an option for users who want gogrep's
  // levels. 8 points, the top 4 ranked: libc-start 5, main 4, the driver's first call 3.
  const Annotations a = FiftyThirtyTwenty(HeatMethod::kPerfHeatmap);
  EXPECT_EQ(Line(a, "/glibc/csu/libc-start.c", 360)->global_heat[0], 5);
  EXPECT_EQ(Line(a, "/src/loops.cpp", 40)->global_heat[0], 4);
  EXPECT_EQ(Line(a, "/src/loops.cpp", 10)->global_heat[0], 2);
  EXPECT_EQ(Line(a, "/src/loops.cpp", 15)->global_heat[0], 0);
  EXPECT_EQ(Line(a, "/src/loops.cpp", 20)->global_heat[0], 0);
  EXPECT_EQ(a.heat_method, HeatMethod::kPerfHeatmap);
}

TEST(ShareHeat, FloorAndReference) {
  // 1000 samples, the hottest line has 500 self: lines with 10 (1 %) self or inclusive are
  // hot, lines with 9 are not; passing on 1000 counts as 50 (a tenth of 500): level 1.
  const HeatScale scale{1000, 500};
  const auto levels = ShareHeatLevels({500, 10, 9, 0, 0, 0, 200, 5, 125, 62},
                                      {500, 10, 9, 10, 9, 1000, 400, 9, 125, 62}, scale);
  // 200 + 50 = 250 is half of 500: 4; 125 a quarter: 3; 62 under an eighth: 1.
  EXPECT_EQ(levels, (std::vector<uint8_t>{5, 1, 0, 1, 0, 1, 4, 0, 3, 1}));
  // A flat profile: 100 lines of 1 % and one pass-through line at 100 %; the floor drops to a
  // tenth of the hottest line so that lines passing on 1 % stay hot.
  EXPECT_EQ(ShareHeatLevels({5, 0, 0}, {5, 500, 5}, {500, 5}), (std::vector<uint8_t>{5, 1, 1}));
  // Equal weights, equal levels; zero weight, level 0.
  EXPECT_EQ(ShareHeatLevels({7, 7, 0}, {7, 7, 0}, {14, 7}), (std::vector<uint8_t>{5, 5, 0}));
}

TEST(ShareHeat, LargeWeightsDoNotOverflow) {
  // Hours of CPU time in nanoseconds.
  const int64_t hour = 3'600'000'000'000;
  const auto levels =
      ShareHeatLevels({40 * hour, 20 * hour}, {40 * hour, 100 * hour}, {100 * hour, 40 * hour});
  EXPECT_EQ(levels, (std::vector<uint8_t>{5, 4}));  // 20 + min(80, 4) = 24 of 40: over half
}

// The heat weight as docs/heat.md defines it, computed independently of the library.
double DocumentedHeatWeight(int64_t self, int64_t inclusive, int64_t max_self) {
  const int64_t passed = std::max<int64_t>(inclusive - self, 0);
  return static_cast<double>(self) +
         std::min(static_cast<double>(passed), static_cast<double>(max_self) / 10);
}

// Random call trees with random weights: the properties users rely on, for both scopes.
TEST(ShareHeat, PropertiesHoldOnRandomProfiles) {
  std::mt19937_64 rng(20261125);
  for (int round = 0; round < 300; ++round) {
    ProfileBuilder b;
    // A random tree of functions over a few files; each node is one source line.
    const int nodes = 2 + static_cast<int>(rng() % 40);
    std::vector<uint32_t> frame(static_cast<size_t>(nodes));
    std::vector<int> parent(static_cast<size_t>(nodes), -1);
    for (int n = 0; n < nodes; ++n) {
      const std::string file = "/src/f" + std::to_string(rng() % 4) + ".cpp";
      const std::string fn = "fn" + std::to_string(rng() % 12);
      frame[static_cast<size_t>(n)] = b.Frame(fn, file, 1 + static_cast<uint32_t>(rng() % 200));
      if (n > 0)
        parent[static_cast<size_t>(n)] = static_cast<int>(rng() % static_cast<uint64_t>(n));
    }
    const int samples = 1 + static_cast<int>(rng() % 60);
    for (int s = 0; s < samples; ++s) {
      std::vector<uint32_t> stack;
      for (int n = static_cast<int>(rng() % static_cast<uint64_t>(nodes)); n >= 0;
           n = parent[static_cast<size_t>(n)]) {
        stack.insert(stack.begin(), frame[static_cast<size_t>(n)]);
      }
      // Heavy-tailed weights: a few large stacks among many small ones.
      const int64_t weight = 1 + static_cast<int64_t>(rng() % 3 == 0 ? rng() % 5000 : rng() % 20);
      b.Sample(stack, {weight});
    }
    const Annotations a = BuildAnnotations(b.profile());
    const int64_t total = a.events[0].total_weight;
    std::vector<const LineStats*> lines;
    std::map<const LineStats*, size_t> file_of;
    int64_t max_self = 0;
    for (size_t f = 0; f < a.files.size(); ++f) {
      for (const LineStats& l : a.files[f].lines) {
        lines.push_back(&l);
        file_of[&l] = f;
        max_self = std::max(max_self, l.self[0]);
      }
    }
    ASSERT_GT(max_self, 0);
    const LineStats* hottest = nullptr;
    for (const LineStats* l : lines) {
      const double w = DocumentedHeatWeight(l->self[0], l->inclusive[0], max_self);
      if (l->self[0] * 100 >= total || l->inclusive[0] * 100 >= total) {
        EXPECT_GE(l->global_heat[0], 1) << "round " << round << " line " << l->line;
      }
      if (l->self[0] == 0) {
        EXPECT_LE(l->global_heat[0], 1) << "round " << round;
      }
      if (l->self[0] == max_self) {
        EXPECT_EQ(l->global_heat[0], 5) << "round " << round;
        hottest = l;
      }
      for (const LineStats* m : lines) {
        const double v = DocumentedHeatWeight(m->self[0], m->inclusive[0], max_self);
        if (w > v) {
          EXPECT_GE(l->global_heat[0], m->global_heat[0]) << "round " << round;
        }
        if (w == v) {
          EXPECT_EQ(l->global_heat[0], m->global_heat[0]) << "round " << round;
        }
        // More self and more inclusive weight never mean a lower level.
        if (l->self[0] >= m->self[0] && l->inclusive[0] >= m->inclusive[0]) {
          EXPECT_GE(l->global_heat[0], m->global_heat[0]) << "round " << round;
        }
        // Locally, within the lines one function owns in one file, levels follow inclusive
        // weight (where the function's time goes, callees included).
        if (l->function == m->function && file_of[l] == file_of[m] && l->global_heat[0] > 0 &&
            m->global_heat[0] > 0) {
          if (l->inclusive[0] > m->inclusive[0]) {
            EXPECT_GE(l->local_heat[0], m->local_heat[0]) << "round " << round;
          }
          if (l->inclusive[0] == m->inclusive[0]) {
            EXPECT_EQ(l->local_heat[0], m->local_heat[0]) << "round " << round;
          }
        }
        // Cold is cold in both scopes.
        EXPECT_EQ(l->local_heat[0] == 0, l->global_heat[0] == 0) << "round " << round;
      }
    }
    EXPECT_NE(hottest, nullptr);
  }
}

TEST(HeatMethod, NamesRoundTrip) {
  for (HeatMethod m : {HeatMethod::kShare, HeatMethod::kPerfHeatmap}) {
    HeatMethod back = HeatMethod::kShare;
    ASSERT_TRUE(ParseHeatMethod(HeatMethodName(m), &back));
    EXPECT_EQ(back, m);
  }
  HeatMethod unused;
  EXPECT_FALSE(ParseHeatMethod("rank", &unused));
}

}  // namespace
}  // namespace inprof
