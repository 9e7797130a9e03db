// The network outputs against hostile peers, where a user would meet them: in process (a
// program that links libinprof calls inprof_stop while its threads come and go) and around a
// preloaded program (slow, silent, abandoning and unauthorised clients while it runs; a push
// backend that accepts and never answers when it ends). What must hold: the endpoint keeps
// serving, and neither the program's threads nor its exit wait on a client's pace beyond the
// bounds docs/network.md states.
#include <inprof/inprof.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net_test_util.h"
#include "test_util.h"

namespace inprof::test {
namespace {

constexpr char kToken[] = "hostile-test-token-0123456789";

int StatusOf(const std::string& response) {
  if (response.size() < 12 || response.compare(0, 9, "HTTP/1.1 ") != 0) return -1;
  return std::stoi(response.substr(9, 3));
}

std::string Request(const std::string& target, const std::string& host, const std::string& token) {
  std::string raw = "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n";
  if (!token.empty()) raw += "Authorization: Bearer " + token + "\r\n";
  return raw + "\r\n";
}

std::string Get(uint16_t port, const std::string& target, const std::string& token = kToken) {
  return Exchange(port, Request(target, "127.0.0.1:" + std::to_string(port), token));
}

// How long thread creation (the interposed pthread_create: the new thread registers under
// the runtime's lock) and thread exit (its exit hook, the same lock) take while `stop` runs
// on another thread: the worst create+join of a loop that runs until `stop` returns.
struct StopTiming {
  double stop_seconds = 0;
  double worst_thread_seconds = 0;
  int threads = 0;
};

StopTiming TimeStopAgainstThreadChurn(const std::function<void()>& stop) {
  std::atomic<bool> done{false};
  StopTiming timing;
  std::thread churn([&] {
    while (!done.load()) {
      const Clock::time_point start = Clock::now();
      pthread_t t;
      ASSERT_EQ(pthread_create(
                    &t, nullptr, [](void*) -> void* { return nullptr; }, nullptr),
                0);
      pthread_join(t, nullptr);
      timing.worst_thread_seconds = std::max(timing.worst_thread_seconds, SecondsSince(start));
      ++timing.threads;
    }
  });
  // Let the churn run before the stop begins, so the stop happens in the middle of it.
  Eventually([&] { return timing.threads > 0; }, 10s);
  const Clock::time_point start = Clock::now();
  stop();
  timing.stop_seconds = SecondsSince(start);
  done = true;
  churn.join();
  return timing;
}

class InProcess : public ::testing::Test {
 protected:
  void TearDown() override {
    if (inprof_is_running()) inprof_stop();
  }
};

TEST_F(InProcess, AStalledPullClientDelaysNeitherStopNorTheProgramsThreads) {
  const uint16_t port = FreePort();
  const std::string config = "http=127.0.0.1:" + std::to_string(port) + ",quiet=1";
  ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << inprof_last_error();
  // A request head that never ends (the endpoint gives it 5 s) and a capture of 10 minutes.
  const int stalled = SendOnly(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const int capture = SendOnly(port, Request("/debug/pprof/profile?seconds=600", "localhost", ""));
  // Both are taken by workers once a later request is answered (accepted in order).
  ASSERT_EQ(StatusOf(Get(port, "/debug/inprof/", "")), 200);
  const StopTiming t = TimeStopAgainstThreadChurn([] { EXPECT_EQ(inprof_stop(), INPROF_OK); });
  RecordProperty("stop_ms", static_cast<int>(t.stop_seconds * 1000));
  RecordProperty("worst_thread_ms", static_cast<int>(t.worst_thread_seconds * 1000));
  EXPECT_LT(t.stop_seconds, 2.0) << "inprof_stop waited for the stalled client";
  EXPECT_LT(t.worst_thread_seconds, 1.5)
      << "a thread's start or exit waited for the stop (" << t.threads << " threads)";
  close(stalled);
  close(capture);
}

TEST_F(InProcess, AHungPushBackendDelaysStopByAtMostTheFlushTimeAndNeverTheThreads) {
  SilentBackend backend;
  const std::string config =
      "push_url=http://127.0.0.1:" + std::to_string(backend.port()) + ",window=0.5,quiet=1";
  ASSERT_EQ(inprof_start(config.c_str()), INPROF_OK) << inprof_last_error();
  // Some CPU time so the first window has samples to push.
  std::atomic<bool> spinning{true};
  std::thread spin([&] {
    volatile double x = 0;
    while (spinning.load()) x = x * 0.999 + 1;
  });
  const bool connected = backend.WaitForConnection();
  spinning = false;
  spin.join();
  ASSERT_TRUE(connected) << "no window was pushed";
  // A request is in flight, and the backend will never answer it.
  const StopTiming t = TimeStopAgainstThreadChurn([] { EXPECT_EQ(inprof_stop(), INPROF_OK); });
  RecordProperty("stop_ms", static_cast<int>(t.stop_seconds * 1000));
  RecordProperty("worst_thread_ms", static_cast<int>(t.worst_thread_seconds * 1000));
  EXPECT_LT(t.stop_seconds, 3.0 + 2.0) << "the flush time is 3 s";
  EXPECT_LT(t.worst_thread_seconds, 1.5)
      << "a thread's start or exit waited for the push flush (" << t.threads << " threads)";
}

// ---------------------------------------------------------------------------------------------
// A preloaded program.

struct HostileRun {
  uint16_t port = 0;
  bool up = false;
  std::vector<int> random_statuses;
  int wrong_host = 0, no_token = 0, wrong_token = 0, right_token = 0;
  std::string no_token_response;
  int busy = 0;               // with every worker held by a hostile client
  double capture_freed = -1;  // seconds from closing the captures to the next 200
  int after_all = 0;          // a request once the dust settled
  Clock::time_point terminated;
  std::vector<int> held;  // the slow and deaf clients' sockets, closed after the exit
};
HostileRun g_hostile;

void AttackWhileRunning(int pid) {
  HostileRun& h = g_hostile;
  h.up = WaitForListener(h.port, 30);
  if (!h.up) {
    kill(pid, SIGKILL);
    return;
  }
  std::mt19937 rng(18);
  for (int i = 0; i < 20; ++i) {
    std::string raw(rng() % 300, '\0');
    for (char& c : raw) c = static_cast<char>(rng());
    h.random_statuses.push_back(StatusOf(Exchange(h.port, raw + "\r\n\r\n")));
  }
  const std::string self = "127.0.0.1:" + std::to_string(h.port);
  h.wrong_host = StatusOf(Exchange(
      h.port, Request("/debug/inprof/folded", "rebind.example:" + std::to_string(h.port), kToken)));
  h.no_token_response = Get(h.port, "/debug/inprof/folded", "");
  h.no_token = StatusOf(h.no_token_response);
  h.wrong_token = StatusOf(Get(h.port, "/debug/inprof/folded", "not-the-token-0123456789"));
  h.right_token = StatusOf(Get(h.port, "/debug/inprof/folded"));
  // Hold every worker: a head that never ends, a client that never reads its answer, and two
  // captures of ten minutes.
  const int slow = SendOnly(h.port, "GET / HTTP/1.1\r\nHost: " + self + "\r\n");
  const int deaf = SendOnly(h.port, Request("/debug/inprof/flame.svg", self, kToken), 4096);
  const int c1 = SendOnly(h.port, Request("/debug/pprof/profile?seconds=600", self, kToken));
  const int c2 = SendOnly(h.port, Request("/debug/inprof/folded?seconds=600", self, kToken));
  // The endpoint says it is busy rather than queueing behind them (the deaf client's answer
  // may fit in the socket buffers and free its worker: one attempt then is served).
  Eventually([&] { return (h.busy = StatusOf(Get(h.port, "/debug/inprof/"))) == 503; }, 5s);
  // The captures' clients give up: their workers are free at once.
  const Clock::time_point closed = Clock::now();
  close(c1);
  close(c2);
  if (Eventually([&] { return StatusOf(Get(h.port, "/debug/inprof/folded")) == 200; }, 10s)) {
    h.capture_freed = SecondsSince(closed);
  }
  h.after_all = StatusOf(Get(h.port, "/debug/pprof/profile?seconds=1"));
  // The program ends while the slow and the deaf clients still hold their connections.
  h.terminated = Clock::now();
  kill(pid, SIGTERM);
  h.held = {slow, deaf};
}

TEST(PreloadedProgram, HostileClientsNeitherStopTheEndpointNorDelayTheExit) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  g_hostile = HostileRun{};
  g_hostile.port = FreePort();
  const std::string dir = MakeTempDir();
  ProcessResult r = RunProcess({INPROF_WORKLOAD, "shares", "60"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_HTTP", "127.0.0.1:" + std::to_string(g_hostile.port)},
                                {"INPROF_HTTP_TOKEN", kToken},
                                {"INPROF_OUTPUT", dir + "/out.folded"}},
                               &AttackWhileRunning);
  const double exit_seconds = SecondsSince(g_hostile.terminated);
  for (int fd : g_hostile.held) close(fd);
  ASSERT_TRUE(g_hostile.up) << "the endpoint never came up\n" << r.err;
  for (int status : g_hostile.random_statuses) {
    EXPECT_TRUE(status == 400 || status == 404 || status == 414 || status == 431) << status;
  }
  EXPECT_EQ(g_hostile.wrong_host, 403);
  EXPECT_EQ(g_hostile.no_token, 401);
  EXPECT_NE(g_hostile.no_token_response.find("WWW-Authenticate: Bearer"), std::string::npos)
      << g_hostile.no_token_response;
  EXPECT_EQ(g_hostile.wrong_token, 401);
  EXPECT_EQ(g_hostile.right_token, 200);
  EXPECT_EQ(g_hostile.busy, 503) << "every worker should have been held";
  EXPECT_GE(g_hostile.capture_freed, 0) << "never served again after the captures' clients left";
  EXPECT_LT(g_hostile.capture_freed, 2.0);
  EXPECT_EQ(g_hostile.after_all, 200);
  RecordProperty("capture_freed_ms", static_cast<int>(g_hostile.capture_freed * 1000));
  RecordProperty("exit_ms", static_cast<int>(exit_seconds * 1000));
  // Ended by SIGTERM with its file written, without waiting for the slow head's 5 s or the
  // deaf client's 30 s.
  EXPECT_EQ(r.term_signal, SIGTERM) << r.err;  // the profiler writes, then lets it end so
  EXPECT_TRUE(FileExists(dir + "/out.folded")) << r.err;
  EXPECT_LT(exit_seconds, 4.0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kToken), std::string::npos) << "the token is never printed\n" << r.err;
}

Clock::time_point g_push_terminated;
SilentBackend* g_push_backend = nullptr;
bool g_push_connected = false;

void TerminateWhilePushHangs(int pid) {
  g_push_connected = g_push_backend->WaitForConnection();
  g_push_terminated = Clock::now();
  kill(pid, SIGTERM);
}

TEST(PreloadedProgram, AHungPushBackendDelaysTheExitByAtMostTheFlushTime) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  SilentBackend backend;
  g_push_backend = &backend;
  ProcessResult r =
      RunProcess({INPROF_WORKLOAD, "shares", "60"},
                 {{"LD_PRELOAD", PreloadValue()},
                  {"INPROF_PUSH_URL", "http://127.0.0.1:" + std::to_string(backend.port())},
                  {"INPROF_WINDOW", "0.5"}},
                 &TerminateWhilePushHangs);
  const double exit_seconds = SecondsSince(g_push_terminated);
  g_push_backend = nullptr;
  ASSERT_TRUE(g_push_connected) << "no window was pushed\n" << r.err;
  RecordProperty("exit_ms", static_cast<int>(exit_seconds * 1000));
  // A window was in flight (its own timeout is 10 s) when the program was told to end: the
  // flush time (3 s) bounds the exit, whatever the request's timeout.
  EXPECT_LT(exit_seconds, 3.0 + 2.5) << r.err;
  EXPECT_EQ(r.term_signal, SIGTERM) << r.err;
  EXPECT_NE(r.err.find("dropped"), std::string::npos) << r.err;
}

