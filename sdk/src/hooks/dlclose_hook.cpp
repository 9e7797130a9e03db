// dlclose interposition: before a library is unloaded, the symbolizer records it (module
// path and load address), so samples taken inside it resolve when the profile is written
// later — the collector's periodic check alone would miss a library loaded, used and
// unloaded between two checks — and pending stack copies are unwound while its unwind
// tables are still mapped. Control path.
#include <dlfcn.h>

#include "internal/runtime.h"
#include "internal/session.h"

extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using DlcloseFn = int (*)(void*);
  static DlcloseFn next = reinterpret_cast<DlcloseFn>(dlsym(RTLD_NEXT, "dlclose"));
  // While any dlclose runs, the collector leaves stack copies alone: DWARF unwinding reads
  // the unwind tables of the loaded modules straight from memory, and the library being
  // unloaded may be unmapped before the unwinder's module list says so.
  inprof::internal::g_dlclose_in_progress.fetch_add(1, std::memory_order_seq_cst);
  inprof::internal::RuntimeBeforeDlclose();
  const int rc = next(handle);
  inprof::internal::g_dlclose_in_progress.fetch_sub(1, std::memory_order_seq_cst);
  return rc;
}
