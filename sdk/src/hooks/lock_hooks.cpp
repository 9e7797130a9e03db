// The lock functions, interposed: each forwards to the next definition (the C library's) and,
// while a session samples lock contention, tells the sampler (signal/lock_sampler.h) how long
// the calling thread waited for a lock that was held.
//
// Interposed: pthread_mutex_lock, pthread_mutex_timedlock, pthread_mutex_clocklock,
// pthread_rwlock_rdlock/wrlock and their timed and clock variants, pthread_spin_lock; and, for
// the event `cond` (CondState()), pthread_cond_wait, pthread_cond_timedwait and
// pthread_cond_clockwait. Waiting for a condition is not contention: it is an event of its
// own, and the mutex a condition wait takes back on wake-up is taken inside the C library, not
// through pthread_mutex_lock, so it never shows up as a lock wait. Unlock functions are not
// interposed (no holder's stack is recorded).
//
// The C library exports pthread_cond_wait and pthread_cond_timedwait in two versions on
// x86-64: the current one (GLIBC_2.3.2) and one for programs linked before glibc 2.3.2, which
// takes a different condition variable. An unversioned hook would receive the calls of both and
// could forward them to one implementation only, so these two hooks carry the current version
// (.symver below, and the version node in libinprof.map): the dynamic linker binds a program's
// pthread_cond_wait@GLIBC_2.3.2 to them and lets a reference to the old version pass to the C
// library. Their next definition is looked up by version too (dlvsym). On aarch64 there is one
// version, GLIBC_2.17. pthread_cond_clockwait (glibc 2.30) has one version everywhere.
//
// With sampling on, a hook first tries the lock (pthread_mutex_lock looks at the lock word
// instead: see it below). Only when the try says the lock is held
// (EBUSY) does it read the clock and wait in the real function; any other result of the try
// is what the real lock function would have returned for that mutex (0: taken, EOWNERDEAD: a
// robust mutex taken from a dead owner, ENOTRECOVERABLE, EAGAIN: a recursive mutex's count
// is full, EINVAL) and is returned as it is: calling the real lock after a try that took the
// lock would take it twice. An error-checking mutex the thread already holds makes the try
// say EBUSY; the real lock then returns EDEADLK at once, which is returned unsampled. So
// every return code is the one the program would get without the runtime. A wait counts when
// the real function returns with the lock (0, EOWNERDEAD) or after waiting out its timeout
// (ETIMEDOUT): that time, too, was spent because another thread held the lock.
//
// Bootstrap: the next definitions are found with dlsym(RTLD_NEXT, ...) when the library is
// loaded (a constructor), and on first use for any still missing. glibc's dlsym takes its own
// locks internally, never through these functions; should one be called on the resolving
// thread anyway, pthread_mutex_lock falls back to glibc's own alias and the others return
// EAGAIN.
//
// Everything here is in the inprof_profiler_text section: the collector strips these frames
// from a sampled wait's stack, whose first frame is then the program's call.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <atomic>

#include "signal/lock_sampler.h"

// The version of pthread_cond_wait and pthread_cond_timedwait the hooks define (see above).
#if defined(__x86_64__)
#define INPROF_COND_GLIBC_VERSION "GLIBC_2.3.2"
#elif defined(__aarch64__)
#define INPROF_COND_GLIBC_VERSION "GLIBC_2.17"
#else
#error "the C library's version of pthread_cond_wait on this architecture is not known"
#endif
#include "hooks/next_function.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

// glibc's own name for pthread_mutex_lock (exported for compatibility): the fallback of a
// nested call on the thread that is resolving the next definitions.
extern "C" int __pthread_mutex_lock(pthread_mutex_t*) __attribute__((weak));

// glibc's flags in pthread_mutex_t's __data.__kind (PTHREAD_MUTEX_PRIO_INHERIT_NP and
// PTHREAD_MUTEX_PRIO_PROTECT_NP of its internal pthreadP.h; the kind is in the low two bits).
constexpr int kMutexPrioInherit = 32;
constexpr int kMutexPrioProtect = 64;

namespace inprof::internal {
namespace {

using MutexFn = int (*)(pthread_mutex_t*);
using MutexTimedFn = int (*)(pthread_mutex_t*, const struct timespec*);
using MutexClockFn = int (*)(pthread_mutex_t*, clockid_t, const struct timespec*);
using RwFn = int (*)(pthread_rwlock_t*);
using RwTimedFn = int (*)(pthread_rwlock_t*, const struct timespec*);
using RwClockFn = int (*)(pthread_rwlock_t*, clockid_t, const struct timespec*);
using SpinFn = int (*)(pthread_spinlock_t*);
using CondWaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*);
using CondTimedFn = int (*)(pthread_cond_t*, pthread_mutex_t*, const struct timespec*);
using CondClockFn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);