// A push whose host name needs a DNS server that never answers (fixtures/dns_hang.sh: a
// resolv.conf naming a local UDP port that takes queries and never replies, inside a user,
// network and mount namespace): the resolution is abandoned at the flush time like a request
// in flight, so the exit waits 3 s at most, not the resolver's 60 s (30 s x 2 attempts).
TEST(PreloadedProgram, AHangingNameResolutionDelaysTheExitByAtMostTheFlushTime) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "namespaces of an emulated child";
  const char* unshare = "/usr/bin/unshare";  // util-linux
  if (!FileExists(unshare)) GTEST_SKIP() << "no " << unshare;
  const std::string dir = MakeTempDir();
  const auto start = Clock::now();
  ProcessResult r = RunProcess(
      {unshare, "-Urnm", INPROF_DNS_HANG_SCRIPT, dir, "env", "LD_PRELOAD=" + PreloadValue(),
       "INPROF_PUSH_URL=http://push.inprof-test.example:4040", "INPROF_WINDOW=0.5",
       INPROF_WORKLOAD, "sleeper"},
      {});
  const double wall = SecondsSince(start);
  if (r.exit_code != 0 && r.err.find("inprof:") == std::string::npos) {
    GTEST_SKIP() << "no unprivileged user/network/mount namespace here (exit " << r.exit_code
                 << "): " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(duration=([0-9.]+)s)"))) << r.err;
  const double profiled = std::stod(m[1]);
  RecordProperty("exit_ms", static_cast<int>((wall - profiled) * 1000));
  // Everything but the profiled run: start-up, the namespace, the exit with its flush (3 s).
  EXPECT_LT(wall - profiled, 3.0 + 2.5) << r.err;
  EXPECT_NE(r.err.find("cannot resolve push.inprof-test.example"), std::string::npos) << r.err;
}

