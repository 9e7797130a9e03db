// exec keeps the profile (docs/lifecycle.md, "exec"): what an image sampled is written, or
// handed to `inprof record`, before the next image replaces it; the next image writes under
// the next .exec<N> name; a failed exec changes nothing. Real programs: a C program that
// works and execs (fixtures/exec_program.c), /bin/sh, a shell script ending in exec.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace inprof::test {
namespace {

// At 99 Hz, 0.5 s of CPU time is about 50 samples; a part of the profile counts as present
// with a third of that (a loaded machine delays samples, it does not lose most of them).
constexpr int64_t kMinPartSamples = 15;

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + " ";
  return out;
}

// Samples whose stack holds `function`, and of those, how many have `root` as root frame
// (when `root` is not empty).
struct Part {
  int64_t samples = 0;
  int64_t under_root = 0;
};

Part Samples(const std::string& folded, const std::string& function, const std::string& root = "") {
  Part part;
  for (const FoldedStack& s : ReadFolded(folded)) {
    bool holds = false;
    for (const std::string& frame : s.frames)
      holds = holds || frame.find(function) != std::string::npos;
    if (!holds) continue;
    part.samples += s.count;
    if (!root.empty() && !s.frames.empty() && s.frames.front() == root) part.under_root += s.count;
  }
  return part;
}

// What `inprof record` is run with: in sanitizer builds libinprof.so needs the sanitizer
// runtime preloaded before it in the programs record runs (record keeps what LD_PRELOAD holds
// in front), and their leaks are not ours.
std::map<std::string, std::string> RecordEnv() {
  std::map<std::string, std::string> env;
  const std::string prefix = INPROF_RECORD_PRELOAD_PREFIX;
  if (!prefix.empty()) {
    env["LD_PRELOAD"] = prefix;
    env["ASAN_OPTIONS"] = "detect_leaks=0";
  }
  return env;
}

std::string Describe(const ProcessResult& p) {
  return "exit " + std::to_string(p.exit_code) + ", signal " + std::to_string(p.term_signal) +
         "\nstdout:\n" + p.out + "stderr:\n" + p.err;
}

// The root frame record names the program's process by: its command name, which the kernel
// keeps to 15 characters.
std::string ProgramName() {
  const std::string path = INPROF_EXEC_PROGRAM;
  return path.substr(path.rfind('/') + 1).substr(0, 15);
}

// Under `inprof record`, a program that works 0.5 s and then execs another that works 0.5 s is
// one process whose frames change at exec: both halves are in the profile, under the
// process's root frame, and nothing is reported missing.
TEST(Exec, RecordKeepsTimeBeforeExec) {
  SKIP_UNDER_EMULATOR("the exec'd image would run outside the emulator");
  const std::string dir = MakeTempDir() + "/rec";
  const ProcessResult r = RunProcess({INPROF_VIEWER, "record", "-o", dir, "--", INPROF_EXEC_PROGRAM,
                                      "work-then-exec", "0.5", INPROF_EXEC_PROGRAM, "work", "0.5"},
                                     RecordEnv());
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err.find("ended before writing"), std::string::npos) << Describe(r);
  const std::string folded = dir + "/profile.folded";
  ASSERT_TRUE(FileExists(folded)) << Describe(r);
  const Part before = Samples(folded, "burn_before_exec", ProgramName());
  const Part after = Samples(folded, "burn_after_exec", ProgramName());
  EXPECT_GE(before.samples, kMinPartSamples) << ReadFile(folded);
  EXPECT_GE(after.samples, kMinPartSamples) << ReadFile(folded);
  EXPECT_EQ(before.under_root, before.samples) << ReadFile(folded);
  EXPECT_EQ(after.under_root, after.samples) << ReadFile(folded);
  // One process in the summary, not two.
  EXPECT_NE(r.err.find("(1 process in the profile)"), std::string::npos) << Describe(r);
}

