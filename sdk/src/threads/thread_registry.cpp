#include "signal/raw_syscall.h"
#include "threads/thread_registry.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cxxabi.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "inprof/profile.h"
#include "signal/signal_handler.h"
#include "threads/thread_start.h"

namespace inprof::internal {
namespace {

// Slots of the ring: a sample per slot. The collector drains often enough that a ring is at
// most a quarter full between drains (Session::DrainIntervalMs: 2 to 25 ms from the rate),
// so 31 leaves a wide margin.
constexpr size_t kRingCapacity = 31;

pid_t CurrentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// -1 when the thread is gone.
// The kernel's clock (raw_syscall.h), not libc's clock_gettime, which a preloaded library
// may replace (libfaketime shifts thread CPU clocks by its offset).
int64_t ThreadCpuNs(pid_t tid) { return ClockNsRaw(ThreadCpuClock(tid)); }

std::string ThreadName(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  std::string name;
  if (FILE* f = std::fopen(path, "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) name = buf;
    std::fclose(f);
  }
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

// The calling thread's name without touching /proc (this runs on thread creation and exit).
std::string CurrentThreadName() {
  char buf[17] = {};
  if (prctl(PR_GET_NAME, buf, 0, 0, 0) != 0) return {};
  return buf;
}

}  // namespace

ThreadRegistry::ThreadRegistry(Sampler* sampler, std::vector<Engine*> engines,
                               double frequency_hz, uint32_t max_threads)
    : sampler_(sampler),
      engines_(std::move(engines)),
      period_ns_(std::max(1L, static_cast<long>(1e9 / frequency_hz))),
      max_threads_(max_threads),
      random_(static_cast<uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull ^
              static_cast<uint64_t>(clock())) {
  void* map = mmap(nullptr, SlotsBytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  slots_ = static_cast<ThreadSlot*>(map);
#if defined(__SANITIZE_ADDRESS__)
  // LeakSanitizer does not look into memory the program maps itself: without this, the rings
  // the slots point to would be reported as leaked at exit.
  __lsan_register_root_region(slots_, SlotsBytes());
#endif
  free_slots_.reserve(max_threads);
  sampler_->slots = slots_;
  sampler_->slot_count.store(0, std::memory_order_release);
}

size_t ThreadRegistry::SlotsBytes() const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size_t{max_threads_} * sizeof(ThreadSlot) + page - 1) / page * page;
}

bool ThreadRegistry::GrowSlotsLocked() {
  if (constructed_ == max_threads_) return false;
  new (&slots_[constructed_]) ThreadSlot();
  free_slots_.push_back(constructed_);
  ++constructed_;
  // After the slot's construction: whoever sees the count sees the slot.
  sampler_->slot_count.store(constructed_, std::memory_order_release);
  return true;
}

ThreadRegistry::~ThreadRegistry() {
  RetireAll();
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    delete slots_[i].ring;
    slots_[i].ring = nullptr;
  }
  for (SampleRing* ring : ring_pool_) delete ring;
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    delete slots_[i].copies;
    slots_[i].copies = nullptr;
  }
  for (CopyRing* copies : copy_pool_) delete copies;
  sampler_->slot_count.store(0, std::memory_order_release);
  sampler_->slots = nullptr;
  static_assert(std::is_trivially_destructible_v<ThreadSlot>);
#if defined(__SANITIZE_ADDRESS__)
  __lsan_unregister_root_region(slots_, SlotsBytes());
#endif
  munmap(slots_, SlotsBytes());
}

SampleRing* ThreadRegistry::TakeRingLocked() {
  if (!ring_pool_.empty()) {
    SampleRing* ring = ring_pool_.back();
    ring_pool_.pop_back();
    return ring;
  }
  auto* ring = new SampleRing(kRingCapacity);
  // Prefault: fill and empty the ring once so the handler never takes a page fault on
  // first use (measured: 1.4-2.4 us per enqueue into untouched memory vs 45-73 ns).
  while (ring->try_enqueue(SampleRecord())) {
  }
  while (ring->pop()) {
  }
  return ring;
}

void ThreadRegistry::EnableStackCopies(uint32_t slots, uint32_t bytes, size_t budget) {
  MutexLock lock(&mu_);
  copy_slots_ = slots;
  copy_bytes_ = bytes;
  copy_budget_ = budget;
}

