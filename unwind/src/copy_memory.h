// The memory an unwinder may read while it walks a copied stack: the copy for addresses in
// the copied window, live memory inside loaded modules (unwind tables, code, a signal
// trampoline's bytes), nothing else. Remembers whether a read wanted stack above the window,
// which is how a truncated copy is told apart from broken unwind data.
#ifndef INPROF_UNWIND_COPY_MEMORY_H_
#define INPROF_UNWIND_COPY_MEMORY_H_

#include <cstdint>
#include <cstring>

#include "inprof/unwind.h"
#include "module_table.h"

namespace inprof::internal {

// When the stack's end was not known at capture time, reads up to this far above the window
// still count as "stack above the window" (truncation) rather than as wild reads.
inline constexpr uintptr_t kUnknownStackSlack = uintptr_t{8} << 20;

// Thread-safety: one per unwind call. Not async-signal-safe.
class CopyMemory {
 public:
  CopyMemory(const StackCopy& copy, const uint8_t* data, const ModuleTable& modules)
      : lo_(copy.sp_base), hi_(copy.sp_base + copy.bytes), data_(data), modules_(&modules) {
    stack_hi_ = copy.stack_hi != 0 ? copy.stack_hi : hi_ + kUnknownStackSlack;
  }

  // Reads the 8-byte word at `address`. False when the address is outside the copy and
  // outside every loaded module. The live read is not instrumented: module data next to
  // unwind tables can be inside sanitizer red zones.
  __attribute__((no_sanitize("address"))) bool ReadWord(uintptr_t address, uint64_t* value) {
    if (address >= lo_ && address <= hi_ - 8 && hi_ - lo_ >= 8) {
      std::memcpy(value, data_ + (address - lo_), 8);
      return true;
    }
    if (address >= lo_ && address < stack_hi_) {
      above_window_ = true;
      return false;
    }
    if (!modules_->Readable(address, 8)) return false;
    __builtin_memcpy(value, reinterpret_cast<const void*>(address), 8);  // may be unaligned
    return true;
  }

  bool above_window() const { return above_window_; }
  void ClearAboveWindow() { above_window_ = false; }

 private:
  uintptr_t lo_, hi_, stack_hi_;
  const uint8_t* data_;
  const ModuleTable* modules_;
  bool above_window_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_UNWIND_COPY_MEMORY_H_
