#include "api/exit_paths.h"
#include "api/runtime.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <new>

#include "config/events.h"
#include "engines/itimer.h"
#include "inprof/formats.h"
#include "inprof/thread_annotations.h"
#include "session/fork_child.h"
#include "session/network_outputs.h"
#include "session/session.h"
#include "signal/bootstrap.h"
#include "signal/fork_reset.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {
namespace {

// One per process, in static storage (g_runtime_storage below).
struct Runtime {
  // The lifecycle lock: exclusive to start or stop a session, shared to use one.
  SharedMutex lifecycle;
  Session* session GUARDED_BY(lifecycle) = nullptr;
  // A forked child's copy of the parent's session, never used.
  Session* abandoned GUARDED_BY(lifecycle) = nullptr;
  // The session inprof_stop ended, kept until the next start so that inprof_dump after
  // inprof_stop still writes its profile (a script's natural order: stop, then dump).
  std::unique_ptr<Session> stopped GUARDED_BY(lifecycle);
  // The session's pull endpoint and push client, if any. Shared: RuntimeStop stops the
  // endpoint before it takes the lifecycle lock, from a copy taken under the shared lock.
  std::shared_ptr<NetworkOutputs> net GUARDED_BY(lifecycle);
  // A forked child that follows its parent's profile, before its session starts: the
  // parent's configuration (in memory the child never frees), while the bootstrap sampler
  // (fork_child.h) takes its samples. Set inside fork(), read without the lock.
  std::atomic<const Config*> pending_child{nullptr};
  // True while pending_child is this process's own deferred session (autostart, first sample
  // not yet taken): its outputs are already its own; a forked child's get its pid.
  std::atomic<bool> pending_deferred{false};
  // The deferred session's configuration, which pending_child points to.
  std::unique_ptr<Config> deferred_config GUARDED_BY(lifecycle);
  std::vector<pid_t> excluded GUARDED_BY(lifecycle);
  pthread_key_t exit_key{};
  std::atomic<bool> has_exit_key{false};
};

// What the exit paths read without a lock (RuntimeExitWriteInfo).
std::atomic<int> g_exit_signal{0};
std::atomic<double> g_exit_timeout{0};

// The runtime lives in static storage, constant-initialised: it exists before any code of
// the process runs, so no first use has to make it. Made on first use (a function-local
// static), it could be half made when another thread forked (the first use being a new
// thread's start, in pthread_create's hook): the child inherited the initialisation marked
// in progress by a thread it does not have, and its first use (the fork hook's, at once)
// waited for it forever; one process in five that preloaded the library without a profile,
// started a thread and forked at once hung. Nothing is allocated to make it either: while
// the loader runs our constructors, a program's own malloc or dladdr may not be ready yet.
// Never destroyed (the union's destructor does nothing): the runtime must outlive every
// static destructor of the program (threads may still be created or exit during them).
union RuntimeStorage {
  constexpr RuntimeStorage() : runtime() {}
  ~RuntimeStorage() {}
  Runtime runtime;
};
constinit RuntimeStorage g_runtime_storage;

// Set once the runtime's thread-exit key exists, before the fork handler that reads it is
// registered: a fork on another thread meanwhile runs ChildAfterFork, which then finds
// either nothing registered or the runtime.
std::atomic<Runtime*> g_runtime{nullptr};
std::atomic<bool> g_registration_started{false};

void ChildAfterFork();

// A profile being started (Session::Start until the session is published): 1 while one is
// under way, a private futex word, and the thread making it. The starting thread holds
// locks of the libraries it initialises (libunwind's, the first time in a process): a child
// forked then inherits them held by a thread it does not have, and would wait for them
// forever in its own start. A fork waits for the start to end (WaitForStartBeforeFork); a
// child forked while one was still under way runs unprofiled (ChildAfterFork).
std::atomic<int> g_start_word{0};
std::atomic<int32_t> g_start_tid{0};

// How long a fork waits for a start under way: a start takes milliseconds, but a thread that
// forks while holding a lock the start needs (a library constructor forking inside dlopen)
// would wait for ever; past this its child is not profiled.
constexpr int64_t kForkWaitForStartNs = 1'000'000'000;

// Set while an exec writes (RuntimeWriteForExec): the image goes on as another program, so
// "no samples" is no news to the user; and the process may go on here if the exec fails, so
// what the write frees is freed (at an exit it is left to the exit: BootstrapRelease).
std::atomic<bool> g_exec_write{false};

class StartUnderWay {
 public:
  StartUnderWay() {
    g_start_tid.store(CurrentTidRaw(), std::memory_order_relaxed);
    g_start_word.store(1, std::memory_order_seq_cst);
  }
  ~StartUnderWay() {
    g_start_word.store(0, std::memory_order_seq_cst);
    g_start_tid.store(0, std::memory_order_relaxed);
    RawSyscall4(kSysFutex, reinterpret_cast<long>(&g_start_word), kFutexWakePrivate, INT32_MAX);
  }
  StartUnderWay(const StartUnderWay&) = delete;
  StartUnderWay& operator=(const StartUnderWay&) = delete;
};

// The thread-exit key and the fork handler, once. A second caller while the first is still
// here does not wait (nothing may wait on an initialisation a fork could cut in half): it
// uses the runtime without them, as a thread that started before the library loaded does.
void RegisterRuntime() {
  if (g_registration_started.exchange(true, std::memory_order_acq_rel)) return;
  Runtime& r = g_runtime_storage.runtime;
  // The key's destructor runs on each exiting thread that registered itself.
  r.has_exit_key = pthread_key_create(&r.exit_key, [](void*) {
                     try {
                       Runtime& rt = g_runtime_storage.runtime;
                       ReaderMutexLock lock(&rt.lifecycle);
                       if (rt.session != nullptr) rt.session->OnThreadExit();
                     } catch (...) {
                       // A C callback of the thread library: nothing may escape into it.
                     }
                   }) == 0;
  g_runtime.store(&r, std::memory_order_release);  // before pthread_atfork below
  pthread_atfork(nullptr, nullptr, &ChildAfterFork);
  // For tests that need a process to take no sample for certain (less CPU time than one
  // period): the bootstrap timer's first expiry after a whole period instead of a random
  // part of one. Forked children inherit the choice. Test hooks are never read by a
  // privileged program (secure_getenv; docs/security.md), nor is INPROF_ROOT_PID below.
  g_bootstrap.whole_first_period = secure_getenv("INPROF_TEST_WHOLE_FIRST_PERIOD") != nullptr;
}

Runtime& GetRuntime() {
  if (g_runtime.load(std::memory_order_acquire) == nullptr) RegisterRuntime();
  return g_runtime_storage.runtime;
}

// Registered when the library loads, before the program has threads of its own. System
// calls and stores only, no allocation.
__attribute__((constructor)) void RegisterRuntimeAtLoad() { RegisterRuntime(); }

// The stack a forked child's first samples copy for its session's DWARF unwinder: as the
// parent's session unwinds (DWARF may have failed there: fp then), or as configured when the
// parent's own session had not started. Stores only.
uint32_t ChildCopyBytes(const Session* parent, const Config& follow) {
  const bool dwarf = parent != nullptr ? parent->sampler().unwind != UnwindMode::kFp
                                       : follow.unwind != UnwindChoice::kFp;
  return dwarf ? follow.stack_bytes : 0;
}

// Inside fork(), in the child: only stores and system calls (the child of a multithreaded
// process may do nothing else until fork returns). The parent's session, its threads, locks
// and timers do not exist here: forget it without touching it. A child that follows the
// profile gets the bootstrap sampler; its own session starts at its first safe point
// (StartPendingChild), or never, if it ends without a sample.
// Not analysed: the child's lifecycle lock is made anew, held by nobody.
// Writes only what differs from an idle runtime's state (signal/fork_reset.h): the child of a
// process whose runtime is idle writes none of its pages. Hot: with the rest of the fork
// path, on as few text pages as the code takes (each is a page fault in every child).
__attribute__((hot)) void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime == nullptr) return;  // cannot happen (set before registration): nothing to forget
  Runtime& rt = *runtime;
  RemakeInChild(&rt.lifecycle);
  Session* parent = rt.session;
  const Config* follow = rt.pending_child.load(std::memory_order_acquire);
  ResetInChild(rt.pending_child, nullptr);
  // A parent whose own session was still deferred: the child follows only if asked to.
  if (follow != nullptr && rt.pending_deferred.load(std::memory_order_acquire) &&
      !follow->follow_fork) {
    follow = nullptr;
  }
  ResetInChild(rt.pending_deferred, false);
  if (parent != nullptr) {
    parent->ForgetInChild();
    rt.abandoned = parent;  // kept reachable, never freed
    follow = parent->config().follow_fork && !parent->config().outputs.empty()
                 ? &parent->config()
                 : nullptr;
  }
  if (rt.session != nullptr) rt.session = nullptr;
  // A stopped session has no threads left, but its locks may be held by a parent's
  // thread that is dumping it: abandoned as well.
  if (rt.stopped != nullptr) {
    [[maybe_unused]] Session* abandoned_stopped = rt.stopped.release();
  }
  // Its threads do not exist here; the objects are abandoned like the session (the pointer
  // is overwritten, never released: no destructor, no free inside fork()).
  if (rt.net != nullptr) new (&rt.net) std::shared_ptr<NetworkOutputs>();
  // Forked while a start was still under way (WaitForStartBeforeFork waited no longer, or
  // the start forked): the starting thread's locks are held here for ever; no profile.
  if (g_start_word.load(std::memory_order_relaxed) != 0) {
    g_start_word.store(0, std::memory_order_relaxed);
    g_start_tid.store(0, std::memory_order_relaxed);
    follow = nullptr;
  }
  ForgetSamplerAfterFork();
  ForgetItimerAfterFork();
  ExitPathsAfterForkInChild(follow != nullptr);
  if (follow != nullptr &&
      BootstrapArm(parent != nullptr ? &parent->sampler() : nullptr, follow->signal,
                   follow->frequency, follow->max_depth, ChildCopyBytes(parent, *follow))) {
    rt.pending_child.store(follow, std::memory_order_release);
  }
}

