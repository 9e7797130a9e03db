// The heat a new user sees on the first program they profile: three one-line loops with 50,
// 30 and 20 % of the time under main and a driver (fixtures/loops.cpp), as functions of their
// own, inlined into the driver, and in a second file. Every command that shows heat (annotate
// with and without a file, hot, grep, query) must show the three loops hot, in order, and the
// call chain that only passes the time on no hotter than the loops.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "hot_test.h"
#include "inprof/annotation_json.h"

namespace inprof::test {
namespace {

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real ? real : path;
  free(real);
  return out;
}

struct Shape {
  const char* name;    // loops.cpp's argv[1]
  const char* marker;  // the comment on its loop lines
  std::string file;    // the file that holds the loops
};

std::vector<Shape> Shapes() {
  const std::string loops = RealPath(INPROF_LOOPS_SOURCE);
  const std::string other = loops.substr(0, loops.rfind('/')) + "/loops_other.cpp";
  return {{"calls", "CALLS_LOOP", loops},
          {"inline", "INLINE_LOOP", loops},
          {"files", "FILES_LOOP", other}};
}

// Line number of each "<marker> <share>" comment in `file` ("50", "30", "20", "cold").
std::map<std::string, int> MarkerLines(const std::string& file, const std::string& marker) {
  std::map<std::string, int> lines;
  std::istringstream in(ReadFile(file));
  std::string text;
  const std::regex re("// .*" + marker + " (50|30|20|cold)");
  std::smatch m;
  for (int n = 1; std::getline(in, text); ++n) {
    if (std::regex_search(text, m, re)) lines[m[1]] = n;
  }
  return lines;
}

// Heat level per line number from `inprof annotate` text output, and the order lines appear.
struct Annotated {
  std::string first_file;
  std::map<int, int> level;
  std::vector<int> order;
};

Annotated ParseAnnotate(const std::string& out) {
  Annotated a;
  std::istringstream in(out);
  std::string text;
  const std::regex row(R"(^\s+[\d.]+%\s+[\d.]+%\s+(\d)\s+(\d+) \| )");
  std::smatch m;
  while (std::getline(in, text)) {
    if (a.first_file.empty() && text.starts_with("/")) a.first_file = text;
    if (std::regex_search(text, m, row)) {
      const int line = std::stoi(m[2]);
      a.level[line] = std::stoi(m[1]);
      a.order.push_back(line);
    }
  }
  return a;
}

class HeatReal : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    shape_ = Shapes()[GetParam()];
    lines_ = MarkerLines(shape_.file, shape_.marker);
    ASSERT_EQ(lines_.size(), 4u) << shape_.file;
    // 997 Hz for 0.8 CPU seconds: ~800 samples, so neighbouring loops are never within noise
    // of each other: the 10 points between the 30 % and the 20 % loop are 3.9 standard errors
    // of their difference (with 300 samples, 2.4: about one run in a hundred swapped them).
    profile_ = MakeTempDir() + "/" + shape_.name + ".json";
    const ProcessResult run = RunProcess(
        {INPROF_LOOPS_FIXTURE, shape_.name, "0.8"},
        {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", profile_}, {"INPROF_FREQUENCY", "997"}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }

  // The three loops are hot with levels 5 >= l30 >= l20 >= 1.
  void ExpectLoopLevels(const std::map<int, int>& level, const std::string& out) {
    const int l50 = level.count(lines_["50"]) ? level.at(lines_["50"]) : -1;
    const int l30 = level.count(lines_["30"]) ? level.at(lines_["30"]) : -1;
    const int l20 = level.count(lines_["20"]) ? level.at(lines_["20"]) : -1;
    EXPECT_EQ(l50, 5) << out;
    EXPECT_LE(l30, l50) << out;
    EXPECT_LE(l20, l30) << out;
    EXPECT_GE(l20, 1) << out;
    // Nothing on the call chain outranks the coldest loop.
    for (const auto& [line, l] : level) {
      if (line != lines_["50"] && line != lines_["30"] && line != lines_["20"]) {
        EXPECT_LE(l, l20) << "line " << line << "\n" << out;
      }
    }
  }
  std::set<std::string> LoopLocations() {
    std::set<std::string> hot;
    for (const char* share : {"50", "30", "20"}) {
      hot.insert(shape_.file + ":" + std::to_string(lines_[share]));
    }
    return hot;
  }

  Shape shape_;
  std::string profile_;
  std::map<std::string, int> lines_;
};

TEST_P(HeatReal, AnnotateWithoutAFileOpensTheLoopsHottestFirst) {
  const ProcessResult r = Shell("\"$INPROF\" annotate " + ShellQuote(profile_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Annotated a = ParseAnnotate(r.out);
  EXPECT_EQ(a.first_file, shape_.file) << r.out;
  ExpectLoopLevels(a.level, r.out);
  ASSERT_FALSE(a.order.empty());
  EXPECT_EQ(a.order.front(), lines_["50"]) << "the hottest region comes first\n" << r.out;
}

TEST_P(HeatReal, AnnotateANamedFileShowsTheLoops) {
  const ProcessResult r =
      Shell("\"$INPROF\" annotate " + ShellQuote(profile_) + " " + ShellQuote(shape_.file));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectLoopLevels(ParseAnnotate(r.out).level, r.out);
}

TEST_P(HeatReal, HotKeepsExactlyTheLoopLinesOfGrepHits) {
  // grep -n's hits include the marker on a loop that never ran: a cold line.
  const ProcessResult all =
      Shell("grep -Hn " + ShellQuote(shape_.marker) + " " + ShellQuote(shape_.file));
  ASSERT_EQ(all.exit_code, 0);
  ASSERT_EQ(HitLocations(all.out).size(), 4u) << all.out;
  const ProcessResult r =
      Shell("grep -Hn " + ShellQuote(shape_.marker) + " " + ShellQuote(shape_.file) +
            " | \"$INPROF\" hot " + ShellQuote(profile_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HitLocations(r.out), LoopLocations()) << r.out;
  // The level in each tag follows the loop's share.
  std::map<int, int> level;
  const std::regex tag(R"(:(\d+):\[G(\d) )");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), tag), end; it != end; ++it) {
    level[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  }
  ExpectLoopLevels(level, r.out);
}

TEST_P(HeatReal, GrepAgreesWithHot) {
  const std::string dir = shape_.file.substr(0, shape_.file.rfind('/'));
  const ProcessResult r = Shell("\"$INPROF\" grep " + ShellQuote(shape_.marker) + " " +
                                ShellQuote(profile_) + " " + ShellQuote(shape_.file));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> hits;
  for (const std::string& hit : HitLocations(r.out)) {
    hits.insert(hit.starts_with("/") ? hit : dir + "/" + hit.substr(hit.rfind('/') + 1));
  }
  EXPECT_EQ(hits, LoopLocations()) << r.out;
}

TEST_P(HeatReal, QueryReportsTheLoopsHotAndTheColdLineCold) {
  for (const char* share : {"50", "30", "20", "cold"}) {
    const std::string where = shape_.file + ":" + std::to_string(lines_[share]);
    const ProcessResult r =
        Shell("\"$INPROF\" query --json " + ShellQuote(profile_) + " " + ShellQuote(where));
    const bool hot = std::string(share) != "cold";
    EXPECT_EQ(r.exit_code, hot ? 0 : 1) << share << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(hot ? "\"hot\":true" : "\"hot\":false"), std::string::npos)
        << share << "\n"
        << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HeatReal, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(Shapes()[info.param].name);
                         });

}  // namespace
}  // namespace inprof::test

