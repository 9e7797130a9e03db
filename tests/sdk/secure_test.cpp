// Hostile configuration and private outputs (docs/security.md):
// - a privileged program (setuid here: AT_SECURE) ignores its caller's INPROF_* environment,
//   says so in one line, and is profiled only by its own inprof_start(config);
// - every file a profiled process writes has exactly output_mode's permission bits (0600 by
//   default), whatever the umask: outputs, per-event files, raw profiles, window files.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using inprof::test::FileExists;
using inprof::test::MakeTempDir;
using inprof::test::PreloadValue;
using inprof::test::ProcessResult;
using inprof::test::ReadFile;
using inprof::test::RunProcess;

constexpr uid_t kNobody = 65534;
constexpr const char* kIgnoredLine = "inprof: ignoring the INPROF_* environment variables";

int Lines(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Permission bits of `path`, or -1 when it does not exist.
int ModeOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

std::vector<std::string> FilesIn(const std::string& dir) {
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

bool CopyFile(const std::string& from, const std::string& to) {
  std::error_code ec;
  return std::filesystem::copy_file(from, to, ec) && !ec;
}

// The engine named in an annotation JSON's health block.
std::string EngineIn(const std::string& json) {
  std::smatch m;
  static const std::regex kEngine("\"engine\": *\"([a-z_]+)\"");
  return std::regex_search(json, m, kEngine) ? m[1].str() : "";
}

// A copy of secure_program owned by nobody with the set-user-id bit, run by root: the process
// has real uid 0 and effective uid 65534, so the kernel sets AT_SECURE, as for any setuid
// program a less privileged user runs. Next to it, the same program without the bit (what
// the assertions are compared with: they hold only because of the bit). Needs root (chown)
// and a directory on a mount without nosuid.
class SecureProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNDER_EMULATOR(
        "qemu-user runs as the emulator's own user: the set-user-id bit of the "
        "guest program takes no effect");
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root to install a setuid copy of the program owned by another "
                      "user (chown); run the suite as root to cover privileged programs";
    }
    // The program's files must be readable by nobody for the loader (euid nobody) to map it.
    std::string base;
    std::string why;
    for (const char* candidate : {"/tmp", INPROF_TEST_BINARY_DIR}) {
      struct statvfs fs {};
      if (statvfs(candidate, &fs) != 0) {
        why += std::string(candidate) + ": cannot statvfs; ";
      } else if ((fs.f_flag & ST_NOSUID) != 0) {
        why += std::string(candidate) + " is on a nosuid mount; ";
      } else {
        base = candidate;
        break;
      }
    }
    if (base.empty()) GTEST_SKIP() << "no directory where a set-user-id bit counts: " << why;
    std::string templ = base + "/inprof-secure-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    out_ = dir_ + "/out";  // writable by the program whoever it runs as
    ASSERT_EQ(mkdir(out_.c_str(), 0777), 0);
    ASSERT_EQ(chmod(out_.c_str(), 0777), 0);
    setuid_ = dir_ + "/secure_program";
    plain_ = dir_ + "/plain_program";
    ASSERT_TRUE(CopyFile(INPROF_SECURE_PROGRAM, setuid_));
    ASSERT_TRUE(CopyFile(INPROF_SECURE_PROGRAM, plain_));
    ASSERT_EQ(chown(setuid_.c_str(), kNobody, kNobody), 0);
    ASSERT_EQ(chmod(setuid_.c_str(), 04755), 0);
    ASSERT_EQ(chmod(plain_.c_str(), 0755), 0);
  }

  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  // Runs `program` with `args`; fails the test unless it ran with the ids it should.
  ProcessResult Run(const std::string& program, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env) {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv, env);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::string ids = program == setuid_ ? "ids ruid=0 euid=65534" : "ids ruid=0 euid=0";
    EXPECT_NE(r.out.find(ids), std::string::npos) << r.out;
    return r;
  }

  std::string dir_, out_, setuid_, plain_;
};

TEST_F(SecureProgram, IgnoresTheEnvironmentWithOneLine) {
  const std::map<std::string, std::string> env = {{"INPROF_OUTPUT", out_ + "/env.folded"},
                                                  {"INPROF_FREQUENCY", "499"}};
  const ProcessResult plain = Run(plain_, {}, env);
  EXPECT_TRUE(FileExists(out_ + "/env.folded")) << plain.err;
  EXPECT_EQ(Lines(plain.err, kIgnoredLine), 0) << plain.err;
  std::filesystem::remove(out_ + "/env.folded");

  const ProcessResult secure = Run(setuid_, {}, env);
  EXPECT_TRUE(FilesIn(out_).empty()) << "written: " << FilesIn(out_).front();
  EXPECT_EQ(Lines(secure.err, kIgnoredLine), 1) << secure.err;
  EXPECT_EQ(Lines(secure.err, "\n"), 1) << "only the one line: " << secure.err;
  EXPECT_NE(secure.err.find("AT_SECURE"), std::string::npos) << secure.err;
  EXPECT_NE(secure.err.find("inprof_start"), std::string::npos) << secure.err;
}

