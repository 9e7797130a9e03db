// Every way a profiled process ends writes its profile (or nothing, when it took no sample),
// and ends as it would have without the profiler: exit status, signal, files in the right
// place (docs/lifecycle.md).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "inprof/annotation_json.h"
#include "test_util.h"

namespace inprof::test {
namespace {

#define SKIP_WITHOUT_PERF(result)                                            \
  if ((result).err.find("engine=perf:") != std::string::npos) {              \
    GTEST_SKIP() << "perf_event is not available here: " << (result).err;    \
  }

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + " ";
  return out;
}

bool HoldsBurn(const std::string& folded) {
  for (const FoldedStack& s : ReadFolded(folded)) {
    if (!s.frames.empty() && s.frames.back().find("burn_cpu") != std::string::npos) return true;
  }
  return false;
}

struct LifecycleRun {
  ProcessResult process;
  std::string dir;
};

LifecycleRun Lifecycle(const std::vector<std::string>& args, std::map<std::string, std::string> env,
              const std::string& output = "out.folded") {
  LifecycleRun run;
  run.dir = MakeTempDir();
  env.emplace("LD_PRELOAD", PreloadValue());
  env.emplace("INPROF_OUTPUT", run.dir + "/" + output);
  std::vector<std::string> argv = {INPROF_LIFECYCLE};
  argv.insert(argv.end(), args.begin(), args.end());
  run.process = RunProcess(argv, env);
  return run;
}

// Test names: "_exit" and "exit" must not collide once underscores are dropped.
std::string NameOf(const std::string& how) {
  if (how == "return") return "Return";
  if (how == "exit") return "Exit";
  if (how == "_exit") return "UnderscoreExit";
  if (how == "_Exit") return "UnderscoreCapitalExit";
  if (how == "quick_exit") return "QuickExit";
  return "Unknown";
}

struct ExitCase {
  const char* how;
  const char* engine;
  const char* unwind;
};

void PrintTo(const ExitCase& c, std::ostream* out) {
  *out << c.how << "/" << c.engine << "/" << c.unwind;
}

class ExitPathTest : public ::testing::TestWithParam<ExitCase> {};

TEST_P(ExitPathTest, WritesTheProfileAndKeepsTheExitStatus) {
  const ExitCase& c = GetParam();
  if (std::string(c.engine) == "perf") SKIP_UNDER_EMULATOR("no perf_event under qemu-user");
  LifecycleRun run = Lifecycle({"exit", c.how}, {{"INPROF_ENGINE", c.engine}, {"INPROF_UNWIND", c.unwind}});
  SKIP_WITHOUT_PERF(run.process);
  EXPECT_EQ(run.process.exit_code, std::string(c.how) == "return" ? 0 : 3) << run.process.err;
  ASSERT_TRUE(FileExists(run.dir + "/out.folded")) << run.process.err;
  EXPECT_TRUE(HoldsBurn(run.dir + "/out.folded")) << ReadFile(run.dir + "/out.folded");
  EXPECT_NE(run.process.err.find("inprof: engine="), std::string::npos) << run.process.err;
}

std::vector<ExitCase> ExitCases() {
  std::vector<ExitCase> cases;
  for (const char* how : {"return", "exit", "_exit", "_Exit", "quick_exit"}) {
    for (const char* engine : {"timer", "itimer", "perf"}) {
      for (const char* unwind : {"fp", "dwarf"}) cases.push_back({how, engine, unwind});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllWays, ExitPathTest, ::testing::ValuesIn(ExitCases()),
                         [](const ::testing::TestParamInfo<ExitCase>& info) {
                           return NameOf(info.param.how) + info.param.engine + info.param.unwind;
                         });

TEST(LifecycleTest, AProcessWithoutSamplesWritesNothing) {
  // At 1 Hz: a sample only after a CPU-second, which the program never uses, even under an
  // emulator whose start-up counts as the process's CPU time (20 ms under qemu-user took one
  // sample at 99 Hz).
  LifecycleRun run = Lifecycle({"noop"}, {{"INPROF_FREQUENCY", "1"}, {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_TRUE(ListDir(run.dir).empty()) << Joined(ListDir(run.dir));
  EXPECT_NE(run.process.err.find("no samples: no output written"), std::string::npos)
      << run.process.err;
}

// The session starts at the first sample: a process that never takes one runs with the
// exit watcher only (no collector thread, no module map, no engines), and one that does gets
// the whole session, with full stacks from then on.
TEST(LifecycleTest, TheSessionStartsAtTheFirstSample) {
  LifecycleRun idle = Lifecycle({"threads", "0"}, {{"INPROF_FREQUENCY", "1"}, {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}, {"INPROF_QUIET", "1"}});
  EXPECT_EQ(idle.process.exit_code, 0) << idle.process.err;
  EXPECT_NE(idle.process.out.find("thread inprof-exit"), std::string::npos) << idle.process.out;
  EXPECT_EQ(idle.process.out.find("thread inprof-collect"), std::string::npos) << idle.process.out;
  EXPECT_TRUE(ListDir(idle.dir).empty()) << Joined(ListDir(idle.dir));

  LifecycleRun busy = Lifecycle({"threads", "0.3", "wait"}, {});
  EXPECT_EQ(busy.process.exit_code, 0) << busy.process.err;
  EXPECT_NE(busy.process.out.find("thread inprof-collect"), std::string::npos) << busy.process.out;
  EXPECT_TRUE(HoldsBurn(busy.dir + "/out.folded")) << ReadFile(busy.dir + "/out.folded");

  // lazy=0: the whole session from the start, as an explicit inprof_start has.
  LifecycleRun eager =
      Lifecycle({"threads", "0"}, {{"INPROF_FREQUENCY", "1"}, {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}, {"INPROF_LAZY", "0"}, {"INPROF_QUIET", "1"}});
  EXPECT_EQ(eager.process.exit_code, 0) << eager.process.err;
  EXPECT_NE(eager.process.out.find("thread inprof-collect"), std::string::npos) << eager.process.out;
}

class ForkExitTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

// Forked children that end by any path write their own files; children that took no sample
// (one that ends at once, one whose exec failed) leave nothing behind.
TEST_P(ForkExitTest, ChildrenWriteTheirProfilesAndIdleOnesNothing) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  const auto [how, engine] = GetParam();
  // The idle children must take no sample for certain: their timer's first expiry comes after
  // a whole period (by default it is random, so that short processes are sampled in proportion).
  LifecycleRun run = Lifecycle({"fork", how}, {{"INPROF_ENGINE", engine},
                                               {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}});
  SKIP_WITHOUT_PERF(run.process);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  const std::string& out = run.process.out;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(std::string(R"(child pid=(\d+) how=)") + how +
                                                   R"( status=3)")))
      << out;
  const std::string worker = run.dir + "/out." + m[1].str() + ".folded";
  ASSERT_TRUE(FileExists(worker)) << Joined(ListDir(run.dir)) << "\n" << run.process.err;
  EXPECT_TRUE(HoldsBurn(worker)) << ReadFile(worker);
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(child pid=(\d+) how=idle status=0)"))) << out;
  EXPECT_FALSE(FileExists(run.dir + "/out." + m[1].str() + ".folded"));
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(child pid=(\d+) how=failed_exec status=127)")))
      << out;
  EXPECT_FALSE(FileExists(run.dir + "/out." + m[1].str() + ".folded"));
  EXPECT_TRUE(HoldsBurn(run.dir + "/out.folded")) << "the parent's profile";
  EXPECT_EQ(ListDir(run.dir).size(), 2u) << Joined(ListDir(run.dir));
}

INSTANTIATE_TEST_SUITE_P(AllWays, ForkExitTest,
                         ::testing::Combine(::testing::Values("_exit", "_Exit", "exit",
                                                              "quick_exit"),
                                            ::testing::Values("timer", "itimer", "perf")),
                         [](const auto& info) {
                           return NameOf(std::get<0>(info.param)) + std::get<1>(info.param);
                         });

// A forked child that burns and exits reaches no safe point (no thread start, no dlclose):
// its own session never started, and its samples are all in the bootstrap table. The profile
// written at its exit says what took them and counts the child's own CPU time and samples,
// not those of a session made at exit that sampled nothing (which reported 0.00 CPU-s and 0
// samples taken beside 30 samples written).
TEST(LifecycleTest, AChildThatEndsBeforeItsSessionReportsItsOwnSampling) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  LifecycleRun run = Lifecycle({"fork", "_exit"}, {}, "out.json");
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.process.out, m, std::regex(R"(child pid=(\d+) how=_exit status=3)")))
      << run.process.out;
  const std::string file = run.dir + "/out." + m[1].str() + ".json";
  ASSERT_TRUE(FileExists(file)) << Joined(ListDir(run.dir)) << "\n" << run.process.err;
  inprof::Annotations a;
  ASSERT_TRUE(inprof::ReadAnnotationJson(ReadFile(file), file, &a).ok());
  const inprof::Health& h = a.health;
  EXPECT_EQ(h.engine, "timer");
  EXPECT_NE(h.engine_reason.find("ended before its session started"), std::string::npos)
      << h.engine_reason;
  ASSERT_EQ(h.threads.size(), 1u);
  const inprof::ThreadHealth& t = h.threads[0];
  EXPECT_EQ(t.tid, std::stoll(m[1].str()));
  // burn_cpu(0.3) counts the process's CPU time; the child's start and exit add a little.
  EXPECT_GT(t.cpu_seconds, 0.28);
  EXPECT_LT(t.cpu_seconds, 1.0);
  EXPECT_NEAR(t.expected, t.cpu_seconds * h.requested_hz, 1e-6 * t.expected + 1e-9);
  EXPECT_EQ(t.taken, h.samples);
  // About 30 samples at 99 Hz: the CPU-time timer's count, within its spread.
  EXPECT_GE(static_cast<double>(t.weight), 0.7 * t.expected);
  EXPECT_LE(static_cast<double>(t.weight), 1.1 * t.expected + 3);
  EXPECT_NE(run.process.err.find("inprof: engine=timer"), std::string::npos) << run.process.err;
}

