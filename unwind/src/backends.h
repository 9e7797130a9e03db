// Factories of the DwarfUnwinder backends (dwarf_unwinder.cpp picks one).
#ifndef INPROF_UNWIND_INTERNAL_BACKENDS_H_
#define INPROF_UNWIND_INTERNAL_BACKENDS_H_

#include <memory>
#include <string>

#include "inprof/dwarf_unwind.h"

namespace inprof::internal {

// Both return null and set `*error` on failure. Not async-signal-safe.
std::unique_ptr<DwarfUnwinder> CreateLibunwindUnwinder(std::string* error);
std::unique_ptr<DwarfUnwinder> CreateLibdwflUnwinder(std::string* error);

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_INTERNAL_BACKENDS_H_
