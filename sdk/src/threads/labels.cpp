// Labels (labels.h): the process-wide table of label sets and each thread's moves between
// them. Control path: runs on the program's threads, inside inprof_label_set and friends.
#include "threads/labels.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <new>
#include <string_view>
#include <unordered_map>

#include "inprof/profile.h"
#include "inprof/thread_annotations.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {
namespace {

// The table of sets: ids are 1 + index into `sets`, never reused, never freed (a set's strings
// stay where they are, so a thread's cache can point at them).
struct LabelTable {
  Mutex mu;
  std::deque<std::vector<Label>> sets GUARDED_BY(mu);
  std::unordered_map<std::string, uint32_t> ids GUARDED_BY(mu);  // canonical text of a set -> id
  size_t bytes GUARDED_BY(mu) = 0;
  uint64_t overflows GUARDED_BY(mu) = 0;
  std::atomic<uint32_t> count{0};  // sets.size(), readable without the lock
  // In a forked child whose fork could not take the lock (see ForkPrepare): the table may
  // have been mid-update, so it is read no more and nothing is added (new sets overflow).
  bool torn GUARDED_BY(mu) = false;
};

LabelTable& Table();

// A fork while another thread interns a set would leave the child's copy of the lock held
// forever, so fork takes the table's lock first (it is held for microseconds). Not with a
// blocking lock(): a fork from a signal handler that interrupted this very thread inside
// Intern would wait for itself for ever. So the prepare handler tries for at most
// kForkLockWaitNs; when it gives up, the child re-creates the lock and marks its copy of the
// table torn (its labels go to [overflow], counted), and the parent carries on untouched.
// The thread that took the lock is remembered by pthread_self(), which is the same in the
// child, so the parent and child handlers release only a lock their own prepare took.
constexpr int64_t kForkLockWaitNs = 50'000'000;
std::atomic<pthread_t> g_fork_lock_holder{0};
static_assert(std::atomic<pthread_t>::is_always_lock_free);

// The fork handlers take mu in one function and release it in another: outside what the
// analysis follows.
void ForkPrepare() NO_THREAD_SAFETY_ANALYSIS {
  LabelTable& t = Table();
  const int64_t deadline = ClockNsRaw(CLOCK_MONOTONIC) + kForkLockWaitNs;
  while (!t.mu.TryLock()) {
    if (ClockNsRaw(CLOCK_MONOTONIC) >= deadline) return;
    sched_yield();
  }
  g_fork_lock_holder.store(pthread_self(), std::memory_order_relaxed);
}

void ForkParent() NO_THREAD_SAFETY_ANALYSIS {
  if (g_fork_lock_holder.load(std::memory_order_relaxed) != pthread_self()) return;
  g_fork_lock_holder.store(0, std::memory_order_relaxed);
  Table().mu.Unlock();
}

void ForkChild() NO_THREAD_SAFETY_ANALYSIS {
  LabelTable& t = Table();
  if (g_fork_lock_holder.load(std::memory_order_relaxed) == pthread_self()) {
    g_fork_lock_holder.store(0, std::memory_order_relaxed);
    t.mu.Unlock();
    return;
  }
  new (&t.mu) Mutex();  // the holder does not exist here, or is this thread, interrupted
  t.torn = true;
}

LabelTable& Table() {
  // Never destroyed: threads may set labels while the process exits.
  // No lock while the table is made: no other thread can see it yet.
  static LabelTable* table = []() NO_THREAD_SAFETY_ANALYSIS {
    auto* t = new LabelTable;
    t->sets.push_back({Label{"[overflow]", "label sets"}});  // kOverflowLabelSet
    t->count.store(1, std::memory_order_release);
    pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
    return t;
  }();
  return *table;
}

// One move a thread made: from set `from`, `key` set to `value` (nullptr: removed) led to
// `to`. `key` and `value` are the caller's pointers (the cache's index); `stored_key` and
// `stored_value` point at the strings of set `to`, so a hit checks the caller's text against
// them: a buffer reused for another value misses rather than mislabels.
struct Move {
  uint32_t from = 0;
  uint32_t to = 0;
  const char* key = nullptr;
  const char* value = nullptr;
  const char* stored_key = nullptr;
  const char* stored_value = nullptr;
};
constexpr size_t kCacheSize = 16;
thread_local Move t_moves[kCacheSize];

size_t CacheSlot(uint32_t from, const char* key, const char* value) {
  uint64_t h = (reinterpret_cast<uintptr_t>(key) >> 3) ^ (reinterpret_cast<uintptr_t>(value) >> 1) ^
               (uint64_t{from} * 0x9E3779B97F4A7C15ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return (h >> 32) & (kCacheSize - 1);
}

Status ValidKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxLabelKey) {
    return Status::InvalidArgument("a label key must have 1 to " + std::to_string(kMaxLabelKey) +
                                   " bytes");
  }
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = (c >= '0' && c <= '9') || c == '.';
    if (!(letter || (i > 0 && digit))) {
      return Status::InvalidArgument(
          "label key '" + std::string(key.substr(0, 64)) +
          "': use letters, digits, '_' and '.', starting with a letter or '_'");
    }
  }
  return Status::Ok();
}