// A program that closes every fd above 2 (closefrom(3), as daemons do at start-up) and opens
// its own files, which take the numbers of the endpoint's listening socket and eventfd and of
// the push client's eventfd: the runtime notices its fds are gone (fstat identity), stops the
// endpoint with a message, never writes into or closes the program's files, and the exit is
// not held.
TEST(PreloadedProgram, FdsTheProgramClosedAreNeverUsedForItsNewFiles) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  const std::string dir = MakeTempDir();
  {
    std::ofstream program(dir + "/closefrom.py");
    program << "import os, sys, time\n"
               "time.sleep(0.3)\n"
               "os.closerange(3, 4096)  # closefrom(3)\n"
               "files = [open(os.path.join(sys.argv[1], 'f%d' % i), 'w') for i in range(8)]\n"
               "time.sleep(1.5)\n"
               "for i, f in enumerate(files):\n"
               "    f.write('program data %d\\n' % i)\n"
               "    f.close()\n";
  }
  // The push goes to a port that refuses at once: with its eventfd gone, a request still
  // waiting for a backend's answer at exit would end only at its own timeout (10 s), not at
  // the 3 s flush (docs/network.md).
  const auto start = Clock::now();
  ProcessResult r = RunProcess(
      {"/usr/bin/python3", dir + "/closefrom.py", dir},
      {{"LD_PRELOAD", PreloadValue()},
       {"INPROF_HTTP", "127.0.0.1:0"},
       {"INPROF_PUSH_URL", "http://127.0.0.1:9"},
       {"INPROF_WINDOW", "0.5"}});
  const double wall = SecondsSince(start);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(ReadFile(dir + "/f" + std::to_string(i)), "program data " + std::to_string(i) + "\n")
        << "file " << i << "\n" << r.err;
  }
  EXPECT_NE(r.err.find("the pull endpoint's listening socket"), std::string::npos) << r.err;
  EXPECT_LT(wall, 1.8 + 3.0 + 3.0) << r.err;
}

