// A program that uses SIGPROF for itself: every thread blocks it, ITIMER_PROF drives it, and
// one thread takes the signals with sigwait, sigwaitinfo or a signalfd (argument) and counts
// them. The count must match the process CPU time the timer measured (one signal per 10 ms,
// within tolerance), the program must not be killed by a SIGPROF it never unblocked, and in
// the modes that see si_code, every signal it receives must be its own timer's (SI_KERNEL):
// a profiler's thread-directed timer or perf signal reaching it would be noticed.
//   sigwait_prof sigwait|sigwaitinfo|signalfd
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/time.h>

#include <atomic>
#include <cstring>
#include <string>

#include "torture.h"

namespace {

constexpr long kIntervalUs = 10000;
constexpr int kWorkers = 2;
constexpr double kWorkerCpuSeconds = 0.3;

std::string g_mode;
std::atomic<long> g_own{0};      // SIGPROF from ITIMER_PROF
std::atomic<long> g_foreign{0};  // SIGPROF from anything else
std::atomic<int> g_foreign_code{0};
int g_signalfd = -1;

void Count(int code) {
  if (code == SI_KERNEL) {
    g_own.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_foreign.fetch_add(1, std::memory_order_relaxed);
    g_foreign_code.store(code, std::memory_order_relaxed);
  }
}

// Takes SIGPROF until SIGUSR1 says stop.
void* SignalThread(void*) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPROF);
  sigaddset(&set, SIGUSR1);
  for (;;) {
    int sig = 0, code = SI_KERNEL;
    if (g_mode == "sigwait") {
      int rc = sigwait(&set, &sig);
      TORTURE_CHECK(rc == 0, "sigwait: %s", strerror(rc));
    } else if (g_mode == "sigwaitinfo") {
      siginfo_t info;
      sig = sigwaitinfo(&set, &info);
      if (sig < 0 && errno == EINTR) continue;
      TORTURE_CHECK(sig > 0, "sigwaitinfo: %s", strerror(errno));
      code = info.si_code;
    } else {
      signalfd_siginfo info;
      ssize_t n = read(g_signalfd, &info, sizeof info);
      if (n < 0 && errno == EINTR) continue;
      TORTURE_CHECK(n == sizeof info, "read(signalfd): %s", strerror(errno));
      sig = static_cast<int>(info.ssi_signo);
      code = info.ssi_code;
    }
    if (sig == SIGUSR1) return nullptr;
    TORTURE_CHECK(sig == SIGPROF, "unexpected signal %d", sig);
    Count(code);
  }
}

void* Worker(void* arg) {
  uint64_t chunks = 0;
  uint64_t value = torture::BurnCpu(kWorkerCpuSeconds, &chunks);
  *static_cast<uint64_t*>(arg) = value == torture::BurnExpected(chunks) ? 1 : 0;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "";
  TORTURE_CHECK(g_mode == "sigwait" || g_mode == "sigwaitinfo" || g_mode == "signalfd",
                "usage: sigwait_prof sigwait|sigwaitinfo|signalfd");
  // Blocked before any thread of ours exists, so every one inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPROF);
  sigaddset(&set, SIGUSR1);
  TORTURE_CHECK(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0, "pthread_sigmask");
  if (g_mode == "signalfd") {
    g_signalfd = signalfd(-1, &set, SFD_CLOEXEC);
    TORTURE_CHECK(g_signalfd >= 0, "signalfd: %s", strerror(errno));
  }
  pthread_t signal_thread;
  TORTURE_CHECK(pthread_create(&signal_thread, nullptr, SignalThread, nullptr) == 0,
                "pthread_create");

  const double cpu_start = torture::ProcessCpuSeconds();
  itimerval timer{};
  timer.it_interval.tv_usec = kIntervalUs;
  timer.it_value.tv_usec = kIntervalUs;
  TORTURE_CHECK(setitimer(ITIMER_PROF, &timer, nullptr) == 0, "setitimer: %s", strerror(errno));
  pthread_t workers[kWorkers];
  uint64_t ok[kWorkers] = {};
  for (int i = 0; i < kWorkers; ++i) {
    TORTURE_CHECK(pthread_create(&workers[i], nullptr, Worker, &ok[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < kWorkers; ++i) pthread_join(workers[i], nullptr);
  itimerval off{};
  TORTURE_CHECK(setitimer(ITIMER_PROF, &off, nullptr) == 0, "setitimer: %s", strerror(errno));
  const double cpu = torture::ProcessCpuSeconds() - cpu_start;
  // Signals already pending reach the signal thread before SIGUSR1 only if it is queued
  // after them: give the last ones a moment.
  usleep(20000);
  const long own = g_own.load();
  pthread_kill(signal_thread, SIGUSR1);
  pthread_join(signal_thread, nullptr);

  for (int i = 0; i < kWorkers; ++i) TORTURE_CHECK(ok[i] == 1, "worker %d computed a wrong value", i);
  const double expected = cpu * 1e6 / kIntervalUs;
  std::printf("sigwait_prof %s: %ld own SIGPROF (expected ~%.0f for %.3f s CPU), %ld foreign\n",
              g_mode.c_str(), own, expected, cpu, g_foreign.load());
  // ITIMER_PROF is checked on the scheduler tick against CPU time accounted at tick
  // granularity, and a SIGPROF that comes while the last one is still pending is lost: on a
  // loaded 2-CPU machine the count alone ranged from 0.78 to 1.16 times the expected one, with
  // or without a profiler, and a sanitizer build beside other tests read 0.497 (77 of ~155;
  // a program taking them in a handler got 6 to 82 of ~100 without the runtime under load).
  // The bounds catch what matters: a program that gets (almost) none of its signals, as when
  // the sigwait hooks took the program's own for the profiler's, or the profiler's ~99 per
  // thread-CPU-second on top.
  TORTURE_CHECK(own >= 0.1 * expected && own <= 1.35 * expected + 5,
                "%ld SIGPROF from ITIMER_PROF for %.3f s of CPU (expected ~%.0f)", own, cpu,
                expected);
  TORTURE_CHECK(g_foreign.load() == 0,
                "%ld SIGPROF that were not from ITIMER_PROF reached the program (last si_code %d)",
                g_foreign.load(), g_foreign_code.load());
  return 0;
}
