// Factories of the DwarfUnwinder backends (dwarf_unwinder.cpp picks one).
#ifndef INPROF_UNWIND_INTERNAL_BACKENDS_H_
#define INPROF_UNWIND_INTERNAL_BACKENDS_H_

#include <memory>

#include "inprof/dwarf_unwind.h"

namespace inprof::internal {

// Both return kUnavailable, with a message for the user, when the backend cannot be set up.
// Not async-signal-safe.
StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibunwindUnwinder();
StatusOr<std::unique_ptr<DwarfUnwinder>> CreateLibdwflUnwinder();

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_INTERNAL_BACKENDS_H_
