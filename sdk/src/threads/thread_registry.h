// Which threads are sampled: slots, their rings and their CPU timers.
//
// Threads are registered three ways, with no call from the user: the thread itself from the
// pthread_create hook (RegisterCurrentThread, exact stack bounds, before its start routine
// runs), and the collector's periodic scan of /proc/self/task (Rescan) for threads alive at
// start and threads made with raw clone(). Exited threads are retired by the pthread key
// destructor or by the scan.
//
// Concurrency contract: all public functions are control path and take mu_. The handler
// only reads slots (see sampler.h). Rings of retired slots are released by ReleaseRetired,
// which the caller must run under the session's data_mu_ after draining.
//
// Failure contract: setting a thread up for sampling can fail (its ring or stack-copy
// mapping refused under RLIMIT_AS or vm.max_map_count, timer_create or perf_event_open
// refused with EAGAIN/EMFILE/ENOMEM). The thread then runs unsampled: a slot becomes kActive
// only once everything it needs exists, everything taken before the failure is given back,
// and the thread is counted with the first reason (TakeWarnings). The functions called from
// a new or exiting thread (RegisterCurrentThread, UnregisterCurrentThread) and from the
// collector thread (Rescan, ReleaseRetired) throw nothing: what they catch is counted
// (ContainedAt) instead of reaching C code that cannot handle it.
#ifndef INPROF_SDK_THREAD_REGISTRY_H_
#define INPROF_SDK_THREAD_REGISTRY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engines/engine.h"
#include "inprof/profile.h"
#include "inprof/thread_annotations.h"
#include "signal/sampler.h"
#include "threads/contained.h"

namespace inprof::internal {

class ThreadRegistry {
 public:
  // One engine per event, in event order; each thread gets a source from every engine.
  // `period_ns` bounds the random first expiry.
  ThreadRegistry(Sampler* sampler, std::vector<Engine*> engines, double frequency_hz,
                 uint32_t max_threads);
  ~ThreadRegistry();
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Gives every thread registered from now on a ring of `slots` stack copies of `bytes`
  // each, for DWARF unwinding. Call before sampling starts. Not async-signal-safe.
  // `budget`: bytes of rings all threads together may map; a thread registered beyond it
  // gets none (its samples are frame-pointer walks) and is counted.
  void EnableStackCopies(uint32_t slots, uint32_t bytes, size_t budget) EXCLUDES(mu_);

  // Registers the calling thread with its exact stack bounds; when that fails the thread
  // runs unsampled (counted). Throws nothing except a cancelled thread's forced unwind.
  // Not async-signal-safe.
  void RegisterCurrentThread() EXCLUDES(mu_);
  // Registers `tid` with stack bounds it measured itself earlier (the bootstrap sampler's
  // thread, when the session starts on another thread). Not async-signal-safe.
  void RegisterKnownThread(pid_t tid, uintptr_t stack_lo, uintptr_t stack_hi) EXCLUDES(mu_);
  // Retires the calling thread's slot (from its exit path). Throws nothing except a
  // cancelled thread's forced unwind. Not async-signal-safe.
  void UnregisterCurrentThread() EXCLUDES(mu_);
  // Threads the scan must never sample (the profiler's own). Not async-signal-safe.
  void Exclude(pid_t tid) EXCLUDES(mu_);
  // Registers threads found in /proc/self/task, retires vanished ones, and resolves stack
  // bounds that handlers asked for. A thread whose setup failed is not tried again while it
  // lives. Throws nothing. Not async-signal-safe.
  void Rescan() EXCLUDES(mu_);
  // Deletes every timer and retires every slot. Not async-signal-safe.
  void RetireAll() EXCLUDES(mu_);
  // In a forked child: releases what the engine inherited, touching nothing else (no lock:
  // the threads that might hold it do not exist in the child). Not async-signal-safe.
  void ForgetInChild();
  // Frees the rings of retired slots whose rings are empty. Caller holds the session's data_mu_.
  // Throws nothing. Not async-signal-safe.
  void ReleaseRetired() EXCLUDES(mu_);