// The C library does not reset dl_iterate_phdr's lock in a forked child: without the fork
// guard, a child forked while another thread iterates hangs in its own first call (the
// collector iterates at every drain, and a child's session starts by iterating).
TEST(LifecycleTest, ForksWhileAnotherThreadIteratesModulesNeverHang) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  LifecycleRun run = Lifecycle({"fork_loader", "200"}, {});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.out.find("hung=0 of 200"), std::string::npos) << run.process.out;
  // A fork that waited the guard's whole bound (200 ms) went ahead unguarded: the loops kept
  // it from the guard (a guard that prefers readers lost 20 to 150 of 200 forks this way), or
  // a fork from inside a callback waited for its own call (20 of them). A few are allowed for
  // a loaded machine that stops the process for that long.
  std::smatch slow;
  ASSERT_TRUE(std::regex_search(run.process.out, slow, std::regex(R"(slow=(\d+))"))) << run.process.out;
  EXPECT_LE(std::stoi(slow[1]), 5) << run.process.out;
}

// The library preloaded without a profile (as LD_PRELOAD exported in a shell leaves it for
// every program): a program that starts a thread and forks at once. The runtime was made on
// first use, which could be that thread's start, and a child forked meanwhile waited forever
// for the half-made runtime: one process in five hung its first or second child. The race
// is one per process, so the test runs twenty.
TEST(LifecycleTest, AForkWhileANewThreadStartsNeverHangsTheChild) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  int hung_runs = 0;
  for (int i = 0; i < 20; ++i) {
    const ProcessResult run =
        RunProcess({INPROF_LIFECYCLE, "thread_fork", "20"}, {{"LD_PRELOAD", PreloadValue()}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    if (run.out.find("hung=0 of 20") == std::string::npos) {
      ++hung_runs;
      ADD_FAILURE() << "run " << i << ": " << run.out << run.err;
    }
  }
  EXPECT_EQ(hung_runs, 0);
}

// _exit from a signal handler that may have interrupted malloc: the write may block on the
// allocator's lock forever; the exit watchdog ends the process with the status _exit was
// given after INPROF_EXIT_TIMEOUT. Every run ends, with status 5, and either wrote the
// profile or says why not.
TEST(LifecycleTest, ExitFromASignalHandlerEndsWithinTheExitTimeout) {
  int written = 0, timed_out = 0;
  for (int run_index = 0; run_index < 8; ++run_index) {
    LifecycleRun run = Lifecycle({"exit_in_handler"}, {{"INPROF_EXIT_TIMEOUT", "1"}});
    ASSERT_EQ(run.process.exit_code, 5) << run.process.err;
    if (FileExists(run.dir + "/out.folded")) {
      ++written;
    } else {
      EXPECT_NE(run.process.err.find("exit-time write did not finish within"), std::string::npos)
          << run.process.err;
      ++timed_out;
    }
  }
  std::printf("written %d, ended by the watchdog %d\n", written, timed_out);
}

TEST(LifecycleTest, VforkAndPosixSpawnChildrenAreUnaffected) {
  SKIP_UNDER_EMULATOR(
      "posix_spawn of an arm64 program from inside the emulator runs it without the emulator");
  LifecycleRun run = Lifecycle({"spawn"}, {});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.out.find("vfork pid="), std::string::npos);
  EXPECT_TRUE(std::regex_search(run.process.out, std::regex(R"(vfork pid=\d+ status=7)")))
      << run.process.out;
  EXPECT_TRUE(std::regex_search(run.process.out, std::regex(R"(spawn pid=\d+ status=0)")))
      << run.process.out;
  // Only the parent sampled: the vfork child shared its memory and wrote nothing, the spawned
  // noop took no sample, and says nothing about it (only the process the user started does).
  EXPECT_EQ(run.process.err.find("no samples"), std::string::npos) << run.process.err;
  EXPECT_EQ(ListDir(run.dir), std::vector<std::string>{"out.folded"});
  EXPECT_TRUE(HoldsBurn(run.dir + "/out.folded"));
}

