#include "session/alloc_profile.h"

#include <cmath>
#include <unordered_map>
#include <vector>

namespace inprof::internal {

AllocWeights UnbiasedWeights(uint64_t size, uint64_t rate) {
  AllocWeights w;
  if (size == 0 || rate == 0) return w;
  const double s = static_cast<double>(size);
  // -expm1(-x) = 1 - e^(-x), exact also where x is tiny (a 16-byte allocation at 512 KiB).
  const double p = -std::expm1(-s / static_cast<double>(rate));
  if (!(p > 0)) return w;
  w.objects = 1.0 / p;
  w.bytes = s / p;
  return w;
}

AllocProfile::AllocProfile(size_t stack_budget, uint64_t rate, uint64_t seed)
    : stack_budget_(stack_budget),
      rate_(rate),
      rng_(seed != 0 ? seed * 0x9E3779B97F4A7C15ull | 1 : 0x2545F4914F6CDD1Dull),
      stacks_(stack_budget, 1) {}

uint64_t AllocProfile::Uniform() {
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545F4914F6CDD1Dull;
}

AllocProfile::Rounded AllocProfile::OnSample(std::span<const uintptr_t> stack,
                                             const AllocInfo& info) {
  const AllocWeights w = UnbiasedWeights(info.size, rate_);
  // Rounded up with the probability of the fraction: the expectation is the weight itself.
  const auto round = [this](double x) {
    const double whole = std::floor(x);
    const double u = static_cast<double>(Uniform() >> 11) * 0x1.0p-53;
    return static_cast<uint64_t>(whole) + (u < x - whole ? 1 : 0);
  };
  Rounded r{round(w.objects), round(w.bytes)};
  if (info.entry != kNoLiveEntry) {
    LiveEntry* e = LiveAt(info.entry);
    if (e != nullptr && e->tag.load(std::memory_order_relaxed) == info.tag &&
        e->ptr.load(std::memory_order_acquire) > kLiveClaimed) {
      CompactIfFull();
      const uint32_t index = stacks_.Add(stack, 0, 0);
      if (index == kOverflowStack) {
        ++unattached_;
      } else {
        e->stack.store(index + 1, std::memory_order_relaxed);
      }
    }
  }
  return r;
}

void AllocProfile::AddLive(StackTable* table, size_t objects_event) {
  const uint32_t capacity = LiveTableCapacity();
  std::unordered_map<uint32_t, AllocWeights> per_stack;
  for (uint32_t i = 0; i < capacity; ++i) {
    LiveEntry* e = LiveAt(i);
    if (e->ptr.load(std::memory_order_acquire) <= kLiveClaimed) continue;
    const uint32_t stack = e->stack.load(std::memory_order_relaxed);
    if (stack == 0 || stack > stacks_.size()) continue;
    const AllocWeights w = UnbiasedWeights(e->size.load(std::memory_order_relaxed), rate_);
    AllocWeights& sum = per_stack[stack - 1];
    sum.objects += w.objects;
    sum.bytes += w.bytes;
  }
  for (const auto& [stack, w] : per_stack) {
    const std::span<const uintptr_t> frames = stacks_.Frames(stack);
    table->Add(frames, static_cast<uint64_t>(std::llround(w.objects)), objects_event);
    table->Add(frames, static_cast<uint64_t>(std::llround(w.bytes)), objects_event + 1);
  }
}

AllocProfile::LiveTotals AllocProfile::Live() const {
  LiveTotals totals;
  const uint32_t capacity = LiveTableCapacity();
  for (uint32_t i = 0; i < capacity; ++i) {
    const LiveEntry* e = LiveAt(i);
    if (e->ptr.load(std::memory_order_acquire) <= kLiveClaimed) continue;
    const AllocWeights w = UnbiasedWeights(e->size.load(std::memory_order_relaxed), rate_);
    ++totals.sampled;
    totals.objects += w.objects;
    totals.bytes += w.bytes;
  }
  return totals;
}

void AllocProfile::CompactIfFull() {
  if (stacks_.bytes() < stack_budget_ / 2) return;
  StackTable fresh(stack_budget_, 1);
  const uint32_t capacity = LiveTableCapacity();
  for (uint32_t i = 0; i < capacity; ++i) {
    LiveEntry* e = LiveAt(i);
    const uint32_t stack = e->stack.load(std::memory_order_relaxed);
    if (stack == 0 || e->ptr.load(std::memory_order_acquire) <= kLiveClaimed ||
        stack > stacks_.size()) {
      continue;
    }
    const uint32_t index = fresh.Add(stacks_.Frames(stack - 1), 0, 0);
    // Not over an entry a hook has taken for a new allocation meanwhile (it clears stack).
    uint32_t expected = stack;
    e->stack.compare_exchange_strong(expected, index == kOverflowStack ? 0 : index + 1,
                                     std::memory_order_relaxed);
  }
  stacks_ = std::move(fresh);
}

}  // namespace inprof::internal
