// The LuaJIT splicer (see lua_splicer.h). Control path.
#include "lua/lua_splicer.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>

#include "collector/stack_table.h"
#include "inprof/profile.h"

namespace inprof::internal {
namespace {

const char* VmStateName(char vmstate) {
  switch (vmstate) {
    case 'N': return "[lua compiled]";
    case 'I': return "[lua interpreted]";
    case 'C': return "[lua C code]";
    case 'G': return "[lua GC]";
    case 'J': return "[lua JIT compiler]";
    default: return "[lua]";
  }
}

// "path:line" -> {path, line}; false when it is not one (C functions dump as "@0x55d0...").
bool SplitLocation(std::string_view location, std::string_view* path, uint32_t* line) {
  const size_t colon = location.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= location.size()) return false;
  uint32_t value = 0;
  for (char c : location.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  *path = location.substr(0, colon);
  *line = value;
  return !path->empty() && path->front() != '@' && path->front() != '=' && path->front() != '[';
}

}  // namespace

void LuaSplicer::Attach(pid_t tid, std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                        bool mixed, int event) {
  tid_ = tid;
  mixed_ = mixed;
  vm_ranges_ = std::move(vm_ranges);
  latest_.clear();
  event_ = event;
}

void LuaSplicer::Detach() {
  tid_ = 0;
  mixed_ = false;
  latest_.clear();
}

uintptr_t LuaSplicer::Intern(std::string_view name, std::string_view location) {
  std::string key(name);
  key += '\x01';
  key += location;
  auto it = frame_ids_.find(key);
  if (it != frame_ids_.end()) return it->second;
  Frame frame;
  std::string_view path;
  uint32_t line = 0;
  if (location.empty()) {
    frame.function = std::string(name);
    frame.kind = FrameKind::kSynthetic;
  } else if (SplitLocation(location, &path, &line)) {
    // Chunk names are as the script was loaded ("t.lua", "./lib/x.lua"): perfanno and
    // editors need the canonical absolute path.
    std::string chunk(path);
    auto p = paths_.find(chunk);
    if (p == paths_.end()) {
      char resolved[PATH_MAX];
      std::string canonical = realpath(chunk.c_str(), resolved) != nullptr ? resolved : chunk;
      p = paths_.emplace(chunk, std::move(canonical)).first;
    }
    frame.file = p->second;
    frame.line = line;
    // Nameless functions dump as "chunk:firstline": a name that cannot break perf.log's
    // parser (no '/', no ':<digit>').
    std::string_view fn_path;
    uint32_t first_line = 0;
    if (name.empty() || SplitLocation(name, &fn_path, &first_line)) {
      frame.function = first_line == 0 ? "(main chunk)" : "(anonymous L" + std::to_string(first_line) + ")";
    } else {
      frame.function = std::string(name);
    }
    frame.module = "[lua]";
  } else {
    return 0;  // a C function: not a Lua frame
  }
  MutexLock lock(&frames_mu_);
  const uintptr_t id = kLuaFrameMarker | frames_.size();
  frames_.push_back(std::move(frame));
  frame_ids_.emplace(std::move(key), id);
  return id;
}

std::span<const uintptr_t> LuaSplicer::Parse(std::string_view dump) {
  parsed_.clear();
  while (!dump.empty()) {
    const size_t eol = dump.find('\n');
    std::string_view entry = dump.substr(0, eol);
    dump = eol == std::string_view::npos ? std::string_view() : dump.substr(eol + 1);
    const size_t sep = entry.find('\x01');
    if (sep == std::string_view::npos) continue;
    const uintptr_t id = Intern(entry.substr(0, sep), entry.substr(sep + 1));
    if (id != 0) parsed_.push_back(id);
  }
  // Root first in the dump; stacks are leaf first here.
  std::reverse(parsed_.begin(), parsed_.end());
  return parsed_;
}

uintptr_t LuaSplicer::VmStateFrame(char vmstate) { return Intern(VmStateName(vmstate), {}); }

Frame LuaSplicer::FrameOf(uintptr_t marker) const {
  MutexLock lock(&frames_mu_);
  const size_t index = marker & ((uintptr_t{1} << 48) - 1);
  if (index < frames_.size()) return frames_[index];
  Frame unknown;
  unknown.function = "[lua]";
  unknown.kind = FrameKind::kSynthetic;
  return unknown;
}

// Inside the LuaJIT library, or in machine code it compiled (no module has it).
bool LuaSplicer::InVm(uintptr_t address, const CodeRanges* code) const {
  for (const auto& [lo, hi] : vm_ranges_) {
    if (address >= lo && address < hi) return true;
  }
  return code != nullptr && !code->Contains(address) && address > 4096 &&
         !IsLuaFrameMarker(address) && address != kTruncatedMarker;
}

bool LuaSplicer::Defer(std::span<const uintptr_t> frames, const SampleMeta& meta,
                       const CodeRanges* code) {
  bool any = false;
  for (size_t i = 0; i < frames.size() && !any; ++i) any = InVm(frames[i], code);
  if (!any) return false;  // not running Lua now: an ordinary native sample
  if (pending_.size() >= kMaxPending) {
    // A native call that has run for minutes: splice with what is known rather than grow.
    ++unspliced_;
    return false;
  }
  pending_.push_back(Pending{{frames.begin(), frames.end()}, meta});
  return true;
}

void LuaSplicer::SplicePending(const CodeRanges* code, const Sink& sink) {
  StackBuffer stack;
  for (Pending& p : pending_) {
    const size_t n = p.frames.size();
    size_t first = n, last = n;  // first and last frame (from the leaf) inside the VM
    for (size_t i = 0; i < n; ++i) {
      if (!InVm(p.frames[i], code)) continue;
      if (first == n) first = i;
      last = i;
    }
    // leaf .. first-1 (native code Lua called), the Lua frames, last+1 .. root (the host)
    stack.clear();
    for (size_t i = 0; i < first && stack.size() < kMaxFrames; ++i) stack.push(p.frames[i]);
    for (uintptr_t id : latest_) {
      if (stack.size() >= kMaxFrames) break;
      stack.push(id);
    }
    for (size_t i = last + 1; i < n && stack.size() < kMaxFrames; ++i) stack.push(p.frames[i]);
    if (latest_.empty()) ++unspliced_;
    else ++spliced_;
    stack.push(kThreadMarker | static_cast<uintptr_t>(tid_));
    if (p.meta.labels != 0) stack.push(kLabelsMarker | p.meta.labels);
    sink(stack.frames(), p.meta);
  }
  pending_.clear();
}

}  // namespace inprof::internal
