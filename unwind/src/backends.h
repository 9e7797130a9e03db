// Factories of the DwarfUnwinder backends (dwarf_unwinder.cpp picks one), and what they share.
#ifndef INPROF_UNWIND_BACKENDS_H_
#define INPROF_UNWIND_BACKENDS_H_

#include <cstdint>
#include <memory>

#include "inprof/dwarf_unwind.h"
#include "registers.h"

namespace inprof::internal {

// Both return kUnavailable, with a message for the user, when the backend cannot be set up.
// Not async-signal-safe.
StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibunwindUnwinder();
StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibdwflUnwinder();

// What every backend answers before unwinding: nothing when there is no room, only the pc
// when the stack pointer lies outside the copied stack (nothing to unwind from). True when
// `*result` is the whole answer.
inline bool AnswerWithoutUnwinding(const StackCopy& copy, uintptr_t* pcs, uint32_t max,
                                   UnwindResult* result) {
  if (max == 0) {
    result->stop = UnwindStop::kDepthLimit;
    return true;
  }
  if (copy.sp_outside_bounds) {
    pcs[result->depth++] = StripAddress(copy.regs.pc);
    result->stop = max == 1 ? UnwindStop::kDepthLimit : UnwindStop::kNoStack;
    return true;
  }
  return false;
}

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_BACKENDS_H_
