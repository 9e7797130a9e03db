// Threads whose sampling setup fails run normally and are counted; thread churn, exceptions
// under DWARF unwinding and concurrent start/stop/dump calls neither crash nor hang.
// Programs run preloaded, as users run them (fixtures/thread_failure_program.cpp), or linked
// with the C API (fixtures/thread_failure_storm.cpp). Every child runs under a watchdog: a
// child still running after its deadline is killed and the test fails.
#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "test_util.h"

namespace inprof::test {
namespace {

#if defined(INPROF_SANITIZED_BUILD)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::atomic<int> g_child{0};

// RunProcess with a deadline: past it the child is killed (SIGKILL) and `hung` set.
struct WatchedRun {
  ProcessResult process;
  bool hung = false;
};

WatchedRun RunWatched(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env,
                      std::chrono::seconds deadline) {
  WatchedRun run;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  g_child.store(0);
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, deadline, [&] { return done; })) {
      if (const int pid = g_child.load(); pid > 0) {
        run.hung = true;
        kill(pid, SIGKILL);
      }
    }
  });
  run.process = RunProcess(argv, env, [](int pid) { g_child.store(pid); });
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  return run;
}

std::string Describe(const WatchedRun& run) {
  return "exit " + std::to_string(run.process.exit_code) + ", signal " +
         std::to_string(run.process.term_signal) + (run.hung ? " (hung: killed)" : "") +
         "\nstdout:\n" + run.process.out + "\nstderr:\n" + run.process.err;
}

// "N threads could not be set up for sampling and ran unsampled: <reason>" from the summary
// on stderr; 0 when absent.
uint64_t FailedThreads(const std::string& err, std::string* reason = nullptr) {
  std::smatch m;
  if (!std::regex_search(err, m,
                         std::regex(R"((\d+) threads? could not be set up for sampling and ran )"
                                    R"(unsampled: ([^\n]*))"))) {
    return 0;
  }
  if (reason != nullptr) *reason = m[2].str();
  return std::stoull(m[1].str());
}

uint64_t SummaryThreads(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(R"(inprof: engine=\S+ .* threads=(\d+) )"))) return 0;
  return std::stoull(m[1].str());
}

struct ManyRun {
  WatchedRun run;
  std::string dir;
  int workers_sampled = 0;      // tf-worker threads in the health block
  uint64_t worker_samples = 0;  // their samples
};

// `threads` workers alive at once after the program lowered `limit` to leave `spare`.
ManyRun RunMany(int threads, const std::string& limit, long spare,
                std::map<std::string, std::string> env) {
  ManyRun many;
  many.dir = MakeTempDir();
  env["LD_PRELOAD"] = PreloadValue();
  env["INPROF_OUTPUT"] = many.dir + "/out.folded," + many.dir + "/profile.json";
  many.run = RunWatched({INPROF_THREAD_FAILURE_PROGRAM, "many", std::to_string(threads), limit,
                         std::to_string(spare)},
                        env, std::chrono::seconds(120));
  Annotations annotations;
  if (ReadAnnotationJson(ReadFile(many.dir + "/profile.json"), "profile.json", &annotations).ok()) {
    for (const ThreadHealth& t : annotations.health.threads) {
      if (t.name != "tf-worker") continue;
      ++many.workers_sampled;
      many.worker_samples += t.taken;
    }
  }
  return many;
}

// What every failure test checks: the program's threads all did their work, the process
// exited normally, the threads that could not be set up are counted with `reason`, and the
// threads that were set up were sampled.
void ExpectUnsampledThreadsCounted(const ManyRun& many, int threads, const std::string& reason) {
  const WatchedRun& run = many.run;
  ASSERT_FALSE(run.hung) << Describe(run);
  ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
  EXPECT_NE(run.process.out.find("threads=" + std::to_string(threads) +
                                 " completed=" + std::to_string(threads)),
            std::string::npos)
      << Describe(run);
  std::string why;
  const uint64_t failed = FailedThreads(run.process.err, &why);
  // Most workers cannot be set up, and each one is counted once: with the ones that were
  // set up they are all the workers (the health block lists every sampled thread by name).
  // A thread the program did not make (qemu-user's own, which the profiler's scan finds like
  // any other) may be one whose setup failed too, when the scan first met it after the limit
  // was set: the program counts them, none natively.
  std::smatch foreign_match;
  uint64_t foreign = 0;
  if (std::regex_search(run.process.out, foreign_match, std::regex(R"( foreign=(\d+))"))) {
    foreign = std::stoull(foreign_match[1].str());
  }
  EXPECT_GE(failed, static_cast<uint64_t>(threads / 2)) << Describe(run);
  EXPECT_GE(failed + static_cast<uint64_t>(many.workers_sampled), static_cast<uint64_t>(threads))
      << Describe(run);
  EXPECT_LE(failed + static_cast<uint64_t>(many.workers_sampled),
            static_cast<uint64_t>(threads) + foreign)
      << Describe(run);
  EXPECT_NE(why.find(reason), std::string::npos) << why;
  EXPECT_LE(why.size(), 200u);
  // The main thread was set up before the limit: it and the workers that were set up are
  // sampled, and the profile is written.
  EXPECT_GE(many.workers_sampled, 1) << Describe(run);
  EXPECT_GT(many.worker_samples, 0u) << Describe(run);
  EXPECT_FALSE(ReadFolded(many.dir + "/out.folded").empty());
}

