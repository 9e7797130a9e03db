// The SDK's export-time symbolizer (inprof::Symbolizer, the one that resolves a profile's
// stacks at inprof_stop) on many distinct addresses of a library loaded in this process:
// reads file virtual addresses of the library (hex, one a line, as bench/symbolize_vs.sh
// draws them), adds the library's load bias, resolves each with inline expansion, and
// prints the CPU and wall seconds it took; then looks them all up again (cached) and prints
// the CPU nanoseconds per lookup. bench/symbolize_runtime.sh compares it with
// llvm-symbolizer-14 on the same addresses.
//   inprof_symbolize_runtime_bench LIBRARY_NAME_PART ADDRESS_FILE
#include <link.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "inprof/symbolize.h"

namespace {

struct Search {
  const char* part;
  uint64_t bias = 0;
  bool found = false;
};

double Seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LIBRARY_NAME_PART ADDRESS_FILE\n", argv[0]);
    return 2;
  }
  Search search{argv[1]};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->part) != nullptr) {
          s->bias = info->dlpi_addr;
          s->found = true;
          return 1;
        }
        return 0;
      },
      &search);
  if (!search.found) {
    std::fprintf(stderr, "%s: no loaded object named *%s*\n", argv[0], argv[1]);
    return 1;
  }
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[2]);
    return 1;
  }
  std::vector<uint64_t> addresses;
  for (std::string line; std::getline(in, line);) {
    addresses.push_back(std::strtoull(line.c_str(), nullptr, 16) + search.bias);
  }
  inprof::Symbolizer symbolizer;
  const double cpu0 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
  const double wall0 = Seconds(CLOCK_MONOTONIC);
  size_t frames = 0;
  size_t with_line = 0;
  for (uint64_t address : addresses) {
    const auto& resolved = symbolizer.Symbolize(address);
    frames += resolved.size();
    if (resolved.front().line != 0) ++with_line;
  }
  std::printf("%zu %.3f %.3f %zu %zu\n", addresses.size(), Seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0,
              Seconds(CLOCK_MONOTONIC) - wall0, frames, with_line);
  // The same addresses again: every answer is cached now (what an export pays for a stack
  // it has already seen, in this or an earlier window).
  size_t sink = 0;
  const double warm0 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
  constexpr int kRounds = 5;
  for (int r = 0; r < kRounds; ++r) {
    for (uint64_t address : addresses) sink += symbolizer.Symbolize(address).size();
  }
  const double warm = Seconds(CLOCK_PROCESS_CPUTIME_ID) - warm0;
  std::printf("warm %.1f %zu\n", warm * 1e9 / (kRounds * static_cast<double>(addresses.size())),
              sink / kRounds);
  return 0;
}
