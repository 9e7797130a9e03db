// Autostart: with INPROF_OUTPUT (or INPROF_HTTP / INPROF_PUSH_URL) set, profiling starts when the library loads (preloaded or
// linked) and the outputs are written at exit — on return from main, exit(), and on
// SIGTERM/SIGINT when the program has not installed its own handler for them.
// Control path, except TerminationSignalHandler.
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

#include "inprof/inprof.h"
#include "internal/runtime.h"
#include "internal/session.h"

namespace inprof::internal {
namespace {

// The write end of a pipe the termination handler signals; a watcher thread does the
// actual work (writing files is not async-signal-safe).
int g_termination_pipe[2] = {-1, -1};
std::atomic<bool> g_exit_done{false};

void FinishProfile() {
  if (g_exit_done.exchange(true)) return;
  if (inprof_is_running()) {
    if (inprof_stop() != INPROF_OK) {
      // The summary line already names the failed output.
    }
  }
}

// Async-signal-safe: one write(2).
void TerminationSignalHandler(int signal) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t n = write(g_termination_pipe[1], &byte, 1);
  errno = saved;
}

void* TerminationWatcher(void*) {
  pthread_setname_np(pthread_self(), "inprof-exit");
  unsigned char signal = 0;
  while (read(g_termination_pipe[0], &signal, 1) < 0 && errno == EINTR) {
  }
  FinishProfile();
  // Die of the signal as the program would have without us.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(signal, &dfl, nullptr);
  kill(getpid(), signal);
  return nullptr;
}

// Starts the thread that finishes the profile on SIGTERM/SIGINT and returns its tid (0 if
// it could not start), so the session can leave it unsampled from the start.
pid_t StartTerminationWatcher() {
  if (pipe2(g_termination_pipe, O_CLOEXEC) != 0) return 0;
  pthread_t watcher;
  const pid_t tid = StartInternalThread(&watcher, &TerminationWatcher, nullptr);
  if (tid != 0) pthread_detach(watcher);
  return tid;
}

// Only signals whose disposition is still the default: a program that handles them
// itself keeps full control (and exits through exit(), which writes the outputs).
void InstallTerminationHandlers() {
  for (int signal : {SIGTERM, SIGINT}) {
    struct sigaction current;
    if (sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = &TerminationSignalHandler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
}

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

// In a forked child the watcher thread does not exist and our SIGTERM/SIGINT handlers would
// write into a pipe nobody reads, so the child could not be terminated: start a watcher of
// its own when the child is profiled, otherwise give the signals back their default action.
void AfterForkInChild() {
  g_exit_done.store(false);
  if (g_termination_pipe[0] < 0) return;
  close(g_termination_pipe[0]);
  close(g_termination_pipe[1]);
  g_termination_pipe[0] = g_termination_pipe[1] = -1;
  if (inprof_is_running()) {
    const pid_t watcher = StartTerminationWatcher();
    if (watcher != 0) {
      RuntimeExcludeThread(watcher);
      return;
    }
  }
  for (int signal : {SIGTERM, SIGINT}) {
    struct sigaction current;
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == &TerminationSignalHandler) {
      struct sigaction dfl;
      std::memset(&dfl, 0, sizeof dfl);
      dfl.sa_handler = SIG_DFL;
      sigaction(signal, &dfl, nullptr);
    }
  }
}

__attribute__((constructor)) void Autostart() {
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
  const pid_t watcher = StartTerminationWatcher();
  if (watcher != 0) RuntimeExcludeThread(watcher);
  RuntimeResult started = RuntimeStart(std::move(config));
  if (started.error != RuntimeError::kOk) {
    std::fprintf(stderr, "inprof: %s; the program runs without profiling\n",
                 started.message.c_str());
    return;
  }
  // Registered before main runs, so it runs after every atexit handler and static
  // destructor the program registers later (they run in reverse order of registration).
  std::atexit(&FinishProfile);
  if (watcher != 0) InstallTerminationHandlers();
  // Runs after the runtime's own child handler (registered earlier), which has already
  // started the child's session when it follows forks.
  pthread_atfork(nullptr, nullptr, &AfterForkInChild);
}

}  // namespace
}  // namespace inprof::internal
