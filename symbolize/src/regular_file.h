// Opening object files whose names come from elsewhere: a raw profile's module map (which
// may come from another machine, or from anyone), the debug directories searched for them,
// and the libraries a running process has loaded.
#ifndef INPROF_SYMBOLIZE_REGULAR_FILE_H_
#define INPROF_SYMBOLIZE_REGULAR_FILE_H_

#include "inprof/status.h"

namespace inprof::internal {

// Opens `path` read-only if it is a regular file: the fd, or a Status whose message says why
// in a few words, to follow the path: strerror(errno) (kNotFound for a missing file, else
// kIo), or "not a regular file (a FIFO)" (kInvalidArgument). The open itself is
// O_NONBLOCK | O_NOCTTY | O_CLOEXEC and the type is checked with fstat(2) before anything is
// read: a FIFO opened without O_NONBLOCK waits for a writer that may never come, a terminal
// could become the controlling one, and a device would be read forever. O_NONBLOCK has no
// effect on reads of a regular file, so it stays set. Not async-signal-safe.
StatusOr<int> OpenRegularFile(const char* path);

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_REGULAR_FILE_H_
