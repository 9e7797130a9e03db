// x86-64 register capture. gregs use the kernel's order (REG_R8 ... REG_RIP); the snapshot
// uses the DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip), which is also
// libunwind's UNW_X86_64_* numbering.
// Signal path: this file includes only signal-safe headers and calls nothing.
#include <ucontext.h>

#include <cstdint>

#include "inprof/unwind.h"
#include "registers.h"

namespace inprof::internal {

void SnapshotRegisters(const ucontext_t* context, RegisterSnapshot* out) {
  static constexpr int kDwarfToGreg[17] = {
      REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
      REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
  };
  const greg_t* gregs = context->uc_mcontext.gregs;
  for (int i = 0; i < 17; ++i) out->regs[i] = static_cast<uint64_t>(gregs[kDwarfToGreg[i]]);
  out->count = 17;
  out->pc = out->regs[16];
  out->sp = out->regs[7];
}

uint32_t DwflInitialRegisterCount() { return 17; }

uint64_t StripAddress(uint64_t address) { return address; }

}  // namespace inprof::internal