Status ValidValue(std::string_view key, std::string_view value) {
  if (value.empty() || value.size() > kMaxLabelValue) {
    return Status::InvalidArgument("label '" + std::string(key) + "': a value must have 1 to " +
                                   std::to_string(kMaxLabelValue) +
                                   " bytes (inprof_label_clear removes a label)");
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("label '" + std::string(key) +
                                     "': control characters are not allowed in a value");
    }
  }
  return Status::Ok();
}

// The set `from` with `key` set to `value` (or removed), interned. Takes the table's lock.
uint32_t Intern(uint32_t from, std::string_view key, const char* value) {
  LabelTable& t = Table();
  MutexLock lock(&t.mu);
  // A thread in the overflow set no longer knows its labels: it stays there until it clears
  // them all or restores a saved set.
  if (from == kOverflowLabelSet || t.torn) {
    ++t.overflows;
    return kOverflowLabelSet;
  }
  std::vector<Label> labels;
  if (from != 0 && from <= t.sets.size()) labels = t.sets[from - 1];
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const Label& l, std::string_view k) { return l.key < k; });
  const bool present = it != labels.end() && it->key == key;
  if (value == nullptr) {
    if (!present) return from;
    labels.erase(it);
  } else if (present) {
    it->value = value;
  } else {
    if (labels.size() >= kMaxLabelsPerSet) {
      ++t.overflows;
      return kOverflowLabelSet;
    }
    labels.insert(it, Label{std::string(key), value});
  }
  if (labels.empty()) return 0;
  std::string text;
  for (const Label& l : labels) {
    text += l.key;
    text += '\0';
    text += l.value;
    text += '\0';
  }
  if (auto found = t.ids.find(text); found != t.ids.end()) return found->second;
  if (t.sets.size() > kMaxLabelSets || t.bytes + text.size() > kMaxLabelBytes) {
    ++t.overflows;
    return kOverflowLabelSet;
  }
  t.sets.push_back(std::move(labels));
  const auto id = static_cast<uint32_t>(t.sets.size());
  t.count.store(id, std::memory_order_release);
  t.bytes += text.size();
  t.ids.emplace(std::move(text), id);
  return id;
}

// Pointers to set `id`'s key and value strings for `key` (value nullptr when absent).
void StoredStrings(uint32_t id, std::string_view key, const char** stored_key,
                   const char** stored_value) {
  *stored_key = nullptr;
  *stored_value = nullptr;
  if (id == 0) return;
  LabelTable& t = Table();
  MutexLock lock(&t.mu);
  if (t.torn) return;
  for (const Label& l : t.sets[id - 1]) {
    if (l.key == key) {
      *stored_key = l.key.c_str();
      *stored_value = l.value.c_str();
      return;
    }
  }
}

}  // namespace

Status SetThreadLabel(const char* key, const char* value) {
  const uint32_t from = ThreadLabelSet();
  Move& m = t_moves[CacheSlot(from, key, value)];
  if (m.from == from && m.key == key && m.value == value && m.stored_key != nullptr &&
      std::strcmp(key, m.stored_key) == 0 &&
      (value == nullptr ? m.stored_value == nullptr
                        : m.stored_value != nullptr && std::strcmp(value, m.stored_value) == 0)) {
    SetThreadLabelSet(m.to);
    return Status::Ok();
  }
  if (key == nullptr) {
    return Status::InvalidArgument("a label key must not be NULL");
  }
  const std::string_view k(key);
  if (Status s = ValidKey(k); !s.ok()) return s;
  if (value != nullptr) {
    if (Status s = ValidValue(k, value); !s.ok()) return s;
  }
  const uint32_t to = Intern(from, k, value);
  SetThreadLabelSet(to);
  if (to == kOverflowLabelSet) {
    return Status::Unavailable("too many labels: at most " + std::to_string(kMaxLabelsPerSet) +
                               " per thread, " + std::to_string(kMaxLabelSets) +
                               " distinct sets in the process; this thread's samples are " +
                               "labelled [overflow] until its labels are cleared");
  }
  // Remember the move. A removal caches only when the key was there: the stored key of the
  // source set would be needed otherwise, and removing an absent key is rare.
  const char* stored_key = nullptr;
  const char* stored_value = nullptr;
  if (value != nullptr) {
    StoredStrings(to, k, &stored_key, &stored_value);
  } else if (from != 0) {
    const char* ignored = nullptr;
    StoredStrings(from, k, &stored_key, &ignored);
  }
  if (stored_key != nullptr) m = Move{from, to, key, value, stored_key, stored_value};
  return Status::Ok();
}

void ClearThreadLabels() { SetThreadLabelSet(0); }

uint32_t CurrentThreadLabels() { return ThreadLabelSet(); }

bool RestoreThreadLabels(uint32_t id) {
  // Without the lock: a scope guard restores on every request.
  if (id > Table().count.load(std::memory_order_acquire)) return false;
  SetThreadLabelSet(id);
  return true;
}

std::vector<Label> LabelSetOf(uint32_t id) {
  if (id == 0) return {};
  LabelTable& t = Table();
  MutexLock lock(&t.mu);
  if (t.torn || id > t.sets.size()) return {};
  return t.sets[id - 1];
}

LabelStats LabelStatsNow() {
  LabelTable& t = Table();
  MutexLock lock(&t.mu);
  if (t.torn) return LabelStats{t.count.load(std::memory_order_relaxed) - 1, t.overflows};
  return LabelStats{t.sets.size() - 1, t.overflows};
}

}  // namespace inprof::internal
