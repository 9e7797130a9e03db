// fork.sh: N forks whose children end at once with _exit(0) (before any sample), timed in the
// parent; prints microseconds per fork. With "threads", 8 busy threads run meanwhile, as in a
// server that forks workers; "threads=N", N of them.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  int threads = 0;
  if (argc > 2 && std::strcmp(argv[2], "threads") == 0) threads = 8;
  if (argc > 2 && std::strncmp(argv[2], "threads=", 8) == 0) threads = std::atoi(argv[2] + 8);
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  if (threads > 0) {
    for (int i = 0; i < threads; ++i) {
      busy.emplace_back([&stop] {
        volatile double x = 0;
        while (!stop.load(std::memory_order_relaxed)) x = x + 1;
      });
    }
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; ++i) {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    int status = 0;
    waitpid(child, &status, 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  stop = true;
  for (std::thread& t : busy) t.join();
  const double us = (static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 +
                     static_cast<double>(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
  std::printf("%.1f\n", us);
  return 0;
}
