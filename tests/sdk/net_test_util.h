// The other side of the wire for the network tests, written independently of the code under
// test: a loopback client, and a loopback stand-in for a Pyroscope server with its own
// request parsing (not the client's), so the bytes on the wire are what is checked.
#ifndef INPROF_TESTS_SDK_NET_TEST_UTIL_H_
#define INPROF_TESTS_SDK_NET_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/http.h"

namespace inprof::test {

using namespace std::chrono_literals;

inline int ConnectLoopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `raw` and returns everything the server sends until it closes.
inline std::string Exchange(uint16_t port, const std::string& raw) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "connect failed";
  size_t off = 0;
  while (off < raw.size()) {
    ssize_t n = send(fd, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

struct Received {
  std::string method, target;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

// A loopback "Pyroscope": records every request and answers with status_for(n) (n counts
// from 0). A gate, when set, holds every answer until it is opened.
class FakeIngest {
 public:
  explicit FakeIngest(std::function<int(size_t)> status_for) : status_for_(std::move(status_for)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakeIngest() {
    Open();
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }
  void Hold() {
    gate_ = std::make_shared<std::promise<void>>();
    held_ = gate_->get_future().share();
  }
  void Open() {
    if (gate_) {
      gate_->set_value();
      gate_.reset();
    }
  }
  // Waits until `n` requests have arrived (fails the test after 60 s).
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 60s, [&] { return seen_ >= n; });
  }
  std::vector<Received> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Loop() {
    for (;;) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stop_) return;
        continue;
      }
      Received r;
      std::string data;
      char buf[65536];
      size_t head_end = std::string::npos;
      size_t length = 0;
      for (;;) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
        if (head_end == std::string::npos &&
            (head_end = data.find("\r\n\r\n")) != std::string::npos) {
          std::string head = data.substr(0, head_end);
          size_t eol = head.find("\r\n");
          std::string line = head.substr(0, eol);
          r.method = line.substr(0, line.find(' '));
          r.target = line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1);
          size_t p = eol + 2;
          while (p < head.size()) {
            size_t e = head.find("\r\n", p);
            if (e == std::string::npos) e = head.size();
            std::string field = head.substr(p, e - p);
            size_t colon = field.find(':');
            std::string name = field.substr(0, colon);
            for (char& ch : name)
              ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            std::string value = field.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            r.headers[name] = value;
            p = e + 2;
          }
          length =
              std::stoul(r.headers.count("content-length") ? r.headers["content-length"] : "0");
        }
        if (head_end != std::string::npos && data.size() >= head_end + 4 + length) break;
      }
      if (head_end != std::string::npos) r.body = data.substr(head_end + 4, length);
      size_t index;
      {
        std::lock_guard<std::mutex> lock(mu_);
        index = requests_.size();
        requests_.push_back(r);
        ++seen_;
      }
      cv_.notify_all();
      if (held_.valid()) held_.wait();
      const int status = status_for_(index);
      std::string answer = "HTTP/1.1 " + std::to_string(status) +
                           " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno";
      send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      close(c);
    }
  }

  std::function<int(size_t)> status_for_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::shared_ptr<std::promise<void>> gate_;
  std::shared_future<void> held_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Received> requests_;
  size_t seen_ = 0;
};

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Repeats `attempt` until it returns true or `limit` passes, pausing 10 ms between attempts.
inline bool Eventually(const std::function<bool()>& attempt, std::chrono::milliseconds limit) {
  const Clock::time_point end = Clock::now() + limit;
  for (;;) {
    if (attempt()) return true;
    if (Clock::now() >= end) return false;
    poll(nullptr, 0, 10);
  }
}

// A port nobody listens on right now, for a program to listen on later. Taken below the
// kernel's ephemeral range (ip_local_port_range), where no bind to port 0 lands: a port the
// kernel handed out here and freed could be given to another test's server (bind to port 0)
// before the program binds it, and this test's clients would then talk to that server.
inline uint16_t FreePort() {
  unsigned low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%u %u", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  const unsigned first = low > 12000 ? low - 10000 : 1024;
  const unsigned span = low > first ? low - first : 1;
  std::random_device seed;
  std::mt19937 pick(seed());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<uint16_t>(first + pick() % span);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (free) return port;
  }
  ADD_FAILURE() << "no free port below the ephemeral range";
  return 0;
}

// The endpoint comes up while the program starts: waits (at most `seconds`) until it
// accepts, by connecting, not by sleeping for a guessed time.
inline bool WaitForListener(uint16_t port, int seconds) {
  return Eventually(
      [&] {
        const int fd = ConnectLoopback(port);
        if (fd < 0) return false;
        close(fd);
        return true;
      },
      std::chrono::seconds(seconds));
}

// Connects and sends `raw` without reading anything; the socket is returned open.
inline int SendOnly(uint16_t port, const std::string& raw, int receive_buffer = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (receive_buffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(send(fd, raw.data(), raw.size(), MSG_NOSIGNAL), static_cast<ssize_t>(raw.size()));
  return fd;
}

// A backend that accepts connections and never answers nor reads: every request hangs.
class SilentBackend {
 public:
  SilentBackend() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        held_.push_back(c);
        cv_.notify_all();
      }
    });
  }
  ~SilentBackend() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
    for (int c : held_) close(c);
  }
  uint16_t port() const { return port_; }
  bool WaitForConnection() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, [this] { return !held_.empty(); });
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> held_;
};

// The query of a request target, decoded.
inline std::map<std::string, std::string> DecodedQuery(const std::string& target) {
  std::map<std::string, std::string> out;
  size_t q = target.find('?');
  std::string query = target.substr(q + 1);
  size_t p = 0;
  while (p <= query.size()) {
    size_t amp = query.find('&', p);
    if (amp == std::string::npos) amp = query.size();
    std::string item = query.substr(p, amp - p);
    size_t eq = item.find('=');
    std::string value;
    EXPECT_TRUE(internal::PercentDecode(item.substr(eq + 1), &value)) << item;
    out[item.substr(0, eq)] = value;
    p = amp + 1;
  }
  return out;
}

}  // namespace inprof::test

#endif  // INPROF_TESTS_SDK_NET_TEST_UTIL_H_
