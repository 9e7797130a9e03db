// Workloads whose true profile is known by construction, for bench/alias.py (does sampling
// alias with a loop, or miss short threads?). Every amount of work is measured on the thread's
// own CPU clock, so the truth does not depend on the machine's speed or load:
//   loop ROUND_US SECONDS   rounds of ROUND_US us of CPU time: the first half in work_alpha,
//                           the next 30 % in work_beta, the last 20 % in work_gamma (5:3:2)
//   threads N MS [PAR]      N threads, each spending MS ms of CPU in work_alpha, at most PAR
//                           (default 2) at a time; prints the CPU seconds spent there and the
//                           threads' whole CPU seconds
//   blocking SECONDS        rounds of 1 ms of CPU in work_alpha, then a 1 ms nanosleep(2)
//                           (not restarted after a signal); prints the calls and how many
//                           returned EINTR
//   syscalls SECONDS        rounds of 2 ms: 1 ms of user-space work in work_user, 1 ms of
//                           read(2) from /dev/zero (time inside the kernel) in work_kernel
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

volatile double g_sink;

long long CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Spins until the thread's CPU clock reaches `until_ns`, checking it every few microseconds.
__attribute__((always_inline)) inline void SpinUntil(long long until_ns) {
  double x = g_sink;
  while (CpuNs() < until_ns) {
    for (int i = 0; i < 20000; ++i) x = x * 0.999999 + 1.0;
  }
  g_sink = x;
}

}  // namespace

extern "C" {
__attribute__((noinline)) void work_alpha(long long until_ns) { SpinUntil(until_ns); }
__attribute__((noinline)) void work_beta(long long until_ns) { SpinUntil(until_ns); }
__attribute__((noinline)) void work_gamma(long long until_ns) { SpinUntil(until_ns); }

__attribute__((noinline)) void work_user(long long until_ns) { SpinUntil(until_ns); }

__attribute__((noinline)) void work_kernel(long long until_ns, int fd, char* buffer) {
  while (CpuNs() < until_ns) {
    if (read(fd, buffer, 256 * 1024) < 0) std::abort();
  }
}
}

namespace {

// Targets accumulate from the start, so no round is longer than ROUND_US on average: the
// loop's period stays exact whatever a sample costs.
void Loop(long long round_ns, double seconds) {
  const long long start = CpuNs();
  const long long rounds = static_cast<long long>(seconds * 1e9 / static_cast<double>(round_ns));
  for (long long r = 0; r < rounds; ++r) {
    const long long base = start + r * round_ns;
    work_alpha(base + round_ns * 5 / 10);
    work_beta(base + round_ns * 8 / 10);
    work_gamma(base + round_ns);
  }
}

void Threads(int count, double ms, int parallel) {
  std::atomic<int> next{0};
  std::atomic<long long> total{0}, work{0};
  auto worker = [&] {
    const long long start = CpuNs();
    work_alpha(start + static_cast<long long>(ms * 1e6));
    const long long end = CpuNs();
    total.fetch_add(end, std::memory_order_relaxed);
    work.fetch_add(end - start, std::memory_order_relaxed);
  };
  // `parallel` launchers, each starting one short thread after another.
  std::vector<std::thread> launchers;
  for (int p = 0; p < parallel; ++p) {
    launchers.emplace_back([&] {
      while (next.fetch_add(1) < count) std::thread(worker).join();
    });
  }
  for (std::thread& t : launchers) t.join();
  // The time in work_alpha, and the threads' whole CPU time (their creation and set-up too).
  std::printf("work_cpu_s %.6f threads_cpu_s %.6f\n", static_cast<double>(work.load()) / 1e9,
              static_cast<double>(total.load()) / 1e9);
}

void Syscalls(double seconds) {
  const int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) std::abort();
  std::vector<char> buffer(256 * 1024);
  const long long start = CpuNs();
  const long long round_ns = 2000000;
  const long long rounds = static_cast<long long>(seconds * 1e9 / round_ns);
  for (long long r = 0; r < rounds; ++r) {
    const long long base = start + r * round_ns;
    work_user(base + round_ns / 2);
    work_kernel(base + round_ns, fd, buffer.data());
  }
  close(fd);
}

void Blocking(double seconds) {
  long calls = 0, interrupted = 0;
  const long long start = CpuNs();
  const long long rounds = static_cast<long long>(seconds * 1e3);
  for (long long r = 0; r < rounds; ++r) {
    work_alpha(start + (r + 1) * 1000000LL);
    const timespec pause = {0, 1000000};
    ++calls;
    if (nanosleep(&pause, nullptr) != 0 && errno == EINTR) ++interrupted;
  }
  std::printf("sleeps %ld eintr %ld\n", calls, interrupted);
}

int Usage() {
  std::fprintf(stderr,
               "usage: alias_loop loop ROUND_US SECONDS | threads N MS [PAR] | blocking SECONDS | "
               "syscalls SECONDS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const char* mode = argv[1];
  if (std::strcmp(mode, "loop") == 0 && argc == 4) {
    const double round_us = std::atof(argv[2]);
    const double seconds = std::atof(argv[3]);
    if (round_us < 10 || seconds <= 0) return Usage();
    Loop(static_cast<long long>(round_us * 1000), seconds);
  } else if (std::strcmp(mode, "threads") == 0 && (argc == 4 || argc == 5)) {
    const int count = std::atoi(argv[2]);
    const double ms = std::atof(argv[3]);
    const int parallel = argc == 5 ? std::atoi(argv[4]) : 2;
    if (count < 1 || ms <= 0 || parallel < 1) return Usage();
    Threads(count, ms, parallel);
  } else if (std::strcmp(mode, "blocking") == 0 && argc == 3) {
    const double seconds = std::atof(argv[2]);
    if (seconds <= 0) return Usage();
    Blocking(seconds);
  } else if (std::strcmp(mode, "syscalls") == 0 && argc == 3) {
    const double seconds = std::atof(argv[2]);
    if (seconds <= 0) return Usage();
    Syscalls(seconds);
  } else {
    return Usage();
  }
  return 0;
}
