// Many processes' profiles merged into one: a recording's processes, symbolized one by one,
// become the one profile the user looks at.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_MERGE_H_
#define INPROF_MERGE_H_

#include <string>
#include <vector>

#include "inprof/profile.h"

namespace inprof {

// Concatenates processes' profiles into one. Each sample of profiles[i] gets a synthetic
// root frame named root_names[i] (FrameKind::kSynthetic, `function` = the name) before its
// frames; an empty name, or a profile past the end of `root_names`, gets none.
//
// - Frames are shared: equal frames (Frame::operator==) have one index.
// - Events are matched by name, in the order they are first met; a profile without an event
//   contributes weight 0 to it. Unit, period and frequency are the first profile's that has
//   the event. Totals are the sums of the merged samples' weights.
// - Health: the counters (samples, dropped, truncated, broken, overflow, threads_seen,
//   unknown_frames, overruns, symbol_cache_hits, symbol_cache_misses) and the export times
//   are summed; threads are concatenated, then ordered by tid (stable); warnings are kept,
//   each prefixed with "NAME: " (its profile's root name) when it has one; engine and
//   unwinder list each distinct value once, in order, joined by ", " (engine reasons by
//   "; "); requested_hz is the first nonzero; achieved_hz is the CPU-time-weighted mean over
//   profiles (threads' cpu_seconds), or the first nonzero when no profile has CPU time.
// - Modules: the union by (path, build_id); a module's entries (one per executable segment)
//   come from the first profile that has it.
// - Metadata: program, pid and start of the first profile; the duration spans from that
//   start to the latest end of any profile with a known start (start_time_ns != 0), and is
//   never shorter than the first profile's own.
// - Label sets are merged by value, in the order they are first met; each sample's labels
//   number is remapped (0 stays 0; a number past its profile's label_sets becomes 0).
// - Threads (ThreadInfo) are concatenated, each (tid, name) once, then ordered by tid
//   (stable): a tid two processes had in turn keeps both names.
// - Timelines: each timed sample points at its sample and event in the merged profile (those
//   naming no sample or event of their profile are dropped), and its time is moved from its
//   profile's start to the merged start (start_time_ns of profiles[i] minus that of
//   profiles[0], saturating; unchanged when either start is 0, i.e. unknown). The result is
//   in time order, stable: at equal times the earlier profile's, and within one profile its
//   own order. Times before the merged start are negative (a profile that started before
//   the first one).
//
// Not async-signal-safe.
//
// With `process_label` (a label key, e.g. "process"), every sample of a profile with a root
// name also gets the label process_label=ROOT_NAME (control characters turned into '?'),
// added to its own label set, so pprof's -tagfocus, `inprof top --by-label` and the other
// label-aware views can split the merged profile by process. A label of the same key the
// program set itself is kept instead.
Profile MergeProfiles(std::vector<Profile> profiles, const std::vector<std::string>& root_names,
                      const std::string& process_label = {});

}  // namespace inprof

#endif  // INPROF_MERGE_H_
