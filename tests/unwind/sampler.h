// Takes real signal samples of the calling thread the way the runtime does: a per-thread
// timer signal whose handler calls CopyStack into buffers prepared (and touched) before the
// timer starts. The tests unwind the copies afterwards.
#ifndef INPROF_TESTS_UNWIND_SAMPLER_H_
#define INPROF_TESTS_UNWIND_SAMPLER_H_

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "inprof/unwind.h"

namespace inprof::testing {

struct CapturedStack {
  StackCopy copy;
  std::unique_ptr<uint8_t[]> data;
};

// One at a time per process (the handler reaches it through a global). Not thread-safe:
// Start/Stop/Reset on the sampled thread.
class Sampler {
 public:
  // `slots` samples of at most `stack_bytes` each.
  Sampler(size_t slots, size_t stack_bytes);
  ~Sampler();

  // Samples the calling thread every `interval_us` of wall-clock time with SIGPROF.
  void Start(long interval_us);
  void Stop();
  // Forgets the samples taken so far (call while stopped).
  void Reset();

  // Samples taken so far (grows from the handler; never beyond slots).
  const std::atomic<unsigned>& taken() const { return taken_; }
  const CapturedStack& sample(size_t i) const { return slots_[i]; }
  size_t slots() const { return slots_.size(); }

  // The calling thread's stack bounds (pthread_getattr_np).
  static StackBounds CurrentThreadStack();

 private:
  static void Handler(int signo, siginfo_t* info, void* context);

  std::vector<CapturedStack> slots_;
  size_t stack_bytes_;
  StackBounds bounds_;
  std::atomic<unsigned> taken_{0};
  void* timer_ = nullptr;
  bool timer_armed_ = false;
};

}  // namespace inprof::testing

#endif  // INPROF_TESTS_UNWIND_SAMPLER_H_
