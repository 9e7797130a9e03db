// The pull endpoint and the Pyroscope push client, against loopback peers written here
// independently of the code under test (their own request parsing), so both sides of the wire
// are checked rather than one implementation agreeing with itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../exporters/test_profiles.h"
#include "inprof/speedscope.h"
#include "net/http.h"
#include "net/http_server.h"
#include "net/pull_handler.h"
#include "net/push_client.h"
#include "net_test_util.h"
#include "pprof_reader.h"
#include "pyroscope_form.h"

namespace inprof::internal {
namespace {

using test::Clock;
using test::ConnectLoopback;
using test::DecodedQuery;
using test::Eventually;
using test::Exchange;
using test::FakeIngest;
using test::Received;
using test::SecondsSince;
using test::SendOnly;
using test::SilentBackend;

using namespace std::chrono_literals;

bool PlainStarter(pthread_t* thread, void* (*start)(void*), void* arg) {
  return pthread_create(thread, nullptr, start, arg) == 0;
}

// ---------------------------------------------------------------------------------------------
// A minimal client and server for the other side of the wire.

int StatusOf(const std::string& response) {
  if (response.size() < 12 || response.compare(0, 9, "HTTP/1.1 ") != 0) return -1;
  return std::stoi(response.substr(9, 3));
}

std::string BodyOf(const std::string& response) {
  size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? std::string() : response.substr(p + 4);
}

std::string Get(uint16_t port, const std::string& target, const std::string& extra = "") {
  return Exchange(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                            "\r\n" + extra + "\r\n");
}

// `raw` with a Host header naming the server after its request line (when it has one).
std::string WithHost(std::string raw, uint16_t port) {
  const size_t eol = raw.find("\r\n");
  const bool has_method = raw.compare(0, 4, "GET ") == 0 || raw.compare(0, 5, "POST ") == 0 ||
                          raw.compare(0, 7, "DELETE ") == 0;
  if (eol == std::string::npos || !has_method) {
    return raw;
  }
  return raw.insert(eol + 2, "Host: 127.0.0.1:" + std::to_string(port) + "\r\n");
}

Profile TwoEventProfile() {
  test::ProfileBuilder b;
  b.AddEvent("wall", "nanoseconds");
  uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  uint32_t hot = b.Frame("hot", "/src/hot.cpp", 20);
  uint32_t cold = b.Frame("cold", "/src/cold.cpp", 30);
  b.Sample({main, hot}, {300, 10});
  b.Sample({main, cold}, {100, 0});
  b.Sample({main}, {0, 50});
  Profile p = b.profile();
  p.events[0].frequency_hz = 99;
  p.events[1].frequency_hz = 19;
  return p;
}

// ---------------------------------------------------------------------------------------------
// URL and label parsing.

TEST(HttpUrl, ParsesHostPortAndPathAndRefusesWhatItCannotSpeak) {
  HttpUrl u;
  ASSERT_TRUE(ParseHttpUrl("http://pyroscope.local:4040/base/", &u).ok());
  EXPECT_EQ(u.host, "pyroscope.local");
  EXPECT_EQ(u.port, 4040);
  EXPECT_EQ(u.path, "/base");
  ASSERT_TRUE(ParseHttpUrl("http://[::1]:8080", &u).ok());
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  ASSERT_TRUE(ParseHttpUrl("http://h", &u).ok());
  EXPECT_EQ(u.port, 80);
  Status s = ParseHttpUrl("https://h:4040", &u);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("https is not supported"), std::string::npos) << s.message();
  for (const char* bad : {"h:4040", "http://:4040", "http://h:0", "http://h:99999", "http://h:x",
                          "http://h/a?b=c", "http://u:p@h"}) {
    EXPECT_FALSE(ParseHttpUrl(bad, &u).ok()) << bad;
  }
}

TEST(HttpUrl, PercentEncodingRoundTrips) {
  const std::string text = "app.cpu{env=prod,host=a b/c}~_-.";
  std::string back;
  ASSERT_TRUE(PercentDecode(PercentEncode(text), &back));
  EXPECT_EQ(back, text);
  EXPECT_EQ(PercentEncode("a{b}"), "a%7Bb%7D");
  EXPECT_FALSE(PercentDecode("%4", &back));
  EXPECT_FALSE(PercentDecode("%zz", &back));
}

TEST(PushLabels, ParsesListsAndNamesTheBadLabel) {
  std::vector<std::pair<std::string, std::string>> labels;
  ASSERT_TRUE(ParsePushLabels("env=prod, region=eu-west;zone=b", &labels).ok());
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[1].first, "region");
  EXPECT_EQ(labels[1].second, "eu-west");
  Status s = ParsePushLabels("env=prod,9x=1", &labels);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'9x'"), std::string::npos) << s.message();
  EXPECT_FALSE(ParsePushLabels("env", &labels).ok());
  EXPECT_FALSE(ParsePushLabels("env=a{b", &labels).ok());
  EXPECT_FALSE(ParsePushLabels("env=a,env=b", &labels).ok());
  EXPECT_FALSE(ParsePushLabels("service_name=x", &labels).ok());
  EXPECT_TRUE(CheckAppName("checkout-api.v2").ok());
  EXPECT_FALSE(CheckAppName("bad name").ok());
  EXPECT_FALSE(CheckAppName("").ok());
}

