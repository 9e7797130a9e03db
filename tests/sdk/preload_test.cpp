// Whole programs profiled the way users do it: LD_PRELOAD=libinprof.so INPROF_OUTPUT=...
// The fixture (fixtures/workload.cpp) knows its own CPU profile; assertions use tolerances.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "perfanno_reader.h"
#include "test_util.h"

namespace inprof::test {
namespace {

struct ProfiledRun {
  ProcessResult process;
  std::string dir;
  std::string folded;
  std::string perf_log;
};

ProfiledRun Profile(const std::vector<std::string>& args,
                    std::map<std::string, std::string> env = {},
                    const char* program = INPROF_WORKLOAD) {
  ProfiledRun run;
  run.dir = MakeTempDir();
  run.folded = run.dir + "/out.folded";
  run.perf_log = run.dir + "/perf.log";
  env.emplace("LD_PRELOAD", PreloadValue());
  env.emplace("INPROF_OUTPUT", run.folded + "," + run.perf_log);
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  run.process = RunProcess(argv, env);
  return run;
}

bool Contains(const FoldedStack& s, const std::string& frame) {
  for (const auto& f : s.frames) {
    if (f == frame) return true;
  }
  return false;
}

int CallsiteLine() {
  std::ifstream in(INPROF_WORKLOAD_SOURCE);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find("hot50();  // CALLSITE-MARKER") != std::string::npos) return n;
  }
  return -1;
}

int64_t Signals(const ProfiledRun& run, int64_t weight);
double Tolerance(double share_percent, int64_t samples);

TEST(PreloadTest, LeafSharesMatchTheWorkloadWithinThreePoints) {
  if (!EmulatorPrefix().empty()) {
    GTEST_SKIP() << "under qemu-user: 16 CPU-seconds of emulated work for shares that do not "
                    "depend on the architecture (asserted by the native lanes; aarch64 stacks "
                    "are asserted by FramePointerStacksReachMainAndCallSiteLinesAreExact)";
  }
  const auto started = std::chrono::steady_clock::now();
  ProfiledRun run =
      Profile({"shares", "8"}, {{"INPROF_FREQUENCY", "997"}, {"INPROF_ENGINE", "timer"}});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::map<std::string, int64_t> leaf;
  int64_t hot = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    const std::string& f = s.frames.back();
    if (f == "hot50" || f == "hot30" || f == "hot20") {
      leaf[f] += s.count;
      hot += s.count;
    }
  }
  // About 250 signals per CPU-second (the kernel tick) on two threads for 8 s: ~4000
  // independent samples, so a 50 % share has a standard error of 0.8 points.
  ASSERT_GT(hot, 1000) << run.process.err;
  const double s50 = 100.0 * leaf["hot50"] / hot;
  const double s30 = 100.0 * leaf["hot30"] / hot;
  const double s20 = 100.0 * leaf["hot20"] / hot;
  // 3 points while the signals are that many; under load the timer's signals stand for
  // several periods each (fewer independent samples), and the bound follows their count.
  // When the two threads did not get both CPUs (their 8 CPU-seconds each took more than 10 s
  // of wall time: other programs wanted the CPUs, as beside other tests), the samples are
  // less independent still. Measured with two busy loops beside the test on 2 CPUs (22
  // runs, about 3,400 signals each): hot30 spread 1.3 points (1.65 times the binomial
  // standard error), hot20 read 18.8 +- 1.1 (a bias of 1.2 points; 20.0 +- 0.5 on an idle
  // machine); in CI hot20 read 23.4 once. So under contention the bound is 1.7 times wider.
  const int64_t n = Signals(run, hot);
  const double contended = wall > 10.0 ? 1.7 : 1.0;
  EXPECT_NEAR(s50, 50, contended * Tolerance(50, n)) << n << " signals, " << wall << " s";
  EXPECT_NEAR(s30, 30, contended * Tolerance(30, n)) << n << " signals, " << wall << " s";
  EXPECT_NEAR(s20, 20, contended * Tolerance(20, n)) << n << " signals, " << wall << " s";
  // The same profile as perf.log passes every perfanno rule and carries the same weight on
  // the hot functions' source lines.
  PerfannoLog log = ReadPerfannoLog(run.perf_log);
  ASSERT_TRUE(log.ok()) << log.error;
  int64_t log_hot = 0;
  for (const auto& st : log.stacks) {
    const std::string& leaf_symbol = st.frames.back().symbol;
    if (leaf_symbol == "hot50" || leaf_symbol == "hot30" || leaf_symbol == "hot20") {
      log_hot += static_cast<int64_t>(st.count);
      EXPECT_EQ(st.frames.back().path.front(), '/');
    }
  }
  EXPECT_EQ(log_hot, hot);
  std::printf("leaf shares: hot50=%.1f%% hot30=%.1f%% hot20=%.1f%% (%lld weighted samples, %lld "
              "signals, %.1f s)\n",
              s50, s30, s20, static_cast<long long>(hot), static_cast<long long>(n), wall);
}

std::map<std::string, double> LeafShares(const std::string& folded, int64_t* hot_total) {
  std::map<std::string, int64_t> leaf;
  int64_t hot = 0;
  for (const auto& s : ReadFolded(folded)) {
    const std::string& f = s.frames.back();
    if (f == "hot50" || f == "hot30" || f == "hot20") {
      leaf[f] += s.count;
      hot += s.count;
    }
  }
  std::map<std::string, double> shares;
  for (const auto& [name, count] : leaf) shares[name] = hot ? 100.0 * count / hot : 0;
  *hot_total = hot;
  return shares;
}

// The perf engine where this machine allows it (perf_event_paranoid <= 2), else skipped
// with the profiler's own explanation.
#define SKIP_WITHOUT_PERF(run)                                                       \
  if ((run).process.err.find("engine=perf:") != std::string::npos) {                \
    GTEST_SKIP() << "perf_event is not available here: " << (run).process.err;      \
  }

constexpr const char* kNoPerfUnderQemu =
    "perf_event_open is ENOSYS (the timer fallback is tested by the Auto* tests)";

TEST(PreloadTest, PerfEngineSharesWithinTwoPoints) {
  SKIP_UNDER_EMULATOR(kNoPerfUnderQemu);
  ProfiledRun run = Profile({"shares", "4"}, {{"INPROF_FREQUENCY", "997"}, {"INPROF_ENGINE", "perf"}});
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("engine=perf "), std::string::npos) << run.process.err;
  int64_t hot = 0;
  auto shares = LeafShares(run.folded, &hot);
  // ~997 signals per CPU-second on two threads for 4 s: ~8000 samples, standard error of a
  // 50 % share 0.56 points.
  ASSERT_GT(hot, 4000) << run.process.err;
  EXPECT_NEAR(shares["hot50"], 50, 2);
  EXPECT_NEAR(shares["hot30"], 30, 2);
  EXPECT_NEAR(shares["hot20"], 20, 2);
}

