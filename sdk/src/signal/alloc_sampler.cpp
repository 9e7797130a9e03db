// Sampled allocations on the allocating thread (alloc_sampler.h). Signal path: runs inside
// malloc, possibly inside a program's signal handler; calls nothing outside these objects
// but raw system calls (tests/sdk/signal_path_symbols.cmake checks it).
#include "signal/alloc_sampler.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <cstring>

#include "signal/hook_context.h"
#include "signal/raw_syscall.h"
#include "signal/sampler.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

extern std::atomic<Sampler*> g_sampler;

__thread int64_t t_alloc_left __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// The thread's generator (xorshift64*), the epoch its countdown was drawn in, and whether a
// hook's slow path is running on it (a program's signal handler that allocates while it is
// does not sample: the ring is the thread's and may be half written).
__thread uint64_t t_alloc_rng __attribute__((tls_model("initial-exec"))) = 0;
__thread uint32_t t_alloc_epoch __attribute__((tls_model("initial-exec"))) = 0;
__thread bool t_alloc_busy __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_alloc_probe __attribute__((tls_model("initial-exec"))) = false;


// The live table and its filter: mapped once, never freed (alloc_sampler.h).
std::atomic<LiveEntry*> g_live{nullptr};
std::atomic<uint32_t> g_live_mask{0};
std::atomic<uint8_t>* g_filter = nullptr;
std::atomic<uint32_t> g_next_tag{0};
// Whether an entry was written since the table was installed or last cleared.
std::atomic<bool> g_live_dirty{false};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}


uint64_t NextRandom(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

// Enters `ptr`; returns its index, or kNoLiveEntry when its probe run is full.
uint32_t EnterLive(uintptr_t ptr, uint64_t size, uint32_t* tag) {
  LiveEntry* table = g_live.load(std::memory_order_acquire);
  if (table == nullptr) return kNoLiveEntry;
  const uint32_t mask = g_live_mask.load(std::memory_order_relaxed);
  const uint32_t home = static_cast<uint32_t>(Mix(ptr)) & mask;
  for (uint32_t i = 0; i < kLiveProbes; ++i) {
    const uint32_t at = (home + i) & mask;
    LiveEntry& e = table[at];
    uintptr_t old = e.ptr.load(std::memory_order_relaxed);
    if (old != 0 && old != kLiveTombstone) continue;
    if (!e.ptr.compare_exchange_strong(old, kLiveClaimed, std::memory_order_acquire)) continue;
    if (!g_live_dirty.load(std::memory_order_relaxed)) g_live_dirty.store(true, std::memory_order_relaxed);
    *tag = g_next_tag.fetch_add(1, std::memory_order_relaxed) + 1;
    e.size.store(size, std::memory_order_relaxed);
    e.tag.store(*tag, std::memory_order_relaxed);
    e.stack.store(0, std::memory_order_relaxed);
    // Counted before the entry shows, so a free that finds it also finds the count non-zero.
    std::atomic<uint8_t>& f = g_filter[LiveFilterIndex(ptr)];
    uint8_t count = f.load(std::memory_order_relaxed);
    // Saturates: a counter at 255 is never decremented again (a false positive for good).
    while (count != 255 &&
           !f.compare_exchange_weak(count, count + 1, std::memory_order_relaxed)) {
    }
    g_alloc_state.live_count.fetch_add(1, std::memory_order_relaxed);
    e.ptr.store(ptr, std::memory_order_release);
    return at;
  }
  return kNoLiveEntry;
}

constexpr int kRoomWaits = 10;

}  // namespace

AllocSampling g_alloc_state;

size_t LiveTableBytes(uint32_t entries) { return size_t{entries} * sizeof(LiveEntry) + kLiveFilterSize; }

bool LiveTableInstalled() { return g_live.load(std::memory_order_acquire) != nullptr; }

void InstallLiveTable(void* memory, uint32_t entries) {
  // Fresh anonymous memory is zero: every entry empty, every counter 0.
  g_filter = reinterpret_cast<std::atomic<uint8_t>*>(static_cast<char*>(memory) +
                                                      size_t{entries} * sizeof(LiveEntry));
  g_alloc_state.filter.store(g_filter, std::memory_order_relaxed);
  g_live_mask.store(entries - 1, std::memory_order_relaxed);
  g_live.store(static_cast<LiveEntry*>(memory), std::memory_order_release);
}

