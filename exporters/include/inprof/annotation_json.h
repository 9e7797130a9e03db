// The annotation JSON (docs/annotation-json.md): per-line counts and heat levels for editors
// and the viewer, written and read back.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_ANNOTATION_JSON_H_
#define INPROF_ANNOTATION_JSON_H_

#include <ostream>
#include <string>
#include <string_view>

#include "inprof/annotations.h"
#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Writes the annotation JSON (docs/annotation-json.md) of every event of `profile`, with heat
// levels at the default threshold. Deterministic: equal profiles give identical bytes.
void WriteAnnotationJson(const Profile& profile, std::ostream& out);

void WriteAnnotationJson(const Annotations& annotations, std::ostream& out);

// Readers. `name` is used in error messages, which read "NAME:LINE: what was expected".
Status ReadAnnotationJson(std::string_view text, const std::string& name, Annotations* out);

}  // namespace inprof

#endif  // INPROF_ANNOTATION_JSON_H_
