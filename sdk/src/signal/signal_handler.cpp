// Signal path. Everything in this file runs inside the sampling signal handler, which can
// interrupt any code — malloc, the dynamic loader, our own collector. It allocates nothing,
// takes no lock, calls no library function and keeps errno intact. Only signal-safe headers.
#include <linux/perf_event.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>

#include "signal/bootstrap.h"
#include "signal/raw_syscall.h"
#include "signal/sample_record.h"
#include "signal/sampler.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

// Set while the calling thread does the profiler's own work (ProfilerWorkScope).
__thread bool t_profiler_work __attribute__((tls_model("initial-exec"))) = false;

// The bounds of the profiler's callbacks that program threads enter from code that is not
// the profiler's (INPROF_PROFILER_TEXT): the linker defines them when the section exists.
extern "C" const char __start_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));

// Shared with signal_install.cpp (control path).
std::atomic<Sampler*> g_sampler{nullptr};
std::atomic<int> g_handlers_in_flight{0};
// The action chained to for signals that are not ours: the one installed before us, or the
// one the program installed later through our sigaction/signal hooks. Updated by the control
// path into the next of four slots, then published by index, so a handler never reads a
// half-written action (it would take four updates during one handler run to reuse a slot).
struct sigaction g_previous_actions[4];
std::atomic<unsigned> g_previous_index{0};
// The exit watchdog (exit_paths.cpp): the status the process ends with when it fires.
std::atomic<int> g_exit_watchdog_status{0};
static_assert(std::atomic<Sampler*>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

namespace {

// initial-exec: the handler must never be the first to touch dynamic TLS (that would call
// __tls_get_addr, which may allocate).
thread_local int t_in_handler __attribute__((tls_model("initial-exec"))) = 0;
// The calling thread's label set (labels.cpp), 0 for none: written by the thread itself, read
// by its handler, which interrupts it, so a relaxed atomic is all the ordering needed.
thread_local std::atomic<uint32_t> t_label_set __attribute__((tls_model("initial-exec"))){0};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
// The calling thread's generator for dithered perf periods (xorshift64*), seeded on first use,
// and the thread CPU time at which the period it last drew ends (0: none drawn yet).
thread_local uint64_t t_dither_state __attribute__((tls_model("initial-exec"))) = 0;
thread_local int64_t t_dither_due __attribute__((tls_model("initial-exec"))) = 0;
// Samples left before the next draw (Sampler::dither_every).
thread_local uint32_t t_dither_left __attribute__((tls_model("initial-exec"))) = 0;

// A period drawn uniformly from [mean/2, 3*mean/2): its mean is the configured period, so
// rates and totals are unchanged, and a loop whose period is near a multiple of the sampling
// period no longer meets the samples at the same few points of its cycle.
uint64_t DrawPeriod(uint64_t mean_ns) {
  uint64_t x = t_dither_state;
  if (x == 0) {
    x = (static_cast<uint64_t>(CurrentTidRaw()) << 32) ^ static_cast<uint64_t>(MonotonicNsRaw()) ^
        0x9E3779B97F4A7C15ull;
    if (x == 0) x = 1;
  }
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t_dither_state = x;
  const uint64_t r = x * 0x2545F4914F6CDD1Dull;
  const uint64_t half = mean_ns / 2;
  return half + (mean_ns > 0 ? (r >> 11) % mean_ns : 0);
}

// The id of the perf event the runtime opened at `fd` (Sampler::fd_ids), 0 for none.
uint64_t ExpectedFdId(const Sampler* sampler, int fd) {
  return sampler->fd_ids != nullptr && fd >= 0 && static_cast<uint32_t>(fd) < sampler->fd_token_count
             ? sampler->fd_ids[fd].load(std::memory_order_acquire)
             : 0;
}

// Gives the perf event behind `fd` (this thread's, running now) a new period. The kernel
// restarts the event's timer from now, so the CPU time since its overflow (the signal's
// delivery and this handler: ~30 us here) would be lost from every period and the sample rate
// would fall short by that much (13 % at 4 kHz); it is taken off the new period instead,
// measured on the thread's CPU clock that task-clock counts. A failure (an old kernel) leaves
// the fixed period.
//
// Only while the slot is active (a retired slot's fd is closed), and only while `fd` still
// holds our event: the program owns the number and may have closed it (closefrom) or put a
// file or a perf event of its own there (dup2) since the kernel queued this signal. The
// event id (PERF_EVENT_IOC_ID, unique per event) must be the one we opened there
// (`expected_id`): a file refuses the request (ENOTTY: '$' is perf's ioctl type), another
// perf event answers with its own id. One system call per sample, 0.4 us measured here.
// What is left is the program replacing the number on another thread between this check and
// the ioctl below: a window of one system call.
bool FdHoldsOurEvent(int fd, uint64_t expected_id) {
  uint64_t id = 0;
  return expected_id != 0 &&
         RawSyscall4(kSysIoctl, fd, static_cast<long>(PERF_EVENT_IOC_ID),
                     reinterpret_cast<long>(&id)) == 0 &&
         id == expected_id;
}

// The first overflow of the thread's event: its period was drawn at registration and may have
// been lengthened to the floor PerfEngine::Start keeps; it was due at perf_first_due, and
// the lateness below takes the lengthening off this period, so the samples after the first
// fall where the drawn one would have put them.
//
// A drawn period serves `every` samples (Sampler::dither_every): the kernel re-arms the timer
// with it after each overflow, exactly one period after the last one, so only the redraw loses
// the signal's delay, and it is taken off all `every` periods of the new draw: the last of them
// ends where `every` drawn periods from the due time would.
void RedrawPeriod(ThreadSlot& slot, uint32_t event, int fd, uint64_t expected_id,
                  uint64_t mean_ns, uint32_t every) {
  const uint32_t bit = 1u << event;
  const bool first = (slot.perf_first_pending.load(std::memory_order_relaxed) & bit) != 0;
  if (!first && t_dither_left > 0) {
    --t_dither_left;
    return;
  }
  if (slot.state.load(std::memory_order_acquire) != SlotState::kActive) return;
  if (!FdHoldsOurEvent(fd, expected_id)) return;
  const int64_t now = ThreadCpuNsRaw();
  if (first) {
    slot.perf_first_pending.fetch_and(~bit, std::memory_order_relaxed);
    t_dither_due = slot.perf_first_due[event].load(std::memory_order_relaxed);
  }
  every = every == 0 ? 1 : every;
  t_dither_left = every - 1;
  int64_t next = static_cast<int64_t>(DrawPeriod(mean_ns));
  const int64_t late = now - t_dither_due;
  if (t_dither_due != 0 && now >= 0 && late > 0 && late < static_cast<int64_t>(mean_ns) / 2) {
    next -= late / static_cast<int64_t>(every);
  }
  // When the last period of this draw is due; the event gets at least PerfTimePeriodFloorNs,
  // and the next redraw takes the difference off again.
  t_dither_due = now >= 0 ? now + next * static_cast<int64_t>(every) : 0;
  const int64_t floor = static_cast<int64_t>(PerfTimePeriodFloorNs(mean_ns));
  next = next < floor ? floor : next;
  uint64_t period = static_cast<uint64_t>(next);
  RawSyscall4(kSysIoctl, fd, static_cast<long>(PERF_EVENT_IOC_PERIOD),
              reinterpret_cast<long>(&period));
}

// After the first overflow of a thread's perf event whose first period was drawn short
// (Engine::DrawFirstPeriod) and whose periods are not redrawn: the event's own period from
// here on. Same conditions as RedrawPeriod.
void RestorePeriod(ThreadSlot& slot, uint32_t event, int fd, uint64_t expected_id,
                   uint64_t period) {
  const uint32_t bit = 1u << event;
  if (period == 0 || (slot.perf_first_pending.load(std::memory_order_relaxed) & bit) == 0) return;
  slot.perf_first_pending.fetch_and(~bit, std::memory_order_relaxed);
  if (slot.state.load(std::memory_order_acquire) != SlotState::kActive) return;
  if (!FdHoldsOurEvent(fd, expected_id)) return;
  RawSyscall4(kSysIoctl, fd, static_cast<long>(PERF_EVENT_IOC_PERIOD),
              reinterpret_cast<long>(&period));
}

// Timer engine: a CPU timer's signal stands for `delivered` (1 + overrun) periods, counted in
// the slot for the thread's exit (periods_seen) while the slot is its thread's: the exit runs
// on the thread, after the slot left kActive, so a signal either counts here before it looks
// or finds the slot retired.
uint32_t TimerPeriods(Sampler* sampler, uint32_t event, uint32_t index, uint32_t generation,
                      uint32_t delivered) {
  if (sampler == nullptr || index >= sampler->slot_count || event >= TimerToken::kMaxEvents) {
    return delivered;
  }
  ThreadSlot& slot = sampler->slots[index];
  if (slot.state.load(std::memory_order_acquire) == SlotState::kActive &&
      (slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF) == generation) {
    slot.periods_seen[event].fetch_add(delivered, std::memory_order_relaxed);
  }
  return delivered;
}

// Config::timer_jitter: a CPU timer's signal on the tick takes no sample; it adds its weight
// to the slot and arms the thread's one-shot CLOCK_MONOTONIC timer a random delay within one
// tick later, whose signal (JitterWeight) takes the sample off the tick's grid. True when it
// was armed; false leaves the sample to be taken now. Same conditions as RedrawPeriod: only
// while the slot is active (a retired slot's timer id may be reused by the program).
bool DeferToJitterTimer(Sampler* sampler, uint32_t index, uint32_t generation, uint32_t weight) {
  if (sampler == nullptr || sampler->timer_jitter_ns <= 0 || index >= sampler->slot_count) {
    return false;
  }
  ThreadSlot& slot = sampler->slots[index];
  const int32_t timer = slot.jitter_timer.load(std::memory_order_acquire);
  if (timer < 0 || slot.state.load(std::memory_order_acquire) != SlotState::kActive ||
      (slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF) != generation) {
    return false;
  }
  slot.jitter_weight.fetch_add(weight, std::memory_order_relaxed);
  const uint64_t tick = static_cast<uint64_t>(sampler->timer_jitter_ns);
  const int64_t delay = 1000 + static_cast<int64_t>(DrawPeriod(tick) - tick / 2);  // [0, tick)
  slot.jitter_armed_cpu.store(ThreadCpuNsRaw(), std::memory_order_relaxed);
  slot.jitter_armed_wall.store(MonotonicNsRaw(), std::memory_order_relaxed);
  struct {
    struct timespec interval, value;
  } spec = {{0, 0}, {0, static_cast<long>(delay)}};
  if (RawSyscall4(kSysTimerSettime, timer, 0, reinterpret_cast<long>(&spec), 0) != 0) {
    slot.jitter_weight.fetch_sub(weight, std::memory_order_relaxed);
    return false;
  }
  return true;
}

// The one-shot timer's signal: the weight of the CPU-timer signals it stands for, if the
// thread kept running since it was armed (its CPU clock advanced by at least 90 % of the
// real time since). If it did not (it blocked, or waited for a CPU), the signal may find it
// where it spends no CPU time, inside a blocking call: no sample, and the weight stays for
// the next one (measured: a loop of 1 ms of work and 1 ms of nanosleep put 66 % of its
// samples in nanosleep with no check, 42-54 % with "half the delay";
// docs/platform-facts.md, "Sampling bias").
uint32_t JitterWeight(Sampler* sampler, uint32_t index, uint32_t generation) {
  if (sampler == nullptr || index >= sampler->slot_count) return 0;
  ThreadSlot& slot = sampler->slots[index];
  if ((slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF) != generation) return 0;
  const int64_t now = ThreadCpuNsRaw();
  const int64_t ran = now - slot.jitter_armed_cpu.load(std::memory_order_relaxed);
  const int64_t elapsed = MonotonicNsRaw() - slot.jitter_armed_wall.load(std::memory_order_relaxed);
  if (now >= 0 && ran * 10 < elapsed * 9) return 0;
  return slot.jitter_weight.exchange(0, std::memory_order_acquire);
}

// Records one sample for slot `index` (the slot is counted in slot.handlers by TakeSample).
// False when the signal is stale (the slot is no longer the thread the signal was meant
// for): then its source (a perf fd) may be closed already.
// `alloc`: a sampled allocation's, recorded by its hook (TakeHookSample); null for a signal.
// Returns whether the sample was live (see TakeSample) and, in `recorded`, whether it reached a
// ring.
bool TakeSampleCounted(Sampler* sampler, ThreadSlot& slot, uint32_t event, uint32_t generation,
                       uint32_t weight, const ucontext_t* context, const AllocInfo* alloc,
                       bool* recorded) {
  *recorded = false;
  // seq_cst: the other half of the fence with ReleaseRetired (see TakeSample).
  if (slot.state.load(std::memory_order_seq_cst) != SlotState::kActive ||
      (slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF) != generation) {
    sampler->counters.stale.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // The thread is inside the runtime (a program's inprof_start, stop or dump, where a sample
  // would show the registry's scan or the exporters as the program's code): counted, left out.
  // So is a callback's entry and exit around its flag (the LuaJIT bridge's, a thousand times
  // a second: one of about 60,000 samples fell in its ten instructions).
  // An allocation hook's context is its own frame, in that section on purpose.
  const uintptr_t pc = ContextPc(context);
  if (t_profiler_work ||
      (alloc == nullptr && pc >= reinterpret_cast<uintptr_t>(__start_inprof_profiler_text) &&
       pc < reinterpret_cast<uintptr_t>(__stop_inprof_profiler_text))) {
    sampler->counters.profiler_work.fetch_add(weight, std::memory_order_relaxed);
    return true;
  }
  if (slot.in_handler.exchange(true, std::memory_order_acquire)) {
    sampler->counters.reentered.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Loaded once: the registry replaces them only while no handler is counted in the slot,
  // and reloading one (as an earlier version did) would only invite a torn view.
  SampleRing* const ring = slot.ring;
  CopyRing* const copies = slot.copies;
  const uint32_t labels = ThreadLabelSet();
  const int64_t now = MonotonicNsRaw();
  const uintptr_t hi = slot.stack_hi.load(std::memory_order_acquire);
  if (hi == 0) slot.probe_sp.store(ContextSp(context), std::memory_order_relaxed);
  if (sampler->unwind != UnwindMode::kFp && copies != nullptr) {
    CopyRecord* record;
    uint8_t* bytes;
    if (copies->Reserve(&record, &bytes)) {
      const StackBounds bounds{slot.stack_lo.load(std::memory_order_relaxed), hi};
      record->tid = static_cast<uint32_t>(slot.tid.load(std::memory_order_relaxed));
      record->weight = weight;
      record->labels = labels;
      record->time_ns = now;
      record->event = static_cast<uint16_t>(event);
      record->fp_depth = 0;
      record->fp_stop = WalkStop::kRoot;
      record->alloc = alloc != nullptr ? *alloc : AllocInfo{};
      if (sampler->unwind == UnwindMode::kAuto) {
        const WalkResult walk = FpWalk(context, bounds, sampler->code.load(std::memory_order_seq_cst),
                                       record->fp_frames, sampler->max_depth);
        record->fp_depth = static_cast<uint16_t>(walk.depth);
        record->fp_stop = walk.stop;
      }
      CopyStack(context, bounds, bytes, copies->slot_bytes(), &record->copy);
      copies->Publish();
      if (alloc == nullptr) sampler->counters.signals.fetch_add(1, std::memory_order_relaxed);
      *recorded = true;
      slot.in_handler.store(false, std::memory_order_release);
      return true;
    }
    // All copies in flight (the collector is behind). An allocation hook waits for room
    // (alloc_sampler.cpp) rather than keep a frame-pointer walk, which loses the caller of
    // a frameless allocation wrapper (libstdc++'s operator new); a signal keeps the fp walk.
    if (alloc != nullptr) {
      slot.in_handler.store(false, std::memory_order_release);
      return true;
    }
    sampler->counters.copy_full.fetch_add(1, std::memory_order_relaxed);
  }
  const WalkRequest request{context,
                            StackBounds{slot.stack_lo.load(std::memory_order_relaxed), hi},
                            sampler->code.load(std::memory_order_seq_cst),
                            sampler->max_depth,
                            static_cast<uint32_t>(slot.tid.load(std::memory_order_relaxed)),
                            weight,
                            event,
                            labels,
                            now,
                            alloc != nullptr ? *alloc : AllocInfo{}};
  if (ring->try_emplace(request)) {
    if (alloc == nullptr) sampler->counters.signals.fetch_add(1, std::memory_order_relaxed);
    *recorded = true;
  } else if (alloc == nullptr) {  // a hook counts its own (it may wait and try again)
    sampler->counters.ring_full.fetch_add(1, std::memory_order_relaxed);
  }
  slot.in_handler.store(false, std::memory_order_release);
  return true;
}

// The fence that keeps a slot's rings alive while this handler writes them (Dekker, with
// ThreadRegistry::ReleaseRetired on another CPU): the handler counts itself in the slot
// (seq_cst) before it loads the slot's state (seq_cst); the registry stores kRetiring
// (seq_cst) before it loads the count (seq_cst) and gives the rings back only when it reads
// zero. In the single total order of these four operations either the handler's load comes
// after the store (it sees kRetiring and touches nothing) or the registry's load comes after
// the count (it sees this handler and keeps the rings until a later pass). The decrement is a
// release that the registry's load acquires, so whatever the handler published is in the
// rings when the registry looks at them. Deleting the timer is no such fence: it does not
// wait for a handler already running on another CPU.
bool TakeSample(Sampler* sampler, uint32_t event, uint32_t index, uint32_t generation,
                uint32_t weight, const ucontext_t* context) {
  ThreadSlot& slot = sampler->slots[index];
  slot.handlers.fetch_add(1, std::memory_order_seq_cst);
  bool recorded = false;
  const bool live =
      TakeSampleCounted(sampler, slot, event, generation, weight, context, nullptr, &recorded);
  slot.handlers.fetch_sub(1, std::memory_order_release);
  return live;
}

// ITIMER_PROF reports no overruns, and while several threads run at once the kernel
// generates signals faster than the process takes them (a pending SIGPROF absorbs the next):
// a thread that runs alongside others loses samples. So each sample stands for the periods of
// its own thread's CPU time not yet accounted for, as the timer engine's overruns do: totals
// and per-thread shares stay right. The base advances by whole periods (the remainder carries
// to the next sample); a signal that lands on a thread with less than a period of its own
// time unaccounted stands for nothing (weight 0: no sample) — the time it was generated for
// belongs to another thread, which is charged on its own next sample.
uint32_t ItimerWeight(Sampler* sampler, ThreadSlot& slot) {
  const int64_t now = ThreadCpuNsRaw();
  const int64_t period = sampler->itimer_period_ns;
  if (now < 0 || period <= 0) return 1;
  const int64_t base = slot.itimer_cpu_base.load(std::memory_order_relaxed);
  int64_t periods = (now - base) / period;
  if (periods < 1) return 0;
  if (periods > 100000) periods = 100000;  // a base from before a long pause: do not explode
  slot.itimer_cpu_base.store(base + periods * period, std::memory_order_relaxed);
  return static_cast<uint32_t>(periods);
}

void ChainToPrevious(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous =
      g_previous_actions[g_previous_index.load(std::memory_order_acquire) & 3];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(signal);
  }
  // SIG_DFL / SIG_IGN: a stray signal of our kind is swallowed rather than killing the
  // process (SIGPROF's default action is to terminate).
}

// A write of an exit path that did not finish in time (it may be stuck on a lock the
// interrupted code holds): say so and end the process as the program asked.
[[noreturn]] void ExitWatchdogFired() {
  RawSyscall4(kSysWrite, 2, reinterpret_cast<long>(kExitWriteTimedOut),
              sizeof kExitWriteTimedOut - 1);
  ExitGroupRaw(g_exit_watchdog_status.load(std::memory_order_relaxed));
}

// The timers of a forked child before its session starts, and the exit watchdog: not
// TimerTokens, and they arrive whether a session runs or not. True when `info` was one.
bool HandleProcessTimer(siginfo_t* info, void* context) {
  if (info == nullptr || info->si_code != SI_TIMER) return false;
  const uint64_t token = reinterpret_cast<uint64_t>(info->si_value.sival_ptr);
  if (token == kBootstrapTimerToken) {
    BootstrapSample(static_cast<const ucontext_t*>(context),
                    1u + static_cast<uint32_t>(info->si_overrun > 0 ? info->si_overrun : 0));
    return true;
  }
  if (token == kExitWatchdogToken) ExitWatchdogFired();
  return false;
}

}  // namespace

bool InSamplingHandler() { return t_in_handler != 0; }

bool TakeHookSample(Sampler* sampler, uint32_t index, uint32_t event, const ucontext_t* context,
                    const AllocInfo& alloc, bool* filling) {
  ThreadSlot& slot = sampler->slots[index];
  slot.handlers.fetch_add(1, std::memory_order_seq_cst);
  // The slot's current registration: the thread is the caller, so only a retirement (the
  // session stopping) can change it, and TakeSampleCounted checks the state after the fence.
  const uint32_t generation = slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF;
  bool recorded = false;
  if (slot.tid.load(std::memory_order_relaxed) == CurrentTidRaw()) {
    TakeSampleCounted(sampler, slot, event, generation, 1, context, &alloc, &recorded);
    // Still inside the fence: the rings cannot be released under us.
    const SampleRing* ring = slot.ring;
    *filling = ring != nullptr && ring->size_approx() > 8;
    // A hook's wake-up is a system call on the sampled thread (a lock hook's, with the lock
    // held): only once a quarter of the copies wait, as for the records.
    if (slot.copies != nullptr && sampler->unwind != UnwindMode::kFp) {
      *filling = slot.copies->QuarterFull();
    }
  }
  slot.handlers.fetch_sub(1, std::memory_order_release);
  return recorded;
}


uint32_t ThreadLabelSet() { return t_label_set.load(std::memory_order_relaxed); }
void SetThreadLabelSet(uint32_t id) { t_label_set.store(id, std::memory_order_relaxed); }

bool IsProfilerSignal(const siginfo_t* info) {
  if (info == nullptr) return false;
  if (info->si_code == SI_TIMER) {
    const uint64_t token = reinterpret_cast<uint64_t>(info->si_value.sival_ptr);
    return token >> 52 == TimerToken::kTag || token >> 52 == TimerToken::kJitterTag ||
           token == kBootstrapTimerToken ||
           token == kExitWatchdogToken;
  }
  const Sampler* sampler = g_sampler.load(std::memory_order_seq_cst);
  if (sampler == nullptr) return false;
  if (info->si_code == POLL_IN || info->si_code == POLL_HUP) {
    return info->si_fd >= 0 && static_cast<uint32_t>(info->si_fd) < sampler->fd_token_count &&
           sampler->fd_tokens[info->si_fd].load(std::memory_order_acquire) >> 52 ==
               TimerToken::kTag;
  }
  return info->si_code == SI_KERNEL && sampler->itimer_event.load(std::memory_order_acquire) != 0;
}

void SamplingSignalHandler(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // Counted from here, so that the allocation/lock interposer sees the bootstrap and
  // watchdog paths as handler code too.
  ++t_in_handler;
  if (HandleProcessTimer(info, context)) {
    --t_in_handler;
    errno = saved_errno;
    return;
  }
  g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  Sampler* sampler = g_sampler.load(std::memory_order_seq_cst);
  bool ours = false;
  uint32_t event = 0, index = 0, generation = 0, weight = 0;
  if (info != nullptr && info->si_code == SI_TIMER &&
      TimerToken::Decode(reinterpret_cast<uint64_t>(info->si_value.sival_ptr), &event, &index,
                         &generation)) {
    // Timer engine: the kernel counts the expirations it could not deliver (it checks CPU
    // timers on the tick), so the sample stands for 1 + overrun periods.
    ours = true;  // ours even when stale: a late signal of a stopped session is swallowed
    weight = TimerPeriods(sampler, event, index, generation,
                          1u + static_cast<uint32_t>(info->si_overrun > 0 ? info->si_overrun : 0));
    if (DeferToJitterTimer(sampler, index, generation, weight)) weight = 0;
  } else if (info != nullptr && info->si_code == SI_TIMER &&
             reinterpret_cast<uint64_t>(info->si_value.sival_ptr) >> 52 == TimerToken::kJitterTag) {
    // The one-shot timer of timer_jitter: the sample its CPU timer deferred.
    ours = true;
    const uint64_t token = reinterpret_cast<uint64_t>(info->si_value.sival_ptr);
    TimerToken::Decode((token & ~(uint64_t{0xFFF} << 52)) | TimerToken::kTag << 52, &event, &index,
                       &generation);
    weight = JitterWeight(sampler, index, generation);
  } else if (info != nullptr && (info->si_code == POLL_IN || info->si_code == POLL_HUP) &&
             sampler != nullptr && info->si_fd >= 0 &&
             static_cast<uint32_t>(info->si_fd) < sampler->fd_token_count &&
             TimerToken::Decode(
                 sampler->fd_tokens[info->si_fd].load(std::memory_order_acquire), &event,
                 &index, &generation)) {
    // perf engine: one signal per overflow, standing for one period of the event.
    // POLL_HUP is the event's thread exiting.
    ours = true;
    weight = info->si_code == POLL_IN && event < sampler->event_count
                 ? sampler->event_weights[event]
                 : 0u;
  } else if (info != nullptr && info->si_code == SI_KERNEL && sampler != nullptr &&
             sampler->itimer_event.load(std::memory_order_acquire) != 0) {
    // itimer engine: ITIMER_PROF's signal goes to the process and the kernel hands it to the
    // thread that was running; find that thread's slot by its id.
    ours = true;
    event = sampler->itimer_event.load(std::memory_order_relaxed) - 1;
    const int32_t tid = CurrentTidRaw();
    if (sampler->tid_table.Lookup(tid, &index) && index < sampler->slot_count &&
        sampler->slots[index].tid.load(std::memory_order_relaxed) == tid) {
      generation = sampler->slots[index].generation.load(std::memory_order_relaxed) & 0xFFFFFF;
      weight = ItimerWeight(sampler, sampler->slots[index]);
    } else {
      sampler->counters.stale.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (ours && weight != 0 && sampler != nullptr && index < sampler->slot_count &&
      event < sampler->event_count) {
    const bool live = TakeSample(sampler, event, index, generation, weight,
                                 static_cast<const ucontext_t*>(context));
    if (live && info->si_code == POLL_IN && sampler->event_dither_ns[event] != 0) {
      RedrawPeriod(sampler->slots[index], event, info->si_fd, ExpectedFdId(sampler, info->si_fd),
                   sampler->event_dither_ns[event], sampler->dither_every);
    } else if (live && info->si_code == POLL_IN) {
      RestorePeriod(sampler->slots[index], event, info->si_fd, ExpectedFdId(sampler, info->si_fd),
                    sampler->event_perf_period[event]);
    }
  }
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  if (!ours) {
    if (sampler != nullptr) sampler->counters.chained.fetch_add(1, std::memory_order_relaxed);
    ChainToPrevious(signal, info, context);
  }
  --t_in_handler;
  errno = saved_errno;
}

}  // namespace inprof::internal

// Test hook for the allocation/lock interposer test: lets an interposed malloc know that it
// was called from inside the sampling handler. Async-signal-safe.
extern "C" __attribute__((visibility("default"))) int inprof_internal_in_signal_handler(void) {
  return inprof::internal::InSamplingHandler() ? 1 : 0;
}
