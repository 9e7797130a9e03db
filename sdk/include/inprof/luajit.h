/* inprof for programs that embed LuaJIT: Lua stacks (function /path/file.lua:line) through the
 * same profile as native code, and mixed native + Lua stacks. See docs/luajit.md.
 *
 *   inprof_lua_start(L, "output=lua.folded,perf.log");   Lua stacks of VM L
 *   ... run Lua code ...
 *   inprof_lua_stop(L);                                   writes the outputs
 *
 * Configuration: the keys of inprof_start (output, frequency, window, http, ...) and
 *   mixed=1   sample native code (CPU time) and splice the VM's Lua stack into the native
 *             samples of its thread, at the VM boundary: "main;lua_pcall;...;caller
 *             /x.lua:12;hot_c_function;..." (default 0: Lua stacks only, event "lua")
 *
 * LuaJIT profiles one VM at a time; its profiler owns SIGPROF and ITIMER_PROF while it runs
 * (the native sampler chains to it). The functions are called by the VM's thread, outside
 * signal handlers. The LuaJIT library is found in the process at run time: libinprof does
 * not link it. Returns INPROF_OK or an error code (inprof_last_error() says more). */
#ifndef INPROF_LUAJIT_H_
#define INPROF_LUAJIT_H_

#include "inprof/inprof.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;

/* Starts profiling the Lua code that `L` runs. When a profile is already running (e.g. the
 * library was preloaded with INPROF_OUTPUT), mixed=1 adds Lua stacks to it; otherwise a new
 * profile starts with `config` and inprof_lua_stop ends it. */
INPROF_EXPORT int inprof_lua_start(struct lua_State* L, const char* config);

/* Stops profiling `L`; if inprof_lua_start started the profile, stops it and writes its
 * outputs, as inprof_stop does. */
INPROF_EXPORT int inprof_lua_stop(struct lua_State* L);

#ifdef __cplusplus
}
#endif

#endif /* INPROF_LUAJIT_H_ */
