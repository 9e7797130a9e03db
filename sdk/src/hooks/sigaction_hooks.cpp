// The program owns every signal disposition it can observe (docs/signals.md, "What the program
// sees"). Two kinds of signal are the runtime's as well, and for both the program reads back
// what it would have read without us:
//
// - The sampling signal. While our handler owns it, a program (or a library such as LuaJIT's
//   profiler) that installs its own handler for it is not allowed to remove ours: its action
//   becomes the one our handler chains to for every signal that is not ours (its setitimer
//   signals, kill, raise), and it is told the action it replaced, as if nothing else were
//   there. Our handler stays installed after the session stops (late signals), so this goes
//   on for the life of the process. Without this, installing a SIGPROF handler after inprof
//   started would silently end sampling, and our timer signals would then reach a handler
//   that does not expect them.
// - SIGTERM and SIGINT, where the runtime puts its exit handler while their action is the
//   default (exit_paths.cpp). The program reads SIG_DFL there. A handler it installs goes
//   into the kernel as it is and runs exactly as without us (CPython and Ruby install their
//   SIGINT handler only when they find SIG_DFL at start-up: with our handler visible, Ctrl-C
//   killed the interpreter and its `finally` blocks never ran); the profile is then written
//   by the exit path the program ends through. A SIG_DFL it sets puts our handler back, and
//   SIG_IGN stays SIG_IGN. The kernel's disposition is the only state: our handler there
//   means "the program's SIG_DFL", so a read and a replacement are one sigaction each.
//
// Every entry point the C library offers that installs an action is hooked, because glibc's
// signal, bsd_signal, ssignal, sysv_signal, sigset, sigignore and siginterrupt call its
// internal __sigaction, never the sigaction symbol. They are emulated here, with glibc 2.36's
// flags and masks, for the signals above, and passed to the C library for every other.
//
// No lock anywhere: a program may call these from a signal handler that interrupted the same
// call on its own thread. Control path (async-signal-safe as far as sigaction itself is).
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "api/exit_paths.h"
#include "api/runtime.h"
#include "signal/signal_handler.h"

