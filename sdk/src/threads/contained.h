// Exceptions the runtime caught so that they could not reach C code: a thread's entry
// function or a C library callback, where an exception ends the program with std::terminate.
// Counted process-wide by place and reported in every health block
// (ThreadRegistry::TakeWarnings). Signal-safe header.
#ifndef INPROF_SDK_CONTAINED_H_
#define INPROF_SDK_CONTAINED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

enum class ContainedAt : uint32_t {
  kThreadStart,  // the pthread_create hook, before the program's start routine
  kRegistry,     // registering, retiring or rescanning threads
  kExporter,     // the window exporter thread
  kNetwork,      // the pull endpoint's and the push client's threads
  kHook,         // an interposed function (dlclose) or a fork handler
  kCount
};
inline std::atomic<uint64_t> g_contained[static_cast<size_t>(ContainedAt::kCount)];
// Async-signal-safe.
inline void CountContained(ContainedAt at) noexcept {
  g_contained[static_cast<size_t>(at)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_CONTAINED_H_
