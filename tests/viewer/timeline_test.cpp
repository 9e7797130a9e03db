// Time and context at the command line: `inprof timeline` (the heat map as SVG and as the
// page), --from/--to, --thread and --label on the commands that read a profile, top
// --by-label, and the errors of inputs that cannot answer them. The timed input is the one
// users have most: `perf script` output, made here with known times (3 s; `burst` runs on two
// threads from 1.3 s to 1.6 s), plus a speedscope file with labels written by the exporters.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/speedscope.h"
#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

ProcessResult Viewer(std::vector<std::string> args) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, {});
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out) << path;
}

constexpr int64_t kPeriod = 1000000;  // cpu-clock's period at 1 kHz, in ns

// 3 s of `perf script` output, one sample per millisecond slot k (0..2999) at
// 12345.000200 + k ms: thread app (pid 100, tid 100) runs main;work every 10 ms, except from
// 1.3 s to 1.6 s, when it runs main;burst;std::map<int, int>::find every millisecond (but
// main;work every 25th) and thread helper (tid 101) runs helper_main;burst every millisecond.
// So [1.3, 1.6) holds 600 samples, 588 of them in burst (98 %), and each 20 ms cell there
// weighs 40 samples against 2 anywhere else.
std::string BurstPerfScript() {
  std::string text;
  auto sample = [&](const char* comm, int tid, int cpu, int64_t us,
                    const std::vector<std::string>& leaf_first) {
    char header[160];
    std::snprintf(header, sizeof header, "%s 100/%d [%03d] %lld.%06lld: %12lld cpu-clock: \n", comm,
                  tid, cpu, static_cast<long long>(us / 1000000),
                  static_cast<long long>(us % 1000000), static_cast<long long>(kPeriod));
    text += header;
    for (size_t i = 0; i < leaf_first.size(); ++i) {
      char frame[160];
      std::snprintf(frame, sizeof frame, "\t%12zx %s (/opt/app/bin/app)\n", 0x5000 + 16 * i,
                    leaf_first[i].c_str());
      text += frame;
    }
    text += '\n';
  };
  const std::vector<std::string> work = {"work+0x4", "main+0x10", "_start+0x1"};
  for (int64_t k = 0; k < 3000; ++k) {
    const int64_t us = 12345000200 + k * 1000;
    if (k >= 1300 && k < 1600) {
      if (k % 25 == 0) {
        sample("app", 100, 0, us, work);
      } else {
        sample(
            "app", 100, 0, us,
            {"std::map<int, int>::find(int const&)+0x8", "burst+0x10", "main+0x10", "_start+0x1"});
      }
      sample("helper", 101, 1, us + 100, {"burst+0x10", "helper_main+0x2"});
    } else if (k % 10 == 0) {
      sample("app", 100, 0, us, work);
    }
  }
  return text;
}

class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    script_ = dir_ + "/burst.perf-script";
    Write(script_, BurstPerfScript());
  }
  std::string dir_, script_;
};

// Heat map cells: (column, row) -> weight, from the rects the SVG or the page draws.
std::map<std::pair<int, int>, int64_t> Cells(const std::string& document) {
  std::map<std::pair<int, int>, int64_t> cells;
  static const std::regex cell(R"re(<rect data-c="(\d+)" data-r="(\d+)" data-w="(\d+)")re");
  for (auto it = std::sregex_iterator(document.begin(), document.end(), cell);
       it != std::sregex_iterator(); ++it) {
    cells[{std::stoi((*it)[1]), std::stoi((*it)[2])}] += std::stoll((*it)[3]);
  }
  return cells;
}

// The weight of the boxes named `name` in a flame graph, and of the root.
int64_t BoxWeight(const std::string& svg, const std::string& name) {
  int64_t sum = 0;
  const std::regex box("<title>" + name + R"re( \(([\d,]+) samples)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator();
       ++it) {
    std::string digits = (*it)[1];
    std::erase(digits, ',');
    sum += std::stoll(digits);
  }
  return sum;
}

