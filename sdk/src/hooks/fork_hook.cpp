// fork(), interposed for allocation profiles. A forked child's session usually starts at its
// first CPU sample (the bootstrap sampler, api/runtime.cpp), which keeps children that only
// exec or exit cheap; a child's allocations come before any such sample and would all be
// lost, so with the `alloc` event the child's session starts as soon as fork returns in it:
// a normal thread at a safe point, which the atfork handlers inside fork() are not.
// Control path.
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "api/runtime.h"

namespace {

using ForkFn = pid_t (*)();

ForkFn NextFork() {
  static ForkFn next = reinterpret_cast<ForkFn>(dlsym(RTLD_NEXT, "fork"));
  return next;
}

__attribute__((constructor)) void ResolveFork() { NextFork(); }

}  // namespace

// Hot: beside the rest of the fork path (api/runtime.cpp, ChildAfterFork).
extern "C" __attribute__((visibility("default"), hot)) pid_t fork(void) {
  const ForkFn next = NextFork();
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // Before the C library's fork handlers: they take locks a profile start may need.
  inprof::internal::WaitForStartBeforeFork();
  const pid_t pid = next();
  if (pid == 0) inprof::internal::StartChildForAllocations();
  return pid;
}
