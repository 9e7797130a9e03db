// pthread_create interposition: every thread the program creates registers itself for
// sampling before its start routine runs, so no thread needs a call from the user and
// short-lived threads are sampled from their first instruction. Works preloaded and
// linked: the executable's references to pthread_create bind to the first definition in
// load order, which is ours whenever libinprof precedes libc (always for LD_PRELOAD, and for
// a link with -linprof). Control path.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cxxabi.h>

#include <atomic>
#include <cerrno>
#include <new>

#include "api/runtime.h"
#include "threads/contained.h"
#include "threads/thread_start.h"

namespace inprof::internal {
namespace {

struct StartArgs {
  void* (*start)(void*);
  void* arg;
};

// The new thread's first function. Whatever happens while it is set up for sampling, the
// program's start routine runs, once: a failure here leaves the thread unsampled, never
// ends it (an exception leaving this function would reach glibc's start_thread, which is C:
// std::terminate). What the start routine itself throws is not ours and is not caught, so it
// behaves exactly as without inprof, and so does pthread_exit/pthread_cancel's forced unwind.
void* Trampoline(void* p) {
  const StartArgs args = *static_cast<StartArgs*>(p);
  delete static_cast<StartArgs*>(p);
  SetThreadStartFrames(reinterpret_cast<uintptr_t>(args.start),
                       reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  try {
    RuntimeOnThreadStart();
  } catch (abi::__forced_unwind&) {
    throw;  // cancelled while being set up: the unwind must go on
  } catch (...) {
    CountContained(ContainedAt::kThreadStart);
  }
  return args.start(args.arg);
}

}  // namespace

}  // namespace inprof::internal

extern "C" __attribute__((visibility("default"))) int pthread_create(pthread_t* thread,
                                                                     const pthread_attr_t* attr,
                                                                     void* (*start)(void*),
                                                                     void* arg) {
  using namespace inprof::internal;
  auto* args = new (std::nothrow) StartArgs{start, arg};
  if (args == nullptr) return RealPthreadCreate(thread, attr, start, arg);
  const int rc = RealPthreadCreate(thread, attr, &Trampoline, args);
  if (rc != 0) delete args;
  return rc;
}
