// What an export of a small profile costs a process on its own, with and without the
// per-user symbol cache (docs/symbolizer.md, "Cache"): N distinct addresses, half spread
// over this program's own code (which links the symbolizer: ~1 MB of C++ with DWARF), half
// over libc (whose DWARF, with libc6-dbg, is a separate 6 MB file), resolved by a new
// inprof::Symbolizer as the SDK's does at exit. Prints one line:
//   symbolize_ms save_ms addresses cache_hits cache_misses files frames_with_line
// symbolize_ms: from constructing the Symbolizer to the last answer (wall); save_ms: the
// cache write that follows (SaveCache), 0 without a cache.
//   inprof_symbol_cache_bench CACHE_DIR|- [ADDRESSES [other]]
// `other`: each address moved to another byte of the same function (as a later run of a
// sampled program meets other instructions of its hot functions), chosen before the clock
// starts by a forked child with its own uncached Symbolizer, so that nothing it read
// stays in this process.
#include <link.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "inprof/symbolize.h"

namespace {

double Milliseconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Object {
  bool main;  // else the object whose name contains `part`
  const char* part;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

// `count` addresses spread evenly over the object's executable segments.
std::vector<uint64_t> Spread(Object object, size_t count) {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* o = static_cast<Object*>(data);
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (o->main ? name[0] != '\0' : std::strstr(name, o->part) == nullptr) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            o->ranges.emplace_back(info->dlpi_addr + ph.p_vaddr,
                                   info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
        }
        return 1;
      },
      &object);
  uint64_t total = 0;
  for (const auto& [b, e] : object.ranges) total += e - b;
  std::vector<uint64_t> out;
  if (total == 0) return out;
  const uint64_t step = total / count;
  for (uint64_t x = step / 2; x < total && out.size() < count; x += step) {
    uint64_t rest = x;
    for (const auto& [b, e] : object.ranges) {
      if (rest < e - b) {
        out.push_back(b + rest);
        break;
      }
      rest -= e - b;
    }
  }
  return out;
}

// Each address moved by a few bytes where the outermost function (and module) stays the
// same; an address with no such neighbour stays. Computed in a child process.
std::vector<uint64_t> OtherAddressesInTheSameFunctions(const std::vector<uint64_t>& addresses) {
  int fds[2];
  if (pipe(fds) != 0) return addresses;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    inprof::Symbolizer symbolizer;
    for (uint64_t a : addresses) {
      const inprof::SymbolizedFrame outer = symbolizer.Symbolize(a).back();
      uint64_t moved = a;
      for (const int64_t delta : {16, -16, 8, -8, 4, -4, 1}) {
        const inprof::SymbolizedFrame& other = symbolizer.Symbolize(a + delta).back();
        if (other.function == outer.function && other.module == outer.module &&
            !outer.module.empty() && other.function.find("+0x") == std::string::npos) {
          moved = a + delta;
          break;
        }
      }
      if (write(fds[1], &moved, sizeof moved) != sizeof moved) _exit(1);
    }
    _exit(0);
  }
  close(fds[1]);
  std::vector<uint64_t> out;
  uint64_t moved = 0;
  while (pid > 0 && read(fds[0], &moved, sizeof moved) == sizeof moved) out.push_back(moved);
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return out.size() == addresses.size() ? out : addresses;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4 || (argc == 4 && std::strcmp(argv[3], "other") != 0)) {
    std::fprintf(stderr, "usage: %s CACHE_DIR|- [ADDRESSES [other]]\n", argv[0]);
    return 2;
  }
  const size_t count = argc >= 3 ? std::strtoul(argv[2], nullptr, 10) : 1000;
  std::vector<uint64_t> addresses = Spread({true, nullptr, {}}, count / 2);
  for (uint64_t a : Spread({false, "libc.so.6", {}}, count - count / 2)) addresses.push_back(a);
  if (argc == 4) addresses = OtherAddressesInTheSameFunctions(addresses);

  inprof::SymbolizerOptions options;
  if (std::strcmp(argv[1], "-") != 0) options.cache_dir = argv[1];
  const double start = Milliseconds();
  inprof::Symbolizer symbolizer(options);
  size_t with_line = 0;
  for (uint64_t a : addresses) {
    if (symbolizer.Symbolize(a).front().line != 0) ++with_line;
  }
  const double resolved = Milliseconds();
  symbolizer.SaveCache();
  const double saved = Milliseconds();
  const inprof::SymbolizerStats stats = symbolizer.Stats();
  std::printf("%.3f %.3f %llu %llu %llu %llu %zu\n", resolved - start, saved - resolved,
              static_cast<unsigned long long>(stats.addresses),
              static_cast<unsigned long long>(stats.cache_hits),
              static_cast<unsigned long long>(stats.cache_misses),
              static_cast<unsigned long long>(stats.files), with_line);
  return 0;
}
