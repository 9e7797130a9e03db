// Forks from several threads of a busy multi-threaded process while it is sampled. Each child
// checks a small computation and ends one of three ways: _exit(10), exit(11), or an execv of
// a path that does not exist followed by _exit(127); the parent checks every child's status.
// "spawn" mode starts children with vfork + _exit(n) and posix_spawn of /bin/true and
// /bin/false instead. A hang anywhere (a child stuck on a lock its parent's threads held at
// fork time) ends in SIGALRM from the watchdog.
//   fork_storm fork|spawn [children]   (default 200)
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cstring>
#include <string>

#include "torture.h"

extern char** environ;

namespace {

constexpr int kBusyThreads = 16;
constexpr int kForkers = 4;
constexpr unsigned kWatchdogSeconds = 90;

std::string g_mode;
int g_per_forker = 50;
std::atomic<bool> g_stop{false};
std::atomic<int> g_busy_wrong{0};

void* Busy(void* arg) {
  const uint64_t seed = reinterpret_cast<uintptr_t>(arg);
  const uint64_t expect = torture::Mix(seed, 5000);
  while (!g_stop.load(std::memory_order_relaxed)) {
    if (torture::Mix(seed, 5000) != expect) g_busy_wrong.fetch_add(1);
  }
  return nullptr;
}

// The status a child reports for this way of ending.
int ForkChild(int way, uint64_t seed) {
  const pid_t pid = fork();
  if (pid < 0) torture::Fail("fork: %s", strerror(errno));
  if (pid == 0) {
    const bool right = torture::Mix(seed, 20000) == torture::Mix(seed, 20000);
    if (!right) _exit(3);
    if (way == 0) _exit(10);
    if (way == 1) exit(11);
    char* args[] = {const_cast<char*>("/nonexistent/inprof-torture"), nullptr};
    execv(args[0], args);
    _exit(127);
  }
  return pid;
}

// A vfork child that only calls _exit(status). Its own function: vfork returns twice, which
// would make the caller's loop variables "clobbered".
__attribute__((noinline)) pid_t VforkExit(int status) {
  const pid_t pid = vfork();
  if (pid == 0) _exit(status);
  TORTURE_CHECK(pid > 0, "vfork: %s", strerror(errno));
  return pid;
}

void* Forker(void* arg) {
  const int id = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  for (int i = 0; i < g_per_forker; ++i) {
    const int way = (i + id) % 3;
    int expected = 0;
    pid_t pid;
    if (g_mode == "fork") {
      pid = ForkChild(way, static_cast<uint64_t>(id * 1000 + i));
      expected = way == 0 ? 10 : way == 1 ? 11 : 127;
    } else if (way == 0) {
      expected = i % 100;
      pid = VforkExit(expected);
    } else {
      char* args[] = {const_cast<char*>(way == 1 ? "/bin/true" : "/bin/false"), nullptr};
      expected = way == 1 ? 0 : 1;
      const int rc = posix_spawn(&pid, args[0], nullptr, nullptr, args, environ);
      TORTURE_CHECK(rc == 0, "posix_spawn %s: %s", args[0], strerror(rc));
    }
    int status = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    TORTURE_CHECK(got == pid, "waitpid: %s", strerror(errno));
    if (WIFSIGNALED(status)) {
      torture::Fail("child %d (way %d) died of signal %d", i, way, WTERMSIG(status));
    }
    TORTURE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == expected,
                  "child %d (way %d) exited %d, expected %d", i, way, WEXITSTATUS(status), expected);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(g_mode == "fork" || g_mode == "spawn", "usage: fork_storm fork|spawn [children]");
  if (argc > 2) g_per_forker = std::max(1, std::atoi(argv[2]) / kForkers);
  alarm(kWatchdogSeconds);
  pthread_t busy[kBusyThreads], forkers[kForkers];
  for (int i = 0; i < kBusyThreads; ++i) {
    TORTURE_CHECK(pthread_create(&busy[i], nullptr, Busy, reinterpret_cast<void*>(intptr_t{i + 1})) == 0,
                  "pthread_create");
  }
  for (int i = 0; i < kForkers; ++i) {
    TORTURE_CHECK(pthread_create(&forkers[i], nullptr, Forker, reinterpret_cast<void*>(intptr_t{i})) == 0,
                  "pthread_create");
  }
  for (pthread_t t : forkers) pthread_join(t, nullptr);
  g_stop.store(true);
  for (pthread_t t : busy) pthread_join(t, nullptr);
  TORTURE_CHECK(g_busy_wrong.load() == 0, "busy threads computed %d wrong values", g_busy_wrong.load());
  std::printf("fork_storm %s: %d children checked\n", g_mode.c_str(), g_per_forker * kForkers);
  return 0;
}
