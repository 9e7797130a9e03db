// The `inprof` viewer as a user runs it: every subcommand's output against golden files
// (INPROF_BLESS=1 rewrites them), errors and exit codes, and a profile the runtime wrote.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/annotation_json.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

using ::inprof::test::CheckGolden;  // tests/support: compares text with a golden file

// A command's output against tests/data/viewer/NAME: it succeeded, and a pipe got no colour.
void CheckGolden(const std::string& name, const ProcessResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "colour on a pipe";
  CheckGolden("viewer/" + name, Portable(r.out));
}

// Runs the viewer; NO_COLOR is left unset so a test also sees that a pipe gets no colour.
ProcessResult Viewer(std::vector<std::string> args) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, {});
}

const std::string kJson = Data("annotation_json/basic.json");
std::string MapToSources() { return "--map=/src/app=" + Data("viewer/src"); }

TEST(ViewerGolden, Top) { CheckGolden("top.txt", Viewer({"top", kJson})); }
TEST(ViewerGolden, TopSecondEventAbsoluteInclusive) {
  CheckGolden("top_wall.txt",
              Viewer({"top", "-e", "wall", "--absolute", "--inclusive", "-n", "4", kJson}));
}
TEST(ViewerGolden, TopJson) {
  CheckGolden("top.json", Viewer({"top", "--json", "-n", "5", kJson}));
}
TEST(ViewerGolden, TopFromPerfLog) {
  CheckGolden("top_perf_log.txt", Viewer({"top", "-n", "5", Data("perf_log/perf.log")}));
}
TEST(ViewerGolden, TopFromFolded) {
  CheckGolden("top_folded.txt", Viewer({"top", "-n", "5", Data("folded/basic.folded")}));
}
TEST(ViewerGolden, Heat) { CheckGolden("heat.txt", Viewer({"heat", kJson})); }
TEST(ViewerGolden, HeatPerfHeatmap) {
  // perf-heatmap's ranking, as gogrep shows it: the call chain (main 88.76 %, run 74.16 %)
  // ranks above the line that spends the time (ratio.h:30 at 44.94 % self).
  CheckGolden("heat_perf_heatmap.txt", Viewer({"heat", "--heat", "perf-heatmap", kJson}));
}
TEST(ViewerGolden, TopFullNames) {
  CheckGolden("top_full_names.txt", Viewer({"top", "--full-names", "-n", "4", kJson}));
}
TEST(ViewerGolden, HeatThresholdAndJson) {
  CheckGolden("heat_threshold.json", Viewer({"heat", "--threshold", "1", "--json", kJson}));
}
TEST(ViewerGolden, AnnotateHottestFile) {
  CheckGolden("annotate.txt", Viewer({"annotate", MapToSources(), kJson}));
}
TEST(ViewerGolden, AnnotateFunction) {
  CheckGolden("annotate_function.txt",
              Viewer({"annotate", "--function", "compute", "-C", "1", MapToSources(), kJson}));
}
TEST(ViewerGolden, AnnotateNamedFileWholeJson) {
  CheckGolden("annotate_all.json",
              Viewer({"annotate", "--all", "--json", MapToSources(), kJson, "ratio.h"}));
}

