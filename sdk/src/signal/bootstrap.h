// A forked child's sampler until its session starts, and an autostarted process's until its
// first sample (docs/lifecycle.md).
//
// Nothing that is not async-signal-safe may run inside fork() in the child of a
// multithreaded process, and a child that exits before it takes a sample should cost next to
// nothing. So the fork child handler starts no session: it maps a fixed table, arms one CPU
// timer for the child's thread with raw system calls, and the sampling handler walks that
// thread's frame pointers into the table. The child's real session (collector thread, module
// map, symbolizer, engines for every thread) starts at its first safe point: an exit path, a
// new thread, a dlclose or an API call, on a normal thread; the table's stacks are imported
// into it then. A child that took no sample when it ends writes nothing.
//
// Concurrency contract: one writer, the handler on the bootstrap thread (the handler never
// nests on a thread: the signal is blocked while it runs). The control path reads the table
// only after Deactivate, which waits until no handler is inside it. Signal-safe header.
#ifndef INPROF_SDK_BOOTSTRAP_H_
#define INPROF_SDK_BOOTSTRAP_H_

#include <ucontext.h>

#include <atomic>
#include <cstdint>

#include "inprof/unwind.h"

namespace inprof::internal {

// sigev_value of the bootstrap timer and of the exit watchdog (exit_paths.cpp): tags that
// TimerToken never produces.
inline constexpr uint64_t kBootstrapTimerToken = uint64_t{0x1FA} << 52;
inline constexpr uint64_t kExitWatchdogToken = uint64_t{0x1FB} << 52;

// What the exit paths print when the exit-time write did not finish in time (the watchdog in
// the handler, the wait for the watcher thread in exit_paths.cpp).
inline constexpr char kExitWriteTimedOut[] =
    "inprof: the profile was not written: the exit-time write did not finish within "
    "INPROF_EXIT_TIMEOUT\n";

struct BootstrapTable {
  static constexpr uint32_t kEntries = 1u << 14;     // distinct stacks (a power of two)
  static constexpr uint32_t kFrames = 1u << 19;      // 4 MiB of frames
  static constexpr uint32_t kMaxDepth = 128;
  static constexpr uint32_t kTimes = 1u << 14;       // samples whose time is kept
  static constexpr uint32_t kNoEntry = UINT32_MAX;   // a timed sample charged to overflow
  // The first kCopies samples also keep a copy of the stack (when the session unwinds with
  // DWARF), at most kCopyBytes of it: the session unwinds them as it unwinds its own copies,
  // so they reach the same root frames (_start, __libc_start_main) as every later sample,
  // where a frame-pointer walk stops at the first caller without frame pointers (main's,
  // in a C library built without them). Untouched pages cost nothing; 32 covers the samples
  // a deferred start takes before its session runs on a loaded machine (docs/lifecycle.md).
  static constexpr uint32_t kCopies = 32;
  static constexpr uint32_t kCopyBytes = 1u << 16;
  struct Entry {
    uint64_t hash;
    uint64_t weight;
    uint32_t offset;
    uint32_t labels;  // the thread's label set (labels.h): stacks with other labels stay apart
    uint16_t length;
    uint8_t stop;  // WalkStop
    uint8_t used;
  };
  // One sample's time (CLOCK_MONOTONIC) and the entry it added `weight` to.
  struct Timed {
    int64_t time_ns;
    uint32_t entry;
    uint32_t weight;
  };
  // One sample whose stack was copied. Its fp walk was added to `entry` as every sample's is:
  // the session moves the sample's weight (and its time) to the unwound stack when it can
  // unwind it, and leaves it on the fp walk when it cannot.
  struct Copy {
    uint32_t entry;       // kNoEntry: the overflow weight
    uint32_t time_index;  // index in times[], kNoEntry when the time was not kept
    uint32_t weight;
    uint32_t labels;
    int64_t time_ns;
    StackCopy copy;
  };
  Entry entries[kEntries];
  // The entries in use, in the order they were first used: readers visit these instead of
  // scanning the 512 KiB of entries, whose untouched pages would each be a page fault
  // (128 of them, about 2 ms of a sampled child's exit on a VM).
  uint32_t order[kEntries];
  Timed times[kTimes];
  Copy copies[kCopies];
  uint32_t copies_used;
  uint32_t times_used;
  uint32_t frames_used;
  uint32_t entries_used;
  uint64_t samples;
  uint64_t weight;
  uint64_t overflow_weight;  // samples that found the table full
  uintptr_t frames[kFrames];
  alignas(64) uint8_t copy_bytes[kCopies][kCopyBytes];
};

struct Bootstrap {
  BootstrapTable* table = nullptr;  // mapped by the fork child handler
  StackBounds bounds;               // the bootstrap thread's stack, from the parent's session
  // The parent's (immutable in the child); null from the child's first dlclose on, since
  // the walk would read code bytes in ranges that may be unmapped.
  std::atomic<const CodeRanges*> code{nullptr};
  uint32_t max_depth = BootstrapTable::kMaxDepth;
  // Bytes of stack copied per sample (at most kCopyBytes); 0: no copies (unwind=fp).
  uint32_t copy_bytes = 0;
  int32_t tid = 0;
  int timer = -1;  // kernel timer id
  // When the child began (the fork): its session's times start here, not at its start.
  int64_t start_realtime_ns = 0;
  int64_t start_monotonic_ns = 0;
  int64_t start_cpu_ns = 0;  // CLOCK_PROCESS_CPUTIME_ID
  std::atomic<bool> active{false};
  std::atomic<int> busy{0};  // handlers inside the table
  // The table's sample count, kept here as well: a process that took no sample asks at its
  // exit, and the table's own counter sits on a page that nothing has touched then (a page
  // fault to read it).
  std::atomic<uint64_t> samples{0};
  // A process whose session was deferred to its first sample (autostart): the handler posts
  // kWatcherStartSession after that sample, and the exit watcher thread starts the session.
  // False: no one to wake (a forked child: its safe points start it).
  bool wake_watcher = false;
  uint32_t wake_after = 1;          // the sample whose arrival posts kWatcherStartSession
  bool whole_first_period = false;  // INPROF_TEST_WHOLE_FIRST_PERIOD (tests only)
};

// What the exit watcher thread (exit_paths.cpp) is asked to do, as bits of one futex word:
// a signal handler or an exiting thread sets its bit and wakes the watcher (FUTEX_WAKE), which
// takes every bit set at once and acts on them in this order. A word in the runtime's memory
// and not a pipe: the program owns every fd number and may close or reuse any of them
// (closefrom, close_range, dup2, a shell's exec 3<), and a byte written to a number it took
// over would land in its file (docs/lifecycle.md "File descriptors").
enum WatcherRequest : uint32_t {
  // The first sample of a deferred session that starts at a later one (wake_after > 1): the
  // watcher writes the process's started marker (a raw output's header).
  kWatcherMark = 1u << 0,
  // The sample that starts a deferred session (autostart): the watcher starts it.
  kWatcherStartSession = 1u << 1,
  // An _exit on another thread asks the watcher to write the profile.
  kWatcherExit = 1u << 2,
  // SIGTERM or SIGINT was taken (which one: exit_paths.cpp's pending termination).
  kWatcherTerminate = 1u << 3,
};
extern std::atomic<uint32_t> g_watcher_requests;
static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "a futex word is 32 bits");
// Sets `request` and wakes the watcher (one raw FUTEX_WAKE; a request already pending only
// adds its bit). Async-signal-safe.
void PostWatcherRequest(uint32_t request);

extern Bootstrap g_bootstrap;

// The handler's part: one sample of the bootstrap thread, weight periods. Async-signal-safe.
void BootstrapSample(const ucontext_t* context, uint32_t weight);


}  // namespace inprof::internal

#endif  // INPROF_SDK_BOOTSTRAP_H_
