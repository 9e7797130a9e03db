// inprof — C++ wrapper over the C API in <inprof/inprof.h>.
//
//   inprof::Profiler profiler("output=out.folded,perf.log,frequency=250");
//   if (!profiler.ok()) std::cerr << profiler.error() << "\n";
//   run_workload();
//   profiler.Dump("partial.folded");
//   // the destructor stops profiling and writes the configured outputs
//
// No exceptions: failures are reported through ok()/error() and return codes.
// Thread-safety: as the C API; one Profiler object should be used from one thread.
#ifndef INPROF_INPROF_HPP_
#define INPROF_INPROF_HPP_

#include <string>

#include "inprof/inprof.h"

namespace inprof {

class Profiler {
 public:
  // Starts profiling with `config` (see inprof.h), or from the environment when null.
  explicit Profiler(const char* config = nullptr) : status_(inprof_start(config)) {
    if (status_ != INPROF_OK) error_ = inprof_last_error();
  }
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler() { Stop(); }

  bool ok() const { return status_ == INPROF_OK; }
  int status() const { return status_; }
  const std::string& error() const { return error_; }

  // Writes the profile so far (after Stop, the stopped profile, until the next start); null
  // writes the configured outputs.
  int Dump(const char* outputs = nullptr) {
    int rc = inprof_dump(outputs);
    if (rc != INPROF_OK) error_ = inprof_last_error();
    return rc;
  }

  // Stops profiling and writes the configured outputs. Idempotent.
  int Stop() {
    if (status_ != INPROF_OK || stopped_) return INPROF_OK;
    stopped_ = true;
    int rc = inprof_stop();
    if (rc != INPROF_OK) error_ = inprof_last_error();
    return rc;
  }

 private:
  int status_;
  bool stopped_ = false;
  std::string error_;
};

// Sets a label on the calling thread for the guard's scope; the destructor puts the thread's
// labels back as they were (nested guards unwind in order).
//
//   void Handle(const Request& r) {
//     inprof::ScopedLabel label("endpoint", r.path.c_str());
//     ...
//   }
class ScopedLabel {
 public:
  ScopedLabel(const char* key, const char* value)
      : saved_(inprof_labels_save()), status_(inprof_label_set(key, value)) {}
  ScopedLabel(const ScopedLabel&) = delete;
  ScopedLabel& operator=(const ScopedLabel&) = delete;
  ~ScopedLabel() { inprof_labels_restore(saved_); }

  bool ok() const { return status_ == INPROF_OK; }

 private:
  inprof_labels_t saved_;
  int status_;
};

}  // namespace inprof

#endif  // INPROF_INPROF_HPP_
