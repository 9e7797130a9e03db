// The session's parts on their own (the static part inprof_sdk_session, no shared library, no
// signal, no thread of the program sampled): taps, the window clock of continuous mode and
// the export pipeline's window files.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collector/stack_table.h"
#include "config/config.h"
#include "session/export_pipeline.h"
#include "session/taps.h"

namespace inprof::internal {
namespace {

constexpr int64_t kSecond = 1000000000;

// The stacks of a table with their weight for event 0.
std::vector<std::pair<std::vector<uintptr_t>, uint64_t>> Stacks(const StackTable& table) {
  std::vector<std::pair<std::vector<uintptr_t>, uint64_t>> out;
  table.ForEach([&](std::span<const uintptr_t> frames, std::span<const uint64_t> weights) {
    out.emplace_back(std::vector<uintptr_t>(frames.begin(), frames.end()), weights[0]);
  });
  return out;
}

TEST(SessionTapsTest, EveryOpenTapGetsTheSamplesFromItsOpeningOn) {
  Taps taps;
  const uintptr_t early[] = {0x1000, 0x2000};
  taps.Add(early, 1, 0, 0);  // no tap open: nothing keeps it
  const uint64_t first = taps.Open(1 << 20, 1, false);
  ASSERT_NE(first, 0u);
  const uintptr_t stack[] = {0x1100, 0x2000};
  taps.Add(stack, 3, 0, 0);
  const uint64_t second = taps.Open(1 << 20, 1, false);
  ASSERT_NE(second, 0u);
  EXPECT_NE(first, second);
  taps.Add(stack, 2, 0, 0);

  auto a = taps.Take(first);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, first);
  EXPECT_EQ(a->samples, 2u);
  const auto a_stacks = Stacks(a->table);
  ASSERT_EQ(a_stacks.size(), 1u);
  EXPECT_EQ(a_stacks[0].first, (std::vector<uintptr_t>{0x1100, 0x2000}));
  EXPECT_EQ(a_stacks[0].second, 5u);

  auto b = taps.Take(second);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->samples, 1u);
  EXPECT_EQ(Stacks(b->table)[0].second, 2u);
  // Taken means gone.
  EXPECT_FALSE(taps.Take(first).has_value());
  EXPECT_FALSE(taps.Take(12345).has_value());
}

TEST(SessionTapsTest, AtMostKMaxTapsAtOnceAndATakenOneFreesItsPlace) {
  Taps taps;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < Taps::kMaxTaps; ++i) {
    ids.push_back(taps.Open(1 << 16, 1, false));
    ASSERT_NE(ids.back(), 0u);
  }
  EXPECT_EQ(taps.Open(1 << 16, 1, false), 0u);
  ASSERT_TRUE(taps.Take(ids[1]).has_value());
  const uint64_t again = taps.Open(1 << 16, 1, false);
  EXPECT_NE(again, 0u);
  // Ids are not reused: a late request for the taken tap cannot get the new one.
  EXPECT_TRUE(std::find(ids.begin(), ids.end(), again) == ids.end());
}

TEST(SessionTapsTest, ATimelineTapKeepsEachSamplesTime) {
  Taps taps;
  const uint64_t id = taps.Open(1 << 20, 1, true);
  const uintptr_t stack[] = {0x1100, 0x2000};
  taps.Add(stack, 1, 0, 5 * kSecond);
  taps.Add(stack, 1, 0, 6 * kSecond);
  auto tap = taps.Take(id);
  ASSERT_TRUE(tap.has_value());
  EXPECT_EQ(tap->table.timeline().size(), 2u);
}

