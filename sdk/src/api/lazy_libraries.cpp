// The debug-information libraries (libdw, libelf, libunwind's remote API, zlib) are not
// dependencies of libinprof.so: every process of a profiled command tree loads the runtime,
// and most of them end before they take a sample or write a profile. Mapping and relocating
// those libraries and theirs (liblzma, libbz2) cost each such process about as much as the
// rest of the runtime (docs/performance.md, "Loading the runtime"). The calls to them bind to
// stubs (lazy_stubs_<arch>.S) that load the library on the first call: the collector's first
// DWARF unwinding, the first symbolization or compressed export. Those run on the runtime's
// own threads or at exit, never in a signal handler or inside fork(): the handler only copies
// stacks, and a forked child's handler only forgets its parent's session.
// Not async-signal-safe (dlopen, dlsym).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "hooks/next_function.h"

namespace {

struct LazyFunction {
  uint32_t library;
  const char* name;
};

// Two steps, so that a name made by a macro (INPROF_LAZY_UNW) is expanded before it is quoted.
#define INPROF_LAZY_QUOTE(name) #name
#define INPROF_LAZY_LIBRARY(id, soname)
#define INPROF_LAZY_FUNCTION(id, name) {id, INPROF_LAZY_QUOTE(name)},
constexpr LazyFunction kFunctions[] = {
#include "api/lazy_symbols.inc"
};
#undef INPROF_LAZY_FUNCTION
#undef INPROF_LAZY_LIBRARY

#define INPROF_LAZY_LIBRARY(id, soname) soname,
#define INPROF_LAZY_FUNCTION(id, name)
constexpr const char* kLibraries[] = {
#include "api/lazy_symbols.inc"
};
#undef INPROF_LAZY_FUNCTION
#undef INPROF_LAZY_LIBRARY

constexpr size_t kLibraryCount = sizeof kLibraries / sizeof kLibraries[0];

// One handle per library, opened once; two threads that race both open it (the loader counts
// references) and one handle is kept.
std::atomic<void*> g_handles[kLibraryCount];

void* OpenOne(uint32_t library) {
  void* handle = g_handles[library].load(std::memory_order_acquire);
  if (handle != nullptr) return handle;
  // Local: the program's own lookups never find these through the runtime. The program
  // may have loaded the same library itself; then this is the same object.
  handle = dlopen(kLibraries[library], RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  void* expected = nullptr;
  if (!g_handles[library].compare_exchange_strong(expected, handle, std::memory_order_acq_rel)) {
    dlclose(handle);
    return expected;
  }
  return handle;
}

// All of them at the first call to any: each load changes the process's modules, and a
// session's collector answers that by re-reading every module's unwind tables while the
// stack copies wait. The first call comes when the session starts (the DWARF unwinder's
// set-up, before the first timer is armed) or at the first export, so they change once.
void* Open(uint32_t library) {
  for (uint32_t other = 0; other < kLibraryCount; ++other) {
    if (other != library) OpenOne(other);
  }
  return OpenOne(library);
}

// The library or function cannot be had (the package was removed after the program
// started, or an older version lacks the function): nothing can be returned to a caller
// that has no error path, so the process ends with status 127 and a line that says which.
[[noreturn]] void ExitForMissing(const LazyFunction& f) {
  const char* why = dlerror();
  const char* const parts[] = {
      "inprof: cannot load ", f.name, " from ", kLibraries[f.library], ": ",
      why != nullptr ? why : "not found",
      " (it reads debug information for DWARF unwinding and symbolization; on Debian: "
      "apt-get install libdw1 libelf1 libunwind8 zlib1g)\n"};
  for (const char* part : parts) {
    [[maybe_unused]] ssize_t n = write(2, part, std::strlen(part));
  }
  inprof::internal::ExitGroupRaw(127);
}

}  // namespace

// The stubs' slots, in the order of lazy_symbols.inc (lazy_stubs_<arch>.S).
extern "C" __attribute__((visibility("hidden"))) void* inprof_lazy_slots[];

// Called by a stub's first call (lazy_stubs_<arch>.S) with the function's index in
// lazy_symbols.inc: the function's address, also stored in the stub's slot so later calls
// jump straight to it. Not async-signal-safe.
extern "C" __attribute__((visibility("hidden"))) void* inprof_lazy_resolve(uint32_t index);
extern "C" void* inprof_lazy_resolve(uint32_t index) {
  const LazyFunction& f = kFunctions[index];
  void* handle = Open(f.library);
  void* address = handle != nullptr ? dlsym(handle, f.name) : nullptr;
  if (address == nullptr) ExitForMissing(f);
  __atomic_store_n(&inprof_lazy_slots[index], address, __ATOMIC_RELEASE);
  return address;
}
