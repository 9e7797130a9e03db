// Sampled lock contention: what the lock hooks (hooks/lock_hooks.cpp) run on a thread that
// had to wait for a lock, after the wait.
//
// A hook first tries the lock; only when that fails (the lock is held) does it read the
// clock, wait in the real function and hand the time it waited to LockSlowPath. So an
// uncontended lock costs the try and one relaxed load, and nothing is written that another
// thread reads.
//
// Sampling is Go's block-profile rule, by wait time: with rate R (Config::lock_rate, ns), a
// wait of d >= R is always kept, weighted 1 contention and d ns; a wait of d < R is kept with
// probability d/R and weighted R/d contentions and R ns. Each kept wait's expected weight is
// then exactly 1 contention and d ns, so totals per stack are estimates without bias, and
// the many short waits of a hot lock cost a draw each instead of a sample each. The record
// carries d (AllocInfo::size); the session applies the rule's weights (LockWeights), so the
// rounding of R/d to a whole count happens off the waiting thread.
//
// A kept wait is recorded like a sampled allocation: its stack is walked (or copied) on the
// waiting thread from the hook's frame (TakeHookSample), and the collector strips the hook's
// frames (inprof_profiler_text). No signal, no lock, no allocation; a full ring drops the
// sample (counted) rather than wait for the collector, which may itself be waiting for the
// lock the thread now holds.
//
// Condition waits (pthread_cond_wait & co., event `cond`) go through the same path with a
// state of their own (CondState()): their own switch, event index and counters, the same rule.
//
// Not sampled: waits on the runtime's own threads (they have no slot), waits whose caller is
// the runtime's own code (self_lo..self_hi, as for allocations), and waits while the thread
// does the runtime's work (t_profiler_work).
//
// Concurrency: the hooks run on any thread; a slow path that touches the session's sampler
// counts itself in g_handlers_in_flight, so stopping waits for it. Signal-safe header.
#ifndef INPROF_SDK_LOCK_SAMPLER_H_
#define INPROF_SDK_LOCK_SAMPLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

// The process's lock sampling state: one for lock waits (LockState()), one for condition
// waits (CondState()).
struct LockSampling {
  // On while a session samples these waits. Off, a hook only forwards.
  std::atomic<bool> on{false};
  // Changes with each session that turns sampling on: a thread's generator is re-seeded.
  // LockState()'s counts the sessions of both kinds (one generator serves both).
  std::atomic<uint32_t> epoch{0};
  std::atomic<uint64_t> rate{10000};  // R, nanoseconds
  // The session's event index of lock_contentions or cond_waits (the delay is the next one).
  std::atomic<uint32_t> event{0};
  // Counters for the summary.
  std::atomic<uint64_t> sampled{0};  // waits kept and handed to a ring
  std::atomic<uint64_t> no_slot{0};  // kept on a thread the session does not sample
  std::atomic<uint64_t> dropped{0};  // kept but the ring was full or busy
  // The runtime's own code: a wait whose caller is in it is the runtime's.
  std::atomic<uintptr_t> self_lo{0};
  std::atomic<uintptr_t> self_hi{0};
};
extern LockSampling g_lock_state;
extern LockSampling g_cond_state;
inline LockSampling& LockState() { return g_lock_state; }
inline LockSampling& CondState() { return g_cond_state; }

// Whether a wait of `delay_ns` is kept at rate `rate_ns`, given `u`, uniform in [0, 1):
// always when delay >= rate, else when u * rate < delay. Async-signal-safe.
inline bool KeepLockWait(uint64_t delay_ns, uint64_t rate_ns, double u) {
  if (delay_ns >= rate_ns) return true;
  return u * static_cast<double>(rate_ns) < static_cast<double>(delay_ns);
}

// The weights of one kept wait of `delay_ns` at rate `rate_ns` (Go's block profile):
// contentions 1 and delay d when d >= R, else R/d contentions and R ns.
struct LockWeights {
  double contentions = 0;
  double delay_ns = 0;
};
inline LockWeights LockWaitWeights(uint64_t delay_ns, uint64_t rate_ns) {
  if (delay_ns == 0) return {};
  if (delay_ns >= rate_ns) return {1.0, static_cast<double>(delay_ns)};
  return {static_cast<double>(rate_ns) / static_cast<double>(delay_ns),
          static_cast<double>(rate_ns)};
}

// The slow path of a lock hook: the lock was contended and the thread waited for it since
// `start_ns` (MonotonicNsRaw); or, with CondState(), a condition wait that began then.
// Decides, and records the wait when it is kept, with the stack from the calling hook's frame
// up (the hook must be in the inprof_profiler_text section). Must be called directly by the
// hook. Async-signal-safe.
void LockSlowPath(int64_t start_ns, LockSampling& state);

}  // namespace inprof::internal

#endif  // INPROF_SDK_LOCK_SAMPLER_H_
