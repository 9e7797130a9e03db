// The state the signal handler reaches: thread slots with their rings, and counters.
//
// Concurrency contract:
// - The handler (any sampled thread) reads a slot's state, generation, bounds and ring, and
//   enqueues into that ring; it updates only atomic counters.
// - The control path (the ThreadRegistry, under its mu_) changes slots; a slot's ring
//   is set before its state becomes kActive and freed only after the slot left kActive, its
//   timer was deleted, and no handler is counted in ThreadSlot::handlers (a handler that
//   loaded kActive before the slot left it may still be writing the ring on another CPU:
//   deleting a timer does not wait for a handler already running).
// - One consumer at a time drains rings (under the session's data_mu_).
// Signal-safe header.
#ifndef INPROF_SDK_SAMPLER_H_
#define INPROF_SDK_SAMPLER_H_

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "signal/sample_record.h"

namespace inprof::internal {

// What identifies one of our signals (a timer's sigev_value, or a perf fd's entry in
// Sampler::fd_tokens): a tag that tells ours from anyone else's, the event, the slot, and
// the registration of that slot.
struct TimerToken {
  static constexpr uint64_t kTag = 0x1F9;  // 12 bits
  // The same fields under another tag: the one-shot CLOCK_MONOTONIC timer of Config::
  // timer_jitter, whose signal takes the sample a CPU timer's signal deferred.
  static constexpr uint64_t kJitterTag = 0x1FC;  // 0x1FA, 0x1FB: bootstrap.h
  static uint64_t AsJitter(uint64_t token) {
    return (token & ~(uint64_t{0xFFF} << 52)) | kJitterTag << 52;
  }
  static constexpr uint32_t kMaxEvents = 16;
  static uint64_t Encode(uint32_t event, uint32_t index, uint32_t generation) {
    return kTag << 52 | (uint64_t{event} & 0xF) << 48 | (uint64_t{generation} & 0xFFFFFF) << 24 |
           (index & 0xFFFFFF);
  }
  static bool Decode(uint64_t token, uint32_t* event, uint32_t* index, uint32_t* generation) {
    if (token >> 52 != kTag) return false;
    *event = static_cast<uint32_t>((token >> 48) & 0xF);
    *index = static_cast<uint32_t>(token & 0xFFFFFF);
    *generation = static_cast<uint32_t>((token >> 24) & 0xFFFFFF);
    return true;
  }
};

enum class SlotState : uint32_t { kFree, kActive, kRetiring };

// An engine's per-thread resources (see engine.h). Control path only.
struct ThreadSource {
  timer_t timer{};      // timer engine
  bool has_timer = false;
  int fd = -1;          // perf engine
  // perf engine: what PERF_EVENT_IOC_ID said of the event when it was opened, and the fd's
  // device and inode then. The program owns the fd number (it may close it or put a file
  // of its own there): the fd is ours only while the same event answers on it.
  uint64_t perf_id = 0;
  uint64_t perf_dev = 0;
  uint64_t perf_ino = 0;
  int32_t itimer_tid = 0;  // itimer engine: the tid entered in the tid table
  uint32_t itimer_slot = 0;  // ... and its slot
  int32_t alloc_tid = 0;     // alloc engine: the tid entered in Sampler::alloc_tids
  timer_t jitter_timer{};   // timer engine with Config::timer_jitter: the one-shot timer
  bool has_jitter_timer = false;
};

// The shortest period the perf engine gives a time event (ns): a quarter of its period, at
// most 100 us, at least the kernel's own 10 us. The kernel re-arms the event with its current
// period until the handler's ioctl sets the next, and a period of a few microseconds then
// interrupts the thread every 10 us while its signal is delivered and handled: on a virtual
// machine, where such an interrupt costs about as much, a thread stalled for up to 0.7 s
// (docs/platform-facts.md). Applied to the first period (PerfEngine::Start) and to every
// redrawn one (RedrawPeriod), each time with the difference taken off the next period.
constexpr uint64_t PerfTimePeriodFloorNs(uint64_t period_ns) {
  const uint64_t quarter = period_ns / 4 < 100000 ? period_ns / 4 : 100000;
  return quarter > 10000 ? quarter : 10000;
}

// How many samples of a thread one drawn period serves (Sampler::dither_every): every sample
// up to kMaxPeriodDrawsPerSecond samples per CPU-second, then as many as keep the draws at
// that rate (999 Hz: 4, 3989 Hz: 16). The draws' cost stays under 1 % of a CPU (250 x 27 us,
// measured on a VM), and the samples still fall at random phases of any loop: each draw
// moves the next ones by a random amount, only fewer times.
inline constexpr double kMaxPeriodDrawsPerSecond = 250;
constexpr uint32_t PeriodDrawEvery(double frequency_hz) {
  if (!(frequency_hz > kMaxPeriodDrawsPerSecond)) return 1;
  const double every = frequency_hz / kMaxPeriodDrawsPerSecond;
  uint32_t n = static_cast<uint32_t>(every);
  if (every > n) ++n;  // rounded up
  return n < 64 ? n : 64;
}

struct ThreadSlot {
  std::atomic<SlotState> state{SlotState::kFree};
  std::atomic<uint32_t> generation{0};
  std::atomic<int32_t> tid{0};
  std::atomic<uintptr_t> stack_lo{0};
  std::atomic<uintptr_t> stack_hi{0};   // 0 until known
  std::atomic<uintptr_t> probe_sp{0};   // left by the handler while bounds are unknown
  std::atomic<bool> in_handler{false};  // re-entry guard
  // Handlers inside TakeSample for this slot right now. With `state` it is the fence that
  // keeps a retired slot's rings alive while a handler may still write them (TakeSample and
  // ThreadRegistry::ReleaseRetired): a handler counts itself here (seq_cst) before it loads
  // `state`; the registry stores kRetiring (seq_cst) before it loads this count, and frees
  // nothing while it is not zero.
  std::atomic<uint32_t> handlers{0};
  // itimer engine: the thread CPU time its samples have accounted for so far (set at
  // registration and when the timer is re-armed, advanced by the handler).
  std::atomic<int64_t> itimer_cpu_base{0};
  // perf engine, set by the registry before the thread's sources start: bit e, the event's
  // first period was drawn short (Engine::FirstPeriod) and the handler restores the event's
  // own period after it.
  std::atomic<uint32_t> perf_first_pending{0};
  // ... and per event, the thread's CPU time (ns) at which that first period ends as drawn.
  // The event may run a little longer (PerfEngine::Start keeps a floor under the first
  // period); the handler's first redraw takes the difference off the next period.
  std::atomic<int64_t> perf_first_due[TimerToken::kMaxEvents] = {};
  // Timer engine, per event: the periods the handler took from the thread's signals so far
  // (1 + overrun per signal), counted while the slot is kActive. With
  // the three fields below, what the thread's exit accounts for (ThreadRegistry::RetireLocked).
  std::atomic<uint32_t> periods_seen[TimerToken::kMaxEvents] = {};
  // Config::timer_jitter: the kernel id of the thread's one-shot CLOCK_MONOTONIC timer (-1:
  // none), and the weight of the CPU-timer signals whose sample it will take.
  std::atomic<int32_t> jitter_timer{-1};
  std::atomic<uint32_t> jitter_weight{0};
  // ... and when it was armed: the thread's CPU clock and CLOCK_MONOTONIC then (ns).
  std::atomic<int64_t> jitter_armed_cpu{0};
  std::atomic<int64_t> jitter_armed_wall{0};
  SampleRing* ring = nullptr;
  CopyRing* copies = nullptr;  // stack copies for DWARF unwinding (unwind=dwarf or auto)
  // Control path only:
  ThreadSource sources[TimerToken::kMaxEvents];  // per event: the engine's resources
  bool self_registered = false;  // registered by the thread itself (pthread_create hook)
  uint32_t record = 0;           // the registry's ThreadRecord of this registration
  int64_t cpu_start_ns = 0;      // the thread's CPU clock when it was registered
  int64_t cpu_last_ns = 0;       // ... when a scan last looked
  // Per event, when its source started: the thread's CPU clock (ns) and the first period
  // drawn (Engine::FirstPeriod).
  int64_t armed_cpu_ns[TimerToken::kMaxEvents] = {};
  long first_ns[TimerToken::kMaxEvents] = {};
  // Samples of the first event drained from this slot's ring (written by the drain, read by
  // the registry when the slot is released or health is taken; both under the session's data_mu_).
  uint64_t drained_samples = 0;
  uint64_t drained_weight = 0;
};

struct SamplerCounters {
  std::atomic<uint64_t> signals{0};    // our sampling signals handled
  std::atomic<uint64_t> ring_full{0};  // dropped: collector fell behind
  std::atomic<uint64_t> reentered{0};  // dropped: signal arrived inside the handler
  std::atomic<uint64_t> stale{0};      // for a slot that was already retired
  std::atomic<uint64_t> chained{0};    // not ours: passed to the previous handler
  std::atomic<uint64_t> copy_full{0};  // no free stack copy: the sample kept its fp walk only
  std::atomic<uint64_t> profiler_work{0};  // weight left out: the thread was in the runtime
};

// How the handler captures stacks (Config::unwind).
enum class UnwindMode : uint8_t {
  kFp,     // walk the frame pointers into the sample ring
  kDwarf,  // copy registers and stack for the collector to unwind
  kAuto,   // both: the collector keeps the better chain
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uintptr_t>::is_always_lock_free);
static_assert(std::atomic<SlotState>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);
static_assert(std::atomic<int64_t>::is_always_lock_free);

// A tid -> slot table, for signals and hooks that carry no token: ITIMER_PROF's process-wide
// SIGPROF (the itimer engine) and the allocation hooks, which run on the allocating thread and
// find its slot by its tid. Open addressing with linear probing over single 64-bit entries
// (tid << 32 | slot index) so a reader never sees half an entry; 0 is empty, kTidTombstone a
// deleted entry. Writers (the registry, under its lock, through an engine) keep every entry
// within kMaxTidProbes of its home so a lookup is bounded.
inline constexpr uint64_t kTidTombstone = ~uint64_t{0};
inline constexpr uint32_t kMaxTidProbes = 32;

inline uint32_t TidHome(int32_t tid, uint32_t mask) {
  return (static_cast<uint32_t>(tid) * 0x9E3779B1u) & mask;
}

struct TidTable {
  std::atomic<uint64_t>* entries = nullptr;
  uint32_t mask = 0;

