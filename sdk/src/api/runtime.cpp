#include "internal/runtime.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <shared_mutex>

#include "internal/network_outputs.h"
#include "internal/session.h"
#include "internal/signal_handler.h"

namespace inprof::internal {
namespace {

// Constructed on first use and never destroyed: the runtime must outlive every static
// destructor of the program (threads may still be created or exit during them).
struct Runtime {
  std::shared_mutex lifecycle;
  Session* session = nullptr;
  Session* abandoned = nullptr;  // a forked child's copy of the parent's session, never used
  // The session inprof_stop ended, kept until the next start so that inprof_dump after
  // inprof_stop still writes its profile (a script's natural order: stop, then dump).
  std::unique_ptr<Session> stopped;
  std::unique_ptr<NetworkOutputs> net;  // the session's pull endpoint and push client, if any
  std::vector<pid_t> excluded;
  pthread_key_t exit_key{};
  bool has_exit_key = false;
};

Runtime& GetRuntime() {
  static Runtime* runtime = [] {
    auto* r = new Runtime;
    // The key's destructor runs on each exiting thread that registered itself.
    r->has_exit_key = pthread_key_create(&r->exit_key, [](void*) {
                        Runtime& rt = GetRuntime();
                        std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
                        if (rt.session != nullptr) rt.session->OnThreadExit();
                      }) == 0;
    pthread_atfork(nullptr, nullptr, [] {
      // The child has one thread and no timers: the session (its collector thread, its
      // locks, its timers) does not exist here. Forget it without touching it.
      Runtime& rt = GetRuntime();
      new (&rt.lifecycle) std::shared_mutex();
      Session* parent = rt.session;
      if (parent != nullptr) {
        parent->ForgetInChild();
        rt.abandoned = parent;  // kept reachable, never freed
      }
      rt.session = nullptr;
      // A stopped session has no threads left, but its locks may be held by a parent's
      // thread that is dumping it: abandoned as well.
      [[maybe_unused]] Session* abandoned_stopped = rt.stopped.release();
      // Its threads do not exist here; the objects are abandoned like the session.
      [[maybe_unused]] NetworkOutputs* abandoned_net = rt.net.release();
      ForgetSamplerAfterFork();
      // Follow the fork: the child profiles into its own files (out.<pid>.folded).
      if (parent != nullptr && parent->config().follow_fork && !parent->config().outputs.empty()) {
        Config config = parent->config();
        for (std::string& path : config.outputs) path = PathForProcess(path, getpid());
        // The parent keeps the pull endpoint's port; the child pushes its own windows.
        config.http.clear();
        auto session = std::make_unique<Session>(std::move(config));
        auto net = NetworkOutputs::Attach(session.get());
        if (session->Start({}).ok()) {
          if (net && !net->Start().ok()) net.reset();
          rt.net = std::move(net);
          rt.session = session.release();
          // The child's files are written when it exits (an inherited autostart handler
          // may get there first; then this finds nothing running).
          std::atexit([] {
            if (RuntimeRunning()) RuntimeStop();
          });
        }
      }
    });
    return r;
  }();
  return *runtime;
}

thread_local bool t_profiler_work = false;

constexpr double kDefaultPushWindowSeconds = 10;

}  // namespace

ProfilerWorkScope::ProfilerWorkScope() : outer_(t_profiler_work) { t_profiler_work = true; }
ProfilerWorkScope::~ProfilerWorkScope() { t_profiler_work = outer_; }
bool ProfilerWorkScope::Active() { return t_profiler_work; }

RuntimeResult RuntimeStart(Config config) {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  std::unique_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session != nullptr) {
    return {RuntimeError::kAlreadyStarted,
            "inprof_start: a profile is already running (call inprof_stop first)"};
  }
  // The previous profile is no longer dumped once a new one starts.
  rt.stopped.reset();
  // Pushing needs windows: Pyroscope's own agents send every 10 s.
  if (!config.push_url.empty() && config.window <= 0) config.window = kDefaultPushWindowSeconds;
  auto session = std::make_unique<Session>(std::move(config));
  auto net = NetworkOutputs::Attach(session.get());
  Status s = session->Start(rt.excluded);
  if (!s.ok()) return {RuntimeError::kSystem, "inprof_start: " + s.message()};
  if (net) {
    s = net->Start();
    if (!s.ok()) {
      net.reset();
      session->Stop();
      return {RuntimeError::kSystem, "inprof_start: " + s.message()};
    }
  }
  rt.session = session.release();
  rt.net = std::move(net);
  return {};
}