TEST(ListenAddress, LoopbackByDefaultAndNumericOnly) {
  ListenAddress a;
  ASSERT_TRUE(ParseListenAddress(":6060", &a).ok());
  EXPECT_EQ(a.text, "127.0.0.1:6060");
  ASSERT_TRUE(ParseListenAddress("localhost:0", &a).ok());
  EXPECT_EQ(a.text, "127.0.0.1:0");
  ASSERT_TRUE(ParseListenAddress("[::1]:7000", &a).ok());
  EXPECT_EQ(a.text, "[::1]:7000");
  ASSERT_TRUE(ParseListenAddress("0.0.0.0:7000", &a).ok());
  for (const char* bad : {"6060", "example.com:80", "127.0.0.1:", "127.0.0.1:70000", "[::1]"}) {
    EXPECT_FALSE(ParseListenAddress(bad, &a).ok()) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// The pull endpoint.

class PullTest : public ::testing::Test {
 protected:
  void StartServer(int workers = 4) {
    HttpServer::Options options;
    options.workers = workers;
    options.read_timeout_ms = 300;
    StartServerWith(options);
  }
  void StartServerWith(HttpServer::Options options, const char* listen = "127.0.0.1:0") {
    source_.snapshot = [this] {
      ++snapshots_;
      return TwoEventProfile();
    };
    source_.start_capture = [this]() -> uint64_t {
      if (refuse_captures_) return 0;
      return ++captures_started_;
    };
    source_.finish_capture = [this](uint64_t id) -> std::optional<Profile> {
      {
        std::lock_guard<std::mutex> lock(finished_mu_);
        finished_.push_back(id);
      }
      ++captures_finished_;
      return TwoEventProfile();
    };
    server_ = std::make_unique<HttpServer>(
        [this](const HttpRequest& r, HttpServer::Context& c) {
          if (handler_) return handler_(r, c);
          return HandlePull(r, c, source_, {});
        },
        &PlainStarter, options);
    ListenAddress address;
    ASSERT_TRUE(ParseListenAddress(listen, &address).ok());
    Status s = server_->Start(address);
    ASSERT_TRUE(s.ok()) << s.message();
    port_ = server_->port();
    ASSERT_NE(port_, 0);
  }

  PullSource source_;
  std::atomic<int> snapshots_{0};
  std::atomic<uint64_t> captures_started_{0};
  std::atomic<uint64_t> captures_finished_{0};
  std::mutex finished_mu_;
  std::vector<uint64_t> finished_;
  bool refuse_captures_ = false;
  HttpServer::Handler handler_;  // instead of the pull handler, when set
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(PullTest, ServesEveryFormatOfTheProfileSoFar) {
  StartServer();
  std::string r = Get(port_, "/debug/inprof/folded");
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(BodyOf(r).find("main;hot 300\n"), std::string::npos) << BodyOf(r);
  EXPECT_NE(BodyOf(r).find("main;cold 100\n"), std::string::npos) << BodyOf(r);

  r = Get(port_, "/debug/inprof/folded?event=wall&lines=1");
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(BodyOf(r).find("main (/src/main.cpp:10) 50\n"), std::string::npos) << BodyOf(r);

  r = Get(port_, "/debug/inprof/annotations");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_NE(r.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(BodyOf(r).find("\"format\":\"inprof-annotations\""), std::string::npos)
      << BodyOf(r).substr(0, 200);

  r = Get(port_, "/debug/inprof/perf.log");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_NE(BodyOf(r).find("main /src/main.cpp:10;hot /src/hot.cpp:20 300\n"), std::string::npos)
      << BodyOf(r);

  r = Get(port_, "/debug/inprof/flame.svg");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_EQ(BodyOf(r).rfind("<?xml", 0), 0u);

  r = Get(port_, "/debug/inprof/profile.pb.gz");
  ASSERT_EQ(StatusOf(r), 200);
  std::string raw, error;
  ASSERT_TRUE(test::Gunzip(BodyOf(r), &raw, &error)) << error;
  test::PprofProfile p;
  ASSERT_TRUE(test::DecodePprof(raw, &p, &error)) << error;
  EXPECT_EQ(p.sample_types.size(), 2u);
  EXPECT_EQ(captures_started_, 0u);  // the profile so far: no capture
  EXPECT_EQ(snapshots_, 6);

  r = Get(port_, "/debug/pprof/");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_NE(BodyOf(r).find("/debug/pprof/profile?seconds=N"), std::string::npos);
}

// A profile of CPU time and allocations, as the runtime makes with events=cpu,alloc.
Profile CpuAndAllocProfile() {
  test::ProfileBuilder b;
  b.AddEvent("alloc_objects", "count");
  b.AddEvent("alloc_space", "bytes");
  b.AddEvent("inuse_objects", "count");
  b.AddEvent("inuse_space", "bytes");
  uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  uint32_t grow = b.Frame("grow", "/src/grow.cpp", 20);
  b.Sample({main, grow}, {300, 10, 4000, 2, 1000});
  b.Sample({main}, {100, 0, 0, 0, 0});
  return b.profile();  // the builder's first event is cpu
}

// A pprof endpoint's answer, decoded, and its sample types as "type/unit".
::testing::AssertionResult ServedPprof(const std::string& response, test::PprofProfile* p) {
  if (StatusOf(response) != 200) return ::testing::AssertionFailure() << response;
  std::string raw, error;
  if (!test::Gunzip(BodyOf(response), &raw, &error) || !test::DecodePprof(raw, p, &error)) {
    return ::testing::AssertionFailure() << error;
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::string> SampleTypes(const test::PprofProfile& p) {
  std::vector<std::string> types;
  for (const auto& t : p.sample_types) types.push_back(p.S(t.type) + "/" + p.S(t.unit));
  return types;
}

// Go's heap and allocs profiles: the allocation events only, the live ones first for heap,
// what was allocated first for allocs; a profile without them says how to get them.
TEST_F(PullTest, HeapAndAllocsServeTheAllocationEventsAsGoDoes) {
  StartServer();
  std::string r = Get(port_, "/debug/pprof/heap");
  EXPECT_EQ(StatusOf(r), 404) << r;
  EXPECT_NE(BodyOf(r).find("INPROF_EVENTS=alloc"), std::string::npos) << r;

  source_.snapshot = [] { return CpuAndAllocProfile(); };
  for (const char* path : {"/debug/pprof/heap", "/debug/pprof/allocs"}) {
    test::PprofProfile p;
    ASSERT_TRUE(ServedPprof(Get(port_, path), &p));
    const std::vector<std::string> types = SampleTypes(p);
    const bool heap = std::string(path) == "/debug/pprof/heap";
    const std::vector<std::string> expected =
        heap ? std::vector<std::string>{"inuse_space/bytes", "inuse_objects/count",
                                        "alloc_space/bytes", "alloc_objects/count"}
             : std::vector<std::string>{"alloc_space/bytes", "alloc_objects/count",
                                        "inuse_space/bytes", "inuse_objects/count"};
    EXPECT_EQ(types, expected);
    EXPECT_EQ(p.S(p.period_type.type), "space");
    EXPECT_EQ(p.S(p.default_sample_type), heap ? "inuse_space" : "alloc_space");
    // The CPU-only stack has no allocation weight: it is not in the profile.
    ASSERT_EQ(p.samples.size(), 1u);
    EXPECT_EQ(p.samples[0].values[0], heap ? 1000 : 4000);
  }
}

// Go's mutex profile: the lock events only, contentions/count and delay/nanoseconds with the
// delay shown; a profile without them says how to get them.
TEST_F(PullTest, MutexServesTheLockEventsAsGoDoes) {
  StartServer();
  source_.snapshot = [] { return CpuAndAllocProfile(); };
  std::string r = Get(port_, "/debug/pprof/mutex");
  EXPECT_EQ(StatusOf(r), 404) << r;
  EXPECT_NE(BodyOf(r).find("INPROF_EVENTS=lock"), std::string::npos) << r;

  source_.snapshot = [] {
    test::ProfileBuilder b;
    b.AddEvent("lock_contentions", "count");
    b.AddEvent("lock_delay", "nanoseconds");
    const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
    const uint32_t push = b.Frame("queue_push", "/src/queue.cpp", 40);
    b.Sample({main, push}, {2, 3, 75000});
    b.Sample({main}, {100, 0, 0});
    Profile p = b.profile();
    for (EventInfo& e : p.events) e.period = 1;
    return p;
  };
  test::PprofProfile p;
  ASSERT_TRUE(ServedPprof(Get(port_, "/debug/pprof/mutex"), &p));
  EXPECT_EQ(SampleTypes(p), (std::vector<std::string>{"contentions/count", "delay/nanoseconds"}));
  EXPECT_EQ(p.S(p.period_type.type), "contentions");
  EXPECT_EQ(p.S(p.default_sample_type), "delay");
  ASSERT_EQ(p.samples.size(), 1u);  // the CPU-only stack waited for no lock
  EXPECT_EQ(p.samples[0].values, (std::vector<int64_t>{3, 75000}));
}

// Go's block profile: the condition waits only, named as Go names them (contentions/count,
// delay/nanoseconds) with the delay shown; the lock events stay out of it.
TEST_F(PullTest, BlockServesTheConditionWaitsAsGoDoes) {
  StartServer();
  source_.snapshot = [] { return CpuAndAllocProfile(); };
  std::string r = Get(port_, "/debug/pprof/block");
  EXPECT_EQ(StatusOf(r), 404) << r;
  EXPECT_NE(BodyOf(r).find("INPROF_EVENTS=cond"), std::string::npos) << r;

  source_.snapshot = [] {
    test::ProfileBuilder b;
    b.AddEvent("lock_contentions", "count");
    b.AddEvent("lock_delay", "nanoseconds");
    b.AddEvent("cond_waits", "count");
    b.AddEvent("cond_delay", "nanoseconds");
    const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
    const uint32_t push = b.Frame("queue_push", "/src/queue.cpp", 40);
    const uint32_t pop = b.Frame("queue_pop", "/src/queue.cpp", 60);
    //                 cpu lock_c lock_d cond_w cond_d
    b.Sample({main, push}, {2, 3, 75000, 0, 0});
    b.Sample({main, pop}, {0, 0, 0, 5, 9000000});
    Profile p = b.profile();
    for (EventInfo& e : p.events) e.period = 1;
    return p;
  };
  test::PprofProfile p;
  ASSERT_TRUE(ServedPprof(Get(port_, "/debug/pprof/block"), &p));
  EXPECT_EQ(SampleTypes(p), (std::vector<std::string>{"contentions/count", "delay/nanoseconds"}));
  EXPECT_EQ(p.S(p.period_type.type), "contentions");
  EXPECT_EQ(p.S(p.default_sample_type), "delay");
  ASSERT_EQ(p.samples.size(), 1u);  // the lock wait is not a condition wait
  EXPECT_EQ(p.samples[0].values, (std::vector<int64_t>{5, 9000000}));
}

TEST_F(PullTest, ServesSpeedscopeAndFoldedRootedAtThreadsOrLabels) {
  StartServer();
  std::string r = Get(port_, "/debug/inprof/speedscope.json?event=wall");
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(r.find("Content-Type: application/json"), std::string::npos);
  Profile read;
  Status s = ReadSpeedscope(BodyOf(r), "pull", &read);
  ASSERT_TRUE(s.ok()) << s.message();
  int64_t total = 0;
  for (const Sample& sample : read.samples) total += sample.weights.at(0);
  EXPECT_EQ(total, 60);  // the wall event: 10 + 50

  // A label as the root frame: the samples without it under "[no KEY]".
  r = Get(port_, "/debug/inprof/folded?root=label:endpoint");
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(BodyOf(r).find("[no endpoint];main;hot 300\n"), std::string::npos) << BodyOf(r);
  r = Get(port_, "/debug/inprof/folded?root=anything");
  EXPECT_EQ(StatusOf(r), 400) << r;
  EXPECT_NE(BodyOf(r).find("root: expected thread or label:KEY"), std::string::npos) << r;
}

TEST_F(PullTest, ProfileWithSecondsCapturesThatSpanLikeGoPprof) {
  StartServer();
  std::string r = Get(port_, "/debug/pprof/profile?seconds=1");
  ASSERT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(r.find("Content-Type: application/octet-stream"), std::string::npos);
  std::string raw, error;
  ASSERT_TRUE(test::Gunzip(BodyOf(r), &raw, &error)) << error;
  test::PprofProfile p;
  ASSERT_TRUE(test::DecodePprof(raw, &p, &error)) << error;
  int64_t total = 0;
  for (const auto& s : p.samples) total += s.values[0];
  EXPECT_EQ(total, 400);
  EXPECT_EQ(captures_started_, 1u);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0], 1u);
  EXPECT_EQ(snapshots_, 0);

  // ?seconds on the other endpoints captures too.
  r = Get(port_, "/debug/inprof/folded?seconds=1");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_EQ(captures_started_, 2u);
}

TEST_F(PullTest, BadRequestsGetFourHundredsThatSayWhy) {
  StartServer();
  struct Case {
    std::string raw;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"GET /debug/pprof/profile?seconds=abc HTTP/1.1\r\n\r\n", 400, "seconds"},
      {"GET /debug/pprof/profile?seconds=0 HTTP/1.1\r\n\r\n", 400, "seconds"},
      {"GET /debug/pprof/profile?seconds=99999 HTTP/1.1\r\n\r\n", 400, "seconds"},
      {"GET /debug/inprof/folded?secnds=1 HTTP/1.1\r\n\r\n", 400, "unknown parameter 'secnds'"},
      {"GET /debug/inprof/folded?event=cycles HTTP/1.1\r\n\r\n", 400, "no event 'cycles'"},
      {"GET /debug/inprof/folded?lines=yes HTTP/1.1\r\n\r\n", 400, "lines"},
      {"GET /debug/inprof/folded?x=%zz HTTP/1.1\r\n\r\n", 400, "Bad Request"},
      {"GET /nope HTTP/1.1\r\n\r\n", 404, "/nope"},
      {"POST /debug/inprof/folded HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, "GET"},
      {"DELETE /debug/pprof/ HTTP/1.1\r\n\r\n", 405, "GET"},
      {"GET /debug/pprof/ HTTP/9.9\r\n\r\n", 400, "Bad Request"},
      {"GET nothing HTTP/1.1\r\n\r\n", 400, "Bad Request"},
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), 400,
       "Bad Request"},  // a TLS ClientHello's first bytes
      {"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400, "Bad Request"},
      {"GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n", 414, "URI Too Long"},
      {"GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", 431, "Too Large"},
      {"GET / HTTP/1.1\r\n", 408, "Timeout"},  // never finished: the read times out
  };
  for (const Case& c : cases) {
    std::string r = Exchange(port_, WithHost(c.raw, port_));
    EXPECT_EQ(StatusOf(r), c.status) << c.raw.substr(0, 80) << "\n" << r.substr(0, 300);
    EXPECT_NE(r.find(c.says), std::string::npos) << c.raw.substr(0, 80) << "\n" << r.substr(0, 300);
  }
  // A POST's 405 names the allowed method.
  std::string r = Exchange(port_, WithHost("POST /debug/inprof/folded HTTP/1.1\r\n\r\n", port_));
  EXPECT_NE(r.find("Allow: GET"), std::string::npos) << r;
  // Still serving after all that.
  EXPECT_EQ(StatusOf(Get(port_, "/debug/inprof/folded")), 200);
  EXPECT_EQ(captures_started_, 0u);  // no bad request started a capture
}

TEST_F(PullTest, RandomBytesNeverCrashTheServer) {
  StartServer();
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string raw(static_cast<size_t>(rng() % 600), '\0');
    for (char& c : raw) c = static_cast<char>(rng());
    if (i % 2 == 0) raw = "GET /debug/" + raw;
    raw += "\r\n\r\n";
    std::string r = Exchange(port_, raw);
    const int status = StatusOf(r);
    EXPECT_TRUE(status == 400 || status == 403 || status == 404 || status == 414 || status == 431 ||
                status == 405)
        << status << " for input " << i;
  }
  EXPECT_EQ(StatusOf(Get(port_, "/debug/inprof/folded")), 200);
}

TEST_F(PullTest, BusyWorkersAnswer503AndStopEndsACaptureAtOnce) {
  StartServer(/*workers=*/1);
  // One long capture occupies the only worker.
  std::promise<std::string> long_answer;
  std::thread client(
      [&] { long_answer.set_value(Get(port_, "/debug/pprof/profile?seconds=600")); });
  while (captures_started_ == 0) std::this_thread::yield();
  std::string r = Get(port_, "/debug/inprof/folded");
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(r.find("Retry-After"), std::string::npos);
  // Stopping the server wakes the capture (it does not wait out its 600 s).
  server_->Stop();
  r = long_answer.get_future().get();
  client.join();
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(r.find("stopped"), std::string::npos) << r;
  EXPECT_EQ(finished_.size(), 1u);  // the capture was ended, not leaked
  EXPECT_EQ(ConnectLoopback(port_), -1);
}

TEST_F(PullTest, ACaptureThatCannotStartIs503) {
  refuse_captures_ = true;
  StartServer();
  std::string r = Get(port_, "/debug/pprof/profile?seconds=5");
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(r.find("capture"), std::string::npos);
}

TEST(HttpServerTest, AnAddressInUseIsAClearError) {
  HttpServer first([](const HttpRequest&, HttpServer::Context&) { return HttpResponse{}; },
                   &PlainStarter);
  ListenAddress a;
  ASSERT_TRUE(ParseListenAddress("127.0.0.1:0", &a).ok());
  ASSERT_TRUE(first.Start(a).ok());
  ASSERT_TRUE(ParseListenAddress("127.0.0.1:" + std::to_string(first.port()), &a).ok());
  HttpServer second([](const HttpRequest&, HttpServer::Context&) { return HttpResponse{}; },
                    &PlainStarter);
  Status s = second.Start(a);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------------------------------------
// Access checks: Host (DNS rebinding) and the bearer token.

sockaddr_storage V4(const char* text) {
  sockaddr_storage a{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
  v4->sin_family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, text, &v4->sin_addr), 1) << text;
  return a;
}

sockaddr_storage V6(const char* text) {
  sockaddr_storage a{};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
  v6->sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, text, &v6->sin6_addr), 1) << text;
  return a;
}

