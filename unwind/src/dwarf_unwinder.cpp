// Backend selection for DwarfUnwinder and the names of stop reasons.
#include <memory>
#include <string>

#include "inprof/dwarf_unwind.h"
#include "backends.h"

namespace inprof {

std::unique_ptr<DwarfUnwinder> DwarfUnwinder::Create(DwarfBackend backend, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  switch (backend) {
    case DwarfBackend::kLibunwind:
      return internal::CreateLibunwindUnwinder(error);
    case DwarfBackend::kLibdwfl:
      return internal::CreateLibdwflUnwinder(error);
  }
  *error = "unknown DWARF unwinding backend";
  return nullptr;
}

const char* UnwindStopName(UnwindStop stop) {
  switch (stop) {
    case UnwindStop::kRoot:
      return "root";
    case UnwindStop::kTruncated:
      return "truncated";
    case UnwindStop::kNoUnwindInfo:
      return "no-unwind-info";
    case UnwindStop::kError:
      return "error";
    case UnwindStop::kDepthLimit:
      return "depth-limit";
    case UnwindStop::kNoStack:
      return "no-stack";
  }
  return "unknown";
}

}  // namespace inprof
