// Signal path: the calling thread's id without libc (x86-64). glibc's gettid() would do, but
// every call the handler makes must land in signal-path code (signal_path_symbols.cmake).
#include "internal/current_tid.h"

namespace inprof::internal {

int32_t CurrentTidRaw() {
  long result;
  asm volatile("syscall" : "=a"(result) : "0"(186L /* __NR_gettid */) : "rcx", "r11", "memory");
  return static_cast<int32_t>(result);
}

}  // namespace inprof::internal
