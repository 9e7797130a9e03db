// Frame-pointer walk for aarch64 (AAPCS64): x29 points at a frame record
//   [x29]     caller's x29
//   [x29 + 8] return address (x30), possibly signed with pointer authentication
// The walk itself is shared (fp_walk_loop.h); this file supplies the CPU details:
// the registers, pointer-authentication stripping, a frameless leaf's caller recovered from
// lr, and the frame record the kernel pushes with a signal frame.
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "inprof/unwind.h"
#include "fp_walk_loop.h"

namespace inprof {
namespace {

constexpr uintptr_t kWord = internal::kFpWord;
constexpr uintptr_t kRecord = internal::kFpRecord;
// A frameless leaf's caller is trusted only when the pc is at most this far into the function
// its call targeted.
constexpr uintptr_t kMaxLeafSize = 4096;

// Removes a pointer-authentication signature from a code address. XPACLRI knows where the
// PAC field sits for the running kernel's address size (a fixed mask does not: with 48-bit
// addresses the signature starts at bit 48, and `& ((1 << 52) - 1)` kept four signature bits).
// It is in the hint space: a NOP on cores without PAuth, where nothing is signed anyway.
// Async-signal-safe.
uintptr_t StripPac(uintptr_t address) {
  register uintptr_t x30 asm("x30") = address;
  asm("hint #7" : "+r"(x30));  // xpaclri
  return x30;
}

// A PLT stub (`[bti c;] adrp x16, P; ldr x17, [x16, #o]; add x16, x16, #o; br x17`) jumps to
// the address in its GOT slot: returns that address once the loader has bound it, else
// `target` unchanged. The slot belongs to the stub's own module, so it is mapped.
// Async-signal-safe.
__attribute__((no_sanitize("address"))) uintptr_t ThroughPlt(uintptr_t target,
                                                             const CodeRanges& code) {
  uintptr_t at = target;
  if (!code.Contains(at) || !code.Contains(at + 19)) return target;
  const auto* insn = reinterpret_cast<const uint32_t*>(at);
  if (insn[0] == 0xD503245Fu) {  // bti c
    ++insn;
    at += 4;
  }
  if ((insn[0] & 0x9F00001Fu) != 0x90000010u ||  // adrp x16, page
      (insn[1] & 0xFFC003FFu) != 0xF9400211u ||  // ldr x17, [x16, #imm12 * 8]
      insn[3] != 0xD61F0220u) {                  // br x17
    return target;
  }
  const uint64_t immlo = (insn[0] >> 29) & 0x3u;
  const uint64_t immhi = (insn[0] >> 5) & 0x7FFFFu;
  int64_t pages = static_cast<int64_t>((immhi << 2) | immlo);
  if (pages & (int64_t{1} << 20)) pages -= int64_t{1} << 21;  // 21-bit signed page count
  const uintptr_t page = (at & ~uintptr_t{0xFFF}) + static_cast<uintptr_t>(pages) * 4096;
  const uintptr_t slot = page + ((insn[1] >> 10) & 0xFFFu) * kWord;
  const uintptr_t resolved = *reinterpret_cast<const uintptr_t*>(slot);
  return code.Contains(resolved) ? resolved : target;
}

// The return address of a function that stored no frame record (a frameless leaf, or one
// interrupted before its prologue ran): x29 still points at its caller's record, so the
// first record read belongs to the caller and the caller itself would vanish. Its return
// address is still in lr. lr is trusted only when
//   - the newest frame record does not hold it already,
//   - it follows a `BL` whose target (through a PLT stub: calls into a library) starts at
//     most kMaxLeafSize before pc, so the call entered the function we are in,
//   - and that BL is not itself between the target and pc: then the function at the target
//     made a call, it is no leaf, and lr is stale from that call (the common case in any
//     function past its first call).
// Returns 0 when lr is not trusted. Async-signal-safe.
__attribute__((no_sanitize("address"))) uintptr_t LeafReturn(uintptr_t pc, uintptr_t sp,
                                                             uintptr_t fp, uintptr_t lr_raw,
                                                             StackBounds bounds,
                                                             const CodeRanges& code) {
  const uintptr_t lr = StripPac(lr_raw);
  if (fp >= sp && fp <= bounds.hi - kRecord && (fp & (kWord - 1)) == 0 &&
      StripPac(reinterpret_cast<const uintptr_t*>(fp)[1]) == lr) {
    return 0;
  }
  const uintptr_t call = lr - 4;
  if (lr < 4 || (lr & 3) != 0 || !code.Contains(call)) return 0;
  const uint32_t insn = *reinterpret_cast<const uint32_t*>(call);
  if ((insn & 0xFC000000u) != 0x94000000u) return 0;  // BL imm26
  int64_t words = static_cast<int64_t>(insn & 0x03FFFFFFu);
  if (words & 0x02000000) words -= 0x04000000;
  const uintptr_t target = ThroughPlt(call + static_cast<uintptr_t>(words) * 4, code);
  if (target > pc || pc - target >= kMaxLeafSize) return 0;
  if (call >= target && call <= pc) return 0;
  return lr;
}

// The kernel delivers a signal by pushing an rt_sigframe {siginfo_t, ucontext_t} and right
// above it a frame record {interrupted x29, interrupted x30}; the handler starts with x29 at
// that record and lr at the sigreturn trampoline (arch/arm64/kernel/signal.c: get_sigframe,
// setup_sigframe, setup_return; qemu-user lays it out the same way). Read as an ordinary
// record it would report the interrupted x30, often stale, in place of the interrupted pc.
// Returns the ucontext when the record at `record` is such a frame: the ucontext right below
// holds the same x29 and x30, and its register save area starts with the FP/SIMD record.
// Not recognised (the record is followed like any other) when the frame carries extra
// context past the ucontext (SVE vectors longer than 512 bits, SME state).
// Async-signal-safe.
__attribute__((no_sanitize("address"))) const ucontext_t* KernelSignalContext(uintptr_t record,
                                                                              uintptr_t lo,
                                                                              uintptr_t hi) {
  static_assert(sizeof(ucontext_t) % 16 == 0, "the kernel's frame record follows 16-aligned");
  if (record < lo + sizeof(ucontext_t)) return nullptr;
  const uintptr_t at = record - sizeof(ucontext_t);
  if ((at & 15) != 0 || record > hi - kRecord) return nullptr;
  const auto* uc = reinterpret_cast<const ucontext_t*>(at);
  const auto* frame = reinterpret_cast<const uintptr_t*>(record);
  const mcontext_t& m = uc->uc_mcontext;
  if (m.regs[29] != frame[0] || m.regs[30] != frame[1]) return nullptr;
  constexpr uint32_t kFpsimdMagic = 0x46508001;  // FPSIMD_MAGIC, <asm/sigcontext.h>
  constexpr uint32_t kFpsimdSize = 528;          // sizeof(struct fpsimd_context)
  const auto* first = reinterpret_cast<const uint32_t*>(m.__reserved);
  if (first[0] != kFpsimdMagic || first[1] != kFpsimdSize) return nullptr;
  // The interrupted code ran on this stack, above the frame the kernel pushed.
  if (m.sp < record + kRecord || m.sp >= hi) return nullptr;
  return uc;
}

// The CPU details of the shared walk (fp_walk_loop.h). Async-signal-safe.
struct Aarch64 {
  static uintptr_t ReturnAddress(uintptr_t saved) { return StripPac(saved); }

  static uintptr_t LeafCaller(const ucontext_t& regs, StackBounds bounds,
                              const CodeRanges& code) {
    return LeafReturn(ContextPc(&regs), ContextSp(&regs), ContextFp(&regs),
                      regs.uc_mcontext.regs[30], bounds, code);
  }

  static const ucontext_t* SignalContextAt(uintptr_t record, uintptr_t lo, uintptr_t hi) {
    return KernelSignalContext(record, lo, hi);
  }
};

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

WalkResult FpWalk(const ucontext_t* context, StackBounds bounds, const CodeRanges* code,
                  uintptr_t* out, uint32_t max_depth) {
  return internal::WalkFramePointers<Aarch64>(context, bounds, code, out, max_depth);
}

}  // namespace inprof
