// One sample as the signal handler hands it to the collector, and the per-thread ring.
// Signal-safe header: included by the handler.
#ifndef INPROF_SDK_SAMPLE_RECORD_H_
#define INPROF_SDK_SAMPLE_RECORD_H_

#include <ucontext.h>

#include <readerwriterqueue/readerwriterqueue.h>
#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"

namespace inprof::internal {

// Hard upper bound of frames per record; Config::max_depth may lower it.
inline constexpr uint32_t kMaxFrames = 128;

// What the handler passes to the record's constructor, which runs inside the ring slot.
struct WalkRequest {
  const ucontext_t* context;
  StackBounds bounds;
  const CodeRanges* code;
  uint32_t max_depth;
  uint32_t tid;
  uint32_t weight;
  uint32_t event;
};

// A raw stack: leaf first, frames[0] is the interrupted pc and frames[1..] return addresses.
// Constructed in place inside the ring by the handler so the stack is walked straight into
// ring memory with no copy. frames beyond `depth` are left uninitialised on purpose.
struct SampleRecord {
  uint32_t tid;
  uint32_t weight;  // 1 + timer overrun, or the perf event's period in its unit count
  uint16_t event;   // index into the session's events
  uint16_t depth;
  WalkStop stop;
  bool recovered_leaf_caller;
  uintptr_t frames[kMaxFrames];

  // Walks the interrupted stack. Async-signal-safe.
  explicit SampleRecord(const WalkRequest& request) {
    WalkResult r = FpWalk(request.context, request.bounds, request.code, frames, request.max_depth);
    tid = request.tid;
    weight = request.weight;
    event = static_cast<uint16_t>(request.event);
    depth = static_cast<uint16_t>(r.depth);
    stop = r.stop;
    recovered_leaf_caller = r.recovered_leaf_caller;
  }
  // Used only when the ring is prefaulted. Not async-signal-safe (not needed there).
  SampleRecord()
      : tid(0), weight(0), depth(0), stop(WalkStop::kRoot), recovered_leaf_caller(false) {}
};

// Single producer (the sampled thread's handler), single consumer (whoever holds the
// session's drain lock). try_emplace never allocates.
using SampleRing = moodycamel::ReaderWriterQueue<SampleRecord>;

}  // namespace inprof::internal

#endif  // INPROF_SDK_SAMPLE_RECORD_H_
