// A forked child's bootstrap sampler, control side (session/fork_child.h). BootstrapArm runs
// inside fork() in the child: system calls and stores only.
#include "session/fork_child.h"
#include "signal/raw_syscall.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "collector/stack_buffer.h"
#include "collector/stack_table.h"
#include "inprof/raw_profile.h"
#include "inprof/symbolize.h"
#include "session/export_pipeline.h"
#include "session/profile_builder.h"
#include "signal/bootstrap.h"
#include "threads/labels.h"

extern "C" void* __libc_stack_end;  // the C library's: the main thread's stack top

namespace inprof::internal {
namespace {

// This thread's stack bounds and the code ranges, as the parent's session knew them: the
// slot whose stack holds a local of ours.
void FindBounds(const Sampler& parent) {
  Bootstrap& b = g_bootstrap;
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  b.bounds = StackBounds{};
  for (uint32_t i = 0; i < parent.slot_count && parent.slots != nullptr; ++i) {
    const ThreadSlot& slot = parent.slots[i];
    if (slot.state.load(std::memory_order_relaxed) != SlotState::kActive) continue;
    const uintptr_t lo = slot.stack_lo.load(std::memory_order_relaxed);
    const uintptr_t hi = slot.stack_hi.load(std::memory_order_relaxed);
    if (hi != 0 && lo <= here && here < hi) {
      b.bounds = StackBounds{lo, hi};
      break;
    }
  }
  b.code.store(parent.code.load(std::memory_order_acquire), std::memory_order_seq_cst);
}

int64_t NowNs(clockid_t clock) { return ClockNsRaw(clock); }

// Maps the table and arms the calling thread's CPU-time timer; b.bounds and b.code are set.
// System calls and stores only.
// Hot, like the rest of a forked child's path (fork_reset.h): the functions a child runs
// share a few text pages, and each page a child touches first costs it a page fault.
__attribute__((hot)) bool ArmTable(int signal, double frequency, uint32_t max_depth,
                                   uint32_t copy_bytes) {
  Bootstrap& b = g_bootstrap;
  b.max_depth = max_depth < BootstrapTable::kMaxDepth ? max_depth : BootstrapTable::kMaxDepth;
  b.copy_bytes = copy_bytes < BootstrapTable::kCopyBytes ? copy_bytes : BootstrapTable::kCopyBytes;
  b.tid = static_cast<int32_t>(syscall(SYS_gettid));
  b.start_realtime_ns = NowNs(CLOCK_REALTIME);
  b.start_monotonic_ns = NowNs(CLOCK_MONOTONIC);
  b.start_cpu_ns = NowNs(CLOCK_PROCESS_CPUTIME_ID);
  b.samples.store(0, std::memory_order_relaxed);
  // Untouched pages cost nothing: a child that takes a few samples touches a few pages.
  void* table = mmap(nullptr, sizeof(BootstrapTable), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (table == MAP_FAILED) return false;
  b.table = static_cast<BootstrapTable*>(table);
  struct sigevent event;
  std::memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal;
  event.sigev_value.sival_ptr = reinterpret_cast<void*>(kBootstrapTimerToken);
  event._sigev_un._tid = b.tid;
  int timer = -1;
  if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) {
    munmap(table, sizeof(BootstrapTable));
    b.table = nullptr;
    return false;
  }
  b.timer = timer;
  const long period_ns = frequency > 0 ? static_cast<long>(1e9 / frequency) : 10000000;
  struct itimerspec spec;
  spec.it_interval.tv_sec = period_ns / 1000000000;
  spec.it_interval.tv_nsec = period_ns % 1000000000;
  // A random first expiry in (0, period], as the session's timers have: a process shorter
  // than one period (most processes of a build or a shell loop) is then sampled with a
  // probability in proportion to its CPU time, instead of never. From the clock and the tid
  // (no library call: this may run inside fork()).
  uint64_t mix = static_cast<uint64_t>(b.start_monotonic_ns) ^
                 (static_cast<uint64_t>(static_cast<uint32_t>(b.tid)) << 32);
  mix ^= mix >> 33;
  mix *= 0xFF51AFD7ED558CCDull;
  mix ^= mix >> 33;
  const long first_ns =
      b.whole_first_period ? period_ns : 1 + static_cast<long>(mix % static_cast<uint64_t>(period_ns));
  spec.it_value.tv_sec = first_ns / 1000000000;
  spec.it_value.tv_nsec = first_ns % 1000000000;
  b.active.store(true, std::memory_order_seq_cst);
  syscall(SYS_timer_settime, timer, 0, &spec, nullptr);
  return true;
}

}  // namespace

__attribute__((hot)) bool BootstrapArm(const Sampler* parent, int signal, double frequency,
                                       uint32_t max_depth, uint32_t copy_bytes) {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  b.busy.store(0, std::memory_order_relaxed);
  // The parent's table and timer, when the parent was a child still bootstrapping: the
  // mapping is a copy of no use here, the timer was not inherited. The parent's watcher is
  // not in this process: the child's session starts at its safe points.
  // munmap through syscall(), which the parent has called (ArmTable): a first call through
  // the PLT would be a symbol lookup, and its page faults, in every child.
  if (b.table != nullptr) syscall(SYS_munmap, b.table, sizeof(BootstrapTable));
  b.table = nullptr;
  b.timer = -1;
  b.wake_watcher = false;
  if (parent != nullptr) FindBounds(*parent);
  return ArmTable(signal, frequency, max_depth, copy_bytes);
}

bool BootstrapArmDeferred(int signal, double frequency, uint32_t max_depth, uint32_t copy_bytes,
                          bool wake_watcher, uint32_t wake_after_samples) {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  b.busy.store(0, std::memory_order_relaxed);
  b.table = nullptr;
  b.timer = -1;
  b.bounds = StackBounds{};
  struct rlimit limit;
  if (getpid() == static_cast<pid_t>(syscall(SYS_gettid)) && __libc_stack_end != nullptr &&
      getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    // The main thread: every frame lies below the loader's __libc_stack_end, and the stack
    // grows down at most RLIMIT_STACK from its top. (pthread_getattr_np finds the same from
    // /proc/self/maps, a tenth of the cost of this whole start.)
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(__libc_stack_end) + page - 1) & ~(page - 1);
    b.bounds = StackBounds{hi > limit.rlim_cur ? hi - limit.rlim_cur : 0, hi};
  } else if (pthread_attr_t attr; pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.bounds = StackBounds{reinterpret_cast<uintptr_t>(addr),
                             reinterpret_cast<uintptr_t>(addr) + size};
    }
    pthread_attr_destroy(&attr);
  }
  // No code ranges yet (the module map is the session's): frames are checked against the
  // stack bounds only, as after a forked child's first dlclose.
  b.code.store(nullptr, std::memory_order_seq_cst);
  b.wake_watcher = wake_watcher;
  b.wake_after = wake_after_samples > 0 ? wake_after_samples : 1;
  return ArmTable(signal, frequency, max_depth, copy_bytes);
}

