// `inprof record` as a user runs it: options and errors, exit statuses passed through,
// signals passed on, forks followed, and a real profile of a program the project did not
// write (sort).
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pprof_reader.h"
#include "test_util.h"

namespace inprof::test {
namespace {

// In sanitizer builds libinprof.so needs the sanitizer runtime preloaded before it, in the
// program record runs; record keeps what LD_PRELOAD already holds in front.
std::map<std::string, std::string> Env() {
  std::map<std::string, std::string> env = {{"INPROF_LIBRARY", INPROF_LIB}};
  const std::string prefix = INPROF_PRELOAD_PREFIX_VALUE;
  if (!prefix.empty()) {
    env["LD_PRELOAD"] = prefix;
    env["ASAN_OPTIONS"] = "detect_leaks=0";  // leaks of the programs we run are not ours
  }
  return env;
}

ProcessResult Record(std::vector<std::string> args, void (*on_started)(int) = nullptr,
                     std::map<std::string, std::string> env = Env()) {
  args.insert(args.begin(), {INPROF_VIEWER, "record"});
  return RunProcess(args, env, on_started);
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(RecordErrors, MissingCommandIs127LikeAShell) {
  const ProcessResult r = Record({"--", "no-such-command-inprof"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("no-such-command-inprof: command not found"), std::string::npos) << r.err;
  const ProcessResult path = Record({"--", "/nonexistent/prog"});
  EXPECT_EQ(path.exit_code, 127) << path.err;
}

TEST(RecordErrors, NotExecutableIs126) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/data") << "x";
  const ProcessResult r = Record({"--", dir + "/data"});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
}

TEST(RecordErrors, UsageErrorsAre2) {
  ProcessResult r = Record({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing the command"), std::string::npos) << r.err;
  r = Record({"--bogus", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;
  r = Record({"-o"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o needs a directory"), std::string::npos) << r.err;
  r = Record({"-n", "0", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = Record({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: inprof record"), std::string::npos);
}

TEST(RecordErrors, StaticallyLinkedProgramGetsAdvice) {
  // An ELF executable without PT_INTERP, as a static link produces.
  const std::string dir = MakeTempDir();
  const std::string prog = dir + "/static-prog";
  {
    unsigned char ehdr[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    ehdr[16] = 2;   // ET_EXEC
    ehdr[18] = 62;  // EM_X86_64
    ehdr[20] = 1;   // EV_CURRENT
    ehdr[52] = 64;  // e_ehsize
    ehdr[54] = 56;  // e_phentsize
    std::ofstream(prog, std::ios::binary).write(reinterpret_cast<char*>(ehdr), sizeof ehdr);
  }
  ASSERT_EQ(chmod(prog.c_str(), 0755), 0);
  const ProcessResult r = Record({"-o", dir + "/out", "--", prog});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is statically linked"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("inprof::sdk"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(dir + "/out")) << "nothing is created for a run that cannot happen";
}

TEST(RecordErrors, MissingLibraryIsNamed) {
  auto env = Env();
  env["INPROF_LIBRARY"] = "/nonexistent/libinprof.so";
  const ProcessResult r = Record({"--", "true"}, nullptr, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot find libinprof.so (tried /nonexistent/libinprof.so)"),
            std::string::npos)
      << r.err;
}

TEST(Record, ExitStatusAndSignalDeathPassThrough) {
  const std::string dir = MakeTempDir();
  ProcessResult r = Record({"-q", "-o", dir + "/a", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("sh exited with status 3"), std::string::npos) << r.err;
  r = Record({"-q", "-o", dir + "/b", "--", "sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
}

TEST(Record, DefaultDirectoryIsNamedAfterTheProgram) {
  const std::string dir = MakeTempDir();
  const ProcessResult r = RunProcess(
      {"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" record -q -- true", dir, INPROF_VIEWER}, Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> made = List(dir);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_TRUE(std::regex_match(made[0], std::regex(R"(inprof-true-\d{8}-\d{6})"))) << made[0];
  EXPECT_NE(r.err.find("profile in " + made[0] + "/"), std::string::npos) << r.err;
}

// A shell loop busy for a few tenths of a second: long enough to be sampled.
constexpr const char* kBusy = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done";

// SIGTERM to inprof reaches the program, which writes its profile and dies of it.
std::atomic<int> g_inprof_pid{0};
void RememberPid(int pid) { g_inprof_pid = pid; }

// True once `pid` runs `name`, has a handler for `signal` (the runtime's autostart installs
// it last) and has run long enough to be sampled (a process without samples writes nothing):
// from then on a signal is turned into a written profile.
bool HandlesSignal(int pid, const std::string& name, int signal) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  if (status.find("Name:\t" + name + "\n") == std::string::npos) return false;
  std::smatch m;
  if (!std::regex_search(status, m, std::regex(R"(SigCgt:\s+([0-9a-f]+))"))) return false;
  if (((std::stoull(m[1], nullptr, 16) >> (signal - 1)) & 1) == 0) return false;
  // utime + stime (clock ticks, fields 14 and 15 of /proc/PID/stat, after the ")").
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stol(field);
  }
  return ticks >= 20;
}

TEST(Record, ForwardsSigtermAndTheProfileIsStillWritten) {
  const std::string dir = MakeTempDir();
  g_inprof_pid = 0;
  std::thread killer([] {
    for (int tries = 0; tries < 30000; ++tries) {
      usleep(1000);  // polling /proc; the test's outcome does not depend on the interval
      const int pid = g_inprof_pid;
      if (pid == 0) continue;
      const std::string children =
          ReadFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
      if (children.empty()) continue;
      if (HandlesSignal(std::stoi(children), "sha256sum", SIGTERM)) {
        kill(pid, SIGTERM);
        return;
      }
    }
  });
  // Busy until killed: it hashes an endless input.
  const ProcessResult r = Record({"-o", dir, "--", "sha256sum", "/dev/zero"}, &RememberPid);
  killer.join();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("sha256sum was killed by signal 15"), std::string::npos) << r.err;
  EXPECT_TRUE(FileExists(dir + "/profile.json")) << r.err;
  EXPECT_TRUE(FileExists(dir + "/profile.pb.gz")) << r.err;
}

// A program the project did not write: sort, on generated data.
TEST(Record, SortGetsASensibleProfile) {
  const std::string dir = MakeTempDir();
  {
    std::mt19937_64 rng(42);
    std::ofstream data(dir + "/data.txt");
    for (int i = 0; i < 600000; ++i) data << rng() << ' ' << (rng() % 1000) << '\n';
  }
  const std::string out = dir + "/out";
  const ProcessResult r = Record({"-o", out, "-F", "999", "--", "sort", "--parallel=1", "-o",
                                  dir + "/sorted.txt", dir + "/data.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"profile.json", "perf.log", "profile.folded", "profile.pb.gz"}) {
    EXPECT_TRUE(FileExists(out + "/" + f)) << f << "\n" << r.err;
  }
  EXPECT_NE(r.err.find("Hottest functions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("profile in " + out + "/"), std::string::npos) << r.err;

  // Time is charged to sort's and libc's code, through mappings that name them.
  std::string raw, error;
  ASSERT_TRUE(Gunzip(ReadFile(out + "/profile.pb.gz"), &raw, &error)) << error;
  PprofProfile p;
  ASSERT_TRUE(DecodePprof(raw, &p, &error)) << error;
  ASSERT_FALSE(p.samples.empty());
  int64_t total = 0, in_libc_or_sort = 0;
  for (const PprofSample& s : p.samples) {
    total += s.values.at(0);
    const PprofLocation& leaf = p.Location(s.location_ids.at(0));
    if (leaf.mapping_id == 0) continue;
    const std::string& module = p.S(p.Mapping(leaf.mapping_id).filename);
    if (module.find("libc.so") != std::string::npos || module.ends_with("/sort")) {
      in_libc_or_sort += s.values.at(0);
    }
  }
  EXPECT_GT(total, 20) << "a sort of 600k lines takes well over 0.1 s";
  EXPECT_GT(in_libc_or_sort * 2, total) << "most leaf time in libc or sort";
  // libc's string comparison is where sort spends its time: named functions with libc's
  // symbols (libc6-dbg), module offsets without.
  EXPECT_TRUE(std::regex_search(ReadFile(out + "/profile.folded"),
                                std::regex(R"(str|mem|coll|libc\.so\.6\+0x)")));
}

TEST(Record, BadRuntimeOptionIsReportedByTheRuntime) {
  const std::string dir = MakeTempDir();
  const ProcessResult r = Record({"-o", dir, "-F", "fast", "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << "the program still runs, unprofiled";
  EXPECT_NE(r.err.find("frequency"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no profile to summarise"), std::string::npos) << r.err;
}

TEST(Record, SeveralEventsShareOnePprofFile) {
  const std::string dir = MakeTempDir();
  const ProcessResult r = Record({"-q", "-o", dir, "--events", "cpu,wall", "--", "sh", "-c", kBusy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> expected = {
      "flame.cpu.svg",      "flame.wall.svg", "perf.cpu.log",  "perf.wall.log",
      "profile.cpu.folded", "profile.json",   "profile.pb.gz", "profile.wall.folded"};
  EXPECT_EQ(List(dir), expected) << r.err;
  std::string raw, error;
  ASSERT_TRUE(Gunzip(ReadFile(dir + "/profile.pb.gz"), &raw, &error)) << error;
  PprofProfile p;
  ASSERT_TRUE(DecodePprof(raw, &p, &error)) << error;
  std::string types;
  for (const PprofValueType& t : p.sample_types) types += p.S(t.type) + "/" + p.S(t.unit) + " ";
  EXPECT_EQ(types, "samples/count cpu/nanoseconds wall_samples/count wall/nanoseconds ");
}

TEST(Record, ForkedChildrenWriteTheirOwnFiles) {
  const std::string dir = MakeTempDir();
  // bash runs a busy loop in a forked subshell, then one of its own (processes that take no
  // sample write nothing).
  const ProcessResult r = Record(
      {"-q", "-o", dir, "--", "bash", "-c", std::string("(") + kBusy + "); " + kBusy + "; exit 0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = List(dir);
  EXPECT_TRUE(std::find(files.begin(), files.end(), "profile.json") != files.end()) << r.err;
  EXPECT_TRUE(std::any_of(files.begin(), files.end(), [](const std::string& f) {
    return std::regex_match(f, std::regex(R"(profile\.\d+\.json)"));
  })) << r.err;
  // pprof's two-part extension stays whole: profile.<pid>.pb.gz.
  EXPECT_TRUE(std::any_of(files.begin(), files.end(), [](const std::string& f) {
    return std::regex_match(f, std::regex(R"(profile\.\d+\.pb\.gz)"));
  })) << r.err;
}

}  // namespace
}  // namespace inprof::test
