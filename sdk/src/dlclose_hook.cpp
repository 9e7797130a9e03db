// dlclose interposition: before a library is unloaded, the symbolizer records it (module
// path and load address), so samples taken inside it resolve when the profile is written
// later — the collector's periodic check alone would miss a library loaded, used and
// unloaded between two checks. Control path.
#include <dlfcn.h>

#include "internal/runtime.h"

extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using DlcloseFn = int (*)(void*);
  static DlcloseFn next = reinterpret_cast<DlcloseFn>(dlsym(RTLD_NEXT, "dlclose"));
  inprof::internal::RuntimeBeforeDlclose();
  return next(handle);
}
