// The perf report reader's fuzz seeds and the inputs its fuzz target found, replayed through
// the target's own checks (fuzz/reader_checks.h): the reader `inprof` uses on
// `perf report --stdio` output returns, refuses by "NAME:LINE: what", or round-trips.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/exporters.h"
#include "reader_checks.h"
#include "test_support.h"

namespace inprof::test {
namespace {

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  return files;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ViewerReaderCorpus, PerfReportSeedsAndFindingsPassTheFuzzChecks) {
  std::vector<std::string> files = FilesIn(SourceDir() + "/fuzz/corpus/perf_report");
  ASSERT_FALSE(files.empty());
  for (const std::string& path : FilesIn(SourceDir() + "/tests/data/perf_script")) {
    files.push_back(path);  // perf script files are refused by line: that form is checked too
  }
  for (const std::string& path : files) {
    EXPECT_EQ(fuzz::CheckPerfReport(Contents(path)), "") << path;
  }
}

// A header per event and a chain under each: more than 256 events is refused at the header
// that names the 257th, by line, in the form every reader refusal has.
TEST(ViewerReaderCorpus, PerfReportRefusesTheTwoHundredFiftySeventhEvent) {
  std::string report;
  for (int i = 0; i < 257; ++i) {
    report += "# Samples: 1  of event 'e" + std::to_string(i) + "'\n1 main;leaf\n";
  }
  EXPECT_EQ(fuzz::CheckPerfReport(report), "");
  Profile p;
  EXPECT_EQ(ReadPerfReport(report, "r", &p).message(),
            "r:513: expected at most 256 distinct events (this header names one more)");
  report.resize(report.size() - std::string("# Samples: 1  of event 'e256'\n1 main;leaf\n").size());
  ASSERT_TRUE(ReadPerfReport(report, "r", &p).ok());
  EXPECT_EQ(p.events.size(), 256u);
}

}  // namespace
}  // namespace inprof::test
