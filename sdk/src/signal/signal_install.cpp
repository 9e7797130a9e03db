// Installing the sampling handler, and what stopping leaves behind. Control path, except
// StraySignalDefault, which the handler calls (it is marked so).
//
// The handler is installed once and stays installed for the life of the process (libinprof
// is linked with -z nodelete, so its code stays too). Stopping only unpublishes the sampler:
// a timer or perf signal already queued for a thread that has the signal blocked is
// delivered whenever the thread unblocks it, possibly long after timer_delete or close(fd);
// with the program's previous action restored, SIG_DFL for SIGPROF, that late signal would
// end the process ("Profiling timer expired"). Rules: docs/signals.md.
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "signal/fork_reset.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

extern std::atomic<Sampler*> g_sampler;
extern struct sigaction g_previous_actions[4];
extern std::atomic<unsigned> g_previous_index;

namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

std::atomic<int> g_owned_signal{0};
// What the program installed, in the slot of g_previous_actions that the handler calls
// instead (the two differ only for SIG_DFL, see SetPreviousAction).
struct sigaction g_program_actions[4];
// The last sequence number an update of the slots claimed (ExchangePreviousAction);
// g_previous_index holds the published one.
std::atomic<unsigned> g_previous_claim{0};
// The signals whose current action has the sampling signal in its mask because we added it
// (bit n: signal n), so that the program reads back the mask it set.
std::atomic<uint64_t> g_masked_by_us{0};
// Handlers that stayed in flight when a wait gave up (WaitForHandlers).
std::atomic<int> g_stuck_handlers{0};
// The C library's sigaction, resolved before the handler can need it.
std::atomic<SigactionFn> g_real_sigaction{nullptr};

SigactionFn ResolveRealSigaction() {
  SigactionFn real = g_real_sigaction.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
    g_real_sigaction.store(real, std::memory_order_release);
  }
  return real;
}

bool IsDefault(const struct sigaction& action) {
  // SA_SIGINFO with a null sa_sigaction is SIG_DFL too (both are the same pointer slot).
  return reinterpret_cast<void*>(action.sa_handler) == reinterpret_cast<void*>(SIG_DFL);
}

// Signals whose default action is not to terminate (signal(7)): ignore, stop, continue.
bool DefaultDoesNotTerminate(int signal) {
  switch (signal) {
    case SIGCHLD:
    case SIGCONT:
    case SIGURG:
    case SIGWINCH:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      return true;
    default:
      return false;
  }
}

int64_t MonotonicNs() { return ClockNsRaw(CLOCK_MONOTONIC); }

// Every clock read of the runtime (ClockNsRaw) goes through the vDSO from the library's load
// on, before any session (InstallHandler finds it again: a test may link these objects
// without running this).
[[maybe_unused]] const bool g_vdso_clock_at_load =
    InitVdsoClock(static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR)));

}  // namespace

struct sigaction PreviousAction() {
  return g_program_actions[g_previous_index.load(std::memory_order_acquire) & 3];
}

// Lock-free, so that a program's signal handler may call sigaction for our signal while it
// interrupted the same call on its own thread (a lock would deadlock there). Each update
// claims the next sequence number, fills that number's slot and publishes it unless a later
// claim was published first; claim order is the order of the updates. A handler reads the
// published slot, which is not reused until four more updates have been claimed.
struct sigaction ExchangePreviousAction(const struct sigaction& action) {
  const unsigned seq = g_previous_claim.fetch_add(1, std::memory_order_acq_rel) + 1;
  const unsigned slot = seq & 3;
  g_program_actions[slot] = action;
  struct sigaction chained = action;
  if (IsDefault(action)) {
    // The handler would swallow every signal for SIG_DFL (it cannot tell a late signal of
    // ours from a kill by the program on its own): StraySignalDefault tells them apart.
    std::memset(&chained, 0, sizeof chained);
    chained.sa_sigaction = &StraySignalDefault;
    chained.sa_flags = SA_SIGINFO;
    sigemptyset(&chained.sa_mask);
  }
  g_previous_actions[slot] = chained;
  unsigned published = g_previous_index.load(std::memory_order_acquire);
  while (static_cast<int>(seq - published) > 0) {
    if (g_previous_index.compare_exchange_weak(published, seq, std::memory_order_acq_rel)) {
      return g_program_actions[published & 3];
    }
  }
  // A later update was published first: this one happened before it.
  return g_program_actions[(seq - 1) & 3];
}

