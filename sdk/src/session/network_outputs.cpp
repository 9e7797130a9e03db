// Wires the pull endpoint and the push client to a session. Control path.
#include "session/network_outputs.h"

#include <unistd.h>

#include <climits>
#include <cstdio>

#include "inprof/profile.h"
#include "inprof/status.h"
#include "net/http_server.h"
#include "net/pull_handler.h"
#include "net/push_client.h"
#include "session/session.h"
#include "threads/thread_start.h"

namespace inprof::internal {
namespace {

// The program's file name, made into a valid application name ("my prog" -> "my_prog").
std::string DefaultAppName() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string name = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("program");
  name = name.substr(name.rfind('/') + 1);
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) c = '_';
  }
  if (name.size() > 128) name.resize(128);
  return name.empty() ? "program" : name;
}

}  // namespace

NetworkOutputs::NetworkOutputs(Session* session) : session_(session) {}

NetworkOutputs::~NetworkOutputs() {
  StopServing();
  Finish();
}

std::unique_ptr<NetworkOutputs> NetworkOutputs::Attach(Session* session) {
  const Config& config = session->config();
  if (config.http.empty() && config.push_url.empty()) return nullptr;
  std::unique_ptr<NetworkOutputs> net(new NetworkOutputs(session));
  // Our threads: signals blocked, never sampled.
  ThreadStarter starter = [session](pthread_t* thread, void* (*start)(void*), void* arg) {
    const pid_t tid = StartInternalThread(thread, start, arg);
    if (tid == 0) return false;
    session->ExcludeThread(tid);
    return true;
  };
  if (!config.push_url.empty()) {
    PushOptions options;
    ParseHttpUrl(config.push_url, &options.url);  // checked when the configuration was read
    options.app_name = config.app_name.empty() ? DefaultAppName() : config.app_name;
    options.labels = config.labels;
    options.tenant = config.tenant;
    options.quiet = config.quiet;
    net->push_ = std::make_unique<PushClient>(std::move(options), starter);
    PushClient* push = net->push_.get();
    session->AddWindowListener([push](const Window& window) {
      push->Enqueue(window.profile, window.start_unix_ns, window.end_unix_ns);
    });
  }
  if (!config.http.empty()) {
    PullSource source;
    source.snapshot = [session] { return session->Snapshot(); };
    source.start_capture = [session] { return session->AddTap(); };
    source.finish_capture = [session](uint64_t tap) -> std::optional<Profile> {
      std::optional<Window> window = session->TakeTap(tap);
      if (!window) return std::nullopt;
      return std::move(window->profile);
    };
    HttpServer::Options options;
    options.token = config.http_token;
    options.hosts = config.http_hosts;
    net->http_ = std::make_unique<HttpServer>(
        [source](const HttpRequest& request, HttpServer::Context& context) {
          return HandlePull(request, context, source, PullOptions());
        },
        starter, options);
  }
  return net;
}

Status NetworkOutputs::Start() {
  if (push_) {
    Status s = push_->Start();
    if (!s.ok()) return Status::Error("push_url: " + s.message());
  }
  if (http_) {
    ListenAddress address;
    Status s = ParseListenAddress(session_->config().http, &address);
    if (s.ok()) s = http_->Start(address);
    if (!s.ok()) return Status::Error("http: " + s.message());
    if (!session_->config().quiet) {
      std::fprintf(stderr,
                   "inprof: serving profiles on http://%s/debug/pprof/profile?seconds=N and "
                   "http://%s/debug/inprof/\n",
                   http_->address().c_str(), http_->address().c_str());
      // Off loopback, the Host check no longer keeps other machines out: only a token does.
      if (!IsLoopbackAddress(address.address) && session_->config().http_token.empty()) {
        std::fprintf(stderr,
                     "inprof: warning: the pull endpoint on %s is not on loopback and has no "
                     "token: anyone who can reach this address can read the profile (function "
                     "names, file paths); set INPROF_HTTP_TOKEN (docs/network.md)\n",
                     http_->address().c_str());
      }
    }
  }
  return Status::Ok();
}

void NetworkOutputs::StopServing() {
  // HttpServer::Stop is idempotent and may run from two threads at once (the runtime stops
  // the server before taking its lock, then again under it).
  if (http_) http_->Stop();
}

void NetworkOutputs::Finish() {
  if (push_) push_->Stop(std::chrono::milliseconds(kFlushMs));
}

std::vector<std::string> NetworkOutputs::SummaryLines() const {
  std::vector<std::string> lines;
  if (push_) lines.push_back(push_->Summary());
  return lines;
}

}  // namespace inprof::internal
