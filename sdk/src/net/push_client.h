// Pushes each window to a Grafana Pyroscope server (INPROF_PUSH_URL), for fleets:
//   POST <url>/ingest?name=<app>{k=v,...}&from=<s>&until=<s>&sampleRate=<hz>&spyName=inprof
//   Content-Type: multipart/form-data; boundary=...
// the body Pyroscope's ingest form: a file field `profile` with the gzipped pprof and a file
// field `sample_type_config` with JSON telling, per sample type of that pprof, its units,
// aggregation, cumulative, sampled and display-name (docs/network.md says what the server
// does with each). One request per push group and label series: an event alone, or the
// events Pyroscope files under one profile name together (the four memory types; the two
// lock types). The samples a thread took under labels (inprof_label_set) form one series
// per distinct label set, its labels added to the static ones as tags (PushSeriesTags);
// samples without labels form the plain series.
//
// Never blocks the program and never grows: Enqueue encodes the window and appends it to a
// queue bounded in windows and bytes, dropping the oldest (counted) when full; one sender
// thread posts, retrying transient failures (no connection, timeout, 408, 429, 5xx) with
// exponential backoff and full jitter, and drops what the server rejects (other 4xx, counted).
// Control path.
#ifndef INPROF_SDK_PUSH_CLIENT_H_
#define INPROF_SDK_PUSH_CLIENT_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"
#include "inprof/thread_annotations.h"
#include "net/http.h"
#include "net/http_server.h"

namespace inprof::internal {

struct PushOptions {
  HttpUrl url;
  std::string app_name;  // Pyroscope application name, e.g. "checkout"
  std::vector<std::pair<std::string, std::string>> labels;
  std::string tenant;                  // X-Scope-OrgID when not empty
  size_t max_windows = 16;             // requests queued at most; also the most one window
                                       // makes (label series past that share the plain one)
  size_t max_bytes = size_t{8} << 20;  // their bodies' total size at most
  int timeout_ms = 10000;              // per connect / send / receive
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  bool quiet = false;  // no stderr messages
};

struct PushStats {
  uint64_t windows = 0;   // windows handed to Enqueue
  uint64_t requests = 0;  // requests built from them (one per group and series with samples)
  // Label series of a window that did not fit in max_windows requests and were pushed in
  // the plain series instead (the lightest first).
  uint64_t merged_series = 0;
  uint64_t sent = 0;      // accepted by the server (2xx)
  uint64_t retries = 0;   // failed attempts that were retried
  uint64_t dropped = 0;   // requests dropped unsent: queue full (oldest first) or at stop
  uint64_t rejected = 0;  // requests the server refused with a non-retryable status
  size_t queued = 0;
  size_t queued_bytes = 0;
  std::string last_error;  // empty after a success
};

using PushTags = std::vector<std::pair<std::string, std::string>>;

// The ingest request of one group of a window, without the host part:
// "/ingest?name=app%7Benv%3Dprod%7D&from=...". `tags` (a label series') follow the static
// labels in the name. Exposed for tests.
std::string IngestPathAndQuery(const PushOptions& options, int64_t from_unix_s,
                               int64_t until_unix_s, double sample_rate_hz,
                               const PushTags& tags = {});

// The multipart/form-data body (RFC 7578) of one push request and its Content-Type: the file
// fields `profile` (the gzipped pprof) and `sample_type_config` (JSON), the boundary
// "inprof-<16 hex digits>" counting up from `seed` to the first that occurs in neither part.
// Exposed for tests.
struct PushForm {
  std::string body;
  std::string content_type;
};
PushForm MultipartPushForm(const std::string& pprof, const std::string& config, uint64_t seed);

// The tags a label set adds to a series name, made valid for it, in the set's (key) order:
// a key keeps letters, digits, '_' and '.' (others become '_'; '_' goes before a leading digit
// or '.'); a value's '{', '}', '=', ',', '"', control characters and bytes that are not UTF-8
// become '_' and it is cut to kMaxPushTagValue bytes. Left out: empty keys or values, keys
// reserved by Pyroscope (service_name, and __name__ and every other name starting "__"), a
// key a static label already has (the operator's label wins), and a key a previous label
// of the set already gave after sanitising. Not async-signal-safe.
constexpr size_t kMaxPushTagKey = 128;
constexpr size_t kMaxPushTagValue = 1024;
PushTags PushSeriesTags(const PushOptions& options, const std::vector<Label>& labels);

// Checks and parses "k=v,k=v" (';' also separates, for configuration strings, where ',' ends
// the value). Names follow Prometheus rules; values may not contain ',', '{', '}' or '='.
Status ParsePushLabels(std::string_view text,
                       std::vector<std::pair<std::string, std::string>>* labels);
// Checks an application name: letters, digits, '_', '-', '.', at most 128 characters.
Status CheckAppName(std::string_view name);

class PushClient {
 public:
  PushClient(PushOptions options, ThreadStarter starter);
  ~PushClient();
  PushClient(const PushClient&) = delete;
  PushClient& operator=(const PushClient&) = delete;

  Status Start();
  // Queues the window [start, end) of `profile`: per push group with samples, one request for
  // the samples without labels and one per label series, at most max_windows in all.
  // Returns at once; O(profile) CPU for encoding, on the caller's thread.
  void Enqueue(const Profile& profile, int64_t start_unix_ns, int64_t end_unix_ns);
  // Sends what is queued for at most `flush` more, then stops the sender; what is left is
  // counted as dropped. A request still in flight at the deadline is cut off (its connect,
  // send or receive is woken through an eventfd), so Stop returns within `flush` plus a few
  // milliseconds, unless the sender is inside name resolution (getaddrinfo cannot be
  // interrupted: a numeric address or a local name avoids that). Idempotent.
  void Stop(std::chrono::milliseconds flush);
  PushStats stats() const;
  // "push to URL: 12 of 12 requests sent" (and what was dropped, rejected, retried or
  // merged) for the summary line.
  std::string Summary() const;

 private:
  struct Request {
    uint64_t id = 0;
    std::string path_and_query;
    std::string content_type;                 // multipart/form-data with the body's boundary
    std::shared_ptr<const std::string> body;  // shared: the sender copies the request
  };
  static void* Entry(void* self);
  void Run() EXCLUDES(mu_);
  void Log(const std::string& message);

  PushOptions options_;
  ThreadStarter starter_;
  pthread_t thread_{};
  bool running_ = false;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Request> queue_ GUARDED_BY(mu_);
  std::atomic<uint64_t> next_id_{0};
  PushStats stats_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // Run has returned (Stop waits for it until the deadline).
  bool sender_done_ GUARDED_BY(mu_) = false;
  int cancel_fd_ = -1;    // eventfd: readable once the flush deadline has passed
  FdIdentity cancel_id_;  // ... and which file it is (the program may close it)
  std::chrono::steady_clock::time_point flush_deadline_ GUARDED_BY(mu_){};
  // The sender thread's own (seeded by Start before the thread runs).
  std::mt19937_64 rng_;
  // Where the multipart boundaries start (set once by the constructor).
  uint64_t boundary_seed_ = 0;
  bool failing_ = false;  // a failure was reported and no success since
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_PUSH_CLIENT_H_