namespace inprof::test {
namespace {

// A large real program, DWARF-unwound: the profile generator of the viewer benchmarks (the
// exporters' real writers over a generated call graph), profiled as a user would profile it.
// annotate without a file must open the file with the most self weight, and the levels must
// keep their promises on hundreds of real lines.
TEST(HeatLargeProgram, AnnotateOpensTheFileWithTheMostSelfWeight) {
  const std::string dir = MakeTempDir();
  const std::string profile = dir + "/large.json";
  const ProcessResult run = RunProcess({INPROF_LARGE_FIXTURE, dir + "/generated.json", "0.15"},
                                       {{"LD_PRELOAD", PreloadValue()},
                                        {"INPROF_OUTPUT", profile},
                                        {"INPROF_UNWIND", "dwarf"},
                                        {"INPROF_FREQUENCY", "499"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Annotations a;
  const Status read = ReadAnnotationJson(ReadFile(profile), profile, &a);
  ASSERT_TRUE(read.ok()) << read.message();
  std::string most;
  int64_t most_self = -1;
  size_t sampled = 0;
  int64_t max_self = 0;
  for (const FileStats& file : a.files) {
    int64_t self = 0;
    for (const LineStats& line : file.lines) {
      self += line.self[0];
      sampled += line.inclusive[0] > 0;
      max_self = std::max(max_self, line.self[0]);
    }
    if (self > most_self) most_self = self, most = file.path;
  }
  EXPECT_GE(sampled, 100u) << "a large program samples hundreds of lines";
  const int64_t total = a.events[0].total_weight;
  for (const FileStats& file : a.files) {
    for (const LineStats& line : file.lines) {
      if (line.self[0] == max_self) {
        EXPECT_EQ(line.global_heat[0], 5) << file.path << ":" << line.line;
      }
      if (line.self[0] * 100 >= total || line.inclusive[0] * 100 >= total) {
        EXPECT_GE(line.global_heat[0], 1) << file.path << ":" << line.line;
      }
      if (line.self[0] == 0) {
        EXPECT_LE(line.global_heat[0], 1) << file.path << ":" << line.line;
      }
    }
  }
  const ProcessResult r = Shell("\"$INPROF\" annotate " + ShellQuote(profile));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Annotated shown = ParseAnnotate(r.out);
  // Files with equal self weight are ordered by inclusive weight: accept any of the tied.
  int64_t shown_self = -1;
  for (const FileStats& file : a.files) {
    if (file.path != shown.first_file) continue;
    shown_self = 0;
    for (const LineStats& line : file.lines) shown_self += line.self[0];
  }
  EXPECT_EQ(shown_self, most_self)
      << "opened " << shown.first_file << ", most self weight in " << most << "\n"
      << r.out.substr(0, 2000);
}

}  // namespace
}  // namespace inprof::test
