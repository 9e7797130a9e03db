// Folded stacks as flamegraph.pl and inferno read them.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/folded.h"
#include "test_profiles.h"

namespace inprof::test {
namespace {

std::string FoldedText(const Profile& profile, bool lines = false, size_t event = 0) {
  std::ostringstream out;
  ExportOptions options;
  options.event = event;
  options.folded_lines = lines;
  WriteFolded(profile, options, out);
  return out.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Split(const std::string& stack) {
  std::vector<std::string> frames;
  size_t start = 0;
  for (size_t semi; (semi = stack.find(';', start)) != std::string::npos; start = semi + 1) {
    frames.push_back(stack.substr(start, semi - start));
  }
  frames.push_back(stack.substr(start));
  return frames;
}

// inferno's rfind_samples(): the word after the last space, digits with at most one '.'.
bool InfernoNumber(const std::string& line, std::string* stack) {
  const size_t space = line.rfind(' ');
  if (space == std::string::npos) return false;
  const std::string word = line.substr(space + 1);
  if (std::count(word.begin(), word.end(), '.') > 1) return false;
  for (char c : word) {
    if (c != '.' && (c < '0' || c > '9')) return false;
  }
  std::string rest = line.substr(0, space);
  rest.erase(rest.find_last_not_of(' ') + 1);
  *stack = rest;
  return true;
}

TEST(Folded, EveryLineParsesWithFlamegraphPlAndInferno) {
  // flamegraph.pl: my ($stack, $samples) = (/^(.*)\s+?(\d+(?:\.\d*)?)$/);
  const std::regex flamegraph_pl(R"(^(.*)\s+?(\d+(?:\.\d*)?)$)");
  for (bool with_lines : {false, true}) {
    const std::string text = FoldedText(GoldenProfile(), with_lines);
    ASSERT_FALSE(text.empty());
    ASSERT_EQ(text.back(), '\n');
    for (const std::string& line : Lines(text)) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(line, m, flamegraph_pl)) << line;
      EXPECT_TRUE(std::all_of(m[2].first, m[2].second, [](char c) { return c >= '0' && c <= '9'; }))
          << "count is not an integer: " << line;
      EXPECT_EQ(line.substr(0, line.rfind(' ')), m[1].str()) << "one space before the count";
      // inferno: the count after the last space, then -- for differential input -- a second
      // number before it. There must not be one.
      std::string stack;
      ASSERT_TRUE(InfernoNumber(line, &stack)) << line;
      std::string rest;
      EXPECT_FALSE(InfernoNumber(stack, &rest)) << "inferno would read a second count: " << line;
      for (const std::string& frame : Split(stack)) {
        EXPECT_FALSE(frame.empty()) << line;
        EXPECT_EQ(frame.find_first_of("\r\n\t"), std::string::npos) << line;
        EXPECT_NE(frame.front(), ' ') << line;
        EXPECT_NE(frame.back(), ' ') << line;
      }
    }
  }
}

TEST(Folded, SemicolonsInNamesDoNotSplitFrames) {
  ProfileBuilder b;
  const uint32_t a = b.Frame("parse;tokenize");
  const uint32_t c = b.Frame("f;;g", "/x/a;b.cpp", 3);
  b.Sample({a, c}, {2});
  EXPECT_EQ(FoldedText(b.profile()), "parse:tokenize;f::g 2\n");
  EXPECT_EQ(FoldedText(b.profile(), true), "parse:tokenize;f::g (/x/a:b.cpp:3) 2\n");
}

TEST(Folded, CleansUpNames) {
  ProfileBuilder b;
  const uint32_t a = b.Frame("line\nbreak\r\tend  ");
  const uint32_t empty = b.Frame("");
  const uint32_t blank = b.Frame(" \n ");
  const uint32_t spaced = b.Frame("std::map<int, int>::find(int const&)");
  b.Sample({a, empty, blank, spaced}, {1});
  EXPECT_EQ(FoldedText(b.profile()),
            "line break  end;[unknown];[unknown];std::map<int, int>::find(int const&) 1\n");
}

TEST(Folded, NumberLikeLastWordIsJoined) {
  // Otherwise inferno reads "leaf 12 5" as a differential line with counts 12 and 5.
  ProfileBuilder b;
  const uint32_t a = b.Frame("caller 7");
  const uint32_t c = b.Frame("leaf 12");
  const uint32_t d = b.Frame("v 1.5");
  const uint32_t e = b.Frame("x 1.2.3");  // not a number to inferno: left alone
  b.Sample({a, c}, {5});
  b.Sample({d}, {1});
  b.Sample({e}, {1});
  EXPECT_EQ(FoldedText(b.profile()), "caller_7;leaf_12 5\nv_1.5 1\nx 1.2.3 1\n");
}

TEST(Folded, DefaultIsFunctionNamesAndMergesByName) {
  const std::string text = FoldedText(GoldenProfile());
  // compute(int) at lines 88 and 91 are one function.
  EXPECT_NE(text.find("__libc_start_call_main;main;run(Config const&);compute(int) 10\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("_[i]"), std::string::npos) << "no inline hint in names-only mode";
  EXPECT_NE(text.find(";operator/(Ratio, Ratio) 40\n"), std::string::npos) << text;
}

TEST(Folded, LinesModeShowsLocationAndInlineHint) {
  const std::string text = FoldedText(GoldenProfile(), true);
  EXPECT_NE(text.find("run(Config const&) (/src/app/run.cpp:17);compute(int) "
                      "(/src/app/compute.cpp:88) 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(";compute(int) (/src/app/compute.cpp:91) 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find(";operator/(Ratio, Ratio) (/src/app/ratio.h:30)_[i] 40\n"),
            std::string::npos)
      << text;
  // Frames without a location are just the name, with the hint if inlined.
  ProfileBuilder b;
  const uint32_t a = b.Frame("a");
  const uint32_t c = b.Inlined("c");
  b.Sample({a, c}, {1});
  EXPECT_EQ(FoldedText(b.profile(), true), "a;c_[i] 1\n");
}

TEST(Folded, MergesIdenticalStacksAndSkipsZeroWeights) {
  ProfileBuilder b;
  b.AddEvent("wall", "nanoseconds");
  const uint32_t f1 = b.Frame("f", "/x/f.cpp", 1);
  const uint32_t f2 = b.Frame("f", "/x/f.cpp", 2);
  const uint32_t g = b.Frame("g");
  b.Sample({f1, g}, {1, 0});
  b.Sample({f2, g}, {2, 0});
  b.Sample({f1, g}, {4, 0});
  b.Sample({g}, {0, 9});
  b.Sample({g}, {-1, 1});
  EXPECT_EQ(FoldedText(b.profile()), "f;g 7\n");
  EXPECT_EQ(FoldedText(b.profile(), true), "f (/x/f.cpp:1);g 5\nf (/x/f.cpp:2);g 2\n");
  EXPECT_EQ(FoldedText(b.profile(), false, 1), "g 10\n");
}

TEST(Folded, KeepsEveryWeight) {
  // Synthetic frames, frame-less samples and bad indices still count: the flame graph total
  // must equal the profile's.
  ProfileBuilder b;
  const uint32_t t = b.Synthetic("[truncated]");
  const uint32_t f = b.Frame("f");
  b.Sample({t, f}, {3});
  b.Sample({}, {2});
  b.Sample({f, 999}, {1});
  EXPECT_EQ(FoldedText(b.profile()), "[truncated];f 3\n[unknown] 2\nf;[unknown] 1\n");
}

TEST(Folded, IsDeterministicAndSorted) {
  Profile profile = GoldenProfile();
  const std::string first = FoldedText(profile, true);
  std::reverse(profile.samples.begin(), profile.samples.end());
  EXPECT_EQ(FoldedText(profile, true), first);
  const std::vector<std::string> lines = Lines(first);
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
  EXPECT_EQ(std::adjacent_find(lines.begin(), lines.end()), lines.end());
}

TEST(Folded, CountsAreLargeIntegers) {
  ProfileBuilder b;
  const uint32_t f = b.Frame("f");
  b.Sample({f}, {int64_t{1} << 62});
  b.Sample({f}, {int64_t{1} << 62});
  b.Sample({f}, {int64_t{1} << 62});
  b.Sample({f}, {int64_t{1} << 62});
  b.Sample({f}, {5});
  EXPECT_EQ(FoldedText(b.profile()), "f 18446744073709551615\n");  // saturated, not wrapped
}

TEST(Folded, EmptyProfileWritesNothing) { EXPECT_EQ(FoldedText(Profile{}), ""); }

}  // namespace
}  // namespace inprof::test
