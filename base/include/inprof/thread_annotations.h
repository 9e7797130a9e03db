// Lock contracts the compiler checks: clang's thread-safety attributes, and the mutex types
// that carry them. libstdc++'s std::mutex has no capability attributes, so code that wants
// its locking checked uses inprof::Mutex / MutexLock / CondVar / SharedMutex instead.
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_);          // read or written only with mu_ held
//   void BumpLocked() REQUIRES(mu_);     // the caller holds mu_
//   void Bump() EXCLUDES(mu_) { MutexLock lock(&mu_); BumpLocked(); }
//
// `clang++ -Wthread-safety` (scripts/test, the thread-safety lane) reports every access or call
// that breaks a contract. Other compilers see empty macros and the same inline wrappers, so
// the types cost nothing over the std ones and GCC builds are unchanged.
//
// Thread-safety: the types are mutexes; none is async-signal-safe (the signal path takes no
// lock at all).
#ifndef INPROF_THREAD_ANNOTATIONS_H_
#define INPROF_THREAD_ANNOTATIONS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define INPROF_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define INPROF_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) INPROF_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY INPROF_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) INPROF_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) INPROF_THREAD_ANNOTATION_(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) INPROF_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) INPROF_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define REQUIRES(...) INPROF_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) INPROF_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) INPROF_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) INPROF_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) INPROF_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) INPROF_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) INPROF_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) INPROF_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) INPROF_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) INPROF_THREAD_ANNOTATION_(assert_capability(x))
#define RETURN_CAPABILITY(x) INPROF_THREAD_ANNOTATION_(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS INPROF_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace inprof {

class CondVar;

// std::mutex with the capability attributes.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex where it cannot see it (a lock taken
  // through another name for the same mutex). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard), or until Unlock; Lock takes it again.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* mu_;
  bool held_ = true;
};

// std::condition_variable for a Mutex. Every wait requires the mutex held and returns with it
// held, as std::condition_variable::wait does with a unique_lock. Waits take no predicate:
// callers loop (`while (!ready_) cv_.Wait(&mu_);`) so the analysis sees the guarded reads
// under the lock.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False when the time ran out.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// std::shared_mutex with the capability attributes: exclusive (Lock) or shared (LockShared).
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope (std::unique_lock), or until Unlock.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }

 private:
  SharedMutex* mu_;
  bool held_ = true;
};

// Holds a SharedMutex shared for its scope (std::shared_lock), or until Unlock.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderMutexLock() RELEASE() {
    if (held_) mu_->UnlockShared();
  }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->UnlockShared();
    held_ = false;
  }

 private:
  SharedMutex* mu_;
  bool held_ = true;
};

}  // namespace inprof

#endif  // INPROF_THREAD_ANNOTATIONS_H_
