// The public API used in process, as a program that links libinprof does.
#include <inprof/inprof.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <inprof/inprof.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using inprof::test::FileExists;
using inprof::test::FoldedStack;
using inprof::test::MakeTempDir;
using inprof::test::ReadFile;
using inprof::test::ReadFolded;

volatile double g_sink;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

extern "C" __attribute__((noinline)) void api_test_busy(double seconds) {
  const double end = CpuSeconds() + seconds;
  double x = g_sink;
  while (CpuSeconds() < end) {
    for (int i = 0; i < 10000; ++i) x = x * 0.999999 + 1.0;
  }
  g_sink = x;
  asm volatile("" ::: "memory");
}

// The busy loop's own callees count as its work: under an emulator the clock it reads is a
// system call that takes a tenth of the loop's samples.
bool InBusyLoop(const FoldedStack& s) {
  return std::find(s.frames.begin(), s.frames.end(), "api_test_busy") != s.frames.end();
}

// The folded profile holds more than 20 samples, over 80 % of them in api_test_busy.
void ExpectBusyDominates(const std::string& folded) {
  int64_t busy = 0, total = 0;
  for (const auto& s : ReadFolded(folded)) {
    total += s.count;
    if (InBusyLoop(s)) busy += s.count;
  }
  EXPECT_GT(total, 20) << folded;
  EXPECT_GT(busy * 10, total * 8) << "api_test_busy should dominate " << folded;
}

class ApiTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (inprof_is_running()) inprof_stop();
  }
  std::string dir_ = MakeTempDir();
};

// First in the file: with the whole suite in one process, nothing has started yet (a stopped
// profile stays dumpable until the next start).
TEST_F(ApiTest, DumpBeforeAnyStartIsAnError) {
  EXPECT_EQ(inprof_dump((dir_ + "/x.folded").c_str()), INPROF_ERR_NOT_STARTED);
  EXPECT_NE(std::string(inprof_last_error()).find("inprof_dump: no profile is running"),
            std::string::npos)
      << inprof_last_error();
  EXPECT_FALSE(FileExists(dir_ + "/x.folded"));
}

TEST_F(ApiTest, ProfilesThisProcessAndWritesConfiguredOutputsAtStop) {
  const std::string folded = dir_ + "/out.folded";
  const std::string perf = dir_ + "/perf.log";
  const std::string config = "frequency=499,quiet=1,output=" + folded + "," + perf;
  ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << inprof_last_error();
  EXPECT_EQ(inprof_is_running(), 1);
  api_test_busy(0.4);
  ASSERT_EQ(inprof_stop(), INPROF_OK) << inprof_last_error();
  EXPECT_EQ(inprof_is_running(), 0);
  ExpectBusyDominates(folded);
  const std::string log = ReadFile(perf);
  EXPECT_NE(log.find("api_test_busy " + std::string(INPROF_TEST_SOURCE)), std::string::npos)
      << log.substr(0, 2000);
}

TEST_F(ApiTest, StartStopDumpManyTimes) {
  for (int i = 0; i < 25; ++i) {
    const std::string out = dir_ + "/run" + std::to_string(i) + ".folded";
    const std::string config = "quiet=1,frequency=997,output=" + out;
    const std::string mid = dir_ + "/mid" + std::to_string(i) + ".folded";
    ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << i << ": " << inprof_last_error();
    // Busy until the profile holds a sample (a profile without one writes nothing at stop);
    // 10 ms is about ten periods natively, and may be none under an emulator.
    int attempts = 0;
    do {
      api_test_busy(0.01);
      ASSERT_EQ(inprof_dump(mid.c_str()), INPROF_OK) << inprof_last_error();
    } while (ReadFolded(mid).empty() && ++attempts < 300);
    ASSERT_FALSE(ReadFolded(mid).empty()) << i << ": no sample in 3 s of CPU time";
    ASSERT_EQ(inprof_stop(), INPROF_OK) << inprof_last_error();
    EXPECT_TRUE(FileExists(out)) << i;
  }
}

