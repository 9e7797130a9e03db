// `inprof flame` as a user runs it: golden SVGs from folded stacks and perf.log
// (INPROF_BLESS=1 rewrites them), every option, the errors and exit codes, and flame graphs
// of a real profile written by the runtime under LD_PRELOAD.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "flame_xml.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

ProcessResult Viewer(std::vector<std::string> args) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, {});
}

using ::inprof::test::CheckGolden;  // tests/support: compares text with a golden file

void CheckGolden(const std::string& name, const ProcessResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(XmlWellFormedError(r.out), "");
  CheckGolden("flame/" + name, r.out);
}

// Samples under boxes named `name` (they never nest here: no recursion in the workload).
uint64_t Width(const std::vector<FlameBox>& boxes, const std::string& name) {
  uint64_t total = 0;
  for (const FlameBox& box : boxes) total += box.name == name ? box.w : 0;
  return total;
}

TEST(FlameViewerGolden, FromFolded) {
  CheckGolden("viewer_folded.svg", Viewer({"flame", Data("folded/basic_lines.folded")}));
}

TEST(FlameViewerGolden, FromPerfLogWithOptions) {
  CheckGolden("viewer_perf_log.svg",
              Viewer({"flame", "--inverted", "--title", "perf.log <icicle>", "--width=800",
                      "--minwidth", "20", Data("perf_log/perf.log")}));
}

