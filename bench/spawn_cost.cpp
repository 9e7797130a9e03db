// process_start.sh: starts PROGRAM N times with posix_spawn, with this environment plus the
// VAR=VALUE arguments (so that the spawner itself is not profiled), and waits for each; prints
// microseconds per process.
//   inprof_spawn_cost N [VAR=VALUE...] PROGRAM [ARGS...]
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: inprof_spawn_cost N [VAR=VALUE...] PROGRAM [ARGS...]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  int first = 2;
  std::vector<char*> env;
  for (; first < argc && std::strchr(argv[first], '=') != nullptr; ++first) env.push_back(argv[first]);
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(nullptr);
  if (first >= argc) {
    std::fprintf(stderr, "usage: inprof_spawn_cost N [VAR=VALUE...] PROGRAM [ARGS...]\n");
    return 2;
  }
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[first], nullptr, nullptr, argv + first, env.data()) != 0) {
      std::perror(argv[first]);
      return 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) {
      std::fprintf(stderr, "%s did not exit normally (status %d)\n", argv[first], status);
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double us = (static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 +
                     static_cast<double>(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
  std::printf("%.1f\n", us);
  return 0;
}
