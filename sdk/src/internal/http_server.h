// A small HTTP server for pulling profiles from a running process (INPROF_HTTP): one
// listening thread and a fixed pool of workers, one request per connection. More concurrent
// requests than workers get 503 at once; a slow client gets 408; a handler that waits (a
// ?seconds=N capture) is woken when the server stops. Control path.
#ifndef INPROF_SDK_HTTP_SERVER_H_
#define INPROF_SDK_HTTP_SERVER_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "internal/http.h"

namespace inprof::internal {

// Starts a thread for the server (the runtime's starter blocks signals and keeps the thread
// out of sampling). Returns false with errno set on failure.
using ThreadStarter = std::function<bool(pthread_t*, void* (*)(void*), void*)>;

class HttpServer {
 public:
  // What a handler may do besides computing its answer: wait, cut short by Stop.
  class Context {
   public:
    explicit Context(HttpServer* server) : server_(server) {}
    // Sleeps for `duration` unless the server stops first; false when it stopped.
    bool WaitFor(std::chrono::milliseconds duration);

   private:
    HttpServer* server_;
  };
  using Handler = std::function<HttpResponse(const HttpRequest&, Context&)>;

  struct Options {
    int workers = 4;
    int read_timeout_ms = 5000;   // for the request head
    int write_timeout_ms = 30000;
  };

  HttpServer(Handler handler, ThreadStarter starter, Options options);
  HttpServer(Handler handler, ThreadStarter starter) : HttpServer(std::move(handler), std::move(starter), Options()) {}
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. The status names the address on failure (EADDRINUSE, ...).
  Status Start(const ListenAddress& address);
  // Stops accepting, wakes waiting handlers, answers queued connections with 503 and joins
  // every thread. Idempotent.
  void Stop();
  // The bound address, with the port the kernel chose for port 0.
  const std::string& address() const { return bound_; }
  uint16_t port() const { return port_; }

 private:
  static void* ListenEntry(void* self);
  static void* WorkerEntry(void* self);
  void ListenLoop();
  void WorkerLoop();
  void Serve(int fd);

  Handler handler_;
  ThreadStarter starter_;
  Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the listener on Stop
  std::string bound_;
  uint16_t port_ = 0;
  pthread_t listener_{};
  std::vector<pthread_t> workers_;
  bool running_ = false;

  std::mutex mu_;
  std::condition_variable cv_;  // new connections, stop
  std::deque<int> pending_;     // accepted, waiting for a worker
  int busy_ = 0;                // workers serving a connection
  bool stopping_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_HTTP_SERVER_H_