TEST(HttpHost, OnlyTheConnectionsOwnAddressLocalhostOnLoopbackAndListedNames) {
  const std::vector<std::string> names = {"profiler.internal"};
  const sockaddr_storage loop4 = V4("127.0.0.1");
  for (const char* ok : {"127.0.0.1", "127.0.0.1:6060", "127.0.0.1:1", "localhost", "LocalHost:80",
                         "profiler.internal", "Profiler.Internal:8080"}) {
    EXPECT_TRUE(HttpHostAllowed(ok, loop4, names)) << ok;
  }
  for (const char* bad :
       {"", ":6060", "evil.example", "evil.example:6060", "127.0.0.2", "127.0.0.1.nip.io",
        "localhost.evil.example", "[::1]", "[::1]:6060", "127.0.0.1:", "127.0.0.1:x",
        "127.0.0.1:99999", "localhost:6060:1", "2130706433", "0x7f.0.0.1", "profiler.internal.evil",
        "[127.0.0.1]", "127.0.0.1 "}) {
    EXPECT_FALSE(HttpHostAllowed(bad, loop4, names)) << bad;
  }
  // IPv6 loopback: the bracketed literal, localhost.
  const sockaddr_storage loop6 = V6("::1");
  EXPECT_TRUE(HttpHostAllowed("[::1]", loop6, {}));
  EXPECT_TRUE(HttpHostAllowed("[::1]:6060", loop6, {}));
  EXPECT_TRUE(HttpHostAllowed("[0:0:0:0:0:0:0:1]", loop6, {}));
  EXPECT_TRUE(HttpHostAllowed("localhost", loop6, {}));
  EXPECT_FALSE(HttpHostAllowed("127.0.0.1", loop6, {}));
  EXPECT_FALSE(HttpHostAllowed("::1", loop6, {}));  // unbracketed: not a valid Host
  // A wildcard bind: the address the client reached (the accepted connection's own), never
  // localhost off loopback, never a name that is not listed.
  const sockaddr_storage lan = V4("10.1.2.3");
  EXPECT_TRUE(HttpHostAllowed("10.1.2.3:6060", lan, names));
  EXPECT_FALSE(HttpHostAllowed("10.1.2.4", lan, names));
  EXPECT_FALSE(HttpHostAllowed("localhost", lan, names));
  EXPECT_FALSE(HttpHostAllowed("myhost", lan, names));
  EXPECT_TRUE(HttpHostAllowed("profiler.internal", lan, names));
  // An IPv4 client of a dual-stack [::] socket has an IPv4-mapped local address.
  const sockaddr_storage mapped = V6("::ffff:10.1.2.3");
  EXPECT_TRUE(HttpHostAllowed("10.1.2.3", mapped, {}));
  EXPECT_FALSE(HttpHostAllowed("10.1.2.4", mapped, {}));
  EXPECT_TRUE(HttpHostAllowed("localhost", V6("::ffff:127.0.0.1"), {}));
}

TEST(HttpBearer, MatchesOnlyTheWholeTokenUnderTheBearerScheme) {
  const std::string token = "0123456789abcdef-token";
  EXPECT_TRUE(HttpBearerMatches("Bearer " + token, token));
  EXPECT_TRUE(HttpBearerMatches("bearer   " + token + " ", token));
  EXPECT_TRUE(HttpBearerMatches("BEARER\t" + token, token));
  for (const std::string& bad : std::vector<std::string>{
           std::string(), "Bearer", "Bearer ", token, "Basic " + token, "Bearer " + token + "x",
           "Bearer " + token.substr(0, token.size() - 1), "Bearer x" + token,
           "Bearer " + std::string(token.size(), 'a'), "Bearer" + token, "Token " + token}) {
    EXPECT_FALSE(HttpBearerMatches(bad, token)) << bad;
  }
  EXPECT_FALSE(HttpBearerMatches("Bearer ", ""));  // no token configured never matches
}

