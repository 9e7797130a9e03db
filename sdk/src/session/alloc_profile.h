// The session's side of allocation sampling: each drained allocation sample becomes its
// unbiased weights (alloc_objects, alloc_space), its stack is kept for the live table, and a
// snapshot adds what is still live (inuse_objects, inuse_space). Control path, under the
// session's data_mu_.
#ifndef INPROF_SDK_ALLOC_PROFILE_H_
#define INPROF_SDK_ALLOC_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "collector/stack_table.h"
#include "signal/alloc_sampler.h"

namespace inprof::internal {

// The weights of one sampled allocation of `size` bytes at mean rate `rate`: 1/p objects and
// size/p bytes, p = 1 - e^(-size/rate), the probability that it was sampled.
struct AllocWeights {
  double objects = 0;
  double bytes = 0;
};
AllocWeights UnbiasedWeights(uint64_t size, uint64_t rate);

class AllocProfile {
 public:
  // `stack_budget`: bytes for the stacks of live sampled allocations.
  AllocProfile(size_t stack_budget, uint64_t rate, uint64_t seed);

  // One drained allocation sample with its stack (leaf first, thread marker included): its
  // weights, rounded to integers at random so that the rounding adds no bias, and its stack
  // attached to its live entry.
  struct Rounded {
    uint64_t objects = 0;
    uint64_t bytes = 0;
  };
  Rounded OnSample(std::span<const uintptr_t> stack, const AllocInfo& info);

  // Adds the sampled allocations live now to `table`: inuse_objects as event `objects_event`,
  // inuse_space as the next. Per stack, the weights are summed before they are rounded.
  void AddLive(StackTable* table, size_t objects_event);

  // The sampled allocations live now: how many, and their estimated objects and bytes.
  struct LiveTotals {
    uint64_t sampled = 0;
    double objects = 0;
    double bytes = 0;
  };
  LiveTotals Live() const;

  // Counts for the health block.
  uint64_t unattached() const { return unattached_; }  // stacks that found no room
  uint64_t rate() const { return rate_; }

 private:
  // Keeps only the stacks live entries use, when the stack store is past half its budget.
  void CompactIfFull();
  uint64_t Uniform();

  size_t stack_budget_;
  uint64_t rate_;
  uint64_t rng_;
  StackTable stacks_;  // the stacks of live entries (LiveEntry::stack - 1)
  uint64_t unattached_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_ALLOC_PROFILE_H_
