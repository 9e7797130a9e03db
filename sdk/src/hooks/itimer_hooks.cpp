// Interposed setitimer and exec functions, for the itimer engine. Control path.
//
// setitimer: ITIMER_PROF is one per process. While our itimer engine holds it, a program that
// arms it takes it over (our sampling pauses, health says so) and one that disarms it gets it
// back afterwards; a program that "disarms" it without having armed it (a common reset at
// start-up, or a profiler library's stop) must not silently end our sampling, so that call
// is answered as if no timer were set. Other timers and every call while the engine is not
// in use go straight to the C library.
//
// exec: interval timers survive execve but the new image's SIGPROF action is the default,
// which terminates it. The exec family is hooked to disarm our ITIMER_PROF first (and re-arm
// it if the exec fails). glibc's exec functions call execve internally without going through
// the dynamic symbol, so each public one is wrapped. These wrappers take no lock and
// allocate nothing: after vfork they run in a child that shares our memory.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "internal/itimer.h"

namespace inprof::internal {

namespace {
using SetitimerFn = int (*)(int, const struct itimerval*, struct itimerval*);
// Resolved when the library loads (see ResolveExecFunctions for why), or on first use by
// the control path if that comes first (autostart runs from another constructor).
std::atomic<SetitimerFn> g_setitimer{nullptr};
}  // namespace

SetitimerFn ResolveSetitimer() {
  SetitimerFn real = g_setitimer.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<SetitimerFn>(dlsym(RTLD_NEXT, "setitimer"));
    g_setitimer.store(real, std::memory_order_release);
  }
  return real;
}

int RealSetitimer(int which, const struct itimerval* value, struct itimerval* old) {
  return ResolveSetitimer()(which, value, old);
}

}  // namespace inprof::internal

namespace {

using inprof::internal::ItimerArmedPeriodNs;
using inprof::internal::RearmItimerAfterFailedExec;

// Disarms our ITIMER_PROF around an exec; the destructor runs only if the exec returned,
// i.e. failed. errno is kept for the caller.
class ExecGuard {
 public:
  ExecGuard() : period_ns_(ItimerArmedPeriodNs()) {
    if (period_ns_ != 0) {
      struct itimerval zero {};
      inprof::internal::RealSetitimer(ITIMER_PROF, &zero, nullptr);
    }
  }
  ~ExecGuard() {
    if (period_ns_ == 0) return;
    const int saved = errno;
    RearmItimerAfterFailedExec(period_ns_);
    errno = saved;
  }

 private:
  long period_ns_;
};

// The C library's functions, resolved when the library loads: resolving them on first use
// would take the loader's lock and a static-init guard inside a possibly vforked child.
using ExecveFn = int (*)(const char*, char* const*, char* const*);
using ExecvFn = int (*)(const char*, char* const*);
using FexecveFn = int (*)(int, char* const*, char* const*);
ExecveFn g_execve, g_execvpe;
ExecvFn g_execv, g_execvp;
FexecveFn g_fexecve;

// Priority 101: before autostart's constructor, which may start a session.
__attribute__((constructor(101))) void ResolveExecFunctions() {
  inprof::internal::ResolveSetitimer();
  g_execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  g_execvpe = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execvpe"));
  g_execv = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execv"));
  g_execvp = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execvp"));
  g_fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
}

// Arguments of execl-style calls gathered into an argv array on the stack (no malloc: this
// may run in a vfork child). `envp_out` is read after the terminating null only for execle,
// the one variant that passes it.
#define INPROF_COLLECT_ARGS(first, last_named, argv_name, envp_out)                  \
  size_t argc_ = 1;                                                                  \
  {                                                                                  \
    va_list count;                                                                   \
    va_start(count, last_named);                                                     \
    while (va_arg(count, const char*) != nullptr) ++argc_;                           \
    va_end(count);                                                                   \
  }                                                                                  \
  const char** argv_name =                                                           \
      static_cast<const char**>(__builtin_alloca((argc_ + 1) * sizeof(const char*))); \
  argv_name[0] = first;                                                              \
  {                                                                                  \
    va_list args;                                                                    \
    va_start(args, last_named);                                                      \
    for (size_t i = 1; i <= argc_; ++i) argv_name[i] = va_arg(args, const char*);    \
    if (envp_out != nullptr) *envp_out = va_arg(args, char* const*);                 \
    va_end(args);                                                                    \
  }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int setitimer(int which, const struct itimerval* value,
                                                     struct itimerval* old) {
  using namespace inprof::internal;
  if (which != ITIMER_PROF || !ItimerOwned()) return RealSetitimer(which, value, old);
  const bool arming = value != nullptr &&
                      (value->it_value.tv_sec != 0 || value->it_value.tv_usec != 0);
  if (arming) {
    ItimerProgramSets(true);  // stop treating kernel SIGPROFs as ours before its timer runs
    return RealSetitimer(which, value, old);
  }
  if (ItimerArmedPeriodNs() != 0) {
    // The program disarms a timer it never armed: ours stays, the program sees "none".
    if (old != nullptr) std::memset(old, 0, sizeof *old);
    return 0;
  }
  const int rc = RealSetitimer(which, value, old);
  ItimerProgramSets(false);
  return rc;
}

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[],
                                                  char* const envp[]) {
  ExecGuard guard;
  return g_execve(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  ExecGuard guard;
  return g_execv(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  ExecGuard guard;
  return g_execvp(file, argv);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[],
                                                   char* const envp[]) {
  ExecGuard guard;
  return g_execvpe(file, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[],
                                                   char* const envp[]) {
  ExecGuard guard;
  return g_fexecve(fd, argv, envp);
}

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  char* const** no_envp = nullptr;
  INPROF_COLLECT_ARGS(arg, arg, argv, no_envp)
  return execv(path, const_cast<char* const*>(argv));
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  char* const** no_envp = nullptr;
  INPROF_COLLECT_ARGS(arg, arg, argv, no_envp)
  return execvp(file, const_cast<char* const*>(argv));
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  char* const* envp = nullptr;
  char* const** envp_out = &envp;
  INPROF_COLLECT_ARGS(arg, arg, argv, envp_out)
  return execve(path, const_cast<char* const*>(argv), envp);
}

}  // extern "C"