__thread bool t_lock_resolving __attribute__((tls_model("initial-exec"))) = false;

template <typename Fn>
struct NextFn {
  std::atomic<Fn> fn{nullptr};
  const char* name;
  const char* version = nullptr;  // the C library's version of the symbol, when it has several
};

NextFn<MutexFn> g_mutex_lock{{}, "pthread_mutex_lock"};
NextFn<MutexFn> g_mutex_trylock{{}, "pthread_mutex_trylock"};
NextFn<MutexTimedFn> g_mutex_timedlock{{}, "pthread_mutex_timedlock"};
NextFn<MutexClockFn> g_mutex_clocklock{{}, "pthread_mutex_clocklock"};
NextFn<RwFn> g_rwlock_rdlock{{}, "pthread_rwlock_rdlock"};
NextFn<RwFn> g_rwlock_wrlock{{}, "pthread_rwlock_wrlock"};
NextFn<RwFn> g_rwlock_tryrdlock{{}, "pthread_rwlock_tryrdlock"};
NextFn<RwFn> g_rwlock_trywrlock{{}, "pthread_rwlock_trywrlock"};
NextFn<RwTimedFn> g_rwlock_timedrdlock{{}, "pthread_rwlock_timedrdlock"};
NextFn<RwTimedFn> g_rwlock_timedwrlock{{}, "pthread_rwlock_timedwrlock"};
NextFn<RwClockFn> g_rwlock_clockrdlock{{}, "pthread_rwlock_clockrdlock"};
NextFn<RwClockFn> g_rwlock_clockwrlock{{}, "pthread_rwlock_clockwrlock"};
NextFn<SpinFn> g_spin_lock{{}, "pthread_spin_lock"};
NextFn<SpinFn> g_spin_trylock{{}, "pthread_spin_trylock"};
NextFn<CondWaitFn> g_cond_wait{{}, "pthread_cond_wait", INPROF_COND_GLIBC_VERSION};
NextFn<CondTimedFn> g_cond_timedwait{{}, "pthread_cond_timedwait", INPROF_COND_GLIBC_VERSION};
NextFn<CondClockFn> g_cond_clockwait{{}, "pthread_cond_clockwait"};

// `required`: a hook's own call (the program calls the function, so the C library it was
// linked against has it) exits when it cannot be found; the load-time pass does not (an older
// C library has no pthread_mutex_clocklock, and a program that never calls it is fine).
template <typename Fn>
__attribute__((noinline)) Fn Resolve(NextFn<Fn>& next, bool required = true) {
  if (t_lock_resolving) return nullptr;
  t_lock_resolving = true;
  Fn f = reinterpret_cast<Fn>(next.version != nullptr ? dlvsym(RTLD_NEXT, next.name, next.version)
                                                       : dlsym(RTLD_NEXT, next.name));
  t_lock_resolving = false;
  if (f == nullptr && required) ExitForMissingFunction("the C library's ", next.name);
  if (f != nullptr) next.fn.store(f, std::memory_order_release);
  return f;
}

// The next definition, resolving on first use; null only for a nested call on the thread
// that is resolving.
template <typename Fn>
__attribute__((always_inline)) inline Fn Next(NextFn<Fn>& next) {
  Fn f = next.fn.load(std::memory_order_acquire);
  if (__builtin_expect(f != nullptr, 1)) return f;
  return Resolve(next);
}

__attribute__((always_inline)) inline bool Sampling() {
  return __builtin_expect(LockState().on.load(std::memory_order_relaxed), 0);
}

__attribute__((always_inline)) inline bool CondSampling() {
  return __builtin_expect(CondState().on.load(std::memory_order_relaxed), 0);
}

// A wait that ended with the lock, or at its timeout: counted.
__attribute__((always_inline)) inline bool Waited(int result) {
  return result == 0 || result == EOWNERDEAD || result == ETIMEDOUT;
}

