// process_start.sh: starts PROGRAM N times with posix_spawn (the environment is this one's) and
// waits for each; prints microseconds per process. Run with and without LD_PRELOAD/INPROF_*
// to see what the library costs a process that ends before its first sample.
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: inprof_spawn_cost N PROGRAM [ARGS...]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[2], nullptr, nullptr, argv + 2, environ) != 0) {
      std::perror(argv[2]);
      return 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) {
      std::fprintf(stderr, "%s did not exit normally (status %d)\n", argv[2], status);
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double us = (static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 +
                     static_cast<double>(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
  std::printf("%.1f\n", us);
  return 0;
}
