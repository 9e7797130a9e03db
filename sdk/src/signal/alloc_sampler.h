// Sampled allocations: what the allocation hooks (hooks/alloc_hooks.cpp) run on the
// allocating thread, and the table of sampled allocations still live.
//
// Sampling is by bytes, as Go, jemalloc and tcmalloc do it: each thread counts down a number
// of bytes drawn from an exponential distribution of mean R (Config::alloc_rate); every
// allocation subtracts its size, and the one that takes the countdown below zero is sampled,
// after which a new countdown is drawn. The exponential has no memory, so an allocation of s
// bytes is sampled with probability p = 1 - e^(-s/R) whatever came before it, and weighting
// the sample by 1/p objects and s/p bytes when it is recorded (Horvitz-Thompson) makes every
// total an unbiased estimate, also for a site that mixes 64 B and 1 MiB allocations (weighting
// a stack afterwards by its mean size would not be). An unsampled allocation costs one
// thread-local subtraction and a predicted branch.
//
// A sampled allocation is recorded like a signal's sample: its stack is walked (or copied for
// DWARF) on the allocating thread, from the hook's own frame, into the thread's ring; the
// collector strips the hook's frames (they are in the inprof_profiler_text section). No
// signal, no lock, no allocation: the hook may run inside any code that calls malloc,
// including a program's signal handler.
//
// Live table: every sampled allocation is entered (pointer, size, a tag) so that its free can
// take it out and a snapshot can tell what is still live (inuse_*). Open addressing with
// linear probing over fixed entries, lock-free: an entry is claimed by a compare-and-swap of
// its pointer word. Bounded (Config::alloc_live_max entries, mapped once per process and never
// freed, so a free on any thread can look at it at any time); an allocation that finds no
// room within kLiveProbes is counted (health) and stays out of inuse. A free first asks a
// 32 KiB counting filter keyed by the pointer's hash, so most frees of unsampled pointers
// read one byte.
//
// Concurrency: the hooks run on any thread at any time; a hook that touches the session's
// sampler counts itself in g_handlers_in_flight like a signal handler, so stopping waits for
// it. The collector attaches each drained sample's stack to its live entry (AttachStack) and
// snapshots the table (ForEachLive) under the session's lock. Signal-safe header.
#ifndef INPROF_SDK_ALLOC_SAMPLER_H_
#define INPROF_SDK_ALLOC_SAMPLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

struct Sampler;

inline constexpr uint32_t kNoLiveEntry = UINT32_MAX;

// What a sampled allocation's record carries besides its stack (SampleRecord, CopyRecord,
// SampleMeta). size 0: not an allocation.
struct AllocInfo {
  uint64_t size = 0;             // bytes the program asked for
  uint32_t entry = kNoLiveEntry;  // its entry in the live table, kNoLiveEntry when none
  uint32_t tag = 0;              // the entry's tag when it was entered
};

// The process's allocation sampling state. One per process (AllocState()).
struct AllocSampling {
  // On while a session samples allocations. The hooks read it first: off, they only forward.
  std::atomic<bool> on{false};
  // Changes with each session that turns sampling on: a thread whose countdown is from an
  // earlier one draws a new countdown (the rate or the seed may have changed).
  std::atomic<uint32_t> epoch{0};
  std::atomic<uint64_t> rate{512 * 1024};  // R: mean bytes between samples
  std::atomic<uint64_t> seed{0};           // 0: draw seeds from time and tid
  std::atomic<uint32_t> threads_seeded{0};  // threads that drew a seed (seeded runs)
  // The session's event index of alloc_objects (alloc_space is the next one).
  std::atomic<uint32_t> event{0};
  // Counters for the health block.
  std::atomic<uint64_t> sampled{0};     // allocations sampled and handed to a ring
  std::atomic<uint64_t> no_slot{0};     // sampled on a thread the session does not sample
  std::atomic<uint64_t> live_full{0};   // sampled but no room in the live table
  std::atomic<uint64_t> dropped{0};     // sampled but the ring was full or busy
  std::atomic<uint64_t> waits{0};       // times a hook waited for the collector to drain
  std::atomic<uint64_t> live_count{0};  // entries live now
  // The live table's counting filter (kLiveFilterSize counters, LiveFilterIndex): set when the
  // table is installed, before any entry can be live, and never changed.
  std::atomic<std::atomic<uint8_t>*> filter{nullptr};
  std::atomic<uint64_t> probes{0};      // probe allocations that reached a hook (ProbeHooks)
  // The runtime's own code (its mapped object): an allocation whose caller is in it is the
  // runtime's (its standard library's static initialisers, its own operator new), not the
  // program's, and is not sampled.
  std::atomic<uintptr_t> self_lo{0};
  std::atomic<uintptr_t> self_hi{0};
};
// The process's state, defined in alloc_sampler.cpp; read inline by every hook.
extern AllocSampling g_alloc_state;
inline AllocSampling& AllocState() { return g_alloc_state; }