RuntimeResult RuntimeDump(const std::vector<std::string>* outputs) {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  // The running profile, or the one inprof_stop ended (until the next start).
  Session* session = rt.session != nullptr ? rt.session : rt.stopped.get();
  if (session == nullptr) {
    return {RuntimeError::kNotStarted, "inprof_dump: no profile is running"};
  }
  const std::vector<std::string>& list = outputs ? *outputs : session->config().outputs;
  if (list.empty()) {
    return {RuntimeError::kOutput, "inprof_dump: no outputs given and none configured"};
  }
  Status s = session->Dump(list);
  if (!s.ok()) return {RuntimeError::kOutput, "inprof_dump: " + s.message()};
  return {};
}

RuntimeResult RuntimeStop() {
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  std::unique_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session == nullptr) {
    return {RuntimeError::kNotStarted, "inprof_stop: no profile is running"};
  }
  std::unique_ptr<Session> session(rt.session);
  std::unique_ptr<NetworkOutputs> net = std::move(rt.net);
  rt.session = nullptr;
  // No new pull requests; then the session's last window goes to the push queue, which gets
  // a few seconds to drain.
  if (net) net->StopServing();
  session->Stop();
  if (net) net->Finish();
  RuntimeResult result;
  std::vector<std::string> written;
  // Continuous mode wrote every window, the last one included, as it closed.
  if (!session->config().outputs.empty() && session->config().window <= 0) {
    Status s = session->Dump(session->config().outputs);
    if (!s.ok()) result = {RuntimeError::kOutput, "inprof_stop: " + s.message()};
    for (const std::string& path : session->config().outputs) {
      for (const auto& [file, event] : session->FilesFor(path)) {
        if (access(file.c_str(), F_OK) == 0) written.push_back(file);
      }
    }
  }
  if (!session->config().quiet) {
    std::string line = session->SummaryLine(written);
    if (net) {
      for (const std::string& extra : net->SummaryLines()) line += "\ninprof: " + extra;
    }
    if (!result.message.empty()) line += "\ninprof: error: " + result.message;
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  rt.stopped = std::move(session);
  return result;
}

RuntimeResult RuntimeLuaAttach(Config config, bool mixed,
                               std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                               bool* started) {
  ProfilerWorkScope work;
  *started = false;
  if (!RuntimeRunning()) {
    if (!mixed) config.events = {"lua"};
    RuntimeResult r = RuntimeStart(std::move(config));
    if (r.error != RuntimeError::kOk) return r;
    *started = true;
  }
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session == nullptr) return {RuntimeError::kNotStarted, "inprof_lua_start: the profile stopped"};
  const std::vector<std::string>& events = rt.session->config().events;
  const bool has_lua = std::find(events.begin(), events.end(), "lua") != events.end();
  if (!mixed && !has_lua) {
    return {RuntimeError::kAlreadyStarted,
            "inprof_lua_start: a native profile is already running (events: no lua); start "
            "with mixed=1 to add Lua stacks to its samples"};
  }
  rt.session->SetLuaVm(static_cast<pid_t>(syscall(SYS_gettid)), std::move(vm_ranges), mixed);
  return {};
}

void RuntimeLuaStack(std::string_view dump, uint32_t weight, char vmstate) {
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session != nullptr) rt.session->AddLuaStack(dump, weight, vmstate);
}

int RuntimeLuaIntervalMs() {
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  return rt.session != nullptr ? rt.session->LuaIntervalMs() : 10;
}

void RuntimeLuaDetach() {
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session != nullptr) rt.session->ClearLuaVm();
}

bool RuntimeRunning() {
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  return rt.session != nullptr;
}

void RuntimeExcludeThread(pid_t tid) {
  Runtime& rt = GetRuntime();
  std::unique_lock<std::shared_mutex> lock(rt.lifecycle);
  rt.excluded.push_back(tid);
  if (rt.session != nullptr) rt.session->ExcludeThread(tid);
}

void RuntimeOnThreadStart() {
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  // Arm the exit hook even when no session runs now: one may start while we live.
  if (rt.has_exit_key) pthread_setspecific(rt.exit_key, reinterpret_cast<void*>(1));
  if (rt.session != nullptr) rt.session->OnThreadStart();
}

void RuntimeBeforeDlclose() {
  if (ProfilerWorkScope::Active()) return;
  ProfilerWorkScope work;
  Runtime& rt = GetRuntime();
  std::shared_lock<std::shared_mutex> lock(rt.lifecycle);
  if (rt.session != nullptr) rt.session->BeforeDlclose();
}

}  // namespace inprof::internal
