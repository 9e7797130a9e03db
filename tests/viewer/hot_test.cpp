// `inprof hot`, `inprof grep` and `inprof query` on a synthetic profile (tests/data/codesearch:
// profile.folded samples src/ as if built under /build/app/src): golden outputs (INPROF_BLESS=1
// rewrites them), heat levels and thresholds against perf-heatmap's chunk table, every way a
// path is resolved (relative, remapped, realpath, base name, ambiguous), the search tools'
// output formats, and exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hot_test.h"
#include "test_support.h"

namespace inprof::test {

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ProcessResult Shell(const std::string& command) {
  return RunProcess({"/bin/sh", "-c", command}, {{"INPROF", INPROF_VIEWER}});
}

bool HaveTool(const std::string& tool) {
  return Shell("command -v " + tool + " >/dev/null 2>&1").exit_code == 0;
}

std::set<std::string> HitLocations(const std::string& output) {
  std::set<std::string> hits;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("./")) line.erase(0, 2);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t end = line.find_first_not_of("0123456789", colon + 1);
    hits.insert(line.substr(0, end));
  }
  return hits;
}

namespace {

std::string CodeSearchData(const std::string& relative) {
  return SourceDir() + "/tests/data/codesearch/" + relative;
}
const std::string kProfile = CodeSearchData("profile.folded");
// The goldens and level tables below were made with perf-heatmap's levels (the option that
// reproduces gogrep's); the default method has tests of its own (heat_real_test.cpp).
const std::string kRank = "--heat perf-heatmap ";
const std::string kSrc = CodeSearchData("src");
const std::string kMap = "--map=/build/app/src=" + CodeSearchData("src");

using ::inprof::test::CheckGolden;  // tests/support: compares text with a golden file

// Output against tests/data/codesearch/NAME: the command succeeded, a pipe got no colour.
void CheckGolden(const std::string& name, const ProcessResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "colour on a pipe";
  CheckGolden("codesearch/" + name, Portable(r.out));
}

// `inprof hot ARGS` in `dir` with `input` on stdin.
ProcessResult Hot(const std::string& input, const std::string& args,
                  const std::string& dir = kSrc) {
  const std::string file = MakeTempDir() + "/input";
  std::ofstream(file, std::ios::binary) << input;
  return Shell("cd " + ShellQuote(dir) + " && \"$INPROF\" hot " + args + " < " + ShellQuote(file));
}
ProcessResult HotFile(const std::string& args) {
  return Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" hot " + args + " < " +
               ShellQuote(CodeSearchData("hits.txt")));
}

// Hits "render.cpp:N:x" for N in [first, last].
std::string RenderHits(int first, int last, const std::string& file = "render.cpp") {
  std::string input;
  for (int n = first; n <= last; ++n) input += file + ":" + std::to_string(n) + ":x\n";
  return input;
}
std::set<std::string> Lines(const std::string& file, std::vector<int> lines) {
  std::set<std::string> out;
  for (int n : lines) out.insert(file + ":" + std::to_string(n));
  return out;
}
std::vector<int> Range(int first, int count) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

// ---------------------------------------------------------------------------------------
// Goldens.

