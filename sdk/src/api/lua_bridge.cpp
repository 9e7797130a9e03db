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

#include "api/lua_bridge.h"
#include "api/runtime.h"
#include "config/config.h"
#include "inprof/luajit.h"
#include "inprof/status.h"
#include "session/session.h"
#include "signal/raw_syscall.h"
#include "signal/signal_handler.h"

namespace inprof::internal {
namespace {

constexpr int kMaxLuaFrames = 100;

}  // namespace

void Session::SetLuaVm(pid_t tid, std::vector<std::pair<uintptr_t, uintptr_t>> vm_ranges,
                       bool mixed) {
  MutexLock lock(&data_mu_);
  int event = -1;
  for (size_t e = 0; e < engines_.events.size(); ++e) {
    if (engines_.events[e]->source == EventSource::kLua) event = static_cast<int>(e);
  }
  lua_.Attach(tid, std::move(vm_ranges), mixed, event);
}

void Session::ClearLuaVm() {
  MutexLock lock(&data_mu_);
  DrainLocked();  // native samples taken while the VM ran get its last stack
  SpliceLuaPendingLocked();
  lua_.Detach();
}

void Session::SpliceLuaPendingLocked() {
  lua_.SplicePending(sampler_.code.load(std::memory_order_acquire),
                     [this](std::span<const uintptr_t> stack, const SampleMeta& meta)
                         REQUIRES(data_mu_) {
                       AggregateLocked(stack, meta);
                     });
}

void Session::AddLuaStack(std::string_view dump, uint32_t weight, char vmstate) {
  MutexLock lock(&data_mu_);
  if (lua_.tid() == 0) return;
  std::span<const uintptr_t> lua_stack = lua_.Parse(dump);
  if (lua_.mixed()) {
    // Everything this thread sampled before this safe point is in its ring now (the handler
    // runs on this thread): drain it, so those samples get this stack, not a later one.
    DrainLocked();
    lua_.SetLatest(lua_stack);
    SpliceLuaPendingLocked();
    return;
  }
  if (lua_.event() < 0 || weight == 0) return;
  StackBuffer stack;
  for (uintptr_t id : lua_stack.first(std::min<size_t>(lua_stack.size(), kMaxFrames))) {
    stack.push(id);
  }
  stack.push(lua_.VmStateFrame(vmstate));
  // The VM's thread: its slot is not at hand here; the marker is added directly.
  stack.push(kThreadMarker | static_cast<uintptr_t>(lua_.tid()));
  // This is the VM's thread: its labels are the ones set now.
  const uint32_t labels = ThreadLabelSet();
  if (labels != 0) stack.push(kLabelsMarker | labels);
  const auto event = static_cast<uint16_t>(lua_.event());
  AggregateLocked(stack.frames(), SampleMeta{weight, event, labels, MonotonicNsRaw()});
  ++counts_.samples;
  counts_.weight += weight;
  if (event == 0) counts_.first_event_weight += weight;
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

// The callback's work, out of line: OnLuaSample itself is a few instructions in the section
// the handler knows as the profiler's (INPROF_PROFILER_TEXT), so a sample taken before it
// sets its flag or after it clears it is left out too.
__attribute__((noinline)) void LuaSampleWork(lua_State* L, int samples, int vmstate) {
  size_t length = 0;
  const char* dump = g_luajit.dumpstack(L, Session::kLuaDumpFormat, -kMaxLuaFrames, &length);
  if (dump == nullptr) return;
  RuntimeLuaStack(std::string_view(dump, length), static_cast<uint32_t>(samples > 0 ? samples : 1),
                  static_cast<char>(vmstate));
}

// The VM's thread works for the profiler from here on (LuaJIT's dumpstack, then the drain of
// every ring in mixed mode, a thousand times a second at LuaJIT's 1 ms interval): the
// handler leaves the samples it takes meanwhile out (docs/luajit.md).
INPROF_PROFILER_TEXT __attribute__((no_sanitize("address", "undefined"))) void OnLuaSample(
    void*, lua_State* L, int samples, int vmstate) {
  const bool outer = t_profiler_work;
  t_profiler_work = true;
  LuaSampleWork(L, samples, vmstate);
  t_profiler_work = outer;
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

// Takes the bridge's own key, mixed=1|0, out of `text`; `rest` is everything else.
Status SplitMixed(const char* config_text, bool* mixed, std::string* rest) {
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
        *mixed = true;
      } else if (v == "0" || v == "false" || v == "no" || v == "off") {
        *mixed = false;
      } else {
        return Status::InvalidArgument("inprof_lua_start: invalid mixed='" + std::string(v) +
                                       "': expected 1 or 0");
      }
      continue;
    }
    if (!rest->empty()) *rest += ',';
    *rest += item;
  }
  return Status::Ok();
}

}  // namespace