void ClearLiveTable() {
  LiveEntry* table = g_live.load(std::memory_order_acquire);
  if (table == nullptr) return;
  const uint32_t size = g_live_mask.load(std::memory_order_relaxed) + 1;
  g_alloc_state.live_count.store(0, std::memory_order_relaxed);
  // Handing the pages back zeroes them (private anonymous memory) without touching them:
  // a loop that wrote zeros faulted in all of the table (6 MiB by default) at every session
  // start, and in a forked child copied every page of the parent's. A free that reads an
  // entry meanwhile reads the old one or zero, as it would around the loop.
  if (g_live_dirty.exchange(false, std::memory_order_relaxed)) {
    const size_t bytes = LiveTableBytes(size);
    if (RawSyscall4(kSysMadvise, reinterpret_cast<long>(table), static_cast<long>(bytes),
                    MADV_DONTNEED, 0) != 0) {
      for (uint32_t i = 0; i < size; ++i) {
        table[i].ptr.store(0, std::memory_order_relaxed);
        table[i].stack.store(0, std::memory_order_relaxed);
      }
      for (uint32_t i = 0; i < kLiveFilterSize; ++i) g_filter[i].store(0, std::memory_order_relaxed);
    }
  }
}

uint32_t LiveTableCapacity() {
  return g_live.load(std::memory_order_acquire) != nullptr
             ? g_live_mask.load(std::memory_order_relaxed) + 1
             : 0;
}

LiveEntry* LiveAt(uint32_t index) {
  LiveEntry* table = g_live.load(std::memory_order_acquire);
  if (table == nullptr || index > g_live_mask.load(std::memory_order_relaxed)) return nullptr;
  return &table[index];
}

double NegLog(double u) {
  // u = m * 2^e with m in [1, 2); ln(m) = 2 atanh(z), z = (m - 1) / (m + 1) in [0, 1/3]:
  // the series to z^15 is within 4e-10 of it, far below what a sampling draw needs.
  if (!(u > 0)) return 745.0;  // -ln of the smallest double: the longest countdown
  uint64_t bits;
  std::memcpy(&bits, &u, sizeof bits);
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
  std::memcpy(&m, &bits, sizeof m);
  const double z = (m - 1) / (m + 1);
  const double z2 = z * z;
  double series = 1.0 / 15;
  for (int k = 13; k >= 1; k -= 2) series = 1.0 / k + z2 * series;
  const double ln_m = 2 * z * series;
  return -(ln_m + exponent * 0.69314718055994530942);
}

uint64_t DrawAllocCountdown(uint64_t* state, uint64_t rate) {
  // u in (0, 1]: 53 random bits, never 0.
  const double u = static_cast<double>((NextRandom(state) >> 11) + 1) * 0x1.0p-53;
  const double draw = NegLog(u) * static_cast<double>(rate);
  return draw >= 9.0e18 ? uint64_t{9000000000000000000ull} : static_cast<uint64_t>(draw);
}

bool ProbeHooks(void* (*malloc_fn)(size_t), void (*free_fn)(void*)) {
  const uint64_t before = g_alloc_state.probes.load(std::memory_order_relaxed);
  const int64_t left = t_alloc_left;
  t_alloc_probe = true;
  t_alloc_left = -1;
  void* p = malloc_fn(16);
  t_alloc_probe = false;
  t_alloc_left = left;
  free_fn(p);
  return g_alloc_state.probes.load(std::memory_order_relaxed) != before;
}

