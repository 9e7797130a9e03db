// The itimer engine: one process-wide ITIMER_PROF, the last resort when per-thread timers
// cannot be created (timer_create failing: RLIMIT_SIGPENDING exhausted, seccomp filters,
// emulators without POSIX CPU timers). Control path.
//
// What it costs compared with the timer engine, and why it is only a fallback:
// - The kernel checks process CPU timers on the tick, so at most one signal per tick reaches
//   the process, setitimer reports no overruns, and while threads run in parallel a pending
//   SIGPROF absorbs the next one. The handler weights each sample by its thread's CPU time
//   since that thread's previous sample instead (ItimerWeight in signal_handler.cpp), so
//   totals and per-thread shares stay right at the price of fewer, heavier samples.
// - The signal carries no token: the handler finds the thread's slot by its tid
//   (LookupTidSlot in sampler.h).
// - ITIMER_PROF is one per process and belongs to whoever set it last: a program (or LuaJIT's
//   profiler) that arms it takes it over. The setitimer hook (itimer_hooks.cpp) then stops
//   our sampling until the program disarms it again, and health says so.
// - Interval timers survive execve while the new image's SIGPROF action is the default
//   (terminate): the exec hooks disarm it first.
#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <new>

#include "engines/engine.h"
#include "engines/itimer.h"
#include "inprof/thread_annotations.h"
#include "signal/fork_reset.h"
#include "signal/raw_syscall.h"

namespace inprof::internal {

namespace {
// Resolved when the library loads (the setitimer hook's constructor; ResolveExecFunctions in
// exec_hooks.cpp says why), or on first use by the control path if that comes first
// (autostart runs from another constructor).
std::atomic<SetitimerFn> g_setitimer{nullptr};
}  // namespace

SetitimerFn ResolveSetitimer() {
  SetitimerFn real = g_setitimer.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<SetitimerFn>(dlsym(RTLD_NEXT, "setitimer"));
    g_setitimer.store(real, std::memory_order_release);
  }
  return real;
}

int RealSetitimer(int which, const struct itimerval* value, struct itimerval* old) {
  return ResolveSetitimer()(which, value, old);
}

namespace {

// The engine that owns ITIMER_PROF, for the hooks. The period is also readable without
// g_itimer_mu (exec hooks must not lock: a vfork child shares our memory).
class ItimerEngine;
Mutex g_itimer_mu;
ItimerEngine* g_itimer GUARDED_BY(g_itimer_mu) = nullptr;
std::atomic<long> g_armed_period_ns{0};

}  // namespace

// In the forked child, whose copy of the mutex may be held by a thread that does not exist
// there: a fresh mutex, and nothing locked.
__attribute__((hot)) void ForgetItimerAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  RemakeInChild(&g_itimer_mu);
  if (g_itimer != nullptr) g_itimer = nullptr;
  ResetInChild(g_armed_period_ns, 0, std::memory_order_relaxed);
}

namespace {

int SetProfTimer(long period_ns) {
  struct itimerval value {};
  value.it_interval.tv_sec = period_ns / 1000000000L;
  value.it_interval.tv_usec = (period_ns % 1000000000L) / 1000;
  if (period_ns > 0 && value.it_interval.tv_sec == 0 && value.it_interval.tv_usec == 0) {
    value.it_interval.tv_usec = 1;
  }
  value.it_value = value.it_interval;
  return RealSetitimer(ITIMER_PROF, &value, nullptr) == 0 ? 0 : errno;
}

int64_t ThreadCpuNow(pid_t tid) {
  const int64_t ns = ClockNsRaw(ThreadCpuClock(tid));
  return ns < 0 ? 0 : ns;
}

class ItimerEngine final : public Engine {
 public:
  ItimerEngine(Sampler* sampler, uint32_t event, long period_ns, uint32_t max_threads)
      : sampler_(sampler),
        event_(event),
        period_ns_(period_ns),
        table_(MakeTidTable(max_threads, &sampler->tid_table)) {}

  ~ItimerEngine() override {
    StopAll();
    sampler_->tid_table = TidTable{};
  }

  EngineKind kind() const override { return EngineKind::kItimer; }

  int Create(pid_t tid, uint64_t token, ThreadSource* source) override {
    uint32_t event = 0, index = 0, generation = 0;
    if (!TimerToken::Decode(token, &event, &index, &generation)) return EINVAL;
    // The base before the entry: the handler that finds the entry reads the base.
    sampler_->slots[index].itimer_cpu_base.store(ThreadCpuNow(tid), std::memory_order_relaxed);
    if (!sampler_->tid_table.Insert(tid, index)) {
      return ENOSPC;  // a probe run this long means a pathological tid pattern: skip the thread
    }
    source->itimer_tid = tid;
    source->itimer_slot = index;
    return 0;
  }

  // Each sample stands for the whole periods of its thread's CPU time since the base
  // (ItimerWeight in signal_handler.cpp). A base at the thread's registration would make the
  // first period whole, and a thread shorter than one would never count; so the base goes
  // back by a random part of a period: the first period is uniform in (0, period].
  FirstPeriod DrawFirstPeriod(double u1, double) const override {
    return UniformFirstPeriod(period_ns_, u1);
  }

