// The sampling signal handler and its installation.
#ifndef INPROF_SDK_SIGNAL_HANDLER_H_
#define INPROF_SDK_SIGNAL_HANDLER_H_

#include <atomic>
#include <csignal>

#include "internal/sampler.h"

namespace inprof::internal {

// The handler: takes one sample for a timer signal we armed, passes every other signal to
// the handler that was installed before ours. Async-signal-safe.
void SamplingSignalHandler(int signal, siginfo_t* info, void* context);

// Installs the handler for sampler->signal, remembering the previous action for chaining,
// and publishes `sampler` to it. Returns 0 or the errno of the failed sigaction.
// Not async-signal-safe.
int InstallSamplingHandler(Sampler* sampler);

// Unpublishes the sampler, waits until no handler is still using it, and restores the
// previous action unless the program replaced ours meanwhile. Not async-signal-safe.
void UninstallSamplingHandler(Sampler* sampler);

// The action signals that are not ours are chained to, and replacing it (the program's
// sigaction/signal calls for our signal while we own it land here). Not async-signal-safe.
struct sigaction PreviousAction();
void SetPreviousAction(const struct sigaction& action);
// The signal our handler is installed for, 0 when none. Async-signal-safe.
int OwnedSignal();
// sigaction as the C library provides it, bypassing our hook. Not async-signal-safe.
int RealSigaction(int signal, const struct sigaction* action, struct sigaction* old);

// Forgets the sampler in a forked child without touching anything else.
// Not async-signal-safe.
void ForgetSamplerAfterFork();

// True on a thread that is currently inside the sampling handler. Async-signal-safe.
bool InSamplingHandler();

// Handlers running right now, in any thread. A handler increments it (seq_cst) before it
// reads anything the control path may replace and decrements it when done, so memory
// unpublished before a load of zero (seq_cst) is no longer read by any handler.
extern std::atomic<int> g_handlers_in_flight;

}  // namespace inprof::internal

#endif  // INPROF_SDK_SIGNAL_HANDLER_H_
