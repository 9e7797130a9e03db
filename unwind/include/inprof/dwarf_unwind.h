// DWARF unwinding of stacks captured in a signal handler, off the signal path.
//
// The handler calls CopyStack (inprof/unwind.h) into a buffer prepared before the handler
// can run; a collector thread later hands the StackCopy and its bytes to a DwarfUnwinder,
// which walks the call chain with the .eh_frame unwind tables of the loaded modules. Memory
// reads during the walk come from the copy for stack addresses and from the live process
// only inside loaded modules' segments (unwind tables, code), so a stale or corrupt copy can
// end a walk early but never makes it read outside mapped module memory or the copy.
//
// Typical use by a runtime:
//   registration (control path): allocate and touch each thread's copy buffers.
//   handler:   CopyStack(context, bounds, buffer, capacity, &copy); push copy + bytes.
//   collector: one DwarfUnwinder per collector thread, created once;
//              RefreshModules() at start and after every dlopen/dlclose;
//              Unwind(copy, bytes, pcs, max) per sample;
//              UnwindStop::kTruncated -> count a truncated sample.
//
// Modules: the unwinder reads unwind tables and code of the modules listed by the last
// RefreshModules() directly from memory. A module dlclose'd since then must not be
// referenced by samples still to be unwound, or the caller must call RefreshModules() (after
// which samples inside the unloaded module stop with kNoUnwindInfo) before unwinding them.
// Keeping unloading from racing with Unwind() is the caller's job (e.g. a dlclose hook that
// refreshes under the collector's lock).
//
// Thread-safety: a DwarfUnwinder is used by one thread at a time (one per collector thread:
// a shared one would serialise on libunwind's address-space lock anyway). Different
// instances are independent. Nothing in this header may be called from a signal handler.
#ifndef INPROF_DWARF_UNWIND_H_
#define INPROF_DWARF_UNWIND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "inprof/status.h"
#include "inprof/unwind.h"

namespace inprof {

enum class DwarfBackend : uint8_t {
  kLibunwind,  // libunwind's remote API with accessors over the copy (the default)
  kLibdwfl,    // elfutils' libdwfl unwinder (dwfl_attach_state + dwfl_getthread_frames)
};

// Why an unwind ended.
enum class UnwindStop : uint8_t {
  kRoot,          // reached the outermost frame (_start, the thread's start routine)
  kTruncated,     // the next frame needs stack above the copied window (copy too small)
  kNoUnwindInfo,  // the pc is in no loaded module or its module has no unwind table entry
  kError,         // the unwind information or the copied data is inconsistent
  kDepthLimit,    // `max` frames were written before the root was reached
  kNoStack,       // the copy holds only registers (sp outside the known stack bounds)
};

// Short name for health reports and logs: "root", "truncated", "no-unwind-info", ...
const char* UnwindStopName(UnwindStop stop);

struct UnwindResult {
  uint32_t depth = 0;  // entries written to `pcs`
  UnwindStop stop = UnwindStop::kRoot;
};

class DwarfUnwinder {
 public:
  // Creates an unwinder with the given backend and reads the loaded modules. kUnavailable,
  // with a message for the user, when the backend cannot be set up. Not async-signal-safe.
  static StatusOr<std::unique_ptr<DwarfUnwinder>> Create(DwarfBackend backend);

  virtual ~DwarfUnwinder() = default;

  // Re-reads the loaded modules (dl_iterate_phdr) and their .eh_frame_hdr search tables and
  // drops every cached unwind result. Call after dlopen/dlclose. kUnavailable when no module
  // could be read. Not async-signal-safe.
  virtual Status RefreshModules() = 0;

  // True when modules were loaded or unloaded since the last RefreshModules() (the loader's
  // adds/subs counters; takes the loader lock briefly). Not async-signal-safe.
  virtual bool ModulesChanged() const = 0;

  // Unwinds a copy made by CopyStack. `data` points at the `copy.bytes` copied bytes.
  // Writes up to `max` addresses to `pcs`, leaf first: pcs[0] is the interrupted pc, the
  // others are return addresses (not adjusted; a symbolizer looks them up at address - 1),
  // the same convention as FpWalk. The frame right below a signal trampoline (code that an
  // application's own signal handler interrupted) is reported as its interrupted pc, not as
  // a return address. Not async-signal-safe.
  virtual UnwindResult Unwind(const StackCopy& copy, const uint8_t* data, uintptr_t* pcs,
                              uint32_t max) = 0;

  virtual DwarfBackend backend() const = 0;
};

}  // namespace inprof

#endif  // INPROF_DWARF_UNWIND_H_
