// Every way a process ends is a write path (docs/lifecycle.md): return from main and exit()
// (an atexit handler), quick_exit (at_quick_exit), _exit and _Exit (interposed here), and
// SIGTERM/SIGINT with their default action (a handler that wakes a watcher thread, which
// writes and then dies of the signal). One place decides who writes: the first path to get
// here writes, every other one waits for that write to finish (bounded), and a termination
// signal that arrived meanwhile is acted on once it has. Control path, except the signal
// handlers and what the _exit hooks do in a process that is not ours (after vfork).
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/exit_paths.h"
#include "api/runtime.h"
#include "session/session.h"
#include "signal/bootstrap.h"
#include "signal/fork_reset.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"
#include "threads/thread_start.h"

namespace inprof::internal {

extern std::atomic<int> g_exit_watchdog_status;  // signal_handler.cpp

namespace {

enum ExitState : int { kIdle = 0, kWriting = 1, kDone = 2 };

std::atomic<int> g_exit_state{kIdle};
std::atomic<pid_t> g_exit_writer{0};
// The process these belong to: a vfork child shares our memory and must leave them alone.
// 0 until a profile first starts (ExitPathsInit): the exit paths of a process that never
// profiled have nothing to do, and leave at once without a system call.
std::atomic<pid_t> g_owner_pid{0};

// Whether the calling process is the one the exit paths belong to.
__attribute__((hot)) bool OwnedHere() {
  const pid_t owner = g_owner_pid.load(std::memory_order_acquire);
  return owner != 0 && getpid() == owner;
}
// SIGTERM/SIGINT taken by our handler: the process dies of it once the profile is written.
std::atomic<int> g_pending_termination{0};

// The termination watcher: the thread that g_watcher_requests (bootstrap.h) wakes, and the
// process it runs in (0: none in this process, e.g. a forked child before its session
// started). It holds no fd: a pipe's numbers were the program's to close or reuse, and a
// program that did (closefrom(3), then two files of its own) received our bytes in its files
// and no longer died of SIGTERM.
std::atomic<pid_t> g_watcher_pid{0};
std::atomic<pid_t> g_watcher_tid{0};
std::atomic<bool> g_termination_handlers{false};
// The termination signals whose disposition the program sees virtualised (bit n: signal n).
std::atomic<uint64_t> g_managed_termination{0};

pid_t CurrentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void FutexWake(std::atomic<int>* word) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

// Waits until the write is done (`started`: until it is no longer running), at most
// `seconds`; true when it is. Async-signal-safe.
bool WaitForWriter(double seconds, bool started = true) {
  // The kernel's clock (raw_syscall.h): this may run inside a signal handler, where libc's
  // clock_gettime may be another library's (libfaketime).
  const int64_t start = ClockNsRaw(CLOCK_MONOTONIC);
  for (;;) {
    const int state = g_exit_state.load(std::memory_order_acquire);
    if (state == kDone || (started && state == kIdle)) return true;
    const double left =
        seconds - static_cast<double>(ClockNsRaw(CLOCK_MONOTONIC) - start) / 1e9;
    if (left <= 0) return false;
    struct timespec wait = {static_cast<time_t>(left),
                            static_cast<long>((left - static_cast<double>(static_cast<time_t>(left))) * 1e9)};
    syscall(SYS_futex, reinterpret_cast<int*>(&g_exit_state), FUTEX_WAIT_PRIVATE, state, &wait,
            nullptr, 0);
  }
}

// _exit with a watcher thread in this process: the watcher writes, and this thread only
// waits (async-signal-safe). _exit is often called from a signal handler that may have
// interrupted malloc or stdio with their locks held; the watcher is another thread, with its
// own allocator arena, which those locks rarely stop. True when the watcher took the request
// (the write is done, or the wait gave up and said so).
bool HandOffToWatcher() {
  if (g_watcher_pid.load(std::memory_order_acquire) != getpid() ||
      g_watcher_tid.load(std::memory_order_acquire) == CurrentTid() ||
      g_exit_state.load(std::memory_order_acquire) != kIdle) {
    return false;
  }
  PostWatcherRequest(kWatcherExit);
  if (!WaitForWriter(RuntimeExitWriteInfo().timeout_seconds, false)) {
    [[maybe_unused]] ssize_t n = write(2, kExitWriteTimedOut, sizeof kExitWriteTimedOut - 1);
  }
  return true;
}

// A one-shot timer that ends the process with `status` if the write on this thread has not
// finished after `seconds` (signal_handler.cpp: ExitWatchdogFired). Only while our handler is
// installed for `signal`; returns the kernel timer id or -1.
int ArmWatchdog(int signal, double seconds, int status) {
  struct sigaction current;
  if (signal <= 0 || seconds <= 0 || RealSigaction(signal, nullptr, &current) != 0 ||
      (current.sa_flags & SA_SIGINFO) == 0 || current.sa_sigaction != &SamplingSignalHandler) {
    return -1;
  }
  g_exit_watchdog_status.store(status, std::memory_order_relaxed);
  struct sigevent event;
  std::memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal;
  event.sigev_value.sival_ptr = reinterpret_cast<void*>(kExitWatchdogToken);
  event._sigev_un._tid = CurrentTid();
  int timer = -1;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer) != 0) return -1;
  struct itimerspec spec;
  std::memset(&spec, 0, sizeof spec);
  spec.it_value.tv_sec = static_cast<time_t>(seconds);
  spec.it_value.tv_nsec =
      static_cast<long>((seconds - static_cast<double>(spec.it_value.tv_sec)) * 1e9);
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  syscall(SYS_timer_settime, timer, 0, &spec, nullptr);
  // The program may block our signal here (say, _exit from its own handler's mask).
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, signal);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  return timer;
}

