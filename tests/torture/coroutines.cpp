// makecontext/swapcontext coroutines on small heap stacks, switching thousands of times a
// second while sampled. A sample taken on a coroutine stack sees a stack pointer outside the
// thread's stack: a frame-pointer walk must stop at the coroutine stack's end, and a stack
// copy for DWARF unwinding must not read past it. Each stack has an inaccessible page on both
// sides, so reading beyond either end faults. Every coroutine's result is checked.
//   coroutines [stack_kib]   (default: alternate 16 and 64 KiB stacks)
#include <sys/mman.h>
#include <ucontext.h>

#include <cstring>
#include <vector>

#include "torture.h"

namespace {

constexpr int kCoroutines = 8;
constexpr int kSteps = 4000;

ucontext_t g_main;
struct Coroutine {
  ucontext_t context;
  uint64_t result = 0;
  bool done = false;
  int index = 0;
};
Coroutine g_co[kCoroutines];

// Recursion on the coroutine's stack, switching out at the bottom: samples see several frames
// above the coroutine's entry.
__attribute__((noinline)) uint64_t Descend(Coroutine* co, int depth, uint64_t x) {
  if (depth == 0) {
    x = torture::Mix(x, 2000);
    swapcontext(&co->context, &g_main);
    return x;
  }
  volatile char pad[64];
  pad[0] = static_cast<char>(depth);
  uint64_t r = Descend(co, depth - 1, x + static_cast<uint64_t>(pad[0]));
  asm volatile("" ::: "memory");
  return r ^ static_cast<uint64_t>(depth);
}

uint64_t Expected(int index) {
  uint64_t x = static_cast<uint64_t>(index) * 1000003;
  for (int step = 0; step < kSteps; ++step) {
    const int depth = 1 + (step + index) % 6;
    uint64_t y = torture::Mix(x + [&] {
      uint64_t s = 0;
      for (int d = depth; d > 0; --d) s += static_cast<uint64_t>(static_cast<char>(d));
      return s;
    }(), 2000);
    for (int d = 1; d <= depth; ++d) y ^= static_cast<uint64_t>(d);
    x = y;
  }
  return x;
}

void Entry(int index) {
  Coroutine* co = &g_co[index];
  uint64_t x = static_cast<uint64_t>(index) * 1000003;
  for (int step = 0; step < kSteps; ++step) x = Descend(co, 1 + (step + index) % 6, x);
  co->result = x;
  co->done = true;
  // Returning resumes uc_link (the main context).
}

char* MapStack(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* map = static_cast<char*>(mmap(nullptr, size + 2 * page, PROT_NONE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  TORTURE_CHECK(map != MAP_FAILED, "mmap");
  TORTURE_CHECK(mprotect(map + page, size, PROT_READ | PROT_WRITE) == 0, "mprotect");
  return map + page;
}

// Separate from main's loop: getcontext returns twice, which would make the loop's
// variables "clobbered" there.
__attribute__((noinline)) void Prepare(int i, size_t size) {
  Coroutine* co = &g_co[i];
  co->index = i;
  TORTURE_CHECK(getcontext(&co->context) == 0, "getcontext");
  co->context.uc_stack.ss_sp = MapStack(size);
  co->context.uc_stack.ss_size = size;
  co->context.uc_link = &g_main;
  makecontext(&co->context, reinterpret_cast<void (*)()>(Entry), 1, i);
}

}  // namespace

int main(int argc, char** argv) {
  const long fixed_kib = argc > 1 ? std::atol(argv[1]) : 0;
  for (int i = 0; i < kCoroutines; ++i) {
    Prepare(i, static_cast<size_t>(fixed_kib > 0 ? fixed_kib : (i % 2 ? 64 : 16)) * 1024);
  }
  // Round robin until every coroutine has finished.
  long switches = 0;
  for (bool any = true; any;) {
    any = false;
    for (Coroutine& co : g_co) {
      if (co.done) continue;
      any = true;
      TORTURE_CHECK(swapcontext(&g_main, &co.context) == 0, "swapcontext");
      ++switches;
    }
  }
  for (int i = 0; i < kCoroutines; ++i) {
    TORTURE_CHECK(g_co[i].result == Expected(i), "coroutine %d computed a wrong value", i);
  }
  std::printf("coroutines: %d coroutines, %ld switches\n", kCoroutines, switches);
  return 0;
}
