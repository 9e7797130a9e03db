// Recursion to a few KiB above the guard page of a thread with a small stack, repeatedly, while
// sampled at a high rate: the signal frame and the profiler's handler must fit in what the
// program leaves (it leaves `margin` bytes, argument, default 12 KiB: more than the kernel's
// largest signal frame plus a small handler), and an unwinder must survive thousands of frames
// (truncating, not overflowing). The recursion computes a checked value.
//   deep_recursion [margin_bytes]
#include <pthread.h>

#include <cstddef>
#include <cstring>

#include "torture.h"

namespace {

constexpr size_t kStackSize = 256 * 1024;
char* g_stack_lo = nullptr;  // lowest usable address of the thread's stack
size_t g_margin = 12 * 1024;

__attribute__((noinline)) uint64_t Recurse(uint64_t depth, uint64_t x) {
  volatile char frame[48];
  frame[0] = static_cast<char>(x);
  char* sp = const_cast<char*>(&frame[0]);
  if (sp - g_stack_lo <= static_cast<ptrdiff_t>(g_margin + 256)) {
    // Deepest point: work here, where samples see the whole chain.
    return torture::Mix(x, 200000) + depth;
  }
  uint64_t r = Recurse(depth + 1, x * 31 + static_cast<uint64_t>(static_cast<unsigned char>(frame[0])));
  asm volatile("" ::: "memory");
  return r + 1;
}

void* Thread(void* arg) {
  pthread_attr_t attr;
  TORTURE_CHECK(pthread_getattr_np(pthread_self(), &attr) == 0, "pthread_getattr_np");
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  g_stack_lo = static_cast<char*>(addr);
  uint64_t* results = static_cast<uint64_t*>(arg);
  const double end = torture::ThreadCpuSeconds() + 1.0;
  int i = 0;
  while (torture::ThreadCpuSeconds() < end && i < 1000) results[i++] = Recurse(0, 7);
  results[i] = 0;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_margin = static_cast<size_t>(std::atol(argv[1]));
  static uint64_t results[1001];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  TORTURE_CHECK(pthread_attr_setstacksize(&attr, kStackSize) == 0, "setstacksize");
  pthread_t thread;
  TORTURE_CHECK(pthread_create(&thread, &attr, Thread, results) == 0, "pthread_create");
  pthread_join(thread, nullptr);
  TORTURE_CHECK(results[0] != 0, "no recursion finished");
  int n = 0;
  for (; results[n] != 0; ++n) {
    TORTURE_CHECK(results[n] == results[0], "recursion %d returned %llx, the first %llx", n,
                  static_cast<unsigned long long>(results[n]),
                  static_cast<unsigned long long>(results[0]));
  }
  std::printf("deep_recursion: %d recursions, margin %zu bytes\n", n, g_margin);
  return 0;
}
