// The result of a control-path operation: ok, or a code a program can test and a message a
// user can act on. Shared by every component (the exporters, the runtime's configuration,
// HTTP and file writing), so it depends on nothing but the standard library.
//
// Thread-safety: a plain value.
#ifndef INPROF_STATUS_H_
#define INPROF_STATUS_H_

#include <cstdint>
#include <string>
#include <utility>

namespace inprof {

// What went wrong, for callers that decide by it. The message says the rest; code that
// decides never reads the message.
enum class StatusCode : uint8_t {
  kOk,
  kUnknown,          // a failure no caller distinguishes (Status::Error)
  kInvalidArgument,  // bad configuration, URL, label, input text
  kAlreadyExists,    // a file that must not be replaced is there
  kNotFound,         // a file, event or resource that is not there
  kUnavailable,      // the system refused (no perf_event, no timers, no thread)
  kIo,               // reading or writing a file or socket failed
};

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message, StatusCode code = StatusCode::kUnknown) {
    return Status(code == StatusCode::kOk ? StatusCode::kUnknown : code, std::move(message));
  }
  static Status InvalidArgument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status AlreadyExists(std::string message) {
    return Status(StatusCode::kAlreadyExists, std::move(message));
  }
  static Status NotFound(std::string message) {
    return Status(StatusCode::kNotFound, std::move(message));
  }
  static Status Unavailable(std::string message) {
    return Status(StatusCode::kUnavailable, std::move(message));
  }
  static Status Io(std::string message) { return Status(StatusCode::kIo, std::move(message)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace inprof

#endif  // INPROF_STATUS_H_
