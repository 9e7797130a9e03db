// The code-search lookup on its own (viewer/src/heat_index.h): how paths as search tools print
// them find the profile's files, and which lines count as hot.
#include "heat_index.h"

#include <gtest/gtest.h>

#include <string>

#include "../exporters/test_profiles.h"

namespace inprof::viewer {
namespace {

// Two files named util.cpp in different directories (both with line 12 sampled, inside a
// function of each), one render.cpp; weights 60/30/10/5, a pass-through main.
Annotations Profile() {
  test::ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/build/app/main.cpp", 8);
  const uint32_t render = b.Frame("render", "/build/app/render.cpp", 10);
  const uint32_t send = b.Frame("send_all", "/build/app/net/util.cpp", 5);
  const uint32_t send12 = b.Frame("send_all", "/build/app/net/util.cpp", 12);
  const uint32_t sync = b.Frame("sync_all", "/build/app/disk/util.cpp", 12);
  b.Sample({main, render}, {60});
  b.Sample({main, send}, {30});
  b.Sample({main, sync}, {10});
  b.Sample({main, send12}, {5});
  return BuildAnnotations(b.profile());
}

TEST(HeatIndex, ExactPathsAndLevels) {
  const Annotations a = Profile();
  HeatIndex index(a, 0, HotCriterion{}, "/build/app");
  HitHeat hit = index.Lookup("render.cpp", 10, 10);  // relative to the root
  EXPECT_EQ(hit.match, MatchKind::kExact);
  ASSERT_NE(hit.line, nullptr);
  EXPECT_EQ(hit.line->global, 5);
  EXPECT_TRUE(hit.hot);
  hit = index.Lookup("./net/../render.cpp", 9, 11);  // normalised; a range finds its line
  EXPECT_EQ(hit.match, MatchKind::kExact);
  EXPECT_TRUE(hit.hot);
  hit = index.Lookup("render.cpp", 11, 20);  // no sampled line in the range
  EXPECT_EQ(hit.line, nullptr);
  EXPECT_FALSE(hit.hot);
  EXPECT_EQ(index.total(), 105);
}

TEST(HeatIndex, CriteriaDecideWhatIsHot) {
  const Annotations a = Profile();
  HotCriterion level4;
  level4.min_level = 4;
  HeatIndex strict(a, 0, level4, "/build/app");
  EXPECT_TRUE(strict.Lookup("render.cpp", 10, 10).hot);      // 60: level 5
  EXPECT_TRUE(strict.Lookup("net/util.cpp", 5, 5).hot);      // 30: half of 60, level 4
  EXPECT_FALSE(strict.Lookup("disk/util.cpp", 12, 12).hot);  // 10: level 2
  EXPECT_FALSE(strict.Lookup("main.cpp", 8, 8).hot);         // passes time on: level 1
  HotCriterion share;
  share.min_percent = 50;
  HeatIndex by_share(a, 0, share, "/build/app");
  EXPECT_TRUE(by_share.Lookup("main.cpp", 8, 8).hot);  // 100 % inclusive
  EXPECT_FALSE(by_share.Lookup("net/util.cpp", 5, 5).hot);
}

TEST(HeatIndex, BaseNamesFromAnotherMachine) {
  const Annotations a = Profile();
  HeatIndex index(a, 0, HotCriterion{}, "/elsewhere");
  // A checkout elsewhere: render.cpp is unique by base name.
  HitHeat hit = index.Lookup("src/render.cpp", 10, 10);
  EXPECT_EQ(hit.match, MatchKind::kBaseName);
  EXPECT_TRUE(hit.hot);
  // Two util.cpp: the path suffix decides.
  hit = index.Lookup("checkout/net/util.cpp", 5, 5);
  EXPECT_EQ(hit.match, MatchKind::kBaseName);
  ASSERT_GE(hit.file, 0);
  EXPECT_EQ(index.files()[static_cast<size_t>(hit.file)].path, "/build/app/net/util.cpp");
  // No suffix to go by: the function whose lines cover the hit settles it (only send_all's
  // range, 5-12, covers line 5).
  hit = index.Lookup("util.cpp", 5, 5);
  EXPECT_EQ(hit.match, MatchKind::kFunction);
  ASSERT_GE(hit.file, 0);
  EXPECT_EQ(index.files()[static_cast<size_t>(hit.file)].path, "/build/app/net/util.cpp");
  EXPECT_TRUE(hit.hot);
  // Line 12 is hot in both and covered by a function in both: ambiguous, both named, never
  // guessed.
  hit = index.Lookup("util.cpp", 12, 12);
  EXPECT_EQ(hit.match, MatchKind::kAmbiguous);
  EXPECT_EQ(hit.candidates.size(), 2u);
  EXPECT_FALSE(hit.hot);
  // A line sampled in neither is simply cold.
  hit = index.Lookup("util.cpp", 40, 40);
  EXPECT_TRUE(hit.candidates.empty());
  EXPECT_FALSE(hit.hot);
  EXPECT_EQ(index.Lookup("nothere.cpp", 1, 1).match, MatchKind::kNone);
}

TEST(NormalizePath, Lexically) {
  EXPECT_EQ(NormalizePath("a/./b/../c", "/root"), "/root/a/c");
  EXPECT_EQ(NormalizePath("/x//y/", "/root"), "/x/y");
  EXPECT_EQ(NormalizePath("../../..", "/root/a"), "/");
}

}  // namespace
}  // namespace inprof::viewer