TEST_F(PullTest, AWrongHostIs403AndAMissingHostOnHttp11Is400) {
  HttpServer::Options options;
  options.read_timeout_ms = 300;
  options.hosts = {"profiler.internal"};
  StartServerWith(options);
  const std::string port = std::to_string(port_);
  auto status = [&](const std::string& head) {
    return StatusOf(Exchange(port_, "GET /debug/inprof/folded " + head + "\r\n\r\n"));
  };
  EXPECT_EQ(status("HTTP/1.1\r\nHost: 127.0.0.1:" + port), 200);
  EXPECT_EQ(status("HTTP/1.1\r\nHost: 127.0.0.1"), 200);
  EXPECT_EQ(status("HTTP/1.1\r\nHost: localhost:" + port), 200);
  EXPECT_EQ(status("HTTP/1.1\r\nHost: localhost:9999"), 200);  // an ssh tunnel's port
  EXPECT_EQ(status("HTTP/1.1\r\nHost: profiler.internal"), 200);
  EXPECT_EQ(status("HTTP/1.0"), 200);  // HTTP/1.0 may omit Host (no browser does)
  const std::string r = Exchange(
      port_, "GET /debug/inprof/folded HTTP/1.1\r\nHost: attacker.example:" + port + "\r\n\r\n");
  EXPECT_EQ(StatusOf(r), 403) << r;
  EXPECT_NE(r.find("INPROF_HTTP_HOSTS"), std::string::npos) << r;
  EXPECT_EQ(BodyOf(r).find("main;hot"), std::string::npos) << "no profile in a refusal";
  EXPECT_EQ(status("HTTP/1.1\r\nHost: 127.0.0.2:" + port), 403);
  EXPECT_EQ(status("HTTP/1.1\r\nHost: [::1]:" + port), 403);  // not this IPv4 socket's address
  EXPECT_EQ(status("HTTP/1.1\r\nHost: "), 403);
  EXPECT_EQ(status("HTTP/1.1"), 400);  // RFC 9112: HTTP/1.1 without Host is a bad request
  EXPECT_EQ(status("HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: attacker.example"), 400);
  EXPECT_EQ(status("HTTP/1.0\r\nHost: attacker.example"), 403);
  // A refused request never reached the handler: no capture was opened.
  EXPECT_EQ(StatusOf(Exchange(port_,
                              "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: "
                              "evil.example\r\n\r\n")),
            403);
  EXPECT_EQ(captures_started_, 0u);
  EXPECT_EQ(snapshots_, 6);
}

TEST_F(PullTest, AnIpv6EndpointAcceptsItsBracketedAddress) {
  HttpServer::Options options;
  options.read_timeout_ms = 300;
  server_ = std::make_unique<HttpServer>(
      [](const HttpRequest&, HttpServer::Context&) {
        return HttpResponse{200, "text/plain", {}, "ok"};
      },
      &PlainStarter, options);
  ListenAddress address;
  ASSERT_TRUE(ParseListenAddress("[::1]:0", &address).ok());
  if (!server_->Start(address).ok()) GTEST_SKIP() << "no IPv6 loopback here";
  const uint16_t port = server_->port();
  auto status = [&](const std::string& host) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);
      return -1;
    }
    const std::string raw = "GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
    send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    close(fd);
    return StatusOf(out);
  };
  EXPECT_EQ(status("[::1]:" + std::to_string(port)), 200);
  EXPECT_EQ(status("[::1]"), 200);
  EXPECT_EQ(status("localhost"), 200);
  EXPECT_EQ(status("127.0.0.1"), 403);
  EXPECT_EQ(status("rebind.example"), 403);
}

