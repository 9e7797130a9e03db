// The events a session can sample, and what each one needs.
//
//   cpu                 CPU time of each thread (timer or perf engine, see engine.h)
//   wall                wall-clock time of every thread, running or blocked: where threads
//                       wait. Per-thread CLOCK_MONOTONIC timers; a blocked thread is woken by
//                       the signal, so nanosleep/poll/epoll_wait (not restartable) return
//                       EINTR. Its rate is `wall_frequency` (default 19 Hz), kept low for that.
//   task-clock, cpu-clock, page-faults, context-switches
//                       perf_event software events (perf engine required)
//   cycles, instructions, cache-misses, branch-misses
//                       perf_event hardware events: need a PMU (a VM often has none)
//   lua                 Lua stacks of an attached LuaJIT VM (inprof/luajit.h): taken by
//                       LuaJIT's own profiler at VM safe points, no native engine
//   alloc               sampled allocations (signal/alloc_sampler.h): four events of the
//                       profile, alloc_objects/alloc_space (everything allocated) and
//                       inuse_objects/inuse_space (sampled allocations still live)
//   lock                sampled lock contention (signal/lock_sampler.h): two events,
//                       lock_contentions (waits) and lock_delay (nanoseconds waited)
//   cond                condition waits (pthread_cond_wait & co., the same sampler): two
//                       events, cond_waits and cond_delay; apart from `lock`, because a
//                       thread that waits for work to arrive is not held up by a lock
// Not async-signal-safe (control path only).
#ifndef INPROF_SDK_EVENTS_H_
#define INPROF_SDK_EVENTS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace inprof::internal {

enum class EventSource { kCpuTime, kWallTime, kPerf, kLua, kAlloc, kLock, kCond };

// What `alloc` stands for in the events list, in this order.
inline constexpr const char* kAllocEvents[] = {"alloc_objects", "alloc_space", "inuse_objects",
                                               "inuse_space"};
// What `lock` stands for in the events list, in this order.
inline constexpr const char* kLockEvents[] = {"lock_contentions", "lock_delay"};
// What `cond` stands for in the events list, in this order.
inline constexpr const char* kCondEvents[] = {"cond_waits", "cond_delay"};

// Whether the event is recorded by the hooks (allocations, lock and condition waits) rather
// than sampled in time by a signal.
inline bool IsHookEvent(EventSource source) {
  return source == EventSource::kAlloc || source == EventSource::kLock ||
         source == EventSource::kCond;
}

struct EventSpec {
  const char* name;
  EventSource source;
  uint32_t perf_type;    // PERF_TYPE_* for kPerf
  uint64_t perf_config;  // PERF_COUNT_* for kPerf
  bool time_based;       // period comes from the frequency (ns); otherwise a count
  uint64_t count_period; // events per sample for count events
  const char* unit;      // "nanoseconds" or "count"
  bool kernel_side;      // happens inside the kernel: cannot be sampled with exclude_kernel
};

// The event called `name`, or nullptr.
const EventSpec* FindEvent(std::string_view name);
// "cpu, wall, task-clock, ..." for messages.
std::string KnownEventNames();

}  // namespace inprof::internal

#endif  // INPROF_SDK_EVENTS_H_
