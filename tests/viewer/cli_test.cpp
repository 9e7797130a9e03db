// The viewer's command-line parts on their own: option specs, FILE:LINE[-LINE] and numbers
// (viewer/src/cli.h), search-tool hit lines (hit_line.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli.h"
#include "hit_line.h"

namespace inprof::viewer {
namespace {

struct Parsed {
  bool ok = false, help = false;
  std::vector<std::string> positional;
  std::string error;
};

Parsed ParseTop(std::vector<std::string> args, const std::vector<OptionSpec>& specs) {
  Parsed p;
  args.insert(args.begin(), "top");
  const Status s = ParseOptions("top", args, 1, specs, &p.positional, &p.help);
  p.ok = s.ok();
  p.error = s.message();
  return p;
}

TEST(ParseOptions, FlagsValuesAndPositionals) {
  bool json = false;
  size_t n = 10;
  std::string event;
  const std::vector<OptionSpec> specs = {Flag({"--json"}, &json),
                                         Count({"-n"}, "a positive number", &n, 1, 100),
                                         Text({"-e", "--event"}, "an event name", &event)};
  const Parsed p = ParseTop({"--json", "-n", "5", "a.json", "--event=wall", "--", "-x"}, specs);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(json);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(event, "wall");
  EXPECT_EQ(p.positional, (std::vector<std::string>{"a.json", "-x"}));  // "--" ends options
  EXPECT_TRUE(ParseTop({"a", "-h"}, specs).help);
}

TEST(ParseOptions, ErrorsSayWhatAndWhy) {
  bool json = false;
  size_t n = 10;
  const std::vector<OptionSpec> specs = {Flag({"--json"}, &json),
                                         Count({"-n"}, "a positive number", &n, 1, 100)};
  EXPECT_EQ(ParseTop({"--bogus"}, specs).error, "unknown option '--bogus' for top");
  EXPECT_EQ(ParseTop({"-n"}, specs).error, "-n needs a positive number");
  EXPECT_EQ(ParseTop({"-n", "0"}, specs).error, "-n needs a positive number, not '0'");
  EXPECT_EQ(ParseTop({"-n", "101"}, specs).error, "-n needs a positive number, not '101'");
  EXPECT_EQ(ParseTop({"--json=1"}, specs).error, "--json takes no value");
  EXPECT_EQ(n, 10u);  // a refused value leaves the default alone
}

TEST(ParseSourceRange, LinesAndRanges) {
  SourceRange r;
  ASSERT_TRUE(ParseSourceRange("src/a.cpp:12", &r));
  EXPECT_EQ(r.file, "src/a.cpp");
  EXPECT_EQ(r.first, 12u);
  EXPECT_EQ(r.last, 12u);
  ASSERT_TRUE(ParseSourceRange("/v1:2/x.cpp:7-9", &r));  // ':' inside the path
  EXPECT_EQ(r.file, "/v1:2/x.cpp");
  EXPECT_EQ(r.first, 7u);
  EXPECT_EQ(r.last, 9u);
  for (const char* bad : {"a.cpp", "a.cpp:", ":12", "a.cpp:0", "a.cpp:9-7", "a.cpp:1-", "a.cpp:x",
                          "std::vector", "ns::f:12x", "a.cpp:1234567890"}) {
    EXPECT_FALSE(ParseSourceRange(bad, &r)) << bad;
  }
}

TEST(ParseNumbers, CountAndDecimal) {
  size_t n = 0;
  EXPECT_TRUE(ParseCount("42", &n));
  EXPECT_EQ(n, 42u);
  for (const char* bad : {"", "-1", "4 2", "1e3", "1234567890"})
    EXPECT_FALSE(ParseCount(bad, &n)) << bad;
  double d = 0;
  EXPECT_TRUE(ParseDecimal("0.25", &d));
  EXPECT_EQ(d, 0.25);
  EXPECT_FALSE(ParseDecimal("0.25x", &d));
  EXPECT_FALSE(ParseDecimal("", &d));
}

TEST(ParseHitLine, EveryToolsForm) {
  HitLine h;
  ASSERT_TRUE(ParseHitLine("src/a.cpp:12:  x = 1;", &h));  // grep -n, git grep -n
  EXPECT_EQ(h.path, "src/a.cpp");
  EXPECT_EQ(h.first, 12u);
  EXPECT_EQ(h.last, 12u);
  EXPECT_EQ(h.column, 0u);
  ASSERT_TRUE(ParseHitLine("src/a.cpp:12:5:  x = 1;", &h));  // rg -n --column, --vimgrep
  EXPECT_EQ(h.column, 5u);
  ASSERT_TRUE(ParseHitLine("a.cpp:3-7:range", &h));  // multi-line
  EXPECT_EQ(h.first, 3u);
  EXPECT_EQ(h.last, 7u);
  ASSERT_TRUE(ParseHitLine("a.cpp:3:1-7:4:columns", &h));
  EXPECT_EQ(h.first, 3u);
  EXPECT_EQ(h.last, 7u);
  ASSERT_TRUE(ParseHitLine("/v1:2/x.cpp:7:text", &h));  // ':' in the path, no digits after it
  EXPECT_EQ(h.path, "/v1:2/x.cpp");
  EXPECT_EQ(h.first, 7u);
  for (const char* not_a_hit : {"--", "src/a.cpp-11-context", "Binary file a.o matches", ""}) {
    EXPECT_FALSE(ParseHitLine(not_a_hit, &h)) << not_a_hit;
  }
  EXPECT_EQ(StripColor("\033[35msrc/a.cpp\033[0m:\033[32m12\033[0m:x"), "src/a.cpp:12:x");
}

}  // namespace
}  // namespace inprof::viewer
