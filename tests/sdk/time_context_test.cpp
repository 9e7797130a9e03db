// Time and context of a real profiled program (tests/sdk/fixtures/time_context.cpp, linked
// with libinprof, configured by INPROF_*): a CPU burst lands at its time in the timeline and
// its range holds it; labels set per request on a thread pool split the profile by the
// requests' known costs in every output that holds labels (pprof and `go tool pprof -tags`,
// annotation JSON, folded roots, speedscope, the viewer, the Pyroscope push).
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "inprof/annotation_json.h"
#include "inprof/pprof.h"
#include "inprof/profile_filter.h"
#include "inprof/speedscope.h"
#include "net_test_util.h"
#include "pprof_reader.h"
#include "pyroscope_form.h"
#include "test_util.h"

namespace inprof::test {
namespace {

Profile ReadSpeedscopeFile(const std::string& path) {
  Profile p;
  const Status s = ReadSpeedscope(ReadFile(path), path, &p);
  EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

// The name of a sample's leaf function ("" when it has none).
std::string Leaf(const Profile& p, const Sample& s) {
  return s.frames.empty() ? std::string() : p.frames[s.frames.back()].function;
}

// Weight of the event-0 samples per leaf function.
std::map<std::string, int64_t> ByLeaf(const Profile& p) {
  std::map<std::string, int64_t> out;
  for (const Sample& s : p.samples) out[Leaf(p, s)] += s.weights.empty() ? 0 : s.weights[0];
  return out;
}

double Share(const std::map<std::string, int64_t>& by, const std::string& key) {
  int64_t total = 0;
  for (const auto& [k, v] : by) total += v;
  const auto it = by.find(key);
  return total == 0 || it == by.end() ? 0 : 100.0 * static_cast<double>(it->second) / total;
}

// The share (percent) of /api/users among the samples labelled with an endpoint.
double UsersShare(const std::map<std::string, int64_t>& by_endpoint) {
  const int64_t users = by_endpoint.count("/api/users") ? by_endpoint.at("/api/users") : 0;
  const int64_t orders = by_endpoint.count("/api/orders") ? by_endpoint.at("/api/orders") : 0;
  return users + orders == 0 ? 0 : 100.0 * static_cast<double>(users) / (users + orders);
}

std::map<std::string, int64_t> PprofByLabel(const std::string& gz, const std::string& key) {
  std::map<std::string, int64_t> out;
  std::string raw, error;
  EXPECT_TRUE(Gunzip(gz, &raw, &error)) << error;
  PprofProfile p;
  EXPECT_TRUE(DecodePprof(raw, &p, &error)) << error;
  for (const PprofSample& s : p.samples) {
    for (const PprofLabel& l : s.labels) {
      if (p.S(l.key) == key && l.str != 0) out[p.S(l.str)] += s.values[0];
    }
  }
  return out;
}

class TimeContext : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  std::string dir_;
};

TEST_F(TimeContext, ABurstIsAtItsTimeAndItsRangeIsTheBurst) {
  ProcessResult r = RunProcess({INPROF_TIME_CONTEXT, "burst", "3"},
                               {{"INPROF_OUTPUT", dir_ + "/burst.speedscope.json," + dir_ +
                                                      "/burst.folded"},
                                {"INPROF_FREQUENCY", "499"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Profile p = ReadSpeedscopeFile(dir_ + "/burst.speedscope.json");
  ASSERT_FALSE(p.timeline.empty());
  // Where the burst's samples are: 300 ms in the middle of 3 s (the profile starts at the
  // program's first sample, a few ms after it started).
  int64_t burst = 0, burst_in_place = 0;
  for (const TimedSample& t : p.timeline) {
    if (Leaf(p, p.samples[t.sample]) != "burst_work") continue;
    burst += t.weight;
    if (t.time_ns >= 1'300'000'000 && t.time_ns < 1'700'000'000) burst_in_place += t.weight;
  }
  ASSERT_GT(burst, 0);
  EXPECT_GE(static_cast<double>(burst_in_place), 0.95 * static_cast<double>(burst))
      << burst_in_place << " of " << burst << " burst samples between 1.3 and 1.7 s";
  // The timeline's columns are seconds: the burst is in column 1, rows 17-33 of 50 (20 ms).
  std::map<int, int64_t> burst_rows;
  for (const TimedSample& t : p.timeline) {
    if (Leaf(p, p.samples[t.sample]) != "burst_work") continue;
    if (t.time_ns / 1'000'000'000 == 1) burst_rows[static_cast<int>(t.time_ns / 20'000'000 % 50)] += t.weight;
  }
  for (const auto& [row, weight] : burst_rows) {
    EXPECT_TRUE(row >= 15 && row <= 34) << "burst samples in row " << row << ": " << weight;
  }
  // The range flame graph of the burst: the burst's function holds >= 90 % of it.
  ProfileFilter range;
  range.from_ns = 1'350'000'000;
  range.to_ns = 1'650'000'000;
  Profile in_range;
  ASSERT_TRUE(FilterProfile(p, range, &in_range).ok());
  EXPECT_GE(Share(ByLeaf(in_range), "burst_work"), 90.0);
  // And outside it, almost none.
  ProfileFilter before;
  before.to_ns = 1'250'000'000;
  Profile early;
  ASSERT_TRUE(FilterProfile(p, before, &early).ok());
  EXPECT_LE(Share(ByLeaf(early), "burst_work"), 2.0);

  // The same from the command line: `inprof top --from --to` on the speedscope file.
  ProcessResult top = RunProcess({INPROF_VIEWER, "top", "--from", "1.35", "--to", "1.65",
                                  dir_ + "/burst.speedscope.json"},
                                 {});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(top.out, m, std::regex(R"(([0-9.]+)%[^\n]*burst_work)")))
      << top.out;
  EXPECT_GE(std::stod(m[1]), 90.0) << top.out;
  // The timeline page is written, one self-contained file.
  ProcessResult page = RunProcess(
      {INPROF_VIEWER, "timeline", dir_ + "/burst.speedscope.json", "-o", dir_ + "/t.html"}, {});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const std::string html = ReadFile(dir_ + "/t.html");
  EXPECT_NE(html.find("burst_work"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)=\\?["']https?:)")))
      << "nothing loaded from the network";
}

// libfaketime (Debian's `faketime`), where it is installed: the first one found.
std::string FaketimeLibrary() {
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"}) {
    const std::string path = std::string(dir) + "/faketime/libfaketime.so.1";
    if (FileExists(path)) return path;
  }
  return {};
}

// A clock interposer preloaded before the runtime (libfaketime, one day back) shifts the
// program's clocks, thread CPU clocks included, and would run inside the handler if the
// handler read its clock through libc. The runtime reads the kernel's clocks (the vDSO):
// samples still land at their time, each thread gets the samples its CPU time promises, and
// the profile starts today.
TEST_F(TimeContext, AClockInterposerChangesNeitherTimesNorRates) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "libfaketime of the host under qemu-user";
  const std::string faketime = FaketimeLibrary();
  if (faketime.empty()) GTEST_SKIP() << "libfaketime is not installed (scripts/install-deps)";
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  ProcessResult r = RunProcess(
      {INPROF_TIME_CONTEXT, "burst", "3"},
      {{"LD_PRELOAD", PreloadValueFor(faketime)},
       {"FAKETIME", "-1d"},
       {"INPROF_OUTPUT", dir_ + "/burst.speedscope.json," + dir_ + "/burst.json"},
       {"INPROF_FREQUENCY", "999"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Annotations a;
  const Status read = ReadAnnotationJson(ReadFile(dir_ + "/burst.json"), "burst.json", &a);
  ASSERT_TRUE(read.ok()) << read.message();
  // The profile started now, not a day ago.
  const int64_t real_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  EXPECT_LT(std::llabs(a.meta.start_time_ns - real_ns), 600'000'000'000LL)
      << a.meta.start_time_ns << " vs " << real_ns;
  // Expected vs got: the thread's CPU time (read through the interposer it was a day off,
  // or 0) promises the samples it got. Under load the thread may run for less than a second
  // of its three: the bounds allow for the count's own noise at a hundred samples.
  ASSERT_FALSE(a.health.threads.empty());
  const ThreadHealth& main_thread = a.health.threads.front();
  ASSERT_GE(main_thread.expected, 100) << main_thread.cpu_seconds << " CPU s";
  const double got = static_cast<double>(main_thread.weight) / main_thread.expected;
  EXPECT_GT(got, 0.75) << main_thread.weight << " of " << main_thread.expected;
  EXPECT_LT(got, 1.25) << main_thread.weight << " of " << main_thread.expected;
  // The burst's samples are at the burst's time (1.35 to 1.65 s of the program's own clock,
  // which runs at the real rate).
  const Profile p = ReadSpeedscopeFile(dir_ + "/burst.speedscope.json");
  int64_t burst = 0, burst_in_place = 0;
  for (const TimedSample& t : p.timeline) {
    ASSERT_GE(t.time_ns, 0);
    ASSERT_LT(t.time_ns, 10'000'000'000LL);
    if (Leaf(p, p.samples[t.sample]) != "burst_work") continue;
    burst += t.weight;
    if (t.time_ns >= 1'300'000'000 && t.time_ns < 1'700'000'000) burst_in_place += t.weight;
  }
  ASSERT_GT(burst, 0);
  EXPECT_GE(static_cast<double>(burst_in_place), 0.9 * static_cast<double>(burst))
      << burst_in_place << " of " << burst << " burst samples between 1.3 and 1.7 s";
}

TEST_F(TimeContext, LabelSharesFollowTheRequestsCostsInEveryOutput) {
  ProcessResult r = RunProcess(
      {INPROF_TIME_CONTEXT, "requests", "3"},
      {{"INPROF_OUTPUT", dir_ + "/r.pb.gz," + dir_ + "/r.json," + dir_ + "/r.folded," + dir_ +
                             "/r.speedscope.json"},
       {"INPROF_FREQUENCY", "997"},
       {"INPROF_FOLDED_ROOT", "label:endpoint"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  constexpr double kExpected = 75.0, kTolerance = 3.0;

  // pprof: sample labels.
  const auto pprof = PprofByLabel(ReadFile(dir_ + "/r.pb.gz"), "endpoint");
  EXPECT_NEAR(UsersShare(pprof), kExpected, kTolerance) << "pprof";

  // go tool pprof -tags: "2.25s (75.00%): /api/users".
  // The host's go cannot run under an emulator (the aarch64 lane runs every child through it).
  if (!std::string(INPROF_GO).empty() && EmulatorPrefix().empty()) {
    const std::string home = MakeTempDir();
    ProcessResult go = RunProcess(
        {INPROF_GO, "tool", "pprof", "-tags", dir_ + "/r.pb.gz"},
        {{"HOME", home}, {"GOCACHE", home + "/gocache"}, {"GOPROXY", "off"}});
    ASSERT_EQ(go.exit_code, 0) << go.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(go.out, m, std::regex(R"(\(\s*([0-9.]+)%\): /api/users)")))
        << go.out;
    EXPECT_NEAR(std::stod(m[1]), kExpected, kTolerance) << go.out;
  }

  // Annotation JSON: totals per label value.
  Annotations a;
  const std::string json = ReadFile(dir_ + "/r.json");
  ASSERT_TRUE(ReadAnnotationJson(json, "r.json", &a).ok());
  std::map<std::string, int64_t> from_json;
  for (const LabelTotal& t : a.labels) {
    if (t.key == "endpoint") from_json[t.value] += t.weight.at(0);
  }
  EXPECT_NEAR(UsersShare(from_json), kExpected, kTolerance) << "annotation JSON";

  // Folded with the label as the root frame.
  std::map<std::string, int64_t> from_folded;
  std::istringstream folded(ReadFile(dir_ + "/r.folded"));
  for (std::string line; std::getline(folded, line);) {
    const size_t space = line.rfind(' ');
    from_folded[line.substr(0, line.find(';'))] += std::stoll(line.substr(space + 1));
  }
  EXPECT_NEAR(UsersShare(from_folded), kExpected, kTolerance) << "folded roots";

  // speedscope, read back with its labels.
  const Profile p = ReadSpeedscopeFile(dir_ + "/r.speedscope.json");
  std::map<std::string, int64_t> from_speedscope;
  for (const Sample& s : p.samples) {
    if (s.labels == 0) continue;
    for (const Label& l : p.label_sets.at(s.labels - 1)) {
      if (l.key == "endpoint") from_speedscope[l.value] += s.weights.at(0);
    }
  }
  EXPECT_NEAR(UsersShare(from_speedscope), kExpected, kTolerance) << "speedscope";
  // Four named worker threads, each a profile of its own.
  int workers = 0;
  for (const ThreadInfo& t : p.threads) workers += t.name.rfind("worker-", 0) == 0;
  EXPECT_EQ(workers, 4);

  // The viewer: `top --by-label endpoint` and a `--label` filter.
  ProcessResult by = RunProcess(
      {INPROF_VIEWER, "top", "--by-label", "endpoint", dir_ + "/r.speedscope.json"}, {});
  ASSERT_EQ(by.exit_code, 0) << by.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(by.out, m, std::regex(R"(([0-9.]+)%[^\n]*/api/users)")))
      << by.out;
  // The viewer's share is of every sample, unlabelled ones (between requests) included.
  EXPECT_NEAR(std::stod(m[1]), kExpected, kTolerance + 2) << by.out;
  ProcessResult only = RunProcess({INPROF_VIEWER, "top", "--label", "endpoint=/api/orders",
                                   dir_ + "/r.speedscope.json"},
                                  {});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_NE(only.out.find("serve"), std::string::npos) << only.out;
}

TEST_F(TimeContext, PushSendsOneSeriesPerLabelSetWithTheRequestsShares) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  FakeIngest server([](size_t) { return 200; });
  ProcessResult r = RunProcess(
      {INPROF_TIME_CONTEXT, "requests", "3"},
      {{"INPROF_PUSH_URL", "http://127.0.0.1:" + std::to_string(server.port())},
       {"INPROF_WINDOW", "1"},
       {"INPROF_APP_NAME", "shop"},
       {"INPROF_FREQUENCY", "997"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int64_t> by_series;
  for (const Received& req : server.requests()) {
    // The ingest form, decoded as Pyroscope reads it; the cpu samples column.
    PushedForm form = DecodePushedForm(req);
    by_series[form.query["name"]] += form.totals["samples"];
  }
  std::map<std::string, int64_t> by_endpoint;
  for (const auto& [name, total] : by_series) {
    if (name.find("endpoint=/api/users") != std::string::npos) by_endpoint["/api/users"] += total;
    if (name.find("endpoint=/api/orders") != std::string::npos) by_endpoint["/api/orders"] += total;
  }
  ASSERT_EQ(by_endpoint.size(), 2u) << "series: " << by_series.size();
  EXPECT_NEAR(UsersShare(by_endpoint), 75.0, 3.0);
}

}  // namespace
}  // namespace inprof::test
