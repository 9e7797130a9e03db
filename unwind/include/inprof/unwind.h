// Raw stacks from a signal context.
//
// The frame-pointer walker runs inside the sampling signal handler: it reads only the
// interrupted register state and memory inside the interrupted thread's stack, which every
// step validates (inside bounds, aligned, strictly increasing), and it never calls anything.
// The walk is one loop for every platform (src/fp_walk_loop.h); the CPU details
// (registers, leaf recovery, pointer authentication, signal frames) live in
// src/fp_walk_<arch>.cpp. This header is the same on every platform.
//
// Thread-safety: every function here is reentrant and touches only its arguments.
#ifndef INPROF_UNWIND_H_
#define INPROF_UNWIND_H_

#include <ucontext.h>

#include <cstddef>
#include <cstdint>

namespace inprof {

// [lo, hi) of a thread's stack mapping. A zero `hi` means "not known yet".
struct StackBounds {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// Sorted, non-overlapping executable address ranges, prepared off the signal path and never
// modified while a handler may read it. Used to validate guessed return addresses.
// `readable`: the readable segments (PT_LOAD with PF_R) of the same modules, sorted and
// non-overlapping, under the same rule: the only data outside the stack the walk reads
// (a PLT stub's GOT slot) must lie inside one of them. Empty: no such read is made.
struct CodeRanges {
  const uintptr_t (*ranges)[2] = nullptr;  // [begin, end)
  size_t count = 0;
  const uintptr_t (*readable)[2] = nullptr;  // [begin, end)
  size_t readable_count = 0;

  // Async-signal-safe.
  bool Contains(uintptr_t address) const { return InRanges(ranges, count, address, 1); }
  // [address, address + size) lies inside one readable segment. Async-signal-safe.
  bool ContainsReadable(uintptr_t address, size_t size) const {
    return InRanges(readable, readable_count, address, size);
  }

  // Async-signal-safe.
  static bool InRanges(const uintptr_t (*table)[2], size_t n, uintptr_t address, size_t size) {
    if (size == 0 || address + size < address) return false;
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (address < table[mid][0]) {
        hi = mid;
      } else if (address >= table[mid][1]) {
        lo = mid + 1;
      } else {
        return address + size <= table[mid][1];
      }
    }
    return false;
  }
};

// Why a walk ended.
enum class WalkStop : uint8_t {
  kRoot,           // reached a null frame pointer or a null return address: the outermost frame
  kLeftStack,      // the next frame pointer is outside the stack (e.g. code built without fp)
  kNotIncreasing,  // the next frame pointer does not move towards the stack base
  kMisaligned,     // the frame pointer is not aligned
  kDepthLimit,     // the caller's buffer is full: the stack is truncated
  kNoBounds,       // the thread's stack bounds are not known yet: only the pc was taken
};

struct WalkResult {
  uint32_t depth = 0;  // frames written to `out`, leaf first
  WalkStop stop = WalkStop::kRoot;
  bool recovered_leaf_caller = false;  // a frameless leaf's caller was recovered from [sp]
};

// The interrupted program counter, stack pointer and frame pointer of a signal context.
// Async-signal-safe.
uintptr_t ContextPc(const ucontext_t* context);
uintptr_t ContextSp(const ucontext_t* context);
uintptr_t ContextFp(const ucontext_t* context);

// Walks the frame-pointer chain of the interrupted code. out[0] is the interrupted pc, the
// following entries are return addresses (not yet adjusted by -1), leaf first, at most
// `max_depth` entries. When `code` is given and the leaf appears to have no frame of its own
// (a frameless leaf function, or a sample taken before the prologue ran), the leaf's caller
// is recovered from the word at the stack pointer if it is a return address that follows a
// direct call to the function containing the pc. Async-signal-safe.
WalkResult FpWalk(const ucontext_t* context, StackBounds bounds, const CodeRanges* code,
                  uintptr_t* out, uint32_t max_depth);

// ---------------------------------------------------------------------------------------------
// Stack capture for DWARF unwinding off the signal path.
//
// Unwinding with DWARF CFI inside the handler is not safe (libunwind's local unwinder takes
// the loader lock and a mutex, libdwfl allocates), so the handler only copies the interrupted
// registers and the top of the stack into memory the caller prepared, and a collector thread
// unwinds the copy later with a DwarfUnwinder (inprof/dwarf_unwind.h).

// The interrupted register state, indexed by DWARF register number of the target:
//   x86-64:  0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip
//   aarch64: 0-30 x0-x30, 31 sp, 32 pc (as captured, pointer-authentication bits
//            included; the unwinder strips them from the addresses it returns)
struct RegisterSnapshot {
  static constexpr uint32_t kMaxRegisters = 33;
  uint64_t regs[kMaxRegisters];
  uint32_t count;  // registers valid in `regs` on this architecture
  uint64_t pc;
  uint64_t sp;
};

// What CopyStack captured. The copied bytes themselves live in the caller's buffer; the
// unwinder gets them next to this header (DwarfUnwinder::Unwind).
struct StackCopy {
  RegisterSnapshot regs;
  uintptr_t sp_base;   // address in the thread's stack of the first copied byte (= regs.sp)
  uintptr_t stack_hi;  // end of the thread's stack (StackBounds::hi); 0 if it was not known
  uint32_t bytes;      // bytes copied: [sp_base, sp_base + bytes)
  // The copy stopped at the buffer's capacity before the end of the stack: frames whose
  // data lies above the window cannot be unwound (the unwinder reports kTruncated then).
  bool window_full;
  // Nothing was copied because the stack pointer is outside `bounds` (an alternate signal
  // stack, a coroutine stack), is misaligned, or the bounds are not known: only the
  // registers were taken.
  bool sp_outside_bounds;
};

// Captures the interrupted registers of `context` and copies
// [sp, min(sp + capacity, bounds.hi)) into `buffer`. The buffer must have been touched
// (prefaulted) before the handler runs, or the copy takes page faults, and be 8-byte
// aligned; `capacity` is rounded down to whole words. Returns the number
// of bytes copied. Reads only inside `bounds`. Async-signal-safe.
uint32_t CopyStack(const ucontext_t* context, StackBounds bounds, uint8_t* buffer, size_t capacity,
                   StackCopy* out);

}  // namespace inprof

#endif  // INPROF_UNWIND_H_
