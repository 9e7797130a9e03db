// Helpers for tests that run programs under the profiler and read what it wrote.
#ifndef INPROF_TESTS_SDK_TEST_UTIL_H_
#define INPROF_TESTS_SDK_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

// RunProcess, MakeTempDir, ReadFile: shared by every suite.
#include "test_support.h"

namespace inprof::test {

// LD_PRELOAD value that loads libinprof (after the sanitizer runtime in sanitizer builds).
std::string PreloadValue();
// LD_PRELOAD value that loads `library` (after the sanitizer runtime in sanitizer builds,
// which must come first in the initial library list).
std::string PreloadValueFor(const std::string& library);

bool FileExists(const std::string& path);

struct FoldedStack {
  std::vector<std::string> frames;  // root first
  int64_t count = 0;
};
// Parses folded stacks; fails the current test on a malformed line.
std::vector<FoldedStack> ReadFolded(const std::string& path);


// Cross builds run the tests under qemu-user (see docs/aarch64.md). Tests that cannot run
// there, or that only repeat architecture-independent statistics at a high price in emulated
// CPU time, are skipped with the reason.
#define SKIP_UNDER_EMULATOR(why)                                    \
  if (!::inprof::test::EmulatorPrefix().empty()) {                  \
    GTEST_SKIP() << "under qemu-user: " << (why);                   \
  }
inline constexpr const char* kNoForkUnderQemu =
    "qemu-user 7.2 aborts in a child forked from a multi-threaded program "
    "(cpu_exec: assertion failed: cpu == current_cpu)";

// In the sanitizer lane the forking fixtures are built with AddressSanitizer too, and GCC 12's
// libasan does not take its allocator's locks around fork(): a child forked while another
// thread of the parent was inside malloc (our collector allocates every drain) inherits a held
// spin lock and hangs at its first allocation (seen: both of the child's threads spinning in
// __asan::Allocator). glibc's own malloc resets its locks in the child, so the normal lanes
// test fork.
#if defined(INPROF_SANITIZED_BUILD)
#define SKIP_FORK_UNDER_ASAN() \
  GTEST_SKIP() << "libasan's allocator locks are not fork-safe in a multi-threaded parent"
#else
#define SKIP_FORK_UNDER_ASAN() \
  do {                         \
  } while (0)
#endif

}  // namespace inprof::test

#endif  // INPROF_TESTS_SDK_TEST_UTIL_H_
