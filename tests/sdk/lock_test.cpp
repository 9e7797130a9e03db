// The `lock` event as a user meets it: a program preloaded with the runtime, its waits for
// held locks sampled by Go's block-profile rule and weighted, each charged to the stack that
// waited. The program measures its own waits around pthread_mutex_lock; the profile must
// estimate them, must not count condition waits as contention, and must leave every return
// code of the lock functions as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "signal/lock_sampler.h"
#include "test_util.h"

namespace inprof::test {
namespace {

std::map<std::string, double> ParseTruth(const std::string& out) {
  std::map<std::string, double> truth;
  std::istringstream in(out);
  std::string name;
  double value;
  while (in >> name >> value) truth[name] = value;
  return truth;
}

// Weight per function in one event's folded file: each stack counted once for every
// function on it (inclusive), so that an interposer between the program's call and the
// runtime's hook (a sanitizer's interceptor) does not move the weight off the caller.
std::map<std::string, double> ByFunction(const std::string& path) {
  std::map<std::string, double> sums;
  if (!FileExists(path)) return sums;
  for (const FoldedStack& s : ReadFolded(path)) {
    std::set<std::string> seen(s.frames.begin(), s.frames.end());
    for (const std::string& f : seen) sums[f] += static_cast<double>(s.count);
  }
  return sums;
}

ProcessResult RunLockProgram(const std::vector<std::string>& args, const std::string& output,
                             const std::string& events = "lock", const std::string& rate = "") {
  std::vector<std::string> argv = {INPROF_LOCK_PROGRAM};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env = {
      {"LD_PRELOAD", PreloadValue()}, {"INPROF_EVENTS", events}, {"INPROF_OUTPUT", output}};
  if (!rate.empty()) env["INPROF_LOCK_RATE"] = rate;
  return RunProcess(argv, env);
}

// Go's block-profile rule as the hooks and the session apply it: over many waits of one
// length, the kept waits' weights add up to the waits' own count and time, whether a wait is
// shorter than the rate (kept in proportion) or not (always kept).
TEST(LockTest, TheSamplingRuleIsUnbiased) {
  using internal::KeepLockWait;
  using internal::LockWaitWeights;
  const uint64_t rate = 10000;
  uint64_t x = 88172645463325252ull;
  for (uint64_t delay : {1ull, 100ull, 2500ull, 9999ull, 10000ull, 250000ull}) {
    const int n = 200000;
    double contentions = 0, delay_ns = 0;
    for (int i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
      if (!KeepLockWait(delay, rate, u)) continue;
      const internal::LockWeights w = LockWaitWeights(delay, rate);
      contentions += w.contentions;
      delay_ns += w.delay_ns;
    }
    // Kept with p = delay / rate: the estimate's relative spread is sqrt((1 - p) / (n p)),
    // 2.2 % at 100 ns, 22 % at 1 ns (about 20 kept); the bound is five of those. The draws
    // are fixed, so this cannot flake; a rule off by a factor (p = d / 2R) would miss it.
    const double p = std::min(1.0, static_cast<double>(delay) / rate);
    const double bound = 5 * std::sqrt((1 - p) / (n * p)) + 1e-9;
    EXPECT_NEAR(contentions / n, 1.0, bound) << delay;
    EXPECT_NEAR(delay_ns / (static_cast<double>(delay) * n), 1.0, bound) << delay;
  }
  // A wait at or above the rate weighs exactly itself.
  EXPECT_EQ(LockWaitWeights(250000, rate).contentions, 1.0);
  EXPECT_EQ(LockWaitWeights(250000, rate).delay_ns, 250000.0);
  EXPECT_TRUE(KeepLockWait(10000, rate, 0.999999));
}

// The share of `hot` in the lines of a report that name wait_for_hot and wait_for_cold with
// a percentage in column `column` (0-based, whitespace-separated).
double HotShare(const std::string& report, size_t column, size_t name_column) {
  double hot = -1, cold = -1;
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.size() <= std::max(column, name_column)) continue;
    const double percent = std::atof(words[column].c_str());
    if (words[name_column] == "wait_for_hot" && hot < 0) hot = percent;
    if (words[name_column] == "wait_for_cold" && cold < 0) cold = percent;
  }
  return hot < 0 || cold < 0 ? -1 : hot / (hot + cold);
}

