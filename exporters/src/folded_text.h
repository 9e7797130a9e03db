// Frame text for folded stacks. Exposed for tests; the writer is inprof::WriteFolded.
#ifndef INPROF_EXPORTERS_FOLDED_TEXT_H_
#define INPROF_EXPORTERS_FOLDED_TEXT_H_

#include <string>

#include "inprof/profile.h"

namespace inprof::internal {

// One frame as folded-stack text: the function name, or "function (file:line)" with
// `with_lines` (plus the "_[i]" hint on inlined frames). Never empty, never contains ';' or a
// control character, never ends in a number-like word. Not async-signal-safe.
std::string FoldedFrameText(const Frame& frame, bool with_lines);

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_FOLDED_TEXT_H_
