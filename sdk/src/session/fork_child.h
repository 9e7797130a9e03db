// The control side of a forked child's bootstrap sampler (signal/bootstrap.h): arming it
// inside fork(), and handing its stacks to the child's session when that starts.
#ifndef INPROF_SDK_FORK_CHILD_H_
#define INPROF_SDK_FORK_CHILD_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "config/config.h"
#include "inprof/status.h"
#include "inprof/unwind.h"
#include "signal/bootstrap.h"
#include "signal/sampler.h"

namespace inprof::internal {

// In the fork child handler: maps the table and arms a CPU-time timer at `frequency` for the
// calling thread, whose stack bounds are found in the parent's `sampler` (the slot whose
// stack holds the caller's); without one (the parent was itself a child whose session had
// not started) the parent's bootstrap bounds are kept, and its table is unmapped here.
// `copy_bytes`: the stack each of the first samples copies for the session's DWARF unwinder
// (BootstrapTable::kCopies; 0 with unwind=fp). Only system calls and stores.
// Async-signal-safe.
bool BootstrapArm(const Sampler* parent, int signal, double frequency, uint32_t max_depth,
                  uint32_t copy_bytes);
// At autostart, on the thread running the library's constructor (the main thread): the same
// sampler for that thread, which with `wake_watcher` wakes the exit watcher at its first
// sample (or its `wake_after_samples`-th) so the deferred session starts then. Not
// async-signal-safe (reads the thread's stack bounds).
bool BootstrapArmDeferred(int signal, double frequency, uint32_t max_depth, uint32_t copy_bytes,
                          bool wake_watcher, uint32_t wake_after_samples = 1);
// Before a dlclose: the walk stops using the parent's code ranges, which may cover the
// library about to be unmapped (frames are no longer checked against them, and a frameless
// leaf's caller is no longer recovered). Waits for a handler still walking.
void BootstrapForgetCode();
// Samples taken so far (0 when not armed). Async-signal-safe.
uint64_t BootstrapSamples();
// Stops sampling into the table and waits for a handler still inside it. Not
// async-signal-safe only in that it may yield.
void BootstrapDisarm();
// The same without waiting: stops sampling into the table and answers whether no handler is
// inside it. False when one is: it may be the handler this thread interrupted (an _exit from
// a signal handler), which will not finish before the caller does. Async-signal-safe.
bool BootstrapDisarmNoWait();
// After BootstrapDisarm: every stack (leaf first, as the walk left it), with its entry number
// (what BootstrapTimesForEach names), how its walk ended, the thread's label set and its
// weight; then the weight that found the table full.
struct BootstrapStack {
  uint32_t entry;
  std::span<const uintptr_t> frames;
  WalkStop stop;
  uint32_t labels;
  uint64_t weight;
};
void BootstrapForEach(const std::function<void(const BootstrapStack&)>& f);
// After BootstrapDisarm: the samples whose time was kept (CLOCK_MONOTONIC), in the order
// taken, with the entry they added to (BootstrapTable::kNoEntry: the overflow weight).
void BootstrapTimesForEach(
    const std::function<void(int64_t time_ns, uint32_t entry, uint32_t weight)>& f);
uint64_t BootstrapOverflowWeight();
// After BootstrapDisarm: the samples whose stack was copied too (BootstrapTable::Copy), in the
// order taken, with the copied bytes.
void BootstrapCopiesForEach(
    const std::function<void(const BootstrapTable::Copy& copy, const uint8_t* bytes)>& f);
struct BootstrapTotals {
  uint64_t samples = 0;
  uint64_t weight = 0;
};
BootstrapTotals BootstrapTotalsNow();
// Unmaps the table, or only forgets it when `process_ends` (the exit takes the mapping down).
// After BootstrapDisarm.
void BootstrapRelease(bool process_ends = false);
// A bootstrap stack as the session's tables keep it: return addresses minus one, the
// truncation marker when the walk hit the depth limit, the thread marker of `tid`, then the
// labels marker when the thread had labels.
void BootstrapStackForLookup(const BootstrapStack& stack, pid_t tid, std::vector<uintptr_t>* out);
// Writes the bootstrap table as the raw profile `outputs` ask for (every one a raw output),
// without a session: what a short process of a recording does at exit instead of starting a
// session only to write (docs/record.md); after BootstrapDisarm. Not `complete`: only the
// header, without its end line (the marker of a process that sampled; the exit write
// replaces it). Not async-signal-safe.
Status WriteBootstrapRaw(const Config& config, const std::vector<std::string>& outputs,
                         bool complete);

}  // namespace inprof::internal

#endif  // INPROF_SDK_FORK_CHILD_H_
