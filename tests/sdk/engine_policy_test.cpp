// The engine choice on its own (session/engine_policy.cpp in the static part
// inprof_sdk_session, no shared library): which engine samples each event, from the
// configuration and from what the system allows, and the words that tell the user why. The
// kernel's refusals are made with the runtime's test seams (INPROF_TEST_PERF_ERRNO,
// INPROF_TEST_TIMER_ERRNO), so every branch runs on any machine. Nothing is armed: engines are
// only created.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "engines/engine.h"
#include "session/engine_policy.h"

namespace inprof::internal {
namespace {

class EnginePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("INPROF_TEST_PERF_ERRNO");
    unsetenv("INPROF_TEST_TIMER_ERRNO");
    config_.frequency = 99;  // below every kernel tick: no above-tick warning
  }
  void TearDown() override {
    unsetenv("INPROF_TEST_PERF_ERRNO");
    unsetenv("INPROF_TEST_TIMER_ERRNO");
  }
  Status Choose() { return ChooseEngines(config_, 10, &sampler_, &set_); }

  Config config_;
  Sampler sampler_;
  EngineSet set_;
};

TEST_F(EnginePolicyTest, EngineTimerIsTimersAsAsked) {
  config_.engine = EngineChoice::kTimer;
  ASSERT_TRUE(Choose().ok());
  ASSERT_EQ(set_.engines.size(), 1u);
  EXPECT_EQ(set_.engines[0]->kind(), EngineKind::kTimer);
  EXPECT_EQ(set_.reasons[0], "per-thread CPU-time timers, as asked (engine=timer)");
  EXPECT_TRUE(set_.warnings.empty());
  EXPECT_EQ(sampler_.event_count, 1u);
}

TEST_F(EnginePolicyTest, AutoWithoutPerfFallsBackToTimersAndSaysWhy) {
  setenv("INPROF_TEST_PERF_ERRNO", "EACCES", 1);
  ASSERT_TRUE(Choose().ok());
  ASSERT_EQ(set_.engines.size(), 1u);
  EXPECT_EQ(set_.engines[0]->kind(), EngineKind::kTimer);
  // The reason starts with why perf could not be used.
  EXPECT_EQ(set_.reasons[0].rfind(PerfErrorAdvice(EACCES), 0), 0u) << set_.reasons[0];
  EXPECT_NE(set_.reasons[0].find("using per-thread CPU timers"), std::string::npos);
  EXPECT_EQ(sampler_.fd_tokens, nullptr);  // no perf engine: no fd table
}

TEST_F(EnginePolicyTest, AutoWithoutPerfOrTimersIsTheItimerAsTheLastResort) {
  setenv("INPROF_TEST_PERF_ERRNO", "ENOENT", 1);
  setenv("INPROF_TEST_TIMER_ERRNO", "EAGAIN", 1);
  ASSERT_TRUE(Choose().ok());
  ASSERT_EQ(set_.engines.size(), 1u);
  EXPECT_EQ(set_.engines[0]->kind(), EngineKind::kItimer);
  const std::string& why = set_.reasons[0];
  EXPECT_NE(why.find(PerfErrorAdvice(ENOENT)), std::string::npos) << why;
  EXPECT_NE(why.find(TimerErrorAdvice(EAGAIN)), std::string::npos) << why;
  EXPECT_NE(why.find("ITIMER_PROF"), std::string::npos) << why;
}

TEST_F(EnginePolicyTest, NoEngineLeftIsAnErrorThatSaysWhyEachWasRefused) {
  setenv("INPROF_TEST_PERF_ERRNO", "ENOSYS", 1);
  setenv("INPROF_TEST_TIMER_ERRNO", "EPERM", 1);
  config_.signal = SIGUSR2;  // the itimer engine signals with SIGPROF only
  const Status s = Choose();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(TimerErrorAdvice(EPERM)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("only signal with SIGPROF"), std::string::npos) << s.message();
}