// One live entry. ptr: 0 empty, kLiveTombstone freed, kLiveClaimed being filled.
struct LiveEntry {
  std::atomic<uintptr_t> ptr{0};
  std::atomic<uint64_t> size{0};
  std::atomic<uint32_t> tag{0};
  std::atomic<uint32_t> stack{0};  // the session's interned stack + 1; 0 until attached
};
inline constexpr uintptr_t kLiveTombstone = 1;
inline constexpr uintptr_t kLiveClaimed = 2;
inline constexpr uint32_t kLiveProbes = 32;

// The live table lives in memory the control path maps once (session.cpp) and never frees: a
// later session keeps the first size. LiveTableBytes: what `entries` (a power of two) need
// with the filter; InstallLiveTable publishes zeroed memory of that size.
size_t LiveTableBytes(uint32_t entries);
bool LiveTableInstalled();
void InstallLiveTable(void* memory, uint32_t entries);
// Empties the live table and its filter (a new session, or a forked child's own). Only while
// no hook can enter an entry (sampling off). Not async-signal-safe.
void ClearLiveTable();
uint32_t LiveTableCapacity();
// The entry at `index`, for the collector. Async-signal-safe.
LiveEntry* LiveAt(uint32_t index);

// The draw of the next countdown: exponential with mean `rate` from the thread's generator.
// Exposed for the estimator's tests. Async-signal-safe.
uint64_t DrawAllocCountdown(uint64_t* state, uint64_t rate);
// -ln(u) for u in (0, 1], without libm (the hooks must not call into other libraries).
double NegLog(double u);

// The slow path of a hook: the countdown crossed zero (or this thread's countdown is from
// an earlier epoch). Decides, and records the allocation at `ptr` of `size` bytes when it is
// sampled, with the stack from the calling hook's frame up (the hook must be in the
// inprof_profiler_text section: the collector strips it). Async-signal-safe.
void AllocSlowPath(void* ptr, size_t size);
// A free (or the old pointer of a realloc) of `ptr` while live entries exist: takes it out of
// the live table if it is there. Async-signal-safe.
void AllocForget(void* ptr);

// Whether the program's calls to malloc reach the hooks (something loaded before the
// runtime may define malloc: a sanitizer's runtime, an allocator linked into the executable):
// with sampling on, allocates and frees one block through `malloc_fn`/`free_fn` (what the
// program's calls resolve to) with this thread's countdown crossed, and sees whether the
// slow path ran. Not async-signal-safe.
bool ProbeHooks(void* (*malloc_fn)(size_t), void (*free_fn)(void*));

// Thread-local countdown of the hooks' fast path: bytes until the next sample.
extern __thread int64_t t_alloc_left __attribute__((tls_model("initial-exec")));

// The hook's fast path for an allocation of `size` bytes at `ptr` (non-null). Inline: a
// relaxed load, a thread-local subtraction and a predicted branch.
#define INPROF_ALLOC_NOTE(ptr, size)                                                          \
  do {                                                                                        \
    if (__builtin_expect(::inprof::internal::AllocState().on.load(std::memory_order_relaxed), \
                         0)) {                                                                \
      const int64_t inprof_left_ =                                                            \
          ::inprof::internal::t_alloc_left - static_cast<int64_t>(size);                      \
      ::inprof::internal::t_alloc_left = inprof_left_;                                        \
      if (__builtin_expect(inprof_left_ < 0, 0)) {                                            \
        ::inprof::internal::AllocSlowPath((ptr), (size));                                     \
      }                                                                                       \
    }                                                                                         \
  } while (0)

// The live table's filter: a counter per 16-byte granule of the address (modulo 512 KiB),
// counting live entries; a free whose counter is 0 was never sampled. It runs on every free
// while anything sampled is live, so it must stay in cache: the address itself, not a hash,
// keeps blocks freed near each other on the same lines of the filter (a mixing hash made
// the load miss and cost sqlite3 3 % of its time in frees; malloc's 16-byte alignment keeps
// two live blocks off one counter but for blocks 512 KiB apart).
inline constexpr uint32_t kLiveFilterBits = 15;
inline constexpr uint32_t kLiveFilterSize = 1u << kLiveFilterBits;
inline uint32_t LiveFilterIndex(uintptr_t ptr) {
  return static_cast<uint32_t>(ptr >> 4) & (kLiveFilterSize - 1);
}

// The hook's fast path for a free of `ptr` (non-null), before the real free: while anything
// sampled is live, one read of the filter.
inline void AllocNoteFree(void* ptr) {
  if (__builtin_expect(AllocState().live_count.load(std::memory_order_relaxed) != 0, 0)) {
    const std::atomic<uint8_t>* filter = AllocState().filter.load(std::memory_order_relaxed);
    if (filter != nullptr &&
        filter[LiveFilterIndex(reinterpret_cast<uintptr_t>(ptr))].load(
            std::memory_order_relaxed) != 0) {
      AllocForget(ptr);
    }
  }
}

}  // namespace inprof::internal

#endif  // INPROF_SDK_ALLOC_SAMPLER_H_
