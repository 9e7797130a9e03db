// Samples taken before a deferred session starts (docs/lifecycle.md "The session starts at
// the first sample") unwind to the same root frames as the session's own: a flame graph shows
// one tower per path, not a second one cut at main.
#include <dirent.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace inprof::test {
namespace {

std::vector<std::string> ListFiles(const std::string& dir) {
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

std::string Joined(const std::vector<std::string>& frames) {
  std::string out;
  for (const std::string& f : frames) out += (out.empty() ? "" : ";") + f;
  return out;
}

// The frames above main, for each stack through main, with the weight of each such root.
std::map<std::string, int64_t> RootsAboveMain(const std::string& folded, int64_t* through_main) {
  std::map<std::string, int64_t> roots;
  for (const FoldedStack& s : ReadFolded(folded)) {
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (s.frames[i] != "main") continue;
      roots[Joined(std::vector<std::string>(s.frames.begin(), s.frames.begin() + i))] += s.count;
      *through_main += s.count;
      break;
    }
  }
  return roots;
}

// A short real program under LD_PRELOAD with the default (lazy) start: its first sample is
// always taken before the session exists.
TEST(EarlyStacksTest, EveryStackThroughMainHasTheSameRoot) {
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/x.folded";
  const ProcessResult run =
      RunProcess({INPROF_EARLY_ROOTS},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", out}, {"INPROF_QUIET", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  int64_t through_main = 0;
  const std::map<std::string, int64_t> roots = RootsAboveMain(out, &through_main);
  ASSERT_GE(through_main, 3) << ReadFile(out);
  // Sampling varies in where a sample lands, never in what lies above main: one root only,
  // and it is the C library's start (the frames a frame-pointer walk cannot reach).
  EXPECT_EQ(roots.size(), 1u) << ReadFile(out);
  EXPECT_NE(roots.begin()->first.find("__libc_start_main"), std::string::npos) << ReadFile(out);
}

// A child forked before its parent's session started, which works until it exits: its
// session starts only then, so all its ~15 samples are the bootstrap sampler's.
TEST(EarlyStacksTest, AForkedChildsStacksReachTheRootToo) {
  // qemu-user asserts in its own fork path once the parent has the runtime's threads
  // (qemu_plugin_vcpu_init_hook), as the lifecycle suite's fork tests see.
  SKIP_UNDER_EMULATOR("qemu-user aborts in fork() of a process with the runtime's threads");
  const std::string dir = MakeTempDir();
  const ProcessResult run =
      RunProcess({INPROF_EARLY_ROOTS, "fork"}, {{"LD_PRELOAD", PreloadValue()},
                                                {"INPROF_OUTPUT", dir + "/x.folded"},
                                                {"INPROF_QUIET", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The child's file is x.<pid>.folded; the parent, which only waits, writes none or a
  // sample or two.
  int64_t through_main = 0;
  std::map<std::string, int64_t> roots;
  std::string all;
  for (const std::string& name : ListFiles(dir)) {
    for (const auto& [root, weight] : RootsAboveMain(dir + "/" + name, &through_main)) {
      roots[root] += weight;
    }
    all += name + ":\n" + ReadFile(dir + "/" + name);
  }
  ASSERT_GE(through_main, 3) << all;
  EXPECT_EQ(roots.size(), 1u) << all;
  EXPECT_NE(roots.begin()->first.find("__libc_start_main"), std::string::npos) << all;
}

}  // namespace
}  // namespace inprof::test
