// From raw profiles (raw_profile.h) to the symbolized Profile the exporters write.
//
// The runtime symbolizes its own stacks through SymbolizeRawProfile with a live Symbolizer;
// `inprof symbolize-profile` and the recorder do the same later, with a Symbolizer set up
// from the module map the raw profile recorded (and then merge the processes' profiles with
// MergeProfiles, inprof/merge.h).
//
// Thread-safety: reentrant; the Symbolizer is not thread-safe, so the caller serialises
// its use. Not async-signal-safe.
#ifndef INPROF_SYMBOLIZE_RAW_H_
#define INPROF_SYMBOLIZE_RAW_H_

#include <string>
#include <vector>

#include "inprof/profile.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"

namespace inprof {

// Symbolizes `raw` with `symbolizer`, used as given: the caller refreshes a live one or sets
// an offline one up from raw.modules; this function neither refreshes nor replaces modules.
//
// - Each distinct address becomes its chain of frames (outermost first, inlined frames
//   before the real one they are inlined into), created once, in the order stacks first
//   meet it; `Frame::address` is the address looked up.
// - Lua tags become raw.lua_frames[index] (a synthetic "[lua]" frame when the index is out
//   of range); kRawTruncated and kRawOverflow become synthetic "[truncated]" / "[overflow]"
//   frames; a thread tag sets Sample::tid and a labels tag Sample::labels (its payload, 1 +
//   the index into label_sets; 0 when out of range), neither adding a frame.
// - Samples are root first, one per raw stack, in order, with the stack's weights.
// - label_sets are raw's. The timeline is raw's (a timed sample's stack index is its sample
//   index), without the timed samples that name no stack or event, in time order (stably
//   sorted when raw's was not: the runtime drains one thread after another).
// - threads: raw.threads as ThreadInfo, ordered by tid (stable).
// - meta, events and health are raw's; each event's total_weight is the sum of its samples'
//   weights (so a profile read from a cut file has totals that match its samples);
//   health.unknown_frames counts frames created in no module; the name of a health thread
//   whose tid raw.threads lists is the name found there, when that name is not empty.
// - modules: the symbolizer's modules (Symbolizer::Modules) that some frame is in.
//
// The result equals what the runtime's profile builder made from the same stacks before raw
// profiles existed. Not async-signal-safe.
Profile SymbolizeRawProfile(const RawProfile& raw, Symbolizer& symbolizer);

}  // namespace inprof

#endif  // INPROF_SYMBOLIZE_RAW_H_
