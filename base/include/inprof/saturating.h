// Integer sums that saturate instead of overflowing: weights and times read from files each
// fit in 64 bits, their sums need not, and a hostile file must not turn a sum negative.
//
// Thread-safety: pure functions. Async-signal-safe.
#ifndef INPROF_SATURATING_H_
#define INPROF_SATURATING_H_

#include <cstdint>
#include <limits>

namespace inprof {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline void AddSaturating(int64_t& total, int64_t value) { total = SaturatingAdd(total, value); }

}  // namespace inprof

#endif  // INPROF_SATURATING_H_
