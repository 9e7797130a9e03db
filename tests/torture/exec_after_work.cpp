// Work, then execve: the image that took samples is replaced by another (here this program
// again, in its second role) that works and exits 0. The new image must run as it does
// without a profiler (nothing armed in the old one may kill it), and the samples of both
// images must reach an output: the runner looks for both roles' functions in the folded
// outputs the run left.
//   exec_after_work [after]
#include <unistd.h>

#include <cstring>
#include <string>

#include "torture.h"

extern char** environ;

namespace {

__attribute__((noinline)) uint64_t WorkBeforeExec(uint64_t* chunks) {
  const uint64_t v = torture::BurnCpu(0.4, chunks);
  asm volatile("" ::: "memory");
  return v;
}

__attribute__((noinline)) uint64_t WorkAfterExec(uint64_t* chunks) {
  const uint64_t v = torture::BurnCpu(0.4, chunks);
  asm volatile("" ::: "memory");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(role.empty() || role == "after", "usage: exec_after_work [after]");
  uint64_t chunks = 0;
  if (role == "after") {
    TORTURE_CHECK(WorkAfterExec(&chunks) == torture::BurnExpected(chunks),
                  "wrong value after exec");
    return 0;
  }
  TORTURE_CHECK(WorkBeforeExec(&chunks) == torture::BurnExpected(chunks),
                "wrong value before exec");
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  TORTURE_CHECK(n > 0, "readlink: %s", std::strerror(errno));
  self[n] = '\0';
  char after[] = "after";
  char* args[] = {argv[0], after, nullptr};
  execve(self, args, environ);
  torture::Fail("execve %s: %s", self, std::strerror(errno));
}
