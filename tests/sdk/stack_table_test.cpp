#include "collector/stack_table.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace inprof::internal {
namespace {

using Stacks = std::map<std::vector<uintptr_t>, uint64_t>;

Stacks Collect(const StackTable& table) {
  Stacks out;
  table.ForEach([&](std::span<const uintptr_t> f, std::span<const uint64_t> w) {
    out[std::vector<uintptr_t>(f.begin(), f.end())] += w[0];
  });
  return out;
}

TEST(StackTableTest, InternsIdenticalStacksAndAddsWeights) {
  StackTable table(1 << 20, 1);
  std::vector<uintptr_t> a = {0x1000, 0x2000, 0x3000};
  std::vector<uintptr_t> b = {0x1000, 0x2000};
  table.Add(a, 1, 0);
  table.Add(b, 2, 0);
  table.Add(a, 3, 0);
  EXPECT_EQ(table.size(), 2u);
  Stacks s = Collect(table);
  EXPECT_EQ(s[a], 4u);
  EXPECT_EQ(s[b], 2u);
}

TEST(StackTableTest, ManyDistinctStacksSurviveRehashing) {
  StackTable table(64 << 20, 1);
  uint64_t total = 0;
  for (uintptr_t i = 0; i < 20000; ++i) {
    std::vector<uintptr_t> s = {0x400000 + i, 0x500000 + i % 7, 0x600000};
    table.Add(s, i % 5 + 1, 0);
    total += i % 5 + 1;
  }
  EXPECT_EQ(table.size(), 20000u);
  uint64_t sum = 0;
  for (const auto& [k, w] : Collect(table)) sum += w;
  EXPECT_EQ(sum, total);
}

TEST(StackTableTest, StaysWithinBudgetAndChargesOverflowWithoutLosingWeight) {
  const size_t budget = 256 << 10;
  StackTable table(budget, 1);
  uint64_t total = 0;
  for (uintptr_t i = 0; i < 100000; ++i) {
    std::vector<uintptr_t> s(16, 0x400000 + i);
    table.Add(s, 1, 0);
    ++total;
    ASSERT_LE(table.bytes(), budget);
  }
  EXPECT_GT(table.overflow_samples(), 0u);
  Stacks s = Collect(table);
  uint64_t sum = 0;
  for (const auto& [k, w] : s) sum += w;
  EXPECT_EQ(sum, total) << "weight was lost";
  std::vector<uintptr_t> overflow = {kOverflowMarker};
  EXPECT_EQ(s[overflow], table.overflow_samples());
}

TEST(StackTableTest, KnownStacksStillCountAfterTheTableIsFull) {
  StackTable table(128 << 10, 1);
  std::vector<uintptr_t> first = {0x1234, 0x5678};
  table.Add(first, 1, 0);
  for (uintptr_t i = 0; i < 50000; ++i) table.Add(std::vector<uintptr_t>(8, 0x9000 + i), 1, 0);
  table.Add(first, 5, 0);
  EXPECT_EQ(Collect(table)[first], 6u);
}

}  // namespace
}  // namespace inprof::internal

namespace inprof::internal {
namespace {

TEST(StackTableTimeline, KeepsEachTimedSampleWithItsStackAndStaysWithinTheBudget) {
  StackTable table(1 << 20, 2, /*timeline=*/true);
  table.set_time_origin(1000);
  const std::vector<uintptr_t> a = {0x1000, 0x2000};
  const std::vector<uintptr_t> b = {0x3000};
  table.Add(a, 1, 0, 1500);
  table.Add(b, 2, 1, 1700);
  table.Add(a, 3, 0, 1600);
  table.Add(b, 1, 0, 0);  // no time: in the aggregate only
  ASSERT_EQ(table.timeline().size(), 3u);
  EXPECT_EQ(table.timeline()[0].stack, 0u);
  EXPECT_EQ(table.timeline()[1].stack, 1u);
  EXPECT_EQ(table.timeline()[1].event, 1u);
  EXPECT_EQ(table.timeline()[2].weight, 3u);
  EXPECT_EQ(table.time_origin(), 1000);

  // Many samples of a few stacks: the timeline stops at a quarter of the budget, the
  // aggregate keeps every weight, and the table stays within its budget.
  const size_t budget = 256 << 10;
  StackTable small(budget, 1, true);
  uint64_t added = 0;
  for (int i = 1; i <= 100000; ++i) {
    small.Add(i % 2 ? a : b, 1, 0, i);
    ++added;
  }
  EXPECT_LE(small.bytes(), budget);
  EXPECT_LE(small.timeline().size() * sizeof(TimedEntry), budget / 4);
  EXPECT_GT(small.timeline().size(), 1000u);
  EXPECT_EQ(small.timeline().size() + small.timeline_dropped(), added);
  uint64_t total = 0;
  small.ForEach([&](std::span<const uintptr_t>, std::span<const uint64_t> w) { total += w[0]; });
  EXPECT_EQ(total, added);

  // Without a timeline nothing is kept.
  StackTable plain(1 << 20, 1);
  plain.Add(a, 1, 0, 5);
  EXPECT_TRUE(plain.timeline().empty());
}

}  // namespace
}  // namespace inprof::internal
