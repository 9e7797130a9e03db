// speedscope's JSON file format, written and read back.
#ifndef INPROF_SPEEDSCOPE_H_
#define INPROF_SPEEDSCOPE_H_

#include <ostream>
#include <string>
#include <string_view>

#include "inprof/formats.h"
#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one "sampled"
// profile per thread, its samples in time order, frames with file and line; inprof's own
// fields (exact times, tids, labels) ride along where speedscope ignores them
// (docs/speedscope.md). Deterministic. Not async-signal-safe.
void WriteSpeedscope(const Profile& profile, const ExportOptions& options, std::ostream& out);
// Reads a speedscope file ("sampled" and "evented" profiles; inprof's fields when present)
// into a profile with a timeline: one event, samples per thread (profile), times from
// inprof's fields or else from the running sum of weights.
Status ReadSpeedscope(std::string_view text, const std::string& name, Profile* out);
bool LooksLikeSpeedscope(std::string_view text);

}  // namespace inprof

#endif  // INPROF_SPEEDSCOPE_H_
