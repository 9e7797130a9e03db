// The allocation functions, interposed: each forwards to the next definition (the C
// library's, or a preloaded allocator's: jemalloc, tcmalloc) and tells the sampler
// (signal/alloc_sampler.h) what it allocated and freed. While no session samples
// allocations, a hook costs one relaxed load and the forwarding call.
//
// Interposed: malloc, calloc, realloc (realloc(p, 0) frees, a failed realloc keeps p),
// reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc.
// malloc_usable_size is not: the allocator answers it.
//
// C++ operator new and delete, all twenty variants, are interposed too. libstdc++'s call
// malloc and free, so their blocks are seen there, once; an allocator that defines them
// itself (tcmalloc, jemalloc) does not: ours then note what the next one allocated and
// freed. Which of the two, each call finds out (INPROF_NEW_BODY).
//
// Bootstrap: the next definitions are found with dlsym(RTLD_NEXT, ...), which may itself
// allocate. While a thread resolves them, its allocations are served from a static pool;
// frees of pool memory are ignored, and realloc moves it out.
//
// Everything here is in the inprof_profiler_text section: the collector strips these frames
// from a sampled allocation's stack, whose first frame is then the program's call.
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <new>

#include "signal/alloc_sampler.h"
#include "hooks/next_function.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {
namespace {

using MallocFn = void* (*)(size_t);
using FreeFn = void (*)(void*);
using CallocFn = void* (*)(size_t, size_t);
using ReallocFn = void* (*)(void*, size_t);
using ReallocArrayFn = void* (*)(void*, size_t, size_t);
using PosixMemalignFn = int (*)(void**, size_t, size_t);
using AlignedFn = void* (*)(size_t, size_t);

// operator new and delete, by variant: plain, nothrow, aligned, aligned nothrow; delete also
// sized and aligned sized. Mangled names, looked up with dlsym.
using NewFn = void* (*)(size_t);
using NewNothrowFn = void* (*)(size_t, const std::nothrow_t&);
using NewAlignFn = void* (*)(size_t, std::align_val_t);
using NewAlignNothrowFn = void* (*)(size_t, std::align_val_t, const std::nothrow_t&);
using DeleteFn = void (*)(void*);
using DeleteSizedFn = void (*)(void*, size_t);
using DeleteNothrowFn = void (*)(void*, const std::nothrow_t&);
using DeleteAlignFn = void (*)(void*, std::align_val_t);
using DeleteSizedAlignFn = void (*)(void*, size_t, std::align_val_t);
using DeleteAlignNothrowFn = void (*)(void*, std::align_val_t, const std::nothrow_t&);

// One object kind (scalar or array)'s operators.
struct NextNew {
  std::atomic<NewFn> plain{nullptr};
  std::atomic<NewNothrowFn> nothrow{nullptr};
  std::atomic<NewAlignFn> align{nullptr};
  std::atomic<NewAlignNothrowFn> align_nothrow{nullptr};
  std::atomic<DeleteFn> del{nullptr};
  std::atomic<DeleteSizedFn> del_sized{nullptr};
  std::atomic<DeleteNothrowFn> del_nothrow{nullptr};
  std::atomic<DeleteAlignFn> del_align{nullptr};
  std::atomic<DeleteSizedAlignFn> del_sized_align{nullptr};
  std::atomic<DeleteAlignNothrowFn> del_align_nothrow{nullptr};
};

struct NextAllocator {
  std::atomic<MallocFn> malloc{nullptr};
  std::atomic<FreeFn> free{nullptr};
  std::atomic<CallocFn> calloc{nullptr};
  std::atomic<ReallocFn> realloc{nullptr};
  std::atomic<ReallocArrayFn> reallocarray{nullptr};
  std::atomic<PosixMemalignFn> posix_memalign{nullptr};
  std::atomic<AlignedFn> aligned_alloc{nullptr};
  std::atomic<AlignedFn> memalign{nullptr};
  std::atomic<MallocFn> valloc{nullptr};
  std::atomic<MallocFn> pvalloc{nullptr};
  NextNew scalar;  // operator new / delete
  NextNew array;   // operator new[] / delete[]
  // The next operator new is libstdc++'s, which is malloc in a loop around the new-handler:
  // the hooks then do that themselves (MallocNew) and skip a layer.
  std::atomic<bool> new_via_malloc{false};
  std::atomic<bool> resolved{false};
};
NextAllocator g_next;

// The bootstrap pool: bump allocation, 16-byte aligned, with the size in front of each block.
constexpr size_t kPoolBytes = 256 * 1024;
alignas(64) char g_pool[kPoolBytes];
std::atomic<size_t> g_pool_used{0};
__thread bool t_resolving __attribute__((tls_model("initial-exec"))) = false;

__attribute__((always_inline)) inline bool InPool(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const auto base = reinterpret_cast<uintptr_t>(g_pool);
  return a >= base && a < base + kPoolBytes;
}

void* PoolAlloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  if (size > kPoolBytes) return nullptr;
  size_t used = g_pool_used.load(std::memory_order_relaxed);
  for (;;) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(g_pool);
    uintptr_t start = (base + used + 16 + align - 1) & ~(uintptr_t{align} - 1);
    const size_t end = start + size - base;
    if (end > kPoolBytes) return nullptr;
    if (g_pool_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      reinterpret_cast<size_t*>(start)[-1] = size;
      return reinterpret_cast<void*>(start);  // zero: the pool is never reused
    }
  }
}

