#include "collector/stack_table.h"

#include <algorithm>
#include <cstring>

namespace inprof::internal {
namespace {

uint64_t HashFrames(std::span<const uintptr_t> frames) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ frames.size();
  for (uintptr_t f : frames) {
    h ^= f + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

// Capacity a vector grows to when it must hold `needed` elements.
size_t GrownCapacity(size_t capacity, size_t needed) {
  if (needed <= capacity) return capacity;
  return std::max(needed, capacity * 2);
}

}  // namespace

StackTable::StackTable(size_t max_bytes, size_t event_count, bool timeline)
    : max_bytes_(max_bytes),
      event_count_(event_count == 0 ? 1 : event_count),
      overflow_weights_(event_count_, 0),
      keep_timeline_(timeline) {
  buckets_.assign(1024, kEmpty);
}

size_t StackTable::bytes() const {
  return frames_.capacity() * sizeof(uintptr_t) + entries_.capacity() * sizeof(Entry) +
         weights_.capacity() * sizeof(uint64_t) + buckets_.capacity() * sizeof(uint32_t) +
         timeline_.capacity() * sizeof(TimedEntry);
}

void StackTable::AddTime(uint32_t stack, uint64_t weight, size_t event, int64_t time_ns) {
  if (!keep_timeline_ || time_ns == 0) return;
  // The timeline grows by doubling up to a quarter of the budget (less what the stacks left
  // of it), then stays there: the table as a whole stays within max_bytes.
  if (timeline_.size() == timeline_.capacity()) {
    const size_t timeline_bytes = timeline_.capacity() * sizeof(TimedEntry);
    const size_t stack_bytes = bytes() - timeline_bytes;
    const size_t room = max_bytes_ > stack_bytes ? max_bytes_ - stack_bytes : 0;
    const size_t limit = std::min(max_bytes_ / 4, room) / sizeof(TimedEntry);
    if (timeline_.size() >= limit) {
      ++timeline_dropped_;
      return;
    }
    timeline_.reserve(std::min(limit, std::max<size_t>(1024, timeline_.size() * 2)));
  }
  timeline_.push_back(TimedEntry{time_ns, stack, static_cast<uint32_t>(weight),
                                 static_cast<uint32_t>(event)});
}

// Would the table still be within budget after adding one stack of `extra_frames`,
// counting the capacity every vector would grow to (growth doubles)?
bool StackTable::Fits(size_t extra_frames) const {
  const size_t n = entries_.size() + 1;
  size_t total =
      GrownCapacity(frames_.capacity(), frames_.size() + extra_frames) * sizeof(uintptr_t) +
      GrownCapacity(entries_.capacity(), n) * sizeof(Entry) +
      GrownCapacity(weights_.capacity(), n * event_count_) * sizeof(uint64_t);
  size_t buckets = buckets_.size();
  if (n * 10 > buckets * 7) buckets *= 2;
  total += buckets * sizeof(uint32_t) + timeline_.capacity() * sizeof(TimedEntry);
  return total <= max_bytes_ && frames_.size() + extra_frames < UINT32_MAX;
}

void StackTable::Rehash(size_t bucket_count) {
  buckets_.assign(bucket_count, kEmpty);
  const size_t mask = bucket_count - 1;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    size_t b = entries_[i].hash & mask;
    while (buckets_[b] != kEmpty) b = (b + 1) & mask;
    buckets_[b] = i;
  }
}

uint32_t StackTable::Add(std::span<const uintptr_t> frames, uint64_t weight, size_t event,
                         int64_t time_ns) {
  if (event >= event_count_) return kOverflowStack;
  const uint64_t hash = HashFrames(frames);
  const size_t mask = buckets_.size() - 1;
  size_t b = hash & mask;
  while (buckets_[b] != kEmpty) {
    const Entry& e = entries_[buckets_[b]];
    if (e.hash == hash && e.length == frames.size() &&
        std::equal(frames.begin(), frames.end(), frames_.begin() + e.offset)) {
      weights_[static_cast<size_t>(buckets_[b]) * event_count_ + event] += weight;
      AddTime(buckets_[b], weight, event, time_ns);
      return buckets_[b];
    }
    b = (b + 1) & mask;
  }
  if (!Fits(frames.size())) {
    overflow_weights_[event] += weight;
    ++overflow_samples_;
    AddTime(kOverflowStack, weight, event, time_ns);
    return kOverflowStack;
  }
  const uint32_t index = static_cast<uint32_t>(entries_.size());
  entries_.push_back(
      Entry{hash, static_cast<uint32_t>(frames_.size()), static_cast<uint32_t>(frames.size())});
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  weights_.resize(weights_.size() + event_count_, 0);
  weights_[static_cast<size_t>(index) * event_count_ + event] = weight;
  buckets_[b] = index;
  if (entries_.size() * 10 > buckets_.size() * 7) Rehash(buckets_.size() * 2);
  AddTime(index, weight, event, time_ns);
  return index;
}

void StackTable::Clear() {
  frames_.clear();
  entries_.clear();
  weights_.clear();
  buckets_.assign(1024, kEmpty);
  std::fill(overflow_weights_.begin(), overflow_weights_.end(), 0);
  overflow_samples_ = 0;
  timeline_.clear();
  timeline_dropped_ = 0;
}

}  // namespace inprof::internal
