// The program owns its signal dispositions (docs/signals.md, "What the program sees"): with
// the profiler preloaded it reads SIG_DFL where the runtime's exit handler is, its own
// handlers run as they would without us, an inherited SIG_IGN stays, and the profile is
// still written by whatever exit path the program takes. Real programs: the distribution's
// python3, and a small C program (fixtures/guest_signal.c).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace inprof::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// Works, catches KeyboardInterrupt, and leaves with status 3 from `finally`, as scripts that
// clean up on Ctrl-C do. It says when it is ready for the signal (after some CPU time, so a
// profile has samples) and its pid (under `inprof record` the signal goes to it).
constexpr const char* kPythonScript = R"(import os, sys, time
def work(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        for i in range(10000):
            n += i
    return n
try:
    print("pid=%d" % os.getpid(), flush=True)
    work(0.3)
    print("ready", flush=True)
    work(20)
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("caught KeyboardInterrupt", flush=True)
finally:
    print("finally ran", flush=True)
    sys.exit(3)
)";

struct SignalRun {
  ProcessResult process;
  bool ready = false;
};

// Runs argv with SIGINT and SIGTERM at SIG_DFL in the child (or SIGINT ignored, as nohup and
// a non-interactive shell's background jobs start it), waits for a "ready" line on its
// stdout, then sends `signal` to the pid the program printed as "pid=N" (or to the child
// itself when it printed none). A shell would not do: its background jobs start with SIGINT
// ignored, which is one of the cases under test.
SignalRun RunAndSignal(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env, int signal,
                       bool sigint_ignored = false) {
  SignalRun run;
  ChildCommand command = MakeChildCommand(argv, env);
  std::vector<char*> args = Pointers(command.argv), envp = Pointers(command.env);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return run;
  const pid_t child = fork();
  if (child == 0) {
    // Async-signal-safe calls only until execve.
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &action, nullptr);
    action.sa_handler = sigint_ignored ? SIG_IGN : SIG_DFL;
    sigaction(SIGINT, &action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (child < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return run;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  bool signalled = false;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (open_fds > 0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    // A program that never gets ready is ended, so the test fails instead of hanging.
    if (!signalled && now.tv_sec - start.tv_sec > 60) {
      kill(child, SIGKILL);
      signalled = true;
    }
    if (poll(fds, 2, 1000) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? run.process.out : run.process.err).append(buf, static_cast<size_t>(n));
    }
    if (!signalled && run.process.out.find("ready\n") != std::string::npos) {
      pid_t target = child;
      if (const size_t at = run.process.out.find("pid="); at != std::string::npos) {
        target = static_cast<pid_t>(std::stol(run.process.out.substr(at + 4)));
      }
      run.ready = true;
      kill(target, signal);
      signalled = true;
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status)) run.process.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.process.term_signal = WTERMSIG(status);
  return run;
}

std::map<std::string, std::string> PreloadEnv(const std::string& output) {
  return {{"LD_PRELOAD", PreloadValue()}, {"INPROF_OUTPUT", output}};
}

// What `inprof record` is run with: in sanitizer builds libinprof.so needs the sanitizer
// runtime preloaded before it in the programs record runs (record keeps what LD_PRELOAD holds
// in front), and their leaks are not ours.
std::map<std::string, std::string> RecordEnv() {
  std::map<std::string, std::string> env;
  const std::string prefix = INPROF_RECORD_PRELOAD_PREFIX;
  if (!prefix.empty()) {
    env["LD_PRELOAD"] = prefix;
    env["ASAN_OPTIONS"] = "detect_leaks=0";
  }
  return env;
}

std::string Describe(const ProcessResult& p) {
  return "exit " + std::to_string(p.exit_code) + ", signal " + std::to_string(p.term_signal) +
         "\nstdout:\n" + p.out + "stderr:\n" + p.err;
}

int64_t TotalSamples(const std::string& folded) {
  int64_t total = 0;
  for (const FoldedStack& s : ReadFolded(folded)) total += s.count;
  return total;
}

std::string WritePythonScript(const std::string& dir) {
  const std::string path = dir + "/interrupted.py";
  FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  if (f != nullptr) {
    std::fputs(kPythonScript, f);
    std::fclose(f);
  }
  return path;
}

#define SKIP_WITHOUT_PYTHON()                                           \
  if (access(kPython, X_OK) != 0) {                                     \
    GTEST_SKIP() << kPython                                             \
                 << " is not installed (scripts/install-deps installs " \
                    "python3)";                                         \
  }

// CPython installs its SIGINT handler only when it finds SIG_DFL at start-up: it must, and
// Ctrl-C must then raise KeyboardInterrupt, run `finally`, and still leave a profile.
TEST(GuestSignal, PythonKeyboardInterruptRunsFinallyUnderPreload) {
  SKIP_WITHOUT_PYTHON();
  SKIP_UNDER_EMULATOR("runs the host's python3");
  const std::string dir = MakeTempDir();
  const std::string script = WritePythonScript(dir);
  const SignalRun run = RunAndSignal({kPython, script}, PreloadEnv(dir + "/out.folded"), SIGINT);
  ASSERT_TRUE(run.ready) << Describe(run.process);
  EXPECT_EQ(run.process.exit_code, 3) << Describe(run.process);
  EXPECT_NE(run.process.out.find("caught KeyboardInterrupt"), std::string::npos)
      << Describe(run.process);
  EXPECT_NE(run.process.out.find("finally ran"), std::string::npos) << Describe(run.process);
  ASSERT_TRUE(FileExists(dir + "/out.folded")) << Describe(run.process);
  EXPECT_GT(TotalSamples(dir + "/out.folded"), 0);
}

TEST(GuestSignal, PythonKeyboardInterruptRunsFinallyUnderRecord) {
  SKIP_WITHOUT_PYTHON();
  SKIP_UNDER_EMULATOR("runs the host's python3");
  const std::string dir = MakeTempDir();
  const std::string script = WritePythonScript(dir);
  const std::string out = dir + "/rec";
  const SignalRun run = RunAndSignal(
      {INPROF_VIEWER, "record", "-q", "-o", out, "--", kPython, script}, RecordEnv(), SIGINT);
  ASSERT_TRUE(run.ready) << Describe(run.process);
  EXPECT_EQ(run.process.exit_code, 3) << Describe(run.process);
  EXPECT_NE(run.process.out.find("caught KeyboardInterrupt"), std::string::npos)
      << Describe(run.process);
  EXPECT_NE(run.process.out.find("finally ran"), std::string::npos) << Describe(run.process);
  ASSERT_TRUE(FileExists(out + "/profile.folded")) << Describe(run.process);
  bool python_root = false;
  for (const FoldedStack& s : ReadFolded(out + "/profile.folded")) {
    if (!s.frames.empty() && s.frames.front().rfind("python3", 0) == 0) python_root = true;
  }
  EXPECT_TRUE(python_root) << ReadFile(out + "/profile.folded");
  EXPECT_EQ(run.process.err.find("ended before writing"), std::string::npos)
      << Describe(run.process);
}

// What a program reads of SIGINT/SIGTERM, what each of the C library's entry points returns,
// the sampling signal's action (which never reaches the kernel while the runtime's handler is
// there), and the mask of an SA_ONSTACK handler (to which the runtime adds the sampling signal) are
// what they are without the profiler.
TEST(GuestSignal, DispositionsReadAsWithoutProfiler) {
  for (const char* mode : {"read", "entry-points", "sigprof", "onstack"}) {
    SCOPED_TRACE(mode);
    const std::string dir = MakeTempDir();
    const ProcessResult bare = RunProcess({INPROF_GUEST_SIGNAL, mode}, {});
    const ProcessResult profiled =
        RunProcess({INPROF_GUEST_SIGNAL, mode}, PreloadEnv(dir + "/out.folded"));
    ASSERT_EQ(bare.exit_code, 0) << Describe(bare);
    EXPECT_EQ(profiled.exit_code, 0) << Describe(profiled);
    EXPECT_EQ(profiled.out, bare.out);
    if (std::string(mode) == "read") {
      EXPECT_NE(profiled.out.find("SIGINT: SIG_DFL"), std::string::npos) << profiled.out;
      EXPECT_NE(profiled.out.find("SIGTERM: SIG_DFL"), std::string::npos) << profiled.out;
    }
  }
}

// nohup and background jobs start the program with SIGINT ignored: it stays ignored, reads
// SIG_IGN, and the program ends normally with its profile.
TEST(GuestSignal, InheritedIgnoreStays) {
  const std::string dir = MakeTempDir();
  const SignalRun run =
      RunAndSignal({INPROF_GUEST_SIGNAL, "ignored"}, PreloadEnv(dir + "/out.folded"), SIGINT, true);
  ASSERT_TRUE(run.ready) << Describe(run.process);
  EXPECT_EQ(run.process.exit_code, 0) << Describe(run.process);
  EXPECT_NE(run.process.out.find("SIGINT: SIG_IGN"), std::string::npos) << run.process.out;
  EXPECT_NE(run.process.out.find("survived"), std::string::npos) << run.process.out;
  EXPECT_TRUE(FileExists(dir + "/out.folded")) << Describe(run.process);
}

// The program's SIGTERM handler is installed as given (flags, mask), runs, and the program
// leaves through exit(), which writes the profile.
TEST(GuestSignal, ProgramTermHandlerRuns) {
  const std::string dir = MakeTempDir();
  const SignalRun run =
      RunAndSignal({INPROF_GUEST_SIGNAL, "term-handler"}, PreloadEnv(dir + "/out.folded"), SIGTERM);
  ASSERT_TRUE(run.ready) << Describe(run.process);
  EXPECT_EQ(run.process.exit_code, 4) << Describe(run.process);
  EXPECT_NE(run.process.out.find("before: SIG_DFL"), std::string::npos) << run.process.out;
  EXPECT_NE(run.process.out.find("back: program-handler flags=same mask=same"), std::string::npos)
      << run.process.out;
  EXPECT_NE(run.process.out.find("handler ran"), std::string::npos) << run.process.out;
  ASSERT_TRUE(FileExists(dir + "/out.folded")) << Describe(run.process);
  EXPECT_GT(TotalSamples(dir + "/out.folded"), 0);
}

// A program that sets SIG_DFL again gets the default back, and with it the profiler's exit
// handler: SIGINT still ends it, and the profile is written first.
TEST(GuestSignal, RestoredDefaultStillWritesProfile) {
  const std::string dir = MakeTempDir();
  const SignalRun run =
      RunAndSignal({INPROF_GUEST_SIGNAL, "restore"}, PreloadEnv(dir + "/out.folded"), SIGINT);
  ASSERT_TRUE(run.ready) << Describe(run.process);
  EXPECT_EQ(run.process.term_signal, SIGINT) << Describe(run.process);
  EXPECT_NE(run.process.out.find("first: SIG_DFL"), std::string::npos) << run.process.out;
  EXPECT_NE(run.process.out.find("second: program-handler"), std::string::npos) << run.process.out;
  EXPECT_NE(run.process.out.find("SIGINT: SIG_DFL"), std::string::npos) << run.process.out;
  ASSERT_TRUE(FileExists(dir + "/out.folded")) << Describe(run.process);
  EXPECT_GT(TotalSamples(dir + "/out.folded"), 0);
}

// A program's signal handler that sets the sampling signal's action while it interrupted the
// same call on its own thread: no lock of ours may be held there (a mutex deadlocked).
TEST(GuestSignal, SigactionFromAHandlerThatInterruptedSigaction) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      RunProcess({INPROF_GUEST_SIGNAL, "reentrant"}, PreloadEnv(dir + "/out.folded"));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("done"), std::string::npos) << Describe(r);
}

}  // namespace
}  // namespace inprof::test