CopyRing* ThreadRegistry::TakeCopyRingLocked() {
  if (copy_bytes_ == 0) return nullptr;
  if (!copy_pool_.empty()) {
    CopyRing* copies = copy_pool_.back();
    copy_pool_.pop_back();
    return copies;
  }
  // A thousand threads would otherwise map a thousand rings (128 KiB each by default).
  if ((copy_rings_ + 1) * CopyRing::MappingBytes(copy_slots_, copy_bytes_) > copy_budget_) {
    ++threads_without_copies_;
    return nullptr;
  }
  CopyRing* copies = new CopyRing(copy_slots_, copy_bytes_);
  ++copy_rings_;
  return copies;
}

void ThreadRegistry::RegisterLocked(pid_t tid, uintptr_t stack_lo, uintptr_t stack_hi, bool self) {
  auto it = by_tid_.find(tid);
  if (it != by_tid_.end()) {
    ThreadSlot& slot = slots_[it->second];
    if (self && stack_hi != 0) {
      // The scan found it first; the thread knows its stack better.
      slot.stack_lo.store(stack_lo, std::memory_order_relaxed);
      slot.stack_hi.store(stack_hi, std::memory_order_release);
      slot.self_registered = true;
    }
    return;
  }
  if (closed_ || excluded_.count(tid) != 0) return;
  if (free_slots_.empty() && !GrowSlotsLocked()) {
    NoteUnsampledLocked(tid, Unsampled::kNoSlot, {});
    return;
  }
  const uint32_t index = free_slots_.back();
  SetupError error;
  if (!PrepareSlotLocked(index, tid, &error)) {
    // ESRCH/EINVAL from an engine: the thread exited between the scan and now.
    if (error.engine == nullptr || (error.error != ESRCH && error.error != EINVAL)) {
      NoteUnsampledLocked(tid, Unsampled::kFailed, error);
    }
    return;
  }
  ThreadSlot& slot = slots_[index];
  uint32_t record = 0;
  try {
    std::string name = self ? CurrentThreadName() : ThreadName(tid);
    by_tid_.emplace(tid, index);
    try {
      record = NewRecordLocked(tid, std::move(name));
    } catch (...) {
      by_tid_.erase(tid);
      throw;
    }
  } catch (...) {
    UnprepareSlotLocked(index, engines_.size());
    NoteUnsampledLocked(tid, Unsampled::kFailed, SetupError{"out of memory", ENOMEM});
    return;
  }
  free_slots_.pop_back();
  slot.stack_lo.store(stack_lo, std::memory_order_relaxed);
  slot.stack_hi.store(stack_hi, std::memory_order_relaxed);
  slot.probe_sp.store(0, std::memory_order_relaxed);
  slot.self_registered = self;
  slot.cpu_start_ns = slot.cpu_last_ns = std::max<int64_t>(0, ThreadCpuNs(tid));
  slot.drained_samples = 0;
  slot.drained_weight = 0;
  slot.record = record;
  // Complete: from here the handler may use the slot. It becomes kActive before the sources
  // start so that the first signal is never dropped as stale.
  slot.state.store(SlotState::kActive, std::memory_order_release);

  // Random first period, drawn by each engine (Engine::DrawFirstPeriod): a thread that lives
  // for less than one period is still sampled in proportion to its CPU time instead of never,
  // and none loses its last partial period in expectation.
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  uint32_t perf_first = 0;
  for (size_t e = 0; e < engines_.size(); ++e) {
    if (engines_[e]->kind() == EngineKind::kPerf) perf_first |= 1u << e;
  }
  slot.perf_first_pending.store(perf_first, std::memory_order_relaxed);
  int32_t jitter_timer = -1;
  for (size_t e = 0; e < engines_.size(); ++e) {
    // glibc's timer_t of a SIGEV_THREAD_ID timer is the kernel's timer id.
    if (slot.sources[e].has_jitter_timer) {
      jitter_timer = static_cast<int32_t>(reinterpret_cast<intptr_t>(slot.sources[e].jitter_timer));
    }
  }
  slot.jitter_weight.store(0, std::memory_order_relaxed);
  slot.jitter_timer.store(jitter_timer, std::memory_order_release);
  for (size_t e = 0; e < engines_.size(); ++e) {
    const double u1 = uniform(random_), u2 = uniform(random_);
    const Engine::FirstPeriod draw = engines_[e]->DrawFirstPeriod(u1, u2);
    // Before the source starts: what the thread's exit accounts from (PeriodsUnaccounted).
    slot.periods_seen[e].store(0, std::memory_order_release);
    slot.first_ns[e] = draw.first_ns;
    slot.armed_cpu_ns[e] = std::max<int64_t>(0, ThreadCpuNs(tid));
    slot.perf_first_due[e].store(slot.armed_cpu_ns[e] + draw.first_ns, std::memory_order_relaxed);
    if (const int started = engines_[e]->Start(&slot.sources[e], draw.first_ns); started != 0) {
      // Half a thread's events would make a profile whose events disagree: none at all. The
      // slot is retired like any other (its ring may already hold samples).
      RetireLocked(index);
      NoteUnsampledLocked(tid, Unsampled::kFailed, SetupError{nullptr, started, engines_[e], true});
      return;
    }
  }
  ForgetUnsampledLocked(tid, true);  // a thread that could not be set up earlier
  ++threads_seen_;
}

