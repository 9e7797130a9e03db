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
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pprof_reader.h"
#include "../exporters/test_profiles.h"
#include "net_test_util.h"
#include "internal/http.h"
#include "internal/http_server.h"
#include "internal/pull_handler.h"
#include "internal/push_client.h"

namespace inprof::internal {
namespace {

using test::ConnectLoopback;
using test::DecodedQuery;
using test::Exchange;
using test::FakeIngest;
using test::Received;

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

std::string Get(uint16_t port, const std::string& target) {
  return Exchange(port, "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
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
    source_.snapshot = [this] {
      ++snapshots_;
      return TwoEventProfile();
    };
    source_.start_capture = [this]() -> uint64_t {
      if (refuse_captures_) return 0;
      return ++captures_started_;
    };
    source_.finish_capture = [this](uint64_t id) -> std::optional<Profile> {
      finished_.push_back(id);
      return TwoEventProfile();
    };
    HttpServer::Options options;
    options.workers = workers;
    options.read_timeout_ms = 300;
    server_ = std::make_unique<HttpServer>(
        [this](const HttpRequest& r, HttpServer::Context& c) { return HandlePull(r, c, source_, {}); },
        &PlainStarter, options);
    ListenAddress address;
    ASSERT_TRUE(ParseListenAddress("127.0.0.1:0", &address).ok());
    Status s = server_->Start(address);
    ASSERT_TRUE(s.ok()) << s.message();
    port_ = server_->port();
    ASSERT_NE(port_, 0);
  }

  PullSource source_;
  std::atomic<int> snapshots_{0};
  std::atomic<uint64_t> captures_started_{0};
  std::vector<uint64_t> finished_;
  bool refuse_captures_ = false;
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
    std::string r = Exchange(port_, c.raw);
    EXPECT_EQ(StatusOf(r), c.status) << c.raw.substr(0, 80) << "\n" << r.substr(0, 300);
    EXPECT_NE(r.find(c.says), std::string::npos) << c.raw.substr(0, 80) << "\n" << r.substr(0, 300);
  }
  // A POST's 405 names the allowed method.
  std::string r = Exchange(port_, "POST /debug/inprof/folded HTTP/1.1\r\n\r\n");
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
    EXPECT_TRUE(status == 400 || status == 404 || status == 414 || status == 431 || status == 405)
        << status << " for input " << i;
  }
  EXPECT_EQ(StatusOf(Get(port_, "/debug/inprof/folded")), 200);
}

TEST_F(PullTest, BusyWorkersAnswer503AndStopEndsACaptureAtOnce) {
  StartServer(/*workers=*/1);
  // One long capture occupies the only worker.
  std::promise<std::string> long_answer;
  std::thread client([&] { long_answer.set_value(Get(port_, "/debug/pprof/profile?seconds=600")); });
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

TEST(PushClientTest, EachEventOfAWindowIsOneIngestRequestWithItsPprof) {
  FakeIngest server([](size_t) { return 200; });
  PushClient client(OptionsFor(server.port()), &PlainStarter);
  ASSERT_TRUE(client.Start().ok());
  const int64_t start = 1795000000LL * 1000000000 + 250000000;  // .25 s past a second
  client.Enqueue(TwoEventProfile(), start, start + 10LL * 1000000000);
  ASSERT_TRUE(server.WaitFor(2));
  client.Stop(5s);
  std::vector<Received> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  std::map<std::string, int64_t> totals = {{"checkout.cpu{env=prod,region=eu}", 400},
                                           {"checkout.wall{env=prod,region=eu}", 60}};
  std::map<std::string, std::string> rates = {{"checkout.cpu{env=prod,region=eu}", "99"},
                                              {"checkout.wall{env=prod,region=eu}", "19"}};
  for (const Received& r : got) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target.substr(0, r.target.find('?')), "/ingest");
    std::map<std::string, std::string> q = DecodedQuery(r.target);
    ASSERT_TRUE(totals.count(q["name"])) << q["name"];
    EXPECT_EQ(q["from"], "1795000000");
    EXPECT_EQ(q["until"], "1795000011");  // the window's end, rounded up
    EXPECT_EQ(q["sampleRate"], rates[q["name"]]);
    EXPECT_EQ(q["spyName"], "inprof");
    EXPECT_EQ(q["format"], "pprof");
    EXPECT_EQ(r.headers.at("x-scope-orgid"), "team-a");
    EXPECT_EQ(r.headers.at("content-type"), "application/octet-stream");
    std::string raw, error;
    ASSERT_TRUE(test::Gunzip(r.body, &raw, &error)) << error;
    test::PprofProfile p;
    ASSERT_TRUE(test::DecodePprof(raw, &p, &error)) << error;
    ASSERT_EQ(p.sample_types.size(), 1u);  // this event only
    int64_t total = 0;
    for (const auto& s : p.samples) {
      ASSERT_EQ(s.values.size(), 1u);
      EXPECT_GT(s.values[0], 0);
      total += s.values[0];
    }
    EXPECT_EQ(total, totals[q["name"]]) << q["name"];
    std::string dump = test::DumpPprof(p);
    EXPECT_NE(dump.find("main"), std::string::npos) << dump;
    totals.erase(q["name"]);
  }
  PushStats s = client.stats();
  EXPECT_EQ(s.windows, 1u);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.sent, 2u);
  EXPECT_EQ(s.dropped, 0u);
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

}  // namespace
}  // namespace inprof::internal
