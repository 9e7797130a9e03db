// The runtime's own threads and the start frames of program threads (thread_start.h). Here,
// below the hooks, so that the collector, the exporter and the network outputs start their
// threads without reaching up to the pthread_create interposition. Control path.
#include "threads/thread_start.h"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

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

// The thread's start routine and the return address into the thread library's start
// function that called the hook's trampoline: the stack of the sample its exit may take
// (ThreadStartFrames). initial-exec, like every thread_local the runtime reads on exit.
thread_local uintptr_t t_start_frames[2] __attribute__((tls_model("initial-exec"))) = {0, 0};

}  // namespace

void SetThreadStartFrames(uintptr_t start, uintptr_t return_address) {
  t_start_frames[0] = start;
  t_start_frames[1] = return_address;
}

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
