// The annotation model, its JSON writer and reader, and the folded / perf.log readers.
#include <gtest/gtest.h>

#include <sstream>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "test_profiles.h"

namespace inprof::test {
namespace {

std::string Json(const Annotations& a) {
  std::ostringstream out;
  WriteAnnotationJson(a, out);
  return out.str();
}

const LineStats* FindLine(const Annotations& a, const std::string& path, uint32_t line) {
  for (const FileStats& file : a.files) {
    if (file.path != path) continue;
    for (const LineStats& l : file.lines) {
      if (l.line == line) return &l;
    }
  }
  return nullptr;
}

const FunctionStats* FindFunction(const Annotations& a, const std::string& name) {
  for (const FileStats& file : a.files) {
    for (const FunctionStats& fn : file.functions) {
      if (fn.name == name) return &fn;
    }
  }
  for (const FunctionStats& fn : a.functions_without_source) {
    if (fn.name == name) return &fn;
  }
  return nullptr;
}

TEST(Annotations, SelfAndInclusivePerLineAndEvent) {
  const Annotations a = BuildAnnotations(GoldenProfile());
  ASSERT_EQ(a.events.size(), 2u);
  // compute(int) at compute.cpp:88: leaf in {3,3}, caller of the inlined divide in {40,45},
  // under [truncated] in {4,4}.
  const LineStats* line88 = FindLine(a, "/src/app/compute.cpp", 88);
  ASSERT_NE(line88, nullptr);
  EXPECT_EQ(line88->self, (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(line88->inclusive, (std::vector<int64_t>{47, 52}));
  EXPECT_EQ(line88->function, "compute(int)");
  EXPECT_FALSE(line88->inlined);
  const LineStats* divide = FindLine(a, "/src/app/ratio.h", 30);
  ASSERT_NE(divide, nullptr);
  EXPECT_TRUE(divide->inlined);
  EXPECT_EQ(divide->self, (std::vector<int64_t>{40, 45}));
  // main.cpp:42 is on every stack but two; the wall-only sleeping sample counts for wall.
  const LineStats* main42 = FindLine(a, "/src/app/main.cpp", 42);
  ASSERT_NE(main42, nullptr);
  EXPECT_EQ(main42->inclusive, (std::vector<int64_t>{79, 117}));
  EXPECT_EQ(main42->self, (std::vector<int64_t>{0, 30}));
  // Functions merge their lines: compute(int) spans 88..91.
  const FunctionStats* compute = FindFunction(a, "compute(int)");
  ASSERT_NE(compute, nullptr);
  EXPECT_EQ(compute->first_line, 88u);
  EXPECT_EQ(compute->last_line, 91u);
  EXPECT_EQ(compute->self, (std::vector<int64_t>{14, 16}));
  EXPECT_EQ(compute->inclusive, (std::vector<int64_t>{54, 61}));
  // No source: a function, but no line.
  const FunctionStats* memmove = FindFunction(a, "__memmove_avx_unaligned_erms");
  ASSERT_NE(memmove, nullptr);
  EXPECT_TRUE(memmove->file.empty());
  EXPECT_EQ(memmove->self, (std::vector<int64_t>{18, 18}));
}

TEST(Annotations, RecursionCountsOncePerStack) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/src/r.cpp", 10);
  const uint32_t rec = b.Frame("rec", "/src/r.cpp", 20);
  b.Sample({main, rec, rec, rec}, {5});
  b.Sample({main, rec}, {1});
  const Annotations a = BuildAnnotations(b.profile());
  EXPECT_EQ(FindLine(a, "/src/r.cpp", 20)->inclusive, (std::vector<int64_t>{6}));
  EXPECT_EQ(FindLine(a, "/src/r.cpp", 20)->self, (std::vector<int64_t>{6}));
  EXPECT_EQ(FindFunction(a, "rec")->inclusive, (std::vector<int64_t>{6}));
  // The self-edge rec:20 -> rec:20 is not an edge; main:10 -> rec:20 is, once per stack.
  ASSERT_EQ(a.edges.size(), 1u);
  EXPECT_EQ(a.edges[0].weight, (std::vector<int64_t>{6}));
}

TEST(Annotations, EdgesMarkInlinedCallees) {
  const Annotations a = BuildAnnotations(GoldenProfile());
  bool saw_inline = false, saw_call = false;
  for (const CallEdge& edge : a.edges) {
    const std::string& callee = a.files[edge.callee.file].path;
    if (callee == "/src/app/ratio.h") {
      EXPECT_TRUE(edge.inlined);
      EXPECT_EQ(a.files[edge.caller.file].path, "/src/app/compute.cpp");
      EXPECT_EQ(edge.caller.line, 88u);
      saw_inline = true;
    }
    if (callee == "/src/app/compute.cpp" && edge.callee.line == 88) {
      EXPECT_FALSE(edge.inlined);
      saw_call = true;
    }
  }
  EXPECT_TRUE(saw_inline);
  EXPECT_TRUE(saw_call);
}

TEST(Annotations, HottestAreSortedWithDeterministicTies) {
  const Annotations a = BuildAnnotations(GoldenProfile());
  const auto lines = HottestLines(a, 0, false, 3);
  ASSERT_EQ(lines.size(), 3u);
  const LineStats& top = a.files[lines[0].first].lines[lines[0].second];
  EXPECT_EQ(top.line, 30u);  // ratio.h:30, self 40
  const auto fns = HottestFunctions(a, 0, true, 1);
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0]->name, "__libc_start_call_main");  // on 11 of 12 stacks
}

TEST(AnnotationJson, DeterministicAndRoundTrips) {
  const Annotations a = BuildAnnotations(GoldenProfile());
  const std::string first = Json(a);
  EXPECT_EQ(first, Json(BuildAnnotations(GoldenProfile())));
  Annotations read;
  const Status s = ReadAnnotationJson(first, "x.json", &read);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Json(read), first);
  // Line numbers are numbers and the header is there.
  EXPECT_NE(first.find("\"format\":\"inprof-annotations\""), std::string::npos);
  EXPECT_NE(first.find("\"version\":1"), std::string::npos);
  EXPECT_NE(first.find("\"line\":88"), std::string::npos);
  // Hostile names survive: the control characters are escaped, not raw.
  EXPECT_NE(first.find("weird\\nname\\t "), std::string::npos);
}

