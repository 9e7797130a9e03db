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

#include "threads/contained.h"
#include "api/runtime.h"
#include "session/session.h"

namespace inprof::internal {
namespace {

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

PthreadCreateFn NextPthreadCreate() {
  static PthreadCreateFn next = [] {
    auto fn = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
    if (fn == nullptr)
      fn = reinterpret_cast<PthreadCreateFn>(dlsym(RTLD_DEFAULT, "pthread_create"));
    return fn;
  }();
  return next;
}

struct StartArgs {
  void* (*start)(void*);
  void* arg;
};

// The new thread's first function. Whatever happens while it is set up for sampling, the
// program's start routine runs, once: a failure here leaves the thread unsampled, never
// ends it (an exception leaving this function would reach glibc's start_thread, which is C:
// std::terminate). What the start routine itself throws is not ours and is not caught, so it
// behaves exactly as without inprof, and so does pthread_exit/pthread_cancel's forced unwind.
// The thread's start routine and the return address into the thread library's start
// function that called this trampoline: the stack of the sample its exit may take
// (ThreadStartFrames). initial-exec, like every thread_local the runtime reads on exit.
thread_local uintptr_t t_start_frames[2] __attribute__((tls_model("initial-exec"))) = {0, 0};

void* Trampoline(void* p) {
  const StartArgs args = *static_cast<StartArgs*>(p);
  delete static_cast<StartArgs*>(p);
  t_start_frames[0] = reinterpret_cast<uintptr_t>(args.start);
  t_start_frames[1] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
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

uint32_t ThreadStartFrames(uintptr_t* frames) {
  if (t_start_frames[0] == 0) return 0;
  frames[0] = t_start_frames[0];
  frames[1] = t_start_frames[1];
  return frames[1] != 0 ? 2 : 1;
}

int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                      void* arg) {
  return NextPthreadCreate()(thread, attr, start, arg);
}

pid_t StartInternalThread(pthread_t* thread, void* (*start)(void*), void* arg) {
  struct Launch {
    void* (*start)(void*);
    void* arg;
    std::atomic<pid_t> tid{0};
  } launch{start, arg};
  auto entry = [](void* p) -> void* {
    auto* l = static_cast<Launch*>(p);
    void* (*fn)(void*) = l->start;
    void* fn_arg = l->arg;
    l->tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    return fn(fn_arg);  // `launch` may be gone now
  };
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = RealPthreadCreate(thread, nullptr, entry, &launch);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    errno = rc;
    return 0;
  }
  pid_t tid;
  while ((tid = launch.tid.load(std::memory_order_acquire)) == 0) sched_yield();
  return tid;
}

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