  // Every thread sampled so far (bounded: beyond kMaxThreadRecords the oldest exited
  // threads are merged into one "[other threads]" entry with tid 0): its CPU time while
  // sampled and the samples of the first event drained from it. `expected_per_cpu_second`
  // is the rate a CPU-time event promises (0: no expectation). Caller holds the session's data_mu_.
  // Not async-signal-safe.
  std::vector<ThreadHealth> ThreadHealthSnapshot(double expected_per_cpu_second) EXCLUDES(mu_);

  // Threads registered for sampling; threads never sampled because more than max_threads
  // lived at once; threads never sampled because their setup failed. Each thread counts
  // once: a thread found again by a later scan is not counted again.
  uint64_t threads_seen() const EXCLUDES(mu_);
  uint64_t threads_unsampled() const EXCLUDES(mu_);       // more threads than max_threads
  uint64_t threads_without_copies() const EXCLUDES(mu_);  // beyond the stack-copy budget
  uint64_t threads_failed() const EXCLUDES(mu_);          // setup failed (TakeWarnings says why)
  // One-time warnings since the last call, then the standing ones: threads whose setup
  // failed, with the first reason, and exceptions contained anywhere (ContainedAt).
  std::vector<std::string> TakeWarnings() EXCLUDES(mu_);

 private:
  // Why a thread is not sampled (see unsampled_).
  enum class Unsampled : uint8_t { kNoSlot, kFailed };
  // What failed while setting a thread up: a fixed text and an errno value, or the engine
  // whose Create/Start returned it. No allocation: this is made when memory may be short.
  struct SetupError {
    const char* what = nullptr;  // "cannot map stack copies", ...
    int error = 0;
    const Engine* engine = nullptr;  // set: `error` came from this engine
    bool starting = false;           // ... from its Start, not its Create
  };

  void RegisterLocked(pid_t tid, uintptr_t stack_lo, uintptr_t stack_hi, bool self)
      REQUIRES(mu_);
  // Takes a free slot's ring, stack copies and engine sources for `tid`. On failure gives
  // back what it took and returns false with `error` set; the slot stays kFree.
  bool PrepareSlotLocked(uint32_t index, pid_t tid, SetupError* error) REQUIRES(mu_);
  // Constructs the next slot and lists it free; false when all max_threads are.
  bool GrowSlotsLocked() REQUIRES(mu_);
  size_t SlotsBytes() const;
  // Gives back everything PrepareSlotLocked took (the slot never became kActive).
  void UnprepareSlotLocked(uint32_t index, size_t sources) REQUIRES(mu_);
  void GiveBackRingLocked(SampleRing* ring) noexcept REQUIRES(mu_);
  void GiveBackCopiesLocked(CopyRing* copies) noexcept REQUIRES(mu_);
  // Counts `tid` as unsampled for `why` unless it is already counted.
  void NoteUnsampledLocked(pid_t tid, Unsampled why, const SetupError& error) noexcept
      REQUIRES(mu_);
  // `tid` is sampled after all, excluded, or gone: its entry in unsampled_ goes; `uncount`
  // also takes it out of the counts (it was sampled or excluded after all).
  void ForgetUnsampledLocked(pid_t tid, bool uncount) noexcept REQUIRES(mu_);
  static std::string DescribeSetupError(const SetupError& error);
  // `cpu_ns`: the thread's CPU clock now when the caller knows it (-1: read it, or keep
  // the last value a scan saw if the thread is gone); `name`: its name if known.
  // `exiting_self`: called by the thread itself as it exits, which then takes the sample of
  // the periods its signals never accounted for (Engine::PeriodsUnaccounted).
  void RetireLocked(uint32_t index, int64_t cpu_ns = -1, std::string name = {},
                    bool exiting_self = false) REQUIRES(mu_);
  // The exiting thread's sample of `weights[e]` periods of each event, charged to its start
  // routine (the code it ran is gone by now).
  void TakeExitSamplesLocked(ThreadSlot& slot, const uint64_t* weights) REQUIRES(mu_);
  void RescanLocked(const std::vector<pid_t>& alive) REQUIRES(mu_);  // `alive` sorted
  // Sources the program took from us (Engine::Lost: a perf fd it closed or replaced) are
  // opened again; a thread whose source cannot be is retired and counted as failed.
  void ReopenLostSourcesLocked() REQUIRES(mu_);
  void ResolveBoundsLocked() REQUIRES(mu_);
  SampleRing* TakeRingLocked() REQUIRES(mu_);
  CopyRing* TakeCopyRingLocked() REQUIRES(mu_);
  uint32_t NewRecordLocked(pid_t tid, std::string name) REQUIRES(mu_);

