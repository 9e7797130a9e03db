// Signal path: system calls the handler needs, without libc (aarch64). glibc's wrappers
// would do, but every call the handler makes must land in signal-path code
// (signal_path_symbols.cmake).
#include <ctime>

#include "signal/raw_syscall.h"

namespace inprof::internal {

int32_t CurrentTidRaw() {
  register long number asm("x8") = 178;  // __NR_gettid
  register long result asm("x0");
  asm volatile("svc 0" : "=r"(result) : "r"(number) : "memory");
  return static_cast<int32_t>(result);
}

int64_t ClockNsSyscall(long clock_id) {
  struct timespec ts = {0, 0};
  register long number asm("x8") = 113;  // __NR_clock_gettime
  register long x0 asm("x0") = clock_id;
  register struct timespec* x1 asm("x1") = &ts;
  asm volatile("svc 0" : "+r"(x0) : "r"(number), "r"(x1) : "memory");
  if (x0 != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t ThreadCpuNsRaw() { return ClockNsSyscall(CLOCK_THREAD_CPUTIME_ID); }

long RawSyscall4(long number, long a0, long a1, long a2, long a3) {
  register long x8 asm("x8") = number;
  register long x0 asm("x0") = a0;
  register long x1 asm("x1") = a1;
  register long x2 asm("x2") = a2;
  register long x3 asm("x3") = a3;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}

void ExitGroupRaw(int status) {
  for (;;) RawSyscall4(94 /* __NR_exit_group */, status);
}

}  // namespace inprof::internal
