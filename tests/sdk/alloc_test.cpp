// The `alloc` event as a user meets it: a program preloaded with the runtime, its
// allocations sampled and weighted, what it freed gone from inuse and what it kept there.
// The program prints its own totals per site; the profile must estimate them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace inprof::test {
namespace {

struct Truth {
  double objects = 0;
  double bytes = 0;
  double live_bytes = 0;
};

std::map<std::string, Truth> ParseTruth(const std::string& out) {
  std::map<std::string, Truth> truth;
  std::istringstream in(out);
  std::string site;
  Truth t;
  while (in >> site >> t.objects >> t.bytes >> t.live_bytes) truth[site] = t;
  return truth;
}

// Weight per leaf function in one event's folded file.
std::map<std::string, double> ByLeaf(const std::string& path) {
  std::map<std::string, double> sums;
  if (!FileExists(path)) return sums;
  for (const FoldedStack& s : ReadFolded(path)) {
    if (!s.frames.empty()) sums[s.frames.back()] += static_cast<double>(s.count);
  }
  return sums;
}

struct AllocRun {
  ProcessResult process;
  std::string dir;
  std::map<std::string, Truth> truth;
  std::map<std::string, std::map<std::string, double>> events;  // event -> leaf -> weight
};

AllocRun RunAllocProgram(const std::string& rate, const std::string& seed) {
  AllocRun run;
  run.dir = MakeTempDir();
  run.process = RunProcess({INPROF_ALLOC_PROGRAM, "1"},
                           {{"LD_PRELOAD", PreloadValue()},
                            {"INPROF_EVENTS", "alloc"},
                            {"INPROF_ALLOC_RATE", rate},
                            {"INPROF_ALLOC_SEED", seed},
                            {"INPROF_OUTPUT", run.dir + "/out.folded"}});
  run.truth = ParseTruth(run.process.out);
  for (const char* e : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
    run.events[e] = ByLeaf(run.dir + "/out." + e + ".folded");
  }
  return run;
}

bool HooksNotReached(const ProcessResult& p) {
  return p.err.find("alloc: the program's malloc is defined in") != std::string::npos;
}

// At a mean of 64 KiB between samples: the 1 MiB blocks are sampled with p = 1 - e^-16, so
// their estimate is exact to a few parts per million; the 64 KiB ones with p = 0.63: 800 of
// them have an estimate with a standard deviation of 3.4 % (sqrt(n(1-p))/p/n), and the bound
// of 15 % is 4.4 of those; the other entry points' blocks (100-300 KB, p >= 0.78): 700
// objects, 1.3 %, bound 10 %.
TEST(AllocTest, EverySiteIsEstimatedAndWhatWasFreedIsNotInUse) {
  AllocRun run = RunAllocProgram("64K", "7");
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  if (HooksNotReached(run.process)) GTEST_SKIP() << run.process.err;
  ASSERT_EQ(run.truth.size(), 3u) << run.process.out;
  const auto near = [&](const char* event, const char* site, double truth, double bound) {
    const double got = run.events[event][site];
    EXPECT_NEAR(got / truth, 1.0, bound) << event << " of " << site << ": " << got << " for "
                                         << truth << "\n" << run.process.err;
  };
  near("alloc_objects", "freed_site", run.truth["freed_site"].objects, 0.01);
  near("alloc_space", "freed_site", run.truth["freed_site"].bytes, 0.01);
  near("alloc_objects", "live_site", run.truth["live_site"].objects, 0.15);
  near("alloc_space", "live_site", run.truth["live_site"].bytes, 0.15);
  near("inuse_space", "live_site", run.truth["live_site"].live_bytes, 0.15);
  near("alloc_objects", "other_entry_points", run.truth["other_entry_points"].objects, 0.10);
  near("alloc_space", "other_entry_points", run.truth["other_entry_points"].bytes, 0.10);
  // Freed (free, and realloc(p, 0)): nothing of those sites is live.
  EXPECT_EQ(run.events["inuse_space"].count("freed_site"), 0u) << run.process.err;
  EXPECT_EQ(run.events["inuse_space"].count("other_entry_points"), 0u) << run.process.err;
  EXPECT_NE(run.process.err.find("inprof: alloc: "), std::string::npos) << run.process.err;
}

// The same seed draws the same samples: a run can be repeated exactly.
TEST(AllocTest, TheSameSeedGivesTheSameProfile) {
  SKIP_UNDER_EMULATOR("under qemu-user two runs with one seed differed by one sample (796 and 797 "
                      "objects at the live site): not explained yet");
  AllocRun a = RunAllocProgram("256K", "11");
  AllocRun b = RunAllocProgram("256K", "11");
  ASSERT_EQ(a.process.exit_code, 0) << a.process.err;
  if (HooksNotReached(a.process)) GTEST_SKIP() << a.process.err;
  // A sample dropped for want of room (the collector starved of CPU for 10 ms, as beside other
  // tests on 2 CPUs) is missing from its run, and the random rounding of the samples after it
  // is drawn in another order: the promise holds for runs that dropped nothing.
  for (const AllocRun* run : {&a, &b}) {
    if (run->process.err.find("sampled allocations dropped") != std::string::npos) {
      GTEST_SKIP() << "a run dropped samples:\n" << run->process.err;
    }
  }
  EXPECT_EQ(a.events["alloc_objects"]["live_site"], b.events["alloc_objects"]["live_site"]);
  EXPECT_GT(a.events["alloc_objects"]["live_site"], 0);
}

// leak_limit: a run that keeps more than the limit allocated at exit fails with 23 and names
// the stack that holds it; under the limit it keeps its own status. live_site keeps 52 MB.
TEST(AllocTest, LeakLimitFailsARunThatKeepsMoreAndNamesWhere) {
  for (const char* limit : {"10M", "1G"}) {
    const std::string dir = MakeTempDir();
    ProcessResult p = RunProcess({INPROF_ALLOC_PROGRAM, "1"},
                                 {{"LD_PRELOAD", PreloadValue()},
                                  {"INPROF_EVENTS", "alloc"},
                                  {"INPROF_LEAK_LIMIT", limit},
                                  {"INPROF_OUTPUT", dir + "/out.pb.gz"}});
    if (HooksNotReached(p)) GTEST_SKIP() << p.err;
    EXPECT_TRUE(FileExists(dir + "/out.pb.gz")) << p.err;
    if (std::string(limit) == "10M") {
      EXPECT_EQ(p.exit_code, 23) << p.err;
      EXPECT_NE(p.err.find("inprof: leaks: an estimated"), std::string::npos) << p.err;
      EXPECT_NE(p.err.find("inprof: leak: "), std::string::npos) << p.err;
      EXPECT_NE(p.err.find("live_site (alloc_program.c:"), std::string::npos) << p.err;
      // Its own output came before: stdio is flushed as exit() would.
      EXPECT_NE(p.out.find("other_entry_points"), std::string::npos) << p.out;
    } else {
      EXPECT_EQ(p.exit_code, 0) << p.err;
      EXPECT_EQ(p.err.find("inprof: leaks:"), std::string::npos) << p.err;
    }
  }
}

// A forked child's allocations are its own profile's (its session starts as fork returns,
// before any CPU sample), and the parent's live blocks are not in it.
TEST(AllocTest, AForkedChildProfilesItsOwnAllocations) {
  SKIP_UNDER_EMULATOR(kNoForkUnderQemu);
  const std::string dir = MakeTempDir();
  ProcessResult p = RunProcess({INPROF_ALLOC_PROGRAM, "1", "fork"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_EVENTS", "alloc"},
                                {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  if (HooksNotReached(p)) GTEST_SKIP() << p.err;
  std::map<std::string, double> parent = ByLeaf(dir + "/out.inuse_space.folded");
  std::map<std::string, double> child;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    // The child's files carry its pid: out.<pid>.inuse_space.folded.
    if (name != "out.inuse_space.folded" && name.find("inuse_space") != std::string::npos) {
      for (const auto& [leaf, w] : ByLeaf(dir + "/" + name)) child[leaf] += w;
    }
  }
  // 400 and 300 blocks of 64 KiB and 100 KB at 512 KiB: about 50 and 55 samples, so the
  // estimates are within a factor of two with room to spare; what matters is where they are.
  EXPECT_GT(parent["live_site"], 400 * 65536 / 2) << p.err;
  EXPECT_EQ(parent.count("child_site"), 0u) << p.err;
  EXPECT_GT(child["child_site"], 300 * 100000 / 2) << p.err;
  EXPECT_EQ(child.count("live_site"), 0u) << p.err;
}

// A thousand short threads, each with one 4 MiB block (sampled with p = 1 - e^-8), while the
// program's own SIGALRM handler allocates on the main thread: the run ends, and the threads'
// blocks are counted.
TEST(AllocTest, ShortThreadsAndAnAllocatingSignalHandler) {
  const std::string dir = MakeTempDir();
  ProcessResult p = RunProcess({INPROF_ALLOC_PROGRAM, "1", "threads"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_EVENTS", "cpu,alloc"},
                                {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  if (HooksNotReached(p)) GTEST_SKIP() << p.err;
  const std::map<std::string, Truth> truth = ParseTruth(p.out);
  ASSERT_EQ(truth.count("short_threads"), 1u) << p.out;
  std::map<std::string, double> bytes = ByLeaf(dir + "/out.alloc_space.folded");
  // Each thread's 4 MiB block is sampled with p = 0.9997 and weighs its size: the bytes are
  // exact to a few blocks in 1000 (the threads' small blocks are 0.1 % of them); a thread
  // whose allocation came before it was registered would be missing.
  EXPECT_NEAR(bytes["ShortThread"] / truth.at("short_threads").bytes, 1.0, 0.03) << p.err;
}

// Continuous mode: each window's alloc_* are what it allocated, its inuse_* what was live as
// it closed, so a growing heap grows from window to window.
TEST(AllocTest, WindowsCarryTheirAllocationsAndTheLiveHeapAsTheyClose) {
  const std::string dir = MakeTempDir();
  ProcessResult p = RunProcess({INPROF_ALLOC_PROGRAM, "1", "window"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_EVENTS", "alloc"},
                                {"INPROF_WINDOW", "1"},
                                {"INPROF_OUTPUT", dir + "/w.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  if (HooksNotReached(p)) GTEST_SKIP() << p.err;
  const std::map<std::string, Truth> truth = ParseTruth(p.out);
  ASSERT_EQ(truth.size(), 2u) << p.out;
  std::vector<std::string> space, inuse;  // window files, in time order (their names)
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("w.alloc_space.")) space.push_back(entry.path().string());
    if (name.starts_with("w.inuse_space.")) inuse.push_back(entry.path().string());
  }
  std::sort(space.begin(), space.end());
  std::sort(inuse.begin(), inuse.end());
  ASSERT_GE(inuse.size(), 3u) << p.err;
  double allocated = 0;
  for (const std::string& f : space) {
    for (const auto& [leaf, w] : ByLeaf(f)) {
      if (leaf == "window_churn" || leaf == "window_grow") allocated += w;
    }
  }
  // 2.5 s of 200 KB blocks (p = 0.32 at 512 KiB): thousands of samples, a few % of error.
  const double truth_bytes = truth.at("window_churn").bytes + truth.at("window_grow").bytes;
  EXPECT_NEAR(allocated / truth_bytes, 1.0, 0.1) << p.err;
  // The live heap, window after window: growing, and at the end what the program kept.
  double previous = 0;
  for (const std::string& f : inuse) {
    const double live = ByLeaf(f)["window_grow"];
    EXPECT_GT(live, previous) << f << "\n" << p.err;
    previous = live;
  }
  EXPECT_NEAR(previous / truth.at("window_grow").live_bytes, 1.0, 0.25) << p.err;
}

// A real program that allocates from its own arenas and calloc: python3 runs to its end and
// its large allocations are seen.
TEST(AllocTest, Python3RunsAndItsAllocationsAreSeen) {
  SKIP_UNDER_EMULATOR("/usr/bin/python3 is the host's");
  if (!FileExists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string dir = MakeTempDir();
  ProcessResult p = RunProcess(
      {"/usr/bin/python3", "-c", "x = [bytearray(100000) for _ in range(300)]; print(len(x))"},
      {{"LD_PRELOAD", PreloadValue()},
       {"INPROF_EVENTS", "alloc"},
       {"INPROF_OUTPUT", dir + "/out.folded"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  if (HooksNotReached(p)) GTEST_SKIP() << p.err;
  EXPECT_EQ(p.out, "300\n");
  double total = 0;
  for (const auto& [leaf, w] : ByLeaf(dir + "/out.alloc_space.folded")) total += w;
  // 30 MB of bytearrays (each sampled with p = 0.17 at 512 KiB): the estimate of the whole
  // run is at least most of that.
  EXPECT_GT(total, 20e6) << p.err;
}

}  // namespace
}  // namespace inprof::test