TEST(HotGolden, AnnotatesHotHitsOfEveryInputForm) {
  CheckGolden("hot.txt", HotFile(kRank + ShellQuote(kMap) + " " + ShellQuote(kProfile)));
}
TEST(HotGolden, JsonLinesAbsolute) {
  CheckGolden("hot.jsonl", HotFile(kRank + "--json --absolute " + ShellQuote(kMap) + " " +
                                   ShellQuote(kProfile)));
}
TEST(HotGolden, LocalLevelsAtThresholdOne) {
  CheckGolden("hot_local.txt", HotFile("--local --threshold 1 --level 3 " + ShellQuote(kMap) + " " +
                                       ShellQuote(kProfile)));
}
TEST(HotGolden, Grep) {
  CheckGolden("grep.txt", Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" grep to_string " +
                                kRank + ShellQuote(kMap) + " " + ShellQuote(kProfile)));
}
TEST(HotGolden, GrepContextAndJson) {
  CheckGolden("grep_context.txt",
              Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" grep -C 1 --level 4 'std::\\w+' " +
                    kRank + ShellQuote(kMap) + " " + ShellQuote(kProfile)));
  CheckGolden("grep.jsonl",
              Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" grep --json -w " + kRank +
                    "-e header -e lines " + ShellQuote(kMap) + " " + ShellQuote(kProfile)));
}
TEST(HotGolden, Query) {
  const std::string args = kRank + ShellQuote(kMap) + " " + ShellQuote(kProfile) +
                           " render.cpp:9-12 disk/util.cpp:12 render.cpp:27 nothere.cpp:3";
  CheckGolden("query.txt", Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" query " + args));
  CheckGolden("query.json",
              Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" query --json " + args));
}

// ---------------------------------------------------------------------------------------
// Levels and thresholds, derived from perf-heatmap's chunk table (docs/heat.md):
// chunk sizes from level 5 down are 1,1,2,1,2 for 7 points and 2,2,2,2,2 for 10.

// render() samples lines 10..19 with decreasing weight; layout() lines 32..38.
TEST(HotLevels, ChunkTableAtThresholdOne) {
  const std::map<int, std::vector<int>> chunks = {{10, {2, 2, 2, 2, 2}}, {7, {1, 1, 2, 1, 2}}};
  for (const auto& [points, sizes] : chunks) {
    const int first = points == 10 ? 10 : 32;
    for (int level = 1; level <= 5; ++level) {
      int expected = 0;
      for (int l = 5; l >= level; --l) expected += sizes[static_cast<size_t>(5 - l)];
      const ProcessResult r = Hot(
          RenderHits(first, first + points - 1),
          "--local --threshold 1 --level " + std::to_string(level) + " " + ShellQuote(kProfile));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      // The hottest lines come first (weights decrease with the line number).
      EXPECT_EQ(HitLocations(r.out), Lines("render.cpp", Range(first, expected)))
          << points << " points, level " << level << "\n"
          << r.out;
    }
  }
}

TEST(HotLevels, DefaultThresholdLevelsTheTopHalf) {
  // Half of 10 points get a level, one each: 5,4,3,2,1; half of 7 (3 points, fewer than 5):
  // 5,4,3.
  for (int level = 1; level <= 5; ++level) {
    ProcessResult r = Hot(RenderHits(10, 19), kRank + "--local --level " + std::to_string(level) +
                                                  " " + ShellQuote(kProfile));
    EXPECT_EQ(HitLocations(r.out), Lines("render.cpp", Range(10, 6 - level))) << r.out;
    r = Hot(RenderHits(32, 38),
            kRank + "--local --level " + std::to_string(level) + " " + ShellQuote(kProfile));
    EXPECT_EQ(HitLocations(r.out), Lines("render.cpp", Range(32, std::min(3, 6 - level)))) << r.out;
    EXPECT_EQ(r.exit_code, 0);
  }
}

TEST(HotLevels, GlobalLevelsRankAcrossFunctions) {
  // Global levels rank all 27 points: main's call line (inclusive 77 %) first, then render's
  // lines; layout's lines (below 1 %) get none at the default threshold.
  ProcessResult r = Hot(RenderHits(32, 38) + RenderHits(10, 19), kRank + ShellQuote(kProfile));
  const std::set<std::string> hot = HitLocations(r.out);
  EXPECT_TRUE(hot.count("render.cpp:10")) << r.out;
  for (int n = 32; n <= 38; ++n) EXPECT_FALSE(hot.count("render.cpp:" + std::to_string(n)));
  // Every line of the profile gets a level at threshold 1.
  r = Hot(RenderHits(32, 38), "--threshold 1 " + ShellQuote(kProfile));
  EXPECT_EQ(HitLocations(r.out).size(), 7u) << r.out;
  r = Hot("main.cpp:8:x\n", kRank + "--level 5 " + ShellQuote(kProfile));
  EXPECT_EQ(HitLocations(r.out), Lines("main.cpp", {8})) << r.out;
}

