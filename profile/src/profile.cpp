// The profile model's few functions (profile.h).
#include "inprof/profile.h"

#include <algorithm>
#include <functional>

namespace inprof {

size_t FrameHash::operator()(const Frame& f) const {
  size_t h = std::hash<std::string>()(f.function);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>()(f.file));
  mix(std::hash<std::string>()(f.module));
  mix(std::hash<uint64_t>()(f.address));
  mix((size_t{f.line} << 32) ^ f.column);
  mix(static_cast<size_t>(f.kind));
  return h;
}

void SortTimeline(std::vector<TimedSample>* timeline) {
  auto earlier = [](const TimedSample& a, const TimedSample& b) { return a.time_ns < b.time_ns; };
  if (!std::is_sorted(timeline->begin(), timeline->end(), earlier)) {
    std::stable_sort(timeline->begin(), timeline->end(), earlier);
  }
}

}  // namespace inprof
