// Frame text for perfanno.nvim's perf.log. Exposed for tests; the writer is
// inprof::WritePerfLog.
#ifndef INPROF_EXPORTERS_PERF_LOG_TEXT_H_
#define INPROF_EXPORTERS_PERF_LOG_TEXT_H_

#include <optional>
#include <string>
#include <string_view>

#include "inprof/profile.h"

namespace inprof::internal {

// A function name made safe for perfanno: no ';', no '/', no ':' followed by a digit, no
// control characters, no leading or trailing spaces. May be empty. Not async-signal-safe.
std::string PerfLogSymbol(std::string_view function);

// True when perfanno can read `file` back intact as a frame's path. Not async-signal-safe.
bool IsPerfLogPath(std::string_view file);

// "symbol /abs/path:LINE" (or "/abs/path:LINE" when the name is empty), or nullopt when the
// frame has to be left out of perf.log. Not async-signal-safe.
std::optional<std::string> PerfLogFrameText(const Frame& frame);

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_PERF_LOG_TEXT_H_