namespace {

using inprof::internal::ExchangePreviousAction;
using inprof::internal::IsTerminationAction;
using inprof::internal::NoteSamplingSignalMasked;
using inprof::internal::OwnedSignal;
using inprof::internal::PreviousAction;
using inprof::internal::RealSigaction;
using inprof::internal::SamplingSignalMaskedByUs;
using inprof::internal::TerminationAction;
using inprof::internal::TerminationSignalManaged;
using inprof::internal::WithSamplingSignalMasked;

using SignalFn = sighandler_t (*)(int, sighandler_t);
using SigignoreFn = int (*)(int);
using SiginterruptFn = int (*)(int, int);

// The C library's functions, resolved at load time: a call from a program's signal handler
// must not be the first to need dlsym.
std::atomic<SignalFn> g_real_signal{nullptr};
std::atomic<SignalFn> g_real_sysv_signal{nullptr};
std::atomic<SignalFn> g_real_sigset{nullptr};
std::atomic<SigignoreFn> g_real_sigignore{nullptr};
std::atomic<SiginterruptFn> g_real_siginterrupt{nullptr};

template <typename Fn>
Fn Resolve(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

__attribute__((constructor)) void ResolveRealSignalFunctions() {
  Resolve(g_real_signal, "signal");
  Resolve(g_real_sysv_signal, "sysv_signal");
  Resolve(g_real_sigset, "sigset");
  Resolve(g_real_sigignore, "sigignore");
  Resolve(g_real_siginterrupt, "siginterrupt");
  RealSigaction(SIGINT, nullptr, nullptr);  // resolves the real sigaction too
}

// glibc's _sigintr for the signals emulated here: signal() installs without SA_RESTART for a
// signal that siginterrupt(signal, 1) was called for. Bit n: signal n.
std::atomic<uint64_t> g_interrupt_signals{0};

// The flags and mask the program gave with its last SIG_DFL for a managed termination
// signal, which it reads back while our handler stands for it. Four slots published by
// index, as the sampling signal's actions are (signal_install.cpp).
struct DefaultSlots {
  struct sigaction slots[4];
  std::atomic<unsigned> claim{0};
  std::atomic<unsigned> published{0};
};
DefaultSlots g_defaults[2];  // SIGINT, SIGTERM

DefaultSlots* DefaultsFor(int signal) {
  if (signal == SIGINT) return &g_defaults[0];
  if (signal == SIGTERM) return &g_defaults[1];
  return nullptr;
}

// What the program reads for `signal` while `ours` (our handler, as the kernel reports it)
// stands for its SIG_DFL: the default it last set, with what the C library adds on the way to
// the kernel (SA_RESTORER and its restorer on x86-64), or, before it set one, what the kernel
// reports for a signal nobody touched.
struct sigaction ProgramDefault(int signal, const struct sigaction& ours) {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  sigemptyset(&action.sa_mask);
  DefaultSlots* d = DefaultsFor(signal);
  if (d != nullptr && d->claim.load(std::memory_order_acquire) != 0) {
    action = d->slots[d->published.load(std::memory_order_acquire) & 3];
    struct sigaction plain;
    TerminationAction(&plain);
    action.sa_flags |= ours.sa_flags & ~plain.sa_flags;
#if defined(__x86_64__)
    action.sa_restorer = ours.sa_restorer;
#endif
  }
  action.sa_handler = SIG_DFL;
  return action;
}

void SetProgramDefault(int signal, const struct sigaction& action) {
  DefaultSlots* d = DefaultsFor(signal);
  if (d == nullptr) return;
  const unsigned seq = d->claim.fetch_add(1, std::memory_order_acq_rel) + 1;
  d->slots[seq & 3] = action;
  unsigned published = d->published.load(std::memory_order_acquire);
  while (static_cast<int>(seq - published) > 0 &&
         !d->published.compare_exchange_weak(published, seq, std::memory_order_acq_rel)) {
  }
}

bool IsDefault(const struct sigaction& action) {
  // SA_SIGINFO with a null sa_sigaction is SIG_DFL too (both are the same pointer slot).
  return reinterpret_cast<void*>(action.sa_handler) == reinterpret_cast<void*>(SIG_DFL);
}

// True for the signals whose disposition the program sees through this file.
bool Virtualised(int signal) {
  return signal > 0 && (signal == OwnedSignal() || TerminationSignalManaged(signal));
}

// `action` as the kernel would report it back had the program installed it itself: with what
// the C library adds on the way (on x86-64, SA_RESTORER and its restorer), which our own
// action, installed through the C library, shows. For the sampling signal, whose program
// action never reaches the kernel while ours is there.
struct sigaction AsTheKernelKeepsIt(int signal, const struct sigaction& action) {
  struct sigaction kept = action;
  struct sigaction ours;
  if (RealSigaction(signal, nullptr, &ours) != 0) return kept;
  constexpr int kOurFlags = SA_SIGINFO | SA_RESTART;  // InstallHandler's (signal_install.cpp)
  kept.sa_flags |= ours.sa_flags & ~kOurFlags;
#if defined(__x86_64__)
  kept.sa_restorer = ours.sa_restorer;
#endif
  return kept;
}

// `action` as the program set it: without the sampling signal we added to its mask.
void WithoutOurMask(struct sigaction* action) {
  if (const int owned = OwnedSignal(); owned > 0) sigdelset(&action->sa_mask, owned);
}

// Installs the program's `action` with the sampling signal added to its mask where it runs on
// an alternate stack (WithSamplingSignalMasked); `old` is the action replaced, as the program
// set it.
int InstallMasked(int signal, const struct sigaction& action, struct sigaction* old) {
  const struct sigaction masked = WithSamplingSignalMasked(action);
  const int owned = OwnedSignal();
  const bool added = owned > 0 && sigismember(&masked.sa_mask, owned) == 1 &&
                     sigismember(&action.sa_mask, owned) != 1;
  const int rc = RealSigaction(signal, &masked, old);
  if (rc != 0) return rc;
  const bool had = NoteSamplingSignalMasked(signal, added);
  if (old != nullptr && had) WithoutOurMask(old);
  return 0;
}

int TerminationSigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  struct sigaction previous;
  if (action == nullptr) {
    if (RealSigaction(signal, nullptr, &previous) != 0) return -1;
    if (SamplingSignalMaskedByUs(signal)) WithoutOurMask(&previous);
    if (old != nullptr && IsTerminationAction(previous))
      previous = ProgramDefault(signal, previous);
    if (old != nullptr) *old = previous;
    return 0;
  }
  // The program's default as it reads now, before this call replaces it.
  struct sigaction previous_default;
  std::memset(&previous_default, 0, sizeof previous_default);
  if (old != nullptr && RealSigaction(signal, nullptr, &previous_default) == 0 &&
      IsTerminationAction(previous_default)) {
    previous_default = ProgramDefault(signal, previous_default);
  }
  int rc;
  if (IsDefault(*action)) {
    SetProgramDefault(signal, *action);
    struct sigaction ours;
    TerminationAction(&ours);
    rc = RealSigaction(signal, &ours, &previous);
    if (rc == 0) {
      inprof::internal::NoteTerminationHandlerInstalled();
      if (NoteSamplingSignalMasked(signal, false)) WithoutOurMask(&previous);
    }
  } else {
    rc = InstallMasked(signal, *action, &previous);
  }
  if (rc != 0) return rc;
  if (old != nullptr && IsTerminationAction(previous)) {
    // Another thread's call between the read above and this one: the default as it is now.
    *old = IsDefault(previous_default) ? previous_default : ProgramDefault(signal, previous);
  } else if (old != nullptr) {
    *old = previous;
  }
  return 0;
}

int VirtualSigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  if (signal <= 0 || signal >= NSIG) {
    errno = EINVAL;
    return -1;
  }
  if (signal == OwnedSignal()) {
    if (action == nullptr) {
      if (old != nullptr) *old = PreviousAction();
      return 0;
    }
    const struct sigaction previous = ExchangePreviousAction(AsTheKernelKeepsIt(signal, *action));
    if (old != nullptr) *old = previous;
    return 0;
  }
  if (TerminationSignalManaged(signal)) return TerminationSigaction(signal, action, old);
  if (action == nullptr) {
    if (RealSigaction(signal, nullptr, old) != 0) return -1;
    if (old != nullptr && SamplingSignalMaskedByUs(signal)) WithoutOurMask(old);
    return 0;
  }
  return InstallMasked(signal, *action, old);
}