// A loop whose cycle is exactly twice the sampling period (1/997 s of CPU time) spends 30 %
// of each cycle in cycle_short. With fixed periods every sample would meet the cycle at the
// same two points, and cycle_short would get 0 % or 50 % of them (both seen here with
// INPROF_DITHER=0); the perf engine draws each period at random around the mean, so the
// samples spread over the cycle. Its rate must not suffer for it: the new period is shortened
// by the time the signal took to arrive.
TEST(PreloadTest, PerfPeriodsDoNotLockStepWithALoopOfTwiceThePeriod) {
  SKIP_UNDER_EMULATOR(kNoPerfUnderQemu);
  const std::string cycle_us = std::to_string(2e6 / 997);
  ProfiledRun run = Profile({"cycle", cycle_us, "2"},
                            {{"INPROF_FREQUENCY", "997"}, {"INPROF_ENGINE", "perf"}});
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  int64_t short_part = 0, in_cycle = 0;
  for (const auto& stack : ReadFolded(run.folded)) {
    const std::string& leaf = stack.frames.back();
    if (leaf == "cycle_short" || leaf == "cycle_long") in_cycle += stack.count;
    if (leaf == "cycle_short") short_part += stack.count;
  }
  // ~1800 samples (the clock reads' time in the kernel is not sampled): the standard error of
  // a 30 % share is 1.1 points.
  ASSERT_GT(in_cycle, 1000) << run.process.err;
  EXPECT_NEAR(100.0 * static_cast<double>(short_part) / static_cast<double>(in_cycle), 30, 5)
      << run.process.err;

  // The rate: at 3989 Hz the signal's ~30 us would cost 13 % of every period if the new one
  // were not shortened by it (81.6-85.5 % of the expected samples in 10 runs here with the
  // shortening taken out; 96.3-100 % in 28 of 30 with it). On a virtual machine the host now
  // and then takes the CPU from the thread, and every system call and interrupt is slower when
  // the host is busy: such a run reads less (61-91 % seen, with and without the shortening),
  // never more; beside a test that keeps the other CPU busy, five runs in a row read
  // 89.7-92.0 %. So the best of up to five runs must be above 90 %, which no run without the
  // shortening reached.
  std::vector<double> rates;
  for (int i = 0; i < 5 && (rates.empty() || rates.back() <= 0.90); ++i) {
    ProfiledRun steady =
        Profile({"shares", "1"}, {{"INPROF_FREQUENCY", "3989"}, {"INPROF_ENGINE", "perf"}});
    ASSERT_EQ(steady.process.exit_code, 0) << steady.process.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(steady.process.err, m,
                                  std::regex(R"(expected (\d+) samples at [0-9.]+ Hz, got (\d+))")))
        << steady.process.err;
    rates.push_back(std::stod(m[2]) / std::stod(m[1]));
  }
  std::string all;
  for (double r : rates) all += " " + std::to_string(r);
  EXPECT_GT(*std::max_element(rates.begin(), rates.end()), 0.90) << "rates, in order:" << all;
}

// The weight of each of the rounds workload's three functions in a folded profile, and their
// sum in `total`.
std::map<std::string, double> RoundWeights(const std::string& folded, double* total) {
  std::map<std::string, double> weight;
  *total = 0;
  for (const auto& stack : ReadFolded(folded)) {
    for (const char* name : {"round_alpha", "round_beta", "round_gamma"}) {
      if (Contains(stack, name)) {
        weight[name] += static_cast<double>(stack.count);
        *total += static_cast<double>(stack.count);
      }
    }
  }
  return weight;
}

// The short version of bench/alias.py (docs/performance.md, "Sampling bias"): loops whose
// round is the kernel tick or just off it, 5:3:2 of CPU time, under the default engine at
// 250 Hz. CPU-time timers fire on the tick, and such loops read 77/18/4 under them; perf's
// dithered instants must give every share within 5 standard errors (about 250 samples: 16
// points for the 50 % share, while 77/18/4 is 8.5 standard errors off). How often it failed in
// repeated runs: docs/performance.md, "Sampling bias".
TEST(PreloadTest, TheDefaultEngineDoesNotAliasWithTheTick) {
  for (const char* round_us : {"4000", "4100"}) {
    ProfiledRun run = Profile({"rounds", round_us, "1"}, {{"INPROF_FREQUENCY", "250"}});
    ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
    if (run.process.err.find("engine=perf ") == std::string::npos) {
      GTEST_SKIP() << "perf_event is refused here: CPU timers alias with loops near the tick "
                      "(docs/platform-facts.md)\n"
                   << run.process.err;
    }
    double total = 0;
    std::map<std::string, double> weight = RoundWeights(run.folded, &total);
    ASSERT_GT(total, 125) << run.process.err;
    for (const auto& [name, truth] : std::map<std::string, double>{
             {"round_alpha", 0.5}, {"round_beta", 0.3}, {"round_gamma", 0.2}}) {
      const double se = std::sqrt(truth * (1 - truth) / total);
      EXPECT_NEAR(weight[name] / total, truth, 5 * se)
          << name << " in rounds of " << round_us << " us, " << total << " samples\n"
          << run.process.err;
    }
  }
}

// INPROF_TIMER_JITTER=1 (the timer engine where perf_event is refused): each sample is taken
// by a one-shot CLOCK_MONOTONIC timer a random fraction of a tick after the CPU timer's
// signal, off the tick's grid. The loop of the test above, under CPU timers: shares within
// 5 standard errors, and the weight still CPU time x rate (deferred samples keep theirs).
// The jitter needs the thread to run when its one-shot timer fires: a thread that waits for a
// CPU takes its next sample when the scheduler runs it again, on the tick. Beside a loaded
// sanitizer lane one run in many read 69/18/13 (the process had 79 % of a CPU); without the
// jitter every run reads far off (88/12/0 to 100/0/0 on an idle machine). So the best of up
// to three runs must hold the shares.
TEST(PreloadTest, TimerJitterSamplesLoopsNearTheTickWithTheirWeight) {
  std::string failures;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ProfiledRun run = Profile({"rounds", "4000", "1"}, {{"INPROF_FREQUENCY", "250"},
                                                        {"INPROF_ENGINE", "timer"},
                                                        {"INPROF_TIMER_JITTER", "1"}});
    ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        run.process.err, m,
        std::regex(R"(expected (\d+) samples at [0-9.]+ Hz, got (\d+) \([0-9.]+%: (\d+) signals)")))
        << run.process.err;
    const double expected = std::stod(m[1]);
    const double got = std::stod(m[2]);
    // The shares' spread follows the number of signals, not the weight they carry: on a loaded
    // machine a few signals carry many overruns each.
    const double signals = std::stod(m[3]);
    // Deferred samples keep their weight; a signal still pending at the end of the run is the
    // only loss (at most a tick's worth per thread, and more when the machine is loaded).
    EXPECT_GT(got, 0.6 * expected) << run.process.err;
    EXPECT_LT(got, 1.1 * expected) << run.process.err;
    double total = 0;
    std::map<std::string, double> weight = RoundWeights(run.folded, &total);
    ASSERT_GT(total, 125) << run.process.err;
    ASSERT_GT(signals, 0) << run.process.err;
    std::string off;
    for (const auto& [name, truth] : std::map<std::string, double>{
             {"round_alpha", 0.5}, {"round_beta", 0.3}, {"round_gamma", 0.2}}) {
      const double share = weight[name] / total;
      if (std::abs(share - truth) > 5 * std::sqrt(truth * (1 - truth) / signals)) {
        off += " " + name + "=" + std::to_string(share) + " (truth " + std::to_string(truth) + ")";
      }
    }
    if (off.empty()) return;
    failures += "run " + std::to_string(attempt + 1) + ", " + std::to_string(total) +
                " samples in " + std::to_string(signals) + " signals:" + off + "\n" +
                run.process.err;
  }
  ADD_FAILURE() << "no run of three held the shares within 5 standard errors:\n" << failures;
}