void DisarmWatchdog(int timer) {
  if (timer >= 0) syscall(SYS_timer_delete, timer);
}

// Dies of a termination signal our handler took while the profile was being written, as the
// program would have without us.
void DieOfPendingTermination() {
  const int signal = g_pending_termination.load(std::memory_order_acquire);
  if (signal == 0) return;
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  // The real one: through the hook, SIG_DFL would put our handler back (sigaction_hooks.cpp).
  RealSigaction(signal, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal);
}

// exit() and return from main: after the write, the leak gate (leak_limit) may end the
// process with its own status, once stdio is flushed as exit() would.
void OnExit() {
  FinishForExit(ExitPath::kExit, 0);
  if (const int status = RuntimeLeakExitStatus(); status != 0) {
    std::fflush(nullptr);
    ExitGroupRaw(status);
  }
}

// Async-signal-safe.
void TerminationSignalHandler(int signal) {
  const int saved = errno;
  g_pending_termination.store(signal, std::memory_order_release);
  if (g_watcher_pid.load(std::memory_order_acquire) == getpid()) {
    PostWatcherRequest(kWatcherTerminate);
  } else {
    // No watcher in this process (a forked child whose session has not started): a write
    // cannot be done from here, so the signal does what it would have done without us.
    if (RuntimePendingChildSamples() != 0) {
      static constexpr char kText[] =
          "inprof: a termination signal came before this forked process's profile started "
          "(it had not yet reached a point where it could be written): nothing written\n";
      [[maybe_unused]] ssize_t n = write(2, kText, sizeof kText - 1);
    }
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    RealSigaction(signal, &dfl, nullptr);
    raise(signal);
  }
  errno = saved;
}

