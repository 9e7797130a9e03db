// What the itimer engine shares with its hooks (setitimer and exec interposition) and with
// the session's engine choice. Not async-signal-safe unless said otherwise.
#ifndef INPROF_SDK_ITIMER_H_
#define INPROF_SDK_ITIMER_H_

#include <sys/time.h>

namespace inprof::internal {

// setitimer as the C library provides it, bypassing our hook (itimer_hooks.cpp), and
// resolving it now (the hook's constructor, before autostart may start a session).
using SetitimerFn = int (*)(int, const struct itimerval*, struct itimerval*);
int RealSetitimer(int which, const struct itimerval* value, struct itimerval* old);
SetitimerFn ResolveSetitimer();

// The program set ITIMER_PROF (arming it when `arming`) while the itimer engine may own it:
// arming takes it over from us, disarming after a takeover gives it back.
void ItimerProgramSets(bool arming);
// Whether a session's itimer engine currently holds ITIMER_PROF (even if yielded).
bool ItimerOwned();
// The interval our ITIMER_PROF is armed with now, 0 when it is not armed by us. Lock-free:
// the exec hooks call it, possibly in a vfork child. Async-signal-safe.
long ItimerArmedPeriodNs();
// Re-arms ITIMER_PROF after an exec that failed. Async-signal-safe.
int RearmItimerAfterFailedExec(long period_ns);
// In a forked child (inside fork()): the parent's engine and its lock, which a parent thread
// may have held, are forgotten; ITIMER_PROF is not inherited. Async-signal-safe.
void ForgetItimerAfterFork();

}  // namespace inprof::internal

#endif  // INPROF_SDK_ITIMER_H_