// A program's own calls into the runtime (start, dumps, stop) run on its thread, under its
// timer: the samples taken there are the profiler's work (symbolizing, writing, the thread
// scan), not the program's, and none of the runtime's frames may show in its profile.
TEST_F(ApiTest, TheRuntimesWorkOnTheProgramsThreadsIsLeftOut) {
  const std::string out = dir_ + "/own.folded";
  const std::string config = "quiet=1,frequency=997,output=" + out;
  const std::string dumps = dir_ + "/d.folded," + dir_ + "/d.log," + dir_ + "/d.json," +
                            dir_ + "/d.pb.gz";
  for (int round = 0; round < 4; ++round) {
    ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << inprof_last_error();
    for (int i = 0; i < 15; ++i) {
      api_test_busy(0.004);
      ASSERT_EQ(inprof_dump(dumps.c_str()), INPROF_OK) << inprof_last_error();
    }
    ASSERT_EQ(inprof_stop(), INPROF_OK) << inprof_last_error();
  }
  int64_t total = 0, busy = 0;
  for (const auto& s : ReadFolded(out)) {
    total += s.count;
    if (InBusyLoop(s)) busy += s.count;
    for (const std::string& f : s.frames) {
      EXPECT_EQ(f.find("inprof::"), std::string::npos) << f << " in a stack of " << s.count;
    }
  }
  EXPECT_GT(total, 20) << ReadFile(out);
  EXPECT_GT(busy * 10, total * 9) << ReadFile(out);
}

TEST_F(ApiTest, DumpAfterStopWritesTheStoppedProfile) {
  ASSERT_EQ(inprof_start("frequency=499,quiet=1"), INPROF_OK) << inprof_last_error();
  api_test_busy(0.4);
  ASSERT_EQ(inprof_stop(), INPROF_OK) << inprof_last_error();
  const std::string folded = dir_ + "/after_stop.folded";
  ASSERT_EQ(inprof_dump(folded.c_str()), INPROF_OK) << inprof_last_error();
  ExpectBusyDominates(folded);
  // Stopping twice is still an error.
  EXPECT_EQ(inprof_stop(), INPROF_ERR_NOT_STARTED);
  {
    // The C++ wrapper: Stop, then Dump.
    inprof::Profiler profiler("frequency=499,quiet=1");
    ASSERT_TRUE(profiler.ok()) << profiler.error();
    api_test_busy(0.2);
    EXPECT_EQ(profiler.Stop(), INPROF_OK) << profiler.error();
    EXPECT_EQ(profiler.Dump((dir_ + "/after_stop_cxx.folded").c_str()), INPROF_OK)
        << profiler.error();
  }
  EXPECT_FALSE(ReadFolded(dir_ + "/after_stop_cxx.folded").empty());
  // The next start replaces it: a dump now writes the new profile.
  ASSERT_EQ(inprof_start("frequency=499,quiet=1"), INPROF_OK) << inprof_last_error();
  ASSERT_EQ(inprof_stop(), INPROF_OK);
  ASSERT_EQ(inprof_dump((dir_ + "/empty.folded").c_str()), INPROF_OK) << inprof_last_error();
  int64_t again = 0;
  for (const auto& s : ReadFolded(dir_ + "/empty.folded")) {
    if (s.frames.back() == "api_test_busy") again += s.count;
  }
  EXPECT_EQ(again, 0) << "the dump after the second stop is the second profile";
}

TEST_F(ApiTest, ConcurrentDumpsAreSafe) {
  ASSERT_EQ(inprof_start("quiet=1,frequency=997"), INPROF_OK) << inprof_last_error();
  std::atomic<int> failures{0};
  std::vector<std::thread> dumpers;
  for (int t = 0; t < 4; ++t) {
    dumpers.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        std::string out = dir_ + "/d" + std::to_string(t) + "_" + std::to_string(i) + ".folded," +
                          dir_ + "/d" + std::to_string(t) + "_" + std::to_string(i) + ".log";
        if (inprof_dump(out.c_str()) != INPROF_OK) ++failures;
        api_test_busy(0.005);
      }
    });
  }
  api_test_busy(0.3);
  for (auto& t : dumpers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(inprof_stop(), INPROF_OK);
  EXPECT_TRUE(FileExists(dir_ + "/d3_7.folded"));
}

TEST_F(ApiTest, LifecycleErrorsHaveCodesAndMessages) {
  EXPECT_EQ(inprof_stop(), INPROF_ERR_NOT_STARTED);
  EXPECT_NE(std::string(inprof_last_error()).find("no profile is running"), std::string::npos);
  ASSERT_EQ(inprof_start("quiet=1"), INPROF_OK);
  EXPECT_EQ(inprof_start("quiet=1"), INPROF_ERR_ALREADY_STARTED);
  EXPECT_EQ(inprof_dump(nullptr), INPROF_ERR_OUTPUT) << "no outputs configured";
  EXPECT_EQ(inprof_stop(), INPROF_OK);
  for (int code : std::initializer_list<int>{
           INPROF_OK, INPROF_ERR_CONFIG, INPROF_ERR_ALREADY_STARTED, INPROF_ERR_NOT_STARTED,
           INPROF_ERR_OUTPUT, INPROF_ERR_SYSTEM, INPROF_ERR_INTERNAL, 12345}) {
    EXPECT_STRNE(inprof_strerror(code), "");
  }
}

