// The window/export pipeline of continuous mode, and the one path that writes a profile to
// its outputs.
//
// Where a window goes: the collector thread closes it (WindowClock::Close, under the
// collector's lock) and hands it over with Push; the exporter thread ("inprof-export", owned
// here) symbolizes it through the session's builder, writes every output under a
// time-stamped name (never replacing a file: another process may share the directory),
// keeps the newest `keep` files per output and tells the listeners (the push client).
//
// Concurrency contract: Push, Start and Finish are called by the session's owner threads
// (Push by the collector thread or by Stop once the collector has ended); AddListener before
// Start. mu_ guards the queue and the summary state; everything else is the exporter
// thread's (or Finish's caller's, when no thread could be started). Not async-signal-safe.
#ifndef INPROF_SDK_EXPORT_PIPELINE_H_
#define INPROF_SDK_EXPORT_PIPELINE_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collector/stack_table.h"
#include "config/config.h"
#include "inprof/formats.h"
#include "inprof/raw_profile.h"
#include "inprof/thread_annotations.h"

namespace inprof::internal {

// A profile over [start_unix_ns, end_unix_ns), symbolized: one window of continuous mode, or
// what a tap collected.
struct Window {
  Profile profile;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  uint64_t sequence = 0;  // 0, 1, 2, ... per session (taps: 0)
};

// A closed window on its way to the exporter thread: raw stacks, not yet symbolized.
struct RawWindow {
  StackTable table{0, 0};
  Health health;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  int64_t duration_ns = 0;
  uint64_t sequence = 0;
};

// The files an output path becomes, with the event each holds: folded stacks and perf.log
// hold one event, so with several events each gets its own file (out.cpu.folded,
// perf.wall.log); the annotation JSON and pprof carry every event in one file.
std::vector<std::pair<std::string, size_t>> FilesFor(const Config& config,
                                                      const std::string& path);

// Writes one file of an output: `file` in `format`, with `options` (the event it holds).
using FileWriter =
    std::function<Status(const std::string& file, Format format, const ExportOptions& options)>;

// Writes a raw profile (docs/raw-profile.md) to `file` atomically; `complete` false leaves out
// the `end` line (the marker a session writes at start, MarkRawOutputsStarted). Raw files are
// a hand-over, not a record: they are not synced to disk, which would cost every short
// process of a recording a disk flush. `mode`: the file's permission bits (output_mode).
Status WriteRawFile(const RawProfile& raw, const std::string& file, bool complete, int mode);

// Every output of `profile`, annotation JSON last so that its health block reports how long
// the other writes took (write_seconds is updated before each file, from `symbolized_ns`,
// monotonic). Every file is attempted; the status joins the failures' messages. Each file's
// options carry config.output_mode.
Status WriteOutputs(Profile& profile, const Config& config,
                    const std::vector<std::string>& outputs, int64_t symbolized_ns,
                    const FileWriter& write);

// The current window of continuous mode: when it started, when the next one is due, and the
// counters at its start. Under the session's data_mu_.
class WindowClock {
 public:
  void Start(int64_t unix_ns, int64_t monotonic_ns, double length_seconds);
  bool Due(int64_t monotonic_ns) const { return monotonic_ns >= next_monotonic_ns_; }
  // Closes the window at `now`: `health` (session totals) becomes the window's own counts,
  // and `out` gets its span and sequence number. The next window starts now.
  void Close(int64_t now_monotonic_ns, int64_t now_unix_ns, Health* health, RawWindow* out);
  // Session totals in `health` made the current window's (for a snapshot mid-window).
  void SinceStart(Health* health) const;
  int64_t start_unix_ns() const { return start_unix_ns_; }
  int64_t start_monotonic_ns() const { return start_monotonic_ns_; }
  uint64_t closed() const { return sequence_; }

 private:
  int64_t length_ns_ = 0;
  int64_t start_unix_ns_ = 0;
  int64_t start_monotonic_ns_ = 0;
  int64_t next_monotonic_ns_ = 0;
  uint64_t sequence_ = 0;
  uint64_t base_samples_ = 0;
  uint64_t base_dropped_ = 0;
  uint64_t base_truncated_ = 0;
  uint64_t base_broken_ = 0;
};

class ExportPipeline {
 public:
  // Symbolizes a raw window's table (the session's profile builder).
  using Builder = std::function<Profile(const StackTable& table, Health health,
                                        int64_t start_unix_ns, int64_t duration_ns)>;
  ExportPipeline(const Config& config, Builder build);
  ~ExportPipeline();
  ExportPipeline(const ExportPipeline&) = delete;
  ExportPipeline& operator=(const ExportPipeline&) = delete;

  // Called on the exporter thread after a window's files are written, for every window in
  // order. Must not block for long (the push client only enqueues).
  void AddListener(std::function<void(const Window&)> listener);
  // Starts the exporter thread; returns its tid, or 0 (then Finish exports inline).
  pid_t Start();
  // Queues a closed window. Two waiting means the exporter cannot keep up: the oldest
  // waiting one is dropped, counted, rather than let the queue grow.
  void Push(RawWindow window);
  // Exports what is queued and ends the thread.
  void Finish();

  uint64_t windows_exported() const { return exported_.load(std::memory_order_relaxed); }
  // "windows: 3 of 4 written (1 dropped) ..." for the summary; `closed` windows in all.
  std::string SummaryLines(uint64_t closed);

 private:
  static void* Entry(void* self);
  void Main();
  void Export(RawWindow& raw);
  // A window whose export threw: counted, the first reported. Throws nothing.
  void NoteFailedWindow(uint64_t sequence, const char* what) noexcept;
  // Writes one window file under its stamped name; keeps the newest `keep` per output.
  Status WriteWindowFile(const Profile& profile, Format format, const std::string& file,
                         const std::string& stamp, ExportOptions options,
                         std::vector<std::string>* written);

  const Config& config_;
  Builder build_;
  std::vector<std::function<void(const Window&)>> listeners_;

  Mutex mu_;
  CondVar cv_;
  std::deque<RawWindow> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::string> last_files_ GUARDED_BY(mu_);
  std::string first_error_ GUARDED_BY(mu_);
  uint64_t errors_ GUARDED_BY(mu_) = 0;
  std::string first_failure_ GUARDED_BY(mu_);  // the first window whose export threw
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> failed_{0};  // windows whose export threw (NoteFailedWindow)

  // The exporter thread's own.
  std::map<std::string, std::deque<std::string>> files_;  // written per output, for keep
  std::string last_stamp_;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_EXPORT_PIPELINE_H_