size_t PoolSize(const void* p) { return static_cast<const size_t*>(p)[-1]; }

template <typename Fn>
void Lookup(std::atomic<Fn>& slot, const char* name, bool required) {
  Fn f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  if (f == nullptr && required) ExitForMissingFunction("the allocator's ", name);
  slot.store(f, std::memory_order_release);
}

__attribute__((noinline)) void Resolve() {
  if (g_next.resolved.load(std::memory_order_acquire)) return;
  // Several threads may resolve at once: each finds the same functions.
  t_resolving = true;
  Lookup(g_next.malloc, "malloc", true);
  Lookup(g_next.free, "free", true);
  Lookup(g_next.calloc, "calloc", true);
  Lookup(g_next.realloc, "realloc", true);
  Lookup(g_next.reallocarray, "reallocarray", false);
  Lookup(g_next.posix_memalign, "posix_memalign", true);
  Lookup(g_next.aligned_alloc, "aligned_alloc", false);
  Lookup(g_next.memalign, "memalign", false);
  Lookup(g_next.valloc, "valloc", false);
  Lookup(g_next.pvalloc, "pvalloc", false);
  // Not required: a program whose libstdc++ comes before the runtime never calls these, and
  // one without libstdc++ has none (they then fall back on malloc and free).
  Lookup(g_next.scalar.plain, "_Znwm", false);
  Lookup(g_next.scalar.nothrow, "_ZnwmRKSt9nothrow_t", false);
  Lookup(g_next.scalar.align, "_ZnwmSt11align_val_t", false);
  Lookup(g_next.scalar.align_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", false);
  Lookup(g_next.scalar.del, "_ZdlPv", false);
  Lookup(g_next.scalar.del_sized, "_ZdlPvm", false);
  Lookup(g_next.scalar.del_nothrow, "_ZdlPvRKSt9nothrow_t", false);
  Lookup(g_next.scalar.del_align, "_ZdlPvSt11align_val_t", false);
  Lookup(g_next.scalar.del_sized_align, "_ZdlPvmSt11align_val_t", false);
  Lookup(g_next.scalar.del_align_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t", false);
  Lookup(g_next.array.plain, "_Znam", false);
  Lookup(g_next.array.nothrow, "_ZnamRKSt9nothrow_t", false);
  Lookup(g_next.array.align, "_ZnamSt11align_val_t", false);
  Lookup(g_next.array.align_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t", false);
  Lookup(g_next.array.del, "_ZdaPv", false);
  Lookup(g_next.array.del_sized, "_ZdaPvm", false);
  Lookup(g_next.array.del_nothrow, "_ZdaPvRKSt9nothrow_t", false);
  Lookup(g_next.array.del_align, "_ZdaPvSt11align_val_t", false);
  Lookup(g_next.array.del_sized_align, "_ZdaPvmSt11align_val_t", false);
  Lookup(g_next.array.del_align_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t", false);
  Dl_info info{};
  const auto next_new = g_next.scalar.plain.load(std::memory_order_relaxed);
  g_next.new_via_malloc.store(
      next_new != nullptr && dladdr(reinterpret_cast<void*>(next_new), &info) != 0 &&
          info.dli_fname != nullptr && strstr(info.dli_fname, "/libstdc++.so") != nullptr,
      std::memory_order_relaxed);
  t_resolving = false;
  g_next.resolved.store(true, std::memory_order_release);
}

// The next definition of a function, resolving on first use; null while this thread is
// resolving (the caller then serves from the pool).
template <typename Fn>
__attribute__((always_inline)) inline Fn Next(std::atomic<Fn>& slot) {
  Fn f = slot.load(std::memory_order_acquire);
  if (__builtin_expect(f != nullptr, 1)) return f;
  if (t_resolving) return nullptr;
  Resolve();
  return slot.load(std::memory_order_acquire);
}

}  // namespace

}  // namespace inprof::internal

using inprof::internal::AllocNoteFree;
using inprof::internal::g_next;
using inprof::internal::InPool;
using inprof::internal::Next;
using inprof::internal::PoolAlloc;
using inprof::internal::PoolSize;

#define INPROF_ALLOC_HOOK extern "C" __attribute__((visibility("default"))) INPROF_PROFILER_TEXT

INPROF_ALLOC_HOOK void* malloc(size_t size) {
  const auto next = Next(g_next.malloc);
  if (next == nullptr) return PoolAlloc(size, 16);
  void* p = next(size);
  if (p != nullptr) INPROF_ALLOC_NOTE(p, size);
  return p;
}

INPROF_ALLOC_HOOK void free(void* p) {
  if (p == nullptr || InPool(p)) return;
  AllocNoteFree(p);
  const auto next = Next(g_next.free);
  if (next != nullptr) next(p);
}

INPROF_ALLOC_HOOK void* calloc(size_t n, size_t size) {
  size_t total;
  const bool overflow = __builtin_mul_overflow(n, size, &total);
  const auto next = Next(g_next.calloc);
  if (next == nullptr) return overflow ? nullptr : PoolAlloc(total, 16);
  void* p = next(n, size);  // the allocator reports the overflow (ENOMEM)
  if (p != nullptr && !overflow) INPROF_ALLOC_NOTE(p, total);
  return p;
}

INPROF_ALLOC_HOOK void* realloc(void* old, size_t size) {
  if (old != nullptr && InPool(old)) {
    // Out of the bootstrap pool into the allocator (the pool block is never reused).
    void* p = malloc(size);
    if (p != nullptr) memcpy(p, old, PoolSize(old) < size ? PoolSize(old) : size);
    return p;
  }
  const auto next = Next(g_next.realloc);
  if (next == nullptr) return PoolAlloc(size, 16);
  // Out of the live table before the allocator can hand the address to another thread. A
  // failed realloc leaves `old` allocated but no longer counted live: rare, and an
  // undercount rather than a false leak.
  if (old != nullptr) AllocNoteFree(old);
  void* p = next(old, size);
  // realloc(p, 0) frees p (glibc) and may return null or a minimal block.
  if (p != nullptr && size != 0) INPROF_ALLOC_NOTE(p, size);
  return p;
}

INPROF_ALLOC_HOOK void* reallocarray(void* old, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, total);
}

INPROF_ALLOC_HOOK int posix_memalign(void** out, size_t align, size_t size) {
  const auto next = Next(g_next.posix_memalign);
  if (next == nullptr) {
    void* p = PoolAlloc(size, align);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
  }
  const int error = next(out, align, size);
  if (error == 0 && *out != nullptr) INPROF_ALLOC_NOTE(*out, size);
  return error;
}

INPROF_ALLOC_HOOK void* aligned_alloc(size_t align, size_t size) {
  const auto next = Next(g_next.aligned_alloc);
  if (next == nullptr) return PoolAlloc(size, align);
  void* p = next(align, size);
  if (p != nullptr) INPROF_ALLOC_NOTE(p, size);
  return p;
}

INPROF_ALLOC_HOOK void* memalign(size_t align, size_t size) {
  const auto next = Next(g_next.memalign);
  if (next == nullptr) return PoolAlloc(size, align);
  void* p = next(align, size);
  if (p != nullptr) INPROF_ALLOC_NOTE(p, size);
  return p;
}

INPROF_ALLOC_HOOK void* valloc(size_t size) {
  const auto next = Next(g_next.valloc);
  if (next == nullptr) return PoolAlloc(size, 4096);
  void* p = next(size);
  if (p != nullptr) INPROF_ALLOC_NOTE(p, size);
  return p;
}

INPROF_ALLOC_HOOK void* pvalloc(size_t size) {
  const auto next = Next(g_next.pvalloc);
  if (next == nullptr) return PoolAlloc(size, 4096);
  void* p = next(size);
  if (p != nullptr) INPROF_ALLOC_NOTE(p, size);
  return p;
}

// ---- C++ operator new and delete ----

namespace inprof::internal {
namespace {

// What libstdc++'s operator new does, through the malloc hooks: used without a next operator
// new (libstdc++ is not after the runtime) and instead of libstdc++'s. In the profiler's text
// section, as the hooks: the collector strips its frame from a sampled stack.
INPROF_PROFILER_TEXT void* MallocNew(size_t size, size_t align) {
  if (size == 0) size = 1;
  for (;;) {
    void* p = nullptr;
    if (align <= 16) {
      p = malloc(size);
    } else if (posix_memalign(&p, align, size) != 0) {
      p = nullptr;
    }
    if (p != nullptr) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

INPROF_PROFILER_TEXT void* MallocNewNothrow(size_t size, size_t align) noexcept {
  try {
    return MallocNew(size, align);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace
}  // namespace inprof::internal

using inprof::internal::MallocNew;
using inprof::internal::MallocNewNothrow;
using inprof::internal::AllocState;
using inprof::internal::t_alloc_left;

// Calls the next operator new (`next_slot` with `call_args`), or `fallback` without one, and
// notes the block unless the next operator new's own malloc call did: the malloc hooks count
// every allocation against the thread's countdown, so an unchanged countdown means the call
// never reached them (the allocator's own operator new). Decided per call, not per process:
// an allocator may define some variants and leave others to libstdc++ (Debian's jemalloc has
// no aligned new). A macro, not a function: the note must be made in the hook's own frame
// (the sampled stack starts at its caller).
#define INPROF_NEW_BODY(next_slot, size, call_args, fallback)                           \
  const auto next = Next(next_slot);                                                   \
  if (next == nullptr || g_next.new_via_malloc.load(std::memory_order_relaxed)) {        \
    return fallback;                                                                   \
  }                                                                                    \
  if (__builtin_expect(!AllocState().on.load(std::memory_order_relaxed), 1)) {          \
    return next call_args;                                                             \
  }                                                                                    \
  const int64_t left = t_alloc_left;                                                   \
  void* p = next call_args;                                                            \
  if (p != nullptr && t_alloc_left == left) INPROF_ALLOC_NOTE(p, size);                 \
  return p

// libstdc++'s operator delete is free(); another allocator's: forget the block, then call it.
#define INPROF_DELETE_BODY(next_slot, p, call_args)                                    \
  if (p == nullptr) return;                                                            \
  const auto next = Next(next_slot);                                                   \
  if (next == nullptr || g_next.new_via_malloc.load(std::memory_order_relaxed)) {        \
    return free(p);                                                                    \
  }                                                                                    \
  AllocNoteFree(p);                                                                    \
  next call_args

#define INPROF_NEW_HOOK __attribute__((visibility("default"))) INPROF_PROFILER_TEXT

INPROF_NEW_HOOK void* operator new(size_t size) {
  INPROF_NEW_BODY(g_next.scalar.plain, size, (size), MallocNew(size, 0));
}
INPROF_NEW_HOOK void* operator new[](size_t size) {
  INPROF_NEW_BODY(g_next.array.plain, size, (size), MallocNew(size, 0));
}
INPROF_NEW_HOOK void* operator new(size_t size, const std::nothrow_t& nt) noexcept {
  INPROF_NEW_BODY(g_next.scalar.nothrow, size, (size, nt), MallocNewNothrow(size, 0));
}
INPROF_NEW_HOOK void* operator new[](size_t size, const std::nothrow_t& nt) noexcept {
  INPROF_NEW_BODY(g_next.array.nothrow, size, (size, nt), MallocNewNothrow(size, 0));
}
INPROF_NEW_HOOK void* operator new(size_t size, std::align_val_t al) {
  INPROF_NEW_BODY(g_next.scalar.align, size, (size, al), MallocNew(size, static_cast<size_t>(al)));
}
INPROF_NEW_HOOK void* operator new[](size_t size, std::align_val_t al) {
  INPROF_NEW_BODY(g_next.array.align, size, (size, al), MallocNew(size, static_cast<size_t>(al)));
}
INPROF_NEW_HOOK void* operator new(size_t size, std::align_val_t al,
                                   const std::nothrow_t& nt) noexcept {
  INPROF_NEW_BODY(g_next.scalar.align_nothrow, size, (size, al, nt),
                  MallocNewNothrow(size, static_cast<size_t>(al)));
}
INPROF_NEW_HOOK void* operator new[](size_t size, std::align_val_t al,
                                     const std::nothrow_t& nt) noexcept {
  INPROF_NEW_BODY(g_next.array.align_nothrow, size, (size, al, nt),
                  MallocNewNothrow(size, static_cast<size_t>(al)));
}

INPROF_NEW_HOOK void operator delete(void* p) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del, p, (p));
}
INPROF_NEW_HOOK void operator delete[](void* p) noexcept {
  INPROF_DELETE_BODY(g_next.array.del, p, (p));
}
INPROF_NEW_HOOK void operator delete(void* p, size_t size) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del_sized, p, (p, size));
}
INPROF_NEW_HOOK void operator delete[](void* p, size_t size) noexcept {
  INPROF_DELETE_BODY(g_next.array.del_sized, p, (p, size));
}
INPROF_NEW_HOOK void operator delete(void* p, const std::nothrow_t& nt) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del_nothrow, p, (p, nt));
}
INPROF_NEW_HOOK void operator delete[](void* p, const std::nothrow_t& nt) noexcept {
  INPROF_DELETE_BODY(g_next.array.del_nothrow, p, (p, nt));
}
INPROF_NEW_HOOK void operator delete(void* p, std::align_val_t al) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del_align, p, (p, al));
}
INPROF_NEW_HOOK void operator delete[](void* p, std::align_val_t al) noexcept {
  INPROF_DELETE_BODY(g_next.array.del_align, p, (p, al));
}
INPROF_NEW_HOOK void operator delete(void* p, size_t size, std::align_val_t al) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del_sized_align, p, (p, size, al));
}
INPROF_NEW_HOOK void operator delete[](void* p, size_t size, std::align_val_t al) noexcept {
  INPROF_DELETE_BODY(g_next.array.del_sized_align, p, (p, size, al));
}
INPROF_NEW_HOOK void operator delete(void* p, std::align_val_t al,
                                     const std::nothrow_t& nt) noexcept {
  INPROF_DELETE_BODY(g_next.scalar.del_align_nothrow, p, (p, al, nt));
}
INPROF_NEW_HOOK void operator delete[](void* p, std::align_val_t al,
                                       const std::nothrow_t& nt) noexcept {
  INPROF_DELETE_BODY(g_next.array.del_align_nothrow, p, (p, al, nt));
}
