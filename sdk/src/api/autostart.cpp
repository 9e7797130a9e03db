// Autostart: with INPROF_OUTPUT (or INPROF_HTTP / INPROF_PUSH_URL) set, profiling starts
// when the library loads (preloaded or linked) and the outputs are written when the process
// ends, by any exit path (exit_paths.cpp). Control path.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/exit_paths.h"
#include "api/runtime.h"
#include "config/config.h"
#include "hooks/exec_hooks.h"
#include "inprof/inprof.h"
#include "inprof/status.h"
#include "session/session.h"

namespace inprof::internal {
namespace {

// A process started by a profiled process inherits INPROF_OUTPUT; give it its own file
// names (out.folded -> out.<pid>.folded) so it does not overwrite its parent's outputs.
// The first profiled process of a tree records its pid for its descendants.
// Only the first process serves the pull endpoint: its descendants cannot bind the same
// port (they still write their files and push their windows).
void RenameOutputsForDescendant(Config* config) {
  const std::string pid = std::to_string(getpid());
  const char* root = std::getenv("INPROF_ROOT_PID");
  if (root == nullptr || *root == '\0') {
    setenv("INPROF_ROOT_PID", pid.c_str(), 1);
    return;
  }
  if (pid == root) return;
  for (std::string& path : config->outputs) path = PathForProcess(path, getpid());
  config->http.clear();
}

bool Set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

void Autostart() {
  // A program with elevated privileges (setuid, setgid, file capabilities) is never
  // configured by its caller's environment: only its own inprof_start(config) profiles it
  // (docs/security.md). glibc already drops LD_PRELOAD there; this covers -linprof.
  if (EnvironmentIgnored(ProcessIsSecure())) return;
  // Any output asks for profiling: files, the pull endpoint, or a push target.
  if (!Set("INPROF_OUTPUT") && !Set("INPROF_HTTP") && !Set("INPROF_PUSH_URL")) return;
  Config config;
  Status parsed = ConfigFromEnvironment(&config);
  if (!parsed.ok()) {
    std::fprintf(stderr, "inprof: %s; the program runs without profiling\n",
                 parsed.message().c_str());
    return;
  }
  RenameOutputsForDescendant(&config);
  // An earlier image of this process wrote its profile before it exec'd this one: this one
  // writes under the next .exec<N> names (exec_hooks.cpp).
  const int segment = ExecSegmentFromEnvironment();
  NoteExecOutputs(config.outputs, segment);
  for (std::string& path : config.outputs) path = PathForExec(path, segment);
  const pid_t watcher = StartTerminationWatcher();
  if (watcher != 0) RuntimeExcludeThread(watcher);
  // Most processes of a profiled command (a shell's subshells, a compiler driver's helpers)
  // end before their first sample: their session starts only when that sample comes.
  Status started =
      CanStartLazily(config) ? RuntimeStartDeferred(std::move(config), TerminationWatcherRunsHere())
                             : RuntimeStart(std::move(config));
  if (!started.ok()) {
    std::fprintf(stderr, "inprof: %s; the program runs without profiling\n",
                 started.message().c_str());
    return;
  }
  // The exit paths (exit_paths.cpp) were registered by the start, before main runs: the
  // atexit handler runs after every atexit handler and static destructor the program
  // registers later (they run in reverse order of registration).
  if (watcher != 0) InstallTerminationHandlers();
}

// A constructor is a C callback of the loader: nothing may escape it.
__attribute__((constructor)) void AutostartGuarded() {
  try {
    Autostart();
  } catch (...) {
    static constexpr char kText[] = "inprof: could not start; the program runs without profiling\n";
    [[maybe_unused]] ssize_t n = write(2, kText, sizeof kText - 1);
  }
}

}  // namespace
}  // namespace inprof::internal