TEST(FlameViewer, LinesMakeOneBoxPerSourceLine) {
  const std::string folded = Data("folded/basic_lines.folded");
  const std::vector<FlameBox> names = FlameBoxes(Viewer({"flame", folded}).out);
  const ProcessResult r = Viewer({"flame", "--lines", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<FlameBox> lines = FlameBoxes(r.out);
  // compute(int) runs on lines 88 and 91: one box by name, two by line.
  auto count = [](const std::vector<FlameBox>& boxes, const std::string& prefix) {
    size_t n = 0;
    for (const FlameBox& box : boxes) n += box.name.rfind(prefix, 0) == 0 && box.depth == 4;
    return n;
  };
  EXPECT_EQ(count(names, "compute(int)"), 1u);
  EXPECT_EQ(count(lines, "compute(int) (/src/app/compute.cpp:88)"), 1u);
  EXPECT_EQ(count(lines, "compute(int) (/src/app/compute.cpp:91)"), 1u);
}

TEST(FlameViewer, WidthAndMinwidthShapeTheBoxes) {
  const ProcessResult narrow =
      Viewer({"flame", "--width", "300", "--minwidth", "30", Data("folded/basic.folded")});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  const std::vector<FlameBox> boxes = FlameBoxes(narrow.out);
  ASSERT_FALSE(boxes.empty());
  EXPECT_NE(narrow.out.find("width=\"300\""), std::string::npos);
  EXPECT_DOUBLE_EQ(boxes[0].rect_width, 280);
  for (const FlameBox& box : boxes) EXPECT_GE(box.rect_width, 30) << box.title;
  // The 89 samples stay in the root however much is left out.
  EXPECT_EQ(boxes[0].title, "all (89 samples, 100%)");
  const ProcessResult full = Viewer({"flame", "--minwidth", "0", Data("folded/basic.folded")});
  EXPECT_GT(FlameBoxes(full.out).size(), boxes.size());
}

TEST(FlameViewer, OutputFileIsWrittenWholeOrNotAtAll) {
  const std::string dir = MakeTempDir();
  const std::string svg = dir + "/out.svg";
  ProcessResult r = Viewer({"flame", "-o", svg, Data("folded/basic.folded")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const ProcessResult stdout_run = Viewer({"flame", Data("folded/basic.folded")});
  EXPECT_EQ(ReadFile(svg), stdout_run.out);

  const std::string missing_dir = dir + "/no/such/dir/out.svg";
  r = Viewer({"flame", "--output", missing_dir, Data("folded/basic.folded")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(missing_dir), std::string::npos) << r.err;

  // Bad input leaves an existing file alone.
  const std::string bad = dir + "/bad.folded";
  std::ofstream(bad) << "a;b 1\nbroken\n";
  r = Viewer({"flame", "-o", svg, bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(ReadFile(svg), stdout_run.out);
}

TEST(FlameViewer, EventOption) {
  ProcessResult r = Viewer({"flame", "-e", "samples", Data("folded/basic.folded")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Viewer({"flame", "--event", "cpu", Data("folded/basic.folded")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no event 'cpu' in the profile (it has: samples)"), std::string::npos)
      << r.err;
}

TEST(FlameViewer, AnnotationJsonIsRefusedWithTheReason) {
  const std::string json = Data("annotation_json/basic.json");
  const ProcessResult r = Viewer({"flame", json});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("inprof: " + json + ":1: this is annotation JSON", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("no stacks"), std::string::npos) << r.err;
}

TEST(FlameViewer, BadInputNamesFileAndLine) {
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/bad.folded";
  std::ofstream(folded) << "a;b 1\n\na;c x\n";
  ProcessResult r = Viewer({"flame", folded});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("inprof: " + folded + ":3: expected", 0), 0u) << r.err;

  const std::string log = dir + "/perf.log";
  std::ofstream(log) << "main /src/a.cpp:3;f no-path:4 5\n";
  r = Viewer({"flame", log});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("inprof: " + log + ":1: expected", 0), 0u) << r.err;

  const std::string empty = dir + "/empty.folded";
  std::ofstream(empty) << "";
  r = Viewer({"flame", empty});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the file is empty"), std::string::npos) << r.err;

  r = Viewer({"flame", dir + "/missing.folded"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
}

TEST(FlameViewer, UsageErrorsExitTwo) {
  const std::string folded = Data("folded/basic.folded");
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"flame"},
                                             {"flame", "--width", "99", folded},
                                             {"flame", "--width", "wide", folded},
                                             {"flame", "--minwidth", "-1", folded},
                                             {"flame", "--minwidth", "1e9", folded},
                                             {"flame", "--inverted=yes", folded},
                                             {"flame", folded, "-o"},
                                             {"flame", "--json", folded},
                                             {"flame", "--map", "a=b", folded},
                                             {"flame", folded, folded},
                                             {"top", "--inverted", folded}}) {
    const ProcessResult r = Viewer(args);
    EXPECT_EQ(r.exit_code, 2) << args.back();
    EXPECT_EQ(r.err.rfind("inprof: ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(FlameViewer, RefusesToWriteSvgToATerminal) {
  // script(1) runs the viewer with a pseudo-terminal as its standard output.
  if (access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "needs script(1) (bsdutils)";
  const std::string folded = Data("folded/basic.folded");
  const ProcessResult r = RunProcess(
      {"/usr/bin/script", "-qec", std::string(INPROF_VIEWER) + " flame " + folded, "/dev/null"},
      {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("flame writes an SVG: give -o FILE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("<svg"), std::string::npos);
}

TEST(FlameViewer, HelpHasExamples) {
  ProcessResult r = Viewer({"flame", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("usage: inprof flame", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("examples:"), std::string::npos);
  for (const char* option :
       {"--output", "--title", "--width", "--minwidth", "--inverted", "--lines", "--event"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
  r = Viewer({"--help"});
  EXPECT_NE(r.out.find("flame "), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------------------
// A real profile: the runtime writes p.svg and p.folded for the workload under LD_PRELOAD.

TEST(FlameViewerRealProfile, RuntimeAndViewerDrawTheWorkload) {
  const std::string dir = MakeTempDir();
  const std::string svg = dir + "/p.svg";
  const std::string folded = dir + "/p.folded";
  const ProcessResult run =
      RunProcess({INPROF_WORKLOAD, "shares", "1.5"}, {{"LD_PRELOAD", PreloadValue()},
                                                      {"INPROF_OUTPUT", svg + "," + folded},
                                                      {"INPROF_FREQUENCY", "997"},
                                                      {"INPROF_ENGINE", "timer"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  int64_t folded_total = 0;
  for (const FoldedStack& stack : ReadFolded(folded)) folded_total += stack.count;
  ASSERT_GT(folded_total, 300);

  const ProcessResult viewer = Viewer({"flame", folded});
  ASSERT_EQ(viewer.exit_code, 0) << viewer.err;
  for (const std::string& text : {ReadFile(svg), viewer.out}) {
    ASSERT_EQ(XmlWellFormedError(text), "");
    const std::vector<FlameBox> boxes = FlameBoxes(text);
    ASSERT_FALSE(boxes.empty());
    EXPECT_EQ(boxes[0].w, static_cast<uint64_t>(folded_total));
    EXPECT_EQ(boxes[0].name, "all");
    // Both threads spin in shares_loop: the hot functions are its callees, in proportion.
    EXPECT_GT(Width(boxes, "hot50"), Width(boxes, "hot20"));
    EXPECT_GT(Width(boxes, "hot20"), 0u);
    EXPECT_GT(Width(boxes, "shares_loop"), Width(boxes, "hot50"));
  }
  // The runtime's graph names the program and the event.
  EXPECT_NE(ReadFile(svg).find("inprof_workload - cpu - "), std::string::npos);

  // A second opinion on well-formedness where libxml2's checker is installed.
  if (access("/usr/bin/xmllint", X_OK) == 0) {
    const ProcessResult lint = RunProcess({"/usr/bin/xmllint", "--noout", svg}, {});
    EXPECT_EQ(lint.exit_code, 0) << lint.err;
  }
}

}  // namespace
}  // namespace inprof::test