// The program execs /bin/sh, which works in a loop: the shell's time is there under its own
// root frame, the program's time before the exec under the program's.
TEST(Exec, RecordKeepsTimeBeforeExecOfShell) {
  SKIP_UNDER_EMULATOR("the exec'd image would run outside the emulator");
  const std::string dir = MakeTempDir() + "/rec";
  const ProcessResult r = RunProcess(
      {INPROF_VIEWER, "record", "-q", "-o", dir, "--", INPROF_EXEC_PROGRAM, "work-then-exec", "0.5",
       "/bin/sh", "-c", "i=0; while [ $i -lt 500000 ]; do i=$((i+1)); done"},
      RecordEnv());
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err.find("ended before writing"), std::string::npos) << Describe(r);
  const std::string folded = dir + "/profile.folded";
  ASSERT_TRUE(FileExists(folded)) << Describe(r);
  const Part before = Samples(folded, "burn_before_exec", ProgramName());
  EXPECT_GE(before.samples, kMinPartSamples) << ReadFile(folded);
  EXPECT_EQ(before.under_root, before.samples) << ReadFile(folded);
  int64_t shell = 0;
  for (const FoldedStack& s : ReadFolded(folded)) {
    if (!s.frames.empty() && (s.frames.front() == "sh" || s.frames.front() == "dash")) {
      shell += s.count;
    }
  }
  EXPECT_GE(shell, kMinPartSamples) << ReadFile(folded);
}

// A shell script whose last line execs the program: the script's own loop and the program's
// work are both in the profile.
TEST(Exec, RecordKeepsShellScriptEndingInExec) {
  SKIP_UNDER_EMULATOR("the exec'd image would run outside the emulator");
  const std::string tmp = MakeTempDir();
  const std::string script = tmp + "/wrapper.sh";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f,
                 "#!/bin/sh\ni=0\nwhile [ $i -lt 500000 ]; do i=$((i+1)); done\nexec %s work 0.5\n",
                 INPROF_EXEC_PROGRAM);
    std::fclose(f);
    ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  }
  const std::string dir = tmp + "/rec";
  const ProcessResult r =
      RunProcess({INPROF_VIEWER, "record", "-q", "-o", dir, "--", script}, RecordEnv());
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err.find("ended before writing"), std::string::npos) << Describe(r);
  const std::string folded = dir + "/profile.folded";
  ASSERT_TRUE(FileExists(folded)) << Describe(r);
  int64_t script_samples = 0;
  for (const FoldedStack& s : ReadFolded(folded)) {
    if (!s.frames.empty() && s.frames.front() == "wrapper.sh") script_samples += s.count;
  }
  EXPECT_GE(script_samples, kMinPartSamples) << ReadFile(folded);
  EXPECT_GE(Samples(folded, "burn_after_exec", ProgramName()).samples, kMinPartSamples)
      << ReadFile(folded);
}

// Plain LD_PRELOAD with INPROF_OUTPUT=out.folded: the first image writes out.folded, the one
// it execs out.exec1.folded; neither overwrites the other.
TEST(Exec, NextImageWritesNextName) {
  SKIP_UNDER_EMULATOR("the exec'd image would run outside the emulator");
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({INPROF_EXEC_PROGRAM, "work-then-exec", "0.5", INPROF_EXEC_PROGRAM, "work", "0.5"},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Joined(ListDir(dir)), "out.exec1.folded out.folded ") << Describe(r);
  EXPECT_GE(Samples(dir + "/out.folded", "burn_before_exec").samples, kMinPartSamples);
  EXPECT_EQ(Samples(dir + "/out.folded", "burn_after_exec").samples, 0);
  EXPECT_GE(Samples(dir + "/out.exec1.folded", "burn_after_exec").samples, kMinPartSamples);
  EXPECT_EQ(Samples(dir + "/out.exec1.folded", "burn_before_exec").samples, 0);
}

