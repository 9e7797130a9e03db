// Taps (see taps.h). Control path.
#include "signal/raw_syscall.h"
#include "session/taps.h"

#include <time.h>

namespace inprof::internal {
namespace {

// The kernel's clock, as the handler reads it (raw_syscall.h).
int64_t Now(clockid_t clock) { return ClockNsRaw(clock); }

}  // namespace

uint64_t Taps::Open(size_t budget, size_t events, bool timeline) {
  if (taps_.size() >= kMaxTaps) return 0;
  Tap tap{++next_id_, StackTable(budget, events, timeline)};
  tap.start_unix_ns = Now(CLOCK_REALTIME);
  tap.start_monotonic_ns = Now(CLOCK_MONOTONIC);
  tap.table.set_time_origin(tap.start_monotonic_ns);
  taps_.push_back(std::move(tap));
  return taps_.back().id;
}

std::optional<Taps::Tap> Taps::Take(uint64_t id) {
  for (auto it = taps_.begin(); it != taps_.end(); ++it) {
    if (it->id == id) {
      std::optional<Tap> tap = std::move(*it);
      taps_.erase(it);
      return tap;
    }
  }
  return std::nullopt;
}

void Taps::Add(std::span<const uintptr_t> stack, uint64_t weight, size_t event,
               int64_t time_ns) {
  for (Tap& tap : taps_) {
    tap.table.Add(stack, weight, event, time_ns);
    ++tap.samples;
  }
}

}  // namespace inprof::internal
