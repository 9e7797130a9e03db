// Taps: private copies of every sample from the moment one opens, for pull requests of "the
// next N seconds", in parallel with the session's own table and windows.
//
// Concurrency contract: every call under the collector's lock (the session's data_mu_); the
// collector thread adds, request threads open and take. Not async-signal-safe.
#ifndef INPROF_SDK_TAPS_H_
#define INPROF_SDK_TAPS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "collector/stack_table.h"

namespace inprof::internal {

class Taps {
 public:
  static constexpr size_t kMaxTaps = 4;
  struct Tap {
    uint64_t id = 0;
    StackTable table{0, 0};
    int64_t start_unix_ns = 0;
    int64_t start_monotonic_ns = 0;
    uint64_t samples = 0;
  };
  // Opens a tap with a table of `budget` bytes (keeping sample times with `timeline`); 0 when
  // kMaxTaps are open.
  uint64_t Open(size_t budget, size_t events, bool timeline);
  // Ends tap `id` and returns it; nullopt for an unknown id.
  std::optional<Tap> Take(uint64_t id);
  void Add(std::span<const uintptr_t> stack, uint64_t weight, size_t event, int64_t time_ns);

 private:
  std::vector<Tap> taps_;
  uint64_t next_id_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_TAPS_H_
