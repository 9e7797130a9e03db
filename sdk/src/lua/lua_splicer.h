// The LuaJIT splicer: Lua stacks from LuaJIT's profiler turned into frames the stack table
// can hold, and (mixed mode) native samples of the VM's thread joined with the Lua stack
// that was running at the VM boundary.
//
// Lua frames are not addresses: each distinct (function, file, line) is interned as
// kLuaFrameMarker | index into frames_, which the profile builder resolves with FrameOf.
//
// Concurrency contract: everything but FrameOf runs under the session's data_mu_ (its lua_
// member is GUARDED_BY it), on the VM's thread (stacks at safe points, never in a signal
// handler) or the collector thread (native samples). FrameOf may run on any thread,
// concurrently: it takes frames_mu_. Not async-signal-safe.
#ifndef INPROF_SDK_LUA_SPLICER_H_
#define INPROF_SDK_LUA_SPLICER_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collector/stack_buffer.h"
#include "inprof/profile.h"
#include "inprof/thread_annotations.h"
#include "signal/sampler.h"

namespace inprof::internal {

class LuaSplicer {
 public:
  // Where a finished stack goes: leaf first, thread marker included.
  using Sink = std::function<void(std::span<const uintptr_t> stack, const SampleMeta& meta)>;

  // The VM runs on `tid`; its own frames are in `vm_ranges` (the LuaJIT library). `event`
  // is the session's lua event (-1: none).
  void Attach(pid_t tid, std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges, bool mixed,
              int event);
  void Detach();
  pid_t tid() const { return tid_; }
  bool mixed() const { return mixed_; }
  int event() const { return event_; }
  // Whether native samples of `tid` go through Defer first (mixed mode, the VM's thread).
  bool Splices(pid_t tid) const { return mixed_ && tid == tid_ && tid > 0; }

  // A stack from luaJIT_profile_dumpstack (root first), as interned frames, leaf first.
  std::span<const uintptr_t> Parse(std::string_view dump);
  // The frame for a VM state ('N', 'I', 'C', 'G', 'J').
  uintptr_t VmStateFrame(char vmstate);
  // Mixed mode: the latest Lua stack (leaf first), for the samples deferred until now.
  void SetLatest(std::span<const uintptr_t> stack) { latest_.assign(stack.begin(), stack.end()); }

  // Mixed mode, a native sample of the VM's thread (leaf first, no thread marker): true when
  // it waits for the VM's next Lua stack (it was taken inside the VM or in code LuaJIT
  // compiled, which no module in `code` has). The next stack, not the latest: a native
  // function called from Lua does not return to the VM before it is done, and the first safe
  // point after it is in the Lua function that called it, at the line of the call.
  bool Defer(std::span<const uintptr_t> frames, const SampleMeta& meta, const CodeRanges* code);
  // Every deferred sample with the latest Lua stack spliced in at the VM boundary.
  void SplicePending(const CodeRanges* code, const Sink& sink);
  bool has_pending() const { return !pending_.empty(); }

  // The frame interned as `marker`. Any thread.
  Frame FrameOf(uintptr_t marker) const;
  // Native samples inside the VM that came before its first Lua stack.
  uint64_t unspliced() const { return unspliced_; }

 private:
  struct Pending {
    std::vector<uintptr_t> frames;  // leaf first, no thread marker
    SampleMeta meta;
  };
  static constexpr size_t kMaxPending = 16384;
  uintptr_t Intern(std::string_view name, std::string_view location);
  bool InVm(uintptr_t address, const CodeRanges* code) const;

  pid_t tid_ = 0;
  bool mixed_ = false;
  int event_ = -1;
  std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges_;
  std::vector<uintptr_t> latest_;  // leaf first
  std::vector<uintptr_t> parsed_;  // Parse's result
  std::vector<Pending> pending_;
  std::unordered_map<std::string, uintptr_t> frame_ids_;
  std::unordered_map<std::string, std::string> paths_;  // chunk name -> canonical path
  mutable Mutex frames_mu_;
  std::deque<Frame> frames_ GUARDED_BY(frames_mu_);
  uint64_t spliced_ = 0;
  uint64_t unspliced_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_SDK_LUA_SPLICER_H_