TEST_F(SecureProgram, SaysNothingWithoutInprofVariables) {
  const ProcessResult secure = Run(setuid_, {}, {});
  EXPECT_EQ(secure.err, "");
}

TEST_F(SecureProgram, ABadVariableIsIgnoredNotReported) {
  // Unprivileged, an unknown INPROF_ variable stops profiling with an error; here it is only
  // part of the environment that is ignored.
  const ProcessResult secure =
      Run(setuid_, {}, {{"INPROF_OUTPUT", out_ + "/x.folded"}, {"INPROF_BOGUS", "1"}});
  EXPECT_EQ(secure.err.find("INPROF_BOGUS"), std::string::npos) << secure.err;
  EXPECT_EQ(Lines(secure.err, kIgnoredLine), 1) << secure.err;
  EXPECT_TRUE(FilesIn(out_).empty());
}

// The program's own configuration profiles it, with nothing taken from the environment: not
// the outputs, not the per-user symbol cache under the caller's $XDG_CACHE_HOME, not the
// test hooks that would force the itimer engine.
TEST_F(SecureProgram, OwnStartProfilesWithItsOwnConfigurationOnly) {
  const std::string own = "output=" + out_ + "/own.folded," + out_ + "/own.json,frequency=499";
  std::map<std::string, std::string> env = {{"INPROF_OUTPUT", out_ + "/env.folded"},
                                            {"INPROF_TEST_TIMER_ERRNO", "EPERM"},
                                            {"INPROF_TEST_PERF_ERRNO", "EACCES"},
                                            {"XDG_CACHE_HOME", dir_ + "/cache"}};
  ASSERT_EQ(mkdir((dir_ + "/cache").c_str(), 0777), 0);
  ASSERT_EQ(chmod((dir_ + "/cache").c_str(), 0777), 0);

  // Unprivileged, the same run reads the hooks and the cache (not INPROF_OUTPUT, which would
  // have started a profile before inprof_start: autostart).
  std::map<std::string, std::string> plain_env = env;
  plain_env.erase("INPROF_OUTPUT");
  const ProcessResult plain = Run(plain_, {"start", own}, plain_env);
  EXPECT_EQ(plain.out.find("inprof_start:"), std::string::npos) << plain.out;
  EXPECT_EQ(EngineIn(ReadFile(out_ + "/own.json")), "itimer") << plain.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/cache/inprof")) << plain.err;
  std::filesystem::remove_all(dir_ + "/cache/inprof");
  for (const std::string& name : FilesIn(out_)) std::filesystem::remove(out_ + "/" + name);

  const ProcessResult secure = Run(setuid_, {"start", own}, env);
  EXPECT_EQ(secure.out.find("inprof_start:"), std::string::npos) << secure.out;
  ASSERT_TRUE(FileExists(out_ + "/own.folded")) << secure.err;
  EXPECT_FALSE(FileExists(out_ + "/env.folded"));
  EXPECT_NE(ReadFile(out_ + "/own.folded").find("BurnCpu"), std::string::npos);
  const std::string engine = EngineIn(ReadFile(out_ + "/own.json"));
  EXPECT_NE(engine, "itimer");
  EXPECT_NE(engine, "");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/cache/inprof"));
  // Written by the program's owner, private by default.
  struct stat st {};
  ASSERT_EQ(stat((out_ + "/own.folded").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Lines(secure.err, kIgnoredLine), 1) << secure.err;
}

TEST_F(SecureProgram, StartFromTheEnvironmentTakesNothingFromIt) {
  const std::map<std::string, std::string> env = {{"INPROF_OUTPUT", out_ + "/env.folded"}};
  const ProcessResult secure = Run(setuid_, {"start-env"}, env);
  // It starts (with the defaults: no outputs) and writes nothing anywhere.
  EXPECT_EQ(secure.out.find("inprof_start:"), std::string::npos) << secure.out;
  EXPECT_TRUE(FilesIn(out_).empty());
  // Autostart and inprof_start(NULL) both ignored the environment: one line for the process.
  EXPECT_EQ(Lines(secure.err, kIgnoredLine), 1) << secure.err;
}

// An output directory is checked with the ids that will write to it: as root (the real uid)
// it is writable, as the program's owner it is not, and inprof_start says so at once.
TEST_F(SecureProgram, OutputDirectoryIsCheckedForTheProgramsOwner) {
  const std::string root_only = dir_ + "/root-only";
  ASSERT_EQ(mkdir(root_only.c_str(), 0755), 0);
  const ProcessResult secure = Run(setuid_, {"start", "output=" + root_only + "/own.folded"}, {});
  EXPECT_NE(secure.out.find("inprof_start: -1"), std::string::npos) << secure.out;
  EXPECT_NE(secure.out.find("cannot write output"), std::string::npos) << secure.out;
  EXPECT_NE(secure.out.find(root_only), std::string::npos) << secure.out;
}

// ---------------------------------------------------------------------------------------------
// File modes of a profiled process's files (LD_PRELOAD, as `inprof record` and users run it).

class OutputModes : public ::testing::Test {
 protected:
  void SetUp() override { saved_umask_ = umask(022); }
  void TearDown() override { umask(saved_umask_); }

  // Runs the workload under the profiler with `env` and `mask` as its umask; returns the
  // directory its files went to (out.* for every format).
  std::string RunWith(mode_t mask, std::map<std::string, std::string> env,
                      std::vector<std::string> how = {"exit", "return"}) {
    const std::string dir = MakeTempDir();
    if (env.find("INPROF_OUTPUT") == env.end()) {
      env["INPROF_OUTPUT"] = dir + "/out.folded," + dir + "/perf.log," + dir + "/out.json," + dir +
                             "/out.pb.gz," + dir + "/out.svg," + dir + "/out.inprofraw";
    } else {
      env["INPROF_OUTPUT"] = std::regex_replace(env["INPROF_OUTPUT"], std::regex("DIR"), dir);
    }
    env["LD_PRELOAD"] = PreloadValue();
    env["INPROF_SYMBOL_CACHE"] = "off";
    env["INPROF_FREQUENCY"] = "499";
    umask(mask);
    how.insert(how.begin(), INPROF_LIFECYCLE);
    const ProcessResult r = RunProcess(how, env);
    umask(022);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(FilesIn(dir).empty()) << r.err;
    return dir;
  }

  void ExpectModes(const std::string& dir, int mode) {
    for (const std::string& name : FilesIn(dir)) {
      EXPECT_EQ(ModeOf(dir + "/" + name), mode)
          << name << " is " << std::oct << ModeOf(dir + "/" + name);
    }
  }

  mode_t saved_umask_ = 0;
};

TEST_F(OutputModes, PrivateByDefaultWhateverTheUmask) {
  for (mode_t mask : {mode_t{022}, mode_t{0}, mode_t{002}}) {
    const std::string dir = RunWith(mask, {});
    EXPECT_EQ(FilesIn(dir).size(), 6u);
    ExpectModes(dir, 0600);
  }
}

TEST_F(OutputModes, OutputModeIsExactWhateverTheUmask) {
  ExpectModes(RunWith(022, {{"INPROF_OUTPUT_MODE", "0640"}}), 0640);
  // A umask narrower than the mode does not narrow it: the configured mode is the decision.
  ExpectModes(RunWith(077, {{"INPROF_OUTPUT_MODE", "0644"}}), 0644);
  ExpectModes(RunWith(0, {{"INPROF_OUTPUT_MODE", "644"}}), 0644);
}

TEST_F(OutputModes, PerEventFilesTooAndABadModeStopsProfiling) {
  const std::string dir =
      RunWith(0, {{"INPROF_OUTPUT", "DIR/out.folded"}, {"INPROF_EVENTS", "cpu,wall"}});
  EXPECT_TRUE(FileExists(dir + "/out.cpu.folded"));
  ExpectModes(dir, 0600);

  const std::string bad = MakeTempDir();
  const ProcessResult r =
      RunProcess({INPROF_LIFECYCLE, "exit", "return"}, {{"LD_PRELOAD", PreloadValue()},
                                                        {"INPROF_OUTPUT", bad + "/out.folded"},
                                                        {"INPROF_OUTPUT_MODE", "0755"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("INPROF_OUTPUT_MODE"), std::string::npos) << r.err;
  EXPECT_TRUE(FilesIn(bad).empty());
}

// Continuous mode: every window file.
TEST_F(OutputModes, WindowFilesToo) {
  const std::string dir = RunWith(0,
                                  {{"INPROF_OUTPUT", "DIR/w.folded,DIR/w.pb.gz"},
                                   {"INPROF_WINDOW", "0.1"},
                                   {"INPROF_OUTPUT_MODE", "0640"}},
                                  {"threads", "0.6"});
  EXPECT_GE(FilesIn(dir).size(), 2u);
  ExpectModes(dir, 0640);
}

}  // namespace