TEST_F(PullTest, WithATokenEveryRequestNeedsItAsABearerCredential) {
  const std::string token = "s3cret-token-0123456789";
  HttpServer::Options options;
  options.read_timeout_ms = 300;
  options.token = token;
  StartServerWith(options);
  std::string r = Get(port_, "/debug/inprof/folded");
  EXPECT_EQ(StatusOf(r), 401) << r;
  EXPECT_NE(r.find("WWW-Authenticate: Bearer realm=\"inprof\"\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("INPROF_HTTP_TOKEN"), std::string::npos) << r;
  EXPECT_EQ(r.find(token), std::string::npos) << "the token is never shown";
  r = Get(port_, "/debug/inprof/folded", "Authorization: Bearer wrong-token-0123456789\r\n");
  EXPECT_EQ(StatusOf(r), 401) << r;
  EXPECT_NE(r.find("error=\"invalid_token\""), std::string::npos) << r;
  EXPECT_EQ(r.find(token), std::string::npos);
  for (const std::string& bad :
       {"Authorization: Basic " + token + "\r\n", "Authorization: Bearer " + token + "0\r\n",
        "Authorization: Bearer " + token.substr(1) + "\r\n", "X-Token: " + token + "\r\n",
        "Authorization: Bearer " + token + "\r\nAuthorization: Bearer x\r\n"}) {
    EXPECT_EQ(StatusOf(Get(port_, "/debug/inprof/folded", bad)), 401) << bad;
  }
  // A capture is refused before it starts.
  EXPECT_EQ(StatusOf(Get(port_, "/debug/pprof/profile?seconds=1")), 401);
  EXPECT_EQ(captures_started_, 0u);
  EXPECT_EQ(snapshots_, 0);
  r = Get(port_, "/debug/inprof/folded", "Authorization: Bearer " + token + "\r\n");
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(BodyOf(r).find("main;hot 300\n"), std::string::npos);
  EXPECT_EQ(StatusOf(Get(port_, "/debug/pprof/", "authorization: bearer  " + token + "\r\n")), 200);
  // The Host check still applies with the right token.
  EXPECT_EQ(StatusOf(Exchange(port_,
                              "GET / HTTP/1.1\r\nHost: evil.example\r\nAuthorization: "
                              "Bearer " +
                                  token + "\r\n\r\n")),
            403);
}

// ---------------------------------------------------------------------------------------------
// Clients that go away, stall or never read: no worker is held past a known bound.

std::string CaptureRequest(uint16_t port, int seconds) {
  return "GET /debug/pprof/profile?seconds=" + std::to_string(seconds) +
         " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
}

TEST_F(PullTest, ACaptureEndsWhenItsClientGoesAwayAndFreesItsWorker) {
  StartServer(/*workers=*/1);
  for (const bool half_close : {false, true}) {
    const uint64_t before = captures_finished_;
    int fd = SendOnly(port_, CaptureRequest(port_, 600));
    ASSERT_TRUE(Eventually([&] { return captures_started_ > before; }, 10s));
    // The only worker is taken by the capture.
    EXPECT_EQ(StatusOf(Get(port_, "/debug/inprof/folded")), 503);
    const Clock::time_point gone = Clock::now();
    if (half_close) {
      shutdown(fd, SHUT_WR);  // curl and Go close; a half-close counts as gone too
    } else {
      close(fd);
    }
    ASSERT_TRUE(Eventually([&] { return captures_finished_ > before; }, 10s))
        << "the capture of 600 s was not ended";
    // Served again: the worker is free.
    ASSERT_TRUE(
        Eventually([&] { return StatusOf(Get(port_, "/debug/inprof/folded")) == 200; }, 10s));
    const double freed = SecondsSince(gone);
    EXPECT_LT(freed, 2.0) << "an abandoned capture must free its worker at once";
    if (half_close) close(fd);
    RecordProperty(half_close ? "half_close_freed_ms" : "close_freed_ms",
                   static_cast<int>(freed * 1000));
  }
}

TEST_F(PullTest, BytesAfterTheRequestDoNotEndACapture) {
  StartServer(/*workers=*/1);
  // A client that sends more (a pipelined request, stray bytes) and stays is still waited for.
  std::string raw = CaptureRequest(port_, 1) + "GET / HTTP/1.1\r\n";
  const Clock::time_point start = Clock::now();
  const std::string r = Exchange(port_, raw);
  EXPECT_EQ(StatusOf(r), 200) << r.substr(0, 200);
  EXPECT_GE(SecondsSince(start), 0.9);
}

TEST_F(PullTest, AClientThatNeverReadsALargeAnswerIsDroppedAtTheWriteTimeout) {
  HttpServer::Options options;
  options.workers = 1;
  options.read_timeout_ms = 300;
  options.write_timeout_ms = 500;
  handler_ = [](const HttpRequest& request, HttpServer::Context&) {
    HttpResponse r;
    r.body.assign(request.path == "/big" ? 64u << 20 : 2u, 'x');
    return r;
  };
  StartServerWith(options);
  const Clock::time_point start = Clock::now();
  int fd = SendOnly(port_, "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 4096);
  // The worker is stuck sending until the write timeout; then served again.
  ASSERT_TRUE(Eventually([&] { return StatusOf(Get(port_, "/small")) == 200; }, 20s));
  const double freed = SecondsSince(start);
  EXPECT_LT(freed, 0.5 + 2.0) << "write timeout 0.5 s, plus the drain before the close";
  RecordProperty("non_reader_freed_ms", static_cast<int>(freed * 1000));
  // What the client got is a cut answer: never the whole 64 MiB.
  close(fd);
}

TEST_F(PullTest, StopDoesNotWaitForSlowOrNonReadingClients) {
  // Long timeouts, as in production: Stop must not sit them out.
  HttpServer::Options options;
  options.workers = 3;
  options.read_timeout_ms = 30000;
  options.write_timeout_ms = 30000;
  handler_ = [](const HttpRequest& request, HttpServer::Context& context) {
    HttpResponse r;
    if (request.path == "/wait") {
      context.WaitFor(600s);
      return r;
    }
    // Far more than the loopback's socket buffers hold, so the worker is stuck in its write;
    // no more, since making the answer (the body and its copy in the response's text) is
    // work Stop waits for: 64 MiB took 0.46 s here and over 1 s under qemu.
    r.body.assign(16u << 20, 'x');
    return r;
  };
  StartServerWith(options);
  int slow = SendOnly(port_, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // never finished
  int reader = SendOnly(port_, "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 4096);
  int waiter = SendOnly(port_, "GET /wait HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  // Every worker is now busy with one of them.
  ASSERT_TRUE(Eventually([&] { return StatusOf(Get(port_, "/")) == 503; }, 10s));
  const Clock::time_point start = Clock::now();
  server_->Stop();
  const double stopped = SecondsSince(start);
  EXPECT_LT(stopped, 1.0) << "Stop waited for a client";
  RecordProperty("stop_ms", static_cast<int>(stopped * 1000));
  close(slow);
  close(reader);
  close(waiter);
}

TEST_F(PullTest, StopFromTwoThreadsAtOnceReturnsInBoth) {
  StartServer(/*workers=*/1);
  int fd = SendOnly(port_, CaptureRequest(port_, 600));
  ASSERT_TRUE(Eventually([&] { return captures_started_ > 0; }, 10s));
  std::thread other([&] { server_->Stop(); });
  server_->Stop();
  other.join();
  EXPECT_EQ(captures_finished_, 1u);
  EXPECT_EQ(ConnectLoopback(port_), -1);
  close(fd);
}

TEST(HttpParser, IsAPureFunctionOfTheBytesReceivedSoFar) {
  HttpRequest r;
  EXPECT_EQ(ParseHttpRequest("", &r), kHttpIncomplete);
  EXPECT_EQ(ParseHttpRequest("GET / HTTP/1.1\r\nHost: a\r\n", &r), kHttpIncomplete);
  ASSERT_EQ(ParseHttpRequest("GET /x?a=1&b=%41 HTTP/1.1\r\nHost: a\r\nX-Y:  z \r\n\r\nbody", &r),
            0);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.version, "HTTP/1.1");
  EXPECT_EQ(r.path, "/x");
  ASSERT_NE(r.Query("b"), nullptr);
  EXPECT_EQ(*r.Query("b"), "A");
  ASSERT_NE(r.Header("x-y"), nullptr);
  EXPECT_EQ(*r.Header("x-y"), "z");
  EXPECT_EQ(r.HeaderCount("host"), 1u);
  // Header fields that something downstream could read as two lines, or that are no tokens.
  for (const std::string& bad :
       {std::string("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nX: a\nb\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 27),
        std::string("GET / HTTP/1.1\r\nX(: a\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\n X: a\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nX\n: a\r\n\r\n"), std::string("GET /\x01 HTTP/1.1\r\n\r\n"),
        std::string("get / HTTP/1.1\r\n\r\n")}) {
    EXPECT_EQ(ParseHttpRequest(bad, &r), 400) << bad;
  }
  EXPECT_EQ(ParseHttpRequest("GET /" + std::string(kHttpMaxTarget + 64, 'a'), &r), 414);
  EXPECT_EQ(ParseHttpRequest("GET / HTTP/1.1\r\nX: " + std::string(kHttpMaxHead, 'a'), &r), 431);
}

// ---------------------------------------------------------------------------------------------
// The push client.

PushOptions OptionsFor(uint16_t port) {
  PushOptions o;
  EXPECT_TRUE(ParseHttpUrl("http://127.0.0.1:" + std::to_string(port), &o.url).ok());
  o.app_name = "checkout";
  o.labels = {{"env", "prod"}, {"region", "eu"}};
  o.tenant = "team-a";
  o.backoff_initial = 5ms;
  o.backoff_max = 50ms;
  o.timeout_ms = 5000;
  o.quiet = true;
  return o;
}

// Periods as the runtime sets them for time-based events: one sample stands for 1/hz.
Profile TwoEventProfileWithPeriods() {
  Profile p = TwoEventProfile();
  p.events[0].period = 1000000000 / 99;
  p.events[1].period = 1000000000 / 19;
  return p;
}

TEST(PushClientTest, EachEventOfAWindowIsOneIngestFormWithItsPprofAndSampleTypes) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  const int64_t start = 1795000000LL * 1000000000 + 250000000;  // .25 s past a second
  client.Enqueue(TwoEventProfileWithPeriods(), start, start + 10LL * 1000000000);
  ASSERT_TRUE(server.WaitFor(2));
  client.Stop(5s);
  std::vector<Received> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  // Per profile name Pyroscope gives the request: the event's column and total, its rate.
  struct Expected {
    std::string event;
    int64_t samples;
    int64_t period;
    std::string rate;
  };
  std::map<std::string, Expected> expected = {{"process_cpu", {"cpu", 400, 1000000000 / 99, "99"}},
                                              {"wall", {"wall", 60, 1000000000 / 19, "19"}}};
  for (const Received& r : got) {
    test::PushedForm f = test::DecodePushedForm(r);
    ASSERT_TRUE(expected.count(f.profile_name)) << f.profile_name;
    const Expected& e = expected[f.profile_name];
    // The application name alone: Pyroscope takes it whole as service_name.
    EXPECT_EQ(f.query["name"], "checkout{env=prod,region=eu}");
    EXPECT_EQ(f.query["from"], "1795000000");
    EXPECT_EQ(f.query["until"], "1795000011");  // the window's end, rounded up
    EXPECT_EQ(f.query["sampleRate"], e.rate);
    EXPECT_EQ(f.query["spyName"], "inprof");
    EXPECT_EQ(r.headers.at("x-scope-orgid"), "team-a");
    // This event only, as Go's CPU profile has it: the samples, then the time they stand for.
    ASSERT_EQ(f.types, (std::vector<std::string>{"samples", e.event}));
    EXPECT_EQ(f.units["samples"], "count");
    EXPECT_EQ(f.units[e.event], "nanoseconds");
    EXPECT_EQ(f.totals["samples"], e.samples);
    EXPECT_EQ(f.totals[e.event], e.samples * e.period);
    const test::SampleTypeConfig& samples = f.config["samples"];
    EXPECT_EQ(samples.units, "samples");
    EXPECT_EQ(samples.aggregation, "sum");
    EXPECT_FALSE(samples.cumulative);
    EXPECT_TRUE(samples.sampled);
    const test::SampleTypeConfig& own = f.config[e.event];
    EXPECT_EQ(own.units, "samples");
    EXPECT_EQ(own.aggregation, "sum");
    EXPECT_FALSE(own.cumulative) << "each window is a delta";
    EXPECT_FALSE(own.sampled);
    EXPECT_NE(test::DumpPprof(f.pprof).find("main"), std::string::npos);
    expected.erase(f.profile_name);
  }
  EXPECT_TRUE(expected.empty());
  PushStats s = client.stats();
  EXPECT_EQ(s.windows, 1u);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.dropped, 0u);
}

// The allocation and lock events, built by hand: cpu alone, the four memory types in one
// pprof, the two lock types in another, each type with its Pyroscope units and aggregation.
Profile MemoryAndLockProfile() {
  test::ProfileBuilder b;  // cpu first
  b.AddEvent("alloc_objects", "count");
  b.AddEvent("alloc_space", "bytes");
  b.AddEvent("inuse_objects", "count");
  b.AddEvent("inuse_space", "bytes");
  // The runtime's names for them (INPROF_EVENTS=lock); their pprof types are Go's.
  b.AddEvent("lock_contentions", "count");
  b.AddEvent("lock_delay", "nanoseconds");
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t make = b.Frame("make_buffer", "/src/buffer.cpp", 20);
  const uint32_t cache = b.Frame("cache_insert", "/src/cache.cpp", 30);
  const uint32_t lock = b.Frame("queue_push", "/src/queue.cpp", 40);
  //                        cpu alloc_o alloc_s inuse_o inuse_s cont delay
  b.Sample({main, make}, {5, 10, 40960, 0, 0, 0, 0});  // freed within the window
  b.Sample({main, cache}, {1, 2, 8192, 7, 28672, 0, 0});
  b.Sample({main, cache}, {0, 0, 0, 3, 12288, 0, 0});  // live, allocated in an earlier window
  b.Sample({main, lock}, {2, 0, 0, 0, 0, 4, 90000});
  Profile p = b.profile();
  p.events[0].period = 1000000000 / 99;
  p.events[0].frequency_hz = 99;
  for (size_t e = 1; e < p.events.size(); ++e) p.events[e].period = 1;
  p.label_sets = {{{"endpoint", "/api/cache"}}};
  p.samples[1].labels = 1;
  return p;
}

TEST(PushClientTest, MemoryAndLockEventsArePushedTogetherWithPyroscopeUnitsAndAggregation) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  client.Enqueue(MemoryAndLockProfile(), 1795000000LL * 1000000000, 1795000010LL * 1000000000);
  // cpu (plain and labelled), memory (plain and labelled), mutex (plain).
  ASSERT_TRUE(server.WaitFor(5));
  client.Stop(5s);
  std::map<std::string, test::PushedForm> forms;  // by "profile name + series name"
  for (const Received& r : server.requests()) {
    test::PushedForm f = test::DecodePushedForm(r);
    forms[f.profile_name + " " + f.query["name"]] = f;
  }
  const std::string plain = "checkout{env=prod,region=eu}";
  const std::string cache = "checkout{env=prod,region=eu,endpoint=/api/cache}";
  ASSERT_EQ(forms.size(), 5u);
  for (const std::string& series : {"process_cpu " + plain, "process_cpu " + cache,
                                    "memory " + plain, "memory " + cache, "mutex " + plain}) {
    ASSERT_TRUE(forms.count(series)) << series;
  }

  struct Want {
    std::string units, aggregation, display_name;
  };
  const std::map<std::string, Want> want = {
      {"alloc_objects", {"objects", "sum", ""}},
      {"alloc_space", {"bytes", "sum", ""}},
      {"inuse_objects", {"objects", "average", ""}},
      {"inuse_space", {"bytes", "average", ""}},
      {"contentions", {"lock_samples", "sum", "mutex_count"}},
      {"delay", {"lock_nanoseconds", "sum", "mutex_duration"}},
  };
  const test::PushedForm& memory = forms["memory " + plain];
  EXPECT_EQ(memory.types, (std::vector<std::string>{"alloc_objects", "alloc_space", "inuse_objects",
                                                    "inuse_space"}));
  EXPECT_EQ(memory.units.at("alloc_space"), "bytes");
  EXPECT_EQ(memory.units.at("inuse_objects"), "count");
  // The labelled allocation is in its own series only; a live allocation with nothing
  // allocated in this window is still in the in-use columns.
  EXPECT_EQ(memory.totals, (std::map<std::string, int64_t>{{"alloc_objects", 10},
                                                           {"alloc_space", 40960},
                                                           {"inuse_objects", 3},
                                                           {"inuse_space", 12288}}));
  EXPECT_EQ(forms["memory " + cache].totals,
            (std::map<std::string, int64_t>{{"alloc_objects", 2},
                                            {"alloc_space", 8192},
                                            {"inuse_objects", 7},
                                            {"inuse_space", 28672}}));
  const test::PushedForm& mutex = forms["mutex " + plain];
  EXPECT_EQ(mutex.types, (std::vector<std::string>{"contentions", "delay"}));
  EXPECT_EQ(mutex.totals, (std::map<std::string, int64_t>{{"contentions", 4}, {"delay", 90000}}));
  const test::PushedForm& memory_cache = forms["memory " + cache];
  for (const test::PushedForm* f : {&memory, &memory_cache, &mutex}) {
    for (const std::string& type : f->types) {
      ASSERT_TRUE(want.count(type)) << type;
      const test::SampleTypeConfig& c = f->config.at(type);
      EXPECT_EQ(c.units, want.at(type).units) << type;
      EXPECT_EQ(c.aggregation, want.at(type).aggregation) << type;
      EXPECT_EQ(c.display_name, want.at(type).display_name) << type;
      EXPECT_FALSE(c.cumulative) << type << ": pushed as per-window deltas";
      EXPECT_FALSE(c.sampled) << type << ": weights already stand for what they estimate";
    }
  }
  // The cpu request holds cpu alone (the other events' stacks stay out of it).
  const test::PushedForm& cpu = forms["process_cpu " + plain];
  EXPECT_EQ(cpu.types, (std::vector<std::string>{"samples", "cpu"}));
  EXPECT_EQ(cpu.totals.at("samples"), 7);
  EXPECT_EQ(cpu.pprof.samples.size(), 2u);
  PushStats s = client.stats();
  EXPECT_EQ(s.requests, 5u);
  EXPECT_EQ(s.sent, 5u);
}

// The condition waits (event `cond`) go as Pyroscope's block profile: both types in one
// request, lock units, block display names.
TEST(PushClientTest, ConditionWaitsArePushedAsTheBlockProfile) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  test::ProfileBuilder b;  // cpu first
  b.AddEvent("cond_waits", "count");
  b.AddEvent("cond_delay", "nanoseconds");
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t pop = b.Frame("queue_pop", "/src/queue.cpp", 60);
  b.Sample({main}, {3, 0, 0});
  b.Sample({main, pop}, {0, 5, 9000000});
  Profile p = b.profile();
  p.events[0].period = 1000000000 / 99;
  p.events[0].frequency_hz = 99;
  for (size_t e = 1; e < p.events.size(); ++e) p.events[e].period = 1;
  client.Enqueue(std::move(p), 1795000000LL * 1000000000, 1795000010LL * 1000000000);
  ASSERT_TRUE(server.WaitFor(2));
  client.Stop(5s);
  std::map<std::string, test::PushedForm> forms;
  for (const Received& r : server.requests()) {
    test::PushedForm f = test::DecodePushedForm(r);
    forms[f.profile_name] = f;
  }
  ASSERT_TRUE(forms.count("block")) << forms.size();
  const test::PushedForm& block = forms["block"];
  EXPECT_EQ(block.types, (std::vector<std::string>{"cond_waits", "cond_delay"}));
  EXPECT_EQ(block.totals,
            (std::map<std::string, int64_t>{{"cond_waits", 5}, {"cond_delay", 9000000}}));
  EXPECT_EQ(block.config.at("cond_waits").units, "lock_samples");
  EXPECT_EQ(block.config.at("cond_delay").units, "lock_nanoseconds");
  EXPECT_EQ(block.config.at("cond_waits").display_name, "block_count");
  EXPECT_EQ(block.config.at("cond_delay").display_name, "block_duration");
  EXPECT_EQ(block.config.at("cond_delay").aggregation, "sum");
}

TEST(PushClientTest, OtherEventsAreFiledUnderNamesEveryPyroscopeAccepts) {
  // CPU-time events under process_cpu (their samples column named "cpu", as Go's client does);
  // perf count events under their own names, made valid metric names.
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  test::ProfileBuilder b;
  const uint32_t f = b.Frame("f", "/src/f.cpp", 1);
  b.Sample({f}, {1});
  Profile p = b.profile();
  struct {
    const char* name;
    bool time;
    int64_t weight;
  } const events[] = {{"lua", true, 1},
                      {"task-clock", true, 2},
                      {"cpu-clock", true, 3},
                      {"page-faults", false, 256},
                      {"cycles", false, 10000000}};
  p.events.clear();
  p.samples[0].weights.clear();
  for (const auto& e : events) {
    EventInfo info;
    info.name = e.name;
    info.unit = e.time ? "nanoseconds" : "count";
    info.period = e.time ? 1000000 : 1;
    info.frequency_hz = e.time ? 1000 : 0;
    p.events.push_back(info);
    p.samples[0].weights.push_back(e.weight);
  }
  client.Enqueue(p, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(5));
  client.Stop(5s);
  std::map<std::string, std::string> names;  // event -> profile name
  for (const Received& r : server.requests()) {
    test::PushedForm form = test::DecodePushedForm(r);
    ASSERT_FALSE(form.types.empty());
    names[form.types.back()] = form.profile_name;
    for (const std::string& type : form.types) {
      const test::SampleTypeConfig& c = form.config.at(type);
      EXPECT_EQ(c.units, "samples") << type;
      EXPECT_EQ(c.aggregation, "sum") << type;
      EXPECT_EQ(c.sampled, type == "samples") << type;
    }
  }
  EXPECT_EQ(names, (std::map<std::string, std::string>{{"lua", "process_cpu"},
                                                       {"task-clock", "process_cpu"},
                                                       {"cpu-clock", "process_cpu"},
                                                       {"page-faults", "page_faults"},
                                                       {"cycles", "cycles"}}));
}

TEST(PushForm, TheBoundaryOccursInNeitherPart) {
  // A pprof holding the first two boundaries the seed would give, one as a delimiter line.
  const std::string pprof =
      std::string("\x1f\x8b\0\r\n--inprof-0000000000001234\r\nx", 33) + "inprof-0000000000001235";
  const std::string config = R"({"cpu":{"units":"samples"}})";
  const PushForm form = MultipartPushForm(pprof, config, 0x1234);
  EXPECT_EQ(form.content_type, "multipart/form-data; boundary=inprof-0000000000001236");
  std::vector<test::FormPart> parts;
  std::string error;
  ASSERT_TRUE(test::ParseMultipartForm(form.content_type, form.body, &parts, &error)) << error;
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "profile");
  EXPECT_EQ(parts[0].data, pprof);
  EXPECT_EQ(parts[1].name, "sample_type_config");
  EXPECT_EQ(parts[1].data, config);
}

// A request's decoded form: the total of its event's own column, and every function and
// label name in its pprof.
struct PushedBody {
  std::string profile_name;
  int64_t total = 0;
  std::string functions;  // " main hot" ...
  std::vector<std::string> label_keys;
};

PushedBody DecodeBody(const Received& r) {
  PushedBody out;
  test::PushedForm f = test::DecodePushedForm(r);
  out.profile_name = f.profile_name;
  EXPECT_EQ(f.types.size(), 1u);
  if (!f.types.empty()) out.total = f.totals[f.types.back()];
  for (const auto& s : f.pprof.samples) {
    for (const auto& l : s.labels) out.label_keys.push_back(f.pprof.S(l.key));
  }
  for (const auto& fn : f.pprof.functions) out.functions += " " + f.pprof.S(fn.name);
  return out;
}

// The series a request is pushed in: the profile name Pyroscope gives it, and the name it
// is pushed under.
std::string SeriesOf(const Received& r) {
  return DecodeBody(r).profile_name + " " + DecodedQuery(r.target)["name"];
}

// The name a series is pushed under must parse as Pyroscope's "app{k=v,...}".
bool IsValidSeriesName(const std::string& name) {
  static const std::regex valid(
      R"(^[A-Za-z0-9_.-]+\{([A-Za-z_][A-Za-z0-9_.]*=[^{}=,"\x00-\x1f\x7f]+(,[A-Za-z_][A-Za-z0-9_.]*=[^{}=,"\x00-\x1f\x7f]+)*)?\}$)");
  return std::regex_match(name, valid);
}
void ExpectValidSeriesName(const std::string& name) {
  EXPECT_TRUE(IsValidSeriesName(name)) << name;
}

// Two endpoints at 3:1 on one event: one series each, the tags after the static labels.
Profile TwoEndpointProfile() {
  test::ProfileBuilder b;
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t users = b.Frame("users", "/src/users.cpp", 20);
  const uint32_t orders = b.Frame("orders", "/src/orders.cpp", 30);
  b.Sample({main, users}, {200});
  b.Sample({main, users}, {100});  // another thread, same series
  b.Sample({main, orders}, {100});
  Profile p = b.profile();
  p.events[0].frequency_hz = 99;
  p.label_sets = {{{"endpoint", "/api/users"}}, {{"endpoint", "/api/orders"}}};
  p.samples[0].labels = 1;
  p.samples[1].labels = 1;
  p.samples[2].labels = 2;
  p.samples[0].tid = 7;
  p.samples[1].tid = 8;
  p.samples[2].tid = 7;
  p.threads = {{7, "http 1"}, {8, "http 2"}};
  return p;
}

TEST(PushClientTest, EachLabelSetIsASeriesTaggedWithItsLabelsHoldingOnlyItsSamples) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  client.Enqueue(TwoEndpointProfile(), 1795000000LL * 1000000000, 1795000010LL * 1000000000);
  ASSERT_TRUE(server.WaitFor(2));
  client.Stop(5s);
  std::vector<Received> got = server.requests();
  ASSERT_EQ(got.size(), 2u) << "no labels-less samples: no plain series";
  std::map<std::string, PushedBody> bodies;
  for (const Received& r : got) {
    std::map<std::string, std::string> q = DecodedQuery(r.target);
    ExpectValidSeriesName(q["name"]);
    EXPECT_EQ(q["from"], "1795000000");
    EXPECT_EQ(q["until"], "1795000010");
    EXPECT_EQ(q["sampleRate"], "99");
    bodies[q["name"]] = DecodeBody(r);
    EXPECT_EQ(bodies[q["name"]].profile_name, "process_cpu");
  }
  const std::string users = "checkout{env=prod,region=eu,endpoint=/api/users}";
  const std::string orders = "checkout{env=prod,region=eu,endpoint=/api/orders}";
  ASSERT_TRUE(bodies.count(users) && bodies.count(orders)) << got[0].target << " " << got[1].target;
  // The exact weights, 3:1: each body holds its own samples and no other.
  EXPECT_EQ(bodies[users].total, 300);
  EXPECT_EQ(bodies[orders].total, 100);
  EXPECT_EQ(bodies[users].total, 3 * bodies[orders].total);
  EXPECT_NE(bodies[users].functions.find(" users"), std::string::npos) << bodies[users].functions;
  EXPECT_EQ(bodies[users].functions.find(" orders"), std::string::npos) << bodies[users].functions;
  EXPECT_EQ(bodies[orders].functions.find(" users"), std::string::npos);
  // The body keeps the thread labels; the program's labels are in the name only.
  for (auto& [name, body] : bodies) {
    for (const std::string& key : body.label_keys) {
      EXPECT_TRUE(key == "thread id" || key == "thread name") << name << ": " << key;
    }
  }
  PushStats s = client.stats();
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.merged_series, 0u);
}

