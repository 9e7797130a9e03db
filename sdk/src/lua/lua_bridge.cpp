// The LuaJIT bridge: Lua stacks from LuaJIT's profiler into the session, and the C API of
// inprof/luajit.h. Control path: LuaJIT calls our callback at a VM safe point on the VM's
// thread, never inside a signal handler.
//
// Lua mode (event `lua`): every callback is a sample of `samples` intervals, its stack the
// VM's Lua frames under a root frame naming the VM state ([lua interpreted], [lua compiled],
// [lua C code], [lua GC], [lua JIT compiler]).
//
// Mixed mode: native samples (event cpu, the usual engines) of the VM's thread get the VM's
// latest Lua stack spliced in where the native stack is inside the LuaJIT library: native
// frames above the VM (a C function the Lua code called, through the FFI or the C API), then
// the Lua frames, then the native frames below the VM (the host's main, lua_pcall). The Lua
// stack is the one LuaJIT's profiler saw at the VM's most recent safe point, every
// millisecond of the thread's CPU time; a native call does not move the Lua stack, so samples
// inside it carry the frames that called it (docs/luajit.md has the limits).
#include <dlfcn.h>
#include <signal.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "inprof/luajit.h"
#include "internal/config.h"
#include "internal/runtime.h"
#include "internal/session.h"

