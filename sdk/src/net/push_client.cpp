// Pyroscope push client: bounded queue, one sender thread, jittered backoff. Control path.
#include "internal/push_client.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "internal/contained.h"

namespace inprof::internal {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '.'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The profile restricted to one event: Pyroscope names a series per event (app.cpu,
// app.wall), so each gets its own request. Samples without weight for it are left out.
Profile OneEvent(const Profile& profile, size_t event) {
  Profile out;
  out.meta = profile.meta;
  out.events.push_back(profile.events[event]);
  out.frames = profile.frames;
  out.health = profile.health;
  out.modules = profile.modules;
  for (const Sample& sample : profile.samples) {
    if (event >= sample.weights.size() || sample.weights[event] == 0) continue;
    Sample s;
    s.frames = sample.frames;
    s.weights.push_back(sample.weights[event]);
    s.tid = sample.tid;
    out.samples.push_back(std::move(s));
  }
  return out;
}

bool Retryable(int status) { return status < 0 || status == 408 || status == 429 || status >= 500; }

}  // namespace

Status CheckAppName(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return Status::Error("application name '" + std::string(name) +
                         "': expected 1 to 128 characters");
  }
  for (char c : name) {
    if (!IsNameChar(c) && c != '-') {
      return Status::Error("application name '" + std::string(name) +
                           "': only letters, digits, '_', '-' and '.' are allowed");
    }
  }
  return Status::Ok();
}

Status ParsePushLabels(std::string_view text,
                       std::vector<std::pair<std::string, std::string>>* labels) {
  labels->clear();
  while (!text.empty()) {
    size_t end = text.find_first_of(",;");
    std::string_view item = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::Error("label '" + std::string(item) + "': expected NAME=VALUE");
    }
    std::string_view name = Trim(item.substr(0, eq));
    std::string_view value = Trim(item.substr(eq + 1));
    bool ok = !name.empty() && IsNameStart(name.front());
    for (char c : name) ok = ok && IsNameChar(c);
    if (!ok) {
      return Status::Error("label name '" + std::string(name) +
                           "': expected a letter or '_' followed by letters, digits, '_' or '.'");
    }
    if (name == "__name__" || name == "service_name") {
      return Status::Error("label name '" + std::string(name) +
                           "' is reserved (the application name sets it)");
    }
    if (value.empty() || value.find_first_of("{}=,\"") != std::string_view::npos) {
      return Status::Error("label '" + std::string(name) + "': the value '" + std::string(value) +
                           "' must be non-empty and may not contain '{', '}', '=', ',' or '\"'");
    }
    for (const auto& [existing, v] : *labels) {
      if (existing == name) return Status::Error("label '" + std::string(name) + "' given twice");
    }
    labels->emplace_back(std::string(name), std::string(value));
  }
  return Status::Ok();
}

std::string IngestPathAndQuery(const PushOptions& options, const std::string& event,
                               int64_t from_unix_s, int64_t until_unix_s, double sample_rate_hz) {
  std::string name = options.app_name + "." + event + "{";
  for (size_t i = 0; i < options.labels.size(); ++i) {
    if (i > 0) name += ",";
    name += options.labels[i].first + "=" + options.labels[i].second;
  }
  name += "}";
  std::string q = "/ingest?name=" + PercentEncode(name);
  q += "&from=" + std::to_string(from_unix_s);
  q += "&until=" + std::to_string(until_unix_s);
  if (sample_rate_hz > 0) q += "&sampleRate=" + std::to_string(std::lround(sample_rate_hz));
  q += "&spyName=inprof&format=pprof";
  return q;
}

PushClient::PushClient(PushOptions options, ThreadStarter starter)
    : options_(std::move(options)), starter_(std::move(starter)) {
  std::random_device seed;
  rng_.seed((static_cast<uint64_t>(seed()) << 32) ^ static_cast<uint64_t>(getpid()));
}