// Resolves every next definition at load, on the loading thread, before the program's
// threads exist: the hooks' first calls then find them (and a nested call on a resolving
// thread is left to pathological loaders).
__attribute__((constructor)) void ResolveLockFunctions() {
  Resolve(g_mutex_lock, false);
  Resolve(g_mutex_trylock, false);
  Resolve(g_mutex_timedlock, false);
  Resolve(g_mutex_clocklock, false);
  Resolve(g_rwlock_rdlock, false);
  Resolve(g_rwlock_wrlock, false);
  Resolve(g_rwlock_tryrdlock, false);
  Resolve(g_rwlock_trywrlock, false);
  Resolve(g_rwlock_timedrdlock, false);
  Resolve(g_rwlock_timedwrlock, false);
  Resolve(g_rwlock_clockrdlock, false);
  Resolve(g_rwlock_clockwrlock, false);
  Resolve(g_spin_lock, false);
  Resolve(g_spin_trylock, false);
  Resolve(g_cond_wait, false);
  Resolve(g_cond_timedwait, false);
  Resolve(g_cond_clockwait, false);
}

}  // namespace
}  // namespace inprof::internal

using inprof::internal::CondSampling;
using inprof::internal::CondState;
using inprof::internal::CurrentTidRaw;
using inprof::internal::LockState;
using inprof::internal::LockSlowPath;
using inprof::internal::MonotonicNsRaw;
using inprof::internal::Next;
using inprof::internal::Sampling;
using inprof::internal::Waited;

#define INPROF_LOCK_HOOK extern "C" __attribute__((visibility("default"))) INPROF_PROFILER_TEXT

// Every other lock hook: the real function at once while sampling is off (a fast path that
// needs no stack frame, as for pthread_mutex_lock), and past it a function of its own (NAME_slow,
// in the hook text, so that the program's call is the first frame outside it): try, and on
// EBUSY time the real call. A function that is still null is a nested call on the thread
// resolving it (Resolve), which never happens with glibc; it gets EAGAIN rather than a jump to
// null. (A function rather than a template: the compiler leaves a template's instances, and
// their clones, out of the section.)
#define INPROF_DEFINE_LOCK_HOOK(name, next_lock, next_try, obj, params, args)                 \
  namespace inprof::internal {                                                                 \
  namespace {                                                                                  \
  INPROF_PROFILER_TEXT int name##_slow params {                                                \
    const auto lock = Next(next_lock);                                                         \
    if (__builtin_expect(lock == nullptr, 0)) return EAGAIN;                                   \
    if (!Sampling()) return lock args;                                                         \
    const auto trylock = Next(next_try);                                                       \
    const int tried = trylock != nullptr ? trylock(obj) : EBUSY;                               \
    if (tried != EBUSY) return tried;                                                          \
    const int64_t start = MonotonicNsRaw();                                                    \
    const int result = lock args;                                                              \
    if (Waited(result)) LockSlowPath(start, LockState());                                      \
    return result;                                                                             \
  }                                                                                            \
  }                                                                                            \
  }                                                                                            \
  INPROF_LOCK_HOOK int name params {                                                           \
    const auto lock = ::inprof::internal::next_lock.fn.load(std::memory_order_acquire);       \
    if (__builtin_expect(lock != nullptr, 1) && !Sampling()) return lock args;                \
    return ::inprof::internal::name##_slow args;                                               \
  }

