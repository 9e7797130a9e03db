// sigaction/signal interposition for the sampling signal. While our handler owns the signal,
// a program (or a library such as LuaJIT's profiler) that installs its own handler for it
// is not allowed to remove ours: its action becomes the one our handler chains to for every
// signal that is not ours (its setitimer signals, kill, raise), and it is told the action it
// replaced, as if nothing else were there. Our handler stays installed after the session
// stops (late signals, docs/signals.md), so this goes on for the life of the process: a
// program that installs its handler after stop gets its signals through ours and is told
// its own action. Without this, installing a SIGPROF handler after inprof started would
// silently end sampling, and our timer signals would then reach a handler that does not
// expect them. Control path.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <cstring>
#include <mutex>
#include <new>

#include "internal/signal_handler.h"

namespace {

std::mutex g_hook_mu;

std::mutex& HookMutex() { return g_hook_mu; }

// A parent's thread may hold the lock when another forks: the child gets a fresh one (a
// store, async-signal-safe).
__attribute__((constructor)) void RegisterHookMutexReset() {
  pthread_atfork(nullptr, nullptr, [] { new (&g_hook_mu) std::mutex(); });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sigaction(int signal,
                                                                const struct sigaction* action,
                                                                struct sigaction* old) {
  using namespace inprof::internal;
  if (signal <= 0 || signal != OwnedSignal()) {
    if (action == nullptr) return RealSigaction(signal, action, old);
    const struct sigaction masked = WithSamplingSignalMasked(*action);
    return RealSigaction(signal, &masked, old);
  }
  std::lock_guard<std::mutex> lock(HookMutex());
  if (old != nullptr) *old = PreviousAction();
  if (action != nullptr) SetPreviousAction(*action);
  return 0;
}

// glibc's signal() installs with BSD semantics (SA_RESTART) and does not go through the
// sigaction symbol, so it needs its own hook.
extern "C" __attribute__((visibility("default"))) sighandler_t signal(int signal,
                                                                      sighandler_t handler) {
  using namespace inprof::internal;
  if (signal <= 0 || signal != OwnedSignal()) {
    using SignalFn = sighandler_t (*)(int, sighandler_t);
    static SignalFn real = reinterpret_cast<SignalFn>(dlsym(RTLD_NEXT, "signal"));
    return real(signal, handler);
  }
  std::lock_guard<std::mutex> lock(HookMutex());
  struct sigaction previous = PreviousAction();
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  SetPreviousAction(action);
  // An SA_SIGINFO handler cannot be returned as a sighandler_t faithfully; signal() callers
  // only compare it or pass it back, which works with the address.
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    return reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(previous.sa_sigaction));
  }
  return previous.sa_handler;
}