// `"total":N` of top --json.
int64_t JsonTotal(const std::string& json) {
  std::smatch m;
  static const std::regex total(R"re("total":(\d+))re");
  return std::regex_search(json, m, total) ? std::stoll(m[1]) : -1;
}

TEST_F(TimelineTest, SvgHeatMapShowsTheBurstInItsCells) {
  const std::string out = dir_ + "/t.svg";
  const ProcessResult r = Viewer({"timeline", script_, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string svg = ReadFile(out);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  const auto cells = Cells(svg);
  // 3 columns of 50 rows: every 20 ms cell has samples.
  EXPECT_EQ(cells.size(), 150u);
  for (const auto& [at, weight] : cells) {
    const bool burst = at.first == 1 && at.second >= 15 && at.second < 30;
    EXPECT_EQ(weight, (burst ? 40 : 2) * kPeriod) << at.first << "," << at.second;
  }
  // Tooltips give the cell's time and samples; the legend its scale.
  EXPECT_NE(svg.find("<title>1.3-1.32 s: 40 samples, 40,000,000 nanoseconds</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("40,000,000 nanoseconds</text>"), std::string::npos);
  EXPECT_NE(svg.find("Timeline of app"), std::string::npos);
}

TEST_F(TimelineTest, RowsAndBucketsSetTheSlices) {
  for (const std::vector<std::string>& option :
       {std::vector<std::string>{"--rows", "10"}, std::vector<std::string>{"--bucket", "100"}}) {
    const std::string out = dir_ + "/rows.svg";
    std::vector<std::string> args = {"timeline", script_, "-o", out};
    args.insert(args.end(), option.begin(), option.end());
    const ProcessResult r = Viewer(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto cells = Cells(ReadFile(out));
    EXPECT_EQ(cells.size(), 30u) << option[0];
    // 100 ms rows: [1.3, 1.6) is rows 3-5 of second 1, 300 samples each.
    EXPECT_EQ(cells.at({1, 4}), 200 * kPeriod);
    EXPECT_EQ(cells.at({0, 4}), 10 * kPeriod);
  }
}

TEST_F(TimelineTest, PartOfTheProfileStartsAtItsSecond) {
  const std::string out = dir_ + "/part.svg";
  const ProcessResult r = Viewer({"timeline", "--from", "1", "--to", "2.5", script_, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadFile(out);
  const auto cells = Cells(svg);
  EXPECT_EQ(cells.size(), 75u);
  EXPECT_EQ(cells.begin()->first, (std::pair<int, int>{1, 0}));
  EXPECT_EQ(cells.rbegin()->first, (std::pair<int, int>{2, 24}));
  // Columns keep their seconds since the start, and the first is drawn first.
  EXPECT_NE(svg.find("<rect data-c=\"1\" data-r=\"0\" data-w=\"2000000\" x=\"64\""),
            std::string::npos);
  EXPECT_NE(svg.find("(1-2.5 s)"), std::string::npos);
}

TEST_F(TimelineTest, HtmlPageIsSelfContainedWithItsData) {
  const std::string out = dir_ + "/t.html";
  const ProcessResult r = Viewer({"timeline", "--per-thread", script_, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(out);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Loads nothing: the only URL is the SVG namespace's name.
  for (size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1)) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 60);
  }
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // One map per thread, busiest first; the data for the range graphs and the flame graph's
  // own head (its script) are embedded, and nothing in them ends the script element early.
  const size_t app = html.find("<h2>app (100)</h2>");
  const size_t helper = html.find("<h2>helper (101)</h2>");
  ASSERT_NE(app, std::string::npos);
  ASSERT_NE(helper, std::string::npos);
  EXPECT_LT(app, helper);
  const size_t data = html.find("<script type=\"application/json\" id=\"data\">");
  ASSERT_NE(data, std::string::npos);
  const size_t end = html.find("</script>", data);
  const std::string json = html.substr(data, end - data);
  EXPECT_NE(json.find("function init(evt)"), std::string::npos);
  EXPECT_NE(json.find("std::map\\u003cint, int>::find(int const&)"), std::string::npos);
  EXPECT_NE(json.find("\"args\":\"--thread 101\""), std::string::npos);
  EXPECT_NE(json.find("\"profile\":"), std::string::npos);
}

TEST_F(TimelineTest, FlameOfTheBurstRange) {
  const std::string out = dir_ + "/burst.svg";
  const ProcessResult r = Viewer({"flame", "--from", "1.3", "--to", "1.6", "-o", out, script_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = ReadFile(out);
  const int64_t all = BoxWeight(svg, "all");
  EXPECT_EQ(all, 600 * kPeriod);
  EXPECT_GE(BoxWeight(svg, "burst"), all * 9 / 10);
  EXPECT_EQ(BoxWeight(svg, "burst"), 588 * kPeriod);
  // The subtitle says which part of the profile it is.
  EXPECT_NE(svg.find("app - cpu-clock - 600,000,000 samples (1.3-1.6 s)"), std::string::npos);
  // The whole profile, for contrast: burst is a minority of it.
  const std::string whole = dir_ + "/whole.svg";
  ASSERT_EQ(Viewer({"flame", "-o", whole, script_}).exit_code, 0);
  const std::string w = ReadFile(whole);
  EXPECT_LT(BoxWeight(w, "burst"), BoxWeight(w, "all") * 7 / 10);
}

TEST_F(TimelineTest, TopOverARangeInAnyUnit) {
  ProcessResult r = Viewer({"top", "--json", "--from", "1.3", "--to", "1.6", script_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonTotal(r.out), 600 * kPeriod);
  EXPECT_NE(r.out.find(R"("inclusive":98.00,"last_line":0,"name":"burst")"), std::string::npos)
      << r.out;
  for (const auto& [from, to] : {std::pair{"1300ms", "1.6s"}, std::pair{"1300000us", "1600ms"},
                                 std::pair{"1.300", "1600000000ns"}}) {
    r = Viewer({"top", "--json", "--from", from, "--to", to, script_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(JsonTotal(r.out), 600 * kPeriod) << from << " " << to;
  }
  // Open ends: before the burst there is no burst.
  r = Viewer({"top", "--json", "--to", "1.3", script_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonTotal(r.out), 130 * kPeriod);
  EXPECT_EQ(r.out.find("burst"), std::string::npos);
  r = Viewer({"top", "--json", "--from", "1.6", script_});
  EXPECT_EQ(JsonTotal(r.out), 140 * kPeriod);
}

TEST_F(TimelineTest, ThreadsByNameOrTid) {
  ProcessResult r = Viewer({"top", "--json", "--thread", "helper", script_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonTotal(r.out), 300 * kPeriod);
  EXPECT_NE(r.out.find(R"("inclusive":100.00,"last_line":0,"name":"burst")"), std::string::npos);
  r = Viewer({"top", "--json", "--thread", "101", script_});
  EXPECT_EQ(JsonTotal(r.out), 300 * kPeriod);
  r = Viewer(
      {"top", "--json", "--inclusive", "--thread", "app", "--from", "1.3", "--to", "1.6", script_});
  EXPECT_EQ(JsonTotal(r.out), 300 * kPeriod);
  EXPECT_NE(r.out.find(R"("inclusive":96.00,"last_line":0,"name":"burst")"), std::string::npos);
  r = Viewer({"top", "--json", "--thread", "app", "--thread", "helper", script_});
  EXPECT_EQ(JsonTotal(r.out), 870 * kPeriod);
  // A mistyped name is told the threads there are.
  r = Viewer({"top", "--thread", "hepler", script_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no thread 'hepler'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("app (100), helper (101)"), std::string::npos) << r.err;
  // One map for one thread.
  const std::string out = dir_ + "/helper.svg";
  ASSERT_EQ(Viewer({"timeline", "--thread", "helper", script_, "-o", out}).exit_code, 0);
  EXPECT_EQ(Cells(ReadFile(out)).size(), 15u);
}

TEST_F(TimelineTest, RangesReachEveryCommand) {
  // convert writes only the range; annotate/heat/callers see only it.
  const std::string folded = dir_ + "/range.folded";
  ProcessResult r = Viewer({"convert", "--from", "1.3", "--to", "1.6", script_, "-o", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t sum = 0;
  std::istringstream lines(ReadFile(folded));
  for (std::string line; std::getline(lines, line);) {
    sum += std::stoll(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(sum, 600 * kPeriod);
  r = Viewer({"callers", "--json", "--thread", "helper", "=burst", script_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("helper_main"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"main\""), std::string::npos) << r.out;
  r = Viewer({"diff", "--json", "--to", "1.3", script_, script_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find(R"("after":{"event":"cpu-clock","file":")" + script_ + R"(","total":130000000})"),
      std::string::npos)
      << r.out;
}

TEST_F(TimelineTest, InputsWithoutTimesSayWhichHaveThem) {
  const std::string folded = Data("folded/basic.folded");
  ProcessResult r = Viewer({"top", "--from", "1", folded});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("need the time of each sample, but this is folded stacks"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("perf script output and *.speedscope.json"), std::string::npos) << r.err;
  r = Viewer({"flame", "--thread", "main", "-o", dir_ + "/x.svg", folded});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--thread needs the thread of each sample"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(dir_ + "/x.svg"));
  r = Viewer({"top", "--from", "1", Data("annotation_json/basic.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("annotation JSON keeps totals per source line"), std::string::npos);
  r = Viewer({"timeline", folded, "-o", dir_ + "/t.html"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a timeline needs the time of each sample, but this is folded stacks"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(FileExists(dir_ + "/t.html"));
  r = Viewer({"top", "--label", "tenant=a", script_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--label needs labels on the samples, but this is perf script output"),
            std::string::npos)
      << r.err;
  // Code search commands take the options too, with their own exit code for errors.
  r = RunProcess({INPROF_VIEWER, "query", "--from", "1", folded, "a.c:1"}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("need the time of each sample"), std::string::npos) << r.err;
}

TEST_F(TimelineTest, BadRangesAndEmptySelections) {
  ProcessResult r = Viewer({"top", "--from", "1.6", "--to", "1.3", script_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--from 1.6 is not before --to 1.3"), std::string::npos) << r.err;
  for (const char* bad : {"1.5x", "-1", "1.", "", "s", "1e3", "1000000000"}) {
    r = Viewer({"top", "--from", bad, script_});
    EXPECT_EQ(r.exit_code, 2) << bad;
  }
  r = Viewer({"top", "--from", "10", script_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no sample is selected by --from 10 (its samples are from 0 s to 2.99 s)"),
            std::string::npos)
      << r.err;
  r = Viewer({"timeline", script_});
  EXPECT_EQ(r.exit_code, 2);
  r = Viewer({"timeline", script_, "-o", dir_ + "/t.png"});
  EXPECT_EQ(r.exit_code, 2);
  r = Viewer({"timeline", "--rows", "0", script_, "-o", dir_ + "/t.svg"});
  EXPECT_EQ(r.exit_code, 2);
  r = Viewer({"timeline", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("examples:"), std::string::npos);
}

// A labelled profile, as inprof writes it: a speedscope file (the exporters' writer) of two
// threads sampled at 1 kHz for 1 s (main every millisecond, the worker every fourth): main's
// samples carry phase=parse for the first 400 ms and phase=render after, with tenant=a from
// 200 ms on; the worker's carry nothing. Weights are samples (1 each) of a 1 ms period.
std::string LabelledSpeedscope(const std::string& dir) {
  Profile p;
  p.meta.program = "/opt/app/bin/app";
  p.events = {{"cpu", "nanoseconds", 1000000, 1000, 0}};
  for (const char* name : {"main", "parse", "render", "worker", "idle"}) {
    Frame f;
    f.function = name;
    p.frames.push_back(f);
  }
  p.threads = {{7, "main"}, {8, "worker"}};
  p.label_sets = {{{"phase", "parse"}},
                  {{"phase", "parse"}, {"tenant", "a"}},
                  {{"phase", "render"}, {"tenant", "a"}}};
  p.samples = {{{0, 1}, {0}, 7, 1}, {{0, 1}, {0}, 7, 2}, {{0, 2}, {0}, 7, 3}, {{3, 4}, {0}, 8, 0}};
  for (int64_t ms = 0; ms < 1000; ++ms) {
    const uint32_t sample = ms < 200 ? 0 : ms < 400 ? 1 : 2;
    p.timeline.push_back({ms * 1000000, sample, 0, 1});
    if (ms % 4 == 0) p.timeline.push_back({ms * 1000000 + 500000, 3, 0, 1});
  }
  for (const TimedSample& t : p.timeline) p.samples[t.sample].weights[0] += t.weight;
  for (const Sample& s : p.samples) p.events[0].total_weight += s.weights[0];
  std::ostringstream out;
  WriteSpeedscope(p, {}, out);
  const std::string path = dir + "/app.speedscope.json";
  Write(path, out.str());
  return path;
}

TEST_F(TimelineTest, LabelsFromASpeedscopeProfile) {
  const std::string file = LabelledSpeedscope(dir_);
  // 1,250 samples of 1 ms: phase=parse 400, render 600, the worker's 250 without.
  ProcessResult r = Viewer({"top", "--by-label", "phase", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t render = r.out.find("48.00%");
  const size_t parse = r.out.find("32.00%");
  const size_t none = r.out.find("20.00%");
  ASSERT_NE(render, std::string::npos) << r.out;
  ASSERT_NE(parse, std::string::npos) << r.out;
  ASSERT_NE(none, std::string::npos) << r.out;
  EXPECT_LT(render, parse);
  EXPECT_LT(parse, none);
  EXPECT_NE(r.out.find("render"), std::string::npos);
  EXPECT_NE(r.out.find("(no phase)"), std::string::npos);
  r = Viewer({"top", "--json", "--by-label", "tenant", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"({"share":64.00,"value":"a","weight":800})"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"({"share":36.00,"value":null,"weight":450})"), std::string::npos) << r.out;
  // Labels, threads and ranges combine; a label filter keeps only samples with all labels.
  r = Viewer({"top", "--json", "--label", "phase=parse", "--label", "tenant=a", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonTotal(r.out), 200);
  r = Viewer({"top", "--json", "--label", "tenant=a", "--from", "0.3", "--to", "0.5", file});
  EXPECT_EQ(JsonTotal(r.out), 200);
  r = Viewer({"top", "--json", "--by-label", "phase", "--thread", "worker", file});
  EXPECT_NE(r.out.find(R"({"share":100.00,"value":null,"weight":250})"), std::string::npos)
      << r.out;
  // Annotation JSON keeps the label totals: by-label answers from them.
  const std::string json = dir_ + "/app.json";
  ASSERT_EQ(Viewer({"convert", file, "-o", json}).exit_code, 0);
  r = Viewer({"top", "--json", "--by-label", "tenant", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"({"share":64.00,"value":"a","weight":800})"), std::string::npos) << r.out;
  r = Viewer({"top", "--label", "phase=lex", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("values of phase: parse, render"), std::string::npos) << r.err;
  r = Viewer({"top", "--by-label", "user", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("its label keys: phase tenant"), std::string::npos) << r.err;
  // The heat map of a speedscope profile, and of one label.
  const std::string svg = dir_ + "/labels.svg";
  r = Viewer({"timeline", "--label", "phase=render", file, "-o", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t weight = 0;
  for (const auto& [at, w] : Cells(ReadFile(svg))) {
    EXPECT_GE(at.second, 20) << "render starts at 400 ms";
    weight += w;
  }
  EXPECT_EQ(weight, 600);
}

}  // namespace
}  // namespace inprof::test