bool ThreadRegistry::PrepareSlotLocked(uint32_t index, pid_t tid, SetupError* error) {
  ThreadSlot& slot = slots_[index];
  try {
    slot.ring = TakeRingLocked();
  } catch (...) {
    *error = SetupError{"cannot allocate a sample ring", ENOMEM};
    return false;
  }
  try {
    slot.copies = TakeCopyRingLocked();
  } catch (...) {
    // bad_alloc from the mapping (RLIMIT_AS, vm.max_map_count) or from new.
    *error = SetupError{"cannot map stack copies", ENOMEM};
    UnprepareSlotLocked(index, 0);
    return false;
  }
  slot.tid.store(tid, std::memory_order_relaxed);
  const uint32_t generation = slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF;
  for (size_t made = 0; made < engines_.size(); ++made) {
    const int created = engines_[made]->Create(
        tid, TimerToken::Encode(static_cast<uint32_t>(made), index, generation),
        &slot.sources[made]);
    if (created != 0) {
      *error = SetupError{nullptr, created, engines_[made], false};
      UnprepareSlotLocked(index, made);
      return false;
    }
  }
  return true;
}

void ThreadRegistry::UnprepareSlotLocked(uint32_t index, size_t sources) {
  ThreadSlot& slot = slots_[index];
  for (size_t e = 0; e < sources; ++e) engines_[e]->Destroy(&slot.sources[e]);
  // Never kActive, so no handler has touched the rings: they go back as they are.
  if (slot.ring != nullptr) GiveBackRingLocked(slot.ring);
  slot.ring = nullptr;
  if (slot.copies != nullptr) GiveBackCopiesLocked(slot.copies);
  slot.copies = nullptr;
  slot.tid.store(0, std::memory_order_relaxed);
}

void ThreadRegistry::GiveBackRingLocked(SampleRing* ring) noexcept {
  try {
    ring_pool_.push_back(ring);
  } catch (...) {
    delete ring;  // no room to keep it: free it instead
  }
}

void ThreadRegistry::GiveBackCopiesLocked(CopyRing* copies) noexcept {
  try {
    copy_pool_.push_back(copies);
  } catch (...) {
    delete copies;
    --copy_rings_;
  }
}

void ThreadRegistry::NoteUnsampledLocked(pid_t tid, Unsampled why,
                                         const SetupError& error) noexcept {
  try {
    auto [it, inserted] = unsampled_.emplace(tid, why);
    if (!inserted) {
      if (it->second == why) return;  // counted already
      // No slot before, setup failed now (or the reverse): counted under the new reason.
      if (it->second == Unsampled::kNoSlot) {
        --threads_unsampled_;
      } else {
        --threads_failed_;
      }
      it->second = why;
    }
  } catch (...) {
    // No memory to remember it: it is counted again if it is found again.
  }
  if (why == Unsampled::kNoSlot) {
    if (threads_unsampled_++ == 0 && warnings_.size() < kMaxWarnings) {
      try {
        warnings_.push_back("more than " + std::to_string(max_threads_) +
                            " threads at once: extra threads are not sampled (raise max_threads)");
      } catch (...) {
      }
    }
    return;
  }
  ++threads_failed_;
  if (first_failure_.empty()) {
    try {
      first_failure_ = DescribeSetupError(error);
    } catch (...) {
    }
  }
}

