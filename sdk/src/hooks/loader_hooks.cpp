// dl_iterate_phdr interposition, for fork. The C library (2.36 here) does not reset the lock
// dl_iterate_phdr holds when it forks: a child forked while any other thread was inside
// dl_iterate_phdr inherits it held and hangs in its first dl_iterate_phdr (measured: 39 of
// 40 children of a process with one thread iterating in a loop). inprof's collector calls it
// at every drain, its symbolizer and unwinder when modules change, and a forked child's
// session starts by calling it. So every call takes a fork guard shared, and fork takes it
// exclusively in its prepare handler: a fork waits for the calls in flight (microseconds) and
// none starts until the fork is done. Control path.
//
// The guard prefers the writer. With the C library's default (readers first), a thread that
// iterates in a loop can keep the count of readers from ever reaching zero, and the fork's
// bounded wait then ran out and the fork went ahead unguarded: one hung child in 200 forks
// under load. Preferring the writer would make a nested call (a callback that iterates again)
// wait for a fork that waits for its own outer call, so only a thread's outermost call takes
// the guard; its nested calls are covered by it. A fork from inside a callback does not wait
// for itself: it goes ahead unguarded at once. The C library serialises the calls' callbacks
// under one lock of its own anyway, so no concurrency is lost.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "api/runtime.h"

namespace {

using IterateFn = int (*)(int (*)(struct dl_phdr_info*, size_t, void*), void*);

pthread_rwlock_t g_fork_guard = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
// Whether this thread's fork took the guard. Per thread: several threads fork at once, and
// one's flag must not decide whether another releases the guard.
thread_local bool t_fork_guard_held = false;
// How deep this thread is in dl_iterate_phdr calls (1 inside the outermost call's callback).
// initial-exec: a sanitizer's runtime calls dl_iterate_phdr while it starts, and its
// interceptor of __tls_get_addr (the other TLS models' way in) is not ready yet.
__thread int t_iterate_depth __attribute__((tls_model("initial-exec"))) = 0;

IterateFn Next() {
  static IterateFn next = reinterpret_cast<IterateFn>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  return next;
}

__attribute__((hot)) void BeforeFork() {
  // A fork that did not come through fork() (the C library's daemon()): the guard below
  // would keep a profile start under way from finishing.
  inprof::internal::WaitForStartBeforeFork();
  // Forking from inside a callback: this thread holds the guard shared, and waiting for the
  // other readers to leave would wait for itself. Nor is there a need: the C library's own
  // lock, held by this thread, keeps every other thread out of the module list.
  if (t_iterate_depth > 0) {
    t_fork_guard_held = false;
    return;
  }
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_nsec += 200 * 1000000;  // 200 ms
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000;
  }
  t_fork_guard_held = pthread_rwlock_timedwrlock(&g_fork_guard, &deadline) == 0;
}

__attribute__((hot)) void AfterForkInParent() {
  if (t_fork_guard_held) pthread_rwlock_unlock(&g_fork_guard);
  t_fork_guard_held = false;
}

__attribute__((hot)) void AfterForkInChild() {
  // The parent's readers and writers do not exist here: a fresh guard (stores only).
  std::memset(&g_fork_guard, 0, sizeof g_fork_guard);
  g_fork_guard = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
  t_fork_guard_held = false;
  // Forked from inside a callback: the child goes on in it, and its outermost call releases
  // the guard when it returns.
  if (t_iterate_depth > 0) pthread_rwlock_rdlock(&g_fork_guard);
}

__attribute__((constructor)) void RegisterForkGuard() {
  Next();  // resolved now, not inside a fork
  pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild);
}

}  // namespace

// Not instrumented in sanitizer builds: the AddressSanitizer's runtime calls dl_iterate_phdr
// while it starts, before its shadow memory exists. The guard is released also when a C++
// exception (or a thread's cancellation) leaves the callback.
extern "C" __attribute__((visibility("default"), no_sanitize("address", "undefined"))) int
dl_iterate_phdr(int (*callback)(struct dl_phdr_info*, size_t, void*), void* data) {
  IterateFn next = Next();
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // Only a thread's outermost call takes the guard: its nested calls are covered by it.
  const bool guarded = t_iterate_depth++ == 0 && pthread_rwlock_rdlock(&g_fork_guard) == 0;
  int result;
  try {
    result = next(callback, data);
  } catch (...) {
    --t_iterate_depth;
    if (guarded) pthread_rwlock_unlock(&g_fork_guard);
    throw;
  }
  --t_iterate_depth;
  if (guarded) pthread_rwlock_unlock(&g_fork_guard);
  return result;
}
