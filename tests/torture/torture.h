// Shared pieces of the torture scenarios (see docs/reliability.md): CPU work with a known
// answer, and a failure report that names the check. Each scenario is a standalone program
// that exits 0 only when every result it computed is the one it computes without a profiler.
#ifndef INPROF_TESTS_TORTURE_TORTURE_H_
#define INPROF_TESTS_TORTURE_TORTURE_H_

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace torture {

// Prints "<program>: FAIL: <message>" on stderr and exits 1.
[[noreturn]] inline void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stderr, "%s: FAIL: ", program_invocation_short_name);  // <cerrno>, GNU
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(stderr);
  _exit(1);
}

#define TORTURE_CHECK(cond, ...)            \
  do {                                      \
    if (!(cond)) ::torture::Fail(__VA_ARGS__); \
  } while (0)

// A deterministic hash chain: the same `rounds` from the same `seed` give the same value with
// or without signals interrupting it. noinline so it is a frame of its own in samples.
__attribute__((noinline)) inline uint64_t Mix(uint64_t seed, uint64_t rounds) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < rounds; ++i) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x += i;
  }
  asm volatile("" : "+r"(x));
  return x;
}

inline double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

inline double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Burns about `seconds` of this thread's CPU in Mix chunks and returns a value that depends
// only on the number of chunks (`*chunks` receives it, for a re-computation check).
__attribute__((noinline)) inline uint64_t BurnCpu(double seconds, uint64_t* chunks) {
  const double end = ThreadCpuSeconds() + seconds;
  uint64_t acc = 0, n = 0;
  do {
    acc += Mix(n, 20000);
    ++n;
  } while (ThreadCpuSeconds() < end);
  *chunks = n;
  return acc;
}

// What BurnCpu returned for `chunks` chunks, without the clock.
inline uint64_t BurnExpected(uint64_t chunks) {
  uint64_t acc = 0;
  for (uint64_t n = 0; n < chunks; ++n) acc += Mix(n, 20000);
  return acc;
}

}  // namespace torture

#endif  // INPROF_TESTS_TORTURE_TORTURE_H_