void ThreadRegistry::ForgetUnsampledLocked(pid_t tid, bool uncount) noexcept {
  auto it = unsampled_.find(tid);
  if (it == unsampled_.end()) return;
  if (uncount) {
    if (it->second == Unsampled::kNoSlot) {
      --threads_unsampled_;
    } else {
      --threads_failed_;
    }
  }
  unsampled_.erase(it);
}

std::string ThreadRegistry::DescribeSetupError(const SetupError& error) {
  std::string text;
  if (error.engine != nullptr) {
    switch (error.engine->kind()) {
      case EngineKind::kTimer:
        text = error.starting ? "timer_settime: " + std::string(std::strerror(error.error))
                              : TimerErrorAdvice(error.error);
        break;
      case EngineKind::kPerf:
        text = error.starting ? "perf_event ioctl: " + std::string(std::strerror(error.error))
                              : PerfErrorAdvice(error.error);
        break;
      default:
        text = std::string(EngineName(error.engine->kind())) +
               " engine: " + std::strerror(error.error);
        break;
    }
  } else {
    text = std::string(error.what != nullptr ? error.what : "unknown error") + " (" +
           std::strerror(error.error) + ")";
  }
  // Bounded: the health block carries it in every profile.
  constexpr size_t kMaxReason = 200;
  if (text.size() > kMaxReason) text.resize(kMaxReason);
  return text;
}

uint32_t ThreadRegistry::NewRecordLocked(pid_t tid, std::string name) {
  if (records_.size() < kMaxThreadRecords) {
    records_.push_back(ThreadRecord{tid, std::move(name), 0, 0, 0});
    return static_cast<uint32_t>(records_.size() - 1);
  }
  if (records_.size() == kMaxThreadRecords) {
    records_.push_back(ThreadRecord{0, "[other threads]", 0, 0, 0});
  }
  return kMaxThreadRecords;
}

void ThreadRegistry::RetireLocked(uint32_t index, int64_t cpu_ns, std::string name,
                                  bool exiting_self) {
  ThreadSlot& slot = slots_[index];
  if (slot.state.load(std::memory_order_relaxed) != SlotState::kActive) return;
  // Order matters: leave kActive first so a signal already queued is ignored, then delete
  // the timer so no new one is queued.
  // seq_cst: one half of the fence with the handler (ReleaseRetired, TakeSample).
  slot.state.store(SlotState::kRetiring, std::memory_order_seq_cst);
  slot.jitter_timer.store(-1, std::memory_order_release);
  // An exiting thread: the periods of its CPU time that no signal took, read after the slot
  // left kActive (from here no signal counts) and on the thread's clock now.
  uint64_t unaccounted[TimerToken::kMaxEvents] = {};
  bool any_unaccounted = false;
  if (exiting_self) {
    const int64_t now = ClockNsRaw(CLOCK_THREAD_CPUTIME_ID);
    if (now >= 0) cpu_ns = now;
    for (size_t e = 0; e < engines_.size() && e < TimerToken::kMaxEvents; ++e) {
      unaccounted[e] = engines_[e]->PeriodsUnaccounted(slot, static_cast<uint32_t>(e), cpu_ns);
      any_unaccounted |= unaccounted[e] != 0;
    }
  }
  for (size_t e = 0; e < engines_.size(); ++e) {
    // Counted like the scan's finds; Destroy then leaves the number alone.
    if (engines_[e]->Lost(&slot.sources[e])) ++sources_lost_;
    engines_[e]->Destroy(&slot.sources[e]);
  }
  if (exiting_self) {
    // timer_jitter: the weight of CPU-timer signals whose one-shot timer has not fired yet
    // (they were counted as taken). The timers are deleted: it will not fire now.
    const uint32_t deferred = slot.jitter_weight.exchange(0, std::memory_order_acq_rel);
    if (deferred != 0) {
      for (size_t e = 0; e < engines_.size(); ++e) {
        if (slot.sources[e].has_jitter_timer || engines_[e]->kind() == EngineKind::kTimer) {
          unaccounted[e] += deferred;
          any_unaccounted = true;
          break;
        }
      }
    }
    if (any_unaccounted) TakeExitSamplesLocked(slot, unaccounted);
  }
  const pid_t tid = slot.tid.load(std::memory_order_relaxed);
  by_tid_.erase(tid);
  // The thread's CPU time while sampled: exact when the thread itself retires or is still
  // alive, else what the last scan saw (at most 100 ms short).
  if (cpu_ns < 0) cpu_ns = ThreadCpuNs(tid);
  if (cpu_ns < 0) cpu_ns = slot.cpu_last_ns;
  ThreadRecord& record = records_[slot.record];
  record.cpu_ns += std::max<int64_t>(0, cpu_ns - slot.cpu_start_ns);
  if (!name.empty() && slot.record < kMaxThreadRecords) record.name = std::move(name);
}

