// Selecting the samples a view looks at: a time range, threads, labels; and frames a view
// leaves out of every stack (hide).
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_PROFILE_FILTER_H_
#define INPROF_PROFILE_FILTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Which samples a viewer command looks at. Empty fields select everything.
struct ProfileFilter {
  std::optional<int64_t> from_ns;    // timeline: samples at or after (ns since the start)
  std::optional<int64_t> to_ns;      // ... and before
  std::vector<std::string> threads;  // a thread's name or decimal tid; any of them
  std::vector<Label> labels;         // every one must be set on the sample
  // ECMAScript regular expressions (std::regex_search, case-sensitive): a frame whose
  // function name (Frame::function, the demangled name in full) matches any of them is
  // removed from every stack, and its weight lands on the next frame toward the root (pprof's
  // -hide). Selects no samples: every event's total stays.
  std::vector<std::string> hide;
  // How views show a name when not in full (the viewer's short C++ names: no return type,
  // template arguments or parameters). When set, a hide pattern that matches a name in that
  // form hides the frame too: "^std::" then also hides "void std::sort<int*>(int*, int*)",
  // whose full name starts with its return type.
  std::function<std::string(std::string_view)> short_name;
  bool empty() const {
    return !from_ns && !to_ns && threads.empty() && labels.empty() && hide.empty();
  }
};
// `in` restricted to `filter`: samples outside it are removed, weights and event totals are
// recomputed (from the timeline when a time range is given), hidden frames are taken out of
// the stacks. Fails, naming the profile, when the filter needs what the profile lacks (a time
// range without a timeline), and for a hide pattern that is not a regular expression.
//
// Hiding: a kept frame of an inlined chain whose native frame was hidden becomes a native
// frame (it is now the first of its machine frame). A stack whose every frame is hidden keeps
// one synthetic frame "[hidden]", so its weight stays visible and counted. Samples whose
// stacks become equal (same thread and labels too) are merged into one.
Status FilterProfile(const Profile& in, const ProfileFilter& filter, Profile* out);

// Ok, or kInvalidArgument saying why `pattern` is not a regular expression hide can use
// ("'std::(' is not a regular expression: Mismatched '(' and ')' ..."), for callers that
// check patterns before loading a profile.
Status CheckHidePattern(const std::string& pattern);

// `in` with only the events `events` (indices into in.events, in the order given): samples
// with no weight in any of them are removed, the timeline keeps their entries. Frames,
// threads, labels and health are kept as they are.
Profile KeepEvents(const Profile& in, const std::vector<size_t>& events);

}  // namespace inprof

#endif  // INPROF_PROFILE_FILTER_H_
