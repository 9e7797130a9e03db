// `perf script` and `perf report -g folded` read back. The fixtures under
// tests/data/perf_script/ are real perf 6.1 output (trimmed): frame-pointer call chains with
// kernel and [unknown] frames, DWARF call chains with `-F +srcline --inline`, two events with
// a cpu column, no period field, and perf report with and without --no-children.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/annotations.h"
#include "inprof/perf_script.h"
#include "test_support.h"

namespace inprof::test {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(SourceDir() + "/tests/data/perf_script/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The header lines of a perf script text and the period each one carries (1 without one),
// found independently of the reader: a header is a line that starts in column 0.
std::map<std::string, int64_t> PeriodsByEvent(const std::string& text, size_t* headers) {
  std::map<std::string, int64_t> totals;
  std::istringstream in(text);
  *headers = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '\t' || line[0] == ' ' || line[0] == '#') continue;
    ++*headers;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    const std::string event = w.back().substr(0, w.back().size() - 1);
    const std::string before = w[w.size() - 2];
    const bool period = before.back() != ':';
    totals[event] += period ? std::stoll(before) : 1;
  }
  return totals;
}

std::vector<std::string> Names(const Profile& p, const Sample& s) {
  std::vector<std::string> names;
  for (uint32_t f : s.frames) names.push_back(p.frames[f].function);
  return names;
}

const Sample* FindSample(const Profile& p, const std::vector<std::string>& names) {
  for (const Sample& s : p.samples) {
    if (Names(p, s) == names) return &s;
  }
  return nullptr;
}

TEST(PerfScript, FramePointerChainsRootFirstWithPeriodsAndUnknownFrames) {
  const std::string text = Fixture("fp.perf-script");
  Profile p;
  const Status s = ReadPerfScript(text, "fp.perf-script", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  size_t headers = 0;
  const auto totals = PeriodsByEvent(text, &headers);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name, "cpu-clock");
  EXPECT_EQ(p.events[0].unit, "nanoseconds");
  EXPECT_EQ(p.events[0].total_weight, totals.at("cpu-clock"));
  EXPECT_EQ(p.health.samples, headers);
  EXPECT_EQ(p.meta.program, "w");
  EXPECT_GT(p.meta.duration_ns, 0);
  // Identical stacks are merged: far fewer samples than headers, same total.
  EXPECT_LT(p.samples.size(), headers);
  int64_t sum = 0;
  for (const Sample& sample : p.samples) sum += sample.weights[0];
  EXPECT_EQ(sum, totals.at("cpu-clock"));

  // perf prints leaf first; the profile is root first, offsets gone, the dso kept.
  const Sample* hot = FindSample(p, {"__libc_start_call_main", "main", "leaf"});
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->weights[0] % 2004008, 0);
  const Frame& leaf = p.frames[hot->frames.back()];
  EXPECT_EQ(leaf.module, "/work/demo/w");
  EXPECT_FALSE(leaf.has_source());
  // A symbol perf could not name stands for its module, as in stackcollapse-perf.pl; with no
  // module either it is the synthetic [unknown].
  bool module_frame = false, unknown = false;
  for (const Frame& f : p.frames) {
    module_frame |= f.function == "[libpcre2-8.so.0.11.2]" && f.kind == FrameKind::kNative;
    unknown |= f.function == "[unknown]" && f.kind == FrameKind::kSynthetic && f.module.empty();
    EXPECT_EQ(f.function.find("+0x"), std::string::npos) << f.function;
  }
  EXPECT_TRUE(module_frame);
  EXPECT_TRUE(unknown);
}