void SetPreviousAction(const struct sigaction& action) { ExchangePreviousAction(action); }

void StraySignalDefault(int signal, siginfo_t* info, void* /*context*/) {
  // si_code > 0 is the kernel's own: SI_KERNEL (ITIMER_PROF) or POLL_* (a perf fd's
  // F_SETSIG signal). Those come from our engines, late; a program that armed ITIMER_PROF
  // itself and left SIGPROF at its default is the one case this swallows wrongly.
  // SI_TIMER carrying our tag never gets here (the handler takes it as ours).
  if (info != nullptr && info->si_code > 0) return;
  if (DefaultDoesNotTerminate(signal)) return;
  // Sent by a process (SI_USER, SI_TKILL, SI_QUEUE, a program's own POSIX timer): what the
  // program would have got without us. The signal is blocked while this handler runs, so the
  // raised one stays pending until it returns and then takes the default action.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  const SigactionFn real = g_real_sigaction.load(std::memory_order_acquire);
  if (real == nullptr || real(signal, &dfl, nullptr) != 0) return;
  g_owned_signal.store(0, std::memory_order_release);
  raise(signal);
}

int OwnedSignal() { return g_owned_signal.load(std::memory_order_acquire); }

int RealSigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  return ResolveRealSigaction()(signal, action, old);
}

// A program handler that runs on an alternate stack (SA_ONSTACK) may have only a few KiB of
// it (MINSIGSTKSZ): a sample landing while it runs would put our handler's frame on that
// same stack and overflow it. Our signal is added to such a handler's mask, so the sample
// waits until the handler returns. Covers the handlers installed before the session
// (here) and after it (the sigaction hook, WithSamplingSignalMasked).
//
// Only the signals the kernel says have a handler (SigCgt in /proc/self/status) are looked
// at: one read of about 10 us instead of a query per signal, 64 system calls and about
// 70 us on a virtual machine, in every process that loads the runtime with a profile to
// take. Every signal when the file cannot be read.
namespace {

uint64_t CaughtSignals() {
  constexpr uint64_t kAll = ~uint64_t{0};
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kAll;
  char text[4096];
  size_t used = 0;
  for (ssize_t n; used < sizeof text - 1 &&
                  (n = read(fd, text + used, sizeof text - 1 - used)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    used += static_cast<size_t>(n);
  }
  close(fd);
  text[used] = '\0';
  const char* line = std::strstr(text, "\nSigCgt:");
  if (line == nullptr) return kAll;
  uint64_t caught = 0;
  int digits = 0;
  for (const char* c = line + 8; *c != '\n' && *c != '\0'; ++c) {
    if (*c == ' ' || *c == '\t') continue;
    const int v = *c >= '0' && *c <= '9'   ? *c - '0'
                  : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
                                           : -1;
    if (v < 0 || ++digits > 16) return kAll;
    caught = caught << 4 | static_cast<uint64_t>(v);
  }
  return digits == 0 ? kAll : caught;  // bit N-1: signal N
}

}  // namespace

void MaskSamplingSignalInOnStackHandlers(int sampling_signal) {
  const uint64_t caught = CaughtSignals();
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal == sampling_signal || signal == SIGKILL || signal == SIGSTOP) continue;
    if (signal <= 64 && (caught & (uint64_t{1} << (signal - 1))) == 0) continue;
    struct sigaction current;
    if (RealSigaction(signal, nullptr, &current) != 0 || (current.sa_flags & SA_ONSTACK) == 0 ||
        sigismember(&current.sa_mask, sampling_signal) == 1) {
      continue;
    }
    const bool handler = (current.sa_flags & SA_SIGINFO) != 0
                             ? current.sa_sigaction != nullptr
                             : current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN;
    if (!handler) continue;
    sigaddset(&current.sa_mask, sampling_signal);
    if (RealSigaction(signal, &current, nullptr) == 0) NoteSamplingSignalMasked(signal, true);
  }
}

struct sigaction WithSamplingSignalMasked(const struct sigaction& action) {
  struct sigaction masked = action;
  const int owned = OwnedSignal();
  if (owned > 0 && (action.sa_flags & SA_ONSTACK) != 0) sigaddset(&masked.sa_mask, owned);
  return masked;
}

bool NoteSamplingSignalMasked(int signal, bool added) {
  if (signal <= 0 || signal >= 64) return false;
  const uint64_t bit = uint64_t{1} << signal;
  const uint64_t before = added ? g_masked_by_us.fetch_or(bit, std::memory_order_acq_rel)
                                : g_masked_by_us.fetch_and(~bit, std::memory_order_acq_rel);
  return (before & bit) != 0;
}

