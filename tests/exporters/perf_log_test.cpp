// perf.log as perfanno.nvim reads it: every written frame must parse back, through a reader
// that follows perfanno's own patterns, to the symbol, path and line we meant.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/perf_log.h"
#include "perfanno_reader.h"
#include "test_profiles.h"

namespace inprof::test {
namespace {

std::string PerfLogText(const Profile& profile, size_t event = 0) {
  std::ostringstream out;
  ExportOptions options;
  options.event = event;
  WritePerfLog(profile, options, out);
  return out.str();
}

// Writes, parses back (which must succeed) and returns the stacks sorted like the file.
std::vector<PerfannoStack> RoundTrip(const Profile& profile, size_t event = 0) {
  const std::string text = PerfLogText(profile, event);
  PerfannoLog log = ParsePerfannoLog(text);
  EXPECT_TRUE(log.ok()) << log.error << "\n" << text;
  return log.stacks;
}

PerfannoFrame F(std::string symbol, std::string path, uint64_t line) {
  return PerfannoFrame{std::move(symbol), std::move(path), line};
}

TEST(PerfLog, HostileNamesParseBackAsIntended) {
  ProfileBuilder b;
  const uint32_t root = b.Frame("main", "/x/main.cpp", 10);
  struct Case {
    std::string function;
    std::string symbol;  // what perfanno must see
  };
  const std::vector<Case> cases = {
      {"operator/(Ratio, Ratio)", "operator\\(Ratio, Ratio)"},
      {"operator/=", "operator\\="},
      {"(lambda at /x/f.cpp:12:3)", "(lambda at \\x\\f.cpp.12.3)"},
      {"parse;tokenize", "parse:tokenize"},
      {"a;1", "a.1"},  // ';' -> ':' must not create ":<digit>"
      {"std::map<int, int>::find(int const&)", "std::map<int, int>::find(int const&)"},
      {"std::array<int, 3>::at(unsigned long)", "std::array<int, 3>::at(unsigned long)"},
      {"  spaced   out name \t", "spaced   out name"},
      {"line\nbreak\r", "line break"},
      {"ns::label:", "ns::label:"},  // ':' not followed by a digit is harmless
      {"@script.lua:12", "@script.lua.12"},
      {"", ""},        // no name: a bare "/path:line" frame
      {" \t ", ""},    // nothing left after clean-up
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const uint32_t leaf = b.Frame(cases[i].function, "/x/leaf.cpp", static_cast<uint32_t>(100 + i));
    b.Sample({root, leaf}, {static_cast<int64_t>(i + 1)});
  }
  const std::vector<PerfannoStack> stacks = RoundTrip(b.profile());
  ASSERT_EQ(stacks.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const PerfannoStack expected{
        {F("main", "/x/main.cpp", 10), F(cases[i].symbol, "/x/leaf.cpp", 100 + i)}, i + 1};
    EXPECT_NE(std::find(stacks.begin(), stacks.end(), expected), stacks.end())
        << "function \"" << cases[i].function << "\": expected " << expected;
  }
}

TEST(PerfLog, HostileNamesInEveryPosition) {
  // The same names as callers, not only as leaves: a bad caller corrupts every later frame.
  ProfileBuilder b;
  const uint32_t a = b.Frame("operator/", "/x/a.cpp", 1);
  const uint32_t l = b.Frame("(lambda at f.cpp:12:3)", "/x/b.cpp", 2);
  const uint32_t s = b.Frame("x;y", "/x/c.cpp", 3);
  const uint32_t n = b.Frame("", "/x/d.cpp", 4);
  b.Sample({a, l, s, n, a}, {9});
  const std::vector<PerfannoStack> stacks = RoundTrip(b.profile());
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0], (PerfannoStack{{F("operator\\", "/x/a.cpp", 1),
                                       F("(lambda at f.cpp.12.3)", "/x/b.cpp", 2),
                                       F("x:y", "/x/c.cpp", 3), F("", "/x/d.cpp", 4),
                                       F("operator\\", "/x/a.cpp", 1)},
                                      9}));
}

