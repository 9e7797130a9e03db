#include <gtest/gtest.h>

#include <optional>

#include "inprof/formats.h"

namespace inprof {
namespace {

TEST(FormatFromPath, Folded) {
  EXPECT_EQ(FormatFromPath("out.folded"), Format::kFolded);
  EXPECT_EQ(FormatFromPath("/tmp/run 1/cpu.folded"), Format::kFolded);
  EXPECT_EQ(FormatFromPath("./a.b.folded"), Format::kFolded);
}

TEST(FormatFromPath, PerfLog) {
  EXPECT_EQ(FormatFromPath("perf.log"), Format::kPerfLog);
  EXPECT_EQ(FormatFromPath("/home/me/project/perf.log"), Format::kPerfLog);
  EXPECT_EQ(FormatFromPath("perf.cycles.log"), Format::kPerfLog);
  EXPECT_EQ(FormatFromPath("profile.log"), Format::kPerfLog);
  EXPECT_EQ(FormatFromPath("profile.json"), Format::kAnnotationJson);
  EXPECT_EQ(FormatFromPath("/tmp/run/p.json"), Format::kAnnotationJson);
}

TEST(FormatFromPath, UnknownNames) {
  EXPECT_EQ(FormatFromPath(""), std::nullopt);
  EXPECT_EQ(FormatFromPath("folded"), std::nullopt);
  EXPECT_EQ(FormatFromPath("perf"), std::nullopt);
  EXPECT_EQ(FormatFromPath(".folded"), std::nullopt);
  EXPECT_EQ(FormatFromPath("/tmp/.log"), std::nullopt);
  EXPECT_EQ(FormatFromPath("out.folded.txt"), std::nullopt);
  EXPECT_EQ(FormatFromPath("out.folded/"), std::nullopt);  // a directory
  EXPECT_EQ(FormatFromPath("logs.folded/out"), std::nullopt);
  EXPECT_EQ(FormatFromPath("perf.log.gz"), std::nullopt);
  EXPECT_EQ(FormatFromPath("OUT.FOLDED"), std::nullopt);
  EXPECT_EQ(FormatFromPath(".json"), std::nullopt);
  EXPECT_EQ(FormatFromPath("profile.json.gz"), std::nullopt);
  EXPECT_EQ(FormatFromPath("profile.pb"), std::nullopt);  // pprof only gzipped
  EXPECT_EQ(FormatFromPath("/tmp/.pb.gz"), std::nullopt);
  EXPECT_EQ(FormatFromPath("flame.svg"), Format::kFlameSvg);
}

}  // namespace
}  // namespace inprof
