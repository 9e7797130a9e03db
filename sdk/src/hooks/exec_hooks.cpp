// The exec family: the program owns its exec, and an exec must neither lose what this image
// sampled nor leave anything of ours that could hurt the next image (docs/lifecycle.md,
// "exec"). Control path.
//
// Before the image is replaced, its samples are written (or, inside `inprof record`, its raw
// profile handed over) as an exit path would write them, and sampling stops. The process's
// next image writes under the next `.exec<N>` name (PathForExec), told by
// INPROF_EXEC_SEGMENT=<pid>:<N> in the environment it gets: under plain LD_PRELOAD with
// INPROF_OUTPUT=x.folded, the first image writes x.folded and the program it execs
// x.exec1.folded, instead of overwriting it. Our ITIMER_PROF, which survives execve and would
// kill the new image with SIGPROF, is disarmed; the sampling signal goes back to the
// program's action (through SIG_IGN, which discards a signal of ours still pending).
//
// An exec that is bound to fail (no such file, not executable: what a shell meets on every
// PATH entry before the right one) changes nothing: it is checked first and passed straight
// through. One that fails anyway after the write (E2BIG, ENOEXEC without a shell to fall
// back to, a missing script interpreter) starts sampling again, writing at exit under the
// next `.exec<N>` name, so that nothing is written twice and nothing is lost.
//
// glibc's exec functions call execve internally without going through the dynamic symbol,
// so each public one is wrapped. In a vfork child (posix_spawn's, or a program's vfork) the
// process is not the one whose profile this memory holds: only the ITIMER_PROF step runs
// there, without a lock or an allocation.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/exit_paths.h"
#include "api/runtime.h"
#include "config/config.h"
#include "engines/itimer.h"
#include "hooks/exec_hooks.h"
#include "signal/signal_handler.h"

extern char** environ;

