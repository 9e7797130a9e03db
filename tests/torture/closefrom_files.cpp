// A server's start-up: closefrom(3) closes every descriptor it did not open itself (OpenSSH,
// daemons), then the program opens two files, which get the lowest numbers (3 and 4, where a
// runtime's own descriptors may have been), and writes records to both while it works, until
// the runner's SIGTERM ends it. A runtime that still writes to, polls or closes "its" old
// descriptor numbers would corrupt or cut the program's files. With `check DIR` the program
// checks the files another run left: each a whole number of records, every record intact.
// The runner compares how the run ended with the run without the profiler (killed by SIGTERM,
// as the program keeps the default disposition) and checks the files with `check`.
//   closefrom_files write DIR | check DIR
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "torture.h"

namespace {

constexpr size_t kRecord = 64;

// Record `n` of file `which`: its number and the file's letter, then a fill that depends on
// both, ended by a newline.
void MakeRecord(char which, uint64_t n, char* out) {
  std::memset(out, 0, kRecord);
  std::snprintf(out, kRecord, "%c %020llu ", which, static_cast<unsigned long long>(n));
  for (size_t i = std::strlen(out); i < kRecord - 1; ++i) {
    out[i] = static_cast<char>('a' + (n * 7 + i + static_cast<unsigned char>(which)) % 26);
  }
  out[kRecord - 1] = '\n';
}

void WriteAll(int fd, const char* data, size_t size, const char* what) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    TORTURE_CHECK(n > 0, "write %s: %s", what, std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

int Check(const std::string& dir) {
  for (char which : {'a', 'b'}) {
    const std::string path = dir + "/" + which + ".dat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    TORTURE_CHECK(fd >= 0, "open %s: %s", path.c_str(), std::strerror(errno));
    char got[kRecord], want[kRecord];
    uint64_t n = 0;
    for (;; ++n) {
      const ssize_t r = read(fd, got, kRecord);
      if (r == 0) break;
      TORTURE_CHECK(r == static_cast<ssize_t>(kRecord),
                    "%s: record %llu is cut (%zd bytes): the file was written to by someone else",
                    path.c_str(), static_cast<unsigned long long>(n), r);
      MakeRecord(which, n, want);
      TORTURE_CHECK(std::memcmp(got, want, kRecord) == 0, "%s: record %llu differs", path.c_str(),
                    static_cast<unsigned long long>(n));
    }
    close(fd);
    TORTURE_CHECK(n >= 10, "%s: only %llu records", path.c_str(),
                  static_cast<unsigned long long>(n));
    std::printf("%s: %llu records intact\n", path.c_str(), static_cast<unsigned long long>(n));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  TORTURE_CHECK(mode == "write" || mode == "check", "usage: closefrom_files write|check DIR");
  const std::string dir = argv[2];
  if (mode == "check") return Check(dir);

  closefrom(3);
  const int a = open((dir + "/a.dat").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int b = open((dir + "/b.dat").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  TORTURE_CHECK(a == 3 && b == 4, "after closefrom(3) the files got %d and %d, not 3 and 4", a, b);
  char record[kRecord];
  uint64_t n = 0;
  uint64_t chunks = 0;
  // Some records and CPU time (samples) before the runner is told, then until it signals.
  for (; n < 10; ++n) {
    for (int fd : {a, b}) {
      MakeRecord(fd == a ? 'a' : 'b', n, record);
      WriteAll(fd, record, kRecord, fd == a ? "a.dat" : "b.dat");
    }
    TORTURE_CHECK(torture::BurnCpu(0.02, &chunks) == torture::BurnExpected(chunks), "wrong value");
  }
  std::printf("written\n");
  std::fflush(stdout);
  const double deadline = torture::ProcessCpuSeconds() + 20;  // the runner signals long before
  for (; torture::ProcessCpuSeconds() < deadline; ++n) {
    for (int fd : {a, b}) {
      MakeRecord(fd == a ? 'a' : 'b', n, record);
      WriteAll(fd, record, kRecord, fd == a ? "a.dat" : "b.dat");
    }
    TORTURE_CHECK(torture::BurnCpu(0.005, &chunks) == torture::BurnExpected(chunks), "wrong value");
  }
  torture::Fail("no SIGTERM came within 20 s of CPU time");
}