// Threads shorter than a sampling period are sampled in proportion to their CPU time: the
// first period is drawn at random (a whole one would see none of them) and no thread's last
// partial period is lost in expectation. 300 threads of 1.5 ms at 999 Hz: ~450 samples
// expected in short_worker (its own CPU time: a thread's creation and set-up, 0.2-0.3 ms
// here, is partly inside the kernel, which perf does not sample); each thread's count is 1
// or 2 with a random phase, so the total's standard deviation is under 9 samples (2 %): the
// bounds are 10 of them. A whole first period gave 33 % (0.5 of 1.5 periods per thread).
// The timer engine is not held to this: its signals come on the kernel tick, up to 4 ms of
// the thread's running after the period ends, which a short thread may not live to see
// (docs/platform-facts.md, "Sampling bias").
TEST(PreloadTest, PerfEngineSamplesLateThreadsInProportionToCpu) {
  SKIP_UNDER_EMULATOR(kNoPerfUnderQemu);
  ProfiledRun run = Profile({"late"}, {{"INPROF_FREQUENCY", "997"}, {"INPROF_ENGINE", "perf"}});
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(cpu a=([0-9.]+) b=([0-9.]+))")));
  const double cpu_a = std::stod(m[1].str()), cpu_b = std::stod(m[2].str());
  int64_t a = 0, b = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    if (Contains(s, "late_worker_a")) a += s.count;
    if (Contains(s, "late_worker_b")) b += s.count;
  }
  ASSERT_GT(a + b, 0) << run.process.err;
  EXPECT_NEAR(100.0 * a / (a + b), 100.0 * cpu_a / (cpu_a + cpu_b), 3.0);
  // perf_event without kernel sampling does not see the threads' time inside syscalls (the
  // workers' clock_gettime calls), which the thread CPU clock includes: weight can only be
  // lower than CPU time x rate.
  const double ratio = (a + b) / ((cpu_a + cpu_b) * 997);
  EXPECT_GT(ratio, 0.85);
  EXPECT_LT(ratio, 1.03);
}

// perf at every rate where perf_event is allowed (CPU timers fire on the kernel tick and
// alias with loops, docs/platform-facts.md); timers where it is not, saying why.
TEST(PreloadTest, AutoPicksPerfAtEveryRateAndTimersWherePerfIsRefused) {
  for (const char* rate : {"99", "997"}) {
    ProfiledRun run = Profile({"callsite", "0.2"}, {{"INPROF_FREQUENCY", rate}});
    ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
    if (run.process.err.find("engine=perf ") != std::string::npos) {
      EXPECT_NE(run.process.err.find("cannot alias with the kernel tick"), std::string::npos)
          << run.process.err;
    } else {
      // perf_event refused here: the fallback says why.
      EXPECT_NE(run.process.err.find("perf_event_open: "), std::string::npos) << run.process.err;
      EXPECT_NE(run.process.err.find("engine=timer "), std::string::npos) << run.process.err;
    }
  }
  ProfiledRun refused =
      Profile({"callsite", "0.2"}, {{"INPROF_TEST_PERF_ERRNO", "EACCES"}});
  ASSERT_EQ(refused.process.exit_code, 0) << refused.process.err;
  EXPECT_NE(refused.process.err.find("engine=timer "), std::string::npos) << refused.process.err;
  EXPECT_NE(refused.process.err.find("using per-thread CPU timers (they fire on the kernel tick"),
            std::string::npos)
      << refused.process.err;
}

TEST(PreloadTest, AutoFallsBackToTimersAndSaysWhy) {
  for (const char* error : {"EACCES", "ENOENT", "ENOSYS"}) {
    ProfiledRun run = Profile({"callsite", "0.3"}, {{"INPROF_FREQUENCY", "997"},
                                                    {"INPROF_TEST_PERF_ERRNO", error}});
    ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
    EXPECT_NE(run.process.err.find("engine=timer "), std::string::npos) << run.process.err;
    EXPECT_NE(run.process.err.find(std::string("perf_event_open: ") + error + " ("),
              std::string::npos)
        << run.process.err;
    EXPECT_NE(run.process.err.find("using per-thread CPU timers"), std::string::npos);
    EXPECT_NE(run.process.err.find("above the kernel tick"), std::string::npos)
        << "the rate warning";
    int64_t total = 0;
    for (const auto& s : ReadFolded(run.folded)) total += s.count;
    EXPECT_GT(total, 100);
  }
}

TEST(PreloadTest, AnExplicitPerfEngineThatFailsIsAnError) {
  ProfiledRun run = Profile({"callsite", "0.1"},
                            {{"INPROF_ENGINE", "perf"}, {"INPROF_TEST_PERF_ERRNO", "ENOSYS"}});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("engine=perf: perf_event_open: ENOSYS"), std::string::npos)
      << run.process.err;
  EXPECT_NE(run.process.err.find("runs without profiling"), std::string::npos);
  EXPECT_FALSE(FileExists(run.folded));
}

TEST(PreloadTest, ForkedChildrenOfAPerfSessionDoNotTouchTheParentsEvents) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoPerfUnderQemu);
  ProfiledRun run = Profile({"fork"}, {{"INPROF_ENGINE", "perf"}, {"INPROF_FREQUENCY", "997"}});
  SKIP_WITHOUT_PERF(run);
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.out.find(" status=0"), std::string::npos) << run.process.out;
  // The parent kept sampling after the child closed its inherited copies of the fds.
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos);
}

int64_t Weight(const std::string& folded, const std::string& frame) {
  int64_t total = 0;
  for (const auto& s : ReadFolded(folded)) {
    if (Contains(s, frame)) total += s.count;
  }
  return total;
}

