// Installing and removing the sampling handler. Control path.
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "internal/signal_handler.h"

namespace inprof::internal {

extern std::atomic<Sampler*> g_sampler;
extern std::atomic<int> g_handlers_in_flight;
extern struct sigaction g_previous_action;

int InstallSamplingHandler(Sampler* sampler) {
  struct sigaction current;
  if (sigaction(sampler->signal, nullptr, &current) != 0) return errno;
  // A handler left installed by an earlier session is ours: keep the action it chained to.
  const bool already_ours =
      (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &SamplingSignalHandler;
  if (!already_ours) g_previous_action = current;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = &SamplingSignalHandler;
  // SA_RESTART: a sample must not make the program's syscalls fail with EINTR.
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  g_sampler.store(sampler, std::memory_order_seq_cst);
  if (sigaction(sampler->signal, &action, nullptr) != 0) {
    const int error = errno;
    g_sampler.store(nullptr, std::memory_order_seq_cst);
    return error;
  }
  return 0;
}

void UninstallSamplingHandler(Sampler* sampler) {
  g_sampler.store(nullptr, std::memory_order_seq_cst);
  // A handler that loaded the pointer before the store above is counted in flight.
  while (g_handlers_in_flight.load(std::memory_order_acquire) != 0) sched_yield();
  struct sigaction current;
  if (sigaction(sampler->signal, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
      current.sa_sigaction == &SamplingSignalHandler) {
    sigaction(sampler->signal, &g_previous_action, nullptr);
  }
}

void ForgetSamplerAfterFork() {
  g_sampler.store(nullptr, std::memory_order_seq_cst);
  g_handlers_in_flight.store(0, std::memory_order_relaxed);
}

}  // namespace inprof::internal
