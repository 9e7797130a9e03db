// The window/export pipeline and the one output-writing path (see export_pipeline.h).
// Control path.
#include "session/export_pipeline.h"
#include "signal/raw_syscall.h"

#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <optional>

#include "inprof/atomic_write.h"
#include "inprof/formats.h"
#include "signal/signal_handler.h"
#include "threads/thread_registry.h"
#include "threads/thread_start.h"

namespace inprof::internal {
namespace {

// The kernel's clock, as the handler reads it (raw_syscall.h).
int64_t MonotonicNs() { return ClockNsRaw(CLOCK_MONOTONIC); }

// 20261122T031500Z
std::string UtcStamp(int64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1000000000);
  struct tm tm;
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

}  // namespace

std::vector<std::pair<std::string, size_t>> FilesFor(const Config& config,
                                                      const std::string& path) {
  std::optional<Format> format = FormatFromPath(path);
  // A raw profile holds every event too: one per event would hand the recorder the same
  // process twice (its samples counted twice in the tree profile).
  const bool all_events = format && (*format == Format::kAnnotationJson ||
                                     *format == Format::kPprof || *format == Format::kRaw);
  if (config.events.size() <= 1 || all_events) {
    return {{path, 0}};
  }
  std::vector<std::pair<std::string, size_t>> files;
  for (size_t e = 0; e < config.events.size(); ++e) {
    files.emplace_back(PathForEvent(path, config.events[e]), e);
  }
  return files;
}

Status WriteRawFile(const RawProfile& raw, const std::string& file, bool complete, int mode) {
  std::ostringstream out;
  WriteRawProfile(raw, out);
  std::string text = std::move(out).str();
  if (!complete && text.ends_with("end\n")) text.resize(text.size() - 4);
  return WriteFileAtomically(file, text, true, false, mode);
}

Status WriteOutputs(Profile& profile, const Config& config,
                    const std::vector<std::string>& outputs, int64_t symbolized_ns,
                    const FileWriter& write) {
  std::vector<std::string> ordered;
  for (int json = 0; json < 2; ++json) {
    for (const std::string& path : outputs) {
      if ((FormatFromPath(path) == Format::kAnnotationJson) == (json == 1)) ordered.push_back(path);
    }
  }
  std::string failures;
  for (const std::string& path : ordered) {
    std::optional<Format> format = FormatFromPath(path);
    for (const auto& [file, event] : FilesFor(config, path)) {
      ExportOptions options;
      options.event = event;
      options.mode = static_cast<int>(config.output_mode);
      options.folded_root = config.folded_root;
      profile.health.write_seconds = static_cast<double>(MonotonicNs() - symbolized_ns) / 1e9;
      Status s = format ? write(file, *format, options)
                        : Status::InvalidArgument("unknown output format for '" + file + "'");
      if (!s.ok()) {
        if (!failures.empty()) failures += "; ";
        failures += s.message();
      }
    }
  }
  return failures.empty() ? Status::Ok() : Status::Error(failures);
}

void WindowClock::Start(int64_t unix_ns, int64_t monotonic_ns, double length_seconds) {
  length_ns_ = static_cast<int64_t>(length_seconds * 1e9);
  start_unix_ns_ = unix_ns;
  start_monotonic_ns_ = monotonic_ns;
  next_monotonic_ns_ = monotonic_ns + length_ns_;
}

void WindowClock::Close(int64_t now_monotonic_ns, int64_t now_unix_ns, Health* health,
                        RawWindow* out) {
  // Per-window counts: what happened since the window opened.
  const uint64_t dropped = health->dropped;
  health->samples -= base_samples_;
  health->dropped -= base_dropped_;
  health->truncated -= base_truncated_;
  health->broken -= base_broken_;
  base_samples_ += health->samples;
  base_dropped_ = dropped;
  base_truncated_ += health->truncated;
  base_broken_ += health->broken;
  out->start_unix_ns = start_unix_ns_;
  out->end_unix_ns = now_unix_ns;
  out->duration_ns = now_monotonic_ns - start_monotonic_ns_;
  out->sequence = sequence_++;
  start_unix_ns_ = now_unix_ns;
  start_monotonic_ns_ = now_monotonic_ns;
  next_monotonic_ns_ += length_ns_;
  // Behind by more than a window (a stopped process, a starved collector): restart the grid.
  if (next_monotonic_ns_ <= now_monotonic_ns) next_monotonic_ns_ = now_monotonic_ns + length_ns_;
}

void WindowClock::SinceStart(Health* health) const {
  health->samples -= base_samples_;
  health->truncated -= base_truncated_;
  health->broken -= base_broken_;
}

ExportPipeline::ExportPipeline(const Config& config, Builder build)
    : config_(config), build_(std::move(build)) {}

ExportPipeline::~ExportPipeline() { Finish(); }

void ExportPipeline::AddListener(std::function<void(const Window&)> listener) {
  listeners_.push_back(std::move(listener));
}

pid_t ExportPipeline::Start() {
  const pid_t tid = StartInternalThread(&thread_, &ExportPipeline::Entry, this);
  running_ = tid != 0;
  return tid;
}

void ExportPipeline::Push(RawWindow window) {
  {
    MutexLock lock(&mu_);
    while (queue_.size() >= 2) {
      queue_.pop_front();
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    queue_.push_back(std::move(window));
  }
  cv_.NotifyOne();
}

void ExportPipeline::Finish() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (running_) {
    pthread_join(thread_, nullptr);
    running_ = false;
  } else {
    Main();  // no thread: export here
  }
}

void* ExportPipeline::Entry(void* self) {
  pthread_setname_np(pthread_self(), "inprof-export");
  // Main contains each window's failure; this is for the loop itself (its lock), since an
  // exception leaving a thread's entry function ends the program.
  try {
    static_cast<ExportPipeline*>(self)->Main();
  } catch (...) {
    CountContained(ContainedAt::kExporter);
  }
  return nullptr;
}

void ExportPipeline::Main() {
  ProfilerWorkScope work;
  for (;;) {
    RawWindow window;
    {
      MutexLock lock(&mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      window = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      Export(window);
    } catch (const std::exception& e) {
      // Out of memory while symbolizing or encoding, most likely: this window is lost
      // (counted and named in the summary), the next one is tried.
      NoteFailedWindow(window.sequence, e.what());
    } catch (...) {
      NoteFailedWindow(window.sequence, "unknown error");
    }
  }
}

void ExportPipeline::NoteFailedWindow(uint64_t sequence, const char* what) noexcept {
  CountContained(ContainedAt::kExporter);
  failed_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  if (!first_failure_.empty()) return;
  try {
    first_failure_ = std::string("window ") + std::to_string(sequence) + ": " + what;
  } catch (...) {
  }
  if (!config_.quiet) {
    std::fprintf(stderr, "inprof: window %" PRIu64 " not exported: %s\n", sequence, what);
  }
}

void ExportPipeline::Export(RawWindow& raw) {
  Window window;
  window.start_unix_ns = raw.start_unix_ns;
  window.end_unix_ns = raw.end_unix_ns;
  window.sequence = raw.sequence;
  if (const uint64_t dropped = dropped_.load(std::memory_order_relaxed)) {
    raw.health.warnings.push_back(std::to_string(dropped) +
                                  " windows were dropped so far: writing them took longer than "
                                  "the window; raise INPROF_WINDOW or use fewer outputs");
  }
  const int64_t begin_ns = MonotonicNs();
  window.profile = build_(raw.table, std::move(raw.health), raw.start_unix_ns, raw.duration_ns);
  const int64_t symbolized_ns = MonotonicNs();
  window.profile.health.symbolize_seconds = static_cast<double>(symbolized_ns - begin_ns) / 1e9;
  raw.table = StackTable(0, 0);  // its memory back before writing

  // out.folded -> out.20261122T031500Z.folded; windows shorter than a second can start in the
  // same second, so they carry their sequence number too (out.20261122T031500Z-17.folded).
  // So does a window that starts in the same second as the one before: when the collector
  // rotated late, the window after it is short (the cadence stays on the schedule).
  std::string stamp = UtcStamp(window.start_unix_ns);
  const bool same_second = stamp == last_stamp_;
  last_stamp_ = stamp;
  if (config_.window < 1 || same_second) stamp += "-" + std::to_string(window.sequence);
  std::vector<std::string> written;
  WriteOutputs(window.profile, config_, config_.outputs, symbolized_ns,
               [&](const std::string& file, Format format, const ExportOptions& options) {
                 Status s = WriteWindowFile(window.profile, format, file, stamp, options, &written);
                 if (!s.ok()) {
                   MutexLock lock(&mu_);
                   if (errors_++ == 0) {
                     first_error_ = s.message();
                     if (!config_.quiet) {
                       std::fprintf(stderr, "inprof: window %" PRIu64 ": %s\n", window.sequence,
                                    s.message().c_str());
                     }
                   }
                 }
                 return s;
               });
  {
    MutexLock lock(&mu_);
    last_files_ = std::move(written);
  }
  exported_.fetch_add(1, std::memory_order_relaxed);
  for (const auto& listener : listeners_) {
    try {
      listener(window);
    } catch (...) {
      // A listener's failure (out of memory while encoding) must not end the exporter.
    }
  }
}

Status ExportPipeline::WriteWindowFile(const Profile& profile, Format format,
                                       const std::string& file, const std::string& stamp,
                                       ExportOptions options, std::vector<std::string>* written) {
  // Never replace an existing file: in a shared directory it may be another process's.
  options.replace = false;
  std::string name = PathForWindow(file, stamp);
  Status s = WriteProfileFile(profile, format, name, options);
  if (s.code() == StatusCode::kAlreadyExists) {
    name = PathForWindow(file, stamp + "." + std::to_string(getpid()));
    s = WriteProfileFile(profile, format, name, options);
  }
  if (!s.ok()) return s;
  written->push_back(name);
  // Keep the newest `keep` files of this output; only files this process wrote are removed.
  std::deque<std::string>& files = files_[file];
  files.push_back(name);
  while (files.size() > config_.keep) {
    unlink(files.front().c_str());
    files.pop_front();
  }
  return s;
}

std::string ExportPipeline::SummaryLines(uint64_t closed) {
  MutexLock lock(&mu_);
  std::string line = "inprof: windows: " + std::to_string(windows_exported()) + " of " +
                     std::to_string(closed) + " written (" +
                     std::to_string(dropped_.load(std::memory_order_relaxed)) + " dropped";
  if (const uint64_t failed = failed_.load(std::memory_order_relaxed)) {
    line += ", " + std::to_string(failed) + " failed";
  }
  line += "), the newest " + std::to_string(config_.keep) + " kept per output";
  if (!last_files_.empty()) {
    line += "; last: ";
    for (size_t i = 0; i < last_files_.size(); ++i) line += (i ? "," : "") + last_files_[i];
  }
  if (errors_ != 0) {
    line += "\ninprof: error: " + std::to_string(errors_) +
            " window files not written; first: " + first_error_;
  }
  if (const uint64_t failed = failed_.load(std::memory_order_relaxed)) {
    line += "\ninprof: error: " + std::to_string(failed) +
            " windows could not be exported; first: " + first_failure_;
  }
  return line;
}

}  // namespace inprof::internal
