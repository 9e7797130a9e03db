// Resetting state in a forked child without writing what is already right. fork() shares
// every page with the child copy-on-write, and a text page the child runs is not even mapped
// in it until touched: each page the child writes, and each the parent writes again after
// the fork, is a page fault (about 16 us each on a virtual machine that traps them). The
// runtime's fork handlers run in every child of every process it is loaded into, mostly in
// state that is already idle: they read first and write only what differs, so an idle
// runtime adds no written page to a fork. Stores and loads only: async-signal-safe.
#ifndef INPROF_SDK_FORK_RESET_H_
#define INPROF_SDK_FORK_RESET_H_

#include <atomic>
#include <cstring>
#include <new>

namespace inprof::internal {

// a = value, unless it already holds it.
template <typename T, typename V>
inline void ResetInChild(std::atomic<T>& a, V value,
                         std::memory_order order = std::memory_order_release) {
  const T v = static_cast<T>(value);
  if (a.load(std::memory_order_relaxed) != v) a.store(v, order);
}

// *object made anew (a lock the parent's threads may have held), unless its bytes are
// already those of a new one. For types whose new state is a constant pattern of bytes
// (the pthread-based locks).
template <typename M>
inline void RemakeInChild(M* object) {
  alignas(M) unsigned char fresh[sizeof(M)];
  std::memset(fresh, 0, sizeof fresh);
  new (fresh) M();
  if (std::memcmp(fresh, static_cast<const void*>(object), sizeof(M)) != 0) new (object) M();
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_FORK_RESET_H_