namespace inprof::internal {

namespace {

constexpr char kSegmentVariable[] = "INPROF_EXEC_SEGMENT";

// This image's segment (0: the process's first image, or every earlier one wrote nothing),
// and the outputs its names are derived from, absolute, with the pid of the process they
// were named for. Set by autostart (NoteExecOutputs), or at the first exec of a profile the
// program started itself.
std::atomic<int> g_segment{0};
std::vector<std::string>* g_base_outputs = nullptr;  // never freed: a fork child keeps it
pid_t g_base_pid = 0;

std::vector<std::string> Absolute(std::vector<std::string> paths) {
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return paths;
  for (std::string& path : paths) {
    if (!path.empty() && path[0] != '/') path = std::string(cwd) + "/" + path;
  }
  return paths;
}

// The outputs of this process's image number `segment`: a forked child names its files
// after its pid, as StartPendingChildLocked does.
std::vector<std::string> OutputsForSegment(int segment) {
  std::vector<std::string> outputs;
  if (g_base_outputs == nullptr) return outputs;
  for (const std::string& base : *g_base_outputs) {
    const std::string named = getpid() == g_base_pid ? base : PathForProcess(base, getpid());
    outputs.push_back(PathForExec(named, segment));
  }
  return outputs;
}

// Whether an exec of `path` can succeed: a regular file we may execute. Syscalls and the
// stack only (this may run in a vfork child).
bool Executable(const char* path) {
  struct stat st;
  return path != nullptr && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

// execvp's search: `file` itself when it has a slash, else each entry of PATH (glibc's
// default when unset: /bin:/usr/bin).
bool ExecutableOnPath(const char* file) {
  if (file == nullptr || *file == '\0') return false;
  if (std::strchr(file, '/') != nullptr) return Executable(file);
  const char* path = getenv("PATH");
  if (path == nullptr) path = "/bin:/usr/bin";
  const size_t file_len = std::strlen(file);
  char candidate[4096];
  for (const char* p = path;;) {
    const char* end = std::strchr(p, ':');
    const size_t dir_len = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
    if (dir_len + 1 + file_len < sizeof candidate) {
      // An empty entry is the current directory.
      size_t n = 0;
      if (dir_len == 0) {
        candidate[n++] = '.';
      } else {
        std::memcpy(candidate, p, dir_len);
        n = dir_len;
      }
      candidate[n++] = '/';
      std::memcpy(candidate + n, file, file_len + 1);
      if (Executable(candidate)) return true;
    }
    if (end == nullptr) return false;
    p = end + 1;
  }
}

bool ExecutableFd(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

// Writes and stops before an exec that is expected to succeed; the destructor runs only when
// the exec returned (failed) and goes back to sampling. errno is kept for the caller.
class ExecPreparation {
 public:
  explicit ExecPreparation(bool will_succeed) {
    if (!will_succeed || !BeginExecWrite()) return;
    turn_ = true;
    auto restart = std::make_unique<Config>();
    try {
      if (RuntimeWriteForExec(restart.get(), &wrote_)) restart_ = std::move(restart);
    } catch (...) {
      // Nothing of ours may keep the program from its exec.
    }
    if (restart_ != nullptr && g_base_outputs == nullptr) {
      // A profile the program started itself (inprof_start): its own names are the base.
      g_base_outputs = new std::vector<std::string>(Absolute(restart_->outputs));
      g_base_pid = getpid();
    }
    signal_ = OwnedSignal();
    if (signal_ > 0) {
      // Sampling has stopped: SIG_IGN discards a signal of ours still pending (it would
      // reach the next image, where SIGPROF's default action kills it), then the program's
      // own action is what the next image inherits.
      struct sigaction ignore;
      std::memset(&ignore, 0, sizeof ignore);
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      if (RealSigaction(signal_, &ignore, &ours_) == 0) {
        const struct sigaction program = PreviousAction();
        RealSigaction(signal_, &program, nullptr);
      } else {
        signal_ = 0;
      }
    }
  }

  ExecPreparation(const ExecPreparation&) = delete;
  ExecPreparation& operator=(const ExecPreparation&) = delete;

  ~ExecPreparation() {
    if (!turn_) return;
    const int saved = errno;
    if (signal_ > 0) RealSigaction(signal_, &ours_, nullptr);
    if (restart_ != nullptr) {
      const int segment = g_segment.load(std::memory_order_acquire) + (wrote_ ? 1 : 0);
      g_segment.store(segment, std::memory_order_release);
      restart_->outputs = OutputsForSegment(segment);
      try {
        const Status started =
            CanStartLazily(*restart_)
                ? RuntimeStartDeferred(std::move(*restart_), TerminationWatcherRunsHere())
                : RuntimeStart(std::move(*restart_));
        if (!started.ok()) {
          std::fprintf(stderr, "inprof: after a failed exec: %s; no more profiling\n",
                       started.message().c_str());
        }
      } catch (...) {
        // The program goes on unprofiled.
      }
    }
    EndExecWrite();
    errno = saved;
  }

  // The environment for the next image: `envp` with INPROF_EXEC_SEGMENT naming the segment
  // it writes, when an image of this process wrote before.
  char* const* Environment(char* const* envp) {
    if (restart_ == nullptr) return envp;
    const int next = g_segment.load(std::memory_order_acquire) + (wrote_ ? 1 : 0);
    if (next == 0) return envp;
    segment_entry_ =
        std::string(kSegmentVariable) + "=" + std::to_string(getpid()) + ":" + std::to_string(next);
    const size_t name_len = sizeof kSegmentVariable - 1;
    for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, kSegmentVariable, name_len) == 0 && (*e)[name_len] == '=') continue;
      env_.push_back(*e);
    }
    env_.push_back(segment_entry_.data());
    env_.push_back(nullptr);
    return env_.data();
  }

 private:
  bool turn_ = false;
  bool wrote_ = false;
  int signal_ = 0;
  struct sigaction ours_ {};
  std::unique_ptr<Config> restart_;
  std::string segment_entry_;
  std::vector<char*> env_;
};

// Disarms our ITIMER_PROF around an exec, in any process (a vfork child too: ITIMER_PROF is
// per process, and this memory may be its parent's); the destructor runs only if the exec
// returned, i.e. failed. errno is kept for the caller.
class ItimerExecGuard {
 public:
  ItimerExecGuard() : period_ns_(ItimerArmedPeriodNs()) {
    if (period_ns_ != 0) {
      struct itimerval zero {};
      RealSetitimer(ITIMER_PROF, &zero, nullptr);
    }
  }
  ItimerExecGuard(const ItimerExecGuard&) = delete;
  ItimerExecGuard& operator=(const ItimerExecGuard&) = delete;
  ~ItimerExecGuard() {
    if (period_ns_ == 0) return;
    const int saved = errno;
    RearmItimerAfterFailedExec(period_ns_);
    errno = saved;
  }

 private:
  long period_ns_;
};

}  // namespace

int ExecSegmentFromEnvironment() {
  const char* value = secure_getenv(kSegmentVariable);
  if (value == nullptr) return 0;
  char* end = nullptr;
  const long pid = std::strtol(value, &end, 10);
  if (end == value || *end != ':' || pid != getpid()) return 0;  // another process's
  const char* number = end + 1;
  const long segment = std::strtol(number, &end, 10);
  if (end == number || *end != '\0' || segment < 0 || segment > 1000000) return 0;
  return static_cast<int>(segment);
}

