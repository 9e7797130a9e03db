// A small HTTP server for pulling profiles from a running process (INPROF_HTTP): one
// listening thread and a fixed pool of workers, one request per connection. More concurrent
// requests than workers get 503 at once; a slow client gets 408; a request whose Host is not
// this server's address (DNS rebinding) gets 403, one without the configured bearer token
// 401, before any handler runs. A handler that waits (a ?seconds=N capture) ends when its
// client goes away or the server stops.
//
// Every wait of a worker is bounded and also watches one eventfd that Stop makes readable:
// reading the head (read_timeout_ms), a capture (its length; the client's close), sending the
// answer (write_timeout_ms in all, however slowly the client reads), the short drain before
// the close. So Stop returns once each handler's own computing is done (a snapshot being
// symbolized), never after a client's pace. Start and Stop are called by one thread at a
// time (the runtime's); Stop may also run from the destructor. Control path.
#ifndef INPROF_SDK_HTTP_SERVER_H_
#define INPROF_SDK_HTTP_SERVER_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "inprof/status.h"
#include "inprof/thread_annotations.h"
#include "net/http.h"

namespace inprof::internal {

// Starts a thread for the server (the runtime's starter blocks signals and keeps the thread
// out of sampling). Returns false with errno set on failure.
using ThreadStarter = std::function<bool(pthread_t*, void* (*)(void*), void*)>;

class HttpServer {
 public:
  // What a handler may do besides computing its answer: wait, cut short by Stop.
  class Context {
   public:
    Context(HttpServer* server, int fd) : server_(server), fd_(fd) {}
    enum class Wait { kElapsed, kStopped, kClientGone };
    // Waits for `duration` unless the server stops or the client goes away first: closes its
    // connection, resets it, or shuts down its sending side (as Go's net/http, a half-close
    // counts as gone). Bytes the client sends meanwhile are read and ignored.
    Wait WaitFor(std::chrono::milliseconds duration);

   private:
    HttpServer* server_;
    int fd_;  // the client's connection; -1 in tests that call a handler directly
  };
  using Handler = std::function<HttpResponse(const HttpRequest&, Context&)>;

  struct Options {
    int workers = 4;
    int read_timeout_ms = 5000;    // for the request head
    int write_timeout_ms = 30000;  // for the whole answer, however slowly the client reads
    // Access checks (docs/network.md). A request must carry "Authorization: Bearer <token>"
    // when `token` is set (else 401), and a Host naming this server (HttpHostAllowed: the
    // connection's local address, localhost on loopback, or one of `hosts`) (else 403).
    // HTTP/1.1 without exactly one Host is 400 (RFC 9112); HTTP/1.0 may omit it.
    std::string token;
    std::vector<std::string> hosts;  // lower case
  };

  HttpServer(Handler handler, ThreadStarter starter, Options options);
  HttpServer(Handler handler, ThreadStarter starter)
      : HttpServer(std::move(handler), std::move(starter), Options()) {}
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. The status names the address on failure (EADDRINUSE, ...).
  Status Start(const ListenAddress& address);
  // Stops accepting, wakes every waiting worker, closes queued connections and joins every
  // thread. Idempotent; concurrent callers all return once the threads are joined.
  void Stop();
  // The bound address, with the port the kernel chose for port 0.
  const std::string& address() const { return bound_; }
  uint16_t port() const { return port_; }

 private:
  static void* ListenEntry(void* self);
  static void* WorkerEntry(void* self);
  // The wake fd to poll as a cancellation, -1 once the program closed it (never a file of
  // the program's).
  int CancelFd() const { return wake_lost_.load(std::memory_order_acquire) ? -1 : wake_fd_; }
  void ListenLoop();
  void WorkerLoop();
  void Serve(int fd);
  // 0 when the request may be served, else the status of `refusal` (400, 401, 403).
  int CheckAccess(int fd, const HttpRequest& request, HttpResponse* refusal) const;

  Handler handler_;
  ThreadStarter starter_;
  Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the listener on Stop
  // Which files they are: the program may close either (closefrom) and reuse the number.
  // Checked before each use; a lost one is never read, written or closed by us again.
  FdIdentity listen_id_;
  FdIdentity wake_id_;
  std::atomic<bool> wake_lost_{false};
  std::string bound_;
  uint16_t port_ = 0;
  pthread_t listener_{};
  std::vector<pthread_t> workers_;
  // Serializes Stop: the second caller waits for the first's joins. Taken before mu_.
  Mutex stop_mu_ ACQUIRED_BEFORE(mu_);
  bool running_ = false;

  Mutex mu_;
  CondVar cv_;  // new connections, stop
  CondVar freed_;  // a worker is done with its connection
  std::deque<int> pending_ GUARDED_BY(mu_);  // accepted, waiting for a worker
  int busy_ GUARDED_BY(mu_) = 0;             // workers serving a connection
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_HTTP_SERVER_H_
