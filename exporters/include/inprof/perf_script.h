// Reading `perf script` and `perf report` output into a profile.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_PERF_SCRIPT_H_
#define INPROF_PERF_SCRIPT_H_

#include <string>
#include <string_view>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// `perf script` output (default fields, or any -F set with time and event; `-F +srcline`
// lines and `--inline` frames understood) into a profile with one event per perf event
// name. Weight is the period when printed, else 1 per sample. Identical stacks are merged.
Status ReadPerfScript(std::string_view text, const std::string& name, Profile* out);
// `perf report --no-children -g folded,0,caller,srcline,count --stdio` output: one event
// per "# Samples: N of event 'E'" section, weights in samples.
Status ReadPerfReport(std::string_view text, const std::string& name, Profile* out);
// Content sniffing for the readers above (the first non-comment line, the comment header).
bool LooksLikePerfScript(std::string_view text);
bool LooksLikePerfReport(std::string_view text);

}  // namespace inprof

#endif  // INPROF_PERF_SCRIPT_H_