// The most called of them, pthread_mutex_lock, does not try first: it reads the mutex's lock
// word (glibc's __data.__lock: 0 when the mutex is free, for every kind of mutex) and calls
// the real function once, timing it only when the word said "held" (priority-protect mutexes
// keep their ceiling in that word, and they and priority-inheritance ones take the try path
// of the other hooks). A try costs a second
// atomic read-modify-write on a free mutex (0.7 ns per lock/unlock pair here); a load of the
// line the lock is about to write costs next to nothing. A recursive or error-checking mutex
// the thread already holds is not a wait (its owner, __data.__owner, is the thread): not
// timed. What this misses: a wait for a lock taken by another thread between the load and the
// real call's own attempt, a window of a few instructions (a busy lock handed over every few
// ns loses some of its shortest waits; waits of microseconds are not affected). Every return
// code is the real function's, as it is called exactly once.
namespace inprof::internal {
namespace {

// Everything of pthread_mutex_lock past its fast path: a call still unresolved, and a held
// lock while sampling is on. Apart from the hook so that the hook's fast path (sampling off,
// or the lock word free) needs no stack frame: with the frame, every call pushed and popped
// the five registers this part uses. The hook tail-calls this where
// the compiler does (-O2), and calls it where it does not; either way the program's call
// is the first frame outside the runtime's hook text (HookCaller, and the collector's
// stripping, skip both).
INPROF_PROFILER_TEXT int MutexLockSlow(pthread_mutex_t* m) {
  const auto lock = Next(g_mutex_lock);
  if (__builtin_expect(lock == nullptr, 0)) {
    return __pthread_mutex_lock != nullptr ? __pthread_mutex_lock(m) : EAGAIN;
  }
  if (!Sampling()) return lock(m);
  if (__builtin_expect(__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0, 1)) return lock(m);
  const int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
  if (kind & (kMutexPrioInherit | kMutexPrioProtect)) {
    const auto trylock = Next(g_mutex_trylock);
    const int tried = trylock != nullptr ? trylock(m) : EBUSY;
    if (tried != EBUSY) return tried;
  } else if (((kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP || (kind & 3) == PTHREAD_MUTEX_ERRORCHECK_NP) &&
             __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == CurrentTidRaw()) {
    return lock(m);  // the kind in the low bits of __kind, the flags above them
  }
  const int64_t start = MonotonicNsRaw();
  const int result = lock(m);
  if (Waited(result)) LockSlowPath(start, LockState());
  return result;
}

}  // namespace
}  // namespace inprof::internal

INPROF_LOCK_HOOK int pthread_mutex_lock(pthread_mutex_t* m) {
  const auto lock = inprof::internal::g_mutex_lock.fn.load(std::memory_order_acquire);
  if (__builtin_expect(lock != nullptr, 1) &&
      (!Sampling() || __builtin_expect(__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0, 1))) {
    return lock(m);
  }
  return inprof::internal::MutexLockSlow(m);
}

INPROF_DEFINE_LOCK_HOOK(pthread_mutex_timedlock, g_mutex_timedlock, g_mutex_trylock, m,
                        (pthread_mutex_t* m, const struct timespec* t), (m, t))

INPROF_DEFINE_LOCK_HOOK(pthread_mutex_clocklock, g_mutex_clocklock, g_mutex_trylock, m,
                        (pthread_mutex_t* m, clockid_t c, const struct timespec* t), (m, c, t))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_rdlock, g_rwlock_rdlock, g_rwlock_tryrdlock, l,
                        (pthread_rwlock_t* l), (l))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_wrlock, g_rwlock_wrlock, g_rwlock_trywrlock, l,
                        (pthread_rwlock_t* l), (l))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_timedrdlock, g_rwlock_timedrdlock, g_rwlock_tryrdlock, l,
                        (pthread_rwlock_t* l, const struct timespec* t), (l, t))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_timedwrlock, g_rwlock_timedwrlock, g_rwlock_trywrlock, l,
                        (pthread_rwlock_t* l, const struct timespec* t), (l, t))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_clockrdlock, g_rwlock_clockrdlock, g_rwlock_tryrdlock, l,
                        (pthread_rwlock_t* l, clockid_t c, const struct timespec* t), (l, c, t))

INPROF_DEFINE_LOCK_HOOK(pthread_rwlock_clockwrlock, g_rwlock_clockwrlock, g_rwlock_trywrlock, l,
                        (pthread_rwlock_t* l, clockid_t c, const struct timespec* t), (l, c, t))

INPROF_DEFINE_LOCK_HOOK(pthread_spin_lock, g_spin_lock, g_spin_trylock, l,
                        (pthread_spinlock_t* l), (l))

// Condition waits: timed from the call to the return, the mutex's re-acquisition included. A
// wait counts when it returns 0 (woken, spurious wake-ups too) or ETIMEDOUT.
#define INPROF_COND_HOOK extern "C" __attribute__((visibility("default"))) INPROF_PROFILER_TEXT
#define INPROF_COND_BODY(next, wait_call)                                   \
  do {                                                                      \
    const auto wait = Next(::inprof::internal::next);                       \
    if (__builtin_expect(wait == nullptr, 0)) return EAGAIN;                \
    if (!CondSampling()) return wait_call;                                  \
    const int64_t start = MonotonicNsRaw();                                 \
    const int result = wait_call;                                           \
    if (result == 0 || result == ETIMEDOUT) LockSlowPath(start, CondState()); \
    return result;                                                          \
  } while (0)

__asm__(".symver inprof_cond_wait_hook, pthread_cond_wait@@" INPROF_COND_GLIBC_VERSION);
__asm__(".symver inprof_cond_timedwait_hook, pthread_cond_timedwait@@" INPROF_COND_GLIBC_VERSION);

INPROF_COND_HOOK int inprof_cond_wait_hook(pthread_cond_t* c, pthread_mutex_t* m) {
  INPROF_COND_BODY(g_cond_wait, wait(c, m));
}

INPROF_COND_HOOK int inprof_cond_timedwait_hook(pthread_cond_t* c, pthread_mutex_t* m,
                                                const struct timespec* t) {
  INPROF_COND_BODY(g_cond_timedwait, wait(c, m, t));
}

INPROF_COND_HOOK int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                            const struct timespec* t) {
  INPROF_COND_BODY(g_cond_clockwait, wait(c, m, clock, t));
}