void NoteExecOutputs(const std::vector<std::string>& outputs, int segment) {
  if (g_base_outputs == nullptr) g_base_outputs = new std::vector<std::string>();
  *g_base_outputs = Absolute(outputs);
  g_base_pid = getpid();
  g_segment.store(segment, std::memory_order_release);
}

}  // namespace inprof::internal

namespace {

using inprof::internal::ExecPreparation;
using inprof::internal::Executable;
using inprof::internal::ExecutableFd;
using inprof::internal::ExecutableOnPath;
using inprof::internal::ItimerExecGuard;

// The C library's functions, resolved when the library loads: resolving them on first use
// would take the loader's lock and a static-init guard inside a possibly vforked child.
using ExecveFn = int (*)(const char*, char* const*, char* const*);
using FexecveFn = int (*)(int, char* const*, char* const*);
using ExecveatFn = int (*)(int, const char*, char* const*, char* const*, int);
ExecveFn g_execve, g_execvpe;
FexecveFn g_fexecve;
ExecveatFn g_execveat;

// Priority 101: before autostart's constructor, which may start a session.
__attribute__((constructor(101))) void ResolveExecFunctions() {
  g_execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  g_execvpe = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execvpe"));
  g_fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
  g_execveat = reinterpret_cast<ExecveatFn>(dlsym(RTLD_NEXT, "execveat"));
}

// Arguments of execl-style calls gathered into an argv array on the stack (no malloc: this
// may run in a vfork child). `envp_out` is read after the terminating null only for execle,
// the one variant that passes it.
#define INPROF_COLLECT_ARGS(first, last_named, argv_name, envp_out)                   \
  size_t argc_ = 1;                                                                   \
  {                                                                                   \
    va_list count;                                                                    \
    va_start(count, last_named);                                                      \
    while (va_arg(count, const char*) != nullptr) ++argc_;                            \
    va_end(count);                                                                    \
  }                                                                                   \
  const char** argv_name =                                                            \
      static_cast<const char**>(__builtin_alloca((argc_ + 1) * sizeof(const char*))); \
  argv_name[0] = first;                                                               \
  {                                                                                   \
    va_list args;                                                                     \
    va_start(args, last_named);                                                       \
    for (size_t i = 1; i <= argc_; ++i) argv_name[i] = va_arg(args, const char*);     \
    if (envp_out != nullptr) *envp_out = va_arg(args, char* const*);                  \
    va_end(args);                                                                     \
  }

int ExecvpeHooked(const char* file, char* const argv[], char* const envp[]) {
  ExecPreparation prepared(ExecutableOnPath(file));
  ItimerExecGuard guard;
  return g_execvpe(file, argv, prepared.Environment(envp));
}

int ExecveHooked(const char* path, char* const argv[], char* const envp[]) {
  ExecPreparation prepared(Executable(path));
  ItimerExecGuard guard;
  return g_execve(path, argv, prepared.Environment(envp));
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[],
                                                  char* const envp[]) {
  return ExecveHooked(path, argv, envp);
}

// execv and execvp are execve and execvpe with the process's environment.
__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  return ExecveHooked(path, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  return ExecvpeHooked(file, argv, environ);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[],
                                                   char* const envp[]) {
  return ExecvpeHooked(file, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  ExecPreparation prepared(ExecutableFd(fd));
  ItimerExecGuard guard;
  return g_fexecve(fd, argv, prepared.Environment(envp));
}

__attribute__((visibility("default"))) int execveat(int dirfd, const char* path, char* const argv[],
                                                    char* const envp[], int flags) {
  if (g_execveat == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  struct stat st;
  const bool will_succeed =
      fstatat(dirfd, path, &st, flags & (AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) == 0 &&
      S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
  ExecPreparation prepared(will_succeed);
  ItimerExecGuard guard;
  return g_execveat(dirfd, path, argv, prepared.Environment(envp), flags);
}

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  char* const** no_envp = nullptr;
  INPROF_COLLECT_ARGS(arg, arg, argv, no_envp)
  return ExecveHooked(path, const_cast<char* const*>(argv), environ);
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  char* const** no_envp = nullptr;
  INPROF_COLLECT_ARGS(arg, arg, argv, no_envp)
  return ExecvpeHooked(file, const_cast<char* const*>(argv), environ);
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  char* const* envp = nullptr;
  char* const** envp_out = &envp;
  INPROF_COLLECT_ARGS(arg, arg, argv, envp_out)
  return ExecveHooked(path, const_cast<char* const*>(argv), envp);
}

}  // extern "C"
