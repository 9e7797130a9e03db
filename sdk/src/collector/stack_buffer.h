// One stack being assembled by the collector, off the signal path: leaf first, with room for
// kMaxFrames frames, a [truncated] marker and the thread marker. Passed explicitly to the
// functions that fill and read it. Not async-signal-safe (not needed: collector only).
#ifndef INPROF_SDK_STACK_BUFFER_H_
#define INPROF_SDK_STACK_BUFFER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "signal/sample_record.h"

namespace inprof::internal {

class StackBuffer {
 public:
  static constexpr size_t kCapacity = kMaxFrames + 2;
  void clear() { size_ = 0; }
  // Appends `address`; beyond kCapacity it is dropped (callers bound frames by kMaxFrames,
  // so the two markers always fit).
  void push(uintptr_t address) {
    if (size_ < kCapacity) frames_[size_++] = address;
  }
  size_t size() const { return size_; }
  // Removes every frame in [lo, hi).
  void drop_within(uintptr_t lo, uintptr_t hi) {
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      if (frames_[i] < lo || frames_[i] >= hi) frames_[kept++] = frames_[i];
    }
    size_ = kept;
  }
  std::span<const uintptr_t> frames() const { return {frames_.data(), size_}; }

 private:
  std::array<uintptr_t, kCapacity> frames_;
  size_t size_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_STACK_BUFFER_H_
