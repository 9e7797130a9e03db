// aarch64 register capture: x0-x30, sp, pc in DWARF order (also libunwind's UNW_AARCH64_*).
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstdint>

#include "inprof/unwind.h"
#include "registers.h"

namespace inprof::internal {

void SnapshotRegisters(const ucontext_t* context, RegisterSnapshot* out) {
  const auto& mc = context->uc_mcontext;
  for (int i = 0; i < 31; ++i) out->regs[i] = static_cast<uint64_t>(mc.regs[i]);
  out->regs[31] = static_cast<uint64_t>(mc.sp);
  out->regs[32] = static_cast<uint64_t>(mc.pc);
  out->count = 33;
  out->pc = out->regs[32];
  out->sp = out->regs[31];
}

// x0-x30 and sp; libdwfl takes the pc through dwfl_thread_state_register_pc.
uint32_t DwflInitialRegisterCount() { return 32; }

// User-space addresses on Linux/aarch64 use 48 bits (52 only for mappings that ask for them);
// anything above is a pointer-authentication code or a tag.
uint64_t StripAddress(uint64_t address) { return address & ((uint64_t{1} << 48) - 1); }

}  // namespace inprof::internal
