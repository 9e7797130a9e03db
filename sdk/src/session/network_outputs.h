// The runtime's network outputs: the pull endpoint (config `http`) and the Pyroscope push
// client (config `push_url`), wired to a session. Lifecycle, driven by the runtime:
//   Attach(session)  before session->Start: registers the push client's window listener
//   Start()          after session->Start: starts the push sender and the HTTP server
//   StopServing()    before session->Stop: no more requests; running captures end with 503.
//                    Called first without the runtime's lifecycle lock (the workers may be
//                    busy computing an answer, and the program's threads wait on that lock
//                    to start and exit), then again under it; both calls are safe at once
//   Finish()         after session->Stop (which hands over the last window), without the
//                    lifecycle lock: sends what is queued for kFlushMs at most, then gives
//                    up (counted)
// Start, Finish and SummaryLines are called by one thread at a time.
// Control path.
#ifndef INPROF_SDK_NETWORK_OUTPUTS_H_
#define INPROF_SDK_NETWORK_OUTPUTS_H_

#include <memory>
#include <string>
#include <vector>

#include "inprof/status.h"

namespace inprof::internal {

class HttpServer;
class PushClient;
class Session;

class NetworkOutputs {
 public:
  // How long Finish waits for queued windows to be sent, the request in flight included.
  static constexpr int kFlushMs = 3000;

  // Nothing to do (and nullptr) when the session's configuration asks for neither.
  static std::unique_ptr<NetworkOutputs> Attach(Session* session);
  ~NetworkOutputs();

  Status Start();
  void StopServing();
  void Finish();
  // Lines for the summary at stop ("push to http://...: 12 of 12 requests sent").
  std::vector<std::string> SummaryLines() const;

 private:
  explicit NetworkOutputs(Session* session);

  Session* session_;
  std::unique_ptr<PushClient> push_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_NETWORK_OUTPUTS_H_
