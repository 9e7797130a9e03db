// `inprof record` as a user runs it: options and errors, exit statuses passed through,
// signals passed on, one profile of a whole process tree (a shell loop of 200 processes, a
// child killed mid-run), the per-process layout, and a real profile of a program the project
// did not write (sort).
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

#include "inprof/raw_profile.h"
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

// The process tree's root frames: the first frame of every folded line, with its weight.
std::map<std::string, int64_t> RootWeightsOf(const std::string& folded) {
  std::map<std::string, int64_t> roots;
  for (const FoldedStack& stack : ReadFolded(folded)) {
    if (!stack.frames.empty()) roots[stack.frames[0]] += stack.count;
  }
  return roots;
}

// A shell loop busy for a few tenths of a second: long enough to be sampled.
constexpr const char* kBusy = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done";

TEST(Record, DefaultDirectoryIsNamedAfterTheProgram) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({"/bin/sh", "-c", "cd \"$0\" && exec \"$1\" record -q -- sh -c \"$2\"", dir,
                  INPROF_VIEWER, kBusy},
                 Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> made = List(dir);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_TRUE(std::regex_match(made[0], std::regex(R"(inprof-sh-\d{8}-\d{6})"))) << made[0];
  EXPECT_NE(r.err.find("profile in " + made[0] + "/"), std::string::npos) << r.err;
}