namespace inprof::internal {
namespace {

constexpr int kMaxLuaFrames = 100;

const char* VmStateFrame(char vmstate) {
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

int Session::LuaIntervalMs() const {
  return std::max(1, static_cast<int>(1000.0 / config_.frequency + 0.5));
}

void Session::SetLuaVm(pid_t tid, std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                       bool mixed) {
  std::lock_guard<std::mutex> lock(data_mu_);
  lua_tid_ = tid;
  lua_mixed_ = mixed;
  lua_vm_ranges_ = std::move(vm_ranges);
  lua_latest_.clear();
  lua_event_ = -1;
  for (size_t e = 0; e < engines_.events.size(); ++e) {
    if (engines_.events[e]->source == EventSource::kLua) lua_event_ = static_cast<int>(e);
  }
}

void Session::ClearLuaVm() {
  std::lock_guard<std::mutex> lock(data_mu_);
  DrainLocked();  // native samples taken while the VM ran get its last stack
  SpliceLuaPendingLocked();
  lua_tid_ = 0;
  lua_mixed_ = false;
  lua_latest_.clear();
}

uintptr_t Session::InternLuaFrame(std::string_view name, std::string_view location) {
  std::string key(name);
  key += '\x01';
  key += location;
  auto it = lua_frame_ids_.find(key);
  if (it != lua_frame_ids_.end()) return it->second;
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
    auto p = lua_paths_.find(chunk);
    if (p == lua_paths_.end()) {
      char resolved[PATH_MAX];
      std::string canonical = realpath(chunk.c_str(), resolved) != nullptr ? resolved : chunk;
      p = lua_paths_.emplace(chunk, std::move(canonical)).first;
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
  std::lock_guard<std::mutex> lock(lua_frames_mu_);
  const uintptr_t id = kLuaFrameMarker | lua_frames_.size();
  lua_frames_.push_back(std::move(frame));
  lua_frame_ids_.emplace(std::move(key), id);
  return id;
}

void Session::AddLuaStack(std::string_view dump, uint32_t weight, char vmstate) {
  std::lock_guard<std::mutex> lock(data_mu_);
  if (lua_tid_ == 0) return;
  // Root first in the dump; stacks are leaf first here.
  lua_scratch_.clear();
  while (!dump.empty()) {
    const size_t eol = dump.find('\n');
    std::string_view entry = dump.substr(0, eol);
    dump = eol == std::string_view::npos ? std::string_view() : dump.substr(eol + 1);
    const size_t sep = entry.find('\x01');
    if (sep == std::string_view::npos) continue;
    const uintptr_t id = InternLuaFrame(entry.substr(0, sep), entry.substr(sep + 1));
    if (id != 0) lua_scratch_.push_back(id);
  }
  std::reverse(lua_scratch_.begin(), lua_scratch_.end());
  if (lua_mixed_) {
    // Everything this thread sampled before this safe point is in its ring now (the handler
    // runs on this thread): drain it, so those samples get this stack, not a later one.
    DrainLocked();
    lua_latest_ = lua_scratch_;
    SpliceLuaPendingLocked();
    return;
  }
  if (lua_event_ < 0 || weight == 0) return;
  if (scratch_.size() < kMaxFrames + 2) scratch_.resize(kMaxFrames + 2);
  uint32_t n = 0;
  for (uintptr_t id : lua_scratch_) {
    if (n == kMaxFrames) break;
    scratch_[n++] = id;
  }
  scratch_[n++] = InternLuaFrame(VmStateFrame(vmstate), {});
  // The VM's thread: its slot is not at hand here; the marker is added directly.
  scratch_[n++] = kThreadMarker | static_cast<uintptr_t>(lua_tid_);
  table_.Add(std::span<const uintptr_t>(scratch_.data(), n), weight, static_cast<size_t>(lua_event_));
  for (Tap& tap : taps_) {
    tap.table.Add(std::span<const uintptr_t>(scratch_.data(), n), weight, static_cast<size_t>(lua_event_));
    ++tap.samples;
  }
  ++samples_;
  weight_ += weight;
  if (lua_event_ == 0) first_event_weight_ += weight;
}

// Mixed mode, for a native sample of the VM's thread in scratch_[0, *n) (leaf first, thread
// marker not yet added). Returns false when the sample waits for the VM's next Lua stack
// (it was taken inside the VM or in code LuaJIT compiled); then it is spliced by
// AddLuaStack. The next stack, not the latest: a native function called from Lua does not
// return to the VM before it is done, and the first safe point after it is in the Lua
// function that called it, at the line of the call.
bool Session::InLuaVm(uintptr_t address) const {
  for (const auto& [lo, hi] : lua_vm_ranges_) {
    if (address >= lo && address < hi) return true;
  }
  // Machine code LuaJIT compiled lives in no module.
  const CodeRanges* code = sampler_.code.load(std::memory_order_acquire);
  return code != nullptr && !code->Contains(address) && address > 4096 &&
         !IsLuaFrameMarker(address) && address != kTruncatedMarker;
}

bool Session::SpliceLuaLocked(uint32_t* n, uint32_t weight, uint16_t event) {
  bool any = false;
  for (uint32_t i = 0; i < *n && !any; ++i) any = InLuaVm(scratch_[i]);
  if (!any) return true;  // not running Lua now: an ordinary native sample
  if (lua_pending_.size() >= kMaxLuaPending) {
    // A native call that has run for minutes: splice with what is known rather than grow.
    ++lua_unspliced_;
    return true;
  }
  lua_pending_.push_back(LuaPending{{scratch_.begin(), scratch_.begin() + *n}, weight, event});
  return false;
}

void Session::SpliceLuaPendingLocked() {
  for (LuaPending& p : lua_pending_) {
    const uint32_t n = static_cast<uint32_t>(p.frames.size());
    uint32_t first = n, last = n;  // first and last frame (from the leaf) inside the VM
    for (uint32_t i = 0; i < n; ++i) {
      if (!InLuaVm(p.frames[i])) continue;
      if (first == n) first = i;
      last = i;
    }
    // leaf .. first-1 (native code Lua called), the Lua frames, last+1 .. root (the host)
    uint32_t m = 0;
    for (uint32_t i = 0; i < first && m < kMaxFrames; ++i) scratch_[m++] = p.frames[i];
    for (uintptr_t id : lua_latest_) {
      if (m >= kMaxFrames) break;
      scratch_[m++] = id;
    }
    for (uint32_t i = last + 1; i < n && m < kMaxFrames; ++i) scratch_[m++] = p.frames[i];
    if (lua_latest_.empty()) ++lua_unspliced_;
    else ++lua_spliced_;
    scratch_[m++] = kThreadMarker | static_cast<uintptr_t>(lua_tid_);
    table_.Add(std::span<const uintptr_t>(scratch_.data(), m), p.weight, p.event);
    for (Tap& tap : taps_) {
      tap.table.Add(std::span<const uintptr_t>(scratch_.data(), m), p.weight, p.event);
      ++tap.samples;
    }
  }
  lua_pending_.clear();
}

// ---------------------------------------------------------------------------------------------
// What inprof/luajit.h's functions do (api.cpp turns the results into codes and messages).
// LuaJIT's functions are looked up in the process, not linked: libinprof is preloaded into
// programs that have no LuaJIT at all.

namespace {

using LuaProfileCallback = void (*)(void*, lua_State*, int, int);
using ProfileStartFn = void (*)(lua_State*, const char*, LuaProfileCallback, void*);
using ProfileStopFn = void (*)(lua_State*);
using DumpStackFn = const char* (*)(lua_State*, const char*, int, size_t*);

struct LuaJit {
  ProfileStartFn start = nullptr;
  ProfileStopFn stop = nullptr;
  DumpStackFn dumpstack = nullptr;
};

LuaJit g_luajit;
lua_State* g_vm = nullptr;
bool g_started_profile = false;

void OnLuaSample(void*, lua_State* L, int samples, int vmstate) {
  size_t length = 0;
  const char* dump = g_luajit.dumpstack(L, Session::kLuaDumpFormat, -kMaxLuaFrames, &length);
  if (dump == nullptr) return;
  RuntimeLuaStack(std::string_view(dump, length), static_cast<uint32_t>(samples > 0 ? samples : 1),
                  static_cast<char>(vmstate));
}

// The executable ranges of the object that defines `symbol` (the LuaJIT library, or the
// executable when LuaJIT is linked statically).
std::vector<std::pair<uintptr_t, uintptr_t>> CodeRangesOf(const void* symbol) {
  struct Search {
    uintptr_t address;
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  } search{reinterpret_cast<uintptr_t>(symbol), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
        bool contains = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          ranges.emplace_back(lo, hi);
          contains = contains || (s->address >= lo && s->address < hi);
        }
        if (!contains) return 0;
        s->ranges = std::move(ranges);
        return 1;
      },
      &search);
  return search.ranges;
}

}  // namespace

RuntimeResult LuaStart(lua_State* L, const char* config_text) {
  if (L == nullptr) return {RuntimeError::kConfig, "inprof_lua_start: no lua_State given"};
  if (g_vm != nullptr) {
    return {RuntimeError::kAlreadyStarted,
            "inprof_lua_start: a LuaJIT VM is already profiled (LuaJIT profiles one at a time); "
            "call inprof_lua_stop first"};
  }
  if (g_luajit.start == nullptr) {
    g_luajit.start = reinterpret_cast<ProfileStartFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_start"));
    g_luajit.stop = reinterpret_cast<ProfileStopFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_stop"));
    g_luajit.dumpstack =
        reinterpret_cast<DumpStackFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_dumpstack"));
    if (g_luajit.start == nullptr || g_luajit.stop == nullptr || g_luajit.dumpstack == nullptr) {
      g_luajit = {};
      return {RuntimeError::kSystem,
              "inprof_lua_start: LuaJIT's profiler (luaJIT_profile_start) is not in this "
              "process: LuaJIT 2.1 is needed (plain Lua 5.x has no profiler API)"};
    }
  }
  // "mixed" is the bridge's own key; the rest is inprof_start's configuration.
  bool mixed = false;
  std::string rest;
  std::string_view text = config_text != nullptr ? config_text : "";
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    std::string_view trimmed = item;
    while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
    if (trimmed.substr(0, 6) == "mixed=") {
      std::string_view v = trimmed.substr(6);
      if (v == "1" || v == "true" || v == "yes" || v == "on") {
        mixed = true;
      } else if (v == "0" || v == "false" || v == "no" || v == "off") {
        mixed = false;
      } else {
        return {RuntimeError::kConfig,
                "inprof_lua_start: invalid mixed='" + std::string(v) + "': expected 1 or 0"};
      }
      continue;
    }
    if (!rest.empty()) rest += ',';
    rest += item;
  }
  Config config;
  Status s = ParseConfig(rest, &config);
  if (!s.ok()) return {RuntimeError::kConfig, "inprof_lua_start: " + s.message()};
  // LuaJIT's profiler takes SIGPROF while it runs. When this library was not preloaded, its
  // sigaction hook does not see LuaJIT's call, so the native sampler must not share the
  // signal: it moves to a real-time one unless told otherwise.
  if (mixed && rest.find("signal=") == std::string::npos) config.signal = SIGRTMIN + 4;
  bool started = false;
  RuntimeResult r = RuntimeLuaAttach(std::move(config), mixed,
                                     CodeRangesOf(reinterpret_cast<const void*>(g_luajit.start)),
                                     &started);
  if (r.error != RuntimeError::kOk) {
    if (started) RuntimeStop();
    return r;
  }
  g_vm = L;
  g_started_profile = started;
  // A script that never calls inprof.stop() still gets its outputs, at exit (by then the
  // interpreter has closed the VM, which stops LuaJIT's profiler).
  static bool exit_hook = false;
  if (started && !exit_hook) {
    exit_hook = true;
    std::atexit([] {
      if (g_vm == nullptr || !g_started_profile) return;
      RuntimeLuaDetach();
      g_vm = nullptr;
      g_started_profile = false;
      RuntimeStop();
    });
  }
  // Mixed: the latest Lua stack should be fresh, so LuaJIT samples every millisecond of the
  // thread's CPU time; Lua mode: the session's rate.
  // "l": line precision. Without it LuaJIT compiles no profiling checks into its traces and
  // a hot compiled loop reports all its samples at once, at the line where it exits.
  const std::string mode = "li" + std::to_string(mixed ? 1 : RuntimeLuaIntervalMs());
  g_luajit.start(L, mode.c_str(), &OnLuaSample, nullptr);
  return {};
}

RuntimeResult LuaStop(lua_State* L) {
  if (g_vm == nullptr || L != g_vm) {
    return {RuntimeError::kNotStarted, "inprof_lua_stop: this VM is not being profiled"};
  }
  g_luajit.stop(L);
  RuntimeLuaDetach();
  g_vm = nullptr;
  if (g_started_profile) {
    g_started_profile = false;
    RuntimeResult r = RuntimeStop();
    if (r.error != RuntimeError::kOk) r.message = "inprof_lua_stop: " + r.message.substr(r.message.find(':') + 2);
    return r;
  }
  return {};
}

}  // namespace inprof::internal