TEST(AnnotationJson, ExportTimesRoundTripAndOlderFilesReadAsZero) {
  Profile profile = GoldenProfile();
  profile.health.symbolize_seconds = 0.25;
  profile.health.write_seconds = 0.125;
  Annotations read;
  ASSERT_TRUE(ReadAnnotationJson(Json(BuildAnnotations(profile)), "t.json", &read).ok());
  EXPECT_EQ(read.health.symbolize_seconds, 0.25);
  EXPECT_EQ(read.health.write_seconds, 0.125);
  // A health block written before these fields existed.
  const std::string old = R"({"events":[{"name":"cpu","total_weight":0}],"files":[],
"format":"inprof-annotations","health":{"samples":7,"warnings":[]},"version":1})";
  Annotations a;
  const Status s = ReadAnnotationJson(old, "old.json", &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.health.samples, 7u);
  EXPECT_EQ(a.health.symbolize_seconds, 0);
  EXPECT_EQ(a.health.write_seconds, 0);
}

TEST(AnnotationJson, MissingHeatIsRecomputed) {
  const std::string text = R"({"events":[{"name":"cpu","total_weight":3}],
"files":[{"functions":[],"lines":[{"function":"f","inclusive":[2],"line":1,"self":[2]},
{"function":"f","inclusive":[1],"line":2,"self":[1]}],"path":"/a.c"}],
"format":"inprof-annotations","version":1})";
  Annotations a;
  const Status s = ReadAnnotationJson(text, "h.json", &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.files[0].lines[0].global_heat, (std::vector<uint8_t>{5}));
  EXPECT_EQ(a.files[0].lines[0].local_heat, (std::vector<uint8_t>{5}));
  EXPECT_EQ(a.files[0].lines[1].global_heat, (std::vector<uint8_t>{4}));  // half of line 1
}

TEST(AnnotationJson, HeatMethodRoundTripsAndOlderLevelsAreRecomputed) {
  const std::string body = R"("events":[{"name":"cpu","total_weight":3}],
"files":[{"functions":[],"lines":[{"function":"f","global_heat":[4],"inclusive":[2],"line":1,"local_heat":[4],"self":[2]},
{"function":"f","global_heat":[5],"inclusive":[1],"line":2,"local_heat":[5],"self":[1]}],"path":"/a.c"}],
"format":"inprof-annotations",)";
  // Levels written with a method are kept as written.
  Annotations kept;
  ASSERT_TRUE(ReadAnnotationJson("{" + body + R"("heat_method":"perf-heatmap","heat_threshold":1,"version":1})",
                                 "m.json", &kept).ok());
  EXPECT_EQ(kept.heat_method, HeatMethod::kPerfHeatmap);
  EXPECT_EQ(kept.files[0].lines[1].global_heat, (std::vector<uint8_t>{5}));
  // A file from before methods existed holds perf-heatmap's ranks: read with today's levels.
  Annotations old;
  ASSERT_TRUE(ReadAnnotationJson("{" + body + R"("version":1})", "old.json", &old).ok());
  EXPECT_EQ(old.heat_method, HeatMethod::kShare);
  EXPECT_EQ(old.files[0].lines[0].global_heat, (std::vector<uint8_t>{5}));
  EXPECT_EQ(old.files[0].lines[1].global_heat, (std::vector<uint8_t>{4}));
  // An unknown method is an error that says which are known.
  Annotations bad;
  const Status s = ReadAnnotationJson("{" + body + R"("heat_method":"rank","version":1})", "b.json", &bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"share\" or \"perf-heatmap\""), std::string::npos) << s.message();
}

struct BadJson {
  const char* text;
  const char* message;  // expected "bad.json:LINE: ..." prefix
};

