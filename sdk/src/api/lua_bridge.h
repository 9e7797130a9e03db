// inprof_lua_start / inprof_lua_stop (inprof/luajit.h): a LuaJIT VM profiled with the
// session, through the VM's own profiler. Not async-signal-safe.
#ifndef INPROF_SDK_LUA_BRIDGE_H_
#define INPROF_SDK_LUA_BRIDGE_H_

#include "inprof/status.h"

struct lua_State;

namespace inprof::internal {

Status LuaStart(lua_State* L, const char* config);
Status LuaStop(lua_State* L);

}  // namespace inprof::internal

#endif  // INPROF_SDK_LUA_BRIDGE_H_