TEST(PushClientTest, SamplesWithoutLabelsStayInThePlainSeriesOfEachEvent) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  Profile p = TwoEventProfile();  // cpu {300, 100, 0}, wall {10, 0, 50}
  p.label_sets = {{{"endpoint", "/a"}}, {{"endpoint", "/b"}}};
  p.samples[0].labels = 1;
  p.samples[1].labels = 2;
  client.Enqueue(p, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(4));
  client.Stop(5s);
  std::map<std::string, int64_t> totals;
  for (const Received& r : server.requests()) {
    totals[SeriesOf(r)] = DecodeBody(r).total;
  }
  EXPECT_EQ(totals, (std::map<std::string, int64_t>{
                        {"process_cpu checkout{env=prod,region=eu,endpoint=/a}", 300},
                        {"process_cpu checkout{env=prod,region=eu,endpoint=/b}", 100},
                        {"wall checkout{env=prod,region=eu,endpoint=/a}", 10},
                        {"wall checkout{env=prod,region=eu}", 50}}));
}

TEST(PushSeriesTags, ValuesAndKeysAreMadeValidForTheSeriesName) {
  PushOptions o;
  o.app_name = "checkout";
  o.labels = {{"env", "prod"}};
  // The label set as the model keeps it: sorted by key, keys unique.
  const std::vector<Label> set = {
      {"", "x"},                     // no key: left out
      {"9lives", "cat"},             // a name cannot start with a digit
      {"__name__", "x"},             // reserved
      {"__private", "x"},            // reserved prefix
      {"a-b", "1"},                  // becomes a_b
      {"a_b", "2"},                  // a_b again: the first one stays
      {"empty", ""},                 // no value: left out
      {"env", "staging"},            // the operator's static label wins
      {"path", "/q?a=1,b={2}\"\n"},  // reserved characters and a control character
      {"service_name", "x"},         // reserved
      {"utf8", "caf\xC3\xA9 \xFF\xC0\xAF\xED\xA0\x80"},  // é kept; invalid bytes replaced
  };
  EXPECT_EQ(PushSeriesTags(o, set), (PushTags{{"_9lives", "cat"},
                                              {"a_b", "1"},
                                              {"path", "/q?a_1_b__2___"},
                                              {"utf8", "caf\xC3\xA9 ______"}}));
  // Long values are cut on a character boundary.
  std::string long_value(kMaxPushTagValue - 1, 'x');
  long_value += "\xC3\xA9tail";
  const PushTags cut = PushSeriesTags(o, {{"k", long_value}});
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].second, std::string(kMaxPushTagValue - 1, 'x'));
  ExpectValidSeriesName(
      DecodedQuery(IngestPathAndQuery(o, 0, 1, 99, PushSeriesTags(o, set)))["name"]);
  // What the check would catch without sanitising.
  for (const char* bad :
       {"a{k=a,b}", "a{k=a{b}", "a{k=a=b}", "a{k=\"}", "a{k=a\nb}", "a{9k=a}", "a{k=}"}) {
    EXPECT_FALSE(IsValidSeriesName(bad)) << bad;
  }
  EXPECT_TRUE(IsValidSeriesName("a{}"));
}

