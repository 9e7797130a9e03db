// The pprof writer: the decoded message against a golden dump (INPROF_BLESS=1 rewrites it),
// the mapping of the model's inline frames onto pprof Locations, and the real pprof tool
// (`go tool pprof`) reading what we wrote.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "inprof/formats.h"
#include "inprof/pprof.h"
#include "pprof_reader.h"
#include "test_profiles.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

PprofProfile Decode(const std::string& bytes) {
  PprofProfile p;
  std::string error;
  EXPECT_TRUE(DecodePprof(bytes, &p, &error)) << error;
  return p;
}

// The golden profile with everything the runtime can fill in: times, health, threads and
// modules with build-ids.
Profile FullProfile() {
  Profile p = GoldenProfile();
  p.events[0].period = 10'101'010;  // 99 Hz
  p.events[0].frequency_hz = 99;
  p.events[1].period = 52'631'578;  // 19 Hz
  p.meta = {"/usr/bin/app", 4242, 1'700'000'000'000'000'000, 2'500'000'000};
  p.health.engine = "timer";
  p.health.unwinder = "fp";
  p.health.requested_hz = 99;
  p.health.achieved_hz = 98.5;
  p.health.samples = 89;
  p.health.threads_seen = 2;
  p.health.warnings = {"4 stacks truncated at depth 64"};
  p.health.threads = {{100, "main", 1.0, 99, 90, 90}, {101, "worker 1", 0.5, 49.5, 40, 40}};
  for (size_t i = 0; i < p.frames.size(); ++i) {
    if (p.frames[i].kind == FrameKind::kSynthetic) continue;
    p.frames[i].module =
        p.frames[i].file.starts_with("/src/") ? "/usr/bin/app" : "/usr/lib/libc.so.6";
  }
  p.modules = {{"/usr/bin/app", 0x1000, 0x9000, 0x1000, "0a1b2c3d"}};
  for (size_t i = 0; i < p.samples.size(); ++i) p.samples[i].tid = i % 3 == 0 ? 101 : 100;
  return p;
}

TEST(PprofGolden, DecodedMessage) {
  const std::string actual = DumpPprof(Decode(EncodePprof(FullProfile())));
  CheckGolden("pprof/golden.txt", actual);
}

TEST(Pprof, InlineFramesShareTheLocationOfTheirNativeFrame) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t outer = b.Frame("outer", "/src/a.cpp", 20);
  const uint32_t mid = b.Inlined("mid", "/src/a.h", 30);
  const uint32_t leaf = b.Inlined("leaf", "/src/b.h", 40);
  b.Sample({main, outer, mid, leaf}, {3});
  b.Sample({main, outer}, {2});  // `outer` alone is another address: its own location
  Profile profile = b.profile();
  profile.events[0].period = 1000;
  const PprofProfile p = Decode(EncodePprof(profile));

  ASSERT_EQ(p.samples.size(), 2u);
  ASSERT_EQ(p.samples[0].location_ids.size(), 2u) << "one location per machine frame";
  const PprofLocation& inner = p.Location(p.samples[0].location_ids[0]);  // leaf first
  ASSERT_EQ(inner.lines.size(), 3u);
  EXPECT_EQ(p.S(p.Function(inner.lines[0].function_id).name), "leaf");  // innermost first
  EXPECT_EQ(inner.lines[0].line, 40);
  EXPECT_EQ(p.S(p.Function(inner.lines[1].function_id).name), "mid");
  EXPECT_EQ(p.S(p.Function(inner.lines[2].function_id).name), "outer");
  EXPECT_EQ(p.S(p.Function(inner.lines[2].function_id).filename), "/src/a.cpp");
  EXPECT_EQ(p.S(p.Function(p.Location(p.samples[0].location_ids[1]).lines[0].function_id).name),
            "main");
  // Values: periods, then time.
  ASSERT_EQ(p.sample_types.size(), 2u);
  EXPECT_EQ(p.S(p.sample_types[0].type) + "/" + p.S(p.sample_types[0].unit), "samples/count");
  EXPECT_EQ(p.S(p.sample_types[1].type) + "/" + p.S(p.sample_types[1].unit), "cpu/nanoseconds");
  EXPECT_EQ(p.samples[0].values, (std::vector<int64_t>{3, 3000}));
  EXPECT_EQ(p.samples[1].values, (std::vector<int64_t>{2, 2000}));
  EXPECT_NE(p.samples[1].location_ids[0], p.samples[0].location_ids[0]);
  EXPECT_EQ(p.period, 1000);
  EXPECT_EQ(p.S(p.default_sample_type), "cpu");
}

