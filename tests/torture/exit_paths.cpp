// Known CPU work, then the process ends the way the argument says. The runner checks that the
// outputs exist and hold samples whichever way it ended, and that "idle" (no CPU work: a
// process that took no sample) leaves no output file at all.
//   exit_paths _exit|_Exit|quick_exit|exit|return|idle
#include <cstring>
#include <string>

#include "torture.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(mode == "_exit" || mode == "_Exit" || mode == "quick_exit" || mode == "exit" ||
                    mode == "return" || mode == "idle",
                "usage: exit_paths _exit|_Exit|quick_exit|exit|return|idle");
  if (mode == "idle") {
    usleep(100000);  // asleep, not on a CPU: no CPU-time sample
  } else {
    uint64_t chunks = 0;
    const uint64_t value = torture::BurnCpu(0.4, &chunks);
    TORTURE_CHECK(value == torture::BurnExpected(chunks), "wrong value");
  }
  std::fflush(stdout);
  if (mode == "_exit") _exit(0);
  if (mode == "_Exit") _Exit(0);
  if (mode == "quick_exit") quick_exit(0);
  if (mode == "exit") exit(0);
  return 0;
}
