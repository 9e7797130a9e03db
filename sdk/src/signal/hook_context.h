// What the sampling hooks (alloc_sampler.cpp, lock_sampler.cpp) share: the context a hook's
// sample is walked from, and waking the collector. Signal-safe header.
#ifndef INPROF_SDK_HOOK_CONTEXT_H_
#define INPROF_SDK_HOOK_CONTEXT_H_

#include <ucontext.h>

#include <atomic>
#include <cstdint>

#include "signal/raw_syscall.h"
#include "signal/sampler.h"

namespace inprof::internal {

// The CPU state of the caller of the function that calls this one (the hook), for the walk:
// pc inside the hook, its stack pointer and frame pointer. The walk then goes from the hook
// up through the program's frames; the collector strips the hook's own (profiler text).
// Async-signal-safe.
__attribute__((always_inline)) inline void HookContext(ucontext_t* uc, uintptr_t pc, uintptr_t sp,
                                                       uintptr_t fp) {
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
  uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
  uc->uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(fp);
#elif defined(__aarch64__)
  uc->uc_mcontext.pc = pc;
  uc->uc_mcontext.sp = sp;
  uc->uc_mcontext.regs[29] = fp;
  // The hook's own return address, which its frame record holds: the walk then does not
  // take lr for a frameless leaf's.
  uc->uc_mcontext.regs[30] = fp != 0 ? reinterpret_cast<const uintptr_t*>(fp)[1] : 0;
#else
#error "unsupported architecture"
#endif
}

// Wakes the collector to drain now (a ring is filling). Async-signal-safe.
inline void WakeCollector(Sampler* sampler) {
  if (sampler->drain_word.exchange(1, std::memory_order_acq_rel) == 0) {
    RawSyscall4(kSysFutex, reinterpret_cast<long>(&sampler->drain_word), kFutexWakePrivate, 1);
  }
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_HOOK_CONTEXT_H_
