// Sampled lock waits on the waiting thread (lock_sampler.h). Signal path: runs inside
// pthread_mutex_lock & co., possibly inside a program's signal handler; calls nothing outside
// these objects but raw system calls (tests/sdk/signal_path_symbols.cmake checks it).
#include "signal/lock_sampler.h"

#include <ucontext.h>

#include "signal/alloc_sampler.h"
#include "signal/hook_context.h"
#include "signal/raw_syscall.h"
#include "signal/sampler.h"
#include "signal/signal_handler.h"

namespace inprof::internal {

extern std::atomic<Sampler*> g_sampler;

LockSampling g_lock_state;
LockSampling g_cond_state;

namespace {

// The thread's generator (xorshift64*), the epoch it was seeded in, and whether a slow path
// is running on it (a program's signal handler that takes a contended lock while it is does
// not sample: the ring is the thread's and may be half written).
__thread uint64_t t_lock_rng __attribute__((tls_model("initial-exec"))) = 0;
__thread uint32_t t_lock_epoch __attribute__((tls_model("initial-exec"))) = 0;
__thread bool t_lock_busy __attribute__((tls_model("initial-exec"))) = false;

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

// Uniform in [0, 1).
double NextUniform() {
  uint64_t x = t_lock_rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  t_lock_rng = x;
  return static_cast<double>((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

}  // namespace

INPROF_PROFILER_TEXT void LockSlowPath(int64_t start_ns, LockSampling& state) {
  const int64_t end_ns = MonotonicNsRaw();
  if (t_lock_busy || t_profiler_work) return;
  t_lock_busy = true;
  const uint64_t delay =
      end_ns > start_ns && start_ns != 0 ? static_cast<uint64_t>(end_ns - start_ns) : 1;
  const uint64_t rate = state.rate.load(std::memory_order_relaxed);
  // One generator per thread for both kinds of wait, seeded anew with each session
  // (g_lock_state's epoch counts the sessions of both).
  const uint32_t epoch = g_lock_state.epoch.load(std::memory_order_acquire);
  if (t_lock_epoch != epoch || t_lock_rng == 0) {
    t_lock_epoch = epoch;
    t_lock_rng =
        Mix(static_cast<uint64_t>(end_ns) ^ (static_cast<uint64_t>(CurrentTidRaw()) << 40) ^ epoch);
    if (t_lock_rng == 0) t_lock_rng = 1;
  }
  if (!KeepLockWait(delay, rate, NextUniform())) {
    t_lock_busy = false;
    return;
  }
  const uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
  const uintptr_t fp = *static_cast<const uintptr_t*>(__builtin_frame_address(0));
  // In the runtime itself, the wait is the runtime's (its collector's, its registry's lock
  // taken on a program thread).
  const uintptr_t caller = HookCaller(fp);
  if (caller >= state.self_lo.load(std::memory_order_relaxed) &&
      caller < state.self_hi.load(std::memory_order_relaxed)) {
    t_lock_busy = false;
    return;
  }
  g_handlers_in_flight.fetch_add(1, std::memory_order_seq_cst);
  Sampler* sampler = g_sampler.load(std::memory_order_seq_cst);
  uint32_t index = 0;
  if (sampler == nullptr || !state.on.load(std::memory_order_relaxed) ||
      !sampler->alloc_tids.Lookup(CurrentTidRaw(), &index) || index >= sampler->slot_count) {
    state.no_slot.fetch_add(1, std::memory_order_relaxed);
  } else {
    AllocInfo info;  // size: the wait in ns; no live entry (the event tells it from an allocation)
    info.size = delay;
    ucontext_t context;
    HookContext(&context, pc, sp, fp);
    bool filling = false;
    const uint32_t event = state.event.load(std::memory_order_relaxed);
    if (TakeHookSample(sampler, index, event, &context, info, &filling)) {
      state.sampled.fetch_add(1, std::memory_order_relaxed);
      if (filling) WakeCollector(sampler);
    } else {
      // The thread holds the lock now, and the collector may be waiting for it: no wait for
      // room here, unlike an allocation's sample.
      state.dropped.fetch_add(1, std::memory_order_relaxed);
      WakeCollector(sampler);
    }
  }
  g_handlers_in_flight.fetch_sub(1, std::memory_order_release);
  t_lock_busy = false;
}

}  // namespace inprof::internal
