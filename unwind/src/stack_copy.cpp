// Copies the interrupted registers and the top of the stack in the signal handler, for the
// collector to unwind later (dwarf_unwinder.cpp).
// Signal path: this file includes only signal-safe headers and calls nothing but the
// register snapshot of registers_<arch>.cpp.
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"
#include "registers.h"

namespace inprof {
namespace {

// Copies whole words with plain loads and stores rather than memcpy: the stack above sp
// holds other frames' slots, which AddressSanitizer keeps poisoned (red zones), and its
// memcpy interceptor would report them even though this function is not instrumented.
// The loop is unrolled by hand so it stays a loop (GCC would otherwise turn it back into a
// memcpy call) and still moves 64 bytes per iteration. Async-signal-safe.
__attribute__((no_sanitize("address"), optimize("no-tree-loop-distribute-patterns"))) void
CopyWords(uint64_t* __restrict dst, const uint64_t* __restrict src, size_t words) {
  size_t i = 0;
  for (; i + 8 <= words; i += 8) {
    uint64_t a = src[i], b = src[i + 1], c = src[i + 2], d = src[i + 3];
    uint64_t e = src[i + 4], f = src[i + 5], g = src[i + 6], h = src[i + 7];
    dst[i] = a, dst[i + 1] = b, dst[i + 2] = c, dst[i + 3] = d;
    dst[i + 4] = e, dst[i + 5] = f, dst[i + 6] = g, dst[i + 7] = h;
  }
  for (; i < words; ++i) dst[i] = src[i];
}

}  // namespace

uint32_t CopyStack(const ucontext_t* context, StackBounds bounds, uint8_t* buffer, size_t capacity,
                   StackCopy* out) {
  internal::SnapshotRegisters(context, &out->regs);
  const uintptr_t sp = static_cast<uintptr_t>(out->regs.sp);
  out->sp_base = sp;
  out->stack_hi = bounds.hi;
  out->bytes = 0;
  out->window_full = false;
  out->sp_outside_bounds = false;
  if (bounds.hi == 0 || sp < bounds.lo || sp >= bounds.hi || (sp & 7) != 0) {
    out->sp_outside_bounds = true;
    return 0;
  }
  size_t want = bounds.hi - sp;
  if (capacity > UINT32_MAX) capacity = UINT32_MAX;
  capacity &= ~size_t{7};
  if (want > capacity) {
    want = capacity;
    out->window_full = true;
  }
  CopyWords(reinterpret_cast<uint64_t*>(buffer), reinterpret_cast<const uint64_t*>(sp), want / 8);
  out->bytes = static_cast<uint32_t>(want);
  return out->bytes;
}

}  // namespace inprof