TEST(ExportWindowClockTest, WindowsCloseOnTheScheduleAndCountTheirOwnSamples) {
  WindowClock clock;
  const int64_t unix0 = 1700000000 * kSecond, mono0 = 50 * kSecond;
  clock.Start(unix0, mono0, 10.0);
  EXPECT_FALSE(clock.Due(mono0 + 10 * kSecond - 1));
  EXPECT_TRUE(clock.Due(mono0 + 10 * kSecond));

  Health health;
  health.samples = 100;
  health.truncated = 4;
  RawWindow first;
  clock.Close(mono0 + 10 * kSecond, unix0 + 10 * kSecond, &health, &first);
  EXPECT_EQ(first.sequence, 0u);
  EXPECT_EQ(first.start_unix_ns, unix0);
  EXPECT_EQ(first.end_unix_ns, unix0 + 10 * kSecond);
  EXPECT_EQ(first.duration_ns, 10 * kSecond);
  EXPECT_EQ(health.samples, 100u);
  EXPECT_EQ(clock.closed(), 1u);

  // The collector closes the next one late (10.5 s in): it is longer, and the one after it
  // is due on the original grid, not 10 s after the late close.
  EXPECT_FALSE(clock.Due(mono0 + 20 * kSecond - 1));
  health = Health{};
  health.samples = 250;  // session totals
  health.truncated = 5;
  RawWindow second;
  clock.Close(mono0 + 20 * kSecond + kSecond / 2, unix0 + 20 * kSecond + kSecond / 2, &health,
              &second);
  EXPECT_EQ(second.sequence, 1u);
  EXPECT_EQ(second.start_unix_ns, unix0 + 10 * kSecond);
  EXPECT_EQ(second.duration_ns, 10 * kSecond + kSecond / 2);
  EXPECT_EQ(health.samples, 150u);  // this window's own
  EXPECT_EQ(health.truncated, 1u);
  EXPECT_FALSE(clock.Due(mono0 + 30 * kSecond - 1));
  EXPECT_TRUE(clock.Due(mono0 + 30 * kSecond));

  // Mid-window, a snapshot counts from the window's start.
  Health now;
  now.samples = 260;
  clock.SinceStart(&now);
  EXPECT_EQ(now.samples, 10u);
}

TEST(ExportWindowClockTest, AClockBehindByMoreThanAWindowStartsAFreshGrid) {
  WindowClock clock;
  clock.Start(0, 0, 1.0);
  Health health;
  RawWindow window;
  // A stopped process resumes 100 s later: one long window, then whole windows from now.
  clock.Close(100 * kSecond, 100 * kSecond, &health, &window);
  EXPECT_EQ(window.duration_ns, 100 * kSecond);
  EXPECT_FALSE(clock.Due(101 * kSecond - 1));
  EXPECT_TRUE(clock.Due(101 * kSecond));
}

class ExportPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/inprof_export_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    config_.outputs = {dir_ + "/out.folded"};
    config_.window = 1;
    config_.keep = 2;
    config_.quiet = true;
  }
  void TearDown() override {
    for (const std::string& f : Files()) unlink((dir_ + "/" + f).c_str());
    rmdir(dir_.c_str());
  }
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') names.push_back(e->d_name);
      }
      closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // A window of one sample, starting `second` seconds into 2023-11-14T22:13:20Z.
  static RawWindow WindowAt(int64_t second, uint64_t sequence) {
    RawWindow w;
    w.start_unix_ns = (1700000000 + second) * kSecond;
    w.end_unix_ns = w.start_unix_ns + kSecond;
    w.duration_ns = kSecond;
    w.sequence = sequence;
    return w;
  }
  // The builder the session would pass: here one stack "main;work" per window.
  static Profile Build(const StackTable&, Health health, int64_t start_unix_ns, int64_t) {
    Profile p;
    p.events.push_back(EventInfo{});
    p.events[0].name = "cpu";
    p.frames.resize(2);
    p.frames[0].function = "main";
    p.frames[1].function = "work";
    Sample s;
    s.frames = {0, 1};
    s.weights = {1};
    p.samples.push_back(s);
    p.health = std::move(health);
    p.meta.start_time_ns = start_unix_ns;
    return p;
  }

  std::string dir_;
  Config config_;
};

