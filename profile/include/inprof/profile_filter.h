// Selecting the samples a view looks at: a time range, threads, labels.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_PROFILE_FILTER_H_
#define INPROF_PROFILE_FILTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Which samples a viewer command looks at. Empty fields select everything.
struct ProfileFilter {
  std::optional<int64_t> from_ns;  // timeline: samples at or after (ns since the start)
  std::optional<int64_t> to_ns;    // ... and before
  std::vector<std::string> threads;  // a thread's name or decimal tid; any of them
  std::vector<Label> labels;         // every one must be set on the sample
  bool empty() const { return !from_ns && !to_ns && threads.empty() && labels.empty(); }
};
// `in` restricted to `filter`: samples outside it are removed, weights and event totals are
// recomputed (from the timeline when a time range is given). Fails, naming the profile, when
// the filter needs what the profile lacks (a time range without a timeline).
Status FilterProfile(const Profile& in, const ProfileFilter& filter, Profile* out);

// `in` with only the events `events` (indices into in.events, in the order given): samples
// with no weight in any of them are removed, the timeline keeps their entries. Frames,
// threads, labels and health are kept as they are.
Profile KeepEvents(const Profile& in, const std::vector<size_t>& events);

}  // namespace inprof

#endif  // INPROF_PROFILE_FILTER_H_
