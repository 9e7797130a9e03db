// The pull endpoint's server: accept loop, worker pool, framing. What each path answers is
// the handler's business (pull_handler.cpp). Control path.
#include "net/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "inprof/status.h"
#include "threads/contained.h"

namespace inprof::internal {

// poll on the client's socket and the stop eventfd rather than a condition variable: a
// capture whose client went away (curl interrupted, a scraper's timeout) must end and free
// its worker and its tap now, not after the N seconds it asked for.
HttpServer::Context::Wait HttpServer::Context::WaitFor(std::chrono::milliseconds duration) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + duration;
  char sink[4096];
  for (;;) {
    {
      MutexLock lock(&server_->mu_);
      if (server_->stopping_) return Wait::kStopped;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Wait::kElapsed;
    struct pollfd p[2] = {{fd_, POLLIN | POLLRDHUP, 0}, {server_->CancelFd(), POLLIN, 0}};
    const int n = poll(p, 2, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      // Cannot watch the socket (out of kernel memory): wait on the stop alone.
      MutexLock lock(&server_->mu_);
      while (!server_->stopping_ && server_->cv_.WaitUntil(&server_->mu_, deadline)) {
      }
      return server_->stopping_ ? Wait::kStopped : Wait::kElapsed;
    }
    if (p[1].revents != 0) return Wait::kStopped;
    if ((p[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return Wait::kClientGone;
    if ((p[0].revents & POLLIN) != 0) {
      const ssize_t got = recv(fd_, sink, sizeof sink, MSG_DONTWAIT);
      if (got == 0) return Wait::kClientGone;
      if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Wait::kClientGone;
      }
    }
  }
}

HttpServer::HttpServer(Handler handler, ThreadStarter starter, Options options)
    : handler_(std::move(handler)), starter_(std::move(starter)), options_(options) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const ListenAddress& address) {
  const auto* sa = reinterpret_cast<const sockaddr*>(&address.address);
  listen_fd_ = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) {
    return Status::Error("cannot create a socket for " + address.text + ": " +
                         std::strerror(errno));
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, sa, address.length) != 0 || listen(listen_fd_, 16) != 0) {
    const int error = errno;
    close(listen_fd_);
    listen_fd_ = -1;
    return Status::Error("cannot listen on " + address.text + ": " + std::strerror(error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  bound_ = address.text.substr(0, address.text.rfind(':') + 1) + std::to_string(port_);
  listen_id_ = IdentityOf(listen_fd_);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wake_id_ = IdentityOf(wake_fd_);
  if (wake_fd_ < 0) {
    const int error = errno;
    close(listen_fd_);
    listen_fd_ = -1;
    return Status::Error(std::string("cannot create an eventfd: ") + std::strerror(error));
  }
  running_ = true;
  for (int i = 0; i < options_.workers; ++i) {
    pthread_t worker;
    if (!starter_(&worker, &HttpServer::WorkerEntry, this)) {
      const int error = errno;
      Stop();
      return Status::Error(std::string("cannot start the HTTP worker threads: ") +
                           std::strerror(error));
    }
    workers_.push_back(worker);
  }
  if (!starter_(&listener_, &HttpServer::ListenEntry, this)) {
    const int error = errno;
    listener_ = pthread_t{};
    Stop();
    return Status::Error(std::string("cannot start the HTTP thread: ") + std::strerror(error));
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  MutexLock serialized(&stop_mu_);
  if (!running_) return;
  running_ = false;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  // Never into a number the program closed and reused: the listener then notices the stop
  // at its next poll timeout (ListenLoop).
  if (StillOurs(wake_fd_, wake_id_)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  } else {
    wake_lost_.store(true, std::memory_order_release);
  }
  if (listener_ != pthread_t{}) pthread_join(listener_, nullptr);
  for (pthread_t worker : workers_) pthread_join(worker, nullptr);
  workers_.clear();
  {
    MutexLock lock(&mu_);  // no thread is left to contend for it
    for (int fd : pending_) close(fd);
    pending_.clear();
  }
  if (StillOurs(listen_fd_, listen_id_)) close(listen_fd_);
  if (StillOurs(wake_fd_, wake_id_)) close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

// An exception leaving a thread's entry function ends the program (std::terminate): the
// loops contain each connection's failures; these catch what is left (counted in health).
void* HttpServer::ListenEntry(void* self) {
  try {
    static_cast<HttpServer*>(self)->ListenLoop();
  } catch (...) {
    CountContained(ContainedAt::kNetwork);
  }
  return nullptr;
}

void* HttpServer::WorkerEntry(void* self) {
  try {
    static_cast<HttpServer*>(self)->WorkerLoop();
  } catch (...) {
    CountContained(ContainedAt::kNetwork);
  }
  return nullptr;
}

void HttpServer::ListenLoop() {
  for (;;) {
    // Both fds are checked to still be ours before each wait (a program that calls
    // closefrom(3) closes them, and its next files take their numbers): a lost listening
    // socket ends the endpoint with a message, a lost wake fd is waited on no more (the stop
    // is then seen at the next timeout, at most 250 ms later).
    if (!StillOurs(listen_fd_, listen_id_)) {
      std::fprintf(stderr,
                   "inprof: the pull endpoint's listening socket (fd %d) was closed by the "
                   "program (closefrom?): the endpoint on %s stopped\n",
                   listen_fd_, bound_.c_str());
      return;
    }
    if (!wake_lost_.load(std::memory_order_acquire) && !StillOurs(wake_fd_, wake_id_)) {
      wake_lost_.store(true, std::memory_order_release);
    }
    const bool wake_ok = !wake_lost_.load(std::memory_order_acquire);
    struct pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_ok ? wake_fd_ : -1, POLLIN, 0}};
    const int n = poll(fds, 2, wake_ok ? 1000 : 250);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (n == 0) continue;
    if (wake_ok && fds[1].revents != 0) {
      if (StillOurs(wake_fd_, wake_id_)) return;  // Stop woke us
      // A file the program opened in the wake fd's number (always readable): not a stop.
      wake_lost_.store(true, std::memory_order_release);
      continue;
    }
    if (!StillOurs(listen_fd_, listen_id_)) continue;  // said above, at the next turn
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // EMFILE and friends: back off a little rather than spin.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) poll(nullptr, 0, 50);
      continue;
    }
    bool queued = false;
    {
      // Queue unless every worker already has a request: one still starting, or just
      // finishing the previous connection, takes it in a moment. (Counting idle workers
      // instead refused a client's next request while the worker that served its last one
      // was still closing, or before the workers had all started.) When every worker is
      // counted, one gets 100 ms to free itself first: a worker that answered the client's
      // previous request waits for that connection's close, and on a loaded machine it may
      // see it only some milliseconds later; refusing the client meanwhile is a 503 it
      // cannot make sense of.
      MutexLock lock(&mu_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      while (!(stopping_ || busy_ + static_cast<int>(pending_.size()) < options_.workers) &&
             freed_.WaitUntil(&mu_, deadline)) {
      }
      if (busy_ + static_cast<int>(pending_.size()) < options_.workers) {
        pending_.push_back(fd);
        queued = true;
      }
    }
    if (queued) {
      cv_.NotifyOne();
      continue;
    }
    // Every worker is busy (captures of N seconds hold one each): refuse now, do not queue.
    try {
      HttpResponse busy;
      busy.status = 503;
      busy.headers.emplace_back("Retry-After", "1");
      busy.body = "inprof: every HTTP worker is busy (" + std::to_string(options_.workers) +
                  " requests are running); try again\n";
      SendAll(fd, FormatHttpResponse(busy), 1000, CancelFd());
    } catch (...) {
      CountContained(ContainedAt::kNetwork);  // out of memory: the client sees a close
    }
    close(fd);
  }
}

void HttpServer::WorkerLoop() {
  for (;;) {
    int fd;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && pending_.empty()) cv_.Wait(&mu_);
      if (stopping_) return;
      fd = pending_.front();
      pending_.pop_front();
      ++busy_;
    }
    try {
      Serve(fd);
    } catch (...) {
      // Serve answers the handler's own failures with 500; this is a failure to build or
      // send that answer (out of memory): the client sees the connection close.
      CountContained(ContainedAt::kNetwork);
    }
    close(fd);
    {
      MutexLock lock(&mu_);
      --busy_;
    }
    freed_.NotifyOne();
  }
}

int HttpServer::CheckAccess(int fd, const HttpRequest& request, HttpResponse* refusal) const {
  auto refuse = [refusal](int status, const std::string& message) {
    refusal->status = status;
    refusal->body = "inprof: " + message + "\n";
    return status;
  };
  // The Host check comes first: a DNS-rebinding page never has the token, and its requests
  // should not learn even whether one is needed.
  const size_t hosts = request.HeaderCount("host");
  if (hosts > 1) return refuse(400, "more than one Host header");
  if (hosts == 0 && request.version != "HTTP/1.0") {
    return refuse(400, "an HTTP/1.1 request needs a Host header");
  }
  if (hosts == 1) {
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    const std::string& host = *request.Header("host");
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        !HttpHostAllowed(host, local, options_.hosts)) {
      return refuse(403, "Host '" + host.substr(0, 100) +
                             "' is not this endpoint's address: a name it is reached by must "
                             "be listed in INPROF_HTTP_HOSTS (defence against DNS rebinding)");
    }
  }
  if (!options_.token.empty()) {
    const size_t count = request.HeaderCount("authorization");
    const std::string* authorization = count == 1 ? request.Header("authorization") : nullptr;
    if (authorization == nullptr || !HttpBearerMatches(*authorization, options_.token)) {
      refuse(401, count == 0 ? "this endpoint needs a token: send 'Authorization: Bearer TOKEN' "
                               "with the value of INPROF_HTTP_TOKEN"
                             : "the bearer token is not the one configured (INPROF_HTTP_TOKEN)");
      refusal->headers.emplace_back(
          "WWW-Authenticate", count == 0 ? "Bearer realm=\"inprof\""
                                         : "Bearer realm=\"inprof\", error=\"invalid_token\"");
      return 401;
    }
  }
  return 0;
}

