// Samples taken before a deferred session starts (docs/lifecycle.md "The session starts at
// the first sample") unwind to the same root frames as the session's own: a flame graph shows
// one tower per path, not a second one cut at main.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace inprof::test {
namespace {

std::string Joined(const std::vector<std::string>& frames) {
  std::string out;
  for (const std::string& f : frames) out += (out.empty() ? "" : ";") + f;
  return out;
}

// A short real program under LD_PRELOAD with the default (lazy) start: its first sample is
// always taken before the session exists.
TEST(EarlyStacksTest, EveryStackThroughMainHasTheSameRoot) {
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/x.folded";
  const ProcessResult run = RunProcess({INPROF_EARLY_ROOTS},
                                       {{"LD_PRELOAD", PreloadValue()},
                                        {"INPROF_OUTPUT", out},
                                        {"INPROF_QUIET", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The frames above main, for each stack through main, and the weight of each such root.
  std::map<std::string, int64_t> roots;
  int64_t through_main = 0;
  for (const FoldedStack& s : ReadFolded(out)) {
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (s.frames[i] != "main") continue;
      roots[Joined(std::vector<std::string>(s.frames.begin(), s.frames.begin() + i))] += s.count;
      through_main += s.count;
      break;
    }
  }
  ASSERT_GE(through_main, 3) << ReadFile(out);
  // Sampling varies in where a sample lands, never in what lies above main: one root only,
  // and it is the C library's start (the frames a frame-pointer walk cannot reach).
  EXPECT_EQ(roots.size(), 1u) << ReadFile(out);
  EXPECT_NE(roots.begin()->first.find("__libc_start"), std::string::npos) << ReadFile(out);
}

}  // namespace
}  // namespace inprof::test
