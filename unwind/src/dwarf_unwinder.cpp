// Backend selection for DwarfUnwinder and the names of stop reasons.
#include <memory>

#include "backends.h"
#include "inprof/dwarf_unwind.h"

namespace inprof {

StatusOr<std::unique_ptr<DwarfUnwinder>> DwarfUnwinder::Create(DwarfBackend backend) {
  switch (backend) {
    case DwarfBackend::kLibunwind:
      return internal::CreateLibunwindUnwinder();
    case DwarfBackend::kLibdwfl:
      return internal::CreateLibdwflUnwinder();
  }
  return Status::InvalidArgument("unknown DWARF unwinding backend");
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