TEST(PerfLog, DropsFramesWithoutSourceInTheMiddle) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/x/main.cpp", 5);
  const uint32_t libc = b.Frame("qsort");  // no debug info
  const uint32_t module = b.Frame("libfoo.so+0x12");
  const uint32_t cmp = b.Frame("cmp(void const*, void const*)", "/x/cmp.cpp", 7);
  b.Sample({libc, main, libc, module, cmp, libc}, {3});
  const std::vector<PerfannoStack> stacks = RoundTrip(b.profile());
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0], (PerfannoStack{{F("main", "/x/main.cpp", 5),
                                       F("cmp(void const*, void const*)", "/x/cmp.cpp", 7)},
                                      3}));
}

TEST(PerfLog, DropsSyntheticFramesEvenWithALocation) {
  ProfileBuilder b;
  const uint32_t truncated = b.Synthetic("[truncated]");
  const uint32_t odd = b.Frame("[overflow]", "/x/o.cpp", 1, FrameKind::kSynthetic);
  const uint32_t f = b.Frame("f", "/x/f.cpp", 2);
  b.Sample({truncated, odd, f}, {1});
  EXPECT_EQ(RoundTrip(b.profile()), (std::vector<PerfannoStack>{{{F("f", "/x/f.cpp", 2)}, 1}}));
}

TEST(PerfLog, OmitsStacksWithoutAnySource) {
  ProfileBuilder b;
  const uint32_t a = b.Frame("a");
  const uint32_t c = b.Frame("c", "relative/c.cpp", 3);  // not absolute: dropped as well
  const uint32_t t = b.Synthetic("[truncated]");
  const uint32_t f = b.Frame("f", "/x/f.cpp", 2);
  b.Sample({a, c, t}, {5});
  b.Sample({}, {4});
  b.Sample({f}, {1});
  EXPECT_EQ(PerfLogText(b.profile()), "f /x/f.cpp:2 1\n");
}

TEST(PerfLog, DropsFramesWhosePathPerfannoWouldCut) {
  ProfileBuilder b;
  const uint32_t good = b.Frame("good", "/x/a:b/ok.cpp", 1);  // ':' before a letter is fine
  const uint32_t colon = b.Frame("bad", "/x/v1:2/x.cpp", 2);  // ":2" would end the frame
  const uint32_t newline = b.Frame("bad", "/x/a\nb.cpp", 3);
  const uint32_t root_only = b.Frame("bad", "/", 4);
  const uint32_t no_line = b.Frame("bad", "/x/n.cpp", 0);
  b.Sample({good, colon, newline, root_only, no_line}, {2});
  EXPECT_EQ(RoundTrip(b.profile()),
            (std::vector<PerfannoStack>{{{F("good", "/x/a:b/ok.cpp", 1)}, 2}}));
}

TEST(PerfLog, KeepsInlinedFramesAsOrdinaryFrames) {
  ProfileBuilder b;
  const uint32_t outer = b.Frame("outer()", "/x/o.cpp", 10);
  const uint32_t inl = b.Inlined("inner()", "/x/i.h", 20);
  b.Sample({outer, inl}, {6});
  const std::string text = PerfLogText(b.profile());
  EXPECT_EQ(text, "outer() /x/o.cpp:10;inner() /x/i.h:20 6\n");  // no "_[i]" after the line
  EXPECT_TRUE(ParsePerfannoLog(text).ok());
}

TEST(PerfLog, MergesStacksThatRenderAlike) {
  ProfileBuilder b;
  const uint32_t f = b.Frame("f", "/x/f.cpp", 2);
  const uint32_t f_again = b.Frame("f", "/x/f.cpp", 2);  // other address, same line
  const uint32_t unknown = b.Frame("??");
  b.Sample({f}, {1});
  b.Sample({f_again}, {2});
  b.Sample({unknown, f}, {4});  // same once the sourceless frame is gone
  EXPECT_EQ(PerfLogText(b.profile()), "f /x/f.cpp:2 7\n");
}

TEST(PerfLog, UsesTheSelectedEventAndSkipsZeroWeights) {
  ProfileBuilder b;
  b.AddEvent("wall", "nanoseconds");
  const uint32_t busy = b.Frame("busy", "/x/b.cpp", 1);
  const uint32_t sleep = b.Frame("sleep", "/x/s.cpp", 2);
  b.Sample({busy}, {10, 11});
  b.Sample({sleep}, {0, 50});
  b.Sample({sleep}, {-3, 0});  // negative weights are not counts
  EXPECT_EQ(PerfLogText(b.profile(), 0), "busy /x/b.cpp:1 10\n");
  EXPECT_EQ(PerfLogText(b.profile(), 1), "busy /x/b.cpp:1 11\nsleep /x/s.cpp:2 50\n");
  EXPECT_EQ(PerfLogText(b.profile(), 7), "");  // no such event: nothing to count
}