TEST(LifecycleTest, OutputPathsAreFixedAtStartNotAtExit) {
  SKIP_UNDER_EMULATOR("starts the program through the host's /bin/sh");
  const std::string elsewhere = MakeTempDir();
  LifecycleRun run;
  run.dir = MakeTempDir();
  // A relative output, resolved against the working directory the program started in.
  // The shell before the exec must take no sample (it would start the profile where it
  // started, and the program's would be written as an exec's): 20 Hz with a whole first
  // period leaves it 50 ms of CPU, where it uses 30 ms preloaded with the sanitizer's runtime
  // (it was sampled in 1 of 32 runs at 99 Hz). The program burns 0.3 s: about 5 samples.
  std::map<std::string, std::string> env = {{"LD_PRELOAD", PreloadValue()},
                                            {"INPROF_OUTPUT", "out.folded"},
                                            {"INPROF_FREQUENCY", "20"},
                                            {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}};
  const std::string cwd = run.dir;
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   "cd '" + cwd + "' && exec \"$0\" chdir '" + elsewhere + "'",
                                   INPROF_LIFECYCLE};
  run.process = RunProcess(argv, env);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_TRUE(FileExists(cwd + "/out.folded")) << run.process.err;
  EXPECT_TRUE(ListDir(elsewhere).empty()) << Joined(ListDir(elsewhere));
}

