// Stacks for unwind_bench.cpp, built like Debian's libraries (-O2 -fomit-frame-pointer):
// a recursion through five distinct functions, so deep stacks hold different unwind rows.
#include <ucontext.h>

#include "unwind_frames.h"

#define UF_NOINLINE __attribute__((noinline))
#define UF_NO_TAIL_CALL() asm volatile("" ::: "memory")

namespace inprof::bench {
namespace {

UF_NOINLINE void Frame0(int depth, const FrameCallback& at_bottom);
UF_NOINLINE void Frame1(int depth, const FrameCallback& at_bottom);
UF_NOINLINE void Frame2(int depth, const FrameCallback& at_bottom);
UF_NOINLINE void Frame3(int depth, const FrameCallback& at_bottom);
UF_NOINLINE void Frame4(int depth, const FrameCallback& at_bottom);

UF_NOINLINE void Next(int depth, const FrameCallback& at_bottom) {
  if (depth <= 1) {
    at_bottom();
    UF_NO_TAIL_CALL();
    return;
  }
  switch (depth % 5) {
    case 0:
      Frame0(depth - 1, at_bottom);
      break;
    case 1:
      Frame1(depth - 1, at_bottom);
      break;
    case 2:
      Frame2(depth - 1, at_bottom);
      break;
    case 3:
      Frame3(depth - 1, at_bottom);
      break;
    default:
      Frame4(depth - 1, at_bottom);
      break;
  }
  UF_NO_TAIL_CALL();
}

// Different frame sizes, so each function has its own CFA rule.
#define UF_FRAME(n)                                              \
  UF_NOINLINE void Frame##n(int depth, const FrameCallback& f) { \
    volatile char pad[16 * (n + 1)];                             \
    pad[0] = 0;                                                  \
    (void)pad[0];                                                \
    Next(depth, f);                                              \
    UF_NO_TAIL_CALL();                                           \
  }
UF_FRAME(0)
UF_FRAME(1)
UF_FRAME(2)
UF_FRAME(3)
UF_FRAME(4)

}  // namespace

void RunAtDepth(int depth, const FrameCallback& at_bottom) {
  // Each level is two frames (FrameN + Next).
  Next(depth / 2, at_bottom);
  UF_NO_TAIL_CALL();
}

}  // namespace inprof::bench