// An exec that fails (no such file) changes nothing: sampling goes on, and the one profile
// written at exit has the work before and after it, once.
TEST(Exec, FailedExecChangesNothing) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({INPROF_EXEC_PROGRAM, "failed-exec", "0.4", dir + "/missing"},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("exec failed: No such file or directory"), std::string::npos) << Describe(r);
  EXPECT_EQ(Joined(ListDir(dir)), "out.folded ") << Describe(r);
  const std::string folded = dir + "/out.folded";
  const int64_t before = Samples(folded, "burn_before_exec").samples;
  const int64_t after = Samples(folded, "burn_after_failed_exec").samples;
  EXPECT_GE(before, 12) << ReadFile(folded);
  EXPECT_GE(after, 12) << ReadFile(folded);
  // Not counted twice: 0.4 s of CPU at 99 Hz is about 40 samples.
  EXPECT_LE(before, 80) << ReadFile(folded);
}

// An exec that passes every check and still fails (a script whose interpreter is missing):
// what came before was written at the exec, what comes after goes to the next name at exit,
// so nothing is written twice or lost.
TEST(Exec, ExecFailingAfterTheWriteGoesOn) {
  const std::string dir = MakeTempDir();
  const std::string script = dir + "/bad-interpreter";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("#!/nonexistent/interpreter\n", f);
    std::fclose(f);
    ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  }
  const std::string out = dir + "/out";
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  const ProcessResult r =
      RunProcess({INPROF_EXEC_PROGRAM, "failed-exec", "0.4", script},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", out + "/out.folded"}});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("exec failed:"), std::string::npos) << Describe(r);
  EXPECT_EQ(Joined(ListDir(out)), "out.exec1.folded out.folded ") << Describe(r);
  EXPECT_GE(Samples(out + "/out.folded", "burn_before_exec").samples, 12);
  EXPECT_EQ(Samples(out + "/out.folded", "burn_after_failed_exec").samples, 0);
  EXPECT_GE(Samples(out + "/out.exec1.folded", "burn_after_failed_exec").samples, 12);
  EXPECT_EQ(Samples(out + "/out.exec1.folded", "burn_before_exec").samples, 0);
}

// posix_spawn and vfork + exec start another process from memory that is this one's: that
// exec writes nothing of ours and stops nothing, and the one profile at exit has all the work.
// The /bin/true they start inherits the profile: its first sample comes after a whole period
// (10 ms of CPU), which it hardly ever uses. One that does (once in a CI run, with the first
// period's usual random start) writes its own out.<pid>.folded, which holds none of this
// process's work: only that is allowed beside out.folded.
TEST(Exec, ExecOfAVforkChildLeavesTheParentsProfile) {
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({INPROF_EXEC_PROGRAM, "spawn", "0.4"},
                 {{"LD_PRELOAD", PreloadValue()},
                  {"INPROF_OUTPUT", dir + "/out.folded"},
                  {"INPROF_TEST_WHOLE_FIRST_PERIOD", "1"}});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string ours;
  for (const std::string& name : ListDir(dir)) {
    const bool child = name.size() > 11 && name.starts_with("out.") && name.ends_with(".folded") &&
                       std::all_of(name.begin() + 4, name.end() - 7, ::isdigit);
    if (!child) {
      ours += name + " ";
      continue;
    }
    EXPECT_EQ(Samples(dir + "/" + name, "burn_before_exec").samples, 0) << name;
    EXPECT_EQ(Samples(dir + "/" + name, "burn_after_spawn").samples, 0) << name;
  }
  EXPECT_EQ(ours, "out.folded ") << Describe(r);
  EXPECT_GE(Samples(dir + "/out.folded", "burn_before_exec").samples, 12);
  EXPECT_GE(Samples(dir + "/out.folded", "burn_after_spawn").samples, 12);
}

}  // namespace
}  // namespace inprof::test
