// The pull endpoint's server: accept loop, worker pool, framing. What each path answers is
// the handler's business (pull_handler.cpp). Control path.
#include "internal/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "internal/contained.h"

namespace inprof::internal {

bool HttpServer::Context::WaitFor(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(server_->mu_);
  return !server_->cv_.wait_for(lock, duration, [this] { return server_->stopping_; });
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
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
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
  if (!running_) return;
  running_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  if (listener_ != pthread_t{}) pthread_join(listener_, nullptr);
  for (pthread_t worker : workers_) pthread_join(worker, nullptr);
  workers_.clear();
  for (int fd : pending_) close(fd);
  pending_.clear();
  close(listen_fd_);
  close(wake_fd_);
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
    struct pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // EMFILE and friends: back off a little rather than spin.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) poll(nullptr, 0, 50);
      continue;
    }
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Queue unless every worker already has a request: one still starting, or just
      // finishing the previous connection, takes it in a moment. (Counting idle workers
      // instead refused a client's next request while the worker that served its last one
      // was still closing, or before the workers had all started.)
      if (busy_ + static_cast<int>(pending_.size()) < options_.workers) {
        pending_.push_back(fd);
        queued = true;
      }
    }
    if (queued) {
      cv_.notify_one();
      continue;
    }
    // Every worker is busy (captures of N seconds hold one each): refuse now, do not queue.
    try {
      HttpResponse busy;
      busy.status = 503;
      busy.headers.emplace_back("Retry-After", "1");
      busy.body = "inprof: every HTTP worker is busy (" + std::to_string(options_.workers) +
                  " requests are running); try again\n";
      SendAll(fd, FormatHttpResponse(busy), 1000);
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
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
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
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

void HttpServer::Serve(int fd) {
  HttpRequest request;
  const int read = ReadHttpRequest(fd, options_.read_timeout_ms, &request);
  if (read < 0) return;
  HttpResponse response;
  if (read > 0) {
    response.status = read;
    response.body = "inprof: " + StatusText(read) + "\n";
  } else {
    try {
      Context context(this);
      response = handler_(request, context);
    } catch (const std::exception& e) {
      response = HttpResponse{};
      response.status = 500;
      response.body = std::string("inprof: ") + e.what() + "\n";
    }
  }
  SendAll(fd, FormatHttpResponse(response), options_.write_timeout_ms);
  // Let the client read everything before the close resets the connection.
  shutdown(fd, SHUT_WR);
  char drain[512];
  struct pollfd p{fd, POLLIN, 0};
  for (int i = 0; i < 8 && poll(&p, 1, 200) > 0; ++i) {
    if (recv(fd, drain, sizeof drain, 0) <= 0) break;
  }
}

}  // namespace inprof::internal
