// callers, callees, diff and convert as a user runs them, on every input the viewer reads
// (annotation JSON, folded, perf.log, perf script, perf report): golden outputs
// (INPROF_BLESS=1 rewrites them), errors and exit codes, load progress, and a profile the
// runtime wrote under LD_PRELOAD.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/annotation_json.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

ProcessResult Viewer(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, env);
}

using ::inprof::test::CheckGolden;  // tests/support: compares text with a golden file

void CheckGolden(const std::string& name, const ProcessResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  CheckGolden("viewer/" + name, Portable(r.out));
}

const std::string kJson = Data("annotation_json/basic.json");
const std::string kFoldedLines = Data("folded/basic_lines.folded");
const std::string kAfter = Data("viewer/after_lines.folded");
std::string PerfScript(const std::string& name) { return Data("perf_script/" + name); }

// ---------------------------------------------------------------------------------------
// callers / callees

TEST(ViewerCallers, FunctionCallers) {
  CheckGolden("callers.txt", Viewer({"callers", "compute", kJson}));
}
TEST(ViewerCallers, CalleesPerLineAbsoluteWithInlineMark) {
  CheckGolden("callees_lines.txt", Viewer({"callees", "--lines", "--absolute", "run", kJson}));
}
TEST(ViewerCallers, LineRangeTargetJson) {
  CheckGolden("callers_range.json", Viewer({"callers", "--json", "main.cpp:50-56", kJson}));
}
TEST(ViewerCallers, SecondEventAndLimit) {
  CheckGolden("callees_wall.txt", Viewer({"callees", "-e", "wall", "-n", "2", "=main", kJson}));
}
TEST(ViewerCallers, PerfScriptWithSrclineAndInlineFrames) {
  CheckGolden("callers_perf_script.txt",
              Viewer({"callers", "inner", PerfScript("srcline_inline.perf-script")}));
}

TEST(ViewerCallers, FunctionsWithoutSourceAnsweredFromStacks) {
  // memmove has no debug info; its caller push_back is inlined and has a line.
  CheckGolden("callers_stacks.txt", Viewer({"callers", "memmove", kFoldedLines}));
  // perf script without srcline: names only.
  CheckGolden("callees_perf_script_stacks.txt",
              Viewer({"callees", "=leaf", PerfScript("fp.perf-script")}));
  // --lines needs lines.
  EXPECT_EQ(Viewer({"callers", "--lines", "memmove", kFoldedLines}).exit_code, 1);
}