TEST_F(EnginePolicyTest, AnEngineAskedForIsNeverReplacedByAnother) {
  setenv("INPROF_TEST_PERF_ERRNO", "EACCES", 1);
  config_.engine = EngineChoice::kPerf;
  Status s = Choose();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("engine=perf: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("use engine=timer"), std::string::npos) << s.message();

  setenv("INPROF_TEST_TIMER_ERRNO", "EAGAIN", 1);
  config_.engine = EngineChoice::kTimer;
  EngineSet other;
  s = ChooseEngines(config_, 10, &sampler_, &other);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("engine=timer: ", 0), 0u) << s.message();
}

// A period draw costs three system calls, one of which restarts the event's timer (tens of
// microseconds on a VM): above 250 samples per CPU-second a drawn period serves several
// samples, so that the draws stay at 250 per CPU-second or fewer.
TEST(PeriodDrawEvery, KeepsTheDrawsAtOrBelow250PerCpuSecond) {
  EXPECT_EQ(PeriodDrawEvery(99), 1u);
  EXPECT_EQ(PeriodDrawEvery(250), 1u);
  EXPECT_EQ(PeriodDrawEvery(251), 2u);
  EXPECT_EQ(PeriodDrawEvery(499), 2u);
  EXPECT_EQ(PeriodDrawEvery(999), 4u);
  EXPECT_EQ(PeriodDrawEvery(3989), 16u);
  EXPECT_EQ(PeriodDrawEvery(1e9), 64u);  // at most 64
  EXPECT_EQ(PeriodDrawEvery(0), 1u);
  for (double hz : {100.0, 300.0, 997.0, 2000.0, 4000.0, 10000.0}) {
    EXPECT_LE(hz / PeriodDrawEvery(hz), kMaxPeriodDrawsPerSecond) << hz;
  }
}

TEST_F(EnginePolicyTest, APerfTimeEventGetsItsDrawInterval) {
  config_.engine = EngineChoice::kPerf;
  config_.frequency = 999;
  const Status s = Choose();
  if (!s.ok()) GTEST_SKIP() << "no perf_event here: " << s.message();
  EXPECT_NE(sampler_.event_dither_ns[0], 0u);
  EXPECT_EQ(sampler_.dither_every, 4u);
}

TEST_F(EnginePolicyTest, EngineItimerIsTheProcessTimerAsAsked) {
  config_.engine = EngineChoice::kItimer;
  ASSERT_TRUE(Choose().ok());
  EXPECT_EQ(set_.engines[0]->kind(), EngineKind::kItimer);
  EXPECT_EQ(set_.reasons[0], "process-wide ITIMER_PROF, as asked (engine=itimer)");
}

TEST_F(EnginePolicyTest, WallAndLuaEventsHaveOneEngineEach) {
  config_.engine = EngineChoice::kTimer;
  config_.events = {"cpu", "wall", "lua"};
  ASSERT_TRUE(Choose().ok());
  ASSERT_EQ(set_.engines.size(), 3u);
  EXPECT_EQ(set_.engines[0]->kind(), EngineKind::kTimer);
  EXPECT_EQ(set_.reasons[0].rfind("cpu: ", 0), 0u) << set_.reasons[0];
  EXPECT_EQ(set_.engines[1]->kind(), EngineKind::kTimer);
  EXPECT_EQ(set_.reasons[1].rfind("wall: per-thread CLOCK_MONOTONIC timers", 0), 0u)
      << set_.reasons[1];
  EXPECT_EQ(set_.engines[2]->kind(), EngineKind::kNone);
  EXPECT_NE(set_.reasons[2].find("every 10 ms"), std::string::npos) << set_.reasons[2];
  EXPECT_EQ(sampler_.event_count, 3u);

  // Without timers the wall event cannot be sampled at all.
  setenv("INPROF_TEST_TIMER_ERRNO", "EAGAIN", 1);
  config_.engine = EngineChoice::kAuto;
  config_.events = {"wall"};
  EngineSet wall;
  const Status s = ChooseEngines(config_, 10, &sampler_, &wall);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("event wall needs per-thread timers", 0), 0u) << s.message();
}

TEST_F(EnginePolicyTest, AnUnknownEventIsNamed) {
  config_.events = {"cpu", "nonsense"};
  const Status s = Choose();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "unknown event 'nonsense'");
}

}  // namespace
}  // namespace inprof::internal
