// The C API: parse, dispatch to the runtime, turn results into codes and messages.
// No exception crosses this boundary.
#include <string>

#include "api/lua_bridge.h"
#include "api/runtime.h"
#include "config/config.h"
#include "inprof/inprof.h"
#include "inprof/luajit.h"
#include "inprof/status.h"
#include "threads/labels.h"

namespace {

using inprof::Status;
using inprof::StatusCode;

thread_local std::string t_last_error;

// The one place a Status becomes an inprof_error. The runtime states its failures in these
// codes: a bad configuration or label kInvalidArgument, a second start kAlreadyExists, no
// running profile kFailedPrecondition, an output that could not be written kIo (a file's own
// kAlreadyExists or kNotFound is restated as kIo before it gets here), a refused resource
// kUnavailable; kUnknown is a failure no one foresaw.
int ErrorCode(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return INPROF_OK;
    case StatusCode::kInvalidArgument:
      return INPROF_ERR_CONFIG;
    case StatusCode::kAlreadyExists:
      return INPROF_ERR_ALREADY_STARTED;
    case StatusCode::kFailedPrecondition:
      return INPROF_ERR_NOT_STARTED;
    case StatusCode::kIo:
    case StatusCode::kNotFound:
      return INPROF_ERR_OUTPUT;
    case StatusCode::kUnavailable:
      return INPROF_ERR_SYSTEM;
    case StatusCode::kUnknown:
      return INPROF_ERR_INTERNAL;
  }
  return INPROF_ERR_INTERNAL;
}

int Report(const Status& status) {
  t_last_error = status.message();
  return ErrorCode(status.code());
}

// Sets the message inprof_last_error returns. Throws nothing: with no memory for the
// message, the message is empty (clear() frees nothing and cannot fail).
void SetLastError(const char* a, const char* b = "", const char* c = "") noexcept {
  try {
    t_last_error = std::string(a) + b + c;
  } catch (...) {
    t_last_error.clear();
  }
}

// Runs a C entry point's body: no exception leaves it (a C caller cannot handle one, and
// std::terminate would end the host), including one thrown while reporting another.
// The whole call is the profiler's work on the program's thread (the configuration's and the
// output list's parsing included): the handler leaves the samples taken in it out.
template <typename F>
int Guarded(const char* what, F&& f) noexcept {
  const inprof::internal::ProfilerWorkScope work;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    SetLastError(what, ": out of memory");
    return ErrorCode(StatusCode::kUnavailable);
  } catch (const std::exception& e) {
    SetLastError(what, ": internal error: ", e.what());
    return ErrorCode(StatusCode::kUnknown);
  } catch (...) {
    SetLastError(what, ": internal error");
    return ErrorCode(StatusCode::kUnknown);
  }
}

int LabelCall(const char* key, const char* value) {
  // Report only on failure: the fast path leaves inprof_last_error as it was.
  Status s = inprof::internal::SetThreadLabel(key, value);
  return s.ok() ? INPROF_OK : Report(s);
}

}  // namespace

extern "C" {

int inprof_start(const char* config_text) {
  return Guarded("inprof_start", [&] {
    inprof::internal::Config config;
    inprof::Status s = config_text == nullptr ? inprof::internal::ConfigFromEnvironment(&config)
                                              : inprof::internal::ParseConfig(config_text, &config);
    if (!s.ok()) return Report(Status::InvalidArgument("inprof_start: " + s.message()));
    return Report(inprof::internal::RuntimeStart(std::move(config)));
  });
}

int inprof_dump(const char* outputs) {
  return Guarded("inprof_dump", [&] {
    if (outputs == nullptr) return Report(inprof::internal::RuntimeDump(nullptr));
    std::vector<std::string> list;
    inprof::Status s = inprof::internal::ParseOutputs(outputs, &list,
                                                      /*check_writable=*/false);
    if (!s.ok()) return Report(Status::InvalidArgument("inprof_dump: " + s.message()));
    if (list.empty()) return Report(Status::InvalidArgument("inprof_dump: empty output list"));
    return Report(inprof::internal::RuntimeDump(&list));
  });
}

int inprof_heap_snapshot(const char* path) {
  return Guarded("inprof_heap_snapshot", [&] {
    if (path == nullptr || *path == '\0') {
      return Report(Status::InvalidArgument("inprof_heap_snapshot: no path given"));
    }
    // One path, taken as it is (no list: a comma is part of the name).
    const std::vector<std::string> list = {path};
    return Report(inprof::internal::RuntimeDump(&list, /*heap=*/true));
  });
}

int inprof_stop(void) {
  return Guarded("inprof_stop", [&] { return Report(inprof::internal::RuntimeStop()); });
}

int inprof_is_running(void) {
  try {
    return inprof::internal::RuntimeRunning() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

const char* inprof_strerror(int error) {
  switch (error) {
    case INPROF_OK:
      return "success";
    case INPROF_ERR_CONFIG:
      return "invalid configuration";
    case INPROF_ERR_ALREADY_STARTED:
      return "a profile is already running";
    case INPROF_ERR_NOT_STARTED:
      return "no profile is running";
    case INPROF_ERR_OUTPUT:
      return "an output could not be written";
    case INPROF_ERR_SYSTEM:
      return "the system refused a resource";
    case INPROF_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown error code";
  }
}

int inprof_lua_start(lua_State* L, const char* config) {
  return Guarded("inprof_lua_start", [&] { return Report(inprof::internal::LuaStart(L, config)); });
}

int inprof_lua_stop(lua_State* L) {
  return Guarded("inprof_lua_stop", [&] { return Report(inprof::internal::LuaStop(L)); });
}

const char* inprof_last_error(void) { return t_last_error.c_str(); }

// Labels: the fast path (a move the thread made before) touches no string and allocates
// nothing; messages are built only on failure.
int inprof_label_set(const char* key, const char* value) {
  if (value == nullptr) {
    SetLastError("inprof_label_set: the value must not be NULL (inprof_label_clear removes a label)");
    return ErrorCode(StatusCode::kInvalidArgument);
  }
  return Guarded("inprof_label_set", [&] { return LabelCall(key, value); });
}

int inprof_label_clear(const char* key) {
  if (key == nullptr) {
    inprof::internal::ClearThreadLabels();
    return INPROF_OK;
  }
  return Guarded("inprof_label_clear", [&] { return LabelCall(key, nullptr); });
}

inprof_labels_t inprof_labels_save(void) { return inprof::internal::CurrentThreadLabels(); }

int inprof_labels_restore(inprof_labels_t saved) {
  return Guarded("inprof_labels_restore", [&] {
    if (inprof::internal::RestoreThreadLabels(saved)) return int{INPROF_OK};
    return Report(Status::InvalidArgument("inprof_labels_restore: " + std::to_string(saved) +
                                          " is not a value inprof_labels_save returned"));
  });
}

}  // extern "C"
