// Golden files for the text formats. INPROF_BLESS=1 rewrites them from the current output;
// review the diff before committing it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "perfanno_reader.h"
#include "test_profiles.h"
#include "test_support.h"

namespace inprof::test {
namespace {

std::string Render(bool perf_log, size_t event, bool lines = false) {
  ExportOptions options;
  options.event = event;
  options.folded_lines = lines;
  std::ostringstream out;
  if (perf_log) {
    WritePerfLog(GoldenProfile(), options, out);
  } else {
    WriteFolded(GoldenProfile(), options, out);
  }
  return out.str();
}

// A golden file is only worth comparing against if it is itself valid: check the output
// with the consumers' rules too, so blessing cannot enshrine a broken file.
void ExpectFlamegraphPlReadable(const std::string& text) {
  const std::regex flamegraph_pl(R"(^(.*)\s+?(\d+)$)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(std::regex_match(line, flamegraph_pl)) << line;
  }
}

TEST(Golden, Folded) {
  const std::string text = Render(false, 0);
  ExpectFlamegraphPlReadable(text);
  CheckGolden("folded/basic.folded", text);
}

TEST(Golden, FoldedWithLines) {
  const std::string text = Render(false, 0, true);
  ExpectFlamegraphPlReadable(text);
  CheckGolden("folded/basic_lines.folded", text);
}

TEST(Golden, FoldedSecondEvent) {
  const std::string text = Render(false, 1);
  ExpectFlamegraphPlReadable(text);
  CheckGolden("folded/basic_wall.folded", text);
}

TEST(Golden, PerfLog) {
  const std::string text = Render(true, 0);
  const PerfannoLog log = ParsePerfannoLog(text);
  EXPECT_TRUE(log.ok()) << log.error;
  CheckGolden("perf_log/perf.log", text);
}

TEST(Golden, PerfLogSecondEvent) {
  const std::string text = Render(true, 1);
  const PerfannoLog log = ParsePerfannoLog(text);
  EXPECT_TRUE(log.ok()) << log.error;
  CheckGolden("perf_log/perf.wall.log", text);
}

TEST(Golden, AnnotationJson) {
  std::ostringstream out;
  WriteAnnotationJson(GoldenProfile(), out);
  // Valid by our own reader before it is compared (a blessed file must load).
  Annotations read;
  const Status status = ReadAnnotationJson(out.str(), "golden", &read);
  EXPECT_TRUE(status.ok()) << status.message();
  CheckGolden("annotation_json/basic.json", out.str());
}

}  // namespace
}  // namespace inprof::test