void HttpServer::Serve(int fd) {
  HttpRequest request;
  const int read = ReadHttpRequest(fd, options_.read_timeout_ms, &request, CancelFd());
  if (read < 0) return;
  HttpResponse response;
  if (read > 0) {
    response.status = read;
    response.body = "inprof: " + StatusText(read) + "\n";
  } else if (CheckAccess(fd, request, &response) != 0) {
    // refused: `response` says why
  } else {
    try {
      Context context(this, fd);
      response = handler_(request, context);
    } catch (const std::exception& e) {
      response = HttpResponse{};
      response.status = 500;
      response.body = std::string("inprof: ") + e.what() + "\n";
    }
  }
  if (response.abandoned) return;
  SendAll(fd, FormatHttpResponse(response), options_.write_timeout_ms, CancelFd());
  // Let the client read everything before the close resets the connection (bounded: 8 reads,
  // 200 ms each at most, cut short by Stop).
  shutdown(fd, SHUT_WR);
  char drain[512];
  struct pollfd p[2] = {{fd, POLLIN, 0}, {CancelFd(), POLLIN, 0}};
  for (int i = 0; i < 8 && poll(p, 2, 200) > 0 && p[1].revents == 0; ++i) {
    if (recv(fd, drain, sizeof drain, 0) <= 0) break;
  }
}

}  // namespace inprof::internal
