// perf.log as perfanno.nvim reads it (each frame "symbol /path:line"), written and read back.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_PERF_LOG_H_
#define INPROF_PERF_LOG_H_

#include <ostream>
#include <string>
#include <string_view>

#include "inprof/formats.h"
#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Writes one event of a profile. Never throws on a well-formed profile.
void WritePerfLog(const Profile& profile, const ExportOptions& options, std::ostream& out);

// perf.log as perfanno.nvim reads it (each frame "symbol /path:line") into a one-event profile.
Status ReadPerfLog(std::string_view text, const std::string& name, Profile* out);

}  // namespace inprof

#endif  // INPROF_PERF_LOG_H_