TEST(PreloadTest, WallAndCpuEventsInOneRunWriteOneFileEach) {
  ProfiledRun run = Profile({"sleeper"}, {{"INPROF_EVENTS", "cpu,wall"},
                                          {"INPROF_FREQUENCY", "199"},
                                          {"INPROF_WALL_FREQUENCY", "97"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  const std::string cpu = run.dir + "/out.cpu.folded";
  const std::string wall = run.dir + "/out.wall.folded";
  ASSERT_TRUE(FileExists(cpu)) << run.process.err;
  ASSERT_TRUE(FileExists(wall));
  EXPECT_TRUE(FileExists(run.dir + "/perf.cpu.log"));
  EXPECT_TRUE(FileExists(run.dir + "/perf.wall.log"));
  EXPECT_FALSE(FileExists(run.folded)) << "no single-event file with several events";
  // CPU time: the spinning main thread, never the blocked reader.
  EXPECT_GT(Weight(cpu, "early_spin"), 50);
  if (EmulatorPrefix().empty()) {
    // Blocked in read, the reader uses CPU only when a wall signal interrupts it (the handler,
    // then the restarted read): microseconds per signal, so at most a stray sample.
    EXPECT_LE(Weight(cpu, "blocked_reader") * 50, Weight(cpu, "early_spin"));
  } else {
    // Under qemu-user each wall-clock signal that interrupts the reader's read() runs the
    // handler emulated, about a millisecond of the reader's own CPU time, charged where it
    // was interrupted. Still far below the spinning thread.
    EXPECT_LT(Weight(cpu, "blocked_reader") * 3, Weight(cpu, "early_spin"));
  }
  // Wall time: both, the reader for about as long as main spins (0.6 s at 97 Hz ~ 58),
  // with its blocking stack: the read in libc. (Frame pointers cannot get from inside
  // Debian's libc to blocked_reader; DWARF unwinding can.)
  int64_t blocked = 0;
  for (const auto& s : ReadFolded(wall)) {
    if (s.frames.back().find("libc_read") != std::string::npos || Contains(s, "blocked_reader")) {
      blocked += s.count;
    }
  }
  EXPECT_GT(blocked, 30) << ReadFile(wall);
  EXPECT_GT(Weight(wall, "early_spin"), 30);
  int64_t in_read = 0;
  for (const auto& s : ReadFolded(cpu)) {
    if (s.frames.back().find("libc_read") != std::string::npos) in_read += s.count;
  }
  EXPECT_LE(in_read * 50, Weight(cpu, "early_spin")) << "a blocked thread charged CPU time";
  EXPECT_NE(run.process.err.find("wall: per-thread CLOCK_MONOTONIC timers"), std::string::npos)
      << run.process.err;
}

TEST(PreloadTest, PageFaultsAreSampledWhereTheyHappen) {
  ProfiledRun run = Profile({"faults"}, {{"INPROF_EVENTS", "page-faults"}});
  if (run.process.err.find("needs perf_event") != std::string::npos) {
    GTEST_SKIP() << run.process.err;
  }
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  // 64 MiB touched page by page: 16384 faults, one sample per 256, weighted back to counts.
  const int64_t faults = Weight(run.folded, "touch_pages");
  EXPECT_GT(faults, 16384 / 2) << ReadFile(run.folded);
  EXPECT_LT(faults, 16384 * 2);
}

TEST(PreloadTest, EventsThisMachineCannotSampleAreClearErrors) {
  for (const char* event : {"cycles", "context-switches"}) {
    ProfiledRun run = Profile({"callsite", "0.1"}, {{"INPROF_EVENTS", event}});
    EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
    if (run.process.err.find("runs without profiling") == std::string::npos) {
      continue;  // this machine has a PMU / allows kernel sampling: nothing to check
    }
    EXPECT_NE(run.process.err.find(std::string("event ") + event + " needs perf_event: "),
              std::string::npos)
        << run.process.err;
    EXPECT_FALSE(FileExists(run.folded));
  }
  ProfiledRun bad = Profile({"callsite", "0.1"}, {{"INPROF_EVENTS", "cpu,bogus"}});
  EXPECT_NE(bad.process.err.find("invalid events='cpu,bogus'"), std::string::npos)
      << bad.process.err;
}

TEST(PreloadTest, FramePointerStacksReachMainAndCallSiteLinesAreExact) {
  ProfiledRun run = Profile({"callsite", "1.5"}, {{"INPROF_FREQUENCY", "997"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  int64_t total = 0, with_main = 0, expected_chain = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    total += s.count;
    if (Contains(s, "main")) with_main += s.count;
    const size_t n = s.frames.size();
    if (n >= 3 && s.frames[n - 1] == "hot50" && s.frames[n - 2] == "caller_at_known_line" &&
        s.frames[n - 3] == "main") {
      expected_chain += s.count;
    }
  }
  ASSERT_GT(total, 500);
  EXPECT_GE(100.0 * with_main / total, 95.0) << with_main << " of " << total;
  EXPECT_GE(100.0 * expected_chain / total, 90.0) << "main;caller_at_known_line;hot50";

  // In perf.log, the caller's frame sits on the exact line of its call to hot50.
  const int line = CallsiteLine();
  ASSERT_GT(line, 0);
  PerfannoLog log = ReadPerfannoLog(run.perf_log);
  ASSERT_TRUE(log.ok()) << log.error;
  const std::vector<PerfannoStack>& stacks = log.stacks;
  char* real = realpath(INPROF_WORKLOAD_SOURCE, nullptr);
  ASSERT_NE(real, nullptr);
  const std::string source = real;
  free(real);
  int64_t at_line = 0, through_caller = 0;
  for (const auto& s : stacks) {
    for (const auto& f : s.frames) {
      if (f.symbol != "caller_at_known_line") continue;
      through_caller += s.count;
      EXPECT_EQ(f.path, source);
      if (f.line == static_cast<uint64_t>(line)) at_line += s.count;
    }
  }
  ASSERT_GT(through_caller, 0);
  EXPECT_GE(100.0 * at_line / through_caller, 90.0) << "call site line " << line;
}

// The same thread-coverage and share tests for every engine. Each engine runs at the rate
// it can deliver (timer and itimer: the kernel tick, 250 Hz here, perf: 997 Hz), with the
// tolerance of Tolerance() below.
//
// Independent samples behind a profile: the signals taken (a weighted sample stands for
// several periods but is one observation), from the summary's threads line.
int64_t Signals(const ProfiledRun& run, int64_t weight) {
  std::smatch m;
  if (std::regex_search(run.process.err, m, std::regex(R"(: (\d+) signals \+)"))) {
    return std::min<int64_t>(weight, std::stoll(m[1].str()));
  }
  return weight;
}

// 4.5 standard errors of a share estimated from `samples`, at least 3 points. Not 3.5:
// tick-driven samples are not independent when the machine is busy (a thread's slices and
// the tick line up for a while), and CI runs these beside other tests, where 3.5 failed
// (itimer under ASan: hot50 at 54.7 % from 1390 signals, 3.9 standard errors). The
// strict check of the default engine is LeafSharesMatchTheWorkloadWithinThreePoints.
// Under qemu-user the floor is 6 points: the CPU time the timers measure is that of the
// emulator's host threads, which also translate code, and a signal reaches the guest only at
// a translation-block boundary, so shares carry a bias beyond sampling error there (seen:
// hot30 at 35.3 % from 1588 signals at 250 Hz, 4.6 standard errors).
double Tolerance(double share_percent, int64_t samples) {
  const double p = share_percent / 100;
  const double floor = EmulatorPrefix().empty() ? 3.0 : 6.0;
  return std::max(floor, 450.0 * std::sqrt(p * (1 - p) / static_cast<double>(samples)));
}

class EngineTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::map<std::string, std::string> Env() const {
    const std::string engine = GetParam();
    return {{"INPROF_ENGINE", engine}, {"INPROF_FREQUENCY", engine == "perf" ? "997" : "250"}};
  }
};

TEST_P(EngineTest, LeafSharesMatchTheWorkload) {
  ProfiledRun run = Profile({"shares", "4"}, Env());
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find(std::string("engine=") + GetParam() + " "), std::string::npos)
      << run.process.err;
  int64_t hot = 0;
  auto shares = LeafShares(run.folded, &hot);
  ASSERT_GT(hot, 1000) << run.process.err;
  const int64_t n = Signals(run, hot);
  EXPECT_NEAR(shares["hot50"], 50, Tolerance(50, n)) << n << " signals";
  EXPECT_NEAR(shares["hot30"], 30, Tolerance(30, n)) << n << " signals";
  EXPECT_NEAR(shares["hot20"], 20, Tolerance(20, n)) << n << " signals";
}

TEST_P(EngineTest, AThreadStartedLaterIsSampledInProportionToItsCpu) {
  const std::string engine = GetParam();
  const std::string dir = MakeTempDir();
  std::map<std::string, std::string> env = Env();
  env["INPROF_OUTPUT"] = dir + "/out.folded," + dir + "/profile.json";
  ProfiledRun run = Profile({"late", "2"}, env);
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(cpu a=([0-9.]+) b=([0-9.]+))")))
      << run.process.out;
  const double cpu_a = std::stod(m[1].str()), cpu_b = std::stod(m[2].str());
  int64_t a = 0, b = 0;
  for (const auto& s : ReadFolded(dir + "/out.folded")) {
    if (Contains(s, "late_worker_a")) a += s.count;
    if (Contains(s, "late_worker_b")) b += s.count;
  }
  ASSERT_GT(a + b, 100) << run.process.err;
  const double sample_share = 100.0 * a / (a + b);
  const double cpu_share = 100.0 * cpu_a / (cpu_a + cpu_b);
  const int64_t n = Signals(run, a + b);
  EXPECT_NEAR(sample_share, cpu_share, Tolerance(cpu_share, n)) << n << " signals";
  // The weight against the CPU time itself. Timers weight by overruns, the itimer by the
  // process CPU time between samples: both exact. perf without kernel sampling misses the
  // workers' time inside syscalls: a little low.
  const double rate = engine == "perf" ? 997 : 250;
  const double ratio = (a + b) / ((cpu_a + cpu_b) * rate);
  EXPECT_LT(ratio, 1.05);
  EXPECT_GT(ratio, engine == "perf" ? 0.85 : 0.92);

  // Health lists both workers with their CPU time, and what that time promised vs got.
  Annotations annotations;
  ASSERT_TRUE(ReadAnnotationJson(ReadFile(dir + "/profile.json"), "profile.json", &annotations).ok());
  const Health& h = annotations.health;
  int workers = 0;
  for (const ThreadHealth& t : h.threads) {
    if (t.cpu_seconds < 0.5 * cpu_b) continue;
    ++workers;
    EXPECT_NEAR(t.expected, t.cpu_seconds * rate, 1e-6 * t.expected + 1e-9);
    EXPECT_LE(static_cast<double>(t.weight), 1.05 * t.expected + 10) << t.tid;
    EXPECT_GE(static_cast<double>(t.weight), 0.85 * t.expected)
        << t.tid;
  }
  EXPECT_GE(workers, 2) << run.process.err;
  EXPECT_NE(run.process.err.find("inprof: threads: "), std::string::npos) << run.process.err;
}

// Debian's libc has no frame pointers: a comparator called by qsort is where fp walks lose
// the caller. DWARF unwinding of the copied stack must get through to main.
TEST(PreloadTest, DwarfUnwindsThroughLibcQsortToMain) {
  for (const char* unwind : {"dwarf", "auto", "fp", "dwarf/libdwfl"}) {
    const std::string mode = unwind;
    const bool libdwfl = mode.ends_with("/libdwfl");
    ProfiledRun run = Profile({"qsort", "2"},
                              {{"INPROF_UNWIND", libdwfl ? "dwarf" : unwind},
                               {"INPROF_DWARF_BACKEND", libdwfl ? "libdwfl" : "libunwind"},
                               {"INPROF_FREQUENCY", "250"},
                               // The session from the start: samples taken before a deferred
                               // session starts are frame-pointer walks (docs/lifecycle.md),
                               // and on a loaded machine the start can take a few dozen of
                               // them (56 of 492 at a load of 6); this test is about DWARF.
                               {"INPROF_LAZY", "0"}},
                              INPROF_WORKLOAD_NOFP);
    ASSERT_EQ(run.process.exit_code, 0) << unwind << ": " << run.process.err;
    EXPECT_NE(run.process.err.find("unwinder=" + mode.substr(0, mode.find('/')) + " "),
              std::string::npos)
        << run.process.err;
    int64_t total = 0, to_main = 0, in_comparator = 0, comparator_to_main = 0;
    for (const auto& s : ReadFolded(run.folded)) {
      const bool reaches_main = Contains(s, "main") && Contains(s, "sort_rounds(double)");
      total += s.count;
      if (reaches_main) to_main += s.count;
      if (!Contains(s, "compare_hot(void const*, void const*)")) continue;
      in_comparator += s.count;
      if (reaches_main) comparator_to_main += s.count;
    }
    ASSERT_GT(in_comparator, 100) << unwind << ": " << run.process.err;
    // Samples that came while every stack copy of their thread was still waiting for the
    // collector (a loaded machine, a sanitizer build) keep only the frame-pointer walk, which
    // qsort defeats; the summary counts them, and they are not what this test measures.
    int64_t fell_back = 0;
    const std::string kFellBack = " samples came while all of their thread's stack copies";
    if (const size_t at = run.process.err.find(kFellBack); at != std::string::npos) {
      const size_t digits = run.process.err.find_last_not_of("0123456789", at - 1) + 1;
      fell_back = std::stoll(run.process.err.substr(digits, at - digits));
    }
    total -= std::min(fell_back, total - to_main);
    in_comparator -= std::min(fell_back, in_comparator - comparator_to_main);
    if (std::string(unwind) == "fp") {
      // The fixture really defeats frame pointers (else this test proves nothing).
      EXPECT_LT(100.0 * comparator_to_main / in_comparator, 50)
          << "fp: " << comparator_to_main << " of " << in_comparator;
    } else {
      EXPECT_GE(100.0 * to_main / total, 97) << unwind << ": " << to_main << " of " << total
                                             << " (" << fell_back << " kept only the fp walk)";
      EXPECT_GE(100.0 * comparator_to_main / in_comparator, 97)
          << unwind << ": " << comparator_to_main << " of " << in_comparator;
    }
  }
}

// libinprof.so brings libunwind (DWARF unwinding) into every profiled program; C++ exceptions
// must keep working through libgcc_s, with and without frame pointers.
TEST(PreloadTest, ExceptionsStillWorkInAProfiledProgram) {
  for (const char* program : {INPROF_WORKLOAD, INPROF_WORKLOAD_NOFP}) {
    ProfiledRun run = Profile({"throw", "0.5"}, {{"INPROF_FREQUENCY", "997"}}, program);
    ASSERT_EQ(run.process.exit_code, 0) << program << ": " << run.process.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(caught=(\d+))"))) << run.process.out;
    EXPECT_GT(std::stol(m[1].str()), 100) << program;
  }
}

// The 50/30/20 workload built with -O2 -fomit-frame-pointer: the default unwinder (auto)
// keeps the shares and complete stacks.
TEST(PreloadTest, WithoutFramePointersSharesHoldAndStacksReachTheRoot) {
  // 997 Hz: perf_event where allowed (one sample per period), else timers with overruns.
  ProfiledRun run = Profile({"shares", "4"}, {{"INPROF_FREQUENCY", "997"}}, INPROF_WORKLOAD_NOFP);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("unwinder=auto "), std::string::npos) << run.process.err;
  int64_t hot = 0;
  auto shares = LeafShares(run.folded, &hot);
  ASSERT_GT(hot, 1000) << run.process.err;
  const int64_t n = Signals(run, hot);
  EXPECT_NEAR(shares["hot50"], 50, Tolerance(50, n)) << n << " signals";
  EXPECT_NEAR(shares["hot30"], 30, Tolerance(30, n)) << n << " signals";
  EXPECT_NEAR(shares["hot20"], 20, Tolerance(20, n)) << n << " signals";
  int64_t complete = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    const std::string& leaf = s.frames.back();
    if (leaf != "hot50" && leaf != "hot30" && leaf != "hot20") continue;
    // main's thread ends in main, the other in the thread start routine (named where libc's
    // symbols are known, libc.so.6+0x... where only its dynamic symbols are, as on arm64
    // without libc6-dbg).
    const std::string& root = s.frames.front();
    const bool thread_root = Contains(s, "start_thread") || root == "__clone3" ||
                             root == "thread_start" || root.starts_with("libc.so.6+");
    if (Contains(s, "shares_loop") && (Contains(s, "main") || thread_root)) {
      complete += s.count;
    }
  }
  EXPECT_GE(100.0 * complete / hot, 97) << complete << " of " << hot;
}

// 300 threads of 1.5 ms of CPU each, one after another, at 999 Hz: the threads' samples add up
// to their CPU time x rate with every engine, and the summary says the same. Without a random
// first period a perf event never sampled a thread shorter than one period (1 of 298 at 99 Hz);
// without the exit's account, CPU timers, whose signals come on the tick, lost the samples
// due in each thread's last tick (72 % with the timer engine, 42-74 % with the itimer).
// ~450 samples: the count's own noise is about 5 %, the bounds 4 standard deviations.
TEST_P(EngineTest, ShortThreadsGetCpuTimeTimesRate) {
  if (std::string(GetParam()) == "perf") {
    SKIP_UNDER_EMULATOR(kNoPerfUnderQemu);
  }
  ProfiledRun run = Profile({"short_threads", "300", "1500"},
                            {{"INPROF_FREQUENCY", "999"}, {"INPROF_ENGINE", GetParam()}});
  SKIP_WITHOUT_PERF(run);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(short cpu=([0-9.]+))")))
      << run.process.out;
  const double expected = std::stod(m[1].str()) * 999;
  // The workers' samples: every stack but the main thread's, which pass through main (a
  // thread's root is start_thread or __clone3 where libc's symbols are known, thread_start
  // or libc.so.6+0x... where only its dynamic symbols are, as on arm64). Under CPU timers the
  // sample a thread's exit takes has the stack of its last sample, or its start routine
  // when it had none.
  int64_t got = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    if (!Contains(s, "main")) got += s.count;
  }
  EXPECT_GT(got, 0.8 * expected) << run.process.err;
  EXPECT_LT(got, 1.2 * expected) << run.process.err;
  // The health line: "expected E samples at 999 Hz, got G (P%" for all threads, main's
  // few samples included. Not for the perf engine: its events skip time in the kernel
  // (exclude_kernel), and the main thread's CPU time here is mostly the kernel creating and
  // joining 300 threads, which the health line's per-thread CPU time counts. Beside other tests
  // that share went up to half of all the CPU time: a sanitizer CI run read 37.7 % overall,
  // the main thread 3 of 612 samples, while the workers' own check above passed.
  if (std::string(GetParam()) == "perf") return;
  ASSERT_TRUE(std::regex_search(run.process.err, m,
                                std::regex(R"(expected ([0-9]+) samples at 999 Hz, got ([0-9]+))")))
      << run.process.err;
  const double health = std::stod(m[2].str()) / std::stod(m[1].str());
  EXPECT_GT(health, 0.8) << run.process.err;
  EXPECT_LT(health, 1.2) << run.process.err;
}

