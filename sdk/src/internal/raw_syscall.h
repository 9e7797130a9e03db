// System calls made by the signal handler, without going through libc. Signal-safe header.
#ifndef INPROF_SDK_RAW_SYSCALL_H_
#define INPROF_SDK_RAW_SYSCALL_H_

#include <cstdint>

namespace inprof::internal {

// The calling thread's kernel id. Async-signal-safe.
int32_t CurrentTidRaw();
// The process's CPU time (CLOCK_THREAD_CPUTIME_ID) in ns, -1 on failure. Async-signal-safe.
int64_t ThreadCpuNsRaw();

}  // namespace inprof::internal

#endif  // INPROF_SDK_RAW_SYSCALL_H_