TEST_F(ApiTest, BadConfigurationIsRejectedAndNothingRuns) {
  for (const char* bad : {"bogus=1", "frequency=fast", "output=/nonexistent-dir/p.folded",
                          "output=profile.txt", "max_depth=0", "signal=SIGKILL"}) {
    EXPECT_EQ(inprof_start(bad), INPROF_ERR_CONFIG) << bad;
    EXPECT_STRNE(inprof_last_error(), "") << bad;
    EXPECT_EQ(inprof_is_running(), 0) << bad;
  }
  EXPECT_NE(std::string((inprof_start("bogus=1"), inprof_last_error())).find("bogus"),
            std::string::npos);
}

TEST_F(ApiTest, AFailedOutputDoesNotStopTheOthers) {
  ASSERT_EQ(inprof_start("quiet=1,frequency=997"), INPROF_OK);
  api_test_busy(0.05);
  const std::string good = dir_ + "/good.folded";
  // The parent of this path is a regular file: no one can write there, root included.
  const std::string blocker = dir_ + "/blocker";
  ASSERT_EQ(inprof_dump(good.c_str()), INPROF_OK);
  FILE* f = std::fopen(blocker.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  std::remove(good.c_str());
  const std::string both = blocker + "/x.folded," + good;
  EXPECT_EQ(inprof_dump(both.c_str()), INPROF_ERR_OUTPUT);
  EXPECT_NE(std::string(inprof_last_error()).find(blocker), std::string::npos)
      << inprof_last_error();
  EXPECT_TRUE(FileExists(good));
  EXPECT_EQ(inprof_stop(), INPROF_OK);
}

std::atomic<int> g_foreign_signals{0};

TEST_F(ApiTest, SignalsWeDidNotArmReachThePreviousHandler) {
  struct sigaction mine = {}, saved = {};
  mine.sa_handler = [](int) { g_foreign_signals.fetch_add(1); };
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(SIGPROF, &mine, &saved), 0);
  ASSERT_EQ(inprof_start("quiet=1"), INPROF_OK);
  raise(SIGPROF);  // SI_TKILL: not one of our timer signals
  raise(SIGPROF);
  EXPECT_EQ(g_foreign_signals.load(), 2);
  ASSERT_EQ(inprof_stop(), INPROF_OK);
  struct sigaction now = {};
  sigaction(SIGPROF, nullptr, &now);
  EXPECT_EQ(reinterpret_cast<void*>(now.sa_handler), reinterpret_cast<void*>(mine.sa_handler))
      << "stop must restore the program's handler";
  sigaction(SIGPROF, &saved, nullptr);
}

TEST_F(ApiTest, CppWrapperStopsAndWritesInItsDestructor) {
  const std::string out = dir_ + "/raii.folded";
  {
    inprof::Profiler profiler(("quiet=1,frequency=997,output=" + out).c_str());
    ASSERT_TRUE(profiler.ok()) << profiler.error();
    api_test_busy(0.05);
    EXPECT_EQ(profiler.Dump((dir_ + "/raii_mid.folded").c_str()), INPROF_OK);
  }
  EXPECT_EQ(inprof_is_running(), 0);
  EXPECT_TRUE(FileExists(out));
  inprof::Profiler bad("frequency=nope");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("frequency"), std::string::npos);
}

TEST_F(ApiTest, ThreadsStartedWhileProfilingAreSampled) {
  const std::string out = dir_ + "/threads.folded";
  ASSERT_EQ(inprof_start(("quiet=1,frequency=997,output=" + out).c_str()), INPROF_OK);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([] { api_test_busy(0.1); });
  for (auto& t : threads) t.join();
  ASSERT_EQ(inprof_stop(), INPROF_OK);
  int64_t busy = 0;
  for (const auto& s : ReadFolded(out)) {
    // Inclusive: the clock_gettime it calls is its time too (under qemu-user, without a
    // vDSO, a large part of it).
    if (std::find(s.frames.begin(), s.frames.end(), "api_test_busy") != s.frames.end()) {
      busy += s.count;
    }
  }
  // 0.4 CPU-seconds at 997 Hz, weighted by overruns: about 400.
  EXPECT_GT(busy, 300);
  EXPECT_LT(busy, 500);
}

}  // namespace