TEST(Viewer, AnnotateSaysWhenNoLineHasSource) {
  // Folded stacks of function names only: nothing to annotate, and the user is told why.
  const ProcessResult r = Viewer({"annotate", Data("folded/basic.folded")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no sampled source lines"), std::string::npos) << r.out;
}

TEST(Viewer, EverySubcommandHasHelpWithExamples) {
  for (const char* command : {"top", "annotate", "heat"}) {
    const ProcessResult r = Viewer({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("usage: inprof " + std::string(command)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("examples:"), std::string::npos) << r.out;
  }
  const ProcessResult r = Viewer({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("annotate"), std::string::npos);
}

TEST(Viewer, BadInputNamesFileAndLine) {
  const std::string dir = MakeTempDir();
  const std::string json = dir + "/bad.json";
  std::ofstream(json) << "{\"format\":\"inprof-annotations\",\n\"version\":1,\n\"files\":[{]}\n";
  ProcessResult r = Viewer({"top", json});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("inprof: " + json + ":3: expected", 0), 0u) << r.err;

  const std::string folded = dir + "/bad.folded";
  std::ofstream(folded) << "a;b 1\nno count here\n";
  r = Viewer({"heat", folded});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("inprof: " + folded + ":2: expected", 0), 0u) << r.err;

  r = Viewer({"annotate", dir + "/missing.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
}

TEST(Viewer, UsageErrorsExitTwo) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{},
                                             {"frobnicate"},
                                             {"top"},
                                             {"top", "--bogus", kJson},
                                             {"top", "-n", "0", kJson},
                                             {"heat", "--threshold", "1.5", kJson},
                                             {"top", "--map", "nothing", kJson},
                                             {"top", "--all", kJson}}) {
    const ProcessResult r = Viewer(args);
    EXPECT_EQ(r.exit_code, 2) << (args.empty() ? "" : args[0]);
    EXPECT_EQ(r.err.rfind("inprof: ", 0), 0u) << r.err;
  }
  const ProcessResult r = Viewer({"top", "-e", "nope", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no event 'nope'"), std::string::npos) << r.err;
}

TEST(Viewer, MissingSourceStillShowsProfiledLines) {
  const ProcessResult r = Viewer({"annotate", kJson, "compute.cpp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot read /src/app/compute.cpp"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("    88 | "), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------------------
// A real profile: the runtime writes p.json for the workload fixture under LD_PRELOAD.

int LineOf(const std::string& needle) {
  std::ifstream in(INPROF_WORKLOAD_SOURCE);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(needle) != std::string::npos) return n;
  }
  return -1;
}

TEST(ViewerRealProfile, HottestFunctionsAndLinesOfTheWorkload) {
  if (!EmulatorPrefix().empty()) {
    GTEST_SKIP() << "under qemu-user: 6 CPU-seconds of emulated work; the viewer's reading of "
                    "a real profile does not depend on the architecture (native lanes)";
  }
  const std::string dir = MakeTempDir();
  const std::string json = dir + "/p.json";
  const ProcessResult run =
      RunProcess({INPROF_WORKLOAD, "shares", "3"}, {{"LD_PRELOAD", PreloadValue()},
                                                    {"INPROF_OUTPUT", json},
                                                    {"INPROF_FREQUENCY", "997"},
                                                    {"INPROF_ENGINE", "timer"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string text = ReadFile(json);
  Annotations a;
  const Status s = ReadAnnotationJson(text, json, &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(a.meta.program.find("inprof_workload"), std::string::npos);
  EXPECT_EQ(a.health.engine, "timer");
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].name, "cpu");

  // Self weight: hot50 > hot30 > hot20, about 50/30/20 of their sum (ample margins: ~1500
  // samples, standard error about 1.3 points).
  const auto fns = HottestFunctions(a, 0, false, 3);
  ASSERT_EQ(fns.size(), 3u);
  EXPECT_EQ(fns[0]->name, "hot50");
  EXPECT_EQ(fns[1]->name, "hot30");
  EXPECT_EQ(fns[2]->name, "hot20");
  const double sum = static_cast<double>(fns[0]->self[0] + fns[1]->self[0] + fns[2]->self[0]);
  ASSERT_GT(sum, 300);
  EXPECT_NEAR(100.0 * fns[0]->self[0] / sum, 50, 6);
  EXPECT_NEAR(100.0 * fns[2]->self[0] / sum, 20, 6);

  // The hottest lines are the three spinning functions' lines in the fixture's source, under
  // its canonical path. Heat ranks inclusive weight, so globally the callers' lines outrank
  // them; within its own function each is the hottest line.
  char* real = realpath(INPROF_WORKLOAD_SOURCE, nullptr);
  ASSERT_NE(real, nullptr);
  const std::string source = real;
  free(real);
  const auto lines = HottestLines(a, 0, false, 3);
  ASSERT_EQ(lines.size(), 3u);
  const int expected[] = {LineOf("void hot50("), LineOf("void hot30("), LineOf("void hot20(")};
  for (size_t i = 0; i < 3; ++i) {
    const FileStats& file = a.files[lines[i].first];
    const LineStats& line = file.lines[lines[i].second];
    EXPECT_EQ(file.path, source);
    EXPECT_EQ(static_cast<int>(line.line), expected[i]);
    EXPECT_EQ(line.self[0], line.inclusive[0]);  // leaves
    EXPECT_EQ(line.local_heat[0], 5);
  }
  // The caller's loop lines are inclusive-only and have edges into the hot lines.
  bool edge_into_hot50 = false;
  for (const CallEdge& e : a.edges) {
    edge_into_hot50 |=
        a.files[e.callee.file].path == source && static_cast<int>(e.callee.line) == expected[0];
  }
  EXPECT_TRUE(edge_into_hot50);

  // And the viewer reads the same file.
  const ProcessResult top = Viewer({"top", "-n", "1", "--json", json});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("\"name\":\"hot50\""), std::string::npos) << top.out;
}

}  // namespace
}  // namespace inprof::test
