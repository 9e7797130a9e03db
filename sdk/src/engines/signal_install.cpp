// Installing and removing the sampling handler. Control path.
#include <dlfcn.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "internal/signal_handler.h"

namespace inprof::internal {

extern std::atomic<Sampler*> g_sampler;
extern struct sigaction g_previous_actions[4];
extern std::atomic<unsigned> g_previous_index;

namespace {
std::atomic<int> g_owned_signal{0};
}  // namespace

struct sigaction PreviousAction() {
  return g_previous_actions[g_previous_index.load(std::memory_order_acquire) & 3];
}

void SetPreviousAction(const struct sigaction& action) {
  const unsigned next = (g_previous_index.load(std::memory_order_relaxed) + 1) & 3;
  g_previous_actions[next] = action;
  g_previous_index.store(next, std::memory_order_release);
}

int OwnedSignal() { return g_owned_signal.load(std::memory_order_acquire); }

int RealSigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
  static SigactionFn real = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  return real(signal, action, old);
}

int InstallSamplingHandler(Sampler* sampler) {
  struct sigaction current;
  if (RealSigaction(sampler->signal, nullptr, &current) != 0) return errno;
  // A handler left installed by an earlier session is ours: keep the action it chained to.
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
  if (RealSigaction(sampler->signal, &action, nullptr) != 0) {
    const int error = errno;
    g_sampler.store(nullptr, std::memory_order_seq_cst);
    return error;
  }
  g_owned_signal.store(sampler->signal, std::memory_order_release);
  return 0;
}

void UninstallSamplingHandler(Sampler* sampler) {
  g_sampler.store(nullptr, std::memory_order_seq_cst);
  // A handler that loaded the pointer before the store above is counted in flight.
  while (g_handlers_in_flight.load(std::memory_order_acquire) != 0) sched_yield();
  g_owned_signal.store(0, std::memory_order_release);
  struct sigaction current;
  if (RealSigaction(sampler->signal, nullptr, &current) == 0 &&
      (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &SamplingSignalHandler) {
    const struct sigaction previous = PreviousAction();
    RealSigaction(sampler->signal, &previous, nullptr);
  }
}

void ForgetSamplerAfterFork() {
  g_sampler.store(nullptr, std::memory_order_seq_cst);
  // Our handler stays installed in the child (it chains to the program's); the hooks keep
  // treating the signal as ours until a session in the child uninstalls it.
  g_handlers_in_flight.store(0, std::memory_order_relaxed);
}

}  // namespace inprof::internal