TEST(ViewerCallers, AmbiguousNameListsCandidates) {
  // "o" is in many names: nothing is summed, the candidates are listed by inclusive weight.
  const ProcessResult r = Viewer({"callers", "o", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("matches"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("=NAME"), std::string::npos) << r.err;
  const size_t run = r.err.find("run(Config const&)");
  const size_t compute = r.err.find("compute(int)");
  ASSERT_NE(run, std::string::npos) << r.err;
  ASSERT_NE(compute, std::string::npos) << r.err;
  EXPECT_LT(run, compute) << "candidates ordered by inclusive weight";
  // The exact name picks one even though others contain it.
  EXPECT_EQ(Viewer({"callers", "=main", kJson}).exit_code, 0);
}

TEST(ViewerCallers, TargetsThatCannotBeAnswered) {
  ProcessResult r = Viewer({"callers", "nosuchfunction", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no function matching 'nosuchfunction'"), std::string::npos) << r.err;
  r = Viewer({"callees", "libfoo", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no source lines"), std::string::npos) << r.err;
  r = Viewer({"callers", "nofile.cpp:3", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no file 'nofile.cpp'"), std::string::npos) << r.err;
  r = Viewer({"callers", "compute.cpp:1-10", kJson});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no sampled line in /src/app/compute.cpp:1-10"), std::string::npos) << r.err;
  r = Viewer({"callers", kJson});
  EXPECT_EQ(r.exit_code, 2);
}

// ---------------------------------------------------------------------------------------
// diff

TEST(ViewerDiff, PercentOfEachTotal) {
  CheckGolden("diff.txt", Viewer({"diff", kFoldedLines, kAfter}));
}
TEST(ViewerDiff, AbsoluteInclusiveJson) {
  CheckGolden("diff.json", Viewer({"diff", "--json", "--absolute", "--inclusive", "-n", "4",
                                   kFoldedLines, kAfter}));
}

TEST(ViewerDiff, AProfileAgainstItselfHasNoChange) {
  const ProcessResult r = Viewer({"diff", kJson, kJson});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Functions\n"), std::string::npos);
  EXPECT_NE(r.out.find("  (no change)\n"), std::string::npos) << r.out;
}

TEST(ViewerDiff, EventsAndFlame) {
  // -e must exist in both.
  ProcessResult r = Viewer({"diff", "-e", "wall", kJson, kFoldedLines});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no event 'wall'"), std::string::npos) << r.err;
  // Without -e a differently named event is compared (cpu against folded's samples).
  r = Viewer({"diff", kJson, kFoldedLines});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(event samples, total 89)"), std::string::npos) << r.out;

  const std::string dir = MakeTempDir();
  r = Viewer({"diff", "--flame", "-o", dir + "/d.svg", kJson, kFoldedLines});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("annotation JSON has no stacks"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(dir + "/d.svg"));
  r = Viewer({"diff", "--flame", "-o", dir + "/d.svg", kFoldedLines, kAfter});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadFile(dir + "/d.svg");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 200);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(Viewer({"diff", "--flame", kFoldedLines, kAfter}).exit_code, 2);
  EXPECT_EQ(Viewer({"diff", kFoldedLines}).exit_code, 2);
}

// ---------------------------------------------------------------------------------------
// convert

// Converts `in` to a temporary file named like `out_name` and returns its bytes.
std::string Convert(const std::string& in, const std::string& out_name,
                    std::vector<std::string> extra = {}) {
  const std::string out = MakeTempDir() + "/" + out_name;
  std::vector<std::string> args = {"convert", in, "-o", out};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult r = Viewer(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return ReadFile(out);
}

TEST(ViewerConvert, PerfScriptToFolded) {
  CheckGolden("perf_script/fp.folded", Convert(PerfScript("fp.perf-script"), "out.folded"));
  CheckGolden("perf_script/srcline_inline_lines.folded",
              Convert(PerfScript("srcline_inline.perf-script"), "out.folded", {"--lines"}));
  CheckGolden("perf_script/multi_event_task_clock.folded",
              Convert(PerfScript("multi_event.perf-script"), "x.folded", {"-e", "task-clock"}));
  CheckGolden("perf_script/report.folded", Convert(PerfScript("report_folded.txt"), "r.folded"));
}

TEST(ViewerConvert, PerfScriptToPerfLogAndJson) {
  CheckGolden("perf_script/srcline_full_path.log",
              Convert(PerfScript("srcline_full_path.perf-script"), "perf.log"));
  // perf prints file names only unless --full-source-path: perfanno could place none.
  const ProcessResult r = Viewer(
      {"convert", PerfScript("srcline_inline.perf-script"), "-o", MakeTempDir() + "/perf.log"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--full-source-path"), std::string::npos) << r.err;
  const std::string json = Convert(PerfScript("srcline_inline.perf-script"), "p.json");
  Annotations a;
  ASSERT_TRUE(ReadAnnotationJson(json, "p.json", &a).ok());
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].name, "cpu-clock");
}

TEST(ViewerConvert, RoundTripsThroughFoldedAndJson) {
  // Folded with lines -> folded with lines gives back the same stacks; JSON -> JSON the
  // same bytes.
  EXPECT_EQ(Convert(kFoldedLines, "a.folded", {"--lines"}), ReadFile(kFoldedLines));
  EXPECT_EQ(Convert(kJson, "a.json"), ReadFile(kJson));
}

TEST(ViewerConvert, ErrorsLeaveNothingBehind) {
  const std::string dir = MakeTempDir();
  // Annotation JSON has no stacks.
  ProcessResult r = Viewer({"convert", kJson, "-o", dir + "/x.folded"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no stacks"), std::string::npos) << r.err;
  // perf.log needs file:line frames, which perf script without srcline lacks.
  r = Viewer({"convert", PerfScript("fp.perf-script"), "-o", dir + "/perf.log"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("-F +srcline --full-source-path"), std::string::npos) << r.err;
  // Bad input names file and line.
  const std::string bad = dir + "/bad.script";
  std::ofstream(bad) << "w 1/1 1.5: 10 cpu-clock:\n\t12ab f+0x1 (/x)\n\tnot-hex g (/x)\n";
  r = Viewer({"convert", bad, "-o", dir + "/y.folded"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("inprof: " + bad + ":3: expected a frame", 0), 0u) << r.err;
  // An output name that says no format, or no output at all, is a usage error.
  EXPECT_EQ(Viewer({"convert", kFoldedLines, "-o", dir + "/z.txt"}).exit_code, 2);
  EXPECT_EQ(Viewer({"convert", kFoldedLines}).exit_code, 2);
  // A directory that does not exist: the message names the path.
  r = Viewer({"convert", kFoldedLines, "-o", dir + "/missing/z.folded"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir + "/missing/z.folded"), std::string::npos) << r.err;
  for (const char* name : {"x.folded", "perf.log", "y.folded", "z.txt"}) {
    struct stat st {};
    EXPECT_NE(stat((dir + "/" + name).c_str(), &st), 0) << name << " exists";
  }
}

// ---------------------------------------------------------------------------------------
// Inputs, help, progress

TEST(ViewerInputs, TopReadsPerfScriptAndPerfReportByContent) {
  // Neither name says what the file is.
  CheckGolden("top_perf_script.txt",
              Viewer({"top", "-n", "3", PerfScript("srcline_inline.perf-script")}));
  CheckGolden("top_perf_report.txt", Viewer({"top", "-n", "3", PerfScript("report_folded.txt")}));
  const ProcessResult r = Viewer({"top", PerfScript("report_children.txt")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--no-children"), std::string::npos) << r.err;
}

TEST(ViewerInputs, NewSubcommandsHaveHelpWithExamples) {
  for (const char* command : {"callers", "callees", "diff", "convert"}) {
    const ProcessResult r = Viewer({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("inprof " + std::string(command) + " [OPTIONS]"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("examples:"), std::string::npos) << r.out;
  }
  const ProcessResult r = Viewer({"--help"});
  for (const char* command : {"callers", "callees", "diff", "convert"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + command + " "), std::string::npos) << command;
  }
}

TEST(ViewerInputs, ProgressOnlyWhenAskedOrOnATerminal) {
  // Tests run on pipes: nothing by default.
  ProcessResult r = Viewer({"top", kJson});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  // Forced, a line is drawn at once and erased before the output.
  r = Viewer({"top", PerfScript("fp.perf-script")}, {{"INPROF_PROGRESS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("inprof: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fp.perf-script"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with("\r\033[K")) << r.err;
  EXPECT_EQ(r.out.find('\033'), std::string::npos);
  // --no-progress wins.
  r = Viewer({"top", "--no-progress", PerfScript("fp.perf-script")}, {{"INPROF_PROGRESS", "1"}});
  EXPECT_EQ(r.err, "");
}

// ---------------------------------------------------------------------------------------
// A real profile: the runtime writes folded stacks with lines and annotation JSON for the
// workload under LD_PRELOAD; callers, callees, diff and convert read them.

TEST(ViewerCommandsRealProfile, CallersCalleesDiffConvert) {
  const std::string dir = MakeTempDir();
  const std::string json = dir + "/p.json";
  const ProcessResult run =
      RunProcess({INPROF_WORKLOAD, "shares", "1"}, {{"LD_PRELOAD", PreloadValue()},
                                                    {"INPROF_OUTPUT", json},
                                                    {"INPROF_FREQUENCY", "997"},
                                                    {"INPROF_ENGINE", "timer"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  // hot50 is called only from shares_loop, never inlined.
  ProcessResult r = Viewer({"callers", "--json", "=hot50", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"function\":\"shares_loop\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"inlined\":true"), std::string::npos) << r.out;
  // shares_loop calls the three hot functions, hot50 heaviest.
  r = Viewer({"callees", "shares_loop", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t h50 = r.out.find("hot50"), h30 = r.out.find("hot30"), h20 = r.out.find("hot20");
  ASSERT_NE(h50, std::string::npos) << r.out;
  ASSERT_NE(h30, std::string::npos) << r.out;
  ASSERT_NE(h20, std::string::npos) << r.out;
  EXPECT_LT(h50, h30) << r.out;
  EXPECT_LT(h30, h20) << r.out;

  // A profile against itself: nothing changed.
  r = Viewer({"diff", json, json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  (no change)\n"), std::string::npos) << r.out;
  // JSON converts to JSON only, byte for byte.
  EXPECT_EQ(Convert(json, "again.json"), ReadFile(json));
}

}  // namespace
}  // namespace inprof::test