  // ITIMER_PROF's signal goes to whichever thread runs when the process's timer expires, at
  // most one per tick for the whole process: a short thread may end with periods no signal
  // found it for. They are owed at its exit.
  uint64_t PeriodsUnaccounted(const ThreadSlot& slot, uint32_t event,
                              int64_t cpu_ns) const override {
    // Not while the program owns ITIMER_PROF: that time is not ours to charge.
    if (event != event_ || period_ns_ <= 0 || cpu_ns < 0 ||
        sampler_->itimer_event.load(std::memory_order_acquire) == 0) {
      return 0;
    }
    const int64_t owed = (cpu_ns - slot.itimer_cpu_base.load(std::memory_order_relaxed)) / period_ns_;
    return owed > 0 ? static_cast<uint64_t>(owed) : 0;
  }

  int Start(ThreadSource* source, long first_ns) override {
    int error = 0;
    {
      MutexLock lock(&g_itimer_mu);
      if (g_itimer != this && !stopped_) {
        g_itimer = this;
        if (!yielded_) error = ArmLocked();  // else the program owns ITIMER_PROF for now
      }
    }
    // After ArmLocked, which sets every thread's base to its CPU clock.
    if (error == 0 && source->itimer_tid != 0 && first_ns > 0 && first_ns <= period_ns_) {
      sampler_->slots[source->itimer_slot].itimer_cpu_base.fetch_sub(period_ns_ - first_ns,
                                                                    std::memory_order_relaxed);
    }
    return error;
  }

  void Destroy(ThreadSource* source) override {
    if (source->itimer_tid == 0) return;
    sampler_->tid_table.Remove(source->itimer_tid);
    source->itimer_tid = 0;
  }

  // Interval timers are not inherited by fork: nothing of the parent's to release.
  // ITIMER_PROF is not inherited, and the child never uses the parent's sources again.
  void ForgetInChild(ThreadSource*) override {}

  void StopAll() override {
    MutexLock lock(&g_itimer_mu);
    stopped_ = true;
    if (g_itimer != this) return;
    DisarmLocked();
    g_itimer = nullptr;
  }

  std::vector<std::string> Warnings() const override {
    MutexLock lock(&g_itimer_mu);
    std::vector<std::string> out;
    if (takeovers_ != 0) {
      out.push_back("the program armed ITIMER_PROF itself " + std::to_string(takeovers_) +
                    (takeovers_ == 1 ? " time" : " times") +
                    ": the itimer engine took no samples while the program owned it (use "
                    "engine=timer to sample alongside it)");
    }
    return out;
  }

  // setitimer hook: the program arms (or disarms) ITIMER_PROF. Arming takes it over from
  // us; disarming gives it back once its own call is done.
  void ProgramArms() REQUIRES(g_itimer_mu) {
    if (!yielded_) {
      ++takeovers_;
      yielded_ = true;
      sampler_->itimer_event.store(0, std::memory_order_release);
      g_armed_period_ns.store(0, std::memory_order_release);
    }
  }
  void ProgramDisarmed() REQUIRES(g_itimer_mu) {
    if (yielded_ && !stopped_) {
      yielded_ = false;
      ArmLocked();
    }
  }

 private:
  int ArmLocked() REQUIRES(g_itimer_mu) {
    // CPU time of the threads while the timer was not ours is not theirs to be charged for.
    sampler_->itimer_period_ns = period_ns_;
    for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
      ThreadSlot& slot = sampler_->slots[i];
      if (slot.state.load(std::memory_order_acquire) == SlotState::kFree) continue;
      slot.itimer_cpu_base.store(ThreadCpuNow(slot.tid.load(std::memory_order_relaxed)),
                                 std::memory_order_relaxed);
    }
    sampler_->itimer_event.store(event_ + 1, std::memory_order_release);
    const int error = SetProfTimer(period_ns_);
    if (error != 0) {
      sampler_->itimer_event.store(0, std::memory_order_release);
      return error;
    }
    g_armed_period_ns.store(period_ns_, std::memory_order_release);
    return 0;
  }
  void DisarmLocked() REQUIRES(g_itimer_mu) {
    if (!yielded_) SetProfTimer(0);
    sampler_->itimer_event.store(0, std::memory_order_release);
    g_armed_period_ns.store(0, std::memory_order_release);
  }

  Sampler* sampler_;
  uint32_t event_;
  long period_ns_;
  std::unique_ptr<std::atomic<uint64_t>[]> table_;
  bool stopped_ GUARDED_BY(g_itimer_mu) = false;
  bool yielded_ GUARDED_BY(g_itimer_mu) = false;
  uint64_t takeovers_ GUARDED_BY(g_itimer_mu) = 0;
};

}  // namespace

std::unique_ptr<Engine> MakeItimerEngine(Sampler* sampler, uint32_t event, long period_ns,
                                         uint32_t max_threads) {
  return std::make_unique<ItimerEngine>(sampler, event, period_ns, max_threads);
}

void ItimerProgramSets(bool arming) {
  MutexLock lock(&g_itimer_mu);
  if (g_itimer == nullptr) return;
  if (arming) {
    g_itimer->ProgramArms();
  } else {
    g_itimer->ProgramDisarmed();
  }
}

bool ItimerOwned() {
  MutexLock lock(&g_itimer_mu);
  return g_itimer != nullptr;
}

long ItimerArmedPeriodNs() { return g_armed_period_ns.load(std::memory_order_acquire); }

int RearmItimerAfterFailedExec(long period_ns) { return SetProfTimer(period_ns); }

}  // namespace inprof::internal