// Address space: each thread's stack copies (unwind=dwarf: 8 copies of INPROF_STACK_BYTES)
// are one mapping; with 1 MiB copies and 40 MiB of address space left, four or five
// threads get theirs and the rest cannot. The workers' own stacks are the program's, mapped
// before the limit, so only the profiler's memory is refused.
TEST(ThreadFailureTest, ThreadsWhoseStackCopiesCannotBeMappedRunUnsampled) {
  if (kSanitized) {
    GTEST_SKIP() << "RLIMIT_AS cannot work under AddressSanitizer: its shadow memory reserves "
                    "terabytes of address space";
  }
  // qemu-user maps the whole guest address space up front, so RLIMIT_AS refuses everything
  // (or nothing) there: the aarch64 lane cannot run this test.
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "RLIMIT_AS does not work under qemu-user";
  for (const char* unwind : {"dwarf", "auto"}) {
    SCOPED_TRACE(unwind);
    // One malloc arena: a thread's first malloc would otherwise try to reserve a 64 MiB
    // arena of its own, which the limit refuses (harmlessly, but the budget gets noisy).
    ManyRun many = RunMany(32, "as", 40,
                           {{"INPROF_UNWIND", unwind},
                            {"INPROF_STACK_BYTES", "1M"},
                            {"INPROF_FREQUENCY", "250"},
                            {"MALLOC_ARENA_MAX", "1"}});
    ExpectUnsampledThreadsCounted(many, 32, "cannot map stack copies (Cannot allocate memory)");
  }
}

// The stack-copy budget: with 1 MiB copies (8 MiB of rings per thread) and a 24 MiB budget,
// the first threads get rings and the rest are sampled all the same, by frame-pointer walks,
// and counted in one warning: memory does not grow with the thread count.
TEST(ThreadFailureTest, ThreadsBeyondTheStackCopyBudgetAreSampledWithFramePointers) {
  ManyRun many = RunMany(32, "none", 0,
                         {{"INPROF_UNWIND", "dwarf"},
                          {"INPROF_STACK_BYTES", "1M"},
                          {"INPROF_MAX_COPY_MEMORY", "24M"},
                          {"INPROF_FREQUENCY", "250"}});
  const WatchedRun& run = many.run;
  ASSERT_FALSE(run.hung) << Describe(run);
  ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
  // Every worker is sampled: none is refused for the budget. (A worker may still be refused
  // a timer when other processes of this user hold most of RLIMIT_SIGPENDING, as under the
  // emulated lane's parallel tests: that is counted with its own reason.)
  std::string why;
  const uint64_t failed = FailedThreads(run.process.err, &why);
  EXPECT_EQ(static_cast<uint64_t>(many.workers_sampled) + failed, 32u) << Describe(run);
  if (failed > 0) {
    EXPECT_EQ(why.find("stack copies"), std::string::npos) << why;
  }
  EXPECT_LE(failed, 4u) << why;
  // Two rings (8 MiB and their records each) fit in 24 MiB: the main thread and one worker
  // got them, the other workers did not.
  const size_t at = run.process.err.find(" threads were sampled with frame pointers only");
  ASSERT_NE(at, std::string::npos) << Describe(run);
  const size_t start = run.process.err.find_last_not_of("0123456789", at - 1) + 1;
  const int beyond = std::stoi(run.process.err.substr(start, at - start));
  EXPECT_GE(beyond, 29) << Describe(run);
  // A thread whose setup failed after the budget check is counted again when it is retried.
  EXPECT_LE(beyond, 32 + 4 * static_cast<int>(failed)) << Describe(run);
}