// At 1 Hz: the first sample of a process comes after a random part of its first second of CPU
// time, and a shell that takes a few milliseconds (more under a sanitizer: one took a sample
// at the default 99 Hz in a CI run) would now and then get one.
TEST(Record, NoSampleInTheWholeTreeWritesNothing) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({"/bin/sh", "-c",
                  "cd \"$0\" && exec \"$1\" record -F 1 -- sh -c 'true; /bin/true'",
                  dir, INPROF_VIEWER},
                 Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no process took a sample: nothing written"), std::string::npos) << r.err;
  // The hint names the rate the command ran at.
  EXPECT_NE(r.err.find("at 1 Hz a process takes its first sample after about 1000 ms"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(List(dir).empty()) << "the default directory is not left behind empty";
}

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

// record's own options are checked before anything runs (first_hour_test.cpp); a bad INPROF_*
// variable the user set in the environment reaches the runtime, which names it.
TEST(Record, BadRuntimeVariableIsReportedByTheRuntime) {
  const std::string dir = MakeTempDir();
  auto env = Env();
  env["INPROF_MAX_DEPTH"] = "deep";
  const ProcessResult r = Record({"-o", dir, "--", "true"}, nullptr, env);
  EXPECT_EQ(r.exit_code, 0) << "the program still runs, unprofiled";
  EXPECT_NE(r.err.find("INPROF_MAX_DEPTH"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no process took a sample"), std::string::npos) << r.err;
  const ProcessResult option = Record({"-o", dir, "-F", "fast", "--", "true"});
  EXPECT_EQ(option.exit_code, 2) << option.err;
}

TEST(Record, SeveralEventsShareOnePprofFile) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      Record({"-q", "-o", dir, "--events", "cpu,wall", "--", "sh", "-c", kBusy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> expected = {
      "flame.cpu.svg",       "flame.wall.svg", "perf.cpu.log",  "perf.wall.log",
      "profile.cpu.folded",  "profile.cpu.speedscope.json",     "profile.json",
      "profile.pb.gz",       "profile.wall.folded",             "profile.wall.speedscope.json"};
  EXPECT_EQ(List(dir), expected) << r.err;
  std::string raw, error;
  ASSERT_TRUE(Gunzip(ReadFile(dir + "/profile.pb.gz"), &raw, &error)) << error;
  PprofProfile p;
  ASSERT_TRUE(DecodePprof(raw, &p, &error)) << error;
  std::string types;
  for (const PprofValueType& t : p.sample_types) types += p.S(t.type) + "/" + p.S(t.unit) + " ";
  EXPECT_EQ(types, "samples/count cpu/nanoseconds wall_samples/count wall/nanoseconds ");
}

TEST(Record, PerProcessLayoutHasOneSetOfFilesPerProcess) {
  const std::string dir = MakeTempDir();
  // bash runs a busy loop in a forked subshell, then one of its own (processes that take no
  // sample write nothing).
  const ProcessResult r = Record({"-q", "--per-process", "-o", dir, "--", "bash", "-c",
                                  std::string("(") + kBusy + "); " + kBusy + "; exit 0"});
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

// A directory named with a comma, a space and a newline: INPROF_OUTPUT is a comma-separated
// list, and an unescaped comma there would leave every process unprofiled.
TEST(RecordPaths, OutputDirectoryWithCommaSpaceAndNewline) {
  const std::string dir = MakeTempDir() + "/a,b c\nd";
  ProcessResult r = Record({"-q", "-o", dir, "--", "sh", "-c", kBusy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("invalid output"), std::string::npos) << r.err;
  for (const char* f : {"profile.json", "profile.folded", "profile.pb.gz"}) {
    EXPECT_TRUE(FileExists(dir + "/" + f)) << f << "\n" << r.err;
  }
  ASSERT_TRUE(FileExists(dir + "/profile.folded")) << r.err;
  EXPECT_GT(RootWeightsOf(dir + "/profile.folded")["sh"], 0) << r.err;
  // --per-process hands the runtime a list of several outputs in that directory.
  const std::string per = dir + "/per,process";
  r = Record({"-q", "--per-process", "-o", per, "--", "sh", "-c", kBusy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(FileExists(per + "/profile.json")) << r.err;
  EXPECT_TRUE(FileExists(per + "/profile.pb.gz")) << r.err;
}

// The same characters in the working directory: a relative -o and a program started from
// there (its path, with the newline, is in the module map the recorder symbolizes).
TEST(RecordPaths, WorkingDirectoryWithCommaSpaceAndNewline) {
  const std::string cwd = MakeTempDir() + "/w,x y\nz";
  ASSERT_EQ(mkdir(cwd.c_str(), 0700), 0);
  {
    std::ifstream in("/bin/sh", std::ios::binary);
    std::ofstream out(cwd + "/busy-sh", std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(chmod((cwd + "/busy-sh").c_str(), 0755), 0);
  const ProcessResult r =
      RunProcess({"/bin/sh", "-c",
                  "cd \"$0\" && exec \"$1\" record -q --keep-raw -o out -- ./busy-sh -c \"$2\"",
                  cwd, INPROF_VIEWER, kBusy},
                 Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(FileExists(cwd + "/out/profile.json")) << r.err;
  ASSERT_TRUE(FileExists(cwd + "/out/profile.folded")) << r.err;
  EXPECT_GT(RootWeightsOf(cwd + "/out/profile.folded")["busy-sh"], 0) << r.err;
  bool named = false;
  for (const std::string& name : List(cwd + "/out/raw")) {
    RawProfile raw;
    std::ifstream in(cwd + "/out/raw/" + name);
    ASSERT_TRUE(ReadRawProfile(in, name, &raw).ok()) << name;
    for (const RawModule& m : raw.modules) named = named || m.path == cwd + "/busy-sh";
  }
  EXPECT_TRUE(named) << "the program's path with its comma and newline in the module map";
}

}  // namespace
}  // namespace inprof::test

namespace inprof::test {
namespace {

// The process tree's root frames: the first frame of every folded line, with its weight.
std::map<std::string, int64_t> RootWeights(const std::string& folded) {
  std::map<std::string, int64_t> roots;
  for (const FoldedStack& stack : ReadFolded(folded)) {
    if (!stack.frames.empty()) roots[stack.frames[0]] += stack.count;
  }
  return roots;
}

// What users run: a script that starts many short processes. 100 sha256sum runs of a few
// milliseconds of CPU each, and 100 /bin/true runs that never take a sample.
TEST(RecordTree, ShellLoopOfShortProcessesGivesOneProfile) {
  SKIP_UNDER_EMULATOR("200 emulated processes take minutes");
  const std::string dir = MakeTempDir();
  {
    std::mt19937_64 rng(7);
    std::ofstream data(dir + "/data.bin", std::ios::binary);
    for (int i = 0; i < (3 << 20) / 8; ++i) {
      const uint64_t v = rng();
      data.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  const std::string out = dir + "/out";
  const std::string script = "i=0; while [ $i -lt 100 ]; do sha256sum '" + dir +
                             "/data.bin' >/dev/null; /bin/true; i=$((i+1)); done";
  const ProcessResult r = Record({"--keep-raw", "-F", "499", "-o", out, "--", "sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One set of outputs (and the kept raw profiles), nothing per process, no spool left.
  const std::vector<std::string> expected = {"flame.svg",     "perf.log",
                                             "profile.folded", "profile.json",
                                             "profile.pb.gz",  "profile.speedscope.json", "raw"};
  EXPECT_EQ(List(out), expected) << r.err;
  std::vector<std::string> hidden;
  if (DIR* d = opendir(out.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' && std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        hidden.emplace_back(e->d_name);
    }
    closedir(d);
  }
  EXPECT_TRUE(hidden.empty()) << hidden.front();

  // Processes with samples are root frames; sha256sum did most of the work. A /bin/true run
  // takes a sample only when its CPU time (mostly the dynamic loader's and the runtime's
  // start-up) reaches its randomly drawn first period: rarely, and never much of the total.
  const std::map<std::string, int64_t> roots = RootWeights(out + "/profile.folded");
  int64_t total = 0, other = 0;
  for (const auto& [root, weight] : roots) {
    total += weight;
    if (root != "sh" && root != "sha256sum") {
      EXPECT_EQ(root, "true");
      other += weight;
    }
  }
  EXPECT_LT(other * 10, total) << other << " of " << total << " samples in /bin/true";
  ASSERT_TRUE(roots.count("sha256sum")) << r.err;
  EXPECT_GT(roots.at("sha256sum") * 2, total) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(\d+\.\d+%\s+sha256sum \(\d+ processes\))")))
      << r.err;
  EXPECT_NE(r.err.find("Hottest functions"), std::string::npos) << r.err;

  // pprof: every sample carries its process as the label "process" (go tool pprof
  // -tagfocus=process=sha256sum), the name of its root frame.
  std::string bytes, error;
  PprofProfile pprof;
  ASSERT_TRUE(Gunzip(ReadFile(out + "/profile.pb.gz"), &bytes, &error)) << error;
  ASSERT_TRUE(DecodePprof(bytes, &pprof, &error)) << error;
  ASSERT_FALSE(pprof.samples.empty());
  std::map<std::string, int64_t> by_label;
  for (const PprofSample& sample : pprof.samples) {
    ASSERT_FALSE(sample.location_ids.empty());
    const PprofLocation& root = pprof.Location(sample.location_ids.back());
    ASSERT_FALSE(root.lines.empty());
    const std::string& root_name = pprof.S(pprof.Function(root.lines.back().function_id).name);
    std::string process;
    for (const PprofLabel& label : sample.labels) {
      if (pprof.S(label.key) == "process") process = pprof.S(label.str);
    }
    EXPECT_EQ(process, root_name);
    by_label[process] += sample.values.front();
  }
  EXPECT_GT(by_label["sha256sum"], 0);

  // A raw file only for a process that took a sample: never one per process started.
  const std::vector<std::string> raw = List(out + "/raw");
  EXPECT_GE(raw.size(), 2u) << r.err;
  EXPECT_LT(raw.size(), 150u) << "a /bin/true run without a sample leaves no file";
  for (const std::string& name : raw) {
    std::ifstream in(out + "/raw/" + name);
    RawProfile p;
    ASSERT_TRUE(ReadRawProfile(in, name, &p).ok()) << name;
    EXPECT_TRUE(p.complete) << name;
    EXPECT_FALSE(p.stacks.empty()) << name << " (" << p.comm << ") has no sample";
  }
}

// A child killed with SIGKILL while it runs: the recording completes with the others'
// samples and names the process whose samples are lost.
TEST(RecordTree, ChildKilledMidRunIsNamedAndTheRestKept) {
  SKIP_UNDER_EMULATOR("timing of an emulated child is not representative");
  const std::string dir = MakeTempDir();
  // sha256sum hashes an endless input in the background; once its first sample has started
  // its raw file (kept in DIR/raw/ to be seen), the shell spins a little and kills it.
  const std::string script =
      std::string(
          "sha256sum /dev/zero & p=$!; n=0; while [ ! -e \"$0/raw/profile.$p.inprofraw\" ] "
          "&& [ $n -lt 3000000 ]; do n=$((n+1)); done; ") +
      kBusy + "; kill -KILL $p; wait $p; echo killed $p >&2; exit 0";
  const ProcessResult r = Record({"--keep-raw", "-o", dir, "--", "sh", "-c", script, dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(killed (\d+))"))) << r.err;
  const std::string pid = m[1];
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("process " + pid +
                        R"( \(sha256sum\): ended before writing its profile \(killed\?\))")))
      << r.err;
  EXPECT_TRUE(FileExists(dir + "/profile.folded")) << r.err;
  const std::map<std::string, int64_t> roots = RootWeights(dir + "/profile.folded");
  EXPECT_TRUE(roots.count("sh")) << r.err;
}

TEST(RecordTree, PerPidRootFramesAndOptionErrors) {
  const std::string dir = MakeTempDir();
  const ProcessResult r = Record({"-q", "--per-pid", "-o", dir, "--", "bash", "-c",
                                  std::string("(") + kBusy + "); " + kBusy + "; exit 0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::map<std::string, int64_t> roots = RootWeights(dir + "/profile.folded");
  ASSERT_FALSE(roots.empty());
  for (const auto& [root, weight] : roots) {
    EXPECT_TRUE(std::regex_match(root, std::regex(R"(bash-\d+)"))) << root;
  }
  EXPECT_EQ(roots.size(), 2u) << "the shell and its subshell, apart";
  const ProcessResult bad = Record({"--per-process", "--keep-raw", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--keep-raw"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace inprof::test
