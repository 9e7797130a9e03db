// What the interposing hooks (alloc_hooks.cpp, lock_hooks.cpp) share about the functions they
// forward to.
#ifndef INPROF_SDK_HOOKS_NEXT_FUNCTION_H_
#define INPROF_SDK_HOOKS_NEXT_FUNCTION_H_

#include <string.h>

#include "signal/raw_syscall.h"

namespace inprof::internal {

// The next definition of an interposed function the program calls cannot be found (dlsym
// answered null): nothing can be forwarded to, so the process ends with status 127 and a
// line naming the function ("inprof: cannot find the C library's pthread_mutex_lock"). Raw
// system calls only: it may run before anything else of the runtime is ready, inside malloc.
[[noreturn]] inline void ExitForMissingFunction(const char* whose, const char* name) {
  static const char kPrefix[] = "inprof: cannot find ";
  RawSyscall4(kSysWrite, 2, reinterpret_cast<long>(kPrefix), sizeof kPrefix - 1, 0);
  RawSyscall4(kSysWrite, 2, reinterpret_cast<long>(whose), static_cast<long>(strlen(whose)), 0);
  RawSyscall4(kSysWrite, 2, reinterpret_cast<long>(name), static_cast<long>(strlen(name)), 0);
  RawSyscall4(kSysWrite, 2, reinterpret_cast<long>("\n"), 1, 0);
  ExitGroupRaw(127);
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_HOOKS_NEXT_FUNCTION_H_
