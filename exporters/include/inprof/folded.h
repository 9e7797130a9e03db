// Folded stacks (flame-graph input): "a;b;c 12" per stack, written and read back.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_FOLDED_H_
#define INPROF_FOLDED_H_

#include <ostream>
#include <string>
#include <string_view>

#include "inprof/formats.h"
#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Writers for one event of a profile. They never throw on well-formed profiles.
void WriteFolded(const Profile& profile, const ExportOptions& options, std::ostream& out);

// Folded stacks ("a;b;c 12", frames optionally "function (file:line)", "_[i]" marks inlined)
// into a one-event profile ("samples").
Status ReadFolded(std::string_view text, const std::string& name, Profile* out);

}  // namespace inprof

#endif  // INPROF_FOLDED_H_