TEST(LifecycleTest, ADaemonWritesWhereItWasStarted) {
  SKIP_FORK_UNDER_ASAN();
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  const std::string pidfile = MakeTempDir() + "/daemon.pid";
  LifecycleRun run = Lifecycle({"daemon", pidfile}, {});
  // The parent of daemon() ends with _exit(0) at once (after its 0.2 s).
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_TRUE(HoldsBurn(run.dir + "/out.folded"));
  // The daemon runs on (0.3 s) and writes its pid, then its profile as it exits: wait for
  // the profile with a deadline.
  std::string pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pid.empty() && FileExists(pidfile)) {
      pid = ReadFile(pidfile);
      while (!pid.empty() && pid.back() == '\n') pid.pop_back();
    }
    if (!pid.empty() && FileExists(run.dir + "/out." + pid + ".folded") &&
        kill(std::stoi(pid), 0) != 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(pid.empty()) << "the daemon never wrote its pid";
  ASSERT_TRUE(FileExists(run.dir + "/out." + pid + ".folded")) << Joined(ListDir(run.dir));
  EXPECT_TRUE(HoldsBurn(run.dir + "/out." + pid + ".folded"));
}

// The five outputs in `dir`, so the write takes a while.
std::string AllOutputs(const std::string& dir) {
  std::string outputs;
  for (const char* o : {"out.folded", "perf.log", "out.json", "out.pb.gz", "out.svg"}) {
    outputs += (outputs.empty() ? "" : ",") + dir + "/" + o;
  }
  return outputs;
}

void ExpectCompleteOutputs(const LifecycleRun& run) {
  std::vector<std::string> names = ListDir(run.dir);
  for (const std::string& name : names) {
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << "left behind: " << name;
  }
  for (const char* name : {"out.folded", "perf.log", "out.json", "out.pb.gz", "out.svg"}) {
    EXPECT_TRUE(FileExists(run.dir + "/" + name)) << name << " missing: " << Joined(names);
  }
  EXPECT_TRUE(HoldsBurn(run.dir + "/out.folded"));
  const std::string svg = ReadFile(run.dir + "/out.svg");
  EXPECT_NE(svg.find("</svg>"), std::string::npos) << "the flame graph is cut short";
}

// The signal arrives from inside the write: the kernel sends it when the write creates its
// first temporary file (dnotify).
TEST(LifecycleTest, ASigtermDuringTheExitWriteLetsItFinishThenKills) {
  LifecycleRun run;
  run.dir = MakeTempDir();
  run.process = RunProcess({INPROF_LIFECYCLE, "term_in_write", run.dir},
                           {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", AllOutputs(run.dir)}});
  EXPECT_EQ(run.process.term_signal, SIGTERM) << "exit " << run.process.exit_code << "\n"
                                              << run.process.err;
  ExpectCompleteOutputs(run);
}

TEST(LifecycleTest, ExitDuringTheSignalsWriteWaitsForIt) {
  LifecycleRun run;
  run.dir = MakeTempDir();
  const std::string outputs = AllOutputs(run.dir);
  run.process = RunProcess({INPROF_LIFECYCLE, "exit_in_write", run.dir},
                           {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", outputs}});
  EXPECT_EQ(run.process.term_signal, SIGTERM) << "exit " << run.process.exit_code << "\n"
                                              << run.process.err;
  ExpectCompleteOutputs(run);
}

}  // namespace
}  // namespace inprof::test
