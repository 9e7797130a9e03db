// Raw outputs (docs/raw-profile.md): what a process inside `inprof record` hands to the
// recorder instead of symbolizing, and the marker that names a process killed before its
// exit write.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "inprof/folded.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "inprof/symbolize_raw.h"
#include "test_util.h"

namespace {

using inprof::test::FileExists;
using inprof::test::MakeTempDir;
using inprof::test::PreloadValue;
using inprof::test::ReadFile;
using inprof::test::RunProcess;

inprof::RawProfile ReadRaw(const std::string& path) {
  inprof::RawProfile raw;
  std::ifstream in(path);
  inprof::Status s = inprof::ReadRawProfile(in, path, &raw);
  EXPECT_TRUE(s.ok()) << s.message();
  return raw;
}

// The raw file holds what the process's own symbolization used: symbolized later from it,
// it gives the folded stacks the process wrote itself.
TEST(RawOutput, SymbolizedLaterItGivesTheFoldedTheProcessWrote) {
  const std::string dir = MakeTempDir();
  auto run = RunProcess({INPROF_LIFECYCLE, "exit", "return"},
                        {{"LD_PRELOAD", PreloadValue()},
                         {"INPROF_OUTPUT", dir + "/p.inprofraw," + dir + "/p.folded"},
                         {"INPROF_SYMBOL_CACHE", "off"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const inprof::RawProfile raw = ReadRaw(dir + "/p.inprofraw");
  EXPECT_TRUE(raw.complete);
  EXPECT_GT(raw.meta.pid, 0);
  EXPECT_GT(raw.ppid, 0);
  EXPECT_FALSE(raw.comm.empty());
  EXPECT_NE(raw.meta.program.find("inprof_lifecycle_fixture"), std::string::npos)
      << raw.meta.program;
  ASSERT_FALSE(raw.stacks.empty());
  bool exe_with_build_id = false;
  for (const inprof::RawModule& m : raw.modules) {
    if (m.kind == inprof::RawModule::Kind::kMainExecutable && !m.build_id.empty()) {
      exe_with_build_id = true;
    }
  }
  EXPECT_TRUE(exe_with_build_id);

  inprof::Symbolizer symbolizer;
  symbolizer.UseRecordedModules(raw.modules);
  const inprof::Profile later = inprof::SymbolizeRawProfile(raw, symbolizer);
  std::ostringstream folded;
  inprof::WriteFolded(later, {}, folded);
  const std::string in_process = ReadFile(dir + "/p.folded");
  EXPECT_NE(in_process.find("burn_cpu"), std::string::npos) << in_process;
  EXPECT_EQ(folded.str(), in_process);
}

std::string g_kill_dir;

// SIGKILL once the session has started (its raw header is there), while the process computes.
void KillOnceStarted(int pid) {
  const std::string marker = g_kill_dir + "/p.inprofraw";
  for (int i = 0; i < 20000 && !FileExists(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
}

TEST(RawOutput, AProcessKilledAfterItsFirstSampleIsStillNamed) {
  g_kill_dir = MakeTempDir();
  auto run = RunProcess({INPROF_LIFECYCLE, "threads", "30"},
                        {{"LD_PRELOAD", PreloadValue()},
                         {"INPROF_OUTPUT", g_kill_dir + "/p.inprofraw"}},
                        &KillOnceStarted);
  EXPECT_EQ(run.term_signal, SIGKILL) << run.err;
  ASSERT_TRUE(FileExists(g_kill_dir + "/p.inprofraw"));
  const inprof::RawProfile raw = ReadRaw(g_kill_dir + "/p.inprofraw");
  EXPECT_FALSE(raw.complete);
  EXPECT_GT(raw.meta.pid, 0);
  EXPECT_FALSE(raw.comm.empty());
  EXPECT_TRUE(raw.stacks.empty());
}

TEST(RawOutput, AProcessWithoutSamplesLeavesNoRawFile) {
  const std::string dir = MakeTempDir();
  for (const char* lazy : {"1", "0"}) {
    auto run = RunProcess({INPROF_LIFECYCLE, "noop"},
                          {{"LD_PRELOAD", PreloadValue()},
                           {"INPROF_FREQUENCY", "1"}, {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"},
                           {"INPROF_LAZY", lazy},
                           {"INPROF_OUTPUT", dir + "/p.inprofraw"}});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_FALSE(FileExists(dir + "/p.inprofraw")) << "lazy=" << lazy;
  }
}

TEST(RawOutput, ContinuousModeRefusesARawOutputAtStart) {
  const std::string dir = MakeTempDir();
  auto run = RunProcess({INPROF_LIFECYCLE, "noop"},
                        {{"LD_PRELOAD", PreloadValue()},
                         {"INPROF_WINDOW", "1"},
                         {"INPROF_OUTPUT", dir + "/p.inprofraw"}});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("a raw profile is written once"), std::string::npos) << run.err;
}

}  // namespace
