// dl_iterate_phdr interposition, for fork. The C library (2.36 here) does not reset the lock
// dl_iterate_phdr holds when it forks: a child forked while any other thread was inside
// dl_iterate_phdr inherits it held and hangs in its first dl_iterate_phdr (measured: 39 of
// 40 children of a process with one thread iterating in a loop). inprof's collector calls it
// at every drain, its symbolizer and unwinder when modules change, and a forked child's
// session starts by calling it. So every call takes a fork guard shared, and fork takes it
// exclusively in its prepare handler: a fork waits for the calls in flight (microseconds) and
// none starts until the fork is done. Nested calls (a callback that iterates again) still
// succeed while a fork waits: the guard prefers readers. Control path.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "api/runtime.h"

namespace {

using IterateFn = int (*)(int (*)(struct dl_phdr_info*, size_t, void*), void*);

pthread_rwlock_t g_fork_guard = PTHREAD_RWLOCK_INITIALIZER;
// Whether this thread's fork took the guard (a call that forks from inside its own callback
// would make it wait forever: it gives up after a bound and the fork goes ahead unguarded).
// Per thread: several threads fork at once, and one's flag must not decide whether another
// releases the guard.
thread_local bool t_fork_guard_held = false;

IterateFn Next() {
  static IterateFn next = reinterpret_cast<IterateFn>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  return next;
}

__attribute__((hot)) void BeforeFork() {
  // A fork that did not come through fork() (the C library's daemon()): the guard below
  // would keep a profile start under way from finishing.
  inprof::internal::WaitForStartBeforeFork();
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
  g_fork_guard = PTHREAD_RWLOCK_INITIALIZER;
  t_fork_guard_held = false;
}

__attribute__((constructor)) void RegisterForkGuard() {
  Next();  // resolved now, not inside a fork
  pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int dl_iterate_phdr(
    int (*callback)(struct dl_phdr_info*, size_t, void*), void* data) {
  IterateFn next = Next();
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const bool guarded = pthread_rwlock_rdlock(&g_fork_guard) == 0;
  const int result = next(callback, data);
  if (guarded) pthread_rwlock_unlock(&g_fork_guard);
  return result;
}
