// A program that decides about SIGINT itself, as CPython and Ruby do: it reads the disposition
// it started with and installs its handler only where SIGINT is SIG_DFL (a background job
// starts with it ignored, and must stay so). Under a profiler it must read SIG_DFL for SIGINT
// and SIGTERM, exactly as without one, and then its own handler must run for every SIGINT it
// sends itself (and read back as its own), while it works.
//   own_sigint
#include <signal.h>

#include <atomic>
#include <cstring>

#include "torture.h"

namespace {

std::atomic<int> g_handled{0};

void OnSigint(int signal) {
  if (signal == SIGINT) g_handled.fetch_add(1, std::memory_order_relaxed);
}

const char* Describe(const struct sigaction& action) {
  if (action.sa_handler == SIG_DFL) return "SIG_DFL";
  if (action.sa_handler == SIG_IGN) return "SIG_IGN";
  return "a handler";
}

}  // namespace

int main() {
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    TORTURE_CHECK(sigaction(signal, nullptr, &old) == 0, "sigaction: %s", std::strerror(errno));
    TORTURE_CHECK(!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL,
                  "%s reads as %s at start, not SIG_DFL (without a profiler it is SIG_DFL)",
                  strsignal(signal),
                  (old.sa_flags & SA_SIGINFO) ? "an SA_SIGINFO handler" : Describe(old));
  }
  struct sigaction mine {};
  mine.sa_handler = OnSigint;
  sigemptyset(&mine.sa_mask);
  mine.sa_flags = SA_RESTART;
  TORTURE_CHECK(sigaction(SIGINT, &mine, nullptr) == 0, "sigaction: %s", std::strerror(errno));

  constexpr int kSignals = 20;
  uint64_t chunks = 0;
  for (int i = 0; i < kSignals; ++i) {
    TORTURE_CHECK(torture::BurnCpu(0.02, &chunks) == torture::BurnExpected(chunks), "wrong value");
    // raise() sends to this thread: the handler has run when it returns.
    TORTURE_CHECK(raise(SIGINT) == 0, "raise: %s", std::strerror(errno));
    TORTURE_CHECK(g_handled.load() == i + 1, "after %d SIGINT the handler ran %d times", i + 1,
                  g_handled.load());
  }
  struct sigaction now {};
  TORTURE_CHECK(sigaction(SIGINT, nullptr, &now) == 0, "sigaction: %s", std::strerror(errno));
  TORTURE_CHECK(now.sa_handler == OnSigint, "SIGINT reads back as %s, not the program's handler",
                Describe(now));
  return 0;
}
