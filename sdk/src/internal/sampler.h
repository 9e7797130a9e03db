// The state the signal handler reaches: thread slots with their rings, and counters.
//
// Concurrency contract:
// - The handler (any sampled thread) reads a slot's state, generation, bounds and ring, and
//   enqueues into that ring; it updates only atomic counters.
// - The control path (registry, under Session's registry lock) changes slots; a slot's ring
//   is set before its state becomes kActive and freed only after the slot left kActive and
//   its timer was deleted (so no handler can still be writing it).
// - One consumer at a time drains rings (Session's drain lock).
// Signal-safe header.
#ifndef INPROF_SDK_SAMPLER_H_
#define INPROF_SDK_SAMPLER_H_

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "internal/sample_record.h"

namespace inprof::internal {

// What identifies one of our signals (a timer's sigev_value, or a perf fd's entry in
// Sampler::fd_tokens): a tag that tells ours from anyone else's, the event, the slot, and
// the registration of that slot.
struct TimerToken {
  static constexpr uint64_t kTag = 0x1F9;  // 12 bits
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
};

struct ThreadSlot {
  std::atomic<SlotState> state{SlotState::kFree};
  std::atomic<uint32_t> generation{0};
  std::atomic<int32_t> tid{0};
  std::atomic<uintptr_t> stack_lo{0};
  std::atomic<uintptr_t> stack_hi{0};   // 0 until known
  std::atomic<uintptr_t> probe_sp{0};   // left by the handler while bounds are unknown
  std::atomic<bool> in_handler{false};  // re-entry guard
  SampleRing* ring = nullptr;
  // Control path only:
  ThreadSource sources[TimerToken::kMaxEvents];  // per event: the engine's resources
  bool self_registered = false;  // registered by the thread itself (pthread_create hook)
};

struct SamplerCounters {
  std::atomic<uint64_t> signals{0};    // our sampling signals handled
  std::atomic<uint64_t> ring_full{0};  // dropped: collector fell behind
  std::atomic<uint64_t> reentered{0};  // dropped: signal arrived inside the handler
  std::atomic<uint64_t> stale{0};      // for a slot that was already retired
  std::atomic<uint64_t> chained{0};    // not ours: passed to the previous handler
};

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uintptr_t>::is_always_lock_free);
static_assert(std::atomic<SlotState>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

struct Sampler {
  ThreadSlot* slots = nullptr;
  uint32_t slot_count = 0;
  uint32_t max_depth = kMaxFrames;
  int signal = 0;
  std::atomic<const CodeRanges*> code{nullptr};
  // perf engine: the TimerToken of the event behind each fd (0: not ours), indexed by the
  // si_fd of its overflow signals.
  std::atomic<uint64_t>* fd_tokens = nullptr;
  uint32_t fd_token_count = 0;
  // Weight of one perf overflow signal, per event (1 for time events, whose period is the
  // event's own; the period for count events, so weights add up to counts).
  uint32_t event_weights[TimerToken::kMaxEvents] = {};
  uint32_t event_count = 1;
  SamplerCounters counters;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_SAMPLER_H_