// Four threads, two on each of two mutexes, the hot one held 6x as long (about 80 % of the
// waiting): the split of the delay between the two waiting functions is the program's own
// within 5 points in the folded files, in `go tool pprof -sample_index=delay` and in `inprof
// top --event lock_delay`; the totals are its own within 15 %. The waits are mostly 100 us to
// 1 ms, above the 10 us default rate, so nearly every one is recorded.
TEST(LockTest, TheDelaySplitBetweenTwoMutexesIsTheProgramsOwn) {
  const std::string dir = MakeTempDir();
  ProcessResult p = RunLockProgram({"contend", "150"},
                                   dir + "/out.folded," + dir + "/out.pb.gz," + dir + "/out.json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, double> truth = ParseTruth(p.out);
  ASSERT_GT(truth["hot_wait"], 0) << p.out;
  std::map<std::string, double> delay = ByFunction(dir + "/out.lock_delay.folded");
  std::map<std::string, double> count = ByFunction(dir + "/out.lock_contentions.folded");
  const double got_hot = delay["wait_for_hot"], got_cold = delay["wait_for_cold"];
  ASSERT_GT(got_hot, 0) << p.err;
  const double truth_share = truth["hot_wait"] / (truth["hot_wait"] + truth["cold_wait"]);
  EXPECT_NEAR(got_hot / (got_hot + got_cold), truth_share, 0.05) << p.err;
  EXPECT_NEAR((got_hot + got_cold) / (truth["hot_wait"] + truth["cold_wait"]), 1.0, 0.15) << p.err;
  EXPECT_GT(count["wait_for_hot"], 0) << p.err;
  // The hook's own frames are stripped: no stack shows the runtime's hook.
  for (const FoldedStack& s : ReadFolded(dir + "/out.lock_delay.folded")) {
    EXPECT_EQ(s.frames.back().find("LockSlowPath"), std::string::npos) << s.frames.back();
    EXPECT_NE(s.frames.back(), "pthread_mutex_lock");
  }
  EXPECT_NE(p.err.find("inprof: lock: "), std::string::npos) << p.err;

  // inprof top: "  80.61%   80.61%  wait_for_hot  file:line" under "Hottest functions"
  // (self, inclusive: the inclusive share is read).
  ProcessResult top =
      RunProcess({INPROF_VIEWER, "top", "--event", "lock_delay", dir + "/out.json"}, {});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NEAR(HotShare(top.out, 1, 2), truth_share, 0.05) << top.out;

  // go tool pprof -top -cum: "  188.84ms 79.87% 79.87%   188.84ms 79.87%  wait_for_hot"
  // (flat, flat%, sum%, cum, cum%: the cumulative share is read).
  if (std::string(INPROF_GO).empty()) GTEST_SKIP() << "no go: go tool pprof not checked";
  SKIP_UNDER_EMULATOR("go is the host's program: the emulator cannot run it");
  ProcessResult go = RunProcess(
      {INPROF_GO, "tool", "pprof", "-sample_index=delay", "-top", "-cum", dir + "/out.pb.gz"},
      {{"HOME", dir}, {"GOCACHE", dir + "/gocache"}, {"GOPROXY", "off"}, {"PPROF_TMPDIR", dir}});
  ASSERT_EQ(go.exit_code, 0) << go.err;
  EXPECT_NE(go.out.find("Type: delay"), std::string::npos) << go.out;
  EXPECT_NEAR(HotShare(go.out, 4, 5), truth_share, 0.05) << go.out;
}

// Short waits (a rate far above them) are kept in proportion and weighted up: the estimate
// stays near the truth. At 2 ms, a 100 us wait is kept with p = 0.05, so the estimate's spread
// is wider: 30 %.
TEST(LockTest, WaitsShorterThanTheRateAreSampledWithoutBias) {
  const std::string dir = MakeTempDir();
  ProcessResult p = RunLockProgram({"contend", "150"}, dir + "/out.folded", "lock", "2000000");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, double> truth = ParseTruth(p.out);
  std::map<std::string, double> delay = ByFunction(dir + "/out.lock_delay.folded");
  const double got = delay["wait_for_hot"] + delay["wait_for_cold"];
  EXPECT_NEAR(got / (truth["hot_wait"] + truth["cold_wait"]), 1.0, 0.3) << p.err;
}

// std::mutex + std::condition_variable: the consumer spends most of its time in wait(), which
// is waiting for a condition, not for the lock: it must not show up as lock delay.
TEST(LockTest, ConditionWaitsAreNotLockContention) {
  const std::string dir = MakeTempDir();
  ProcessResult p = RunLockProgram({"condvar", "200"}, dir + "/out.folded");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, double> truth = ParseTruth(p.out);
  ASSERT_GT(truth["cond_wait"], 100e6) << p.out;  // 200 items 1 ms apart
  double consumer = 0, contended = 0;
  for (const FoldedStack& s : ReadFolded(dir + "/out.lock_delay.folded")) {
    for (const std::string& f : s.frames) {
      EXPECT_EQ(f.find("pthread_cond"), std::string::npos) << f;
      EXPECT_EQ(f.find("condition_variable"), std::string::npos) << f;
    }
    // std::mutex::lock's inline frames (__gthread_mutex_lock) are the leaf here.
    for (const std::string& f : s.frames) {
      if (f == "contend_on_queue") contended += static_cast<double>(s.count);
      if (f == "consume_one") consumer += static_cast<double>(s.count);
    }
  }
  // The same mutex's real contention afterwards is seen (40 waits of up to 200 us)...
  EXPECT_GT(contended, 1e6) << p.err;
  // ...while whatever the consumer waited for the mutex itself (not the condition) is tiny
  // next to its condition waits.
  EXPECT_LT(consumer, 0.05 * truth["cond_wait"]) << p.err;
}

// The `cond` event: the same producer/consumer with `lock,cond`. The consumer's condition waits
// are an event of their own, charged to the function that waited (the inline frames of
// std::condition_variable::wait under consume_one), adding up to the time the consumer measured
// around its waits; the lock events still hold no condition wait.
TEST(LockTest, ConditionWaitsAreAnEventOfTheirOwn) {
  const std::string dir = MakeTempDir();
  ProcessResult p =
      RunLockProgram({"condvar", "200"}, dir + "/out.folded," + dir + "/out.json", "lock,cond");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, double> truth = ParseTruth(p.out);
  ASSERT_GT(truth["cond_wait"], 100e6) << p.out;
  std::map<std::string, double> delay = ByFunction(dir + "/out.cond_delay.folded");
  std::map<std::string, double> waits = ByFunction(dir + "/out.cond_waits.folded");
  // The consumer's wait(lock, predicate) also takes the mutex back, which it measured too.
  EXPECT_NEAR(delay["consume_one"] / truth["cond_wait"], 1.0, 0.1) << p.err;
  // 200 items 1 ms apart: about one wait each, fewer when the consumer falls behind (a
  // loaded machine, a sanitizer: 177 seen), more with spurious wake-ups; as many as it made.
  ASSERT_GT(truth["cond_waits"], 100) << p.out;
  EXPECT_NEAR(waits["consume_one"], truth["cond_waits"], 5 + 0.1 * truth["cond_waits"]) << p.err;
  for (const FoldedStack& s : ReadFolded(dir + "/out.cond_delay.folded")) {
    EXPECT_EQ(s.frames.back().find("LockSlowPath"), std::string::npos) << s.frames.back();
  }
  for (const FoldedStack& s : ReadFolded(dir + "/out.lock_delay.folded")) {
    for (const std::string& f : s.frames) EXPECT_EQ(f.find("condition_variable"), std::string::npos) << f;
  }
  EXPECT_NE(p.err.find("inprof: cond: "), std::string::npos) << p.err;
  ProcessResult top =
      RunProcess({INPROF_VIEWER, "top", "--event", "cond_delay", dir + "/out.json"}, {});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("consume_one"), std::string::npos) << top.out;
}

