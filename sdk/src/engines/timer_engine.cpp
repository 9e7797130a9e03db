// The timer engine: one POSIX CPU-time timer per thread. Control path.
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>


#include "engines/engine.h"
#include "signal/raw_syscall.h"

namespace inprof::internal {
namespace {

class TimerEngine final : public Engine {
 public:
  TimerEngine(int signal, long period_ns, bool wall, bool jitter)
      : signal_(signal), period_ns_(period_ns), wall_(wall), jitter_(jitter && !wall) {}
  EngineKind kind() const override { return EngineKind::kTimer; }

  FirstPeriod DrawFirstPeriod(double u1, double) const override {
    return UniformFirstPeriod(period_ns_, u1);
  }

  // A CPU-time timer is checked on the kernel tick: its signal comes at the first tick after
  // the expiry at which the thread runs, half a tick of its running later on average and
  // more when it is preempted, and a thread that ends within that lag never gets it (300
  // threads of 10 ms got 60-82 % of CPU time x rate; docs/platform-facts.md, "Sampling
  // bias"). The expiries it reached are known from its CPU clock: the first at first_ns of
  // CPU time after the timer was armed, then one each period. Those no signal took are owed.
  // Wall timers are hrtimers, on time.
  uint64_t PeriodsUnaccounted(const ThreadSlot& slot, uint32_t event,
                              int64_t cpu_ns) const override {
    if (wall_ || period_ns_ <= 0 || cpu_ns < 0 || event >= TimerToken::kMaxEvents) return 0;
    const int64_t ran = cpu_ns - slot.armed_cpu_ns[event];
    const int64_t first = slot.first_ns[event];
    const int64_t due = ran >= first ? (ran - first) / period_ns_ + 1 : 0;
    const int64_t seen = slot.periods_seen[event].load(std::memory_order_acquire);
    return due > seen ? static_cast<uint64_t>(due - seen) : 0;
  }

  int Create(pid_t tid, uint64_t token, ThreadSource* source) override {
    struct sigevent event;
    std::memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = signal_;
    event.sigev_value.sival_ptr = reinterpret_cast<void*>(token);
    event._sigev_un._tid = tid;  // glibc 2.36 has no sigev_notify_thread_id macro
    const clockid_t clock = wall_ ? CLOCK_MONOTONIC : ThreadCpuClock(tid);
    if (timer_create(clock, &event, &source->timer) != 0) return errno;
    source->has_timer = true;
    if (jitter_) {
      // The one-shot timer whose signal takes the sample (Sampler::timer_jitter_ns); armed
      // by the handler.
      event.sigev_value.sival_ptr = reinterpret_cast<void*>(TimerToken::AsJitter(token));
      if (timer_create(CLOCK_MONOTONIC, &event, &source->jitter_timer) != 0) {
        const int error = errno;
        Destroy(source);
        return error;
      }
      source->has_jitter_timer = true;
    }
    return 0;
  }

  int Start(ThreadSource* source, long first_ns) override {
    struct itimerspec spec;
    spec.it_interval.tv_sec = period_ns_ / 1000000000L;
    spec.it_interval.tv_nsec = period_ns_ % 1000000000L;
    spec.it_value.tv_sec = first_ns / 1000000000L;
    spec.it_value.tv_nsec = first_ns % 1000000000L;
    return timer_settime(source->timer, 0, &spec, nullptr) == 0 ? 0 : errno;
  }

  void Destroy(ThreadSource* source) override {
    if (source->has_timer) timer_delete(source->timer);
    source->has_timer = false;
    if (source->has_jitter_timer) timer_delete(source->jitter_timer);
    source->has_jitter_timer = false;
  }

  // POSIX timers are not inherited by fork: nothing to release.
  // POSIX timers are not inherited, and the child never uses the parent's sources again.
  void ForgetInChild(ThreadSource*) override {}

 private:
  int signal_;
  long period_ns_;
  bool wall_;
  bool jitter_;
};

}  // namespace

namespace {
class NullEngine final : public Engine {
 public:
  EngineKind kind() const override { return EngineKind::kNone; }
  int Create(pid_t, uint64_t, ThreadSource*) override { return 0; }
  int Start(ThreadSource*, long) override { return 0; }
  void Destroy(ThreadSource*) override {}
  void ForgetInChild(ThreadSource*) override {}
};
}  // namespace

std::unique_ptr<Engine> MakeNullEngine() { return std::make_unique<NullEngine>(); }

const char* EngineName(EngineKind kind) {
  switch (kind) {
    case EngineKind::kPerf:
      return "perf";
    case EngineKind::kItimer:
      return "itimer";
    case EngineKind::kNone:
      return "lua";
    default:
      return "timer";
  }
}

int InjectedTimerErrno() {
  // Test seam, like INPROF_TEST_PERF_ERRNO: makes the timer probe fail as the kernel would,
  // so the fallback to the itimer engine can be tested where timers work. Never for a
  // privileged program (secure_getenv, docs/security.md).
  const char* forced = secure_getenv("INPROF_TEST_TIMER_ERRNO");
  if (forced == nullptr) return 0;
  if (std::strcmp(forced, "EAGAIN") == 0) return EAGAIN;
  if (std::strcmp(forced, "EPERM") == 0) return EPERM;
  if (std::strcmp(forced, "ENOSYS") == 0) return ENOSYS;
  return 0;
}

int ProbeThreadTimer() {
  if (const int injected = InjectedTimerErrno(); injected != 0) return injected;
  struct sigevent event;
  std::memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_NONE;
  timer_t timer;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) return errno;
  timer_delete(timer);
  return 0;
}

std::string TimerErrorAdvice(int error) {
  std::string text = std::string("timer_create: ") + strerrorname_np(error);
  switch (error) {
    case EAGAIN:
      text += " (the kernel refused another timer: RLIMIT_SIGPENDING is exhausted, see ulimit -i)";
      break;
    case EPERM:
      text += " (refused by a seccomp filter or container policy)";
      break;
    case ENOSYS:
      text += " (the kernel or an emulator does not provide POSIX CPU timers)";
      break;
    default:
      text += std::string(" (") + std::strerror(error) + ")";
      break;
  }
  return text;
}

std::unique_ptr<Engine> MakeTimerEngine(int signal, long period_ns, bool wall, bool jitter) {
  return std::make_unique<TimerEngine>(signal, period_ns, wall, jitter);
}

double KernelTickHz() {
  struct timespec res;
  if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0 || (res.tv_sec == 0 && res.tv_nsec == 0)) {
    return 250;
  }
  return 1e9 / (static_cast<double>(res.tv_sec) * 1e9 + static_cast<double>(res.tv_nsec));
}

}  // namespace inprof::internal