// File descriptors: the perf engine opens one per thread.
TEST(ThreadFailureTest, ThreadsWithoutAPerfFdRunUnsampled) {
  ManyRun many = RunMany(32, "nofile", 4, {{"INPROF_ENGINE", "perf"}, {"INPROF_FREQUENCY", "997"}});
  if (many.run.process.err.find("engine=perf:") != std::string::npos) {
    GTEST_SKIP() << "perf_event is not available here: " << many.run.process.err;
  }
  ExpectUnsampledThreadsCounted(many, 32, "perf_event_open: EMFILE");
}

// POSIX timers: timer_create preallocates the timer's signal, which counts against the
// user's RLIMIT_SIGPENDING (ulimit -i); past it the kernel answers EAGAIN. The count is per
// user, so other processes of the same user can only make more threads fail here.
TEST(ThreadFailureTest, ThreadsWithoutATimerRunUnsampled) {
  ManyRun many =
      RunMany(32, "sigpending", 4, {{"INPROF_ENGINE", "timer"}, {"INPROF_FREQUENCY", "250"}});
  ExpectUnsampledThreadsCounted(many, 32, "timer_create: EAGAIN");
}

// 10,000 short threads created and joined in batches while sampling at a high rate: all of
// them are registered and retired (threads seen), none is left behind (no setup failure),
// and memory does not grow with the number of threads.
class ChurnTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ChurnTest, TenThousandShortThreadsLeaveNothingBehind) {
  if (!EmulatorPrefix().empty()) {
    GTEST_SKIP() << "20,000 thread creations under qemu-user take minutes; the registry's "
                    "churn handling has no architecture-specific code";
  }
  long rss_kb[2] = {0, 0};
  const int counts[2] = {2000, 10000};
  for (int i = 0; i < 2; ++i) {
    const std::string dir = MakeTempDir();
    WatchedRun run =
        RunWatched({INPROF_THREAD_FAILURE_PROGRAM, "churn", std::to_string(counts[i]), "50"},
                   {{"LD_PRELOAD", PreloadValue()},
                    {"INPROF_OUTPUT", dir + "/out.folded"},
                    {"INPROF_UNWIND", GetParam()},
                    {"INPROF_FREQUENCY", "1000"}},
                   std::chrono::seconds(240));
    ASSERT_FALSE(run.hung) << Describe(run);
    ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(run.process.out, m, std::regex(R"(threads=(\d+) wrong=0 rss_kb=(\d+))")))
        << Describe(run);
    rss_kb[i] = std::stol(m[2].str());
    // Every thread registered itself before its start routine (and the main thread).
    const uint64_t seen = SummaryThreads(run.process.err);
    EXPECT_GE(seen, static_cast<uint64_t>(counts[i]) * 99 / 100) << Describe(run);
    EXPECT_LE(seen, static_cast<uint64_t>(counts[i]) + 10) << Describe(run);
    EXPECT_EQ(FailedThreads(run.process.err), 0u) << Describe(run);
    // A worker's CPU time is its work (0.1-0.3 ms), so none is owed the 100 samples past
    // which the summary names a thread that got too few; only the main thread may be named
    // (its CPU time is mostly in the kernel, creating and joining, which perf's task-clock
    // does not sample). A thread that its sampling interrupts without pause (a first perf
    // period of microseconds, which the kernel re-arms until the handler replaces it, on a
    // machine where an interrupt costs about as much) ran for up to a second inside its first
    // signal, got almost none, and was named there: 20-30 of them per run.
    // (Retired threads past the registry's record cap are summed as thread 0, "[other
    // threads]": thousands of them together are owed many samples, and their time in the
    // kernel is short of them too. Only real threads are counted.)
    const std::regex short_thread(
        R"(thread [1-9][0-9]* \(.*\) got [0-9]+% of the samples its CPU time should give)");
    const auto named = std::distance(
        std::sregex_iterator(run.process.err.begin(), run.process.err.end(), short_thread),
        std::sregex_iterator());
    EXPECT_LE(named, 1) << Describe(run);
  }
  // Per-thread memory is released (rings pooled or unmapped, records capped): five times the
  // threads, about the same resident size. A leak of 2 KiB per thread would add 16 MiB;
  // one ring (31 records) or one set of stack copies (128 KiB) per thread far more. (Not
  // under AddressSanitizer: its quarantine of freed memory dominates the resident size.)
  if (kSanitized) return;
  EXPECT_LT(rss_kb[1], rss_kb[0] + 16 * 1024)
      << "2000 threads: " << rss_kb[0] << " KiB, 10000 threads: " << rss_kb[1] << " KiB";
}

INSTANTIATE_TEST_SUITE_P(Unwinders, ChurnTest, ::testing::Values("fp", "dwarf", "auto"));