// Its weight is what the thread's CPU clock says the signals missed, so the thread's samples
// add up to its CPU time x rate (docs/platform-facts.md, "Sampling bias"). The signals it
// stands for would have come within the thread's last tick or so of running (less than a
// tick and a period of CPU time after its last sample), inside code whose stack is gone by
// now: the collector gives it the stack of the thread's last sample, the nearest known
// point of the same code. A thread with no sample gets its start routine, entered from the
// thread library: the part of any stack of the thread that is certain.
void ThreadRegistry::TakeExitSamplesLocked(ThreadSlot& slot, const uint64_t* weights) {
  uintptr_t frames[2];
  const uint32_t depth = ThreadStartFrames(frames);
  if (depth == 0 || slot.ring == nullptr) return;
  const int64_t now = ClockNsRaw(CLOCK_MONOTONIC);
  for (size_t e = 0; e < engines_.size() && e < TimerToken::kMaxEvents; ++e) {
    if (weights[e] == 0) continue;
    const GivenStack given{static_cast<uint32_t>(slot.tid.load(std::memory_order_relaxed)),
                           static_cast<uint32_t>(std::min<uint64_t>(weights[e], UINT32_MAX)),
                           static_cast<uint32_t>(e),
                           ThreadLabelSet(),
                           now,
                           frames,
                           depth,
                           /*repeat_last=*/true};
    // The ring's only producer is this thread's handler, which no longer touches the slot
    // (kRetiring), and this is that thread.
    if (!slot.ring->try_emplace(given)) {
      sampler_->counters.ring_full.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void ThreadRegistry::RegisterCurrentThread() {
  // Runs on a new thread of the program before its start routine: whatever fails here, the
  // thread must run (unsampled) rather than die. Nothing in here is a cancellation point, but
  // a forced unwind must never be swallowed.
  try {
    uintptr_t lo = 0, hi = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        lo = reinterpret_cast<uintptr_t>(addr);
        hi = lo + size;
      }
      pthread_attr_destroy(&attr);
    }
    MutexLock lock(&mu_);
    const pid_t tid = CurrentTid();
    exiting_.erase(tid);  // a new thread that reuses the id of one that just exited
    RegisterLocked(tid, lo, hi, true);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    CountContained(ContainedAt::kRegistry);
  }
}

void ThreadRegistry::RegisterKnownThread(pid_t tid, uintptr_t stack_lo, uintptr_t stack_hi) {
  MutexLock lock(&mu_);
  RegisterLocked(tid, stack_lo, stack_hi, true);
}

void ThreadRegistry::UnregisterCurrentThread() {
  try {
    MutexLock lock(&mu_);
    const pid_t tid = CurrentTid();
    auto it = by_tid_.find(tid);
    if (it != by_tid_.end()) {
      RetireLocked(it->second, ClockNsRaw(CLOCK_THREAD_CPUTIME_ID), CurrentThreadName(),
                   /*exiting_self=*/true);
    }
    ForgetUnsampledLocked(tid, false);
    exiting_.insert(tid);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    // Out of memory for the exiting_ entry: the scan may find the thread once more while it
    // is still listed, and retires it on the next pass.
    CountContained(ContainedAt::kRegistry);
  }
}

void ThreadRegistry::Exclude(pid_t tid) {
  MutexLock lock(&mu_);
  excluded_.insert(tid);
  ForgetUnsampledLocked(tid, true);  // not the program's: not one of its unsampled threads
  auto it = by_tid_.find(tid);
  if (it != by_tid_.end()) RetireLocked(it->second);
}

void ThreadRegistry::Rescan() {
  // Runs on the collector thread, whose entry function is C-called: contain everything.
  try {
    std::vector<pid_t> alive;
    if (DIR* dir = opendir("/proc/self/task")) {
      try {
        while (dirent* entry = readdir(dir)) {
          if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
          alive.push_back(static_cast<pid_t>(std::atoi(entry->d_name)));
        }
      } catch (...) {
        closedir(dir);
        throw;
      }
      closedir(dir);
    } else {
      return;  // /proc not mounted: only hooked threads are sampled
    }
    std::sort(alive.begin(), alive.end());
    MutexLock lock(&mu_);
    RescanLocked(alive);
  } catch (...) {
    CountContained(ContainedAt::kRegistry);
  }
}

void ThreadRegistry::RescanLocked(const std::vector<pid_t>& alive) {
  // `alive` was read before the lock was taken: a thread that started since is missing from
  // it, and may have registered itself (or failed to) in between. Only a thread whose CPU
  // clock no longer reads has ended; judged by the list alone, such a thread would be retired
  // or forgotten here and met again as new by the next scan, set up a second time (two
  // records) or counted a second time as one that could not be set up.
  const auto ended = [&alive](pid_t tid) {
    return !std::binary_search(alive.begin(), alive.end(), tid) && ThreadCpuNs(tid) < 0;
  };
  std::vector<uint32_t> gone;
  for (const auto& [tid, index] : by_tid_) {
    if (ended(tid)) gone.push_back(index);
  }
  for (uint32_t index : gone) RetireLocked(index);
  ReopenLostSourcesLocked();
  for (const auto& [tid, index] : by_tid_) {
    if (const int64_t cpu = ThreadCpuNs(tid); cpu >= 0) slots_[index].cpu_last_ns = cpu;
  }
  for (auto it = exiting_.begin(); it != exiting_.end();) {
    it = ended(*it) ? exiting_.erase(it) : std::next(it);
  }
  // Unsampled threads that ended stay counted; their entries go.
  for (auto it = unsampled_.begin(); it != unsampled_.end();) {
    it = ended(it->first) ? unsampled_.erase(it) : std::next(it);
  }
  for (pid_t tid : alive) {
    if (by_tid_.count(tid) != 0 || excluded_.count(tid) != 0 || exiting_.count(tid) != 0) {
      continue;
    }
    // A failed setup is not retried every 100 ms (each try may map memory, open an fd); a
    // thread that found no free slot is, since a slot may be free now.
    if (auto it = unsampled_.find(tid);
        it != unsampled_.end() && it->second == Unsampled::kFailed) {
      continue;
    }
    RegisterLocked(tid, 0, 0, false);
  }
  ResolveBoundsLocked();
}

void ThreadRegistry::ReopenLostSourcesLocked() {
  // A program that closes every fd from 3 up at start-up (closefrom, close_range: OpenSSH,
  // daemons) ends the perf events of the threads sampled so far; one that dup2s over them
  // ends them too and owns the numbers from then on. Each scan finds them (one fstat and one
  // ioctl per thread and event) and opens the event again on a new fd: what was lost is
  // the samples in between, at most one scan interval.
  std::vector<std::pair<uint32_t, SetupError>> failed;
  for (const auto& [tid, index] : by_tid_) {
    ThreadSlot& slot = slots_[index];
    for (size_t e = 0; e < engines_.size(); ++e) {
      if (!engines_[e]->Lost(&slot.sources[e])) continue;
      ++sources_lost_;
      const uint32_t generation = slot.generation.load(std::memory_order_relaxed) & 0xFFFFFF;
      int error = engines_[e]->Create(
          tid, TimerToken::Encode(static_cast<uint32_t>(e), index, generation), &slot.sources[e]);
      const bool starting = error == 0;
      if (error == 0) error = engines_[e]->Start(&slot.sources[e], period_ns_);
      if (error == 0) {
        ++sources_reopened_;
        continue;
      }
      failed.emplace_back(index, SetupError{nullptr, error, engines_[e], starting});
      break;
    }
  }
  // As when a thread's setup fails: none of its events rather than some.
  for (const auto& [index, error] : failed) {
    const pid_t tid = slots_[index].tid.load(std::memory_order_relaxed);
    RetireLocked(index);
    NoteUnsampledLocked(tid, Unsampled::kFailed, error);
  }
}

void ThreadRegistry::ResolveBoundsLocked() {
  // Threads found by the scan have no known stack: their handler leaves its sp in
  // probe_sp, and the mapping that contains it is the stack.
  std::vector<uint32_t> pending;
  for (const auto& [tid, index] : by_tid_) {
    const ThreadSlot& slot = slots_[index];
    if (slot.stack_hi.load(std::memory_order_relaxed) == 0 &&
        slot.probe_sp.load(std::memory_order_relaxed) != 0) {
      pending.push_back(index);
    }
  }
  if (pending.empty()) return;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx", &begin, &end) == 2) ranges.emplace_back(begin, end);
  }
  std::fclose(maps);
  for (uint32_t index : pending) {
    ThreadSlot& slot = slots_[index];
    const uintptr_t sp = slot.probe_sp.load(std::memory_order_relaxed);
    for (const auto& [begin, end] : ranges) {
      if (sp >= begin && sp < end) {
        slot.stack_lo.store(begin, std::memory_order_relaxed);
        slot.stack_hi.store(end, std::memory_order_release);
        break;
      }
    }
  }
}

