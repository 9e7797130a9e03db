// Architecture-specific register handling for stack capture and DWARF unwinding.
// Implemented once per architecture in registers_<arch>.cpp.
#ifndef INPROF_UNWIND_REGISTERS_H_
#define INPROF_UNWIND_REGISTERS_H_

#include <ucontext.h>

#include <cstdint>

#include "inprof/unwind.h"

namespace inprof::internal {

// Fills `out` (DWARF register order, see RegisterSnapshot) from a signal context.
// Async-signal-safe.
void SnapshotRegisters(const ucontext_t* context, RegisterSnapshot* out);

// How many registers, from DWARF number 0 up, libdwfl takes as this architecture's initial
// frame state (the pc is passed separately). Async-signal-safe.
uint32_t DwflInitialRegisterCount();

// An address as the CPU will use it: pointer-authentication bits removed where the
// architecture has them. Async-signal-safe.
uint64_t StripAddress(uint64_t address);

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_REGISTERS_H_