// x86-64's C library keeps a second pthread_cond_wait (and _timedwait) for programs linked
// before glibc 2.3.2, on a different condition variable. A program that calls both: the old
// ones must reach the C library untouched (the hooks carry the current version), so every item
// arrives and no old wait is in the profile, while the current ones are sampled.
TEST(LockTest, TheOldPthreadCondWaitPassesTheHooksBy) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "one version of pthread_cond_wait on this architecture";
#endif
  // AddressSanitizer's interceptor of pthread_cond_wait is unversioned: under it, the old
  // version's calls reach the current one before the runtime is involved.
#if defined(INPROF_SANITIZED_BUILD)
  GTEST_SKIP() << "AddressSanitizer's interceptor takes the old version's calls";
#endif
  const std::string dir = MakeTempDir();
  ProcessResult p = RunProcess(
      {INPROF_COND_VERSIONS, "100"},
      {{"LD_PRELOAD", PreloadValue()}, {"INPROF_EVENTS", "cond"}, {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  std::map<std::string, double> truth = ParseTruth(p.out);
  ASSERT_GT(truth["old_wait"], 50e6) << p.out;
  std::map<std::string, double> delay = ByFunction(dir + "/out.cond_delay.folded");
  EXPECT_EQ(delay.count("old_consumer_wait"), 0u) << p.err;
  EXPECT_NEAR(delay["new_consumer_wait"] / truth["new_wait"], 1.0, 0.1) << p.err;
}

// Error-checking (EDEADLK), recursive, timed (ETIMEDOUT), robust (EOWNERDEAD, also found by
// a waiting thread) mutexes, rwlocks, std::shared_mutex and a spin lock behave as without the
// runtime; the program checks every return code itself. With `cpu` beside it.
TEST(LockTest, ReturnCodesAreTheLibrarysOwn) {
  SKIP_UNDER_EMULATOR("qemu-user timed out here (robust and timed mutexes rely on kernel futex "
                      "support the emulator may not give)");
  const std::string dir = MakeTempDir();
  ProcessResult p = RunLockProgram({"errors"}, dir + "/out.folded", "cpu,lock");
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_EQ(p.out, "ok\n") << p.err;
  // The robust mutex's waiter, and the timed lock that timed out, waited.
  std::map<std::string, double> delay = ByFunction(dir + "/out.lock_delay.folded");
  EXPECT_GT(delay.size(), 0u) << p.err;
}

// Continuous mode: each window carries the waits of its own time (deltas, as Pyroscope's
// ingest expects them), so the windows add up to the run's waits, not to more. With CPU and
// allocation sampling beside it and stacks copied for DWARF unwinding: the collector, the
// window exporter and the allocation hooks all run (and lock) while the program contends.
TEST(LockTest, WindowsCarryTheirOwnWaits) {
  const std::string dir = MakeTempDir();
  ProcessResult p =
      RunProcess({INPROF_LOCK_PROGRAM, "contend", "1200"}, {{"LD_PRELOAD", PreloadValue()},
                                                            {"INPROF_EVENTS", "cpu,alloc,lock"},
                                                            {"INPROF_UNWIND", "dwarf"},
                                                            {"INPROF_WINDOW", "1"},
                                                            {"INPROF_OUTPUT", dir + "/w.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, double> truth = ParseTruth(p.out);
  double total = 0;
  int windows = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("w.lock_delay.")) continue;
    double window = 0;
    for (const FoldedStack& s : ReadFolded(entry.path().string())) {
      window += static_cast<double>(s.count);
    }
    if (window > 0) ++windows;
    total += window;
  }
  EXPECT_GE(windows, 2) << p.err;
  EXPECT_NEAR(total / (truth["hot_wait"] + truth["cold_wait"]), 1.0, 0.15) << p.err;
}

}  // namespace
}  // namespace inprof::test