// Labels through the public API, without a profile running (they may be set any time).
namespace {

void* volatile g_kept_blocks[256];

extern "C" __attribute__((noinline)) void api_test_keep_blocks(int n) {
  for (int i = 0; i < n && i < 256; ++i) g_kept_blocks[i] = malloc(1 << 20);
}

// inprof_heap_snapshot: the allocation events now, what is live first, while profiling goes
// on; refused (and nothing written) when allocations are not sampled.
TEST_F(ApiTest, HeapSnapshotWritesWhatIsLiveNow) {
#if defined(INPROF_SANITIZED_BUILD)
  GTEST_SKIP() << "the sanitizer's runtime defines malloc before the runtime's hooks";
#endif
  const std::string cpu_only = "quiet=1,output=" + dir_ + "/cpu.folded";
  ASSERT_EQ(inprof_start(cpu_only.c_str()), INPROF_OK) << inprof_last_error();
  EXPECT_EQ(inprof_heap_snapshot((dir_ + "/no.folded").c_str()), INPROF_ERR_NOT_STARTED);
  EXPECT_NE(std::string(inprof_last_error()).find("allocations are not sampled"),
            std::string::npos)
      << inprof_last_error();
  EXPECT_FALSE(FileExists(dir_ + "/no.folded"));
  ASSERT_EQ(inprof_stop(), INPROF_OK);

  const std::string config = "quiet=1,events=alloc,alloc_rate=64K,output=" + dir_ + "/a.folded";
  ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << inprof_last_error();
  const std::string first = dir_ + "/heap.folded";
  {
    api_test_keep_blocks(100);  // 1 MiB blocks: each sampled
    ASSERT_EQ(inprof_heap_snapshot(first.c_str()), INPROF_OK) << inprof_last_error();
    EXPECT_TRUE(inprof_is_running());
    // The first event of the snapshot is inuse_space: one file per event, its name first.
    int64_t live = 0;
    for (const auto& s : ReadFolded(dir_ + "/heap.inuse_space.folded")) {
      if (s.frames.back() == "api_test_keep_blocks") live += s.count;
    }
    for (void* p : g_kept_blocks) free(p);
    EXPECT_NEAR(static_cast<double>(live), 100.0 * (1 << 20), 0.01 * 100 * (1 << 20));
  }
  ASSERT_EQ(inprof_stop(), INPROF_OK);
}

TEST(Labels, SameLabelsAreOneSetWhateverBufferTheyCameFrom) {
  inprof_label_clear(nullptr);
  const inprof_labels_t none = inprof_labels_save();
  EXPECT_EQ(none, 0u);
  ASSERT_EQ(inprof_label_set("endpoint", "/api/users"), INPROF_OK);
  const inprof_labels_t users = inprof_labels_save();
  EXPECT_NE(users, 0u);
  inprof_label_clear(nullptr);
  char buffer[32] = "/api/users";
  ASSERT_EQ(inprof_label_set("endpoint", buffer), INPROF_OK);
  EXPECT_EQ(inprof_labels_save(), users);
  // The same buffer with other text: the thread's cache must not answer with the old set.
  std::snprintf(buffer, sizeof buffer, "/api/orders");
  ASSERT_EQ(inprof_label_set("endpoint", buffer), INPROF_OK);
  const inprof_labels_t orders = inprof_labels_save();
  EXPECT_NE(orders, users);
  std::snprintf(buffer, sizeof buffer, "/api/users");
  ASSERT_EQ(inprof_label_set("endpoint", buffer), INPROF_OK);
  EXPECT_EQ(inprof_labels_save(), users);
  // Replacing a value and removing a key move between the same sets every time.
  ASSERT_EQ(inprof_label_set("tenant", "acme"), INPROF_OK);
  const inprof_labels_t both = inprof_labels_save();
  ASSERT_EQ(inprof_label_clear("tenant"), INPROF_OK);
  EXPECT_EQ(inprof_labels_save(), users);
  ASSERT_EQ(inprof_label_set("tenant", "acme"), INPROF_OK);
  EXPECT_EQ(inprof_labels_save(), both);
  ASSERT_EQ(inprof_label_clear("absent"), INPROF_OK);
  EXPECT_EQ(inprof_labels_save(), both);
  inprof_label_clear(nullptr);
}

TEST(Labels, ScopedLabelsNestAndRestore) {
  inprof_label_clear(nullptr);
  inprof_label_set("job", "nightly");
  const inprof_labels_t outer = inprof_labels_save();
  {
    inprof::ScopedLabel a("endpoint", "/a");
    EXPECT_TRUE(a.ok());
    const inprof_labels_t with_a = inprof_labels_save();
    {
      inprof::ScopedLabel b("endpoint", "/b");
      EXPECT_NE(inprof_labels_save(), with_a);
    }
    EXPECT_EQ(inprof_labels_save(), with_a);
  }
  EXPECT_EQ(inprof_labels_save(), outer);
  inprof_label_clear(nullptr);
}

TEST(Labels, BadKeysAndValuesChangeNothingAndSayWhy) {
  inprof_label_clear(nullptr);
  inprof_label_set("endpoint", "/a");
  const inprof_labels_t before = inprof_labels_save();
  struct Case {
    const char* key;
    const char* value;
    const char* says;
  };
  const std::string long_key(65, 'k');
  const std::string long_value(1025, 'v');
  for (const Case& c : {Case{"9lives", "v", "label key '9lives'"}, Case{"a b", "v", "label key"},
                        Case{"", "v", "1 to 64 bytes"}, Case{long_key.c_str(), "v", "1 to 64 bytes"},
                        Case{"k", "", "1 to 1024 bytes"}, Case{"k", long_value.c_str(), "1 to 1024"},
                        Case{"k", "a\nb", "control characters"}, Case{"k", nullptr, "NULL"},
                        Case{nullptr, "v", "NULL"}}) {
    EXPECT_EQ(inprof_label_set(c.key, c.value), INPROF_ERR_CONFIG) << (c.key ? c.key : "(null)");
    EXPECT_NE(std::string(inprof_last_error()).find(c.says), std::string::npos)
        << inprof_last_error();
    EXPECT_EQ(inprof_labels_save(), before);
  }
  EXPECT_EQ(inprof_labels_restore(0x7fffffff), INPROF_ERR_CONFIG);
  EXPECT_EQ(inprof_labels_save(), before);
  inprof_label_clear(nullptr);
}

TEST(Labels, PastSixteenLabelsTheThreadIsInOverflowUntilItClearsThem) {
  inprof_label_clear(nullptr);
  char key[16];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(key, sizeof key, "k%d", i);
    ASSERT_EQ(inprof_label_set(key, "v"), INPROF_OK) << i;
  }
  const inprof_labels_t sixteen = inprof_labels_save();
  EXPECT_EQ(inprof_label_set("k16", "v"), INPROF_ERR_SYSTEM);
  EXPECT_NE(std::string(inprof_last_error()).find("too many labels"), std::string::npos);
  const inprof_labels_t overflow = inprof_labels_save();
  EXPECT_NE(overflow, sixteen);
  // Every later change is refused too: the thread's real labels are no longer known.
  EXPECT_EQ(inprof_label_set("k17", "v"), INPROF_ERR_SYSTEM);
  EXPECT_EQ(inprof_label_clear("k0"), INPROF_ERR_SYSTEM);
  EXPECT_EQ(inprof_labels_save(), overflow);
  // Clearing them all, or restoring a saved set, ends it.
  ASSERT_EQ(inprof_labels_restore(sixteen), INPROF_OK);
  EXPECT_EQ(inprof_label_set("k0", "w"), INPROF_OK);
  inprof_label_clear(nullptr);
  EXPECT_EQ(inprof_labels_save(), 0u);
  EXPECT_EQ(inprof_label_set("k0", "v"), INPROF_OK);
  inprof_label_clear(nullptr);
}