Status LuaStart(lua_State* L, const char* config_text) {
  // Starting LuaJIT's profiler (its setitimer goes through the itimer hook) and ours is the
  // profiler's work: samples meanwhile are left out.
  ProfilerWorkScope work;
  if (L == nullptr) return Status::InvalidArgument("inprof_lua_start: no lua_State given");
  if (g_vm != nullptr) {
    return Status::AlreadyExists(
        "inprof_lua_start: a LuaJIT VM is already profiled (LuaJIT profiles one at a time); "
        "call inprof_lua_stop first");
  }
  if (g_luajit.start == nullptr) {
    g_luajit.start = reinterpret_cast<ProfileStartFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_start"));
    g_luajit.stop = reinterpret_cast<ProfileStopFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_stop"));
    g_luajit.dumpstack =
        reinterpret_cast<DumpStackFn>(dlsym(RTLD_DEFAULT, "luaJIT_profile_dumpstack"));
    if (g_luajit.start == nullptr || g_luajit.stop == nullptr || g_luajit.dumpstack == nullptr) {
      g_luajit = {};
      return Status::Unavailable(
          "inprof_lua_start: LuaJIT's profiler (luaJIT_profile_start) is not in this "
          "process: LuaJIT 2.1 is needed (plain Lua 5.x has no profiler API)");
    }
  }
  // "mixed" is the bridge's own key; the rest is inprof_start's configuration.
  bool mixed = false;
  std::string rest;
  if (Status r = SplitMixed(config_text, &mixed, &rest); !r.ok()) return r;
  Config config;
  Status s = ParseConfig(rest, &config);
  if (!s.ok()) return Status::InvalidArgument("inprof_lua_start: " + s.message());
  // LuaJIT's profiler takes SIGPROF while it runs. When this library was not preloaded, its
  // sigaction hook does not see LuaJIT's call, so the native sampler must not share the
  // signal: it moves to a real-time one unless told otherwise.
  if (mixed && rest.find("signal=") == std::string::npos) config.signal = SIGRTMIN + 4;
  bool started = false;
  Status r = RuntimeLuaAttach(std::move(config), mixed,
                              CodeRangesOf(reinterpret_cast<const void*>(g_luajit.start)),
                              &started);
  if (!r.ok()) {
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
      ProfilerWorkScope work;
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
  return Status::Ok();
}

Status LuaStop(lua_State* L) {
  ProfilerWorkScope work;
  if (g_vm == nullptr || L != g_vm) {
    return Status::FailedPrecondition("inprof_lua_stop: this VM is not being profiled");
  }
  g_luajit.stop(L);
  RuntimeLuaDetach();
  g_vm = nullptr;
  if (g_started_profile) {
    g_started_profile = false;
    Status r = RuntimeStop();
    if (r.ok()) return r;
    // The same failure, named by the call the script made.
    return Status::Error("inprof_lua_stop: " + r.message().substr(r.message().find(':') + 2),
                         r.code());
  }
  return Status::Ok();
}

}  // namespace inprof::internal
