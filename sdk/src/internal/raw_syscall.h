// System calls made by the signal handler, without going through libc. Signal-safe header.
#ifndef INPROF_SDK_RAW_SYSCALL_H_
#define INPROF_SDK_RAW_SYSCALL_H_

#include <time.h>

#include <cstdint>

namespace inprof::internal {

// The calling thread's kernel id. Async-signal-safe.
int32_t CurrentTidRaw();
// The process's CPU time (CLOCK_THREAD_CPUTIME_ID) in ns, -1 on failure. Async-signal-safe.
int64_t ThreadCpuNsRaw();
// clock_gettime(clock_id) in ns through the system call, -1 on failure. Async-signal-safe.
int64_t ClockNsSyscall(long clock_id);
// CLOCK_MONOTONIC in ns (when a sample was taken), 0 on failure: through the function
// SetMonotonicClock published (libc's clock_gettime, which reads the vDSO's clock without
// entering the kernel: about 20 ns against 180 for the system call), else the system call.
// Async-signal-safe.
int64_t MonotonicNsRaw();
// Publishes libc's clock_gettime for MonotonicNsRaw; the control path calls it before the
// handler is installed, so no loader work (lazy binding) ever happens in the handler.
void SetMonotonicClock(int (*clock_gettime_fn)(clockid_t, struct timespec*));
// System call numbers the signal path uses through RawSyscall4.
#if defined(__x86_64__)
inline constexpr long kSysWrite = 1;
inline constexpr long kSysIoctl = 16;
inline constexpr long kSysFutex = 202;
inline constexpr long kSysTimerSettime = 223;
#elif defined(__aarch64__)
inline constexpr long kSysWrite = 64;
inline constexpr long kSysIoctl = 29;
inline constexpr long kSysFutex = 98;
inline constexpr long kSysTimerSettime = 110;
#endif

// futex(2) operations on a word of this process (FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE).
inline constexpr long kFutexWaitPrivate = 128;
inline constexpr long kFutexWakePrivate = 129;

// A system call with up to four arguments: the result, or -errno. Async-signal-safe.
long RawSyscall4(long number, long a0 = 0, long a1 = 0, long a2 = 0, long a3 = 0);
// Ends the process with `status` (exit_group), as _exit does. Async-signal-safe.
[[noreturn]] void ExitGroupRaw(int status);

}  // namespace inprof::internal

#endif  // INPROF_SDK_RAW_SYSCALL_H_