void ThreadRegistry::RetireAll() {
  MutexLock lock(&mu_);
  closed_ = true;
  std::vector<uint32_t> all;
  for (const auto& [tid, index] : by_tid_) all.push_back(index);
  for (uint32_t index : all) RetireLocked(index);
}

void ThreadRegistry::ReleaseRetired() {
  MutexLock lock(&mu_);  // std::mutex::lock underneath: throws only on a broken mutex
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    ThreadSlot& slot = slots_[i];
    if (slot.state.load(std::memory_order_acquire) != SlotState::kRetiring) continue;
    // The fence with the handler (TakeSample in signal_handler.cpp): RetireLocked stored
    // kRetiring (seq_cst) before this load (seq_cst), so a handler not counted here will see
    // kRetiring and touch nothing; one counted may still be writing the rings on another CPU
    // (deleting its timer did not wait for it): the slot is released on a later pass. Only
    // after this load are the rings' contents final.
    if (slot.handlers.load(std::memory_order_seq_cst) != 0) continue;
    if (slot.ring->peek() != nullptr) continue;  // drained next time
    if (slot.copies != nullptr && !slot.copies->Empty()) continue;
    ThreadRecord& record = records_[slot.record];
    record.samples += slot.drained_samples;
    record.weight += slot.drained_weight;
    slot.drained_samples = slot.drained_weight = 0;
    slot.state.store(SlotState::kFree, std::memory_order_release);
    slot.generation.fetch_add(1, std::memory_order_relaxed);
    GiveBackRingLocked(slot.ring);
    slot.ring = nullptr;
    if (slot.copies != nullptr) GiveBackCopiesLocked(slot.copies);
    slot.copies = nullptr;
    slot.stack_hi.store(0, std::memory_order_relaxed);
    free_slots_.push_back(i);  // never reallocates: reserved for every slot
  }
  // Keep a few spare rings for thread churn; give the rest back.
  while (ring_pool_.size() > 16) {
    delete ring_pool_.back();
    ring_pool_.pop_back();
  }
  while (copy_pool_.size() > 4) {
    delete copy_pool_.back();
    copy_pool_.pop_back();
    --copy_rings_;
  }
}