// An SA_SIGINFO handler cannot be returned as a sighandler_t faithfully; signal() callers
// only compare it or pass it back, which works with the address.
sighandler_t HandlerOf(const struct sigaction& action) {
  if ((action.sa_flags & SA_SIGINFO) != 0) {
    return reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(action.sa_sigaction));
  }
  return action.sa_handler;
}

bool BadHandlerCall(int signal, sighandler_t handler) {
  if (handler == SIG_ERR || signal <= 0 || signal >= NSIG) {
    errno = EINVAL;
    return true;
  }
  return false;
}

// glibc's signal() (= bsd_signal = ssignal): BSD semantics, the signal blocked while its
// handler runs, SA_RESTART unless siginterrupt asked otherwise.
sighandler_t BsdSignal(int signal, sighandler_t handler) {
  if (!Virtualised(signal)) return Resolve(g_real_signal, "signal")(signal, handler);
  if (BadHandlerCall(signal, handler)) return SIG_ERR;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, signal);
  const bool interrupt = signal < 64 && (g_interrupt_signals.load(std::memory_order_acquire) &
                                         (uint64_t{1} << signal)) != 0;
  action.sa_flags = interrupt ? 0 : SA_RESTART;
  struct sigaction previous;
  if (VirtualSigaction(signal, &action, &previous) < 0) return SIG_ERR;
  return HandlerOf(previous);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sigaction(int signal,
                                                                const struct sigaction* action,
                                                                struct sigaction* old) {
  return VirtualSigaction(signal, action, old);
}