TEST(PerfLog, OutputIsPlainLinesOnly) {
  const std::string text = PerfLogText(GoldenProfile());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("\n\n"), std::string::npos);
  EXPECT_EQ(text.find(" \n"), std::string::npos);
  EXPECT_EQ(text.find("\n#"), std::string::npos);
  EXPECT_NE(text.front(), '#');
  EXPECT_NE(text.front(), '\n');
}

TEST(PerfLog, IsDeterministicAndSorted) {
  Profile profile = GoldenProfile();
  const std::string first = PerfLogText(profile);
  std::reverse(profile.samples.begin(), profile.samples.end());
  EXPECT_EQ(PerfLogText(profile), first);

  std::vector<std::string> lines;
  std::istringstream in(first);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
}

TEST(PerfLog, EmptyProfileWritesNothing) {
  EXPECT_EQ(PerfLogText(Profile{}), "");
  EXPECT_TRUE(ParsePerfannoLog("").ok());
}

// The reader is only useful if it rejects what breaks perfanno.
TEST(PerfannoReader, ParsesWellFormedText) {
  const PerfannoLog log =
      ParsePerfannoLog("main /a/m.cpp:3;/a/anon.cpp:4;std::map<int, int>::at() /a b/c.h:55 12\n"
                       "f /x.cpp:1 1\n");
  ASSERT_TRUE(log.ok()) << log.error;
  ASSERT_EQ(log.stacks.size(), 2u);
  EXPECT_EQ(log.stacks[0], (PerfannoStack{{F("main", "/a/m.cpp", 3), F("", "/a/anon.cpp", 4),
                                           F("std::map<int, int>::at()", "/a b/c.h", 55)},
                                          12}));
  EXPECT_EQ(log.stacks[1], (PerfannoStack{{F("f", "/x.cpp", 1)}, 1}));
}

TEST(PerfannoReader, FollowsPerfannosPatternsForUnsanitisedNames) {
  // perfanno takes the path from the first '/': for "operator/" it would read the symbol
  // "operator" and the path "/ /x/a.cpp".
  PerfannoLog log = ParsePerfannoLog("operator/ /x/a.cpp:3 1\n");
  EXPECT_FALSE(log.ok());
  EXPECT_NE(log.error.find("operator/ /x/a.cpp:3"), std::string::npos) << log.error;
  // A frame ends at the first ":<digits>": the lambda name is cut in two.
  EXPECT_FALSE(ParsePerfannoLog("(lambda at f.cpp:12:3) /x/a.cpp:5 1\n").ok());
  // A frame without file:line is glued onto the next one.
  log = ParsePerfannoLog("[truncated];main /x/m.cpp:1 1\n");
  EXPECT_FALSE(log.ok());
  EXPECT_NE(log.error.find("glued"), std::string::npos) << log.error;
}

TEST(PerfannoReader, RejectsWhatBreaksTheLoad) {
  const char* bad[] = {
      "f /x.cpp:1 1\r\n",             // CR
      "f /x.cpp:1 1\n\n",             // blank line
      "f /x.cpp:1 1 \n",              // trailing space
      "# comment\nf /x.cpp:1 1\n",    // comment
      "f /x.cpp:1 1",                 // no final newline
      "f /x.cpp:1\n",                 // no count
      "f /x.cpp:1  1\n",              // two spaces before the count
      "f /x.cpp:1 x 1\n",             // junk before the count
      "f /x.cpp:1 0\n",               // zero count
      "7\n",                          // no frames
      "f x.cpp:1 1\n",                // relative path
      " f /x.cpp:1 1\n",              // leading space in the symbol
      "f/x.cpp:1 1\n",                // no space before the path
      "f /x.cpp:1;;g /y.cpp:2 1\n",   // empty frame
      ";f /x.cpp:1 1\n",              // empty first frame
      "f /x.cpp:1g /y.cpp:2 1\n",     // frames not separated by ';'
      "f /x.cpp:0 1\n",               // line 0
  };
  for (const char* text : bad) {
    EXPECT_FALSE(ParsePerfannoLog(text).ok()) << "accepted: \"" << text << "\"";
  }
}

}  // namespace
}  // namespace inprof::test