__attribute__((hot)) void ThreadRegistry::ForgetInChild() {
  // Runs inside fork(): only what the child must release (inherited perf fds), and no write
  // to a slot that holds nothing: every page written here is a copy the child makes (writing
  // all 4096 slots cost ~1 ms per fork).
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    if (slots_[i].state.load(std::memory_order_relaxed) == SlotState::kFree) continue;
    for (size_t e = 0; e < engines_.size(); ++e) engines_[e]->ForgetInChild(&slots_[i].sources[e]);
  }
}

std::vector<ThreadHealth> ThreadRegistry::ThreadHealthSnapshot(double expected_per_cpu_second) {
  MutexLock lock(&mu_);
  std::vector<ThreadRecord> records = records_;
  std::vector<bool> alive(records.size(), false);
  for (uint32_t i = 0; i < sampler_->slot_count; ++i) {
    const ThreadSlot& slot = slots_[i];
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kFree) continue;
    ThreadRecord& record = records[slot.record];
    record.samples += slot.drained_samples;
    record.weight += slot.drained_weight;
    if (state != SlotState::kActive) continue;
    const pid_t tid = slot.tid.load(std::memory_order_relaxed);
    int64_t cpu = ThreadCpuNs(tid);
    if (cpu < 0) cpu = slot.cpu_last_ns;
    record.cpu_ns += std::max<int64_t>(0, cpu - slot.cpu_start_ns);
    if (slot.record < kMaxThreadRecords) alive[slot.record] = true;
  }
  std::vector<ThreadHealth> out;
  out.reserve(records.size());
  for (size_t r = 0; r < records.size(); ++r) {
    ThreadHealth t;
    t.tid = records[r].tid;
    // A live thread may have been renamed since it was registered.
    t.name = alive[r] ? ThreadName(records[r].tid) : records[r].name;
    if (t.name.empty()) t.name = records[r].name;
    t.cpu_seconds = static_cast<double>(records[r].cpu_ns) / 1e9;
    t.expected = t.cpu_seconds * expected_per_cpu_second;
    t.taken = records[r].samples;
    t.weight = records[r].weight;
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ThreadHealth& a, const ThreadHealth& b) { return a.tid < b.tid; });
  return out;
}

