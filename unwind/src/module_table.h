// The loaded modules as the DWARF unwinders see them: where each module's code is, where
// its .eh_frame_hdr binary-search table is, and which address ranges are mapped from it
// (the only live memory the unwinders read besides the stack copy).
#ifndef INPROF_UNWIND_MODULE_TABLE_H_
#define INPROF_UNWIND_MODULE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "inprof/status.h"

namespace inprof::internal {

struct UnwindModule {
  std::string name;       // as the loader reports it ("" for the main program)
  uintptr_t bias = 0;     // load bias (dlpi_addr)
  uintptr_t code_lo = 0;  // [code_lo, code_hi): the executable PT_LOAD segments
  uintptr_t code_hi = 0;
  uintptr_t eh_frame_hdr = 0;  // 0 if the module has no PT_GNU_EH_FRAME
  uintptr_t table = 0;         // the sorted (initial location, FDE) table; 0 if unusable
  uint64_t fde_count = 0;
};

// Thread-safety: not thread-safe; owned by one unwinder. Not async-signal-safe.
class ModuleTable {
 public:
  // Re-reads the module list with dl_iterate_phdr. kUnavailable when no module was found.
  Status Refresh();

  // True when the loader's adds/subs counters moved since the last Refresh().
  bool Changed() const;

  // The module whose executable segments contain `pc`, or null.
  const UnwindModule* FindCode(uintptr_t pc) const;

  // True when [address, address + size) lies inside one loaded PT_LOAD segment.
  bool Readable(uintptr_t address, size_t size) const;

  const std::vector<UnwindModule>& modules() const { return modules_; }

 private:
  struct Range {
    uintptr_t lo, hi;
    uint32_t module;
  };
  std::vector<UnwindModule> modules_;
  std::vector<Range> code_;      // sorted by lo
  std::vector<Range> segments_;  // sorted by lo
  uint64_t adds_ = 0, subs_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_MODULE_TABLE_H_
