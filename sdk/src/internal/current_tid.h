// The calling thread's kernel id, by a raw system call. Signal-safe header.
#ifndef INPROF_SDK_CURRENT_TID_H_
#define INPROF_SDK_CURRENT_TID_H_

#include <cstdint>

namespace inprof::internal {

// Async-signal-safe.
int32_t CurrentTidRaw();

}  // namespace inprof::internal

#endif  // INPROF_SDK_CURRENT_TID_H_