TEST(PushClientTest, SetsThatSanitiseAlikeArePushedAsOneSeries) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  Profile p = TwoEndpointProfile();
  p.label_sets = {{{"endpoint", "/a,b"}}, {{"endpoint", "/a=b"}}};
  client.Enqueue(p, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(1));
  client.Stop(5s);
  std::vector<Received> got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  std::map<std::string, std::string> q = DecodedQuery(got[0].target);
  EXPECT_EQ(q["name"], "checkout{env=prod,region=eu,endpoint=/a_b}");
  ExpectValidSeriesName(q["name"]);
  EXPECT_EQ(DecodeBody(got[0]).total, 400);
}

TEST(PushClientTest, AWindowNeverMakesMoreRequestsThanTheQueueHolds) {
  // Six label series and a queue of 4: the three heaviest keep their series, the others are
  // pushed in the plain series, and nothing is dropped.
  FakeIngest server([](size_t) { return 200; });
  PushOptions options = OptionsFor(server.port());
  options.max_windows = 4;
  PushClient client(options, &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  test::ProfileBuilder b;
  const uint32_t f = b.Frame("f", "/src/f.cpp", 1);
  Profile p;
  for (int i = 0; i < 6; ++i) b.Sample({f}, {60 - 10 * i});
  p = b.profile();
  for (int i = 0; i < 6; ++i) {
    p.label_sets.push_back({{"k", "v" + std::to_string(i)}});
    p.samples[static_cast<size_t>(i)].labels = static_cast<uint32_t>(i + 1);
  }
  client.Enqueue(p, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(4));
  client.Stop(5s);
  std::map<std::string, int64_t> totals;
  for (const Received& r : server.requests()) {
    totals[DecodedQuery(r.target)["name"]] = DecodeBody(r).total;
  }
  EXPECT_EQ(totals, (std::map<std::string, int64_t>{{"checkout{env=prod,region=eu,k=v0}", 60},
                                                    {"checkout{env=prod,region=eu,k=v1}", 50},
                                                    {"checkout{env=prod,region=eu,k=v2}", 40},
                                                    {"checkout{env=prod,region=eu}", 60}}));
  PushStats s = client.stats();
  EXPECT_EQ(s.requests, 4u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.merged_series, 3u);
  EXPECT_NE(client.Summary().find("3 label series pushed unlabelled"), std::string::npos)
      << client.Summary();
}

TEST(PushClientTest, TransientFailuresAreRetriedUntilTheyGoThrough) {
  // 503, 429, then accepted: the same request is sent three times.
  FakeIngest server([](size_t n) { return n == 0 ? 503 : n == 1 ? 429 : 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  Profile one = TwoEventProfile();
  one.events.resize(1);
  for (Sample& s : one.samples) s.weights.resize(1);
  client.Enqueue(one, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(3));
  client.Stop(5s);
  std::vector<Received> got = server.requests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].target, got[2].target);
  EXPECT_EQ(got[0].body, got[2].body);
  PushStats s = client.stats();
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_TRUE(s.last_error.empty()) << s.last_error;
}

TEST(PushClientTest, ARejectedWindowIsCountedAndNotRetried) {
  FakeIngest server([](size_t n) { return n == 0 ? 400 : 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  Profile p = TwoEventProfile();
  client.Enqueue(p, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(2));
  client.Stop(5s);
  EXPECT_EQ(server.requests().size(), 2u);
  PushStats s = client.stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(s.retries, 0u);
}

TEST(PushClientTest, AHungBackendNeverBlocksEnqueueAndTheQueueDropsTheOldest) {
  // The server takes the first request and does not answer until the test lets it: if
  // Enqueue waited for the network, this test would hang (and time out) instead of passing.
  FakeIngest server([](size_t) { return 200; });
  server.Hold();
  PushOptions options = OptionsFor(server.port());
  options.max_windows = 4;
  PushClient client(options, &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  Profile one = TwoEventProfile();
  one.events.resize(1);
  for (Sample& s : one.samples) s.weights.resize(1);
  client.Enqueue(one, 0, 1000000000);
  ASSERT_TRUE(server.WaitFor(1));  // the sender is now stuck in that request
  for (int i = 1; i < 40; ++i) {
    client.Enqueue(one, int64_t{i} * 1000000000, int64_t{i + 1} * 1000000000);
  }
  PushStats s = client.stats();
  EXPECT_EQ(s.windows, 40u);
  EXPECT_LE(s.queued, 4u);
  EXPECT_EQ(s.dropped, 40u - 1u - 4u);  // all but the one in flight and the 4 newest
  server.Open();
  ASSERT_TRUE(server.WaitFor(5));  // the one in flight (the first window) + the 4 newest
  client.Stop(5s);
  s = client.stats();
  EXPECT_EQ(s.sent + s.dropped, 40u) << s.sent << " sent";
  // The newest windows are the ones that got through.
  std::vector<Received> got = server.requests();
  EXPECT_EQ(DecodedQuery(got.back().target)["from"], "39");
}

TEST(PushClientTest, ADownBackendCostsAtMostTheFlushTimeAtStop) {
  // Nothing listens on this port (bound, never listening).
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  PushClient client(OptionsFor(ntohs(a.sin_port)), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  client.Enqueue(TwoEventProfile(), 0, 1000000000);
  client.Stop(200ms);
  close(fd);
  PushStats s = client.stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.dropped, 2u);
  EXPECT_GE(s.retries, 1u);
  EXPECT_NE(s.last_error.find("cannot connect"), std::string::npos) << s.last_error;
  EXPECT_NE(client.Summary().find("0 of 2 requests sent, 2 dropped"), std::string::npos)
      << client.Summary();
}

TEST(HttpUrl, RefusesWhatCouldChangeTheRequestOnTheWire) {
  HttpUrl u;
  for (const std::string& bad : {std::string("http://h:4040/a\r\nX-Injected: 1"),
                                 std::string("http://h/a b"),
                                 std::string("http://h/a\tb"),
                                 std::string("http://h/a\nb"),
                                 std::string("http://h\r\n:80"),
                                 std::string("http://h/a\x7f"),
                                 std::string("http://h/\xc3\xa9"),
                                 std::string("http://h/a<b"),
                                 std::string("http://h/a\"b"),
                                 std::string("http://h/a{b}"),
                                 std::string("http://h/a\\b"),
                                 std::string("http://h/a^b"),
                                 std::string("http://h/a`b"),
                                 std::string("http://h/a|b"),
                                 std::string("http://h/a%2"),
                                 std::string("http://h/a%zz"),
                                 std::string("http://h%0d/"),
                                 std::string("http://h*st/"),
                                 std::string("http://[::1%eth0]/"),
                                 std::string("http://[zz]/"),
                                 std::string("http://h/a\0b", 13),
                                 std::string(" http://h/"),
                                 std::string("http://h/ ")}) {
    Status s = ParseHttpUrl(bad, &u);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message().find_first_of(std::string("\r\n\t\0", 4)), std::string::npos)
        << "a message must not carry the URL's control characters: " << s.message();
  }
  Status s = ParseHttpUrl("http://h:4040/a\r\nX: 1", &u);
  EXPECT_NE(s.message().find("0x0d at position 16"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\\x0d\\x0a"), std::string::npos) << s.message();
  // What RFC 3986 allows in a path stays as it is.
  ASSERT_TRUE(ParseHttpUrl("http://gw.example_1:8080/p-y/r.o_s~c%2Fo/a!$&'()*+,;=:@", &u).ok());
  EXPECT_EQ(u.path, "/p-y/r.o_s~c%2Fo/a!$&'()*+,;=:@");
  EXPECT_EQ(u.host, "gw.example_1");
}

TEST(HttpPostTest, AHeaderWithALineBreakIsNeverSent) {
  FakeIngest server([](size_t) { return 200; });
  HttpUrl url;
  ASSERT_TRUE(ParseHttpUrl("http://127.0.0.1:" + std::to_string(server.port()), &url).ok());
  HttpClientResult r =
      HttpPost(url, "/ingest", {{"X-Scope-OrgID", "a\r\nX-Injected: 1"}}, "text/plain", "x", 2000);
  EXPECT_EQ(r.status, -1);
  EXPECT_NE(r.error.find("X-Scope-OrgID"), std::string::npos) << r.error;
  r = HttpPost(url, "/ingest", {{"X-Scope-OrgID", "team-a"}}, "text/plain", "x", 2000);
  EXPECT_EQ(r.status, 200) << r.error;
  ASSERT_EQ(server.requests().size(), 1u);  // only the good one arrived
}

TEST(PushClientTest, ARequestInFlightAtStopIsCutOffAtTheFlushDeadline) {
  SilentBackend backend;
  PushOptions options = OptionsFor(backend.port());
  options.timeout_ms = 30000;  // the request alone would wait this long for an answer
  PushClient client(options, &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  client.Enqueue(TwoEventProfile(), 0, 1000000000);
  ASSERT_TRUE(backend.WaitForConnection());  // the first request is now waiting for an answer
  const Clock::time_point start = Clock::now();
  client.Stop(300ms);
  const double took = SecondsSince(start);
  EXPECT_GE(took, 0.25) << "the flush time is given to the request in flight";
  EXPECT_LT(took, 0.3 + 1.0) << "Stop outlived its flush time";
  RecordProperty("stop_with_hung_backend_ms", static_cast<int>(took * 1000));
  PushStats s = client.stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.sent + s.dropped, 2u);
}

TEST(HttpPostTest, TheCancelDescriptorEndsARequestAtOnce) {
  SilentBackend backend;
  HttpUrl url;
  ASSERT_TRUE(ParseHttpUrl("http://127.0.0.1:" + std::to_string(backend.port()), &url).ok());
  int cancel[2];
  ASSERT_EQ(pipe(cancel), 0);
  std::thread canceller([&] {
    backend.WaitForConnection();
    [[maybe_unused]] ssize_t n = write(cancel[1], "x", 1);
  });
  const Clock::time_point start = Clock::now();
  HttpClientResult r = HttpPost(url, "/ingest", {}, "text/plain", "x", 30000, cancel[0]);
  const double took = SecondsSince(start);
  canceller.join();
  EXPECT_EQ(r.status, -1);
  EXPECT_NE(r.error.find("cancelled"), std::string::npos) << r.error;
  EXPECT_LT(took, 10.0);
  close(cancel[0]);
  close(cancel[1]);
}

}  // namespace
}  // namespace inprof::internal
