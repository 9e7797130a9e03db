// One sample as the signal handler hands it to the collector, and the per-thread ring.
// Signal-safe header: included by the handler.
#ifndef INPROF_SDK_SAMPLE_RECORD_H_
#define INPROF_SDK_SAMPLE_RECORD_H_

#include <ucontext.h>

#include <readerwriterqueue/readerwriterqueue.h>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"
#include "signal/alloc_sampler.h"

namespace inprof::internal {

// Hard upper bound of frames per record; Config::max_depth may lower it.
inline constexpr uint32_t kMaxFrames = 128;

// What a drained sample adds besides its stack: weight for one event, labels, time.
struct SampleMeta {
  uint32_t weight = 0;
  uint16_t event = 0;
  uint32_t labels = 0;  // label set id (labels.h), 0 for none
  int64_t time_ns = 0;  // CLOCK_MONOTONIC; 0 when unknown
  AllocInfo alloc;      // a sampled allocation's (alloc_sampler.h); size 0 for others
};

// What the handler passes to the record's constructor, which runs inside the ring slot.
struct WalkRequest {
  const ucontext_t* context;
  StackBounds bounds;
  const CodeRanges* code;
  uint32_t max_depth;
  uint32_t tid;
  uint32_t weight;
  uint32_t event;
  uint32_t labels;  // the thread's label set when the signal came
  int64_t time_ns;  // CLOCK_MONOTONIC when the signal came
  AllocInfo alloc{};  // a sampled allocation's; size 0 for a signal's sample
};

// A sample whose stack is given rather than walked: what a thread's exit takes for the periods
// no signal took (ThreadRegistry::RetireLocked). `depth` frames, leaf first, as SampleRecord's;
// with `repeat_last` the collector gives it the stack of the thread's last sample instead, and
// these frames only when it has none.
struct GivenStack {
  uint32_t tid;
  uint32_t weight;
  uint32_t event;
  uint32_t labels;
  int64_t time_ns;
  const uintptr_t* frames;
  uint32_t depth;
  bool repeat_last;
};

// A raw stack: leaf first, frames[0] is the interrupted pc and frames[1..] return addresses.
// Constructed in place inside the ring by the handler so the stack is walked straight into
// ring memory with no copy. frames beyond `depth` are left uninitialised on purpose.
struct SampleRecord {
  uint32_t tid;
  uint32_t weight;  // 1 + timer overrun, or the perf event's period in its unit count
  uint16_t event;   // index into the session's events
  uint16_t depth;
  uint32_t labels;  // the thread's label set (labels.h), 0 for none
  int64_t time_ns;  // CLOCK_MONOTONIC when the signal came; 0 when unknown
  WalkStop stop;
  bool recovered_leaf_caller;
  bool repeat_last = false;  // GivenStack::repeat_last
  AllocInfo alloc;           // WalkRequest::alloc
  uintptr_t frames[kMaxFrames];

  // Walks the interrupted stack. Async-signal-safe.
  explicit SampleRecord(const WalkRequest& request) {
    WalkResult r = FpWalk(request.context, request.bounds, request.code, frames, request.max_depth);
    tid = request.tid;
    weight = request.weight;
    event = static_cast<uint16_t>(request.event);
    labels = request.labels;
    time_ns = request.time_ns;
    depth = static_cast<uint16_t>(r.depth);
    stop = r.stop;
    recovered_leaf_caller = r.recovered_leaf_caller;
    alloc = request.alloc;
  }
  explicit SampleRecord(const GivenStack& given)
      : tid(given.tid),
        weight(given.weight),
        event(static_cast<uint16_t>(given.event)),
        depth(0),
        labels(given.labels),
        time_ns(given.time_ns),
        stop(WalkStop::kRoot),
        recovered_leaf_caller(false),
        repeat_last(given.repeat_last) {
    while (depth < given.depth && depth < kMaxFrames) {
      frames[depth] = given.frames[depth];
      ++depth;
    }
  }
  // Used only when the ring is prefaulted. Not async-signal-safe (not needed there).
  SampleRecord()
      : tid(0),
        weight(0),
        event(0),
        depth(0),
        labels(0),
        time_ns(0),
        stop(WalkStop::kRoot),
        recovered_leaf_caller(false) {}
};

// Single producer (the sampled thread's handler), single consumer (whoever holds the
// session's data_mu_). try_emplace never allocates.
using SampleRing = moodycamel::ReaderWriterQueue<SampleRecord>;

// A sample whose stack was copied for DWARF unwinding by the collector. In auto mode the
// handler also walks the frame pointers, so the collector can keep whichever chain is better.
struct CopyRecord {
  uint32_t tid;
  uint32_t weight;
  uint32_t labels;  // as SampleRecord's
  int64_t time_ns;
  uint16_t event;
  uint16_t fp_depth;  // frames in fp_frames (0: no fp walk was taken)
  WalkStop fp_stop;
  AllocInfo alloc;  // as SampleRecord's
  StackCopy copy;  // registers and where the copied bytes came from
  uintptr_t fp_frames[kMaxFrames];
};

// Per-thread ring of stack copies: one producer (the thread's handler), one consumer (whoever
// holds the session's data_mu_). Records and their byte windows are allocated and touched
// when the thread is registered (copy_ring.cpp), so the handler never allocates or faults.
class CopyRing {
 public:
  // Control path (copy_ring.cpp). `slots` is rounded up to a power of two.
  CopyRing(uint32_t slots, uint32_t slot_bytes);
  ~CopyRing();
  CopyRing(const CopyRing&) = delete;
  CopyRing& operator=(const CopyRing&) = delete;

  uint32_t slot_bytes() const { return slot_bytes_; }

  // The bytes a ring of `slots` copies of `slot_bytes` maps (what the constructor maps).
  static size_t MappingBytes(uint32_t slots, uint32_t slot_bytes);

  // Producer: the next free record and its byte window, or false when the ring is full.
  // Publish() makes it visible to the consumer. Async-signal-safe.
  bool Reserve(CopyRecord** record, uint8_t** bytes) {
    const uint32_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > mask_) return false;
    *record = &records_[head & mask_];
    *bytes = data_ + static_cast<size_t>(head & mask_) * slot_bytes_;
    return true;
  }
  void Publish() {
    head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Consumer: the oldest published record, or false when empty; Pop() releases it.
  // Not async-signal-safe (not needed there).
  bool Peek(const CopyRecord** record, const uint8_t** bytes) const {
    const uint32_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return false;
    *record = &records_[tail & mask_];
    *bytes = data_ + static_cast<size_t>(tail & mask_) * slot_bytes_;
    return true;
  }
  void Pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  bool Empty() const {
    return tail_.load(std::memory_order_relaxed) == head_.load(std::memory_order_acquire);
  }
  // Producer: more than a quarter of the copies are waiting for the consumer.
  // Async-signal-safe.
  bool QuarterFull() const {
    return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire) >
           (mask_ + 1) / 4;
  }

 private:
  std::atomic<uint32_t> head_{0};  // written by the producer
  std::atomic<uint32_t> tail_{0};  // written by the consumer
  uint32_t mask_ = 0;
  uint32_t slot_bytes_ = 0;
  CopyRecord* records_ = nullptr;
  uint8_t* data_ = nullptr;
  void* mapping_ = nullptr;  // records_ and data_, one anonymous mapping
  size_t mapping_bytes_ = 0;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace inprof::internal

#endif  // INPROF_SDK_SAMPLE_RECORD_H_