TEST(PreloadedProgram, AnEndpointOffLoopbackWithoutATokenWarnsOnce) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  const std::string port = std::to_string(FreePort());
  const std::string warning = "inprof: warning: the pull endpoint on 0.0.0.0:" + port +
                              " is not on loopback and has no token";
  ProcessResult r =
      RunProcess({INPROF_WORKLOAD, "shares", "0.2"},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_HTTP", "0.0.0.0:" + port}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find(warning);
  EXPECT_NE(at, std::string::npos) << r.err;
  // Once; other warnings (a loaded machine's "stack copies in use") are not this test's.
  EXPECT_EQ(r.err.find("is not on loopback", at + warning.size()), std::string::npos) << "one line\n" << r.err;
  EXPECT_NE(r.err.find("INPROF_HTTP_TOKEN"), std::string::npos) << r.err;
  // With a token, or on loopback: no warning.
  r = RunProcess({INPROF_WORKLOAD, "shares", "0.2"}, {{"LD_PRELOAD", PreloadValue()},
                                                      {"INPROF_HTTP", "0.0.0.0:" + port},
                                                      {"INPROF_HTTP_TOKEN", kToken}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("serving profiles"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not on loopback"), std::string::npos) << r.err;
  r = RunProcess({INPROF_WORKLOAD, "shares", "0.2"},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_HTTP", "127.0.0.1:" + port}});
  EXPECT_NE(r.err.find("serving profiles"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not on loopback"), std::string::npos) << r.err;
}

TEST(PreloadedProgram, APushUrlThatCouldChangeTheRequestIsRefusedByName) {
  if (!EmulatorPrefix().empty()) GTEST_SKIP() << "loopback sockets of an emulated child";
  ProcessResult r = RunProcess({INPROF_WORKLOAD, "shares", "0.2"},
                               {{"LD_PRELOAD", PreloadValue()},
                                {"INPROF_PUSH_URL", "http://127.0.0.1:9/ingest\r\nX-Injected: 1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("INPROF_PUSH_URL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("runs without profiling"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\r"), std::string::npos) << "the message shows the character escaped";
  EXPECT_EQ(r.err.find("\nX-Injected"), std::string::npos) << r.err;
  // Printable but not allowed in a path: the URL parser's own message, under the key's name.
  r = RunProcess({INPROF_WORKLOAD, "shares", "0.2"},
                 {{"LD_PRELOAD", PreloadValue()}, {"INPROF_PUSH_URL", "http://127.0.0.1:9/a<b>"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("INPROF_PUSH_URL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'<' is not allowed in a URL path"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace inprof::test
