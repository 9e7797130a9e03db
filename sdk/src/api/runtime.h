// The process-wide runtime: at most one Session, the lifecycle lock, and the hooks that
// connect thread creation/exit and fork to it.
//
// Concurrency contract: Start/Stop take the lifecycle lock exclusively; Dump and the thread
// hooks take it shared, so dumps run concurrently with each other and with thread creation.
// Nothing here is async-signal-safe.
#ifndef INPROF_SDK_RUNTIME_H_
#define INPROF_SDK_RUNTIME_H_

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "inprof/profile.h"
#include "inprof/status.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

// The lifecycle's failures, in the codes the C API maps to inprof_error (api.cpp, ErrorCode):
// a bad configuration kInvalidArgument, a profile already running kAlreadyExists, none running
// kFailedPrecondition, an output not written kIo, a resource the system refused kUnavailable.
// Each message starts with the C function's name ("inprof_start: ...").
Status RuntimeStart(Config config);
// Whether autostart may defer the session to the first sample: files at exit only, the cpu
// event on CPU-time timers, `lazy` not turned off.
bool CanStartLazily(const Config& config);
// Autostart's deferred start: installs the handler and arms the bootstrap sampler for the
// calling thread; the session itself starts at the first sample (with `wake_watcher` the
// handler wakes the exit watcher, which calls RuntimeStartDeferredNow), at a new thread, a
// dlclose, an API call or an exit path with samples, and never for a process that takes none.
Status RuntimeStartDeferred(Config config, bool wake_watcher);
void RuntimeStartDeferredNow();
// The exit watcher at a deferred raw-only process's first sample: writes its started marker
// (WriteBootstrapRaw, not complete), so that a process killed before its session starts is
// still named in the recording.
void RuntimeMarkDeferredStarted();
// True when every output is a raw profile (a process inside `inprof record`).
bool OnlyRawOutputs(const Config& config);
// Before a fork, in the parent (hooks/fork_hook.cpp, and the loader's fork guard for the
// C library's own forks): waits, at most a second, for a profile start under way on another
// thread, so that the child follows a started profile instead of inheriting the starting
// thread's locks. One load when none is. Async-signal-safe.
void WaitForStartBeforeFork();
// In a forked child, as fork returns (hooks/fork_hook.cpp): starts the child's session now
// when it samples allocations (its allocations come before any CPU sample). Control path.
void StartChildForAllocations();
// The exit status a process ends with when its allocations still live at exit exceed
// Config::leak_limit (LeakSanitizer's), and whether the exit write found that: then
// RuntimeLeakExitStatus() returns it, else 0.
inline constexpr int kLeakExitStatus = 23;
int RuntimeLeakExitStatus();
// `heap`: only the allocation events, what is live first (inprof_heap_snapshot).
Status RuntimeDump(const std::vector<std::string>* outputs, bool heap = false);
Status RuntimeStop();

// The LuaJIT bridge (inprof/luajit.h). Attach: makes the calling thread the Lua VM's thread
// in the running session (starting one with `config` when none runs; `*started` says so);
// the session must sample the `lua` event unless `mixed`. Stack: hands one stack from the
// VM's profiler callback to the session. Detach: forgets the VM. Not async-signal-safe.
Status RuntimeLuaAttach(Config config, bool mixed,
                               std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                               bool* started);
void RuntimeLuaStack(std::string_view dump, uint32_t weight, char vmstate);
int RuntimeLuaIntervalMs();
void RuntimeLuaDetach();
bool RuntimeRunning();

// Threads of the profiler itself that no session may sample.
void RuntimeExcludeThread(pid_t tid);

// Called on every thread created through pthread_create, before its start routine, and
// when it exits.
void RuntimeOnThreadStart();

// Called before the program unloads a library, so its samples still resolve afterwards.
// Does nothing on a thread that is inside the profiler's own work (libdw may dlclose while
// we hold our locks).
void RuntimeBeforeDlclose();

// Before an exec replaces the image: writes what this image sampled, as an exit would
// (without the "no samples" line), and stops sampling. False when no profile was running.
// `*restart` gets the configuration to start again with if the exec fails, `*wrote` whether
// a profile was written. Not async-signal-safe.
bool RuntimeWriteForExec(Config* restart, bool* wrote);
// What the exit paths need of the running profile, readable without locks: the signal the
// watchdog may use and the write's bound (INPROF_EXIT_TIMEOUT).
struct ExitWriteInfo {
  int signal = 0;
  double timeout_seconds = 0;
};
ExitWriteInfo RuntimeExitWriteInfo();
// True when the exit has nothing to write and nothing to print: a process whose profile is
// still pending (a forked child, or a start deferred to the first sample) that took no
// sample and would not say so. The pending sampler is disarmed first, so no sample can come
// after the answer; the exit then needs no watchdog. False, with the sampler disarmed, when a
// sampling handler is still inside the table (never waits for it). Neither allocates nor
// waits.
bool RuntimeExitIsSilent();
// The write itself: stops the running session (or starts a forked child's pending one that
// took samples) and writes its outputs. Not async-signal-safe.
void RuntimeWriteForExit();
// Samples a forked child took before its session started (0 when none is pending).
// Async-signal-safe.
uint64_t RuntimePendingChildSamples();

}  // namespace inprof::internal

#endif  // INPROF_SDK_RUNTIME_H_
