// The frame-pointer walk shared by every architecture.
//
// Both supported ABIs chain frame records of two words, {caller's frame pointer, return
// address}, through the frame-pointer register (x86-64 rbp, aarch64 x29), so validating and
// following the chain is the same code everywhere. What differs per CPU is supplied by a
// `Cpu` type in fp_walk_<arch>.cpp (the only file that includes this header on its
// architecture), as static functions that the compiler inlines:
//
//   uintptr_t Cpu::ReturnAddress(uintptr_t saved)
//       the code address in a record's saved return-address word (aarch64 strips a
//       pointer-authentication signature; x86-64 returns it as it is).
//   uintptr_t Cpu::LeafCaller(const ucontext_t& regs, StackBounds bounds, const CodeRanges& code)
//       the return address of a leaf that stored no frame record, recovered from the
//       registers or the word at sp, or 0 when it cannot be trusted.
//   const ucontext_t* Cpu::SignalContextAt(uintptr_t record, uintptr_t lo, uintptr_t hi)
//       the interrupted context when the record at `record` is the one the kernel pushed with
//       a signal frame, else nullptr (always nullptr where signal frames are not recognised).
//
// Signal path: includes only signal-safe headers and calls nothing but the hooks.
#ifndef INPROF_UNWIND_FP_WALK_LOOP_H_
#define INPROF_UNWIND_FP_WALK_LOOP_H_

#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"

namespace inprof::internal {

constexpr uintptr_t kFpWord = sizeof(uintptr_t);
constexpr uintptr_t kFpRecord = 2 * kFpWord;  // {caller's frame pointer, return address}

// Appends the leaf's caller recovered from `regs` when there is room for it. Async-signal-safe.
template <typename Cpu>
inline void AppendLeafCaller(const ucontext_t& regs, StackBounds bounds, const CodeRanges* code,
                             uintptr_t* out, uint32_t max_depth, WalkResult* result) {
  if (code == nullptr || result->depth >= max_depth) return;
  const uintptr_t caller = Cpu::LeafCaller(regs, bounds, *code);
  if (caller != 0) {
    out[result->depth++] = caller;
    result->recovered_leaf_caller = true;
  }
}

// FpWalk (inprof/unwind.h) for one CPU. No ASan instrumentation: the walk deliberately reads
// other frames' stack slots (saved registers, the word at sp, signal frames), which the
// sanitizer may consider poisoned red zones. Async-signal-safe.
template <typename Cpu>
__attribute__((no_sanitize("address"))) inline WalkResult WalkFramePointers(
    const ucontext_t* context, StackBounds bounds, const CodeRanges* code, uintptr_t* out,
    uint32_t max_depth) {
  WalkResult result;
  if (max_depth == 0) {
    result.stop = WalkStop::kDepthLimit;
    return result;
  }
  const uintptr_t sp = ContextSp(context);
  uintptr_t fp = ContextFp(context);
  out[result.depth++] = ContextPc(context);
  if (bounds.hi == 0 || sp < bounds.lo || sp >= bounds.hi) {
    // Unknown bounds, or the code runs on another stack (sigaltstack, a coroutine): nothing
    // above sp can be validated.
    result.stop = WalkStop::kNoBounds;
    return result;
  }
  AppendLeafCaller<Cpu>(*context, bounds, code, out, max_depth, &result);

  uintptr_t lo = sp;  // every record lies above the previous one: the chain cannot loop
  while (true) {
    if (fp == 0) {
      result.stop = WalkStop::kRoot;
      break;
    }
    if ((fp & (kFpWord - 1)) != 0) {
      result.stop = WalkStop::kMisaligned;
      break;
    }
    if (fp < lo || fp > bounds.hi - kFpRecord) {
      result.stop = WalkStop::kLeftStack;
      break;
    }
    const auto* record = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = record[0];
    const uintptr_t ret = Cpu::ReturnAddress(record[1]);
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
    // The ordinary step comes first and the signal-frame case only adjusts it: that keeps the
    // common path one straight block with a single back edge (on x86-64 SignalContextAt is
    // constant nullptr and the whole case disappears).
    lo = fp + kFpRecord;
    fp = next;
    const ucontext_t* interrupted = Cpu::SignalContextAt(next, lo, bounds.hi);
    if (interrupted != nullptr) {
      // `ret` was the sigreturn trampoline: go on from the interrupted registers, as at the
      // start of the walk.
      if (result.depth >= max_depth) {
        result.stop = WalkStop::kDepthLimit;
        break;
      }
      // pc + 1: later frames are looked up at (return address - 1), which lands back on the
      // interrupted instruction itself, not on the one before it (possibly another line, or
      // at a function's first instruction, another function).
      out[result.depth++] = ContextPc(interrupted) + 1;
      AppendLeafCaller<Cpu>(*interrupted, bounds, code, out, max_depth, &result);
      lo = next + kFpRecord;
      fp = ContextFp(interrupted);
    }
  }
  return result;
}

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_FP_WALK_LOOP_H_
