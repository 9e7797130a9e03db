// libFuzzer target: `inprof addr2line`'s and `inprof symbolize`'s address input (a pipe from
// perf or a file of addresses) on arbitrary bytes: AddressReader's chunks and ParseAddress.
//
// What must hold: the chunks are the input, in order, nothing lost or added; each is at most
// 99 characters (binutils' fgets into 100 bytes) and ends at its first new line if it has
// one; ParseAddress stops inside the chunk's text.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "addr2line.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "addr2line input: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FILE* const sink = std::fopen("/dev/null", "w");
  const int fd = memfd_create("addr2line-input", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  std::string all;
  {
    inprof::viewer::AddressReader reader(fd, sink);
    std::string chunk;
    while (reader.Next(&chunk)) {
      if (chunk.empty() || chunk.size() > 99) Fail("a chunk is empty or longer than 99 bytes");
      const size_t newline = chunk.find('\n');
      if (newline != std::string::npos && newline + 1 != chunk.size()) {
        Fail("a chunk goes on after its new line");
      }
      const char* end = nullptr;
      inprof::viewer::ParseAddress(chunk.c_str(), &end);
      if (end < chunk.c_str() || end > chunk.c_str() + std::strlen(chunk.c_str())) {
        Fail("ParseAddress stopped outside the text");
      }
      all += chunk;
    }
  }
  close(fd);
  if (all.size() != written || std::memcmp(all.data(), data, written) != 0) {
    Fail("the chunks are not the input");
  }
  return 0;
}
