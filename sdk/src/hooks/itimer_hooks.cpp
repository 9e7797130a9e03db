// Interposed setitimer, for the itimer engine. Control path.
//
// setitimer: ITIMER_PROF is one per process. While our itimer engine holds it, a program that
// arms it takes it over (our sampling pauses, health says so) and one that disarms it gets it
// back afterwards; a program that "disarms" it without having armed it (a common reset at
// start-up, or a profiler library's stop) must not silently end our sampling, so that call
// is answered as if no timer were set. Other timers and every call while the engine is not
// in use go straight to the C library. The exec functions, which must disarm our
// ITIMER_PROF (it survives execve), are in exec_hooks.cpp.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "engines/itimer.h"

namespace {

// Resolved when the library loads, before autostart's constructor may start a session.
__attribute__((constructor(101))) void ResolveSetitimerEarly() {
  inprof::internal::ResolveSetitimer();
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

}  // extern "C"
