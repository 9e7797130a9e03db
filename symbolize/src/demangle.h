// C++ symbol demangling with a cache keyed by the name's address: names handed out by
// libdw/libdwfl live in the mapped string tables for as long as the Dwfl does, and one hot
// function contributes many sampled addresses.
#ifndef INPROF_SYMBOLIZE_DEMANGLE_H_
#define INPROF_SYMBOLIZE_DEMANGLE_H_

#include <string>
#include <unordered_map>

namespace inprof::internal {

// "_ZN2ns1fEi" -> "ns::f(int)"; "_Z1fv.cold" -> "f() [clone .cold]". A symbol version
// suffix ("memcpy@@GLIBC_2.14") is dropped. Names that are not mangled, or that fail to
// demangle, come back unchanged. Not async-signal-safe (allocates).
std::string DemangleString(const char* name);

class DemangleCache {
 public:
  // `name` must stay valid for the cache's lifetime (see above).
  const std::string& Get(const char* name);

 private:
  std::unordered_map<const char*, std::string> cache_;
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_DEMANGLE_H_