PushClient::~PushClient() {
  Stop(std::chrono::milliseconds(0));
  if (cancel_fd_ >= 0) close(cancel_fd_);
}

Status PushClient::Start() {
  cancel_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (cancel_fd_ < 0) {
    return Status::Error(std::string("cannot create an eventfd: ") + std::strerror(errno));
  }
  if (!starter_(&thread_, &PushClient::Entry, this)) {
    return Status::Error(std::string("cannot start the push thread"));
  }
  running_ = true;
  return Status::Ok();
}

void PushClient::Enqueue(const Profile& profile, int64_t start_unix_ns, int64_t end_unix_ns) {
  // Pyroscope takes whole seconds; a window shorter than one still covers [from, until].
  const int64_t from = start_unix_ns / 1000000000;
  const int64_t until = std::max<int64_t>(from + 1, (end_unix_ns + 999999999) / 1000000000);
  std::vector<Request> requests;
  for (size_t e = 0; e < profile.events.size(); ++e) {
    Profile one = OneEvent(profile, e);
    if (one.samples.empty()) continue;
    std::ostringstream body;
    if (!WritePprof(one, body)) continue;
    Request r;
    r.id = ++next_id_;
    r.path_and_query = IngestPathAndQuery(options_, profile.events[e].name, from, until,
                                          profile.events[e].frequency_hz);
    r.body = std::make_shared<const std::string>(std::move(body).str());
    requests.push_back(std::move(r));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.windows;
    for (Request& r : requests) {
      ++stats_.requests;
      if (stopping_) {
        ++stats_.dropped;
        continue;
      }
      stats_.queued_bytes += r.body->size();
      queue_.push_back(std::move(r));
      // Oldest first out: the newest windows say most about the process now.
      while (queue_.size() > options_.max_windows ||
             (stats_.queued_bytes > options_.max_bytes && queue_.size() > 1)) {
        stats_.queued_bytes -= queue_.front().body->size();
        queue_.pop_front();
        ++stats_.dropped;
      }
    }
    stats_.queued = queue_.size();
  }
  cv_.notify_all();  // the sender, and Stop may wait on the same variable
}

void PushClient::Stop(std::chrono::milliseconds flush) {
  if (!running_) return;
  running_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    flush_deadline_ = std::chrono::steady_clock::now() + flush;
  }
  cv_.notify_all();
  {
    // The sender ends by itself once the queue is empty or the deadline has passed between
    // requests; a request in flight at the deadline is cut off here.
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, flush_deadline_, [this] { return sender_done_; })) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t n = write(cancel_fd_, &one, sizeof one);
    }
  }
  pthread_join(thread_, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.dropped += queue_.size();
  queue_.clear();
  stats_.queued = 0;
  stats_.queued_bytes = 0;
}

PushStats PushClient::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string PushClient::Summary() const {
  PushStats s = stats();
  std::string out = "push to " + options_.url.text + ": " + std::to_string(s.sent) + " of " +
                    std::to_string(s.requests) + " requests sent";
  if (s.dropped > 0) out += ", " + std::to_string(s.dropped) + " dropped";
  if (s.rejected > 0) out += ", " + std::to_string(s.rejected) + " rejected";
  if (s.retries > 0) out += ", " + std::to_string(s.retries) + " retries";
  if (!s.last_error.empty()) out += " (last error: " + s.last_error + ")";
  return out;
}

