#include "config/events.h"

#include <linux/perf_event.h>

namespace inprof::internal {
namespace {

// Count events get fixed periods chosen so a busy program takes hundreds, not millions, of
// signals per second; each sample then weighs `count_period` so totals estimate counts.
constexpr EventSpec kEvents[] = {
    {"cpu", EventSource::kCpuTime, 0, 0, true, 0, "nanoseconds", false},
    {"wall", EventSource::kWallTime, 0, 0, true, 0, "nanoseconds", false},
    {"lua", EventSource::kLua, 0, 0, true, 0, "nanoseconds", false},
    // `alloc` in a list of events: these four, in this order (kAllocEvents).
    {"alloc_objects", EventSource::kAlloc, 0, 0, false, 1, "count", false},
    {"alloc_space", EventSource::kAlloc, 0, 0, false, 1, "bytes", false},
    {"inuse_objects", EventSource::kAlloc, 0, 0, false, 1, "count", false},
    {"inuse_space", EventSource::kAlloc, 0, 0, false, 1, "bytes", false},
    // `lock` in a list of events: these two, in this order (kLockEvents).
    {"lock_contentions", EventSource::kLock, 0, 0, false, 1, "count", false},
    {"lock_delay", EventSource::kLock, 0, 0, false, 1, "nanoseconds", false},
    // `cond` in a list of events: these two, in this order (kCondEvents).
    {"cond_waits", EventSource::kCond, 0, 0, false, 1, "count", false},
    {"cond_delay", EventSource::kCond, 0, 0, false, 1, "nanoseconds", false},
    {"task-clock", EventSource::kPerf, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, true, 0,
     "nanoseconds", false},
    {"cpu-clock", EventSource::kPerf, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true, 0,
     "nanoseconds", false},
    {"page-faults", EventSource::kPerf, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false, 256,
     "count", false},
    // A context switch happens in the kernel: with exclude_kernel (all an unprivileged user
    // gets at perf_event_paranoid 2) it would never be counted.
    {"context-switches", EventSource::kPerf, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
     false, 1, "count", true},
    {"cycles", EventSource::kPerf, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false, 10000000,
     "count", false},
    {"instructions", EventSource::kPerf, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false,
     10000000, "count", false},
    {"cache-misses", EventSource::kPerf, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false,
     10000, "count", false},
    {"branch-misses", EventSource::kPerf, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false,
     10000, "count", false},
};

}  // namespace

const EventSpec* FindEvent(std::string_view name) {
  for (const EventSpec& e : kEvents) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

std::string KnownEventNames() {
  std::string names;
  for (const EventSpec& e : kEvents) {
    if (e.source == EventSource::kAlloc) {
      if (std::string_view(e.name) == kAllocEvents[0]) names += ", alloc";
      continue;
    }
    if (e.source == EventSource::kLock) {
      if (std::string_view(e.name) == kLockEvents[0]) names += ", lock";
      continue;
    }
    if (e.source == EventSource::kCond) {
      if (std::string_view(e.name) == kCondEvents[0]) names += ", cond";
      continue;
    }
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

}  // namespace inprof::internal
