// Takes real signal samples of the calling thread the way the runtime does: a per-thread
// timer signal whose handler calls CopyStack into buffers prepared (and touched) before the
// timer starts, and walks the frame-pointer chain of the same context. The tests unwind the
// copies afterwards.
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
  static constexpr uint32_t kMaxFpFrames = 128;
  StackCopy copy;
  std::unique_ptr<uint8_t[]> data;
  // The frame-pointer walk of the same interrupted context, taken in the handler as the
  // runtime's fp and auto modes do (frameless-leaf recovery only with SetCodeRanges).
  uintptr_t fp_frames[kMaxFpFrames];
  WalkResult fp;
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
  // Code ranges for FpWalk's frameless-leaf recovery, as the runtime passes them; must
  // outlive the sampling. Call while stopped.
  void SetCodeRanges(const CodeRanges* code) { code_ = code; }
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
  const CodeRanges* code_ = nullptr;
  std::atomic<unsigned> taken_{0};
  void* timer_ = nullptr;
  bool timer_armed_ = false;
};

}  // namespace inprof::testing

#endif  // INPROF_TESTS_UNWIND_SAMPLER_H_
