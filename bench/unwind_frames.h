#ifndef INPROF_BENCH_UNWIND_FRAMES_H_
#define INPROF_BENCH_UNWIND_FRAMES_H_

#include <functional>

namespace inprof::bench {

using FrameCallback = std::function<void()>;

// Calls `at_bottom` about `depth` frames below the caller.
void RunAtDepth(int depth, const FrameCallback& at_bottom);

}  // namespace inprof::bench

#endif  // INPROF_BENCH_UNWIND_FRAMES_H_
