// The network outputs of a real profiled program (preloaded, configured by INPROF_*):
// pulling a profile over HTTP while it runs (with our decoder and with `go tool pprof URL`),
// and pushing each window to a loopback Pyroscope stand-in.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pprof_reader.h"
#include "net_test_util.h"
#include "pyroscope_form.h"
#include "test_util.h"

namespace inprof::test {
namespace {

// GET over a plain socket; the whole response, or "" when nothing listens.
std::string HttpGet(uint16_t port, const std::string& target) {
  const std::string r = Exchange(port, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
  return r == "connect failed" ? std::string() : r;
}

std::map<std::string, int64_t> SelfByFunction(const PprofProfile& p, size_t value) {
  std::map<std::string, int64_t> out;
  for (const PprofSample& s : p.samples) {
    if (s.location_ids.empty()) continue;
    const PprofLocation& leaf = p.Location(s.location_ids[0]);
    if (leaf.lines.empty()) continue;
    out[p.S(p.Function(leaf.lines.back().function_id).name)] += s.values[value];
  }
  return out;
}

struct PullRun {
  uint16_t port = 0;
  std::string profile;    // /debug/pprof/profile?seconds=2
  std::string folded;     // /debug/inprof/folded
  std::string bad;        // a bad request
  ProcessResult go_pprof;  // go tool pprof -top URL
};
PullRun g_pull;

void PullWhileRunning(int pid) {
  if (!WaitForListener(g_pull.port, 30)) {
    kill(pid, SIGKILL);
    return;
  }
  g_pull.profile = HttpGet(g_pull.port, "/debug/pprof/profile?seconds=2");
  g_pull.folded = HttpGet(g_pull.port, "/debug/inprof/folded");
  g_pull.bad = HttpGet(g_pull.port, "/debug/pprof/profile?seconds=forever");
  if (!std::string(INPROF_GO).empty()) {
    const std::string dir = MakeTempDir();
    g_pull.go_pprof = RunProcess(
        {INPROF_GO, "tool", "pprof", "-top", "-seconds", "2",
         "http://127.0.0.1:" + std::to_string(g_pull.port) + "/debug/pprof/profile"},
        {{"HOME", dir}, {"GOCACHE", dir + "/gocache"}, {"GOPROXY", "off"}, {"PPROF_TMPDIR", dir}});
  }
  kill(pid, SIGTERM);
}

TEST(NetworkE2E, PullAProfileFromARunningProgramLikeGoPprof) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  g_pull = PullRun{};
  g_pull.port = FreePort();
  const std::string dir = MakeTempDir();
  ProcessResult r = RunProcess({INPROF_WORKLOAD, "shares", "60"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_HTTP", "127.0.0.1:" + std::to_string(g_pull.port)},
                                {"INPROF_OUTPUT", dir + "/out.folded"}},
                               &PullWhileRunning);
  ASSERT_FALSE(g_pull.profile.empty()) << "the endpoint never came up\n" << r.err;
  EXPECT_NE(r.err.find("serving profiles on http://127.0.0.1:" + std::to_string(g_pull.port)),
            std::string::npos)
      << r.err;
  ASSERT_EQ(g_pull.profile.rfind("HTTP/1.1 200", 0), 0u) << g_pull.profile.substr(0, 300);
  const std::string body = g_pull.profile.substr(g_pull.profile.find("\r\n\r\n") + 4);
  std::string raw, error;
  ASSERT_TRUE(Gunzip(body, &raw, &error)) << error;
  PprofProfile p;
  ASSERT_TRUE(DecodePprof(raw, &p, &error)) << error;
  std::map<std::string, int64_t> self = SelfByFunction(p, 0);
  int64_t hot = self["hot50"] + self["hot30"] + self["hot20"];
  // Two seconds of two busy threads at 99 Hz: ~400 samples.
  ASSERT_GT(hot, 0);
  // hot50's share, within four standard errors of the samples the capture got (a loaded
  // machine gives the workload's threads less CPU, so fewer samples).
  const double n = static_cast<double>(hot);  // column 0 counts samples (samples/count)
  const double share50 = 100.0 * static_cast<double>(self["hot50"]) / static_cast<double>(hot);
  EXPECT_NEAR(share50, 50, std::max(5.0, 4 * 100 * std::sqrt(0.25 / n)))
      << "hot50 " << self["hot50"] << " of " << hot << " (" << n << " samples)";
  // Live profiles describe their mappings (real ranges, build-ids) and label each sample
  // with its thread.
  bool workload_mapping = false;
  for (const PprofMapping& m : p.mappings) {
    if (p.S(m.filename).find("inprof_workload") == std::string::npos) continue;
    workload_mapping = m.limit > m.start && m.start != 0 && !p.S(m.build_id).empty();
  }
  EXPECT_TRUE(workload_mapping) << DumpPprof(p).substr(0, 2000);
  std::set<int64_t> threads;
  for (const PprofSample& s : p.samples) {
    for (const PprofLabel& l : s.labels) {
      if (p.S(l.key) == "thread id") threads.insert(l.num);
    }
  }
  EXPECT_EQ(threads.size(), 2u) << "main and its worker thread";
  EXPECT_GT(p.duration_nanos, 1'500'000'000) << "the capture spans about the 2 s asked for";
  EXPECT_LT(p.duration_nanos, 10'000'000'000LL);

  EXPECT_EQ(g_pull.folded.rfind("HTTP/1.1 200", 0), 0u) << g_pull.folded.substr(0, 300);
  EXPECT_NE(g_pull.folded.find("hot50"), std::string::npos);
  EXPECT_EQ(g_pull.bad.rfind("HTTP/1.1 400", 0), 0u) << g_pull.bad.substr(0, 300);

  if (!std::string(INPROF_GO).empty()) {
    EXPECT_EQ(g_pull.go_pprof.exit_code, 0) << g_pull.go_pprof.err;
    EXPECT_NE(g_pull.go_pprof.out.find("hot50"), std::string::npos)
        << g_pull.go_pprof.out << g_pull.go_pprof.err;
  }
  // The program ended by SIGTERM still wrote its file.
  EXPECT_TRUE(FileExists(dir + "/out.folded"));
}

TEST(NetworkE2E, EachWindowIsPushedToPyroscopeWithNameLabelsAndTimes) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  FakeIngest server([](size_t) { return 200; });
  const std::string dir = MakeTempDir();
  ProcessResult r = RunProcess(
      {INPROF_WORKLOAD, "shares", "3"},
      {{"LD_PRELOAD", PreloadValue()},
       {"INPROF_PUSH_URL", "http://127.0.0.1:" + std::to_string(server.port())},
       {"INPROF_WINDOW", "1"},
       {"INPROF_APP_NAME", "e2e"},
       {"INPROF_LABELS", "env=test,zone=a"},
       {"INPROF_TENANT", "t1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Received> got = server.requests();
  // 3 CPU-seconds on two threads: at least one full 1 s window plus the last partial one.
  ASSERT_GE(got.size(), 2u) << r.err;
  int64_t previous_from = 0;
  int64_t total = 0;
  for (const Received& req : got) {
    // The form Pyroscope reads: checked part by part in DecodePushedForm.
    PushedForm f = DecodePushedForm(req);
    std::map<std::string, std::string>& q = f.query;
    EXPECT_EQ(q["name"], "e2e{env=test,zone=a}");
    EXPECT_EQ(q["spyName"], "inprof");
    EXPECT_EQ(q["sampleRate"], "99");
    EXPECT_EQ(req.headers.at("x-scope-orgid"), "t1");
    const int64_t from = std::stoll(q["from"]);
    EXPECT_LT(from, std::stoll(q["until"]));
    EXPECT_GE(from, previous_from) << "windows arrive in order";
    previous_from = from;
    // One event, as Go's CPU profiles have it: samples/count and cpu/nanoseconds, which
    // Pyroscope files under process_cpu.
    ASSERT_EQ(f.types, (std::vector<std::string>{"samples", "cpu"}));
    EXPECT_EQ(f.profile_name, "process_cpu");
    EXPECT_EQ(f.config["samples"].units, "samples");
    EXPECT_TRUE(f.config["samples"].sampled);
    EXPECT_FALSE(f.config["cpu"].cumulative);
    total += f.totals["samples"];
  }
  EXPECT_GT(total, 0);
  // "inprof: push to http://...: N of N requests sent", nothing dropped or rejected.
  const size_t at = r.err.find("inprof: push to ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string push_line = r.err.substr(at, r.err.find('\n', at) - at);
  const std::string sent = std::to_string(got.size()) + " of " + std::to_string(got.size()) +
                           " requests sent";
  EXPECT_NE(push_line.find(sent), std::string::npos) << push_line;
  EXPECT_EQ(push_line.find("dropped"), std::string::npos) << push_line;
}

TEST(NetworkE2E, AnUnusableAddressIsAClearErrorAndTheProgramStillRuns) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  ProcessResult r = RunProcess({INPROF_WORKLOAD, "shares", "0.2"},
                               {{"LD_PRELOAD", PreloadValue()}, {"INPROF_HTTP", "example.com:80"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("INPROF_HTTP"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("runs without profiling"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inprof::test
