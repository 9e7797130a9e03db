// What the pull endpoint (INPROF_HTTP) answers, independent of sockets and of the session so
// tests can drive it with any profile source:
//   GET /debug/pprof/profile?seconds=N   pprof of the next N seconds (Go net/http/pprof's
//                                        contract, so `go tool pprof URL` works); default 30
//   GET /debug/inprof/annotations        annotation JSON      } the profile so far, or with
//   GET /debug/inprof/folded             folded stacks        } ?seconds=N the next N seconds;
//   GET /debug/inprof/perf.log           perfanno's perf.log  } ?event=NAME picks the event of
//   GET /debug/inprof/flame.svg          flame graph          } the single-event formats
//   GET /debug/pprof/, /debug/inprof/    an index of the above
// Anything else is answered with 404, other methods with 405, bad parameters with 400 naming
// the parameter, and a capture that cannot start (too many at once, memory budget) with 503.
// A capture whose client goes away ends at once, unanswered. Access checks (Host, token) are
// the server's, before this runs.
// Control path.
#ifndef INPROF_SDK_PULL_HANDLER_H_
#define INPROF_SDK_PULL_HANDLER_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "inprof/profile.h"
#include "net/http.h"
#include "net/http_server.h"

namespace inprof::internal {

struct PullSource {
  std::function<Profile()> snapshot;        // the profile so far
  std::function<uint64_t()> start_capture;  // 0: cannot start one now
  std::function<std::optional<Profile>(uint64_t)> finish_capture;
};

struct PullOptions {
  int max_seconds = 3600;  // longest ?seconds= accepted
  int default_seconds = 30;
};

HttpResponse HandlePull(const HttpRequest& request, HttpServer::Context& context,
                        const PullSource& source, const PullOptions& options);

}  // namespace inprof::internal

#endif  // INPROF_SDK_PULL_HANDLER_H_