void* TerminationWatcher(void*) {
  pthread_setname_np(pthread_self(), "inprof-exit");
  g_watcher_tid.store(CurrentTid(), std::memory_order_release);
  for (;;) {
    const uint32_t requests = g_watcher_requests.exchange(0, std::memory_order_acq_rel);
    if (requests == 0) {
      // Returns at once if a request came since the exchange (the word is no longer 0), on
      // FUTEX_WAKE, or on a signal this thread took: each time the word is looked at again.
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_watcher_requests), FUTEX_WAIT_PRIVATE, 0,
              nullptr, nullptr, 0);
      continue;
    }
    if ((requests & kWatcherMark) != 0) {
      try {
        RuntimeMarkDeferredStarted();
      } catch (...) {
        // Only the marker of a process that may be killed later is missing.
      }
    }
    if ((requests & kWatcherStartSession) != 0) {
      // The first sample of a deferred session (autostart): start it, on this thread, which
      // is never sampled and holds no lock of the program's.
      try {
        RuntimeStartDeferredNow();
      } catch (...) {
        // The session did not start; the bootstrap table is written at exit, if anything.
      }
    }
    // An _exit on another thread asks for the write (HandOffToWatcher).
    if ((requests & kWatcherExit) != 0) FinishForExit(ExitPath::kExit, 0);
    if ((requests & kWatcherTerminate) != 0) break;
  }
  const int signal = g_pending_termination.load(std::memory_order_acquire);
  FinishForExit(ExitPath::kSignal, 128 + signal);
  // FinishForExit died of the pending signal unless another path had already finished and
  // the signal came after: die of it now.
  DieOfPendingTermination();
  return nullptr;
}

}  // namespace

__attribute__((hot)) void FinishForExit(ExitPath path, int status) {
  if (!OwnedHere()) return;  // never profiled, or after vfork
  if (path == ExitPath::kUnderscoreExit && HandOffToWatcher()) {
    DieOfPendingTermination();
    return;
  }
  int expected = kIdle;
  if (g_exit_state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
    g_exit_writer.store(CurrentTid(), std::memory_order_release);
    // _exit is often called where nothing but async-signal-safe work is allowed (a signal
    // handler, a child after fork): a stuck write must not keep the process from ending.
    // Not when there is nothing to write (most children of a profiled program that exec or
    // _exit before their first sample): arming it is three system calls and, in a forked
    // child, a dozen page faults, a third of what following a fork costs.
    const ExitWriteInfo info = RuntimeExitWriteInfo();
    const int watchdog = path == ExitPath::kUnderscoreExit && !RuntimeExitIsSilent()
                             ? ArmWatchdog(info.signal, info.timeout_seconds, status)
                             : -1;
    try {
      RuntimeWriteForExit();
    } catch (...) {
      // Nothing of ours may end the program differently; the summary names what failed.
    }
    DisarmWatchdog(watchdog);
    g_exit_state.store(kDone, std::memory_order_release);
    FutexWake(&g_exit_state);
  } else if (expected == kWriting &&
             g_exit_writer.load(std::memory_order_acquire) != CurrentTid()) {
    WaitForWriter(RuntimeExitWriteInfo().timeout_seconds);
  }
  DieOfPendingTermination();
}

bool BeginExecWrite() {
  if (!OwnedHere()) return false;  // never profiled, or after vfork
  int expected = kIdle;
  if (!g_exit_state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
    return false;  // an exit path is writing, or has written: the process is ending anyway
  }
  g_exit_writer.store(CurrentTid(), std::memory_order_release);
  return true;
}

void EndExecWrite() {
  // The process goes on: as another image, or as this one after a failed exec, whose own
  // exit writes again (its restarted profile).
  g_exit_writer.store(0, std::memory_order_release);
  g_exit_state.store(kIdle, std::memory_order_release);
  FutexWake(&g_exit_state);
}

void ExitPathsInit() {
  static std::atomic<bool> done{false};
  g_owner_pid.store(getpid(), std::memory_order_release);
  if (done.exchange(true)) return;
  std::atexit(&OnExit);
  at_quick_exit([] { FinishForExit(ExitPath::kQuickExit, 0); });
}

pid_t StartTerminationWatcher() {
  pthread_t watcher;
  const pid_t tid = StartInternalThread(&watcher, &TerminationWatcher, nullptr);
  if (tid == 0) return 0;
  pthread_detach(watcher);
  g_watcher_pid.store(getpid(), std::memory_order_release);
  return tid;
}

void TerminationAction(struct sigaction* action) {
  std::memset(action, 0, sizeof *action);
  action->sa_handler = &TerminationSignalHandler;
  action->sa_flags = SA_RESTART;
  sigemptyset(&action->sa_mask);
}

bool IsTerminationAction(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == &TerminationSignalHandler;
}