class AnnotationJsonErrors : public ::testing::TestWithParam<BadJson> {};

TEST_P(AnnotationJsonErrors, NameTheLineAndWhatWasExpected) {
  Annotations a;
  const Status s = ReadAnnotationJson(GetParam().text, "bad.json", &a);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(GetParam().message, 0), 0u) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AnnotationJsonErrors,
    ::testing::Values(
        BadJson{"", "bad.json:1: expected an object"},
        BadJson{"{\"format\":\"inprof-annotations\",\n\"version\":1,\n\"files\":[{\"path\":3}]}",
                "bad.json:3: expected a string"},
        BadJson{"{\"format\":\"other\",\"version\":1}", "bad.json:1: expected \"format\""},
        BadJson{"{\"format\":\"inprof-annotations\",\n\"version\":2}",
                "bad.json:2: expected \"version\": 1"},
        BadJson{"{\"version\":1}", "bad.json:1: expected a top-level \"format\""},
        BadJson{"{\"format\":\"inprof-annotations\",\"version\":1,\n\"edges\":[1,]}",
                "bad.json:2: expected an object"},
        BadJson{"{\"format\":\"inprof-annotations\",\"version\":1,\"events\":[{\"name\":\"a\"}],\n"
                "\"files\":[{\"lines\":[{\"line\":1,\"self\":[1,2],\"inclusive\":[1]}]}]}",
                "bad.json:2: expected 1 values (one per event)"},
        BadJson{"{\"format\":\"inprof-annotations\",\"version\":1} x",
                "bad.json:1: expected nothing after"},
        BadJson{"{\"format\":\"inprof-annotations\",\"version\":1,\"files\":[{\"lines\":[{\"line\":-1}]}]}",
                "bad.json:1: expected a line number"},
        BadJson{"{\"format\":\"inprof-annotations\" \"version\":1}",
                "bad.json:1: expected ',' or '}'"}));

TEST(ReadFolded, ReadsNamesLinesAndInlineHints) {
  const std::string text =
      "main (/src/a.c:3);work (/src/a.c:9)_[i] 5\n"
      "main (/src/a.c:3);[truncated] 2\n"
      "plain;names 1\n";
  Profile p;
  const Status s = ReadFolded(text, "x.folded", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.events[0].total_weight, 8);
  const Frame& work = p.frames[p.samples[0].frames[1]];
  EXPECT_EQ(work.function, "work");
  EXPECT_EQ(work.file, "/src/a.c");
  EXPECT_EQ(work.line, 9u);
  EXPECT_EQ(work.kind, FrameKind::kInlined);
  EXPECT_EQ(p.frames[p.samples[1].frames[1]].kind, FrameKind::kSynthetic);
  EXPECT_EQ(p.samples[0].frames[0], p.samples[1].frames[0]);  // interned
}

TEST(ReadFolded, ReadsWhatWriteFoldedWrites) {
  ExportOptions options;
  options.folded_lines = true;
  std::ostringstream out;
  WriteFolded(GoldenProfile(), options, out);
  Profile p;
  ASSERT_TRUE(ReadFolded(out.str(), "x", &p).ok());
  std::ostringstream again;
  WriteFolded(p, options, again);
  EXPECT_EQ(again.str(), out.str());
}

TEST(ReadFolded, BadLineNamesFileAndLine) {
  Profile p;
  const Status s = ReadFolded("a;b 1\na;b\n", "x.folded", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("x.folded:2: expected", 0), 0u) << s.message();
}

TEST(ReadPerfLog, ReadsWhatWritePerfLogWrites) {
  std::ostringstream out;
  WritePerfLog(GoldenProfile(), {}, out);
  Profile p;
  const Status s = ReadPerfLog(out.str(), "perf.log", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  std::ostringstream again;
  WritePerfLog(p, {}, again);
  EXPECT_EQ(again.str(), out.str());
  // Symbols and locations are split as perfanno splits them.
  bool found = false;
  for (const Frame& f : p.frames) {
    if (f.file == "/src/app/compute.cpp" && f.line == 88) {
      EXPECT_EQ(f.function, "compute(int)");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ReadPerfLog, BadLinesNameFileAndLine) {
  Profile p;
  Status s = ReadPerfLog("f /a.c:1 3\nf /a.c:1 x\n", "perf.log", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("perf.log:2: expected", 0), 0u) << s.message();
  s = ReadPerfLog("f a.c:1 3\n", "perf.log", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("perf.log:1: expected frames", 0), 0u) << s.message();
}

TEST(WriteProfileFile, JsonNameWritesAnnotationJson) {
  char dir[] = "/tmp/inprof_json_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/p.json";
  ASSERT_EQ(FormatFromPath(path), Format::kAnnotationJson);
  ASSERT_TRUE(WriteProfileFile(GoldenProfile(), Format::kAnnotationJson, path).ok());
  std::ostringstream expected;
  WriteAnnotationJson(GoldenProfile(), expected);
  FILE* f = fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  fclose(f);
  EXPECT_EQ(text, expected.str());
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace inprof::test
