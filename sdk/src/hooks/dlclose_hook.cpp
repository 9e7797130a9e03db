// dlclose interposition. Control path.
//
// Before a library is unloaded:
// - the symbolizer records it (module path and load address), so samples taken inside it
//   resolve when the profile is written later — the collector's periodic check alone would
//   miss a library loaded, used and unloaded between two checks — and pending stack copies
//   are unwound while its unwind tables are still mapped (RuntimeBeforeDlclose);
// - the handler's code ranges stop covering it, and handlers that may still hold the old
//   ranges are waited for (BeforeDlcloseUnmap): the frame-pointer walk reads code bytes at
//   addresses inside those ranges, and a signal that lands while the library is being
//   unmapped must not read an address that is going away (collector.h states the invariant).
// After the real dlclose, the ranges are rebuilt from what is still loaded.
// Nothing escapes into the program: dlclose is a C function, and an exception (bad_alloc
// under memory pressure) leaving it would end the host with std::terminate. What fails is
// contained and counted (ContainedAt::kHook); the real dlclose always runs, and the
// "dlclose in progress" flag is lowered on every way out (a flag left raised would stop the
// collector from unwinding stack copies for good).
#include <dlfcn.h>

#include "collector/collector.h"
#include "threads/contained.h"
#include "api/runtime.h"

namespace {

class DlcloseInProgress {
 public:
  DlcloseInProgress() {
    inprof::internal::g_dlclose_in_progress.fetch_add(1, std::memory_order_seq_cst);
  }
  ~DlcloseInProgress() {
    inprof::internal::g_dlclose_in_progress.fetch_sub(1, std::memory_order_seq_cst);
  }
  DlcloseInProgress(const DlcloseInProgress&) = delete;
  DlcloseInProgress& operator=(const DlcloseInProgress&) = delete;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using DlcloseFn = int (*)(void*);
  static DlcloseFn next = reinterpret_cast<DlcloseFn>(dlsym(RTLD_NEXT, "dlclose"));
  using inprof::internal::ContainedAt;
  using inprof::internal::CountContained;
  // While any dlclose runs, the collector leaves stack copies alone: DWARF unwinding reads
  // the unwind tables of the loaded modules straight from memory, and the library being
  // unloaded may be unmapped before the unwinder's module list says so.
  DlcloseInProgress in_progress;
  try {
    inprof::internal::RuntimeBeforeDlclose();
  } catch (...) {
    CountContained(ContainedAt::kHook);  // the library's samples may stay unresolved
  }
  // Also on the profiler's own threads (libdw may dlclose): their unloads unmap code too.
  // BeforeDlcloseUnmap throws nothing: when it cannot build a table without the closing
  // modules it withdraws every code range instead.
  const inprof::internal::DlcloseTicket ticket = inprof::internal::BeforeDlcloseUnmap(handle);
  const int rc = next(handle);
  inprof::internal::AfterDlcloseUnmap(ticket);
  return rc;
}