// A thread that keeps the sampling signal blocked (a program that blocks every signal in its
// workers) cannot be sampled: the user is told that, not that the program used too little CPU
// time. (docs/signals.md: leaving the signal out of the program's masks is not built yet.)
TEST(PreloadTest, NoSamplesFromABlockedWorkerSaysTheSignalWasBlocked) {
  SKIP_UNDER_EMULATOR("qemu-user's signal masks are its own: it delivered the blocked worker's "
                      "timer signal (1 signal + 49 overruns)");
  // The main thread, which does not block the signal, must take no sample either: its first
  // period a whole one (not a random part of one), and long (34 ms at 29 Hz) against what it
  // runs (a sanitizer's start and exit included: at 99 Hz with a random first period, one run
  // in a sanitizer CI lane sampled it once). 0.5 s of the worker's CPU time is still 14
  // periods, enough for "blocked" rather than "too short".
  ProfiledRun run = Profile({"blocked_worker", "0.5"},
                            {{"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}, {"INPROF_FREQUENCY", "29"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("no sample arrived: its threads kept the sampling signal blocked"),
            std::string::npos)
      << run.process.err;
  EXPECT_EQ(run.process.err.find("less CPU time than one sampling period"), std::string::npos)
      << run.process.err;
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineTest, ::testing::Values("timer", "perf", "itimer"),
                         [](const auto& info) { return std::string(info.param); });

TEST(PreloadTest, AutoFallsBackToItimerWhenTimersFailAndSaysWhy) {
  ProfiledRun run = Profile({"callsite", "1"}, {{"INPROF_TEST_TIMER_ERRNO", "EAGAIN"},
                                                 {"INPROF_TEST_PERF_ERRNO", "EACCES"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("engine=itimer "), std::string::npos) << run.process.err;
  EXPECT_NE(run.process.err.find("timer_create: EAGAIN (the kernel refused another timer"),
            std::string::npos)
      << run.process.err;
  EXPECT_NE(run.process.err.find("using the process-wide ITIMER_PROF timer"), std::string::npos);
  EXPECT_GT(Weight(run.folded, "caller_at_known_line"), 40) << run.process.err;
}

TEST(PreloadTest, AnExplicitTimerEngineThatFailsIsAnError) {
  ProfiledRun run = Profile({"callsite", "0.1"},
                            {{"INPROF_ENGINE", "timer"}, {"INPROF_TEST_TIMER_ERRNO", "EPERM"}});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("engine=timer: timer_create: EPERM"), std::string::npos)
      << run.process.err;
  EXPECT_NE(run.process.err.find("runs without profiling"), std::string::npos);
  EXPECT_FALSE(FileExists(run.folded));
}

TEST(PreloadTest, NothingOfOursSurvivesIntoAnExecedImage) {
  if (!EmulatorPrefix().empty()) {
    GTEST_SKIP() << "under qemu-user without binfmt_misc an exec'd arm64 image cannot start";
  }
  // ITIMER_PROF outlives execve while the new image's SIGPROF action is the default
  // (terminate): every exec function must leave no timer of ours behind.
  for (const char* engine : {"itimer", "timer"}) {
    for (const char* how : {"execve", "execv", "execl", "execvp"}) {
      ProfiledRun run = Profile({"exec", how}, {{"INPROF_ENGINE", engine}});
      EXPECT_EQ(run.process.term_signal, 0) << engine << " " << how << ": " << run.process.err;
      EXPECT_EQ(run.process.exit_code, 0) << engine << " " << how << ": " << run.process.err;
      EXPECT_NE(run.process.out.find("callsite done"), std::string::npos)
          << engine << " " << how << ": the new image did not run to the end";
    }
  }
}

TEST(PreloadTest, AProgramThatArmsItimerProfTakesItOverFromTheItimerEngine) {
  ProfiledRun run = Profile({"own_sigprof"}, {{"INPROF_ENGINE", "itimer"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m,
                                std::regex(R"(own hits=(\d+) query=mine raised=(\d+)/(\d+))")))
      << run.process.out;
  // Its own 10 ms ITIMER_PROF over 1 s of CPU reached its own handler. How many times is the
  // kernel's business (see AProgramThatInstallsItsOwnSigprofHandlerLaterKeepsBothWorking):
  // about 100 on an idle machine, but the same program without the runtime, beside a test
  // run on a 2-CPU VM, counted 6, 19, 32, 40, 71 and 82 (CI once saw 45 under the runtime,
  // below an earlier bound of 50). So the count only has to be non-zero and not above what
  // 1 s of CPU allows; that nothing the program is owed is taken is the raised signals'
  // check, whose number is known (qemu-user may merge a few with a pending one).
  EXPECT_GT(std::stoi(m[1].str()), 0);
  EXPECT_LT(std::stoi(m[1].str()), 150);
  const int raised = std::stoi(m[2].str()), sent = std::stoi(m[3].str());
  EXPECT_GE(raised, EmulatorPrefix().empty() ? sent : sent - 3) << run.process.out;
  // ...and the profile says why it has a gap.
  EXPECT_NE(run.process.err.find("the program armed ITIMER_PROF itself 1 time"),
            std::string::npos)
      << run.process.err;
}

std::string Canonical(const char* path) {
  char* real = realpath(path, nullptr);
  std::string result = real ? real : "";
  free(real);
  return result;
}

int LineOf(const char* file, const char* marker) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return -1;
}

TEST(PreloadTest, FramesInADlopenedLibraryResolveEvenAfterDlclose) {
  ProfiledRun run = Profile({"dlopen", INPROF_PLUGIN}, {{"INPROF_FREQUENCY", "997"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  int64_t total = 0, in_plugin = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    total += s.count;
    if (Contains(s, "plugin::plugin_hot_loop(double)") && Contains(s, "plugin_entry") &&
        Contains(s, "main")) {
      in_plugin += s.count;
    }
  }
  ASSERT_GT(total, 0);
  EXPECT_GE(100.0 * in_plugin / total, 80.0) << ReadFile(run.folded);
  PerfannoLog log = ReadPerfannoLog(run.perf_log);
  ASSERT_TRUE(log.ok()) << log.error;
  const std::string source = Canonical(INPROF_PLUGIN_SOURCE);
  const int hot_line = LineOf(INPROF_PLUGIN_SOURCE, "PLUGIN-HOT-LINE");
  int64_t on_hot_line = 0;
  for (const auto& st : log.stacks) {
    const PerfannoFrame& leaf = st.frames.back();
    if (leaf.path == source && leaf.line == static_cast<uint64_t>(hot_line)) {
      on_hot_line += static_cast<int64_t>(st.count);
    }
  }
  EXPECT_GE(100.0 * on_hot_line / total, 50.0) << "samples on " << source << ":" << hot_line;
}

TEST(PreloadTest, DeepStacksAreTruncatedExplicitly) {
  ProfiledRun run = Profile({"deep", "300"}, {{"INPROF_FREQUENCY", "997"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  int64_t truncated = 0;
  for (const auto& s : ReadFolded(run.folded)) {
    if (s.frames.front() == "[truncated]") {
      truncated += s.count;
      // The limit is on machine frames: 128 addresses and the marker. An address in inlined
      // code adds its inline chain on top (an instrumented build inlines differently), and
      // names-only folded stacks do not mark inlined frames: a few frames of room for that,
      // far below the 300 the program's recursion would show untruncated.
      EXPECT_LE(s.frames.size(), 129u + 4u) << ReadFile(run.folded);
    }
  }
  EXPECT_GT(truncated, 0);
  EXPECT_TRUE(std::regex_search(run.process.err, std::regex(R"(truncated=[1-9])")))
      << run.process.err;
}

TEST(PreloadTest, SamplesWithAnotherSignalWhenAsked) {
  ProfiledRun run =
      Profile({"callsite", "0.3"}, {{"INPROF_SIGNAL", "RTMIN+3"}, {"INPROF_FREQUENCY", "997"}});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  int64_t total = 0;
  for (const auto& s : ReadFolded(run.folded)) total += s.count;
  EXPECT_GT(total, 100) << run.process.err;
}

TEST(PreloadTest, PrintsOneSummaryLineUnlessQuiet) {
  ProfiledRun run = Profile({"callsite", "0.2"});
  ASSERT_EQ(run.process.exit_code, 0);
  EXPECT_TRUE(std::regex_search(
      run.process.err,
      std::regex(R"(inprof: engine=(perf|timer) unwinder=auto frequency=99Hz samples=\d+ dropped=\d+ )")))
      << run.process.err;
  ProfiledRun quiet = Profile({"callsite", "0.2"}, {{"INPROF_QUIET", "1"}});
  EXPECT_EQ(quiet.process.err.find("inprof:"), std::string::npos) << quiet.process.err;
  EXPECT_TRUE(FileExists(quiet.folded));
}

// The export's cost is reported where users look: the JSON health block (symbolization, and
// the writing of the outputs written before it) and the summary line (all of it).
TEST(PreloadTest, ReportsTheTimeFromStopToOutputsWritten) {
  const std::string dir = MakeTempDir();
  ProcessResult run = RunProcess(
      {INPROF_WORKLOAD, "callsite", "0.3"},
      {{"LD_PRELOAD", PreloadValue()},
       {"INPROF_OUTPUT", dir + "/profile.json," + dir + "/out.folded," + dir + "/out.svg"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Annotations annotations;
  ASSERT_TRUE(
      ReadAnnotationJson(ReadFile(dir + "/profile.json"), "profile.json", &annotations).ok());
  EXPECT_GT(annotations.health.samples, 0u);
  EXPECT_GT(annotations.health.symbolize_seconds, 0);
  EXPECT_LT(annotations.health.symbolize_seconds, 60);
  // The folded file and the SVG were written before the JSON (JSON goes last).
  EXPECT_GT(annotations.health.write_seconds, 0);
  EXPECT_LT(annotations.health.write_seconds, 60);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      run.err, m, std::regex(R"( export=(\d+\.\d+)s \(symbolize=(\d+\.\d+)s write=(\d+\.\d+)s\))")))
      << run.err;
  EXPECT_NEAR(std::stod(m[1].str()), std::stod(m[2].str()) + std::stod(m[3].str()), 0.0015);
  EXPECT_GE(std::stod(m[3].str()), annotations.health.write_seconds - 0.0005);
}

TEST(PreloadTest, OutputsAreWrittenWhenAThreadCallsExit) {
  ProfiledRun run = Profile({"exit"});
  EXPECT_EQ(run.process.exit_code, 3);
  EXPECT_TRUE(FileExists(run.folded)) << run.process.err;
  EXPECT_TRUE(FileExists(run.perf_log));
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos);
}

TEST(PreloadTest, OutputsAreWrittenOnSigtermAndTheProcessStillDiesOfIt) {
  ProfiledRun run = Profile({"sigterm"});
  EXPECT_EQ(run.process.term_signal, SIGTERM) << run.process.err;
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos) << run.process.err;
}

TEST(PreloadTest, AProgramThatInstallsItsOwnSigprofHandlerLaterKeepsBothWorking) {
  for (const char* how : {"sigaction", "signal"}) {
    for (const char* engine : {"timer", "perf"}) {
      ProfiledRun run = Profile({"own_sigprof", how},
                                {{"INPROF_ENGINE", engine}, {"INPROF_FREQUENCY", "199"}});
      if (std::string(engine) == "perf") SKIP_WITHOUT_PERF(run);
      ASSERT_EQ(run.process.exit_code, 0) << how << " " << engine << ": " << run.process.err;
      std::smatch m;
      ASSERT_TRUE(std::regex_search(run.process.out, m,
                                    std::regex(R"(own hits=(\d+) query=mine raised=(\d+)/(\d+))")))
          << run.process.out;
      // Not one of the program's own SIGPROFs may be swallowed: each raise() is delivered
      // before it returns, so the count is exact. (qemu-user keeps one pending signal per
      // number: a raise that meets one of our timer's SIGPROFs still pending there merges
      // with it, so there a few may be missing.)
      const int raised = std::stoi(m[2].str()), sent = std::stoi(m[3].str());
      if (EmulatorPrefix().empty()) {
        EXPECT_EQ(raised, sent) << how << " " << engine;
      } else {
        EXPECT_GE(raised, sent - 3) << how << " " << engine;
      }
      // Its 10 ms ITIMER_PROF over 1 s of CPU: up to about 100 signals. The kernel checks
      // process CPU timers on the tick of a CPU where the process runs and sends at most one
      // signal per check, and a SIGPROF that arrives while one is pending is lost: on a loaded
      // machine (the test suite running beside it) 14 of 100 were seen natively, and under
      // qemu-user signals also wait for translation-block boundaries. So what is asserted is
      // that its timer still reaches it, and never more often than it fired.
      EXPECT_GT(std::stoi(m[1].str()), 5) << how << " " << engine;
      EXPECT_LT(std::stoi(m[1].str()), 150) << how << " " << engine;
      // And sampling went on: 1 s at 199 Hz.
      EXPECT_GT(Weight(run.folded, "early_spin"), 120) << how << " " << engine;
    }
  }
}

TEST(PreloadTest, LuaJitsOwnProfilerRunsAtTheSameTime) {
#ifndef INPROF_LUAJIT_HOST
  GTEST_SKIP() << "LuaJIT (libluajit-5.1-dev) was not found at build time";
#else
  const std::string dir = MakeTempDir();
  const std::string folded = dir + "/out.folded";
  ProcessResult r = RunProcess({INPROF_LUAJIT_HOST}, {{"LD_PRELOAD", PreloadValue()},
                                                      {"INPROF_OUTPUT", folded},
                                                      {"INPROF_FREQUENCY", "199"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(lua samples=(\d+))"))) << r.out;
  // LuaJIT's 2 ms ITIMER_PROF over 0.8 s of Lua: its profiler saw its own signals.
  EXPECT_GT(std::stoi(m[1].str()), 100) << r.out;
  int64_t total = 0, host = 0;
  for (const auto& s : ReadFolded(folded)) {
    total += s.count;
    if (Contains(s, "host_spin")) host += s.count;
  }
  // We sampled all along: 1.3 s at 199 Hz, and after LuaJIT stopped its profiler too.
  EXPECT_GT(total, 180) << r.err;
  EXPECT_GT(host, 60) << r.err;
#endif
}

TEST(PreloadTest, AProgramsOwnSigtermHandlerKeepsWorking) {
  ProfiledRun run = Profile({"own_sigterm"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.out.find("handled"), std::string::npos);
  EXPECT_TRUE(FileExists(run.folded));
}

TEST(PreloadTest, ForkedChildrenProfileIntoTheirOwnFiles) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  ProfiledRun run = Profile({"fork"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(child pid=(\d+) status=0)")))
      << run.process.out;
  const std::string child = run.dir + "/out." + m[1].str() + ".folded";
  ASSERT_TRUE(FileExists(child)) << run.process.err;
  EXPECT_NE(ReadFile(child).find("early_spin"), std::string::npos);
  EXPECT_TRUE(FileExists(run.dir + "/perf." + m[1].str() + ".log"));
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos)
      << "the parent's profile";
}

TEST(PreloadTest, ForkedChildrenRunUnprofiledWhenNotFollowed) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  ProfiledRun run = Profile({"fork"}, {{"INPROF_FOLLOW_FORK", "0"}});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(child pid=(\d+) status=0)")))
      << run.process.out;
  EXPECT_FALSE(FileExists(run.dir + "/out." + m[1].str() + ".folded"));
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos);
}

// A process whose profile starts at its first sample forks all along: a child forked while
// that start was under way (on the runtime's own thread) once saw neither the starting nor
// the started profile, and ran unprofiled (a shell's subshell, one time in twenty).
TEST(PreloadTest, EveryChildForkedAroundTheProfilesStartFollowsIt) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  ProfiledRun run = Profile({"fork_many", "30"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  const std::regex child(R"(child pid=(\d+) status=0)");
  int children = 0;
  std::vector<std::string> missing;
  for (auto it = std::sregex_iterator(run.process.out.begin(), run.process.out.end(), child);
       it != std::sregex_iterator(); ++it) {
    ++children;
    const std::string folded = run.dir + "/out." + (*it)[1].str() + ".folded";
    if (!FileExists(folded)) missing.push_back((*it)[1].str());
  }
  EXPECT_EQ(children, 30) << run.process.out;
  EXPECT_EQ(missing.size(), 0u) << "of " << children << " children, these wrote no profile: "
                                << testing::PrintToString(missing) << "\n"
                                << run.process.err;
}

TEST(PreloadTest, AForkedChildStillDiesOfSigterm) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  for (const char* follow : {"1", "0"}) {
    ProfiledRun run = Profile({"fork_sigterm"}, {{"INPROF_FOLLOW_FORK", follow}});
    EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(child pid=(\d+) signal=15)")))
        << "follow=" << follow << ": " << run.process.out << run.process.err;
    // A followed child that only computes has not reached a point where its profile can be
    // written (docs/lifecycle.md): it says so and dies of the signal all the same.
    const bool written = FileExists(run.dir + "/out." + m[1].str() + ".folded");
    const bool explained =
        run.process.err.find("termination signal came before") != std::string::npos;
    if (follow[0] == '1') {
      EXPECT_TRUE(written || explained) << run.process.err;
    } else {
      EXPECT_FALSE(written || explained) << run.process.err;
    }
  }
}

TEST(PreloadTest, ExecedChildrenWriteTheirOwnFiles) {
  SKIP_UNDER_EMULATOR(
      "the workload's exec of /bin/true runs the host's x86-64 binary natively, where the "
      "arm64 libinprof cannot be preloaded (exec is covered by the native lanes)");
  ProfiledRun run = Profile({"spawn"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(spawned pid=(\d+))")));
  EXPECT_TRUE(FileExists(run.dir + "/out." + m[1].str() + ".folded")) << run.process.err;
  EXPECT_NE(ReadFile(run.folded).find("early_spin"), std::string::npos)
      << "the parent's profile was overwritten";
}

struct BadEnv {
  const char* name;
  const char* value;
  const char* message;
};

void PrintTo(const BadEnv& bad, std::ostream* out) { *out << bad.name << "=" << bad.value; }

class PreloadBadConfigTest : public ::testing::TestWithParam<BadEnv> {};

TEST_P(PreloadBadConfigTest, TheProgramRunsUnprofiledWithAClearMessage) {
  const BadEnv& bad = GetParam();
  ProfiledRun run = Profile({"callsite", "0.1"}, {{bad.name, bad.value}});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find(bad.message), std::string::npos) << run.process.err;
  EXPECT_NE(run.process.err.find("runs without profiling"), std::string::npos);
  EXPECT_FALSE(FileExists(run.folded));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PreloadBadConfigTest,
    ::testing::Values(BadEnv{"INPROF_FREQUENCY", "fast",
                             "INPROF_FREQUENCY: invalid frequency='fast'"},
                      BadEnv{"INPROF_FREQ", "100", "unknown environment variable INPROF_FREQ"},
                      BadEnv{"INPROF_UNWIND", "guess", "invalid unwind='guess'"},
                      BadEnv{"INPROF_ENGINE", "fast", "invalid engine='fast'"},
                      BadEnv{"INPROF_SIGNAL", "SIGSEGV", "invalid signal"}),
    [](const ::testing::TestParamInfo<BadEnv>& info) { return std::string(info.param.name); });

TEST(PreloadTest, UnwritableOrUnknownOutputsAreRejectedAtStart) {
  for (const char* output : {"/nonexistent-dir/out.folded", "/tmp/profile.txt"}) {
    std::map<std::string, std::string> env = {{"LD_PRELOAD", PreloadValue()},
                                              {"INPROF_OUTPUT", output}};
    ProcessResult r = RunProcess({INPROF_WORKLOAD, "callsite", "0.1"}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(output), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("runs without profiling"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace inprof::test
