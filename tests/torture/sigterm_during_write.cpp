// Builds a large profile (several threads walking thousands of distinct call paths), then
// announces "exiting" on stdout and returns from main; the runner sends SIGTERM or SIGINT at
// staggered delays after the announcement, so the signals land before, during and after the
// exit-time write. The runner checks that the process died of the signal (or exited 0 if the
// signal came after it had ended), that every output is complete, and that no temporary file
// is left in the output directory.
//   sigterm_during_write [seconds]   (default 1)
#include <pthread.h>

#include <cstring>

#include "torture.h"

namespace {

constexpr int kThreads = 4;
constexpr int kDepth = 7;
double g_seconds = 1.0;

using Step = uint64_t (*)(int, uint64_t, uint64_t);
extern Step g_steps[8];

// Eight distinct functions; the path through them follows the bits of `path`, so a run of
// paths gives 8^kDepth distinct stacks.
template <int N>
__attribute__((noinline)) uint64_t Level(int depth, uint64_t path, uint64_t x) {
  if (depth == 0) return torture::Mix(x + N, 3000);
  const uint64_t r = g_steps[path & 7](depth - 1, path >> 3, x * 3 + N);
  asm volatile("" ::: "memory");
  return r + N;
}

Step g_steps[8] = {Level<0>, Level<1>, Level<2>, Level<3>, Level<4>, Level<5>, Level<6>, Level<7>};

void* Walker(void* arg) {
  uint64_t path = reinterpret_cast<uintptr_t>(arg) * 0x9e3779b97f4a7c15ULL;
  const double end = torture::ThreadCpuSeconds() + g_seconds;
  uint64_t acc = 0;
  while (torture::ThreadCpuSeconds() < end) {
    acc += g_steps[path & 7](kDepth, path >> 3, acc);
    path = path * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(acc));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_seconds = std::atof(argv[1]);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    TORTURE_CHECK(pthread_create(&threads[i], nullptr, Walker, reinterpret_cast<void*>(intptr_t{i + 1})) == 0,
                  "pthread_create");
  }
  for (pthread_t t : threads) pthread_join(t, nullptr);
  std::printf("exiting\n");
  std::fflush(stdout);
  return 0;
}