// A program's signal handler that forks (and the child exits at once), interrupting a thread
// that is setting labels: the fork must not wait for the label table's lock that the
// interrupted thread holds (docs/labels.md). Run in a child of the test, under a deadline.
// The next signal is armed when this one's fork is over, 70 ms later (more than the fork's
// bounded wait for the lock): a periodic timer would fire again during a slow fork (a loaded
// machine, qemu-user) and the thread would never get past the handler.
constexpr struct itimerval kNextFork{{0, 0}, {0, 70000}};
extern "C" void ForkFromHandler(int) {
  const int saved_errno = errno;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, nullptr, 0);
  setitimer(ITIMER_REAL, &kNextFork, nullptr);
  errno = saved_errno;
}

TEST(LabelForkTest, AForkFromASignalHandlerDuringALabelChangeDoesNotHang) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGALRM, ForkFromHandler);
    // A signal 70 ms after the last one's fork: this thread only sets labels, so a good part
    // of the signals land inside the table's lock (16 cached moves, 64 values: most calls
    // intern).
    setitimer(ITIMER_REAL, &kNextFork, nullptr);
    static char values[64][16];
    for (int i = 0; i < 64; ++i) std::snprintf(values[i], sizeof values[i], "v%d", i);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
      if (inprof_label_set("fork_test", values[i % 64]) != INPROF_OK) _exit(3);
    }
    const struct itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    _exit(0);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "the child hung: a fork from its signal handler waited for a lock it held";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