// A process started (exec) by a profiled one: the first profiled process of a tree records
// its pid in INPROF_ROOT_PID (autostart.cpp).
bool IsDescendantProcess() {
  const char* root = secure_getenv("INPROF_ROOT_PID");
  return root != nullptr && *root != '\0' && std::to_string(getpid()) != root;
}

void PublishExitInfo(const Config& config) {
  g_exit_signal.store(config.signal, std::memory_order_relaxed);
  g_exit_timeout.store(config.exit_timeout, std::memory_order_relaxed);
}

// Output paths are fixed when the profile starts: a program that changes its working
// directory (chdir, daemon) still writes where it was asked to.
void MakeOutputsAbsolute(Config* config) {
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return;
  for (std::string& path : config->outputs) {
    if (!path.empty() && path[0] != '/') path = std::string(cwd) + "/" + path;
  }
}

// Starts a forked child's own session from its parent's configuration, with the stacks the
// bootstrap sampler took so far (or a deferred session, from its own configuration).
// The pending configuration is cleared only once the session is published: a thread of the
// program may fork at any instant of this start, and its child (ChildAfterFork) follows the
// session if it sees one, else the pending configuration. Cleared first, a child forked while
// the session was being made saw neither, and ran unprofiled.
// `to_write`: the process is ending (RuntimeWriteForExit) and the session is made only to
// write the bootstrap's samples (Session::StartToWriteBootstrap), unless it has network
// outputs (NetworkOutputs::Attach), which a started session serves and pushes.
void StartPendingChildLocked(Runtime& rt, bool to_write = false) REQUIRES(rt.lifecycle) {
  const Config* pending = rt.pending_child.load(std::memory_order_acquire);
  if (pending == nullptr) return;
  BootstrapDisarm();
  Config config = *pending;
  if (!rt.pending_deferred.load(std::memory_order_acquire)) {
    for (std::string& path : config.outputs) path = PathForProcess(path, getpid());
    // The parent keeps the pull endpoint's port; the child pushes its own windows.
    config.http.clear();
  }
  to_write = to_write && config.http.empty() && config.push_url.empty();
  if (!to_write && TerminationHandlersInstalled() && !TerminationWatcherRunsHere()) {
    if (const pid_t watcher = StartTerminationWatcher(); watcher != 0) rt.excluded.push_back(watcher);
  }
  StartUnderWay under_way;
  auto session = std::make_unique<Session>(std::move(config));
  auto net = NetworkOutputs::Attach(session.get());
  const Status started = to_write ? session->StartToWriteBootstrap() : session->Start(rt.excluded);
  if (started.ok()) {
    session->ImportBootstrap(g_bootstrap.tid);
    if (!to_write) session->MarkRawOutputsStarted();
    if (net && !net->Start().ok()) net.reset();
    PublishExitInfo(session->config());
    rt.net = std::move(net);
    rt.session = session.release();
  }
  // After the session (release): a fork sees the session, or the pending configuration.
  rt.pending_deferred.store(false, std::memory_order_release);
  rt.pending_child.store(nullptr, std::memory_order_release);
  BootstrapRelease(to_write && !g_exec_write.load(std::memory_order_acquire));
}