TEST(Pprof, CountingEventsHaveOneColumnAndWeightsSaturate) {
  ProfileBuilder b;
  b.AddEvent("page-faults", "count");
  const uint32_t f = b.Frame("f");
  b.Sample({f}, {INT64_MAX / 2, 7});
  Profile profile = b.profile();
  profile.events[0].period = 4;
  profile.events[1].period = 1;
  const PprofProfile p = Decode(EncodePprof(profile));
  ASSERT_EQ(p.sample_types.size(), 3u);
  EXPECT_EQ(p.S(p.sample_types[2].type), "page-faults");
  EXPECT_EQ(p.samples[0].values, (std::vector<int64_t>{INT64_MAX / 2, INT64_MAX, 7}));
  EXPECT_TRUE(p.mappings.empty()) << "no module, no mapping";
}

// What PprofSampleTypes says is what EncodePprof writes (the push client declares each of
// these columns to Pyroscope by name).
TEST(Pprof, PprofSampleTypesListTheColumnsTheEncoderWrites) {
  ProfileBuilder b;
  b.AddEvent("page-faults", "count");
  b.AddEvent("wall", "nanoseconds");
  b.AddEvent("alloc_space", "");
  const uint32_t f = b.Frame("f");
  b.Sample({f}, {1, 2, 3, 4});
  Profile profile = b.profile();
  profile.events[0].period = 10'101'010;
  profile.events[1].period = 1;
  profile.events[2].period = 52'631'578;
  const std::vector<PprofSampleType> types = PprofSampleTypes(profile);
  const PprofProfile p = Decode(EncodePprof(profile));
  ASSERT_EQ(types.size(), p.sample_types.size());
  std::string listed, written;
  for (size_t i = 0; i < types.size(); ++i) {
    listed += types[i].type + "/" + types[i].unit + "@" + std::to_string(types[i].event) +
              (types[i].counts_periods ? "#periods " : " ");
    written += p.S(p.sample_types[i].type) + "/" + p.S(p.sample_types[i].unit) + " ";
  }
  EXPECT_EQ(listed,
            "samples/count@0#periods cpu/nanoseconds@0 page-faults/count@1 "
            "wall_samples/count@2#periods wall/nanoseconds@2 alloc_space/count@3 ");
  EXPECT_EQ(written,
            "samples/count cpu/nanoseconds page-faults/count wall_samples/count wall/nanoseconds "
            "alloc_space/count ");
}

// The `lock` event's two events are written as Go's mutex profile is: contentions/count and
// delay/nanoseconds, period type contentions/count, the delay shown by default (so that
// `go tool pprof -sample_index=delay` and Pyroscope read them as Go's).
TEST(Pprof, LockEventsAreWrittenAsGosMutexProfile) {
  ProfileBuilder b;
  b.AddEvent("lock_delay", "nanoseconds");
  const uint32_t f = b.Frame("f");
  b.Sample({f}, {3, 45000});
  Profile profile = b.profile();
  profile.events[0].name = "lock_contentions";
  profile.events[0].unit = "count";
  profile.events[0].period = 1;
  profile.events[1].period = 1;
  const PprofProfile p = Decode(EncodePprof(profile));
  ASSERT_EQ(p.sample_types.size(), 2u);
  EXPECT_EQ(p.S(p.sample_types[0].type) + "/" + p.S(p.sample_types[0].unit), "contentions/count");
  EXPECT_EQ(p.S(p.sample_types[1].type) + "/" + p.S(p.sample_types[1].unit),
            "delay/nanoseconds");
  EXPECT_EQ(p.S(p.period_type.type) + "/" + p.S(p.period_type.unit), "contentions/count");
  EXPECT_EQ(p.S(p.default_sample_type), "delay");
  EXPECT_EQ(p.samples[0].values, (std::vector<int64_t>{3, 45000}));
  const std::vector<PprofSampleType> types = PprofSampleTypes(profile);
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[1].type, "delay");
  EXPECT_EQ(types[1].event, 1u);
}

