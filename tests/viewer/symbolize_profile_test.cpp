// `inprof symbolize-profile` as a user runs it, on raw profiles made here: stacks of this
// test program's own functions with the module map it has loaded, written through
// WriteRawProfile. Several processes under their root frames, one process exactly as it
// would have symbolized itself, a binary found by build-id after it moved, processes that
// never finished writing, and input errors.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "test_util.h"

// The known stack: main-like caller -> leaf. Not inlined, not merged, C names.
extern "C" __attribute__((noinline)) int inprof_sp_leaf(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}
extern "C" __attribute__((noinline)) int inprof_sp_caller(int x) {
  const int y = inprof_sp_leaf(x);
  asm volatile("" ::: "memory");
  return y + 2;
}

namespace inprof::test {
namespace {

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

std::string SelfPath() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

uint64_t Address(int (*fn)(int)) { return reinterpret_cast<uint64_t>(fn); }

// A process that spent `weight` samples in inprof_sp_leaf called from inprof_sp_caller,
// with this program's modules (as the runtime records them).
RawProfile MakeRaw(int64_t pid, const std::string& comm, int64_t weight) {
  RawProfile r;
  r.meta.program = SelfPath();
  r.meta.pid = pid;
  r.meta.start_time_ns = 1700000000000000000 + pid;
  r.meta.duration_ns = 500000000;
  r.ppid = 1;
  r.comm = comm;
  EventInfo cpu;
  cpu.name = "cpu";
  cpu.unit = "nanoseconds";
  cpu.period = 10101010;
  cpu.frequency_hz = 99;
  cpu.total_weight = weight;
  r.events = {cpu};
  r.health.engine = "timer";
  r.health.unwinder = "fp";
  r.health.samples = static_cast<uint64_t>(weight);
  Symbolizer live;
  live.RefreshModules();
  r.modules = live.RecordedModules();
  r.threads = {{pid, comm}};
  RawStack stack;
  // Leaf first: the interrupted pc, then a return address minus one inside the caller.
  stack.addresses = {Address(&inprof_sp_leaf) + 1, Address(&inprof_sp_caller) + 4,
                     kRawThreadTag | static_cast<uint64_t>(pid)};
  stack.weights = {weight};
  r.stacks = {stack};
  return r;
}

void Write(const RawProfile& raw, const std::string& path) {
  std::ofstream out(path);
  WriteRawProfile(raw, out);
  ASSERT_TRUE(out.good()) << path;
}

// The raw text without its last (`end`) line: what a process killed after its first
// sample leaves.
void WriteCut(const RawProfile& raw, const std::string& path) {
  std::ostringstream text;
  WriteRawProfile(raw, text);
  std::string s = text.str();
  ASSERT_TRUE(s.ends_with("end\n")) << s.substr(s.size() > 40 ? s.size() - 40 : 0);
  s.resize(s.size() - 4);
  std::ofstream(path) << s;
}

// Without the per-user symbol cache unless `cache` names one: answers cached by build-id in
// an earlier run would hide what the binaries on disk give.
ProcessResult SymbolizeProfile(std::vector<std::string> args, const std::string& cache = "off") {
  args.insert(args.begin(), {INPROF_VIEWER, "symbolize-profile"});
  return RunProcess(args, {{"INPROF_SYMBOL_CACHE", cache}});
}

// "root;...;leaf count" lines of a folded file, as a set.
std::set<std::string> FoldedLines(const std::string& path) {
  std::set<std::string> lines;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.insert(line);
  }
  return lines;
}

TEST(SymbolizeProfile, OneProcessHasNoRootFrame) {
  const std::string dir = MakeTempDir();
  Write(MakeRaw(101, "alpha", 7), dir + "/a.inprofraw");
  const ProcessResult r = SymbolizeProfile({dir + "/a.inprofraw", "-o", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> expected = {"flame.svg",    "perf.log",      "profile.folded",
                                             "profile.json", "profile.pb.gz", "profile.speedscope.json"};
  EXPECT_EQ(List(dir + "/out"), expected) << r.err;
  EXPECT_EQ(FoldedLines(dir + "/out/profile.folded"),
            std::set<std::string>{"inprof_sp_caller;inprof_sp_leaf 7"});
  // The recorder's numbers, in the health every reader shows.
  EXPECT_TRUE(std::regex_search(
      ReadFile(dir + "/out/profile.json"),
      std::regex(
          R"(symbolized by inprof symbolize-profile: 1 process, \d+ binar(y|ies), 2 distinct)")))
      << ReadFile(dir + "/out/profile.json").substr(0, 2000);

  const ProcessResult roots =
      SymbolizeProfile({"--process-roots", dir + "/a.inprofraw", "-o", dir + "/roots"});
  ASSERT_EQ(roots.exit_code, 0) << roots.err;
  EXPECT_EQ(FoldedLines(dir + "/roots/profile.folded"),
            std::set<std::string>{"alpha;inprof_sp_caller;inprof_sp_leaf 7"});
}

TEST(SymbolizeProfile, SeveralProcessesGoUnderTheirCommandNames) {
  const std::string dir = MakeTempDir();
  const std::string spool = dir + "/spool";
  ASSERT_EQ(mkdir(spool.c_str(), 0777), 0);
  Write(MakeRaw(101, "alpha", 7), spool + "/p.inprofraw");
  Write(MakeRaw(102, "beta", 3), spool + "/p.102.inprofraw");
  Write(MakeRaw(103, "beta", 2), spool + "/p.103.inprofraw");
  std::ofstream(spool + "/notes.txt") << "not a raw profile: ignored";
  const ProcessResult r = SymbolizeProfile({spool, "-o", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FoldedLines(dir + "/out/profile.folded"),
            (std::set<std::string>{"alpha;inprof_sp_caller;inprof_sp_leaf 7",
                                   "beta;inprof_sp_caller;inprof_sp_leaf 5"}));
  // Private, like the processes' own outputs, whatever the umask (022 in tests).
  struct stat st {};
  ASSERT_EQ(stat((dir + "/out/profile.folded").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Processes by share, those of one name together.
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex(R"(58\.33%\s+alpha\n\s+41\.67%\s+beta \(2 processes\))")))
      << r.err;

  const ProcessResult pids = SymbolizeProfile({"--per-pid", spool, "-o", dir + "/pids"});
  ASSERT_EQ(pids.exit_code, 0) << pids.err;
  EXPECT_EQ(FoldedLines(dir + "/pids/profile.folded"),
            (std::set<std::string>{"alpha-101;inprof_sp_caller;inprof_sp_leaf 7",
                                   "beta-102;inprof_sp_caller;inprof_sp_leaf 3",
                                   "beta-103;inprof_sp_caller;inprof_sp_leaf 2"}));
}

TEST(SymbolizeProfile, ProcessesThatNeverFinishedWritingAreNamed) {
  const std::string dir = MakeTempDir();
  Write(MakeRaw(101, "alpha", 7), dir + "/p.inprofraw");
  WriteCut(MakeRaw(202, "victim", 4), dir + "/p.202.inprofraw");
  RawProfile empty = MakeRaw(303, "early", 1);
  empty.stacks.clear();
  WriteCut(empty, dir + "/p.303.inprofraw");
  const ProcessResult r = SymbolizeProfile({dir, "-o", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("process 202 (victim): ended before writing its profile (killed?); 4 "
                       "samples kept"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("process 303 (early): ended before writing its profile (killed?); no "
                       "samples"),
            std::string::npos)
      << r.err;
  // The cut file's samples count; the empty one has no root frame.
  EXPECT_EQ(FoldedLines(dir + "/out/profile.folded"),
            (std::set<std::string>{"alpha;inprof_sp_caller;inprof_sp_leaf 7",
                                   "victim;inprof_sp_caller;inprof_sp_leaf 4"}));
  EXPECT_NE(ReadFile(dir + "/out/profile.json").find("process 202 (victim)"), std::string::npos);
}

TEST(SymbolizeProfile, MovedBinaryIsFoundByBuildIdInADebugDir) {
  const std::string dir = MakeTempDir();
  RawProfile raw = MakeRaw(101, "alpha", 7);
  const std::string self = SelfPath();
  const std::string base = self.substr(self.rfind('/') + 1);
  bool moved = false;
  for (RawModule& m : raw.modules) {
    if (m.path != self) continue;
    ASSERT_FALSE(m.build_id.empty()) << "the test program is linked with a build-id";
    m.path = "/nonexistent-inprof/moved/" + base;
    moved = true;
  }
  ASSERT_TRUE(moved);
  raw.meta.program = "/nonexistent-inprof/moved/" + base;
  Write(raw, dir + "/a.inprofraw");
  const std::string debug = dir + "/debug";
  ASSERT_EQ(mkdir(debug.c_str(), 0777), 0);
  ASSERT_EQ(RunProcess({"/bin/cp", self, debug + "/" + base}, {}).exit_code, 0);

  const ProcessResult lost = SymbolizeProfile({dir + "/a.inprofraw", "-o", dir + "/lost"});
  ASSERT_EQ(lost.exit_code, 0) << lost.err;
  EXPECT_NE(lost.err.find("warning"), std::string::npos) << "the missing binary is named";
  EXPECT_NE(lost.err.find(base), std::string::npos) << lost.err;
  EXPECT_EQ(ReadFile(dir + "/lost/profile.folded").find("inprof_sp_leaf"), std::string::npos);

  const ProcessResult found =
      SymbolizeProfile({"--debug-dir", debug, dir + "/a.inprofraw", "-o", dir + "/found"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(FoldedLines(dir + "/found/profile.folded"),
            std::set<std::string>{"inprof_sp_caller;inprof_sp_leaf 7"})
      << found.err;

  // The per-user cache keeps the answers by build-id: once resolved, they come back without
  // the binary.
  const std::string cache = dir + "/cache";
  ASSERT_EQ(SymbolizeProfile({"--debug-dir", debug, dir + "/a.inprofraw", "-o", dir + "/c1"}, cache)
                .exit_code,
            0);
  const ProcessResult cached = SymbolizeProfile({dir + "/a.inprofraw", "-o", dir + "/c2"}, cache);
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  EXPECT_NE(cached.err.find("(2 from the symbol cache)"), std::string::npos) << cached.err;
  EXPECT_EQ(FoldedLines(dir + "/c2/profile.folded"),
            std::set<std::string>{"inprof_sp_caller;inprof_sp_leaf 7"});
}

TEST(SymbolizeProfile, MalformedInputNamesFileAndLineAndWritesNothing) {
  const std::string dir = MakeTempDir();
  std::ostringstream text;
  WriteRawProfile(MakeRaw(101, "alpha", 7), text);
  std::istringstream lines(text.str());
  std::string bad;
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    bad += (n == 3 ? std::string("this is not a raw profile line") : line) + "\n";
  }
  std::ofstream(dir + "/bad.inprofraw") << bad;
  Write(MakeRaw(102, "beta", 3), dir + "/good.inprofraw");
  const ProcessResult r = SymbolizeProfile({dir, "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir + "/bad.inprofraw:3:"), std::string::npos) << r.err;
  EXPECT_TRUE(List(dir + "/out").empty()) << "nothing is written from a partly bad input";

  std::ofstream(dir + "/text.inprofraw") << "hello\n";
  const ProcessResult t = SymbolizeProfile({dir + "/text.inprofraw", "-o", dir + "/out"});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.err.find(dir + "/text.inprofraw:1:"), std::string::npos) << t.err;
}

TEST(SymbolizeProfile, NoSampleWritesNothing) {
  const std::string dir = MakeTempDir();
  RawProfile raw = MakeRaw(101, "alpha", 7);
  raw.stacks.clear();
  Write(raw, dir + "/a.inprofraw");
  const ProcessResult r = SymbolizeProfile({dir + "/a.inprofraw", "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("took no sample: nothing written"), std::string::npos) << r.err;
  EXPECT_TRUE(List(dir + "/out").empty());
}

TEST(SymbolizeProfile, FormatsAndUsage) {
  const std::string dir = MakeTempDir();
  Write(MakeRaw(101, "alpha", 7), dir + "/a.inprofraw");
  ProcessResult r =
      SymbolizeProfile({"--formats", "folded,pprof", dir + "/a.inprofraw", "-o", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(List(dir + "/out"), (std::vector<std::string>{"profile.folded", "profile.pb.gz"}));
  r = SymbolizeProfile({dir + "/a.inprofraw"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs -o DIR"), std::string::npos) << r.err;
  r = SymbolizeProfile({"-o", dir + "/x"});
  EXPECT_EQ(r.exit_code, 2);
  r = SymbolizeProfile({"--formats", "folded,png", dir + "/a.inprofraw", "-o", dir + "/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not 'png'"), std::string::npos) << r.err;
  r = SymbolizeProfile({dir + "/missing.inprofraw", "-o", dir + "/x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.inprofraw"), std::string::npos) << r.err;
  r = SymbolizeProfile({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: inprof symbolize-profile"), std::string::npos);
}

// The must-hold round trip: a real program's raw profile, symbolized later, gives the folded
// stacks the program wrote itself from the same samples; also after the program moved away
// from the path it ran at, found again by build-id in a --debug-dir.
TEST(SymbolizeProfileRoundTrip, RawSymbolizedLaterEqualsInProcess) {
  const std::string dir = MakeTempDir();
  const std::string bin = dir + "/bin", debug = dir + "/debug";
  ASSERT_EQ(mkdir(bin.c_str(), 0777), 0);
  ASSERT_EQ(mkdir(debug.c_str(), 0777), 0);
  ASSERT_EQ(RunProcess({"/bin/cp", INPROF_WORKLOAD, bin + "/workload"}, {}).exit_code, 0);
  const ProcessResult run =
      RunProcess({bin + "/workload", "qsort", "0.4"},
                 {{"LD_PRELOAD", PreloadValue()},
                  {"INPROF_OUTPUT", dir + "/self.folded," + dir + "/self.inprofraw"},
                  {"INPROF_FREQUENCY", "499"},
                  {"INPROF_SYMBOL_CACHE", "off"},
                  {"INPROF_QUIET", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string self = ReadFile(dir + "/self.folded");
  ASSERT_NE(self.find("compare_hot"), std::string::npos) << self.substr(0, 1000);

  ProcessResult r =
      SymbolizeProfile({"--formats", "folded", dir + "/self.inprofraw", "-o", dir + "/later"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(dir + "/later/profile.folded"), self);

  ASSERT_EQ(rename((bin + "/workload").c_str(), (debug + "/workload").c_str()), 0);
  r = SymbolizeProfile(
      {"--formats", "folded", "--debug-dir", debug, dir + "/self.inprofraw", "-o", dir + "/moved"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(dir + "/moved/profile.folded"), self) << r.err;
}

}  // namespace
}  // namespace inprof::test
