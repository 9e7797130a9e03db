// What the sampling hooks (alloc_sampler.cpp, lock_sampler.cpp) share: the context a hook's
// sample is walked from, and waking the collector. Signal-safe header.
#ifndef INPROF_SDK_HOOK_CONTEXT_H_
#define INPROF_SDK_HOOK_CONTEXT_H_

#include <ucontext.h>

#include <atomic>
#include <cstdint>

#include "signal/raw_syscall.h"
#include "signal/sampler.h"

// The section the hooks are in (INPROF_PROFILER_TEXT, signal_handler.h).
extern "C" const char __start_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_inprof_profiler_text[] __attribute__((weak, visibility("hidden")));

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

// The code of the call a hook's sample stands for, from the hook's frame record `fp`: the
// hook's return address, or, while that is in the profiler's text (an operator new hook that
// called the malloc hook), the next one up, a frame record further (the hooks keep frame
// pointers). A caller in the runtime's own object makes the allocation or wait the runtime's.
// Async-signal-safe.
inline uintptr_t HookCaller(uintptr_t fp) {
  const auto text_lo = reinterpret_cast<uintptr_t>(__start_inprof_profiler_text);
  const auto text_hi = reinterpret_cast<uintptr_t>(__stop_inprof_profiler_text);
  uintptr_t frame = fp;
  uintptr_t caller = frame != 0 ? reinterpret_cast<const uintptr_t*>(frame)[1] : 0;
  for (int i = 0; i < 4 && frame != 0 && caller >= text_lo && caller < text_hi; ++i) {
    frame = reinterpret_cast<const uintptr_t*>(frame)[0];
    caller = frame != 0 ? reinterpret_cast<const uintptr_t*>(frame)[1] : 0;
  }
  return caller;
}

// Wakes the collector to drain now (a ring is filling). Async-signal-safe.
inline void WakeCollector(Sampler* sampler) {
  if (sampler->drain_word.exchange(1, std::memory_order_acq_rel) == 0) {
    RawSyscall4(kSysFutex, reinterpret_cast<long>(&sampler->drain_word), kFutexWakePrivate, 1);
  }
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_HOOK_CONTEXT_H_
