// The result of a control-path operation: ok, or a code a program can test and a message a
// user can act on. Shared by every component (the exporters, the runtime's configuration,
// HTTP and file writing), so it depends on nothing but the standard library.
//
// Thread-safety: a plain value.
#ifndef INPROF_STATUS_H_
#define INPROF_STATUS_H_

#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace inprof {

// What went wrong, for callers that decide by it. The message says the rest; code that
// decides never reads the message.
enum class StatusCode : uint8_t {
  kOk,
  kUnknown,             // a failure no caller distinguishes (Status::Error)
  kInvalidArgument,     // bad configuration, URL, label, input text
  kAlreadyExists,       // a file that must not be replaced is there; a profile already runs
  kNotFound,            // a file, event or resource that is not there
  kUnavailable,         // the system refused (no perf_event, no timers, no thread)
  kIo,                  // reading or writing a file or socket failed
  kFailedPrecondition,  // the call needs a state that is not there: no profile is running
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
  static Status FailedPrecondition(std::string message) {
    return Status(StatusCode::kFailedPrecondition, std::move(message));
  }
  // A failed system call on a control path: "context: strerror(err)", the line a user reads
  // everywhere else, and the code a caller decides by: a missing file is kNotFound, an
  // existing one kAlreadyExists, a refused permission or resource kUnavailable, a bad
  // argument kInvalidArgument, anything else kIo. Not for the signal path (it allocates).
  static Status FromErrno(int err, std::string context) {
    StatusCode code = StatusCode::kIo;
    if (err == ENOENT) {
      code = StatusCode::kNotFound;
    } else if (err == EEXIST) {
      code = StatusCode::kAlreadyExists;
    } else if (err == EACCES || err == EPERM || err == ENOSYS || err == EAGAIN || err == ENOMEM) {
      code = StatusCode::kUnavailable;
    } else if (err == EINVAL) {
      code = StatusCode::kInvalidArgument;
    }
    context += ": ";
    context += std::strerror(err);
    return Status(code, std::move(context));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value, or the non-ok Status that says why there is none (Abseil's StatusOr). Reading the
// value of a failed StatusOr is a programming error, as is making one from an ok Status: both
// assert.
//
// Thread-safety: a plain value.
template <typename T>
class StatusOr {
 public:
  // From anything that converts to T (a unique_ptr<Derived> for a unique_ptr<Base>).
  template <typename U = T,
            typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, StatusOr>>>
  StatusOr(U&& value)  // NOLINT(google-explicit-constructor)
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}
  StatusOr(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "StatusOr from an ok Status has no value");
    if (std::get<Status>(v_).ok()) v_ = Status::Error("StatusOr made from an ok Status");
  }

  bool ok() const { return v_.index() == 0; }
  // Ok when there is a value.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace inprof

#endif  // INPROF_STATUS_H_