TEST(HotLevels, MinPercentUsesInclusiveShare) {
  // render.cpp:10 has 100 of 713 (14.03 %), :11 90 (12.62 %), :12 80 (11.22 %).
  ProcessResult r = Hot(RenderHits(10, 19), "--min-percent 12 " + ShellQuote(kProfile));
  EXPECT_EQ(HitLocations(r.out), Lines("render.cpp", {10, 11})) << r.out;
  r = Hot("main.cpp:8:x\nrender.cpp:10:x\n", "--min-percent 50 " + ShellQuote(kProfile));
  EXPECT_EQ(HitLocations(r.out), Lines("main.cpp", {8})) << r.out;
  r = Hot(RenderHits(10, 19), "--min-percent 99 " + ShellQuote(kProfile));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
}

TEST(HotLevels, MultiLineHitIsHotWhenAnyLineIs) {
  // Globally render.cpp:17 is level 1, :18 and :19 are 0 (perf-heatmap's chunk table, 27 points).
  const ProcessResult r =
      Hot("render.cpp:18-19:cold range\nrender.cpp:17-19:range\nrender.cpp:18:1-19:4:cold\n"
          "render.cpp:17:3-18:1:columns\n",
          kRank + ShellQuote(kProfile));
  EXPECT_EQ(r.out.find("cold"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("render.cpp:17-19:[G1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("render.cpp:17:3-18:1:[G1 "), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------------------
// Path resolution.

std::string JsonMatch(const ProcessResult& r) {
  const size_t at = r.out.find("\"match\":\"");
  if (at == std::string::npos) return "";
  return r.out.substr(at + 9, r.out.find('"', at + 9) - at - 9);
}

TEST(HotPaths, RelativePathsResolveAgainstRoot) {
  const std::string other = MakeTempDir();
  // From another directory, --root says where the relative paths start.
  ProcessResult r =
      Hot("render.cpp:10:x\n./sub/../render.cpp:11:x\n",
          "--json --root " + ShellQuote(kSrc) + " " + ShellQuote(kMap) + " " + ShellQuote(kProfile),
          other);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out << r.err;
  EXPECT_EQ(JsonMatch(r), "exact") << r.out;
  // Without --root, the current directory.
  r = Hot("render.cpp:10:x\n", "--json " + ShellQuote(kMap) + " " + ShellQuote(kProfile));
  EXPECT_EQ(JsonMatch(r), "exact") << r.out;
  // A map to a relative directory is relative to the root as well.
  r = Hot("src/render.cpp:10:x\n", "--json --map /build/app=. " + ShellQuote(kProfile),
          CodeSearchData(""));
  EXPECT_EQ(JsonMatch(r), "exact") << r.out;
}

TEST(HotPaths, RemappedPathsAndRealpath) {
  // Without the map the profile's /build/app/src does not exist here: only the base name
  // matches. With it, the exact path.
  ProcessResult r = Hot("render.cpp:10:x\n", "--json " + ShellQuote(kProfile));
  EXPECT_EQ(JsonMatch(r), "basename") << r.out;
  r = Hot("render.cpp:10:x\n", "--json " + ShellQuote(kMap) + " " + ShellQuote(kProfile));
  EXPECT_EQ(JsonMatch(r), "exact") << r.out;
  // A checkout reached through a symlink: the realpath is what the profile names.
  const std::string dir = MakeTempDir();
  const std::string link = dir + "/link";
  ASSERT_EQ(symlink(kSrc.c_str(), link.c_str()), 0);
  r = Hot("link/render.cpp:10:x\n", "--json " + ShellQuote(kMap) + " " + ShellQuote(kProfile), dir);
  EXPECT_EQ(JsonMatch(r), "realpath") << r.out;
  EXPECT_NE(r.out.find("\"file\":" + std::string("\"") + kSrc + "/render.cpp\""), std::string::npos)
      << r.out;
}

TEST(HotPaths, BaseNameNeverStandsForAFileThatExists) {
  // With the map, the profile's render.cpp exists here: another directory's render.cpp is
  // another file. Without it, the profile's path is absent and the base name applies.
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/render.cpp") << "// another render.cpp\n";
  ProcessResult r = Hot("render.cpp:10:x\n", ShellQuote(kMap) + " " + ShellQuote(kProfile), dir);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "");
  r = Hot("render.cpp:10:x\n", "--json " + ShellQuote(kProfile), dir);
  EXPECT_EQ(JsonMatch(r), "basename") << r.out;
}

TEST(HotPaths, BaseNameWithPathSuffix) {
  // A profile from another machine: only base names and path tails match.
  const std::string dir = MakeTempDir();
  ProcessResult r = Hot("checkout/net/util.cpp:5:x\n", "--json " + ShellQuote(kProfile), dir);
  EXPECT_EQ(JsonMatch(r), "basename") << r.out;
  EXPECT_NE(r.out.find("\"file\":\"/build/app/src/net/util.cpp\""), std::string::npos) << r.out;
  r = Hot("elsewhere/disk/util.cpp:5:x\n", "--json --local " + ShellQuote(kProfile), dir);
  EXPECT_NE(r.out.find("\"file\":\"/build/app/src/disk/util.cpp\""), std::string::npos) << r.out;
}

TEST(HotPaths, BaseNameSettledByTheFunctionAtTheHit) {
  const std::string dir = MakeTempDir();
  // Only disk/util.cpp has a sampled function around line 12 (sync_all).
  ProcessResult r = Hot("util.cpp:12:x\n", "--json " + ShellQuote(kProfile), dir);
  EXPECT_EQ(JsonMatch(r), "function") << r.out << r.err;
  EXPECT_NE(r.out.find("\"function\":\"sync_all\""), std::string::npos) << r.out;
  // Both have one around line 5 (send_all, flush_all): the local file names send_all.
  std::ofstream(dir + "/util.cpp") << "size_t send_all(const std::vector<std::string>& lines) {\n"
                                   << "  std::string header = std::to_string(lines.size());\n";
  r = Hot("util.cpp:5:x\n", "--json " + ShellQuote(kProfile), dir);
  EXPECT_EQ(JsonMatch(r), "function") << r.out << r.err;
  EXPECT_NE(r.out.find("\"file\":\"/build/app/src/net/util.cpp\""), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(HotPaths, AmbiguousBaseNameIsReportedNotGuessed) {
  const std::string dir = MakeTempDir();
  // A local util.cpp that names neither function; and one with no local file at all.
  std::ofstream(dir + "/util.cpp") << "// nothing here\n";
  for (const std::string path : {"util.cpp", "missing/util.cpp"}) {
    const ProcessResult r = Hot(path + ":5:x\n" + path + ":6:x\n", ShellQuote(kProfile), dir);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(path + ":5: ambiguous"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/build/app/src/disk/util.cpp"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/build/app/src/net/util.cpp"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(path + ":6:"), std::string::npos) << "reported once per path\n" << r.err;
  }
  // Cold in every candidate is just cold: nothing to report.
  const ProcessResult r = Hot("util.cpp:40:x\n", ShellQuote(kProfile), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "");
  // A map settles it.
  const ProcessResult mapped = Hot(
      "util.cpp:5:x\n",
      "--root " + ShellQuote(kSrc + "/net") + " " + ShellQuote(kMap) + " " + ShellQuote(kProfile),
      dir);
  EXPECT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_EQ(HitLocations(mapped.out), Lines("util.cpp", {5}));
}

// ---------------------------------------------------------------------------------------
// Search tools, run over a copy of the sources.

class HotTools : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir() + "/tree";
    std::filesystem::copy(kSrc, dir_, std::filesystem::copy_options::recursive);
  }
  ProcessResult Pipe(const std::string& tool) {
    return Shell("cd " + ShellQuote(dir_) + " && " + tool + " | \"$INPROF\" hot " + kRank +
                 "--map " + ShellQuote("/build/app/src=" + dir_) + " " + ShellQuote(kProfile));
  }
  // Default: global level >= 1 at threshold 0.5 (see hot.txt): render 10-17, the two
  // hot functions' header lines.
  const std::set<std::string> expected_ = {
      "render.cpp:10", "render.cpp:11", "render.cpp:12", "render.cpp:13",  "render.cpp:14",
      "render.cpp:15", "render.cpp:16", "render.cpp:17", "net/util.cpp:5", "disk/util.cpp:12"};
  std::string dir_;
};

TEST_F(HotTools, GrepN) {
  const ProcessResult r = Pipe("grep -rn 'std::to_string' .");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HitLocations(r.out), expected_) << r.out;
}

TEST_F(HotTools, RipgrepColumn) {
  if (!HaveTool("rg")) GTEST_SKIP() << "ripgrep is not installed (scripts/install-deps adds it)";
  const ProcessResult r = Pipe("rg -n --column 'std::to_string'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HitLocations(r.out), expected_) << r.out;
  EXPECT_NE(r.out.find("render.cpp:10:21:[G5 L5 "), std::string::npos) << r.out;
  // --vimgrep prints the same form, and colour codes from --color=always are understood.
  const ProcessResult colored = Pipe("rg --vimgrep --color=always 'std::to_string'");
  EXPECT_EQ(HitLocations(colored.out), expected_) << colored.out;
}

TEST_F(HotTools, GitGrep) {
  if (!HaveTool("git")) GTEST_SKIP() << "git is not installed (scripts/install-deps adds it)";
  ASSERT_EQ(Shell("cd " + ShellQuote(dir_) + " && git init -q && git add .").exit_code, 0);
  const ProcessResult r = Pipe("git grep -n 'std::to_string'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HitLocations(r.out), expected_) << r.out;
}

TEST_F(HotTools, InprofGrepMatchesGrepPipedIntoHot) {
  const ProcessResult piped = Pipe("grep -rn 'std::to_string' .");
  const ProcessResult direct =
      Shell("cd " + ShellQuote(dir_) + " && \"$INPROF\" grep " + kRank + "'std::to_string' --map " +
            ShellQuote("/build/app/src=" + dir_) + " " + ShellQuote(kProfile));
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(HitLocations(direct.out), HitLocations(piped.out)) << direct.out;
  // Named paths restrict the search and resolve like hot's (no map: by base name + suffix).
  const ProcessResult net = Shell("cd " + ShellQuote(dir_) + " && \"$INPROF\" grep to_string " +
                                  ShellQuote(kProfile) + " net");
  EXPECT_EQ(HitLocations(net.out), Lines("net/util.cpp", {5})) << net.out << net.err;
}

// ---------------------------------------------------------------------------------------
// grep options.

ProcessResult Grep(const std::string& args) {
  return Shell("cd " + ShellQuote(kSrc) + " && \"$INPROF\" grep " + kRank + args + " " +
               ShellQuote(kMap) + " " + ShellQuote(kProfile));
}

TEST(InprofGrep, RegexOptions) {
  EXPECT_EQ(HitLocations(Grep("-F 'to_string(v + 1'").out), Lines("render.cpp", {11}));
  EXPECT_EQ(HitLocations(Grep("'to_string\\(v \\+ [3-5]\\)'").out),
            Lines("render.cpp", {13, 14, 15}));
  EXPECT_EQ(HitLocations(Grep("-i 'STD::TO_STRING\\(V\\)'").out), Lines("render.cpp", {10}));
  const ProcessResult word = Grep("-w to_str");
  EXPECT_EQ(word.exit_code, 1) << word.out;
  EXPECT_EQ(HitLocations(Grep("to_str").out).size(), 10u);
  EXPECT_EQ(Grep("'(unclosed'").exit_code, 2);
}

TEST(InprofGrep, ContextGroupsAreSeparatedLikeGrep) {
  // Two hot matches in two files, one line of context each: two groups and one separator.
  const ProcessResult r = Grep("-C 1 -F 'std::string header'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "disk/util.cpp-11-size_t sync_all(const std::vector<std::string>& lines) {\n"
            "disk/util.cpp:12:[G2 L5 incl 5.61% self 5.61%]  std::string header = "
            "std::to_string(lines.size()) + \":\";\n"
            "disk/util.cpp-13-  return write_all(header, lines);\n"
            "--\n"
            "net/util.cpp-4-size_t send_all(const std::vector<std::string>& lines) {\n"
            "net/util.cpp:5:[G1 L5 incl 4.21% self 4.21%]  std::string header = "
            "std::to_string(lines.size());\n"
            "net/util.cpp-6-  return write_all(header, lines);\n");
}

TEST(InprofGrep, ColourOnRequest) {
  const ProcessResult r = Grep("--color=always -F 'to_string(v)'");
  EXPECT_NE(r.out.find("\033[01;31mto_string(v)\033[0m"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\033[1;31m[G5"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------------------
// Exit codes and errors.

TEST(HotErrors, ExitCodesLikeGrep) {
  EXPECT_EQ(Hot("render.cpp:10:x\n", ShellQuote(kProfile)).exit_code, 0);
  EXPECT_EQ(Hot("render.cpp:27:x\n", ShellQuote(kProfile)).exit_code, 1);
  EXPECT_EQ(Hot("", ShellQuote(kProfile)).exit_code, 1);
  ProcessResult r = Hot("just text\nmore\n", ShellQuote(kProfile));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no input line looked like a search hit"), std::string::npos) << r.err;

  const std::string bad = MakeTempDir() + "/bad.folded";
  std::ofstream(bad) << "a;b 1\nno count\n";
  r = Hot("render.cpp:10:x\n", ShellQuote(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("inprof: " + bad + ":2: expected", 0), 0u) << r.err;
  EXPECT_EQ(r.out, "");
  r = Hot("", "/nonexistent/profile.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;

  for (const std::string& args :
       {std::string(""), "--level 0 " + kProfile, "--level 6 " + kProfile,
        "--min-percent 101 " + kProfile, "--threshold 0 " + kProfile, "--bogus " + kProfile,
        kProfile + " " + kProfile, "--map nothing " + kProfile, "-e nope " + kProfile}) {
    r = Hot("render.cpp:10:x\n", args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("inprof: ", 0), 0u) << args << ": " << r.err;
  }
  EXPECT_EQ(Shell("\"$INPROF\" query " + ShellQuote(kProfile) + " render.cpp").exit_code, 2);
  EXPECT_EQ(Shell("\"$INPROF\" query " + ShellQuote(kProfile) + " render.cpp:9-3").exit_code, 2);
  EXPECT_EQ(Shell("\"$INPROF\" grep").exit_code, 2);
  EXPECT_EQ(Shell("\"$INPROF\" grep x " + ShellQuote(kProfile) + " /nonexistent").exit_code, 2);
}

TEST(HotErrors, QueryExitStatus) {
  const std::string q = "cd " + ShellQuote(kSrc) + " && \"$INPROF\" query " + ShellQuote(kMap) +
                        " " + ShellQuote(kProfile);
  EXPECT_EQ(Shell(q + " render.cpp:10").exit_code, 0);
  EXPECT_EQ(Shell(q + " render.cpp:27").exit_code, 1);
  EXPECT_EQ(Shell(q + " nothere.cpp:1").exit_code, 1);
}

TEST(HotHelp, EveryCommandHasHelpWithExamples) {
  for (const char* command : {"hot", "grep", "query"}) {
    const ProcessResult r = Shell("\"$INPROF\" " + std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("usage: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("examples:"), std::string::npos) << r.out;
  }
  EXPECT_NE(Shell("\"$INPROF\" --help").out.find("hot "), std::string::npos);
}

}  // namespace
}  // namespace inprof::test
