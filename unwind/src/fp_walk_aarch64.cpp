// Frame-pointer walk for aarch64 (AAPCS64): x29 points at a frame record
//   [x29]     caller's x29
//   [x29 + 8] return address (x30), possibly signed with pointer authentication
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"

namespace inprof {
namespace {

constexpr uintptr_t kWord = sizeof(uintptr_t);
// User-space virtual addresses use at most 52 bits; the bits above hold PAC signatures
// (and, with TBI, a tag byte). Stripping them without XPACLRI keeps this usable on cores
// without the PAuth extension.
constexpr uintptr_t kAddressMask = (uintptr_t{1} << 52) - 1;

uintptr_t StripPac(uintptr_t address) { return address & kAddressMask; }

}  // namespace

uintptr_t ContextPc(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.pc);
}
uintptr_t ContextSp(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.sp);
}
uintptr_t ContextFp(const ucontext_t* context) {
  return static_cast<uintptr_t>(context->uc_mcontext.regs[29]);
}

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
    result.stop = WalkStop::kNoBounds;
    return result;
  }
  // A leaf that never stored a frame record still has its return address in x30 (lr).
  // lr is trusted only when it follows a `BL` whose target starts shortly before pc (the
  // function we are in), and the newest frame record does not already hold it; otherwise
  // lr may be stale from an earlier call made by the interrupted function itself.
  if (code != nullptr) {
    const uintptr_t lr = StripPac(static_cast<uintptr_t>(context->uc_mcontext.regs[30]));
    const bool record_has_lr = fp >= sp && fp + 2 * kWord <= bounds.hi && (fp & (kWord - 1)) == 0 &&
                               StripPac(reinterpret_cast<const uintptr_t*>(fp)[1]) == lr;
    if (!record_has_lr && lr >= 4 && (lr & 3) == 0 && code->Contains(lr - 4) &&
        result.depth < max_depth) {
      const uint32_t insn = *reinterpret_cast<const uint32_t*>(lr - 4);
      if ((insn & 0xFC000000u) == 0x94000000u) {  // BL imm26
        int64_t imm = static_cast<int64_t>(insn & 0x03FFFFFFu);
        if (imm & 0x02000000) imm -= 0x04000000;
        const uintptr_t target = (lr - 4) + static_cast<uintptr_t>(imm * 4);
        constexpr uintptr_t kMaxLeafSize = 4096;
        if (target <= pc && pc - target < kMaxLeafSize) {
          out[result.depth++] = lr;
          result.recovered_leaf_caller = true;
        }
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
    const uintptr_t ret = StripPac(frame[1]);
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
