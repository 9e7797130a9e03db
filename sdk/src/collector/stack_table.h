// The collector's table of distinct raw stacks and their weights, bounded in memory.
//
// A stack is a list of addresses, leaf first, already adjusted for lookup (return
// addresses minus one) and possibly ending in a marker. Interning is by content (hash +
// compare) into flat arrays. When adding a new stack would take the table past its byte
// budget, the sample is charged to the [overflow] stack and counted: memory never grows
// past the budget and no weight is silently lost.
//
// Thread-safety: not thread-safe; the session serialises access (its data_mu_).
#ifndef INPROF_SDK_STACK_TABLE_H_
#define INPROF_SDK_STACK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "inprof/raw_profile.h"

namespace inprof::internal {

// Marker "addresses" that no code can have. Their values are the raw profile format's
// (inprof/raw_profile.h, docs/raw-profile.md), which keeps them as they are.
inline constexpr uintptr_t kTruncatedMarker = kRawTruncated;  // went on past max_depth
inline constexpr uintptr_t kOverflowMarker = kRawOverflow;    // the table was full
// The root of every stack is the thread it was taken on, as kThreadMarker | tid: stacks of
// different threads stay apart, so profiles can carry thread labels (pprof's "thread id").
// No user-space code lives that high on x86-64 or aarch64 (48-bit user address spaces).
inline constexpr uintptr_t kThreadMarker = kRawThreadTag;
// A Lua frame of the LuaJIT bridge: kLuaFrameMarker | index of the interned frame.
inline constexpr uintptr_t kLuaFrameMarker = kRawLuaTag;
inline constexpr bool IsLuaFrameMarker(uintptr_t a) { return (a & kRawTagMask) == kRawLuaTag; }
// The thread's labels when the sample was taken: kLabelsMarker | label set id (labels.h), at
// the root end after the thread marker, so samples with different labels stay apart. Absent
// when the thread had no labels.
inline constexpr uintptr_t kLabelsMarker = kRawLabelsTag;
inline constexpr bool IsLabelsMarker(uintptr_t a) { return (a & kRawTagMask) == kRawLabelsTag; }
inline constexpr uint32_t LabelSetOfMarker(uintptr_t a) { return static_cast<uint32_t>(a); }
inline constexpr int64_t ThreadOfMarker(uintptr_t a) {
  return static_cast<int64_t>(a & ((uintptr_t{1} << 48) - 1));
}

// uintptr_t holds the format's 64-bit values unchanged on the 64-bit targets we build for.
static_assert(sizeof(uintptr_t) == sizeof(uint64_t));

// One sample in time: which stack it added to (index in the table's order; kOverflowStack for
// the [overflow] stack), for which event, with what weight.
struct TimedEntry {
  int64_t time_ns;  // CLOCK_MONOTONIC
  uint32_t stack;
  uint32_t weight;
  uint32_t event;
};
inline constexpr uint32_t kOverflowStack = UINT32_MAX;

class StackTable {
 public:
  // `timeline`: keep every sample's time too (Add's time_ns), within a quarter of max_bytes;
  // samples past that still add their weight but no time (timeline_dropped).
  StackTable(size_t max_bytes, size_t event_count, bool timeline = false);

  // Adds `weight` for `event` to the stack, taken at `time_ns` (CLOCK_MONOTONIC; 0 unknown:
  // no timeline entry). Returns the stack's index (kOverflowStack when the table was full).
  // Not async-signal-safe.
  uint32_t Add(std::span<const uintptr_t> frames, uint64_t weight, size_t event,
               int64_t time_ns = 0);
  // A timeline entry for weight already added to stack `stack` (samples aggregated before
  // their times were known: a forked child's first ones).
  void AddTime(uint32_t stack, uint64_t weight, size_t event, int64_t time_ns);

  size_t size() const { return entries_.size(); }
  size_t bytes() const;
  uint64_t overflow_samples() const { return overflow_samples_; }
  // Every timed sample in the order added (time order within a thread; drains interleave
  // threads, so consumers sort by time).
  const std::vector<TimedEntry>& timeline() const { return timeline_; }
  uint64_t timeline_dropped() const { return timeline_dropped_; }
  // The CLOCK_MONOTONIC time the table's span starts at (the session's or the window's start):
  // timeline times are counted from it when the table becomes a profile.
  int64_t time_origin() const { return time_origin_; }
  void set_time_origin(int64_t monotonic_ns) { time_origin_ = monotonic_ns; }
  size_t event_count() const { return event_count_; }
  // The frames of the stack at `index` (< size()).
  std::span<const uintptr_t> Frames(uint32_t index) const {
    const Entry& e = entries_[index];
    return {frames_.data() + e.offset, e.length};
  }

  // Calls f(std::span<const uintptr_t> frames, std::span<const uint64_t> weights) for every
  // stack, including the [overflow] stack when it has weight.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      f(std::span<const uintptr_t>(frames_.data() + e.offset, e.length),
        std::span<const uint64_t>(weights_.data() + i * event_count_, event_count_));
    }
    bool any = false;
    for (uint64_t w : overflow_weights_) any = any || w != 0;
    if (any) {
      static constexpr uintptr_t kOverflow[] = {kOverflowMarker};
      f(std::span<const uintptr_t>(kOverflow, 1),
        std::span<const uint64_t>(overflow_weights_.data(), event_count_));
    }
  }

  void Clear();

 private:
  struct Entry {
    uint64_t hash;
    uint32_t offset;
    uint32_t length;
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;

  bool Fits(size_t extra_frames) const;
  void Rehash(size_t bucket_count);

  size_t max_bytes_;
  size_t event_count_;
  std::vector<uintptr_t> frames_;
  std::vector<Entry> entries_;
  std::vector<uint64_t> weights_;  // entries_.size() * event_count_
  std::vector<uint32_t> buckets_;  // open addressing, linear probing; power of two
  std::vector<uint64_t> overflow_weights_;
  uint64_t overflow_samples_ = 0;
  bool keep_timeline_ = false;
  std::vector<TimedEntry> timeline_;
  uint64_t timeline_dropped_ = 0;
  int64_t time_origin_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_STACK_TABLE_H_