  // The slot of thread `tid`. A lookup racing with a removal may miss (the sample is then
  // dropped), never return a torn entry. Async-signal-safe.
  bool Lookup(int32_t tid, uint32_t* index) const {
    if (entries == nullptr) return false;
    const uint32_t home = TidHome(tid, mask);
    for (uint32_t i = 0; i < kMaxTidProbes; ++i) {
      const uint64_t entry = entries[(home + i) & mask].load(std::memory_order_acquire);
      if (entry == 0) return false;
      if (entry != kTidTombstone && static_cast<int32_t>(entry >> 32) == tid) {
        *index = static_cast<uint32_t>(entry);
        return true;
      }
    }
    return false;
  }
  // Enters `tid` -> `index`; false when its probe run is full (a pathological tid pattern:
  // the thread is skipped). One writer at a time. Not async-signal-safe.
  bool Insert(int32_t tid, uint32_t index) {
    const uint32_t home = TidHome(tid, mask);
    for (uint32_t i = 0; i < kMaxTidProbes; ++i) {
      std::atomic<uint64_t>& entry = entries[(home + i) & mask];
      const uint64_t old = entry.load(std::memory_order_relaxed);
      if (old == 0 || old == kTidTombstone) {
        entry.store(static_cast<uint64_t>(static_cast<uint32_t>(tid)) << 32 | index,
                    std::memory_order_release);
        return true;
      }
    }
    return false;
  }
  // Removes `tid`. One writer at a time. Not async-signal-safe.
  void Remove(int32_t tid) {
    const uint32_t home = TidHome(tid, mask);
    for (uint32_t i = 0; i < kMaxTidProbes; ++i) {
      const uint32_t at = (home + i) & mask;
      const uint64_t entry = entries[at].load(std::memory_order_relaxed);
      if (entry == 0) return;
      if (entry != kTidTombstone && static_cast<int32_t>(entry >> 32) == tid) {
        // A tombstone keeps later entries of the same probe run reachable; when nothing
        // follows, the run can shrink instead.
        const bool last = entries[(at + 1) & mask].load(std::memory_order_relaxed) == 0;
        entries[at].store(last ? 0 : kTidTombstone, std::memory_order_release);
        for (uint32_t back = at; last && back != home;) {
          back = (back - 1) & mask;
          if (entries[back].load(std::memory_order_relaxed) != kTidTombstone) break;
          entries[back].store(0, std::memory_order_release);
        }
        return;
      }
    }
  }
};

struct Sampler {
  ThreadSlot* slots = nullptr;
  // Slots constructed so far (the registry constructs them as threads need them, up to
  // max_threads): an index below it is a slot.
  std::atomic<uint32_t> slot_count{0};
  uint32_t max_depth = kMaxFrames;
  UnwindMode unwind = UnwindMode::kFp;
  int signal = 0;
  std::atomic<const CodeRanges*> code{nullptr};
  // perf engine: the TimerToken of the event behind each fd (0: not ours), indexed by the
  // si_fd of its overflow signals.
  std::atomic<uint64_t>* fd_tokens = nullptr;
  // The PERF_EVENT_IOC_ID of our event behind each fd (same index): the handler asks the fd
  // for its event id before it changes the event's period, so that a number the program
  // took over (a file, its own perf event) is never touched.
  std::atomic<uint64_t>* fd_ids = nullptr;
  uint32_t fd_token_count = 0;
  // Weight of one perf overflow signal, per event (1 for time events, whose period is the
  // event's own; the period for count events, so weights add up to counts).
  uint32_t event_weights[TimerToken::kMaxEvents] = {};
  // perf engine, time events: the mean period in ns. The handler draws the next period
  // uniformly from [mean/2, 3*mean/2) (PERF_EVENT_IOC_PERIOD) every `dither_every` samples,
  // so sampling cannot lock step with a loop whose own period is close to a multiple of the
  // sampling period (docs/architecture.md "Dithered periods"). 0: the event keeps its fixed
  // period.
  uint64_t event_dither_ns[TimerToken::kMaxEvents] = {};
  // A drawn period serves this many samples of a thread before the next draw (each draw is
  // three system calls, one of which restarts the event's timer: about 27 us on a VM, 2.7 %
  // of a CPU at 999 Hz). 1 up to kMaxPeriodDrawsPerSecond samples per CPU-second, more above.
  uint32_t dither_every = 1;
  // perf engine: the event's own period (ns or a count), which the handler restores after a
  // thread's first, shorter period when the event is not dithered. 0 for other engines.
  uint64_t event_perf_period[TimerToken::kMaxEvents] = {};
  // Config::timer_jitter: a CPU timer's signal takes no sample but arms the thread's one-shot
  // CLOCK_MONOTONIC timer a random delay in [0, timer_jitter_ns) later (one kernel tick), so
  // samples leave the tick's grid. 0: off.
  int64_t timer_jitter_ns = 0;
  uint32_t event_count = 1;
  // itimer engine: the table above (mask + 1 entries) and 1 + the index of the event it
  // samples while ITIMER_PROF is ours (0: SIGPROF from a kernel timer is not ours).
  TidTable tid_table;
  std::atomic<uint32_t> itimer_event{0};
  // The itimer's period: each of its samples is weighted by the periods of the thread's CPU
  // time since the thread's last one (ThreadSlot::itimer_cpu_base).
  int64_t itimer_period_ns = 0;
  // Allocation sampling (alloc_sampler.h): the hooks find the allocating thread's slot here,
  // entered by the alloc engine (engines/alloc_engine.cpp) as threads register.
  TidTable alloc_tids;
  // The collector's futex word: it sleeps on it between drains; Stop, and an allocation hook
  // whose ring is filling up, set it to 1 and wake it. After each drain the collector sets it
  // back to 0 and wakes the hooks waiting for room.
  std::atomic<uint32_t> drain_word{0};
  SamplerCounters counters;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_SAMPLER_H_
