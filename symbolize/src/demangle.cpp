#include "demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace inprof::internal {

std::string DemangleString(const char* name) {
  if (name == nullptr) return {};
  std::string base(name);
  const size_t at = base.find('@');
  if (at != std::string::npos && at != 0) base.resize(at);
  if (base.size() < 3 || base[0] != '_' || base[1] != 'Z') return base;
  int status = 0;
  char* demangled = abi::__cxa_demangle(base.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    free(demangled);
    return base;
  }
  std::string out(demangled);
  free(demangled);
  return out;
}

const std::string& DemangleCache::Get(const char* name) {
  auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(name, DemangleString(name)).first->second;
}

}  // namespace inprof::internal
