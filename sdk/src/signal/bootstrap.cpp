// Signal path: a forked child's samples before its session starts (signal/bootstrap.h).
// Allocates nothing, takes no lock, calls nothing outside the signal path.
#include "signal/bootstrap.h"

#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

Bootstrap g_bootstrap;
std::atomic<uint32_t> g_watcher_requests{0};

void PostWatcherRequest(uint32_t request) {
  g_watcher_requests.fetch_or(request, std::memory_order_seq_cst);
  RawSyscall4(kSysFutex, reinterpret_cast<long>(&g_watcher_requests), kFutexWakePrivate, 1);
}

namespace {

uint64_t HashFrames(const uintptr_t* frames, uint32_t n, uint8_t stop, uint32_t labels) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n ^ (uint64_t{stop} << 40) ^ (uint64_t{labels} << 8);
  for (uint32_t i = 0; i < n; ++i) {
    h ^= frames[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

bool SameFrames(const uintptr_t* a, const uintptr_t* b, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The sample's time, when there is room for it.
void AddTime(BootstrapTable* t, uint32_t entry, uint32_t weight, int64_t time_ns) {
  if (time_ns == 0 || t->times_used >= BootstrapTable::kTimes) return;
  t->times[t->times_used] = BootstrapTable::Timed{time_ns, entry, weight};
  t->times_used += 1;
}

// Returns the entry the sample was added to (kNoEntry: the overflow weight).
uint32_t Add(BootstrapTable* t, const uintptr_t* frames, uint32_t n, uint8_t stop, uint32_t labels,
             uint32_t weight, int64_t time_ns) {
  t->samples += 1;
  t->weight += weight;
  const uint64_t hash = HashFrames(frames, n, stop, labels);
  const uint32_t mask = BootstrapTable::kEntries - 1;
  for (uint32_t probe = 0, i = static_cast<uint32_t>(hash) & mask; probe < BootstrapTable::kEntries;
       ++probe, i = (i + 1) & mask) {
    BootstrapTable::Entry& e = t->entries[i];
    if (e.used == 0) {
      // Keep a quarter of the entries free so probes stay short.
      if (t->entries_used >= BootstrapTable::kEntries / 4 * 3 ||
          t->frames_used + n > BootstrapTable::kFrames) {
        break;
      }
      for (uint32_t f = 0; f < n; ++f) t->frames[t->frames_used + f] = frames[f];
      e.hash = hash;
      e.offset = t->frames_used;
      e.length = static_cast<uint16_t>(n);
      e.stop = stop;
      e.labels = labels;
      e.weight = weight;
      e.used = 1;
      t->frames_used += n;
      t->order[t->entries_used] = i;
      t->entries_used += 1;
      AddTime(t, i, weight, time_ns);
      return i;
    }
    if (e.hash == hash && e.length == n && e.stop == stop && e.labels == labels &&
        SameFrames(t->frames + e.offset, frames, n)) {
      e.weight += weight;
      AddTime(t, i, weight, time_ns);
      return i;
    }
  }
  t->overflow_weight += weight;
  AddTime(t, BootstrapTable::kNoEntry, weight, time_ns);
  return BootstrapTable::kNoEntry;
}

}  // namespace

void BootstrapSample(const ucontext_t* context, uint32_t weight) {
  Bootstrap& b = g_bootstrap;
  b.busy.fetch_add(1, std::memory_order_seq_cst);
  if (b.active.load(std::memory_order_seq_cst) && b.table != nullptr &&
      CurrentTidRaw() == b.tid) {
    uintptr_t frames[BootstrapTable::kMaxDepth];
    const WalkResult walk = FpWalk(context, b.bounds, b.code.load(std::memory_order_seq_cst),
                                   frames, b.max_depth);
    BootstrapTable* t = b.table;
    const uint32_t labels = ThreadLabelSet();
    const int64_t now = MonotonicNsRaw();
    const uint32_t times_before = t->times_used;
    const uint32_t entry =
        Add(t, frames, walk.depth, static_cast<uint8_t>(walk.stop), labels, weight, now);
    b.samples.store(t->samples, std::memory_order_relaxed);
    // The stack too, for the session's DWARF unwinder (BootstrapTable::kCopies).
    if (b.copy_bytes != 0 && t->copies_used < BootstrapTable::kCopies) {
      BootstrapTable::Copy& c = t->copies[t->copies_used];
      c.entry = entry;
      c.time_index = t->times_used != times_before ? times_before : BootstrapTable::kNoEntry;
      c.weight = weight;
      c.labels = labels;
      c.time_ns = now;
      CopyStack(context, b.bounds, t->copy_bytes[t->copies_used], b.copy_bytes, &c.copy);
      t->copies_used += 1;
    }
    // The first (or wake_after-th) sample of a deferred session: the watcher starts it.
    if (b.wake_watcher && b.table->samples == b.wake_after) {
      PostWatcherRequest(kWatcherStartSession);
    } else if (b.wake_watcher && b.table->samples == 1) {
      PostWatcherRequest(kWatcherMark);
    }
  }
  b.busy.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace inprof::internal