// At a safe point of a forked child (a normal thread, not inside fork()): its session starts
// if it is pending, or, unless `always`, only when the bootstrap sampler took a sample.
void StartPendingChild(bool always, bool to_write = false) {
  Runtime& rt = GetRuntime();
  if (rt.pending_child.load(std::memory_order_acquire) == nullptr) return;
  if (!always && BootstrapSamples() == 0) return;
  WriterMutexLock lock(&rt.lifecycle);
  StartPendingChildLocked(rt, to_write);
}



constexpr char kNoSamplesLine[] =
    "inprof: no samples: no output written (the program used less CPU time than one sampling "
    "period)\n";

// "No samples" from a time-sampled session: the process's CPU time says whether it was too
// short, or whether its threads kept the sampling signal blocked (docs/signals.md: a program
// that blocks every signal in its worker threads).
std::string TimedNoSamplesLine(double frequency) {
  const int64_t cpu_ns = ClockNsRaw(CLOCK_PROCESS_CPUTIME_ID);
  const double periods = static_cast<double>(cpu_ns) * frequency / 1e9;
  if (cpu_ns <= 0 || periods < 5) return kNoSamplesLine;
  char text[320];
  std::snprintf(text, sizeof text,
                "inprof: no samples: no output written (the program used %.2f CPU-s, about %.0f "
                "sampling periods, and no sample arrived: its threads kept the sampling signal "
                "blocked; see docs/signals.md)\n",
                static_cast<double>(cpu_ns) / 1e9, periods);
  return text;
}

