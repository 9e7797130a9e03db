// Labels: key/value context a program sets on its threads (inprof_label_set), carried by every
// sample the thread takes.
//
// Each distinct set of labels is interned once, for the life of the process, into a table of
// sets; a thread's current set is a number (its id, 0 for no labels) that the signal handler
// reads (ThreadLabelSet, signal_handler.h) and stores with the sample: no lock, no allocation,
// no string in the handler. Setting a label moves the thread from one set to another: the
// move is looked up in a small per-thread cache (a program sets the same few labels over and
// over), and only a move never made before on this thread takes the table's lock.
//
// Bounds: kMaxLabelsPerSet labels on a thread, keys of at most kMaxLabelKey bytes
// ([A-Za-z_][A-Za-z0-9_.]*), values of at most kMaxLabelValue bytes (no control characters),
// kMaxLabelSets distinct sets and kMaxLabelBytes of label text in the process. A move that would
// need a set past those bounds puts the thread in the overflow set ("[overflow]" = "label sets"),
// counted, so its samples are still labelled as not what the program asked.
//
// Thread-safety: every function is thread-safe. Not async-signal-safe (the handler uses
// ThreadLabelSet only).
#ifndef INPROF_SDK_LABELS_H_
#define INPROF_SDK_LABELS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof::internal {

inline constexpr size_t kMaxLabelsPerSet = 16;
inline constexpr size_t kMaxLabelKey = 64;
inline constexpr size_t kMaxLabelValue = 1024;
inline constexpr size_t kMaxLabelSets = 4096;
inline constexpr size_t kMaxLabelBytes = size_t{1} << 20;
// The set a thread is put in when its labels would pass the bounds.
inline constexpr uint32_t kOverflowLabelSet = 1;

// Sets `key` to `value` (value nullptr: removes `key`) on the calling thread. A bad key or
// value is kInvalidArgument and leaves the thread's labels as they were; kUnavailable: the
// bounds are passed and the thread is in the overflow set. The ok path allocates nothing.
Status SetThreadLabel(const char* key, const char* value);
// Removes every label of the calling thread.
void ClearThreadLabels();
// The calling thread's set, and putting it back (a scope guard's restore). An id that was
// never handed out is refused (false).
uint32_t CurrentThreadLabels();
bool RestoreThreadLabels(uint32_t id);

// The labels of set `id`, sorted by key (empty for 0 or an unknown id).
std::vector<Label> LabelSetOf(uint32_t id);

struct LabelStats {
  uint64_t sets = 0;       // distinct sets interned (the overflow set not counted)
  uint64_t overflows = 0;  // moves that ended in the overflow set
};
LabelStats LabelStatsNow();

}  // namespace inprof::internal

#endif  // INPROF_SDK_LABELS_H_