bool TerminationSignalManaged(int signal) {
  return signal > 0 && signal < 64 &&
         (g_managed_termination.load(std::memory_order_acquire) & (uint64_t{1} << signal)) != 0;
}

void NoteTerminationHandlerInstalled() {
  g_termination_handlers.store(true, std::memory_order_release);
}

void InstallTerminationHandlers() {
  for (int signal : {SIGTERM, SIGINT}) {
    // From now on the program sees SIG_DFL where our handler is, and a SIG_DFL it sets
    // puts our handler back (sigaction_hooks.cpp); an ignored signal (nohup, a background
    // job) stays ignored, and a handler the program's own constructors set stays its own.
    g_managed_termination.fetch_or(uint64_t{1} << signal, std::memory_order_acq_rel);
    struct sigaction current;
    if (RealSigaction(signal, nullptr, &current) != 0 ||
        (current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
      continue;
    }
    struct sigaction action;
    TerminationAction(&action);
    if (RealSigaction(signal, &action, nullptr) == 0) NoteTerminationHandlerInstalled();
  }
}

bool TerminationWatcherRunsHere() {
  return g_watcher_pid.load(std::memory_order_acquire) == getpid();
}

bool TerminationHandlersInstalled() {
  return g_termination_handlers.load(std::memory_order_acquire);
}

__attribute__((hot)) void ExitPathsAfterForkInChild(bool profiled) {
  // A child that has no profile has no exit work (its _exit and exec leave at once), and
  // calls nothing the parent has not: a first call through the PLT is a symbol lookup in
  // every child. A profiled parent has called getpid at its start.
  if (!profiled) {
    ResetInChild(g_owner_pid, 0);
  } else {
    g_owner_pid.store(getpid(), std::memory_order_release);
  }
  ResetInChild(g_exit_state, kIdle);
  ResetInChild(g_exit_writer, 0);
  ResetInChild(g_pending_termination, 0);
  // The parent's watcher does not exist here; requests it had not taken yet were the
  // parent's. (The word is this process's own copy: a private futex wakes only waiters of
  // this address space.)
  ResetInChild(g_watcher_pid, 0);
  ResetInChild(g_watcher_tid, 0);
  ResetInChild(g_watcher_requests, 0);
}

}  // namespace inprof::internal

// _exit and _Exit end the process without atexit handlers, which is why programs call them
// after fork and in signal handlers: the profile is written first, on this thread, under the
// exit watchdog. exit() reaches the C library's own _exit without coming back here.
extern "C" __attribute__((visibility("default"), noreturn, hot)) void _exit(int status) {
  inprof::internal::FinishForExit(inprof::internal::ExitPath::kUnderscoreExit, status);
  const int leak = inprof::internal::RuntimeLeakExitStatus();
  inprof::internal::ExitGroupRaw(status == 0 && leak != 0 ? leak : status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  inprof::internal::FinishForExit(inprof::internal::ExitPath::kUnderscoreExit, status);
  const int leak = inprof::internal::RuntimeLeakExitStatus();
  inprof::internal::ExitGroupRaw(status == 0 && leak != 0 ? leak : status);
}

// daemon() forks and ends the parent with the C library's internal _exit, which does not come
// back through the hook above: the same steps, with the parent leaving through FinishForExit
// so that what it sampled before daemonizing is written.
extern "C" __attribute__((visibility("default"))) int daemon(int nochdir, int noclose) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child > 0) {
    inprof::internal::FinishForExit(inprof::internal::ExitPath::kUnderscoreExit, 0);
    inprof::internal::ExitGroupRaw(0);
  }
  if (setsid() == -1) return -1;
  if (nochdir == 0 && chdir("/") != 0) return -1;
  if (noclose == 0) {
    const int fd = open("/dev/null", O_RDWR);
    if (fd < 0) return -1;
    struct stat st;
    // As the C library does: refuse a /dev/null that is not the null device.
    if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
      close(fd);
      errno = ENODEV;
      return -1;
    }
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (fd > STDERR_FILENO) close(fd);
  }
  return 0;
}