// What "no samples" means for a session's events: with only allocations or lock waits
// sampled, it is not CPU time that was too short.
std::string NoSamplesLine(const Config& config) {
  bool timed = config.events.empty(), alloc = false, lock = false, cond = false;
  for (const std::string& e : config.events) {
    if (std::find(std::begin(kAllocEvents), std::end(kAllocEvents), e) != std::end(kAllocEvents)) {
      alloc = true;
    } else if (std::find(std::begin(kLockEvents), std::end(kLockEvents), e) !=
               std::end(kLockEvents)) {
      lock = true;
    } else if (std::find(std::begin(kCondEvents), std::end(kCondEvents), e) !=
               std::end(kCondEvents)) {
      cond = true;
    } else {
      timed = true;
    }
  }
  if (timed) return TimedNoSamplesLine(config.frequency);
  std::string why;
  if (alloc) {
    why = "no allocation was sampled: the program allocated little next to alloc_rate (" +
          std::to_string(config.alloc_rate) + " bytes)";
  }
  if (lock) {
    why += std::string(why.empty() ? "" : "; ") +
           "no lock wait was sampled: its threads did not wait for a pthread lock";
  }
  if (cond) {
    why += std::string(why.empty() ? "" : "; ") +
           "no condition wait was sampled: its threads did not wait on a pthread condition";
  }
  return "inprof: no samples: no output written (" + why + ")\n";
}

constexpr double kDefaultPushWindowSeconds = 10;

// Samples a raw-only deferred process takes before its session starts (about 80 ms of CPU at
// the default rate): see RuntimeStartDeferred.
constexpr uint32_t kRawWakeSamples = 8;

}  // namespace