TEST(PerfScript, SrclineAndInlineFrames) {
  Profile p;
  const Status s = ReadPerfScript(Fixture("srcline_inline.perf-script"), "x", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  const Sample* sample = FindSample(p, {"_start", "__libc_start_main_impl",
                                        "__libc_start_call_main", "main", "mid", "leaf", "inner"});
  ASSERT_NE(sample, nullptr);
  auto frame = [&](size_t i) -> const Frame& { return p.frames[sample->frames[i]]; };
  EXPECT_FALSE(frame(0).has_source());  // "??:0"
  EXPECT_EQ(frame(1).kind, FrameKind::kInlined);
  EXPECT_EQ(frame(1).file, "libc-start.c");
  EXPECT_EQ(frame(1).line, 360u);
  EXPECT_EQ(frame(3).file, "w.c");
  EXPECT_EQ(frame(3).line, 6u);
  EXPECT_EQ(frame(5).kind, FrameKind::kNative);
  EXPECT_EQ(frame(5).line, 4u);  // leaf's line: where inner was inlined
  EXPECT_EQ(frame(6).kind, FrameKind::kInlined);
  EXPECT_EQ(frame(6).line, 3u);
  // The inline frame is the innermost: its line gets the self weight.
  const Annotations a = BuildAnnotations(p);
  bool inline_edge = false;
  for (const CallEdge& e : a.edges) {
    inline_edge |= e.inlined && e.caller.line == 4 && e.callee.line == 3;
  }
  EXPECT_TRUE(inline_edge);
}

TEST(PerfScript, SeveralEventsCpuColumnAndNoPeriod) {
  const std::string text = Fixture("multi_event.perf-script");
  Profile p;
  ASSERT_TRUE(ReadPerfScript(text, "x", &p).ok());
  size_t headers = 0;
  const auto totals = PeriodsByEvent(text, &headers);
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].name, "cpu-clock");
  EXPECT_EQ(p.events[1].name, "task-clock");
  EXPECT_EQ(p.events[1].total_weight, totals.at("task-clock"));
  for (const Sample& s : p.samples) {
    ASSERT_EQ(s.weights.size(), 2u);
    EXPECT_TRUE((s.weights[0] == 0) != (s.weights[1] == 0)) << "one event per perf sample";
  }

  const std::string no_period = Fixture("no_period_cpu.perf-script");
  ASSERT_TRUE(ReadPerfScript(no_period, "x", &p).ok());
  const auto counts = PeriodsByEvent(no_period, &headers);
  EXPECT_EQ(p.events[0].unit, "samples");
  EXPECT_EQ(p.events[0].total_weight, counts.at("cpu-clock"));
  EXPECT_EQ(p.meta.pid, 26475);
}

TEST(PerfScript, HandWrittenVariants) {
  // A comm with spaces, no call chain (ip on the header line), CRLF, a tracepoint-style
  // event name with colons, and no blank line before the next header.
  const std::string text =
      "V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:u: \t 7f00 work+0x10 (/bin/x)\r\n"
      "V8 WorkerThread 24636/25607 [000] 94564.109316: 300 cycles:u:\n"
      "\t7f00 work+0x10 (/bin/x)\n"
      "\t7e00 start (/bin/x)\n"
      "java 25607 4794564.109216: 7 sched:sched_switch: prev_comm=java\n"
      "\t7d00 operator()(int) const+0x3 (/bin/x)\n";
  Profile p;
  const Status s = ReadPerfScript(text, "x", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].name, "cycles:u");
  EXPECT_EQ(p.events[0].unit, "count");
  EXPECT_EQ(p.events[0].total_weight, 400);
  EXPECT_EQ(p.events[1].name, "sched:sched_switch");
  EXPECT_EQ(p.meta.program, "V8 WorkerThread");
  EXPECT_EQ(p.meta.pid, 24636);
  ASSERT_NE(FindSample(p, {"work"}), nullptr);
  EXPECT_EQ(FindSample(p, {"work"})->weights[0], 100);
  ASSERT_NE(FindSample(p, {"start", "work"}), nullptr);
  ASSERT_NE(FindSample(p, {"operator()(int) const"}), nullptr);
}