INPROF_PROFILER_TEXT void AllocSlowPath(void* ptr, size_t size) {
  if (t_alloc_probe) {
    g_alloc_state.probes.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t_alloc_busy || t_profiler_work) {
    // Nested in our own slow path (a program's signal handler), or the runtime's own work
    // on a program thread: not the program's allocation. The countdown stays crossed, so
    // the next allocation decides again.
    return;
  }
  t_alloc_busy = true;
  const uint64_t rate = g_alloc_state.rate.load(std::memory_order_relaxed);
  const uint32_t epoch = g_alloc_state.epoch.load(std::memory_order_acquire);
  if (t_alloc_epoch != epoch || t_alloc_rng == 0) {
    // First allocation of this thread in this session: seed, draw a countdown, and let this
    // allocation count against it like any other.
    t_alloc_epoch = epoch;
    const uint64_t seed = g_alloc_state.seed.load(std::memory_order_relaxed);
    // Seeded runs: threads in the order they first allocate, so a run can be repeated.
    t_alloc_rng = seed != 0 ? Mix(seed ^ Mix(g_alloc_state.threads_seeded.fetch_add(
                                             1, std::memory_order_relaxed) + 1))
                            : Mix(static_cast<uint64_t>(MonotonicNsRaw()) ^
                                  (static_cast<uint64_t>(CurrentTidRaw()) << 40));
    if (t_alloc_rng == 0) t_alloc_rng = 1;
    const int64_t left = static_cast<int64_t>(DrawAllocCountdown(&t_alloc_rng, rate)) -
                         static_cast<int64_t>(size);
    t_alloc_left = left;
    if (left >= 0) {
      t_alloc_busy = false;
      return;
    }
  }
  // Sampled. The next countdown starts afresh (the exponential has no memory).
  t_alloc_left = static_cast<int64_t>(DrawAllocCountdown(&t_alloc_rng, rate));
  const uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
  const uintptr_t fp = *static_cast<const uintptr_t*>(__builtin_frame_address(0));
  // In the runtime itself, the allocation is the runtime's.
  const uintptr_t caller = HookCaller(fp);
  if (caller >= g_alloc_state.self_lo.load(std::memory_order_relaxed) &&
      caller < g_alloc_state.self_hi.load(std::memory_order_relaxed)) {
    t_alloc_busy = false;
    return;
  }

  g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  Sampler* sampler = g_sampler.load(std::memory_order_seq_cst);
  uint32_t index = 0;
  const int32_t tid = CurrentTidRaw();
  if (sampler == nullptr || !g_alloc_state.on.load(std::memory_order_relaxed) ||
      !sampler->alloc_tids.Lookup(tid, &index) || index >= sampler->slot_count) {
    g_alloc_state.no_slot.fetch_add(1, std::memory_order_relaxed);
  } else {
    AllocInfo info;
    info.size = size;
    info.entry = EnterLive(reinterpret_cast<uintptr_t>(ptr), size, &info.tag);
    if (info.entry == kNoLiveEntry) g_alloc_state.live_full.fetch_add(1, std::memory_order_relaxed);
    ucontext_t context;
    HookContext(&context, pc, sp, fp);
    const uint32_t event = g_alloc_state.event.load(std::memory_order_relaxed);
    bool filling = false;
    bool recorded = TakeHookSample(sampler, index, event, &context, info, &filling);
    // A burst of sampled allocations (a loop of large ones, each sampled) fills the ring
    // faster than the collector's period drains it: wake the collector when the ring is a
    // quarter full, and when it is full wait for a drain, at most kRoomWaits times 1 ms,
    // before dropping the sample (counted). Not in a stopped session's hooks (`on`).
    for (int i = 0; !recorded && i < kRoomWaits && g_alloc_state.on.load(std::memory_order_relaxed);
         ++i) {
      WakeCollector(sampler);
      g_alloc_state.waits.fetch_add(1, std::memory_order_relaxed);
      const struct timespec wait = {0, 1000000};
      RawSyscall4(kSysFutex, reinterpret_cast<long>(&sampler->drain_word), kFutexWaitPrivate, 1,
                  reinterpret_cast<long>(&wait));
      recorded = TakeHookSample(sampler, index, event, &context, info, &filling);
    }
    if (recorded) {
      g_alloc_state.sampled.fetch_add(1, std::memory_order_relaxed);
      if (filling) WakeCollector(sampler);
    } else {
      g_alloc_state.dropped.fetch_add(1, std::memory_order_relaxed);
    }
  }
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  t_alloc_busy = false;
}

void AllocForget(void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  LiveEntry* table = g_live.load(std::memory_order_acquire);
  if (table == nullptr) return;
  std::atomic<uint8_t>& f = g_filter[LiveFilterIndex(p)];
  const uint8_t count = f.load(std::memory_order_relaxed);
  if (count == 0) return;
  const uint32_t mask = g_live_mask.load(std::memory_order_relaxed);
  const uint32_t home = static_cast<uint32_t>(Mix(p)) & mask;
  for (uint32_t i = 0; i < kLiveProbes; ++i) {
    LiveEntry& e = table[(home + i) & mask];
    uintptr_t old = e.ptr.load(std::memory_order_acquire);
    if (old != p) continue;
    if (e.ptr.compare_exchange_strong(old, kLiveTombstone, std::memory_order_acq_rel)) {
      g_alloc_state.live_count.fetch_sub(1, std::memory_order_relaxed);
      uint8_t c = f.load(std::memory_order_relaxed);
      while (c != 0 && c != 255 &&
             !f.compare_exchange_weak(c, c - 1, std::memory_order_relaxed)) {
      }
    }
    return;
  }
}

}  // namespace inprof::internal
