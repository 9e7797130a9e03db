// What a session hands out while it runs: the profile so far and taps. Control path.
#include <time.h>

#include "inprof/profile.h"
#include "session/session.h"
#include "signal/raw_syscall.h"

namespace inprof::internal {

Profile Session::Snapshot() { return builder_.Symbolize(SnapshotRaw()); }

RawProfile Session::SnapshotRaw() {
  // A copy of the table (compact arrays), so the rest runs without data_mu_.
  StackTable copy(0, 0);
  Health health;
  // The span: the current window's in continuous mode, the whole run's otherwise.
  int64_t start_unix_ns = times_.start_realtime_ns;
  int64_t start_monotonic_ns = times_.start_monotonic_ns;
  {
    MutexLock lock(&data_mu_);
    DrainLocked();
    copy = table_;
    AddLiveLocked(&copy);
    health = CurrentHealth();
    if (config_.window > 0) {
      window_.SinceStart(&health);
      start_unix_ns = window_.start_unix_ns();
      start_monotonic_ns = window_.start_monotonic_ns();
    }
  }
  const int64_t end = stopped_ ? times_.stop_monotonic_ns : ClockNsRaw(CLOCK_MONOTONIC);
  return builder_.BuildRaw(copy, std::move(health), start_unix_ns, end - start_monotonic_ns);
}

uint64_t Session::AddTap() {
  MutexLock lock(&data_mu_);
  if (!started_ || stopped_) return 0;
  DrainLocked();  // what came before the tap is not its business
  return taps_.Open(TapBudget(), config_.events.size(), config_.timeline);
}

std::optional<Window> Session::TakeTap(uint64_t id) {
  std::optional<Taps::Tap> tap;
  Health health;
  {
    MutexLock lock(&data_mu_);
    if (!stopped_) DrainLocked();
    tap = taps_.Take(id);
    if (!tap) return std::nullopt;
    // alloc_* of the capture; inuse_* as it ends.
    AddLiveLocked(&tap->table);
    health = CurrentHealth();
  }
  health.overflow = tap->table.overflow_samples();
  health.samples = tap->samples;
  const int64_t duration = ClockNsRaw(CLOCK_MONOTONIC) - tap->start_monotonic_ns;
  Window window;
  window.start_unix_ns = tap->start_unix_ns;
  window.end_unix_ns = tap->start_unix_ns + duration;
  window.profile = builder_.Build(tap->table, std::move(health), tap->start_unix_ns, duration);
  return window;
}

}  // namespace inprof::internal