__attribute__((hot)) uint64_t BootstrapSamples() {
  const Bootstrap& b = g_bootstrap;
  if (b.table == nullptr) return 0;
  return b.samples.load(std::memory_order_relaxed);
}

__attribute__((hot)) bool BootstrapDisarmNoWait() {
  Bootstrap& b = g_bootstrap;
  b.active.store(false, std::memory_order_seq_cst);
  if (b.timer >= 0) {
    syscall(SYS_timer_delete, b.timer);
    b.timer = -1;
  }
  return b.busy.load(std::memory_order_seq_cst) == 0;
}

__attribute__((hot)) void BootstrapDisarm() {
  if (BootstrapDisarmNoWait()) return;
  // A signal already queued finds the table inactive; one running now finishes first.
  const Bootstrap& b = g_bootstrap;
  while (b.busy.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void BootstrapForEach(const std::function<void(const BootstrapStack&)>& f) {
  const BootstrapTable* t = g_bootstrap.table;
  if (t == nullptr) return;
  // Entries in the order they were first used (BootstrapTable::order).
  for (uint32_t k = 0; k < t->entries_used && k < BootstrapTable::kEntries; ++k) {
    const uint32_t i = t->order[k];
    if (i >= BootstrapTable::kEntries) continue;
    const BootstrapTable::Entry& e = t->entries[i];
    if (e.used == 0) continue;
    f(BootstrapStack{i, std::span<const uintptr_t>(t->frames + e.offset, e.length),
                     static_cast<WalkStop>(e.stop), e.labels, e.weight});
  }
}

void BootstrapTimesForEach(
    const std::function<void(int64_t time_ns, uint32_t entry, uint32_t weight)>& f) {
  const BootstrapTable* t = g_bootstrap.table;
  if (t == nullptr) return;
  for (uint32_t i = 0; i < t->times_used && i < BootstrapTable::kTimes; ++i) {
    f(t->times[i].time_ns, t->times[i].entry, t->times[i].weight);
  }
}

void BootstrapCopiesForEach(
    const std::function<void(const BootstrapTable::Copy& copy, const uint8_t* bytes)>& f) {
  const BootstrapTable* t = g_bootstrap.table;
  if (t == nullptr) return;
  for (uint32_t i = 0; i < t->copies_used && i < BootstrapTable::kCopies; ++i) {
    f(t->copies[i], t->copy_bytes[i]);
  }
}

uint64_t BootstrapOverflowWeight() {
  return g_bootstrap.table != nullptr ? g_bootstrap.table->overflow_weight : 0;
}

void BootstrapForgetCode() {
  Bootstrap& b = g_bootstrap;
  b.code.store(nullptr, std::memory_order_seq_cst);
  // A handler that loaded the old pointer is counted in busy.
  while (b.busy.load(std::memory_order_seq_cst) != 0) sched_yield();
}

BootstrapTotals BootstrapTotalsNow() {
  const BootstrapTable* t = g_bootstrap.table;
  return t != nullptr ? BootstrapTotals{t->samples, t->weight} : BootstrapTotals{};
}

void BootstrapStackForLookup(const BootstrapStack& stack, pid_t tid, std::vector<uintptr_t>* out) {
  out->clear();
  // As the collector adjusts a ring's walk: return addresses are looked up at -1.
  for (size_t f = 0; f < stack.frames.size() && f < kMaxFrames; ++f) {
    out->push_back(f == 0 ? stack.frames[0] : stack.frames[f] - 1);
  }
  if (stack.stop == WalkStop::kDepthLimit) out->push_back(kTruncatedMarker);
  if (tid > 0) out->push_back(kThreadMarker | static_cast<uintptr_t>(tid));
  if (stack.labels != 0) out->push_back(kLabelsMarker | stack.labels);
}

Status WriteBootstrapRaw(const Config& config, const std::vector<std::string>& outputs,
                         bool complete) {
  const Bootstrap& b = g_bootstrap;
  RawProfile raw;
  raw.meta.program = ProgramPath();
  raw.meta.pid = getpid();
  raw.meta.start_time_ns = b.start_realtime_ns;
  raw.meta.duration_ns = NowNs(CLOCK_MONOTONIC) - b.start_monotonic_ns;
  raw.ppid = getppid();
  raw.comm = ProcessComm();
  const double hz = config.frequency;
  const BootstrapTotals totals = BootstrapTotalsNow();
  EventInfo cpu;
  cpu.name = "cpu";
  cpu.unit = "nanoseconds";
  cpu.period = static_cast<uint64_t>(1e9 / hz);
  cpu.frequency_hz = hz;
  raw.events.push_back(cpu);
  Health& h = raw.health;
  h.engine = "timer";
  h.engine_reason = "the process ended before its session started: its CPU-time timer only";
  h.unwinder = "fp";
  h.requested_hz = hz;
  h.samples = totals.samples;
  h.threads_seen = 1;
  const double cpu_seconds =
      static_cast<double>(NowNs(CLOCK_PROCESS_CPUTIME_ID) - b.start_cpu_ns) / 1e9;
  h.achieved_hz = cpu_seconds > 0 ? static_cast<double>(totals.weight) / cpu_seconds : 0;
  ThreadHealth& thread = h.threads.emplace_back();
  thread.tid = b.tid;
  thread.name = raw.comm;
  thread.cpu_seconds = cpu_seconds;
  thread.expected = cpu_seconds * hz;
  thread.taken = totals.samples;
  thread.weight = totals.weight;
  h.overruns = totals.weight - totals.samples;
  raw.threads.push_back({b.tid, raw.comm});
  std::vector<uintptr_t> stack;
  // Entry number -> raw stack index (for the times), label set id -> raw label set index.
  std::unordered_map<uint32_t, uint32_t> stack_of_entry;
  std::unordered_map<uint32_t, uint64_t> label_index;
  if (complete) BootstrapForEach([&](const BootstrapStack& s) {
    BootstrapStackForLookup(s, b.tid, &stack);
    if (s.stop == WalkStop::kDepthLimit) ++h.truncated;
    stack_of_entry[s.entry] = static_cast<uint32_t>(raw.stacks.size());
    RawStack& r = raw.stacks.emplace_back();
    for (uintptr_t a : stack) {
      if (IsLabelsMarker(a)) {
        auto [it, inserted] = label_index.try_emplace(LabelSetOfMarker(a), raw.label_sets.size());
        if (inserted) raw.label_sets.push_back(LabelSetOf(LabelSetOfMarker(a)));
        r.addresses.push_back(kRawLabelsTag | (it->second + 1));
      } else {
        r.addresses.push_back(a);
      }
    }
    r.weights = {static_cast<int64_t>(s.weight)};
    raw.events[0].total_weight += static_cast<int64_t>(s.weight);
  });
  if (const uint64_t lost = complete ? BootstrapOverflowWeight() : 0; lost != 0) {
    stack_of_entry[BootstrapTable::kNoEntry] = static_cast<uint32_t>(raw.stacks.size());
    raw.stacks.push_back({{kOverflowMarker}, {static_cast<int64_t>(lost)}});
    raw.events[0].total_weight += static_cast<int64_t>(lost);
    h.overflow = lost;
  }
  // The samples' times, from the fork (the profile's start); one thread: already in order.
  if (complete && config.timeline) {
    BootstrapTimesForEach([&](int64_t time_ns, uint32_t entry, uint32_t weight) {
      const auto it = stack_of_entry.find(entry);
      if (it == stack_of_entry.end()) return;
      raw.timeline.push_back(TimedSample{std::max<int64_t>(0, time_ns - b.start_monotonic_ns),
                                         it->second, 0, weight});
    });
  }
  if (complete) {
    Symbolizer modules;
    raw.modules = modules.RecordedModules();
  }
  std::string failures;
  for (const std::string& path : outputs) {
    Status s = WriteRawFile(raw, path, complete, static_cast<int>(config.output_mode));
    if (!s.ok()) failures += (failures.empty() ? "" : "; ") + s.message();
  }
  return failures.empty() ? Status::Ok() : Status::Error(failures);
}

__attribute__((hot)) void BootstrapRelease(bool process_ends) {
  Bootstrap& b = g_bootstrap;
  // As in BootstrapArm: no first call through the PLT in a child. A process that is ending
  // keeps the mapping for its exit to take down: unmapping it now costs a TLB shootdown on
  // every CPU another of its threads ran on (the exit watcher's), an interprocessor
  // interrupt that took most of an unsampled process's exit on a VM.
  if (b.table != nullptr && !process_ends) syscall(SYS_munmap, b.table, sizeof(BootstrapTable));
  b.table = nullptr;
}

}  // namespace inprof::internal