__attribute__((hot)) void WaitForStartBeforeFork() {
  if (g_start_word.load(std::memory_order_seq_cst) == 0) return;
  // The start itself forking (a signal handler of the program on the starting thread): its
  // child runs unprofiled.
  if (g_start_tid.load(std::memory_order_relaxed) == CurrentTidRaw()) return;
  const int64_t deadline = MonotonicNsRaw() + kForkWaitForStartNs;
  while (g_start_word.load(std::memory_order_seq_cst) != 0) {
    const int64_t left = deadline - MonotonicNsRaw();
    if (left <= 0) return;
    timespec wait{static_cast<time_t>(left / 1'000'000'000),
                  static_cast<long>(left % 1'000'000'000)};
    RawSyscall4(kSysFutex, reinterpret_cast<long>(&g_start_word), kFutexWaitPrivate, 1,
                reinterpret_cast<long>(&wait));
  }
}

__attribute__((hot)) void StartChildForAllocations() {
  // Not GetRuntime(): in a child nothing may wait for an initialisation another thread of
  // the parent had begun (MakeRuntimeAtLoad). Without a runtime, nothing is pending.
  const Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime == nullptr) return;
  const Config* pending = runtime->pending_child.load(std::memory_order_acquire);
  if (pending == nullptr) return;
  bool alloc = false;
  for (const std::string& e : pending->events) {
    alloc = alloc || e == kAllocEvents[0] || e == kLockEvents[0] || e == kCondEvents[0];
  }
  if (alloc) StartPendingChild(true);
}


Status RuntimeStart(Config config) {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  WriterMutexLock lock(&rt.lifecycle);
  if (rt.session != nullptr || rt.pending_child.load(std::memory_order_acquire) != nullptr) {
    return Status::AlreadyExists(
        "inprof_start: a profile is already running (call inprof_stop first)");
  }
  MakeOutputsAbsolute(&config);
  // The previous profile is no longer dumped once a new one starts.
  // A handler that never returned may still reach the stopped session's sampler (the stop
  // said so): then its memory is kept.
  if (g_handlers_in_flight.load(std::memory_order_seq_cst) != 0) {
    [[maybe_unused]] Session* kept = rt.stopped.release();
  } else {
    rt.stopped.reset();
  }
  // Pushing needs windows: Pyroscope's own agents send every 10 s.
  if (!config.push_url.empty() && config.window <= 0) config.window = kDefaultPushWindowSeconds;
  if (config.window > 0) {
    for (const std::string& path : config.outputs) {
      if (FormatFromPath(path) == Format::kRaw) {
        return Status::InvalidArgument("inprof_start: output '" + path +
                                       "': a raw profile is written once, at the end; "
                                       "continuous mode (window) cannot write it");
      }
    }
  }
  StartUnderWay under_way;
  auto session = std::make_unique<Session>(std::move(config));
  auto net = NetworkOutputs::Attach(session.get());
  Status s = session->Start(rt.excluded);
  if (!s.ok()) return Status::Unavailable("inprof_start: " + s.message());
  if (net) {
    s = net->Start();
    if (!s.ok()) {
      net.reset();
      session->Stop();
      return Status::Unavailable("inprof_start: " + s.message());
    }
  }
  PublishExitInfo(session->config());
  ExitPathsInit();
  session->MarkRawOutputsStarted();
  rt.session = session.release();
  rt.net = std::move(net);
  return Status::Ok();
}

bool OnlyRawOutputs(const Config& config) {
  if (config.outputs.empty()) return false;
  for (const std::string& path : config.outputs) {
    if (FormatFromPath(path) != Format::kRaw) return false;
  }
  return true;
}

bool CanStartLazily(const Config& config) {
  // Only files at exit: the pull endpoint, pushes and windows need the session from the
  // start; the bootstrap sampler is a CPU-time timer, as the cpu event's timer engine.
  return config.lazy && !config.outputs.empty() && config.http.empty() &&
         config.push_url.empty() && config.window <= 0 && config.events.size() == 1 &&
         config.events[0] == "cpu" &&
         config.engine == EngineChoice::kAuto;  // an explicit engine is checked at start
}

Status RuntimeStartDeferred(Config config, bool wake_watcher) {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  {
    WriterMutexLock lock(&rt.lifecycle);
    if (rt.session == nullptr && rt.pending_child.load(std::memory_order_acquire) == nullptr &&
        InstallDeferredHandler(config.signal) == 0) {
      MakeOutputsAbsolute(&config);
      PublishExitInfo(config);
      ExitPathsInit();
      rt.deferred_config = std::make_unique<Config>(config);
      rt.pending_deferred.store(true, std::memory_order_release);
      rt.pending_child.store(rt.deferred_config.get(), std::memory_order_release);
      // Raw outputs only (a process inside `inprof record`): most such processes are short,
      // and one that ends after a few samples writes them from the bootstrap table without
      // ever starting a session; a longer one gets its session after kRawWakeSamples.
      const uint32_t wake_after = OnlyRawOutputs(config) ? kRawWakeSamples : 1;
      const uint32_t copy_bytes = config.unwind != UnwindChoice::kFp ? config.stack_bytes : 0;
      if (BootstrapArmDeferred(config.signal, config.frequency, config.max_depth, copy_bytes,
                               wake_watcher, wake_after)) {
        return Status::Ok();
      }
      rt.pending_child.store(nullptr, std::memory_order_release);
      rt.pending_deferred.store(false, std::memory_order_release);
    }
  }
  // No timer for the bootstrap sampler (or a session exists): start as usual, which
  // reports why it cannot.
  return RuntimeStart(std::move(config));
}

void RuntimeMarkDeferredStarted() {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  const Config* pending = rt.pending_child.load(std::memory_order_acquire);
  if (pending == nullptr || !rt.pending_deferred.load(std::memory_order_acquire)) return;
  [[maybe_unused]] Status s = WriteBootstrapRaw(*pending, pending->outputs, false);
}

void RuntimeStartDeferredNow() {
  ProfilerWorkScope work;
  StartPendingChild(true);
}

namespace {
// Set when the exit write found more still allocated than leak_limit.
std::atomic<bool> g_leak_exit{false};
}  // namespace

Status RuntimeDump(const std::vector<std::string>* outputs, bool heap) {
  ProfilerWorkScope work;
  StartPendingChild(true);
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  // The running profile, or the one inprof_stop ended (until the next start).
  Session* session = rt.session != nullptr ? rt.session : rt.stopped.get();
  if (session == nullptr) {
    return Status::FailedPrecondition("inprof_dump: no profile is running");
  }
  const std::vector<std::string>& list = outputs ? *outputs : session->config().outputs;
  if (list.empty()) {
    return Status::Io("inprof_dump: no outputs given and none configured");
  }
  const char* what = heap ? "inprof_heap_snapshot: " : "inprof_dump: ";
  Status s = session->Dump(list, heap);
  if (s.code() == StatusCode::kFailedPrecondition) return Status::FailedPrecondition(what + s.message());
  if (!s.ok()) return Status::Io(what + s.message());
  return Status::Ok();
}

Status RuntimeStop() {
  ProfilerWorkScope work;
  StartPendingChild(true);
  Runtime& rt = GetRuntime();
  // The pull endpoint stops before the lifecycle lock is taken: its workers may be busy
  // (an answer being computed), and the program's threads wait on that lock to start and
  // exit. Stopping it again under the lock below then returns at once.
  std::shared_ptr<NetworkOutputs> serving;
  {
    ReaderMutexLock lock(&rt.lifecycle);
    serving = rt.net;
  }
  if (serving) serving->StopServing();
  serving.reset();
  WriterMutexLock lock(&rt.lifecycle);
  if (rt.session == nullptr) {
    return Status::FailedPrecondition("inprof_stop: no profile is running");
  }
  std::unique_ptr<Session> session(rt.session);
  std::shared_ptr<NetworkOutputs> net = std::move(rt.net);
  rt.session = nullptr;
  // No new pull requests; then the session's last window goes to the push queue, which
  // drains after the lock is released (Finish, below).
  if (net) net->StopServing();
  session->Stop();
  Status result;
  std::vector<std::string> written;
  // Continuous mode wrote every window, the last one included, as it closed. A profile
  // without a sample writes nothing: no empty files from processes that never ran long
  // enough to be sampled (a child whose exec failed, a shell's short subshells).
  const bool sampled = session->samples() != 0;
  if (!session->config().outputs.empty() && session->config().window <= 0 && sampled) {
    Status s = session->Dump(session->config().outputs);
    if (!s.ok()) result = Status::Io("inprof_stop: " + s.message());
    for (const std::string& path : session->config().outputs) {
      for (const auto& [file, event] : session->FilesFor(path)) {
        if (access(file.c_str(), F_OK) == 0) written.push_back(file);
      }
    }
  }
  if (!sampled) {
    // The marker a session with raw outputs wrote at start (MarkRawOutputsStarted) goes
    // too: nothing of this process is missing.
    for (const std::string& path : session->config().outputs) {
      if (FormatFromPath(path) != Format::kRaw) continue;
      for (const auto& [file, event] : session->FilesFor(path)) unlink(file.c_str());
    }
  }
  // An allocation profile whose hooks the program's malloc never reached says so (its
  // summary names where malloc is defined) even without a sample; any other process that
  // took no sample stays silent.
  const bool nothing_to_say = !sampled && !session->config().outputs.empty() &&
                              session->config().window <= 0 && !net &&
                              !session->alloc_hooks_unreached();
  const bool summary = !session->config().quiet && !nothing_to_say;
  if (session->config().quiet) {
    // Asked for silence.
  } else if (nothing_to_say) {
    // A process that took no sample says one line, and only the one the user started: the
    // short processes a command starts (a shell's /bin/true, a compiler driver's helpers)
    // stay silent, as they leave no file.
    if (!IsDescendantProcess() && !g_exec_write.load(std::memory_order_acquire)) {
      std::fputs(NoSamplesLine(session->config()).c_str(), stderr);
    }
  }
  std::string line = summary ? session->SummaryLine(written) : std::string();
  rt.stopped = std::move(session);
  lock.Unlock();
  // The push queue drains without the lock (NetworkOutputs::kFlushMs at most): the
  // program's threads start and exit meanwhile.
  if (net) net->Finish();
  if (summary) {
    if (net) {
      for (const std::string& extra : net->SummaryLines()) line += "\ninprof: " + extra;
    }
    if (!result.message().empty()) line += "\ninprof: error: " + result.message();
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return result;
}

Status RuntimeLuaAttach(Config config, bool mixed,
                               std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                               bool* started) {
  ProfilerWorkScope work;
  *started = false;
  StartPendingChild(true);
  if (!RuntimeRunning()) {
    if (!mixed) config.events = {"lua"};
    Status r = RuntimeStart(std::move(config));
    if (!r.ok()) return r;
    *started = true;
  }
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  if (rt.session == nullptr) {
    return Status::FailedPrecondition("inprof_lua_start: the profile stopped");
  }
  const std::vector<std::string>& events = rt.session->config().events;
  const bool has_lua = std::find(events.begin(), events.end(), "lua") != events.end();
  if (!mixed && !has_lua) {
    return Status::AlreadyExists(
        "inprof_lua_start: a native profile is already running (events: no lua); start "
        "with mixed=1 to add Lua stacks to its samples");
  }
  rt.session->SetLuaVm(static_cast<pid_t>(syscall(SYS_gettid)), std::move(vm_ranges), mixed);
  return Status::Ok();
}

void RuntimeLuaStack(std::string_view dump, uint32_t weight, char vmstate) {
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  if (rt.session != nullptr) rt.session->AddLuaStack(dump, weight, vmstate);
}

int RuntimeLuaIntervalMs() {
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  return rt.session != nullptr ? rt.session->LuaIntervalMs() : 10;
}

void RuntimeLuaDetach() {
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  if (rt.session != nullptr) rt.session->ClearLuaVm();
}

bool RuntimeRunning() {
  Runtime& rt = GetRuntime();
  if (rt.pending_child.load(std::memory_order_acquire) != nullptr) return true;
  ReaderMutexLock lock(&rt.lifecycle);
  return rt.session != nullptr;
}

void RuntimeExcludeThread(pid_t tid) {
  Runtime& rt = GetRuntime();
  WriterMutexLock lock(&rt.lifecycle);
  rt.excluded.push_back(tid);
  if (rt.session != nullptr) rt.session->ExcludeThread(tid);
}

void RuntimeOnThreadStart() {
  // A forked child that starts threads needs its session to sample them.
  StartPendingChild(true);
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  // Arm the exit hook even when no session runs now: one may start while we live.
  if (rt.has_exit_key) pthread_setspecific(rt.exit_key, reinterpret_cast<void*>(1));
  if (rt.session != nullptr) rt.session->OnThreadStart();
}

void RuntimeBeforeDlclose() {
  if (ProfilerWorkScope::Active()) return;
  ProfilerWorkScope work;
  // A forked child's bootstrap walk must not read the parent's code ranges from now on, and
  // the library's samples must resolve after it is gone: a child with samples starts now.
  if (GetRuntime().pending_child.load(std::memory_order_acquire) != nullptr) BootstrapForgetCode();
  StartPendingChild(false);
  Runtime& rt = GetRuntime();
  ReaderMutexLock lock(&rt.lifecycle);
  if (rt.session != nullptr) rt.session->BeforeDlclose();
}

ExitWriteInfo RuntimeExitWriteInfo() {
  return {g_exit_signal.load(std::memory_order_relaxed),
          g_exit_timeout.load(std::memory_order_relaxed)};
}

__attribute__((hot)) bool RuntimeExitIsSilent() {
  Runtime& rt = GetRuntime();
  const Config* pending = rt.pending_child.load(std::memory_order_acquire);
  if (pending == nullptr || BootstrapSamples() != 0) return false;
  // A process that may print the no-samples line (RuntimeWriteForExit; whether it does also
  // depends on IsDescendantProcess, which allocates: not here, where the exit may come from a
  // signal handler and no watchdog is armed yet) takes the usual path.
  if (rt.pending_deferred.load(std::memory_order_acquire) && !pending->quiet &&
      !g_exec_write.load(std::memory_order_acquire)) {
    return false;
  }
  // Without waiting for a handler still inside the table: that may be the one this _exit
  // interrupted, and without the watchdog the wait would not end. The caller then arms it
  // and takes the usual path.
  return BootstrapDisarmNoWait() && BootstrapSamples() == 0;
}

uint64_t RuntimePendingChildSamples() {
  const Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime == nullptr || runtime->pending_child.load(std::memory_order_acquire) == nullptr) {
    return 0;
  }
  return BootstrapSamples();
}

bool RuntimeWriteForExec(Config* restart, bool* wrote) {
  Runtime& rt = GetRuntime();
  {
    ReaderMutexLock lock(&rt.lifecycle);
    const Config* pending = rt.pending_child.load(std::memory_order_acquire);
    if (rt.session != nullptr) {
      *restart = rt.session->config();
      *wrote = rt.session->samples() != 0 && !rt.session->config().outputs.empty();
    } else if (pending != nullptr) {
      *restart = *pending;
      *wrote = BootstrapSamples() != 0 && !pending->outputs.empty();
    } else {
      return false;
    }
  }
  g_exec_write.store(true, std::memory_order_release);
  RuntimeWriteForExit();
  g_exec_write.store(false, std::memory_order_release);
  return true;
}

void RuntimeWriteForExit() {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  if (rt.pending_child.load(std::memory_order_acquire) != nullptr) {
    if (BootstrapSamples() == 0) {
      // Nothing sampled: nothing to write, and nothing to start. The process the user
      // started says so (RuntimeStop's line); its descendants stay silent.
      const Config* pending = rt.pending_child.load(std::memory_order_acquire);
      // IsDescendantProcess last: it allocates, and RuntimeExitIsSilent's exits (no watchdog)
      // must not come to it.
      if (rt.pending_deferred.load(std::memory_order_acquire) && !pending->quiet &&
          !g_exec_write.load(std::memory_order_acquire) && !IsDescendantProcess()) {
        std::fputs(TimedNoSamplesLine(pending->frequency).c_str(), stderr);
      }
      rt.pending_child.store(nullptr, std::memory_order_release);
      BootstrapDisarm();
      BootstrapRelease(!g_exec_write.load(std::memory_order_acquire));
      return;
    }
    const Config* pending = rt.pending_child.load(std::memory_order_acquire);
    if (pending != nullptr && OnlyRawOutputs(*pending)) {
      // A short process of a recording: its samples are all in the bootstrap table, and a
      // session would start only to write them. Written as they are.
      WriterMutexLock lock(&rt.lifecycle);
      pending = rt.pending_child.exchange(nullptr, std::memory_order_acq_rel);
      if (pending != nullptr) {
        BootstrapDisarm();
        std::vector<std::string> outputs = pending->outputs;
        if (!rt.pending_deferred.exchange(false, std::memory_order_acq_rel)) {
          for (std::string& path : outputs) path = PathForProcess(path, getpid());
        }
        Status s = WriteBootstrapRaw(*pending, outputs, true);
        if (!s.ok()) std::fprintf(stderr, "inprof: %s\n", s.message().c_str());
        BootstrapRelease(!g_exec_write.load(std::memory_order_acquire));
        return;
      }
      // The session started while this waited for the lock (the start holds it, and clears
      // the pending configuration once the session is published): stopped and written below.
    } else {
      StartPendingChild(true, /*to_write=*/true);
    }
  }
  if (RuntimeRunning()) RuntimeStop();
  // The leak gate (Config::leak_limit): the stopped session's allocations still live.
  Session* stopped = nullptr;
  {
    ReaderMutexLock lock(&rt.lifecycle);
    stopped = rt.stopped.get();
    if (stopped != nullptr && stopped->config().leak_limit > 0) {
      const double live = stopped->LiveBytes();
      if (live > static_cast<double>(stopped->config().leak_limit)) {
        std::fprintf(stderr,
                     "inprof: leaks: an estimated %.0f bytes are still allocated at exit, above "
                     "leak_limit (%zu): exit status %d\n%s",
                     live, stopped->config().leak_limit, kLeakExitStatus,
                     stopped->TopLiveStacks(5).c_str());
        g_leak_exit.store(true, std::memory_order_release);
      }
    }
  }
}

int RuntimeLeakExitStatus() {
  return g_leak_exit.load(std::memory_order_acquire) ? kLeakExitStatus : 0;
}

}  // namespace inprof::internal