TEST_F(ExportPipelineTest, WindowFilesAreStampedAndOnlyTheNewestKeepAreKept) {
  ExportPipeline pipeline(config_, &Build);
  std::vector<uint64_t> told;
  pipeline.AddListener([&](const Window& w) { told.push_back(w.sequence); });
  // No exporter thread started: Finish exports what is queued on the calling thread.
  pipeline.Push(WindowAt(0, 0));
  pipeline.Finish();
  pipeline.Push(WindowAt(1, 1));
  pipeline.Finish();
  EXPECT_EQ(Files(), (std::vector<std::string>{"out.20231114T221320Z.folded",
                                               "out.20231114T221321Z.folded"}));
  pipeline.Push(WindowAt(2, 2));
  pipeline.Finish();
  // keep=2: the oldest file this process wrote is gone.
  EXPECT_EQ(Files(), (std::vector<std::string>{"out.20231114T221321Z.folded",
                                               "out.20231114T221322Z.folded"}));
  EXPECT_EQ(told, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(pipeline.windows_exported(), 3u);
  const std::string summary = pipeline.SummaryLines(3);
  EXPECT_NE(summary.find("3 of 3 written (0 dropped)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("out.20231114T221322Z.folded"), std::string::npos) << summary;
}

TEST_F(ExportPipelineTest, AFileOfAnotherProcessIsNeverReplacedNorRemoved) {
  // Another process of the same program wrote this window's name first.
  const std::string theirs = dir_ + "/out.20231114T221320Z.folded";
  FILE* f = fopen(theirs.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("theirs 1\n", f);
  fclose(f);
  config_.keep = 1;
  ExportPipeline pipeline(config_, &Build);
  pipeline.Push(WindowAt(0, 0));
  pipeline.Finish();
  pipeline.Push(WindowAt(1, 1));
  pipeline.Finish();
  const std::string ours_first =
      "out.20231114T221320Z." + std::to_string(getpid()) + ".folded";
  // Ours went under a name with the pid; keep=1 removed it, and theirs stayed.
  EXPECT_EQ(Files(), (std::vector<std::string>{"out.20231114T221320Z.folded",
                                               "out.20231114T221321Z.folded"}))
      << "expected " << ours_first << " written and rotated away";
  f = fopen(theirs.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[32] = {};
  ASSERT_NE(fgets(line, sizeof line, f), nullptr);
  fclose(f);
  EXPECT_STREQ(line, "theirs 1\n");
}

TEST_F(ExportPipelineTest, AnExporterThatCannotKeepUpDropsTheOldestWaitingWindow) {
  ExportPipeline pipeline(config_, &Build);
  std::vector<uint64_t> told;
  pipeline.AddListener([&](const Window& w) { told.push_back(w.sequence); });
  // Three windows closed before the exporter took any: two wait at most.
  pipeline.Push(WindowAt(0, 0));
  pipeline.Push(WindowAt(1, 1));
  pipeline.Push(WindowAt(2, 2));
  pipeline.Finish();
  EXPECT_EQ(told, (std::vector<uint64_t>{1, 2}));
  const std::string summary = pipeline.SummaryLines(3);
  EXPECT_NE(summary.find("2 of 3 written (1 dropped)"), std::string::npos) << summary;
}

TEST_F(ExportPipelineTest, TheExporterThreadWritesEveryWindowBeforeFinishReturns) {
  ExportPipeline pipeline(config_, &Build);
  ASSERT_NE(pipeline.Start(), 0);
  pipeline.Push(WindowAt(0, 0));
  pipeline.Finish();  // joins the thread once the queue is empty
  EXPECT_EQ(pipeline.windows_exported(), 1u);
  EXPECT_EQ(Files(), (std::vector<std::string>{"out.20231114T221320Z.folded"}));
}

}  // namespace
}  // namespace inprof::internal