TEST(Pprof, WriteProfileFileGzipsByName) {
  ASSERT_EQ(FormatFromPath("out/profile.pb.gz"), Format::kPprof);
  EXPECT_EQ(FormatFromPath(".pb.gz"), std::nullopt);
  const std::string dir = MakeTempDir();
  const Profile profile = FullProfile();
  ASSERT_TRUE(WriteProfileFile(profile, Format::kPprof, dir + "/p.pb.gz").ok());
  std::string raw, error;
  ASSERT_TRUE(Gunzip(ReadFile(dir + "/p.pb.gz"), &raw, &error)) << error;
  EXPECT_EQ(raw, EncodePprof(profile));
  const Status bad = WriteProfileFile(profile, Format::kPprof, dir + "/missing/p.pb.gz");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(dir + "/missing/p.pb.gz"), std::string::npos) << bad.message();
}

// The labels of one decoded sample as "key=value" (numbers as "key=#N"), in the file's order.
std::vector<std::string> LabelsOf(const PprofProfile& p, const PprofSample& s) {
  std::vector<std::string> out;
  for (const PprofLabel& l : s.labels) {
    out.push_back(p.S(l.key) + "=" + (l.str != 0 ? p.S(l.str) : "#" + std::to_string(l.num)));
  }
  return out;
}

// Two endpoints at a known 3:1 weight, on two threads, one sample without labels.
Profile LabelledProfile() {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t serve = b.Frame("serve", "/src/serve.cpp", 20);
  const uint32_t idle = b.Frame("idle", "/src/idle.cpp", 30);
  b.Sample({main, serve}, {30});  // endpoint=/a, tenant=t1
  b.Sample({main, serve}, {10});  // endpoint=/b
  b.Sample({main, idle}, {0});    // weightless: in no total
  Profile p = b.profile();
  p.events[0].period = 1'000'000;  // 1 ms per unit of weight
  p.label_sets = {{{"endpoint", "/a"}, {"tenant", "t1"}}, {{"endpoint", "/b"}}};
  p.samples[0].labels = 1;
  p.samples[1].labels = 2;
  p.samples[0].tid = 100;
  p.samples[1].tid = 101;
  p.samples[2].tid = 101;
  // Profile::threads names a thread; the health's list is the fallback for the others.
  p.threads = {{100, "server 1"}};
  p.health.threads = {{100, "old name", 0, 0, 0, 0}, {101, "server 2", 0, 0, 0, 0}};
  return p;
}

TEST(Pprof, EveryLabelOfASampleIsAStringLabelBesideItsThread) {
  const PprofProfile p = Decode(EncodePprof(LabelledProfile()));
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(LabelsOf(p, p.samples[0]),
            (std::vector<std::string>{"thread id=#100", "thread name=server 1", "endpoint=/a",
                                      "tenant=t1"}));
  EXPECT_EQ(LabelsOf(p, p.samples[1]),
            (std::vector<std::string>{"thread id=#101", "thread name=server 2", "endpoint=/b"}));
  EXPECT_EQ(LabelsOf(p, p.samples[2]),
            (std::vector<std::string>{"thread id=#101", "thread name=server 2"}));
}

TEST(Pprof, ALabelSetIndexOutOfRangeAddsNoLabels) {
  Profile profile = LabelledProfile();
  profile.samples[0].labels = 7;  // only two sets
  profile.samples[0].tid = 0;     // and no thread
  const PprofProfile p = Decode(EncodePprof(profile));
  EXPECT_TRUE(p.samples[0].labels.empty()) << LabelsOf(p, p.samples[0]).size();
}

// ---------------------------------------------------------------------------------------------
// The real pprof tool.

struct Pprof {
  std::string dir = MakeTempDir();
  std::string file = dir + "/profile.pb.gz";

  // `go tool pprof ARGS file`, offline: no HOME, no network, caches in the temp dir.
  ProcessResult Run(std::vector<std::string> args) const {
    args.insert(args.begin(), {INPROF_GO, "tool", "pprof"});
    args.push_back(file);
    return RunProcess(args, {{"HOME", dir},
                             {"GOCACHE", dir + "/gocache"},
                             {"GOPROXY", "off"},
                             {"GOFLAGS", "-mod=mod"},
                             {"PPROF_TMPDIR", dir},
                             {"PPROF_BINARY_PATH", dir}});
  }
};

