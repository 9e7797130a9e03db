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
// CLOCK_MONOTONIC in ns (when a sample was taken), 0 on failure. Async-signal-safe.
int64_t MonotonicNsRaw();
// The kernel's CPU-time clock of any thread of this process (what pthread_getcpuclockid
// returns, without needing a pthread_t). Async-signal-safe.
inline clockid_t ThreadCpuClock(int32_t tid) {
  // Linux: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) = (~tid << 3) | CPUCLOCK_PERTHREAD_MASK
  // | CPUCLOCK_SCHED, the same encoding pthread_getcpuclockid uses.
  return static_cast<clockid_t>((~static_cast<uint32_t>(tid) << 3) | 4u | 2u);
}
// clock_gettime(clock) in ns, -1 on failure: through the vDSO's own clock_gettime when
// InitVdsoClock found it (about 20 ns against 180 for the system call), else the system call.
// Never through libc's clock_gettime, which another library may interpose (libfaketime):
// vdso_clock.cpp. Async-signal-safe.
int64_t ClockNsRaw(clockid_t clock);
// Finds the vDSO's clock_gettime in the vDSO image at `image` (getauxval(AT_SYSINFO_EHDR),
// 0 for none) for ClockNsRaw. The control path calls it before the handler is installed.
// True when found. Async-signal-safe (it only reads the image).
bool InitVdsoClock(uintptr_t image);
bool HaveVdsoClock();
// The address of the global function `name` in the vDSO image at `image`, 0 when there is
// none. Async-signal-safe.
uintptr_t FindVdsoSymbol(uintptr_t image, const char* name);
// System call numbers the signal path uses through RawSyscall4.
#if defined(__x86_64__)
inline constexpr long kSysWrite = 1;
inline constexpr long kSysIoctl = 16;
inline constexpr long kSysFutex = 202;
inline constexpr long kSysTimerSettime = 223;
inline constexpr long kSysMadvise = 28;
#elif defined(__aarch64__)
inline constexpr long kSysWrite = 64;
inline constexpr long kSysIoctl = 29;
inline constexpr long kSysFutex = 98;
inline constexpr long kSysTimerSettime = 110;
inline constexpr long kSysMadvise = 233;
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