  // What health reports per thread. Alive records are updated by scans; ended ones hold
  // their final CPU time and drained samples.
  // (index kMaxThreadRecords is the aggregate of every thread registered after the first
  // kMaxThreadRecords, so thread churn cannot grow this without bound.)
  struct ThreadRecord {
    pid_t tid = 0;
    std::string name;
    int64_t cpu_ns = 0;  // CPU time of ended registrations
    uint64_t samples = 0;
    uint64_t weight = 0;
  };
  static constexpr uint32_t kMaxThreadRecords = 4096;
  std::vector<ThreadRecord> records_ GUARDED_BY(mu_);

  Sampler* sampler_;
  std::vector<Engine*> engines_;
  long period_ns_;
  mutable Mutex mu_;
  // Room for max_threads slots, mapped at once (its address never changes: the handler and
  // the collector index it) and constructed one at a time as threads need them: untouched,
  // the mapping costs nothing. Constructing all 4096 (1.7 KiB each) made 7 MiB resident and
  // took several milliseconds of page faults at every session start.
  ThreadSlot* slots_ = nullptr;
  uint32_t max_threads_ = 0;
  // Slots constructed (the first sampler_->slot_count of them); free_slots_ holds the free
  // ones among them.
  uint32_t constructed_ GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> free_slots_ GUARDED_BY(mu_);
  std::unordered_map<pid_t, uint32_t> by_tid_ GUARDED_BY(mu_);
  std::unordered_set<pid_t> excluded_ GUARDED_BY(mu_);
  // Threads that unregistered on their way out but may still be listed in /proc for a
  // moment: the scan must not register them again.
  std::unordered_set<pid_t> exiting_ GUARDED_BY(mu_);
  std::vector<SampleRing*> ring_pool_ GUARDED_BY(mu_);
  std::vector<CopyRing*> copy_pool_ GUARDED_BY(mu_);
  uint32_t copy_slots_ GUARDED_BY(mu_) = 0;
  uint32_t copy_bytes_ GUARDED_BY(mu_) = 0;
  size_t copy_budget_ GUARDED_BY(mu_) = 0;  // bytes all copy rings may map together
  size_t copy_rings_ GUARDED_BY(mu_) = 0;   // rings mapped (in slots and in copy_pool_)
  uint64_t threads_without_copies_ GUARDED_BY(mu_) = 0;
  std::mt19937_64 random_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;  // RetireAll ran: register nothing more
  uint64_t threads_seen_ GUARDED_BY(mu_) = 0;
  uint64_t threads_unsampled_ GUARDED_BY(mu_) = 0;  // no free slot
  uint64_t threads_failed_ GUARDED_BY(mu_) = 0;     // setup failed
  std::string first_failure_ GUARDED_BY(mu_);       // why the first setup failed, bounded
  // Sources the program closed or replaced (Engine::Lost), and those opened again.
  uint64_t sources_lost_ GUARDED_BY(mu_) = 0;
  uint64_t sources_reopened_ GUARDED_BY(mu_) = 0;
  // Living threads that are not sampled, and why: each is counted once, and the scan does
  // not retry a failed setup every 100 ms. Entries go when the thread exits or vanishes from
  // /proc, so this is bounded by the live threads.
  std::unordered_map<pid_t, Unsampled> unsampled_ GUARDED_BY(mu_);
  // At most kMaxWarnings between two TakeWarnings.
  std::vector<std::string> warnings_ GUARDED_BY(mu_);
  static constexpr size_t kMaxWarnings = 8;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_THREAD_REGISTRY_H_