uint64_t ThreadRegistry::threads_seen() const {
  MutexLock lock(&mu_);
  return threads_seen_;
}

uint64_t ThreadRegistry::threads_without_copies() const {
  MutexLock lock(&mu_);
  return threads_without_copies_;
}

uint64_t ThreadRegistry::threads_unsampled() const {
  MutexLock lock(&mu_);
  return threads_unsampled_;
}

uint64_t ThreadRegistry::threads_failed() const {
  MutexLock lock(&mu_);
  return threads_failed_;
}

std::vector<std::string> ThreadRegistry::TakeWarnings() {
  MutexLock lock(&mu_);
  std::vector<std::string> out = std::move(warnings_);
  warnings_.clear();
  if (threads_failed_ != 0) {
    out.push_back(std::to_string(threads_failed_) +
                  (threads_failed_ == 1 ? " thread" : " threads") +
                  " could not be set up for sampling and ran unsampled: " +
                  (first_failure_.empty() ? std::string("out of memory") : first_failure_));
  }
  if (sources_lost_ != 0) {
    out.push_back("the program closed or replaced " + std::to_string(sources_lost_) +
                  " of the profiler's perf_event fds (closefrom, close_range or dup2 over "
                  "them; nothing of the profiler's went to its files): " +
                  std::to_string(sources_reopened_) + " opened again on new fds" +
                  (sources_reopened_ < sources_lost_ ? " (the others' threads had ended or "
                                                       "could not be set up again)"
                                                     : "") +
                  ", samples missed until then (at most 100 ms each)");
  }
  static constexpr const char* kPlaces[] = {"a new thread's setup", "the thread registry",
                                            "the window exporter", "the network threads",
                                            "the dlclose hook or a fork handler"};
  static_assert(std::size(kPlaces) == static_cast<size_t>(ContainedAt::kCount));
  for (size_t i = 0; i < std::size(kPlaces); ++i) {
    if (const uint64_t n = g_contained[i].load(std::memory_order_relaxed)) {
      out.push_back(std::to_string(n) + " errors (exceptions) in " + kPlaces[i] +
                    " were caught and contained; the work they interrupted was skipped");
    }
  }
  return out;
}

}  // namespace inprof::internal