// Exported by glibc under this name too, and called so by some programs.
extern "C" __attribute__((visibility("default"))) int __sigaction(int signal,
                                                                  const struct sigaction* action,
                                                                  struct sigaction* old) {
  return VirtualSigaction(signal, action, old);
}

extern "C" __attribute__((visibility("default"))) sighandler_t signal(int signal,
                                                                      sighandler_t handler) {
  return BsdSignal(signal, handler);
}

extern "C" __attribute__((visibility("default"))) sighandler_t bsd_signal(int signal,
                                                                          sighandler_t handler) {
  return BsdSignal(signal, handler);
}

extern "C" __attribute__((visibility("default"))) sighandler_t ssignal(int signal,
                                                                       sighandler_t handler) {
  return BsdSignal(signal, handler);
}

// System V semantics: the action is reset to the default when the handler runs, the signal is
// not blocked meanwhile, and system calls are interrupted.
extern "C" __attribute__((visibility("default"))) sighandler_t sysv_signal(int signal,
                                                                           sighandler_t handler) {
  if (!Virtualised(signal)) return Resolve(g_real_sysv_signal, "sysv_signal")(signal, handler);
  if (BadHandlerCall(signal, handler)) return SIG_ERR;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  struct sigaction previous;
  if (VirtualSigaction(signal, &action, &previous) < 0) return SIG_ERR;
  return HandlerOf(previous);
}

extern "C" __attribute__((visibility("default"))) sighandler_t __sysv_signal(int signal,
                                                                             sighandler_t handler) {
  return sysv_signal(signal, handler);
}

// System V's sigset: SIG_HOLD blocks the signal; anything else installs it (flags 0) and
// unblocks the signal. Returns SIG_HOLD when the signal was blocked before.
extern "C" __attribute__((visibility("default"))) sighandler_t sigset(int signal,
                                                                      sighandler_t handler) {
  if (!Virtualised(signal)) return Resolve(g_real_sigset, "sigset")(signal, handler);
  if (BadHandlerCall(signal, handler)) return SIG_ERR;
  sigset_t set;
  sigset_t previous_mask;
  sigemptyset(&set);
  sigaddset(&set, signal);
  struct sigaction previous;
  if (handler == SIG_HOLD) {
    if (VirtualSigaction(signal, nullptr, &previous) < 0) return SIG_ERR;
    if (sigprocmask(SIG_BLOCK, &set, &previous_mask) < 0) return SIG_ERR;
  } else {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    if (VirtualSigaction(signal, &action, &previous) < 0) return SIG_ERR;
    if (sigprocmask(SIG_UNBLOCK, &set, &previous_mask) < 0) return SIG_ERR;
  }
  return sigismember(&previous_mask, signal) == 1 ? SIG_HOLD : HandlerOf(previous);
}

extern "C" __attribute__((visibility("default"))) int sigignore(int signal) {
  if (!Virtualised(signal)) return Resolve(g_real_sigignore, "sigignore")(signal);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = SIG_IGN;
  sigemptyset(&action.sa_mask);
  return VirtualSigaction(signal, &action, nullptr);
}

extern "C" __attribute__((visibility("default"))) int siginterrupt(int signal, int interrupt) {
  if (!Virtualised(signal)) return Resolve(g_real_siginterrupt, "siginterrupt")(signal, interrupt);
  struct sigaction action;
  if (VirtualSigaction(signal, nullptr, &action) < 0) return -1;
  if (signal < 64) {
    const uint64_t bit = uint64_t{1} << signal;
    if (interrupt != 0) {
      g_interrupt_signals.fetch_or(bit, std::memory_order_acq_rel);
    } else {
      g_interrupt_signals.fetch_and(~bit, std::memory_order_acq_rel);
    }
  }
  if (interrupt != 0) {
    action.sa_flags &= ~SA_RESTART;
  } else {
    action.sa_flags |= SA_RESTART;
  }
  return VirtualSigaction(signal, &action, nullptr);
}
