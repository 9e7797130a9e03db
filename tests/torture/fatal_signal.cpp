// Works for a moment (so the profiler has samples and a running session), then dies of the
// signal named by the argument. The runner compares how it died, and whether it dumped core,
// with the same program run without the profiler.
//   fatal_signal segv|abrt|bus
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstring>
#include <string>

#include "torture.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(mode == "segv" || mode == "abrt" || mode == "bus",
                "usage: fatal_signal segv|abrt|bus");
  uint64_t chunks = 0;
  const uint64_t value = torture::BurnCpu(0.3, &chunks);
  TORTURE_CHECK(value == torture::BurnExpected(chunks), "wrong value");
  if (mode == "segv") {
    volatile int* null = nullptr;
    *null = 1;
  } else if (mode == "abrt") {
    abort();
  } else {
    // A page of a file that was truncated after it was mapped.
    char path[] = "/tmp/inprof-torture-bus-XXXXXX";
    const int fd = mkstemp(path);
    TORTURE_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    unlink(path);
    TORTURE_CHECK(ftruncate(fd, 4096) == 0, "ftruncate");
    volatile char* page = static_cast<volatile char*>(
        mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    TORTURE_CHECK(page != MAP_FAILED, "mmap");
    TORTURE_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
    page[0] = 1;
  }
  torture::Fail("still alive after the fatal %s", mode.c_str());
}
