// Profile-guided code search on a real profile: the runtime profiles a fixture whose four
// functions share one pattern, of which two are hot by construction, and grep, ripgrep and
// git grep output piped into `inprof hot` keeps only the hits in the hot functions.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hot_test.h"

namespace inprof::test {
namespace {

constexpr const char* kPattern = "std::string s = std::to_string(i);";

// Line numbers of the pattern, in order of the functions that contain it.
struct PatternLines {
  int log_startup = -1, render_rows = -1, parse_config = -1, format_ids = -1;
};

PatternLines FindPatternLines(const std::string& source) {
  PatternLines p;
  std::ifstream in(source);
  int* next = nullptr;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find("size_t log_startup(") != std::string::npos) next = &p.log_startup;
    if (line.find("size_t render_rows(") != std::string::npos) next = &p.render_rows;
    if (line.find("size_t parse_config(") != std::string::npos) next = &p.parse_config;
    if (line.find("size_t format_ids(") != std::string::npos) next = &p.format_ids;
    if (next && line.find(kPattern) != std::string::npos) {
      *next = n;
      next = nullptr;
    }
  }
  return p;
}

class HotRealProfile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    profile_ = new std::string(*dir_ + "/profile.json");
    const ProcessResult run =
        RunProcess({INPROF_CODESEARCH_FIXTURE, "1.5"}, {{"LD_PRELOAD", PreloadValue()},
                                                        {"INPROF_OUTPUT", *profile_},
                                                        {"INPROF_FREQUENCY", "997"},
                                                        {"INPROF_ENGINE", "timer"}});
    run_error_ = new std::string(run.exit_code == 0 ? "" : "fixture failed: " + run.err);
    // The search runs over a copy, as over a checkout elsewhere: --map says where.
    tree_ = new std::string(*dir_ + "/tree");
    std::filesystem::create_directories(*tree_);
    std::filesystem::copy_file(INPROF_CODESEARCH_SOURCE, *tree_ + "/codesearch.cpp");
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete profile_;
    delete run_error_;
    delete tree_;
  }
  void SetUp() override { ASSERT_EQ(*run_error_, "") << *run_error_; }

  ProcessResult Pipe(const std::string& tool, const std::string& options = "") {
    char* real = realpath(INPROF_CODESEARCH_SOURCE, nullptr);
    std::string source_dir = real ? real : INPROF_CODESEARCH_SOURCE;
    free(real);
    source_dir = source_dir.substr(0, source_dir.rfind('/'));
    return Shell("cd " + ShellQuote(*tree_) + " && " + tool + " | \"$INPROF\" hot " + options +
                 " --map " + ShellQuote(source_dir + "=" + *tree_) + " " + ShellQuote(*profile_));
  }

  // The hits that must pass, and those that must not.
  void ExpectOnlyHotFunctions(const ProcessResult& r) {
    const PatternLines p = FindPatternLines(INPROF_CODESEARCH_SOURCE);
    ASSERT_GT(p.format_ids, 0);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::set<std::string> hits = HitLocations(r.out);
    const std::string file = "codesearch.cpp:";
    EXPECT_TRUE(hits.count(file + std::to_string(p.render_rows))) << r.out << r.err;
    EXPECT_TRUE(hits.count(file + std::to_string(p.format_ids))) << r.out << r.err;
    EXPECT_FALSE(hits.count(file + std::to_string(p.log_startup))) << r.out;
    EXPECT_FALSE(hits.count(file + std::to_string(p.parse_config))) << r.out;
    EXPECT_EQ(hits.size(), 2u) << r.out;
  }

  static std::string* dir_;
  static std::string* profile_;
  static std::string* run_error_;
  static std::string* tree_;
};
std::string* HotRealProfile::dir_;
std::string* HotRealProfile::profile_;
std::string* HotRealProfile::run_error_;
std::string* HotRealProfile::tree_;

const std::string kGrepPattern = "'std::string s = std::to_string(i);'";

TEST_F(HotRealProfile, GrepN) {
  ExpectOnlyHotFunctions(Pipe("grep -n -F " + kGrepPattern + " codesearch.cpp /dev/null"));
}

TEST_F(HotRealProfile, Ripgrep) {
  if (!HaveTool("rg")) GTEST_SKIP() << "ripgrep is not installed (scripts/install-deps adds it)";
  ExpectOnlyHotFunctions(Pipe("rg -n --column -F " + kGrepPattern));
}

TEST_F(HotRealProfile, GitGrep) {
  if (!HaveTool("git")) GTEST_SKIP() << "git is not installed (scripts/install-deps adds it)";
  ASSERT_EQ(Shell("cd " + ShellQuote(*tree_) + " && (test -d .git || git init -q) && git add .")
                .exit_code,
            0);
  ExpectOnlyHotFunctions(Pipe("git grep -n -F " + kGrepPattern));
}

TEST_F(HotRealProfile, SharesAndLevels) {
  // render_rows gets ~60 % and format_ids ~40 % of the CPU; the pattern line carries most of
  // each (the loop around it, the clock reads and the call into the function the rest).
  const PatternLines p = FindPatternLines(INPROF_CODESEARCH_SOURCE);
  const ProcessResult r =
      Shell("cd " + ShellQuote(*tree_) + " && \"$INPROF\" query --json " + ShellQuote(*profile_) +
            " " + INPROF_CODESEARCH_SOURCE + ":" + std::to_string(p.render_rows) + " " +
            INPROF_CODESEARCH_SOURCE + ":" + std::to_string(p.format_ids));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Both are the hottest line of their function.
  size_t local5 = 0;
  for (size_t at = 0; (at = r.out.find("\"local_heat\":5", at)) != std::string::npos; ++at) {
    ++local5;
  }
  EXPECT_EQ(local5, 2u) << r.out;
  // Their inclusive shares are about 56 and 37 % (60 and 40 % less the loop overhead): at
  // 46 %, only render_rows's line passes.
  const ProcessResult half =
      Pipe("grep -n -F " + kGrepPattern + " codesearch.cpp /dev/null", "--min-percent 46");
  EXPECT_EQ(HitLocations(half.out),
            std::set<std::string>{"codesearch.cpp:" + std::to_string(p.render_rows)})
      << half.out;
}

}  // namespace
}  // namespace inprof::test