void* PushClient::Entry(void* self) {
  // An exception leaving a thread's entry function ends the program (std::terminate). Run
  // holds its lock through a unique_lock, so after a failure (out of memory building a
  // request) the sender ends cleanly: Stop still joins it and counts what is left as dropped.
  auto* client = static_cast<PushClient*>(self);
  try {
    client->Run();
  } catch (const std::exception& e) {
    CountContained(ContainedAt::kNetwork);
    try {
      client->Log(std::string("push sender stopped: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
    CountContained(ContainedAt::kNetwork);
  }
  {
    std::lock_guard<std::mutex> lock(client->mu_);
    client->sender_done_ = true;
  }
  client->cv_.notify_all();
  return nullptr;
}

void PushClient::Log(const std::string& message) {
  if (!options_.quiet) std::fprintf(stderr, "inprof: %s\n", message.c_str());
}

// One piece: the loop holds mu_ across its steps and lets go of it only around the request
// and each log line; split, every part would take and hand back the same lock.
void PushClient::Run() {
  HttpFields headers;
  if (!options_.tenant.empty()) headers.emplace_back("X-Scope-OrgID", options_.tenant);
  int attempt = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    if (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) return;
    // The request leaves the queue while it is tried; a retryable failure puts it back at the
    // head if there is room, else it is the oldest and is dropped.
    Request request = std::move(queue_.front());
    queue_.pop_front();
    stats_.queued_bytes -= request.body->size();
    stats_.queued = queue_.size();
    int timeout = options_.timeout_ms;
    if (stopping_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      flush_deadline_ - std::chrono::steady_clock::now())
                      .count();
      timeout = static_cast<int>(std::clamp<long long>(left, 1, timeout));
    }
    lock.unlock();
    HttpClientResult result =
        HttpPost(options_.url, request.path_and_query, headers, "application/octet-stream",
                 *request.body, timeout, cancel_fd_);
    lock.lock();
    if (result.status >= 200 && result.status < 300) {
      ++stats_.sent;
      attempt = 0;
      stats_.last_error.clear();
      if (failing_) {
        failing_ = false;
        lock.unlock();
        Log("push to " + options_.url.text + " works again");
        lock.lock();
      }
      continue;
    }
    std::string error =
        result.status > 0
            ? "HTTP " + std::to_string(result.status) +
                  (result.body.empty() ? "" : ": " + std::string(Trim(result.body.substr(0, 200))))
            : result.error;
    while (!error.empty() && (error.back() == '\n' || error.back() == '\r')) error.pop_back();
    stats_.last_error = error;
    if (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) {
      // Cut off at the flush deadline (or failed just as it passed): no retry is left.
      ++stats_.dropped;
      return;
    }
    if (!Retryable(result.status)) {
      ++stats_.rejected;
      lock.unlock();
      Log("push to " + options_.url.text + " rejected a window: " + error);
      lock.lock();
      continue;
    }
    ++stats_.retries;
    if (queue_.size() < options_.max_windows &&
        (queue_.empty() || stats_.queued_bytes + request.body->size() <= options_.max_bytes)) {
      stats_.queued_bytes += request.body->size();
      queue_.push_front(std::move(request));
      stats_.queued = queue_.size();
    } else {
      ++stats_.dropped;
    }
    // Full jitter: uniformly in [0, min(max, initial * 2^attempt)], so a fleet that lost its
    // backend does not come back in lockstep.
    const double cap = std::min<double>(static_cast<double>(options_.backoff_max.count()),
                                        static_cast<double>(options_.backoff_initial.count()) *
                                            std::ldexp(1.0, std::min(attempt, 20)));
    ++attempt;
    std::uniform_real_distribution<double> jitter(0.0, cap);
    const auto delay = std::chrono::milliseconds(static_cast<int64_t>(jitter(rng_)) + 1);
    if (!failing_) {
      failing_ = true;
      const size_t queued = queue_.size();
      lock.unlock();
      Log("push to " + options_.url.text + " failed: " + error + "; retrying with backoff (" +
          std::to_string(queued) + " requests queued, the oldest are dropped past " +
          std::to_string(options_.max_windows) + ")");
      lock.lock();
    }
    if (stopping_) {
      // Flushing at exit: retry only within the deadline.
      if (std::chrono::steady_clock::now() + delay >= flush_deadline_) return;
    }
    cv_.wait_for(lock, delay, [this] {
      return stopping_ && std::chrono::steady_clock::now() >= flush_deadline_;
    });
  }
}

}  // namespace inprof::internal
