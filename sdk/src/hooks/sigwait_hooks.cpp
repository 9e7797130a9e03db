// sigwait/sigwaitinfo/sigtimedwait interposition. The profiler's signals go to the thread
// they sample; a program thread that blocks the sampling signal and takes it with sigwait &
// co. would receive ours as if they were its own (a program that uses SIGPROF for itself,
// with ITIMER_PROF and a signal thread). These wrappers drop the profiler's signals
// (IsProfilerSignal) and wait again, for the time left; the program sees only its own.
// signalfd reads cannot be filtered: docs/signals.md recommends INPROF_SIGNAL for such
// programs. Control path, async-signal-safe like the functions they wrap.
#include <dlfcn.h>
#include <signal.h>
#include <time.h>

#include <cerrno>

#include "signal/signal_handler.h"

namespace {

using TimedWaitFn = int (*)(const sigset_t*, siginfo_t*, const struct timespec*);

TimedWaitFn RealTimedWait() {
  static TimedWaitFn real = reinterpret_cast<TimedWaitFn>(dlsym(RTLD_NEXT, "sigtimedwait"));
  return real;
}

__attribute__((constructor)) void ResolveSigwait() { RealTimedWait(); }

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// sigtimedwait that never returns one of the profiler's signals.
int WaitSkippingOurs(const sigset_t* set, siginfo_t* info, const struct timespec* timeout) {
  TimedWaitFn real = RealTimedWait();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int owned = inprof::internal::OwnedSignal();
  if (owned <= 0 || sigismember(set, owned) != 1) return real(set, info, timeout);
  const int64_t deadline =
      timeout != nullptr ? MonotonicNs() + timeout->tv_sec * 1000000000LL + timeout->tv_nsec : 0;
  siginfo_t local;
  siginfo_t* out = info != nullptr ? info : &local;
  for (;;) {
    struct timespec left;
    const struct timespec* wait = nullptr;
    if (timeout != nullptr) {
      const int64_t ns = deadline - MonotonicNs();
      if (ns <= 0) {
        left = {0, 0};
      } else {
        left = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
      }
      wait = &left;
    }
    const int signal = real(set, out, wait);
    if (signal != owned || !inprof::internal::IsProfilerSignal(out)) return signal;
    if (timeout != nullptr && left.tv_sec == 0 && left.tv_nsec == 0) {
      errno = EAGAIN;
      return -1;
    }
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sigtimedwait(const sigset_t* set,
                                                                   siginfo_t* info,
                                                                   const struct timespec* timeout) {
  return WaitSkippingOurs(set, info, timeout);
}

extern "C" __attribute__((visibility("default"))) int sigwaitinfo(const sigset_t* set,
                                                                  siginfo_t* info) {
  return WaitSkippingOurs(set, info, nullptr);
}

extern "C" __attribute__((visibility("default"))) int sigwait(const sigset_t* set, int* sig) {
  for (;;) {
    const int signal = WaitSkippingOurs(set, nullptr, nullptr);
    if (signal > 0) {
      *sig = signal;
      return 0;
    }
    if (errno != EINTR) return errno;
  }
}