// The C++ runtime's own unwinder (reading .eh_frame under the loader's lock) runs on every
// thread while sampling signals interrupt it and the collector unwinds stack copies.
class ExceptionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExceptionTest, ExceptionsThrownAndCaughtWhileDwarfUnwindingRuns) {
  const std::string dir = MakeTempDir();
  const std::string iterations = EmulatorPrefix().empty() ? "200000" : "20000";
  WatchedRun run = RunWatched({INPROF_THREAD_FAILURE_PROGRAM, "throw", "4", iterations},
                              {{"LD_PRELOAD", PreloadValue()},
                               {"INPROF_OUTPUT", dir + "/out.folded"},
                               {"INPROF_UNWIND", GetParam()},
                               {"INPROF_FREQUENCY", "1000"}},
                              std::chrono::seconds(240));
  ASSERT_FALSE(run.hung) << Describe(run);
  ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
  // The program checked every thread's counts of each exception type.
  EXPECT_NE(run.process.out.find("threads=5 iterations=" + iterations + " bad=0"),
            std::string::npos)
      << Describe(run);
  // And the profile saw the loop: samples were taken inside the throwing code.
  int64_t in_loop = 0;
  for (const FoldedStack& s : ReadFolded(dir + "/out.folded")) {
    for (const std::string& f : s.frames) {
      if (f.find("throw_loop") != std::string::npos) {
        in_loop += s.count;
        break;
      }
    }
  }
  EXPECT_GT(in_loop, 0) << Describe(run);
}

INSTANTIATE_TEST_SUITE_P(Unwinders, ExceptionTest, ::testing::Values("dwarf", "auto"));

// inprof_start/stop/dump/is_running from eight threads at once, in a loop: every call
// returns a status inprof.h documents for it (the program checks and counts), nothing
// crashes, nothing deadlocks (the watchdog), and the profiler ends stopped.
TEST(ThreadFailureTest, StartStopDumpStormsFromManyThreads) {
  const std::string dir = MakeTempDir();
  const std::string iterations = EmulatorPrefix().empty() ? "400" : "60";
  WatchedRun run = RunWatched({INPROF_THREAD_FAILURE_STORM, dir, "8", iterations}, {},
                              std::chrono::seconds(180));
  ASSERT_FALSE(run.hung) << Describe(run);
  ASSERT_EQ(run.process.term_signal, 0) << Describe(run);
  ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
  EXPECT_NE(run.process.out.find("unexpected=0"), std::string::npos) << Describe(run);
  // Starts and stops both succeeded: the storm really started and stopped sessions.
  EXPECT_TRUE(std::regex_search(run.process.out, std::regex(R"(start: 0=[1-9])")))
      << run.process.out;
  EXPECT_TRUE(std::regex_search(run.process.out, std::regex(R"(stop: 0=[1-9])")))
      << run.process.out;
}

// A stop storm: sessions started and stopped as fast as eight threads can call the C API
// while eight more threads compute, at 4999 Hz (the perf engine where permitted, else timers
// capped by the tick). Every stop retires slots whose threads may be inside the handler on
// another CPU at that moment, copying a stack into their rings; the rings must outlive those
// handlers (docs/signals.md "Stopping"). Under AddressSanitizer a ring freed or given back
// too early is a use after free or a null dereference, so the sanitizer lane is where this
// test bites.
class StopStormTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StopStormTest, StopsWhileBusyThreadsAreSampledFreeNothingInUse) {
  const std::string dir = MakeTempDir();
  const std::string iterations = EmulatorPrefix().empty() ? "60" : "10";
  WatchedRun run = RunWatched(
      {INPROF_THREAD_FAILURE_STORM, dir, "8", iterations, GetParam(), "4999", "8"}, {},
      std::chrono::seconds(180));
  ASSERT_FALSE(run.hung) << Describe(run);
  ASSERT_EQ(run.process.term_signal, 0) << Describe(run);
  ASSERT_EQ(run.process.exit_code, 0) << Describe(run);
  EXPECT_NE(run.process.out.find("unexpected=0"), std::string::npos) << Describe(run);
  EXPECT_EQ(run.process.err.find("runtime error"), std::string::npos) << Describe(run);
  EXPECT_EQ(run.process.err.find("AddressSanitizer"), std::string::npos) << Describe(run);
  EXPECT_TRUE(std::regex_search(run.process.out, std::regex(R"(stop: 0=[1-9])")))
      << run.process.out;
}

INSTANTIATE_TEST_SUITE_P(Unwinders, StopStormTest, ::testing::Values("fp", "dwarf"));

}  // namespace
}  // namespace inprof::test