// A small profile whose sources exist, so `-list` can show them.
Profile ListableProfile(const std::string& dir) {
  std::ofstream(dir + "/main.cpp") << "int main() {\n  run();\n  return 0;\n}\n";
  std::ofstream(dir + "/work.h") << "// work\ninline int square(int x) {\n  return x * x;\n}\n";
  std::ofstream(dir + "/run.cpp") << "void run() {\n  for (;;)\n    sum += square(i);\n"
                                     "  spin();\n}\n";
  ProfileBuilder b;
  const uint32_t main = b.Frame("main", dir + "/main.cpp", 2);
  const uint32_t run = b.Frame("run()", dir + "/run.cpp", 3);
  const uint32_t square = b.Inlined("square(int)", dir + "/work.h", 3);
  const uint32_t run4 = b.Frame("run()", dir + "/run.cpp", 4);
  const uint32_t spin = b.Frame("spin");  // no source
  b.Sample({main, run, square}, {70});
  b.Sample({main, run4, spin}, {30});
  Profile p = b.profile();
  p.events[0].period = 10'000'000;  // 100 Hz
  for (Frame& f : p.frames) f.module = dir + "/app";
  p.meta.duration_ns = 1'000'000'000;
  return p;
}

TEST(PprofTool, TopListTracesRaw) {
  if (std::string(INPROF_GO).empty()) GTEST_SKIP() << "go is not installed (scripts/install-deps)";
  Pprof tool;
  const Profile profile = ListableProfile(tool.dir);
  ASSERT_TRUE(WriteProfileFile(profile, Format::kPprof, tool.file).ok());

  // -top: flat time per function, from the default sample type (cpu nanoseconds).
  ProcessResult top = tool.Run({"-top", "-nodecount=10"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_TRUE(std::regex_search(
      top.out, std::regex(R"(Showing nodes accounting for 1000ms, 100% of 1000ms total)")))
      << top.out;
  // Inline frames are functions of their own: square() gets the 0.7 s flat, run() none.
  EXPECT_TRUE(std::regex_search(
      top.out,
      std::regex(
          R"(\n\s*700ms\s+70\.00%\s+70\.00%\s+700ms\s+70\.00%\s+square\(int\) \(inline\)\n)")))
      << top.out;
  EXPECT_TRUE(std::regex_search(
      top.out, std::regex(R"(\n\s*300ms\s+30\.00%\s+100%\s+300ms\s+30\.00%\s+spin\n)")))
      << top.out;
  EXPECT_TRUE(
      std::regex_search(top.out, std::regex(R"(\n\s*0\s+0%\s+100%\s+1000ms\s+100%\s+run\(\)\n)")))
      << top.out;

  // -sample_index=samples: the other column.
  ProcessResult count = tool.Run({"-top", "-sample_index=samples"});
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_TRUE(std::regex_search(count.out, std::regex(R"(\n\s*70\s+70\.00%.*square)")))
      << count.out;

  // -list: the source lines with their time, the inline call line included.
  ProcessResult list = tool.Run({"-list", "^run\\(\\)$"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("ROUTINE ======================== run() in " + tool.dir + "/run.cpp"),
            std::string::npos)
      << list.out;
  EXPECT_TRUE(
      std::regex_search(list.out, std::regex(R"(\n\s*\.\s+700ms\s+3:\s+sum \+= square\(i\);)")))
      << list.out;
  EXPECT_TRUE(std::regex_search(list.out, std::regex(R"(\n\s*\.\s+300ms\s+4:\s+spin\(\);)")))
      << list.out;

  // -traces: whole stacks leaf first, inline frames marked.
  ProcessResult traces = tool.Run({"-traces"});
  ASSERT_EQ(traces.exit_code, 0) << traces.err;
  EXPECT_TRUE(std::regex_search(
      traces.out, std::regex(R"(\n\s*700ms\s+square\(int\) \(inline\)\n\s+run\(\)\n\s+main\n)")))
      << traces.out;
  EXPECT_TRUE(
      std::regex_search(traces.out, std::regex(R"(\n\s*300ms\s+spin\n\s+run\(\)\n\s+main\n)")))
      << traces.out;

  // -raw: sample values and file:line of every level.
  ProcessResult raw = tool.Run({"-raw"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out.find("samples/count cpu/nanoseconds"), std::string::npos) << raw.out;
  EXPECT_TRUE(std::regex_search(raw.out, std::regex(R"(\n\s+70\s+700000000: 1 2 \n)"))) << raw.out;
  EXPECT_NE(raw.out.find("square(int) " + tool.dir + "/work.h:3 s=0"), std::string::npos)
      << raw.out;
  EXPECT_NE(raw.out.find("run() " + tool.dir + "/run.cpp:3 s=0"), std::string::npos) << raw.out;
}

TEST(PprofTool, ReadsTheGoldenProfileWithThreadLabels) {
  if (std::string(INPROF_GO).empty()) GTEST_SKIP() << "go is not installed (scripts/install-deps)";
  Pprof tool;
  ASSERT_TRUE(WriteProfileFile(FullProfile(), Format::kPprof, tool.file).ok());
  ProcessResult tags = tool.Run({"-tags"});
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  EXPECT_NE(tags.out.find("thread name"), std::string::npos) << tags.out;
  EXPECT_NE(tags.out.find("worker 1"), std::string::npos) << tags.out;
  ProcessResult raw = tool.Run({"-raw"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out.find("/usr/bin/app 0a1b2c3d"), std::string::npos) << raw.out;
  EXPECT_NE(raw.out.find("inprof: engine=timer"), std::string::npos) << raw.out;
  ProcessResult top = tool.Run({"-top", "-sample_index=wall"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("operator/(Ratio, Ratio) (inline)"), std::string::npos) << top.out;
}

TEST(PprofTool, TagfocusSelectsALabelAndTagsListsItsValues) {
  if (std::string(INPROF_GO).empty()) GTEST_SKIP() << "go is not installed (scripts/install-deps)";
  Pprof tool;
  ASSERT_TRUE(WriteProfileFile(LabelledProfile(), Format::kPprof, tool.file).ok());

  // -tags: every label with its values and their shares of the 40 ms.
  ProcessResult tags = tool.Run({"-tags"});
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  EXPECT_TRUE(std::regex_search(
      tags.out,
      std::regex(
          R"(endpoint: Total 40\.0ms\n\s+30\.0ms \(75\.00%\): /a\n\s+10\.0ms \(25\.00%\): /b\n)")))
      << tags.out;
  EXPECT_TRUE(std::regex_search(
      tags.out, std::regex(R"(tenant: Total 30\.0ms\n\s+30\.0ms \(\s*100%\): t1\n)")))
      << tags.out;
  EXPECT_TRUE(std::regex_search(
      tags.out,
      std::regex(
          R"(thread name: Total 40\.0ms\n\s+30\.0ms \(75\.00%\): server 1\n\s+10\.0ms \(25\.00%\): server 2\n)")))
      << tags.out;

  // -tagfocus: only /a's samples, measured against the whole profile: 75 %.
  ProcessResult a = tool.Run({"-tagfocus=endpoint=/a", "-top"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_TRUE(std::regex_search(
      a.out, std::regex(R"(Showing nodes accounting for 30ms, 75\.00% of 40ms total)")))
      << a.out;
  ProcessResult b = tool.Run({"-tagfocus=endpoint=/b", "-top"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(std::regex_search(
      b.out, std::regex(R"(Showing nodes accounting for 10ms, 25\.00% of 40ms total)")))
      << b.out;
  // -tagignore: the complement.
  ProcessResult not_a = tool.Run({"-tagignore=endpoint=/a", "-top"});
  ASSERT_EQ(not_a.exit_code, 0) << not_a.err;
  EXPECT_TRUE(std::regex_search(
      not_a.out, std::regex(R"(Showing nodes accounting for 10ms, 25\.00% of 40ms total)")))
      << not_a.out;

  // -raw: the labels of each sample as pprof itself decodes them.
  ProcessResult raw = tool.Run({"-raw"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_TRUE(std::regex_search(raw.out, std::regex(R"(endpoint:\[/a\])"))) << raw.out;
  EXPECT_TRUE(std::regex_search(raw.out, std::regex(R"(tenant:\[t1\])"))) << raw.out;
}

}  // namespace
}  // namespace inprof::test