// A time with more digits than 64 bits of nanoseconds hold is the latest time there is, not
// time 0: it stays after the samples before it.
TEST(PerfScript, TimesPast2To63NanosecondsSaturate) {
  const std::string text =
      "prog 7 1.000000: 1 cpu-clock:\n\t7f00 early (/bin/x)\n\n"
      "prog 7 99999999999999999999999.500000: 1 cpu-clock:\n\t7f00 late (/bin/x)\n\n"
      "prog 7 99999999999.000000: 1 cpu-clock:\n\t7f00 later (/bin/x)\n";
  Profile p;
  const Status s = ReadPerfScript(text, "x", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(p.timeline.size(), 3u);
  EXPECT_EQ(p.timeline[0].time_ns, 0);
  const int64_t max_ns = (std::numeric_limits<int64_t>::max() / 1000000000 - 1) * 1000000000;
  EXPECT_GT(p.timeline[1].time_ns, max_ns - 2000000000);
  EXPECT_GT(p.timeline[2].time_ns, max_ns - 2000000000);
  EXPECT_GT(p.meta.duration_ns, 0);
}

TEST(PerfScript, ErrorsNameTheLine) {
  Profile p;
  Status s = ReadPerfScript("w 1 1.0: 1 cpu-clock:\n\tzz12 f (x)\n", "in.txt", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("in.txt:2: expected a frame", 0), 0u) << s.message();
  s = ReadPerfScript("\t1234 f (x)\n", "in.txt", &p);
  EXPECT_EQ(s.message().rfind("in.txt:1: expected a sample header", 0), 0u) << s.message();
  s = ReadPerfScript("w 1 1.0: 1 cpu-clock:\n\t12 f (x)\n\nnot a header\n", "in.txt", &p);
  EXPECT_EQ(s.message().rfind("in.txt:4: expected a sample header", 0), 0u) << s.message();
  s = ReadPerfScript("", "in.txt", &p);
  EXPECT_FALSE(s.ok());
}

TEST(PerfScript, ContentDetection) {
  EXPECT_TRUE(LooksLikePerfScript(Fixture("fp.perf-script")));
  EXPECT_TRUE(LooksLikePerfScript("# header comment\n\nw 1/1 [000] 1.5: cpu-clock:\n"));
  EXPECT_FALSE(LooksLikePerfScript("a;b;c 12\n"));
  EXPECT_FALSE(LooksLikePerfScript("main /src/a.c:12;f /src/a.c:3 4\n"));
  EXPECT_FALSE(LooksLikePerfScript(Fixture("report_folded.txt")));
  EXPECT_TRUE(LooksLikePerfReport(Fixture("report_folded.txt")));
  EXPECT_FALSE(LooksLikePerfReport(Fixture("fp.perf-script")));
  EXPECT_FALSE(LooksLikePerfReport("# a comment\na;b 1\n"));
  // --header puts a long comment block (topology, cmdline, ...) before the samples.
  std::string header;
  for (int i = 0; i < 200; ++i) header += "# cpu" + std::to_string(i) + " : topology\n";
  EXPECT_TRUE(LooksLikePerfScript(header + Fixture("fp.perf-script")));
  EXPECT_TRUE(LooksLikePerfReport(header + Fixture("report_folded.txt")));
}

TEST(PerfReport, FoldedCallChainsWithSrcline) {
  const std::string text = Fixture("report_folded.txt");
  Profile p;
  const Status s = ReadPerfReport(text, "r", &p);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name, "cpu-clock");
  // The chains' counts add up to the section's "# Samples: N".
  const size_t at = text.find("# Samples: ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(p.events[0].total_weight, std::stoll(text.substr(at + 11)));
  const Sample* sample = FindSample(p, {"__libc_start_call_main", "main", "leaf"});
  ASSERT_NE(sample, nullptr);
  const Frame& leaf = p.frames[sample->frames[2]];
  EXPECT_EQ(leaf.file, "w.c");
  EXPECT_TRUE(leaf.line == 3 || leaf.line == 4);
}

TEST(PerfReport, RefusesChildrenAndPercentages) {
  Profile p;
  Status s = ReadPerfReport(Fixture("report_children.txt"), "r", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--no-children"), std::string::npos) << s.message();
  s = ReadPerfReport("# Samples: 3  of event 'cycles'\n#\n87.60% main a.c:1;f a.c:2\n", "r", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("r:3: expected a sample count", 0), 0u) << s.message();
}

}  // namespace
}  // namespace inprof::test
