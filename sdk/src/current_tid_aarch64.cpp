// Signal path: the calling thread's id without libc (aarch64). glibc's gettid() would do, but
// every call the handler makes must land in signal-path code (signal_path_symbols.cmake).
#include "internal/current_tid.h"

namespace inprof::internal {

int32_t CurrentTidRaw() {
  register long number asm("x8") = 178;  // __NR_gettid
  register long result asm("x0");
  asm volatile("svc 0" : "=r"(result) : "r"(number) : "memory");
  return static_cast<int32_t>(result);
}

}  // namespace inprof::internal