bool SamplingSignalMaskedByUs(int signal) {
  return signal > 0 && signal < 64 &&
         (g_masked_by_us.load(std::memory_order_acquire) & (uint64_t{1} << signal)) != 0;
}

namespace {

// `sampler` may be null: a deferred session's handler serves only the bootstrap timer.
int InstallHandler(int signal, Sampler* sampler) {
  // The handler's clock (raw_syscall.h): the vDSO's own clock_gettime, found before any
  // handler of ours can run (never libc's, which a preloaded library may replace).
  InitVdsoClock(static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR)));
  // A later session on another signal: the old one goes back to the program's action (its
  // late signals had a whole session's time to arrive).
  if (const int old_signal = OwnedSignal(); old_signal != 0 && old_signal != signal) {
    const struct sigaction program = PreviousAction();
    RealSigaction(old_signal, &program, nullptr);
    g_owned_signal.store(0, std::memory_order_release);
  }
  struct sigaction current;
  if (RealSigaction(signal, nullptr, &current) != 0) return errno;
  // A handler left installed by an earlier session is ours: keep the action it chains to.
  const bool already_ours =
      (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &SamplingSignalHandler;
  if (!already_ours) SetPreviousAction(current);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = &SamplingSignalHandler;
  // SA_RESTART: a sample must not make the program's syscalls fail with EINTR.
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  g_sampler.store(sampler, std::memory_order_seq_cst);
  if (!already_ours && RealSigaction(signal, &action, nullptr) != 0) {
    const int error = errno;
    g_sampler.store(nullptr, std::memory_order_seq_cst);
    return error;
  }
  g_owned_signal.store(signal, std::memory_order_release);
  MaskSamplingSignalInOnStackHandlers(signal);
  return 0;
}

}  // namespace

int InstallSamplingHandler(Sampler* sampler) { return InstallHandler(sampler->signal, sampler); }

int InstallDeferredHandler(int signal) { return InstallHandler(signal, nullptr); }

int StuckHandlers() { return g_stuck_handlers.load(std::memory_order_acquire); }

bool WaitForHandlers(int timeout_ms) {
  // Handlers counted in g_stuck_handlers have not returned for a whole earlier wait: they are
  // waited for no more (the counter cannot tell them from new ones, so a new one is waited
  // for only while the count is above theirs).
  int lowest = g_handlers_in_flight.load(std::memory_order_seq_cst);
  if (lowest <= StuckHandlers()) {
    g_stuck_handlers.store(std::max(lowest, 0), std::memory_order_release);
    return true;
  }
  const int64_t deadline = MonotonicNs() + int64_t{timeout_ms} * 1000000;
  for (int spins = 0;; ++spins) {
    const int now = g_handlers_in_flight.load(std::memory_order_seq_cst);
    lowest = std::min(lowest, now);
    if (now <= StuckHandlers()) {
      g_stuck_handlers.store(std::max(now, 0), std::memory_order_release);
      return true;
    }
    if (MonotonicNs() >= deadline) break;
    // A handler takes microseconds: yield first, then sleep so a stuck one costs no CPU.
    if (spins < 1000) {
      sched_yield();
    } else {
      const struct timespec pause = {0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }
  g_stuck_handlers.store(lowest, std::memory_order_release);
  return false;
}

bool UninstallSamplingHandler(Sampler* /*sampler*/) {
  // A handler stuck since an earlier session holds that session's sampler, not this one.
  const int stuck_before = StuckHandlers();
  g_sampler.store(nullptr, std::memory_order_seq_cst);
  // A handler that loaded the pointer before the store above is counted in flight.
  const bool idle = WaitForHandlers(kHandlerWaitMs);
  return idle && g_handlers_in_flight.load(std::memory_order_seq_cst) <= stuck_before;
}

__attribute__((hot)) void ForgetSamplerAfterFork() {
  ResetInChild(g_sampler, nullptr, std::memory_order_seq_cst);
  // Our handler stays installed in the child (it chains to the program's) and the hooks keep
  // treating the signal as ours. Handlers in flight or stuck were other threads' in the
  // parent: none exists here.
  ResetInChild(g_handlers_in_flight, 0, std::memory_order_relaxed);
  ResetInChild(g_stuck_handlers, 0, std::memory_order_relaxed);
}

}  // namespace inprof::internal
