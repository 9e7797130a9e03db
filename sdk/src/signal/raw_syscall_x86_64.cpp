// Signal path: system calls the handler needs, without libc (x86-64). glibc's wrappers would
// do, but every call the handler makes must land in signal-path code
// (signal_path_symbols.cmake).
#include <ctime>

#include "signal/raw_syscall.h"

namespace inprof::internal {

int32_t CurrentTidRaw() {
  long result;
  asm volatile("syscall" : "=a"(result) : "0"(186L /* __NR_gettid */) : "rcx", "r11", "memory");
  return static_cast<int32_t>(result);
}

int64_t ClockNsSyscall(long clock_id) {
  struct timespec ts = {0, 0};
  long result;
  register long clock asm("rdi") = clock_id;
  register struct timespec* out asm("rsi") = &ts;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(228L /* __NR_clock_gettime */), "r"(clock), "r"(out)
               : "rcx", "r11", "memory");
  if (result != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t ThreadCpuNsRaw() { return ClockNsSyscall(CLOCK_THREAD_CPUTIME_ID); }

long RawSyscall4(long number, long a0, long a1, long a2, long a3) {
  long result;
  register long r10 asm("r10") = a3;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(number), "D"(a0), "S"(a1), "d"(a2), "r"(r10)
               : "rcx", "r11", "memory");
  return result;
}

void ExitGroupRaw(int status) {
  for (;;) RawSyscall4(231 /* __NR_exit_group */, status);
}

}  // namespace inprof::internal
