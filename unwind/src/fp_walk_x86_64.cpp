// Frame-pointer walk for x86-64 (System V): every frame starts with
//   [rbp]     saved rbp of the caller
//   [rbp + 8] return address into the caller
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"

namespace inprof {
namespace {

constexpr uintptr_t kWord = sizeof(uintptr_t);

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
// it is not such a stub. The GOT slot belongs to the same loaded module as the stub, so it
// is mapped. Async-signal-safe.
uintptr_t ThroughPlt(uintptr_t target, const CodeRanges& code) {
  if (!code.Contains(target) || !code.Contains(target + 5)) return target;
  const auto* bytes = reinterpret_cast<const uint8_t*>(target);
  if (bytes[0] != 0xFF || bytes[1] != 0x25) return target;
  const int32_t rel = static_cast<int32_t>(static_cast<uint32_t>(bytes[2]) |
                                           static_cast<uint32_t>(bytes[3]) << 8 |
                                           static_cast<uint32_t>(bytes[4]) << 16 |
                                           static_cast<uint32_t>(bytes[5]) << 24);
  const uintptr_t slot = target + 6 + static_cast<intptr_t>(rel);
  if ((slot & (kWord - 1)) != 0) return target;
  const uintptr_t resolved = *reinterpret_cast<const uintptr_t*>(slot);
  return code.Contains(resolved) ? resolved : target;
}

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

// No ASan instrumentation: the walk deliberately reads other frames' stack slots (saved
// registers, the word at sp) which the sanitizer may consider poisoned red zones.
__attribute__((no_sanitize("address"))) WalkResult FpWalk(const ucontext_t* context,
                                                          StackBounds bounds,
                                                          const CodeRanges* code, uintptr_t* out,
                                                          uint32_t max_depth) {
  WalkResult result;
  if (max_depth == 0) {
    result.stop = WalkStop::kDepthLimit;
    return result;
  }
  const uintptr_t pc = ContextPc(context);
  const uintptr_t sp = ContextSp(context);
  uintptr_t fp = ContextFp(context);
  out[result.depth++] = pc;

  if (bounds.hi == 0 || sp < bounds.lo || sp >= bounds.hi) {
    // Unknown bounds, or the code runs on another stack (sigaltstack, a coroutine): nothing
    // above sp can be validated.
    result.stop = WalkStop::kNoBounds;
    return result;
  }

  // Frameless leaf: rbp still holds the caller's frame, so the first return address read
  // from it belongs to the caller's caller and the caller itself would vanish. If the word
  // at sp is a return address right after a direct call (or a call through the PLT) to a
  // function that starts shortly before pc, it is the leaf's own return address. This is
  // the common case of a call into a library built without frame pointers (Debian's libc).
  if (code != nullptr && (sp & (kWord - 1)) == 0 && sp + kWord <= bounds.hi) {
    const uintptr_t candidate = *reinterpret_cast<const uintptr_t*>(sp);
    uintptr_t target = 0;
    constexpr uintptr_t kMaxLeafSize = 4096;
    const bool fp_frame_is_leafs = fp >= sp && fp + 2 * kWord <= bounds.hi &&
                                   (fp & (kWord - 1)) == 0 &&
                                   reinterpret_cast<const uintptr_t*>(fp)[1] == candidate;
    if (!fp_frame_is_leafs && DirectCallTarget(candidate, *code, &target)) {
      target = ThroughPlt(target, *code);
    }
    if (!fp_frame_is_leafs && target != 0 && target <= pc && pc - target < kMaxLeafSize) {
      if (result.depth < max_depth) {
        out[result.depth++] = candidate;
        result.recovered_leaf_caller = true;
      }
    }
  }

  uintptr_t lo = sp;
  while (true) {
    if (fp == 0) {
      result.stop = WalkStop::kRoot;
      break;
    }
    if ((fp & (kWord - 1)) != 0) {
      result.stop = WalkStop::kMisaligned;
      break;
    }
    if (fp < lo || fp > bounds.hi - 2 * kWord) {
      result.stop = WalkStop::kLeftStack;
      break;
    }
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = frame[0];
    const uintptr_t ret = frame[1];
    if (ret == 0) {
      result.stop = WalkStop::kRoot;
      break;
    }
    if (result.depth >= max_depth) {
      result.stop = WalkStop::kDepthLimit;
      break;
    }
    out[result.depth++] = ret;
    if (next == 0) {
      result.stop = WalkStop::kRoot;
      break;
    }
    if (next <= fp) {
      result.stop = WalkStop::kNotIncreasing;
      break;
    }
    lo = fp + 2 * kWord;
    fp = next;
  }
  return result;
}

}  // namespace inprof
