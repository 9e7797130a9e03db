// Frame-pointer walk for x86-64 (System V): every frame starts with
//   [rbp]     saved rbp of the caller
//   [rbp + 8] return address into the caller
// The walk itself is shared (fp_walk_loop.h); this file supplies the CPU details:
// the registers, and how a frameless leaf's caller is recovered from the word at sp.
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"
#include "fp_walk_loop.h"

namespace inprof {
namespace {

constexpr uintptr_t kWord = internal::kFpWord;

// The bytes before a return address that show it follows `call rel32` (E8 xx xx xx xx),
// and the call's target. Async-signal-safe.
bool DirectCallTarget(uintptr_t return_address, const CodeRanges& code, uintptr_t* target) {
  const uintptr_t call = return_address - 5;
  if (return_address < 5 || !code.Contains(call) || !code.Contains(return_address - 1)) {
    return false;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(call);
  if (bytes[0] != 0xE8) return false;
  int32_t rel = static_cast<int32_t>(
      static_cast<uint32_t>(bytes[1]) | static_cast<uint32_t>(bytes[2]) << 8 |
      static_cast<uint32_t>(bytes[3]) << 16 | static_cast<uint32_t>(bytes[4]) << 24);
  *target = return_address + static_cast<intptr_t>(rel);
  return true;
}

// A call through the PLT lands on `jmp *GOT(%rip)` (FF 25 rel32): the function is the
// address in that GOT slot (once the loader has bound it). Returns `target` unchanged when
// it is not such a stub. The slot's address is computed from code bytes, which only look
// like a stub: it is read only when it lies inside a readable segment of a module the table
// lists (`code.readable`), which the same rule as the code ranges keeps mapped
// (docs/signals.md "The code-range invariant"). Async-signal-safe.
uintptr_t ThroughPlt(uintptr_t target, const CodeRanges& code) {
  if (!code.Contains(target) || !code.Contains(target + 5)) return target;
  const auto* bytes = reinterpret_cast<const uint8_t*>(target);
  if (bytes[0] != 0xFF || bytes[1] != 0x25) return target;
  const int32_t rel = static_cast<int32_t>(static_cast<uint32_t>(bytes[2]) |
                                           static_cast<uint32_t>(bytes[3]) << 8 |
                                           static_cast<uint32_t>(bytes[4]) << 16 |
                                           static_cast<uint32_t>(bytes[5]) << 24);
  const uintptr_t slot = target + 6 + static_cast<intptr_t>(rel);
  if ((slot & (kWord - 1)) != 0 || !code.ContainsReadable(slot, kWord)) return target;
  const uintptr_t resolved = *reinterpret_cast<const uintptr_t*>(slot);
  return code.Contains(resolved) ? resolved : target;
}

// The CPU details of the shared walk (fp_walk_loop.h). Async-signal-safe.
struct X86_64 {
  static uintptr_t ReturnAddress(uintptr_t saved) { return saved; }

  // Frameless leaf: rbp still holds the caller's frame, so the first return address read
  // from it belongs to the caller's caller and the caller itself would vanish. If the word
  // at sp is a return address right after a direct call (or a call through the PLT) to a
  // function that starts shortly before pc, it is the leaf's own return address. This is
  // the common case of a call into a library built without frame pointers (Debian's libc).
  // Returns 0 when the word at sp is not trusted.
  __attribute__((no_sanitize("address"))) static uintptr_t LeafCaller(const ucontext_t& regs,
                                                                      StackBounds bounds,
                                                                      const CodeRanges& code) {
    const uintptr_t pc = ContextPc(&regs);
    const uintptr_t sp = ContextSp(&regs);
    const uintptr_t fp = ContextFp(&regs);
    if ((sp & (kWord - 1)) != 0 || sp + kWord > bounds.hi) return 0;
    const uintptr_t candidate = *reinterpret_cast<const uintptr_t*>(sp);
    constexpr uintptr_t kMaxLeafSize = 4096;
    // The newest frame record already holds this return address: the leaf has its frame.
    const bool fp_frame_is_leafs = fp >= sp && fp + 2 * kWord <= bounds.hi &&
                                   (fp & (kWord - 1)) == 0 &&
                                   reinterpret_cast<const uintptr_t*>(fp)[1] == candidate;
    if (fp_frame_is_leafs) return 0;
    uintptr_t target = 0;
    if (!DirectCallTarget(candidate, code, &target)) return 0;
    target = ThroughPlt(target, code);
    if (target != 0 && target <= pc && pc - target < kMaxLeafSize) return candidate;
    return 0;
  }

  // Signal frames are not recognised on x86-64: the record the walk reaches above one is
  // followed like any other.
  static const ucontext_t* SignalContextAt(uintptr_t, uintptr_t, uintptr_t) { return nullptr; }
};

}  // namespace

uintptr_t ContextPc(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RIP]);
}
uintptr_t ContextSp(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RSP]);
}
uintptr_t ContextFp(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RBP]);
}

WalkResult FpWalk(const ucontext_t* context, StackBounds bounds, const CodeRanges* code,
                  uintptr_t* out, uint32_t max_depth) {
  return internal::WalkFramePointers<X86_64>(context, bounds, code, out, max_depth);
}

}  // namespace inprof
