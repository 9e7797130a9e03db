// Sampling engines: what delivers the sampling signal to each thread.
//
//   timer  one POSIX timer per thread on its CPU-time clock (SIGEV_THREAD_ID). Works
//          everywhere, charges syscall time to the calling code, capped by the kernel tick;
//          samples carry 1 + overrun as weight so totals stay exact above the tick. Its
//          signals come on the tick, so loops near a multiple of it alias: `auto` prefers perf.
//   perf   one perf_event (software task-clock, user space only) per thread, its overflow
//          signal routed to that thread (O_ASYNC, F_SETSIG, F_SETOWN_EX/F_OWNER_TID).
//          hrtimer based: accurate at 1-4 kHz. Needs perf_event_paranoid <= 2 (or
//          CAP_PERFMON); with exclude_kernel, time inside syscalls is not sampled at all.
//   itimer one process-wide ITIMER_PROF (setitimer): the last resort when timer_create fails.
//          At most one signal per tick for the whole process, no overrun count, and the
//          program may take the timer over (itimer_engine.cpp).
//
// Concurrency contract: engines are used by the ThreadRegistry under its lock; the handler
// only reads the fd token table of the perf engine (see sampler.h).
#ifndef INPROF_SDK_ENGINE_H_
#define INPROF_SDK_ENGINE_H_

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "signal/sampler.h"

