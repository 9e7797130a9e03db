// Progress of a long load on stderr: "inprof: reading FILE: 45% of 270 MB", then
// "inprof: parsing FILE (270 MB) 2.5 s", redrawn in place and erased when the load ends.
#ifndef INPROF_VIEWER_PROGRESS_H_
#define INPROF_VIEWER_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "inprof/thread_annotations.h"

namespace inprof::viewer {

// Whether progress may be shown at all: stderr is a terminal and INPROF_PROGRESS is not "0";
// INPROF_PROGRESS=1 shows it on any stderr, at once (scripts and tests).
bool ProgressAllowed();

// A line on stderr, drawn by a thread of its own so the readers need no hooks. It appears
// only once the load has run for half a second, or at once for files over 32 MB (or when
// forced), and is erased by the destructor. Thread-safe: the setters may be called from the
// loading thread while the drawing thread runs. Not async-signal-safe.
class Progress {
 public:
  Progress(std::string path, uint64_t size, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void SetRead(uint64_t bytes) { read_.store(bytes, std::memory_order_relaxed); }
  void SetParsing() { parsing_.store(true, std::memory_order_relaxed); }

 private:
  void Run();
  void Draw(double seconds);

  const std::string path_;
  const uint64_t size_;
  std::atomic<uint64_t> read_{0};
  std::atomic<bool> parsing_{false};
  bool drawn_ = false;  // the drawing thread's; read by the destructor after the join
  Mutex mutex_;
  CondVar wake_;
  bool stop_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_PROGRESS_H_