namespace inprof::internal {

enum class EngineKind { kTimer, kPerf, kItimer, kNone };

const char* EngineName(EngineKind kind);

class Engine {
 public:
  virtual ~Engine() = default;
  virtual EngineKind kind() const = 0;
  // Creates the (not yet running) source that will sample thread `tid`, tagged with
  // `token` (see TimerToken). Returns 0 or an errno value. Not async-signal-safe.
  virtual int Create(pid_t tid, uint64_t token, ThreadSource* source) = 0;
  // Where a new thread's first sample falls, drawn by the engine from `u1`, `u2` (uniform in
  // [0, 1)): `first_ns` for Start. Drawn so that a thread's expected number of samples
  // is its CPU time x rate whatever its length: a whole first period would never see a
  // thread shorter than one, and each thread would lose its last partial period
  // (docs/platform-facts.md, "Sampling bias"). Not async-signal-safe.
  struct FirstPeriod {
    long first_ns = 1;
  };
  virtual FirstPeriod DrawFirstPeriod(double /*u1*/, double /*u2*/) const { return {}; }
  // A first period uniform in (0, period_ns] from `u` (uniform in [0, 1)): the sample times
  // then lie on a grid of random phase in the thread's CPU time, so the number a thread
  // reaches is its CPU time x rate in expectation, whatever its length.
  static FirstPeriod UniformFirstPeriod(long period_ns, double u) {
    const long period = period_ns > 0 ? period_ns : 1;
    FirstPeriod draw;
    const long first = 1 + static_cast<long>(u * static_cast<double>(period));
    draw.first_ns = first < period ? first : period;
    return draw;
  }
  // Starts delivering signals; the first after about `first_ns` of the thread's CPU time.
  // Returns 0 or an errno value. Not async-signal-safe.
  virtual int Start(ThreadSource* source, long first_ns) = 0;
  // Stops and frees the source; afterwards no new signal is queued for it.
  // Not async-signal-safe.
  virtual void Destroy(ThreadSource* source) = 0;
  // In a forked child: release inherited resources without touching the parent's events.
  // Inside fork(): system calls only.
  virtual void ForgetInChild(ThreadSource* source) = 0;
  // True when the source was lost: the program closed the fd it lives on, or put a file of
  // its own on that number (closefrom, close_range, dup2). The source is then forgotten
  // without touching the number (it is the program's), and no longer delivers signals.
  // Not async-signal-safe.
  virtual bool Lost(ThreadSource*) { return false; }
  // Stops whatever the engine runs for the whole process (the itimer); per-thread sources
  // are destroyed one by one. Not async-signal-safe.
  virtual void StopAll() {}
  // The periods of CPU time that thread `slot` ran (its clock reads `cpu_ns` now) and that no
  // sample of `event` accounted for: called on the thread itself as it exits, after its slot
  // left kActive (no signal counts any more). A CPU-time timer's signal comes on the first
  // tick after its expiry, so a thread that ends within that lag never gets it; the exit
  // takes that sample instead (ThreadRegistry::RetireLocked). 0 for engines that deliver on
  // time (perf: an hrtimer on the thread's CPU time). Not async-signal-safe.
  virtual uint64_t PeriodsUnaccounted(const ThreadSlot& /*slot*/, uint32_t /*event*/,
                                      int64_t /*cpu_ns*/) const {
    return 0;
  }
  // What the user should know about how sampling went (e.g. a timer taken over).
  // Not async-signal-safe.
  virtual std::vector<std::string> Warnings() const { return {}; }
};

// `period_ns` is the sampling period in the thread's CPU time, or with `wall` in real time
// (CLOCK_MONOTONIC: the thread is sampled whether it runs or not).
// `jitter` (CPU clock only): each thread also gets a one-shot CLOCK_MONOTONIC timer, whose
// signal takes the sample the CPU timer's signal deferred (Sampler::timer_jitter_ns).
std::unique_ptr<Engine> MakeTimerEngine(int signal, long period_ns, bool wall = false,
                                        bool jitter = false);

// The process-wide ITIMER_PROF engine sampling event `event` (SIGPROF only), with a tid ->
// slot table in `sampler` sized for `max_threads`.
std::unique_ptr<Engine> MakeItimerEngine(Sampler* sampler, uint32_t event, long period_ns,
                                         uint32_t max_threads);

// An engine that delivers nothing: events whose samples come from elsewhere (lua: LuaJIT's
// profiler hands them to the session at VM safe points).
std::unique_ptr<Engine> MakeNullEngine();

// Memory for a tid -> slot table sized for `max_threads` (twice the slots, rounded up to a
// power of two, so probes stay short), zeroed, and `table` pointing at it. The caller keeps
// the memory while the table is published. Not async-signal-safe.
std::unique_ptr<std::atomic<uint64_t>[]> MakeTidTable(uint32_t max_threads, TidTable* table);

// The engine of allocation sampling: no signal; enters each thread in the tid -> slot table
// the allocation hooks find their thread's slot in (Sampler::alloc_tids), sized for
// `max_threads`.
std::unique_ptr<Engine> MakeAllocEngine(Sampler* sampler, uint32_t max_threads);

// Size of the fd -> token table perf engines publish into (Sampler::fd_tokens).
inline constexpr uint32_t kMaxPerfFds = 1u << 16;
// A per-thread perf event of `type`/`config` overflowing every `period` (ns for clocks,
// a count otherwise). Publishes fd -> token entries in sampler->fd_tokens, which the caller
// allocates (kMaxPerfFds entries) before any perf engine exists.
// `dithered`: the handler redraws each period of this (time) event around `period`
// (Sampler::event_dither_ns), which changes where a thread's first sample is drawn.
std::unique_ptr<Engine> MakePerfEngine(Sampler* sampler, int signal, uint32_t type,
                                       uint64_t config, uint64_t period,
                                       bool include_kernel = false, bool dithered = false);

// Whether per-thread sampling of that perf event works here: 0, or the errno of
// perf_event_open.
int ProbePerfEvent(uint32_t type, uint64_t config, bool include_kernel = false);
// What a perf_event_open errno means for the user, and what to do about it.
std::string PerfErrorAdvice(int error);

// Whether this thread can have a per-thread CPU timer (what the timer engine needs): 0 or
// the errno of timer_create. INPROF_TEST_TIMER_ERRNO=EAGAIN|EPERM|ENOSYS forces a failure.
int ProbeThreadTimer();
int InjectedTimerErrno();
// What a timer_create errno means for the user.
std::string TimerErrorAdvice(int error);

// The kernel tick rate (CONFIG_HZ), which caps the timer engine's signal rate: the
// resolution of CLOCK_REALTIME_COARSE is one tick.
double KernelTickHz();

}  // namespace inprof::internal

#endif  // INPROF_SDK_ENGINE_H_
