/* The `inprof` Lua module, for the stock luajit interpreter and any LuaJIT host:
 *
 *   LUA_CPATH='build/bridges/luajit/?.so' luajit script.lua
 *
 *   local inprof = require("inprof")
 *   inprof.start{frequency = 99, output = "lua.folded,perf.log"}   -- or mixed = true
 *   ... the code to profile ...
 *   inprof.dump("now.folded")   -- the profile so far, to these outputs
 *   inprof.stop()               -- writes the outputs given to start
 *   inprof.dump("all.folded")   -- after stop: the profile just stopped (until the next start)
 *
 *   inprof.label_set("endpoint", "/api/users")   -- context on this thread's samples
 *   inprof.label_clear("endpoint")               -- or inprof.label_clear() for every label
 *   inprof.with_label("job", "resize", fn, ...)  -- fn(...) with the label, put back after
 *
 * start's table takes the keys of INPROF_* configuration in lower case (output, frequency,
 * window, http, quiet, ...) and `mixed`. Errors are raised as Lua errors naming the option or
 * the file. See docs/luajit.md. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "inprof/inprof.h"
#include "inprof/luajit.h"

static int fail(lua_State* L, const char* what) {
  return luaL_error(L, "inprof.%s: %s", what, inprof_last_error());
}

static int l_start(lua_State* L) {
  char config[8192];
  size_t used = 0;
  config[0] = '\0';
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) return luaL_error(L, "inprof.start: option names must be strings");
      const char* key = lua_tostring(L, -2);
      char value[4096];
      switch (lua_type(L, -1)) {
        case LUA_TBOOLEAN:
          snprintf(value, sizeof value, "%d", lua_toboolean(L, -1));
          break;
        case LUA_TNUMBER:
          snprintf(value, sizeof value, "%.17g", lua_tonumber(L, -1));
          break;
        case LUA_TSTRING:
          snprintf(value, sizeof value, "%s", lua_tostring(L, -1));
          break;
        default:
          return luaL_error(L, "inprof.start: option '%s' must be a string, a number or a boolean, not %s",
                            key, luaL_typename(L, -1));
      }
      int n = snprintf(config + used, sizeof config - used, "%s%s=%s", used ? "," : "", key, value);
      if (n < 0 || (size_t)n >= sizeof config - used) return luaL_error(L, "inprof.start: options too long");
      used += (size_t)n;
      lua_pop(L, 1);
    }
  }
  if (inprof_lua_start(L, config) != INPROF_OK) return fail(L, "start");
  return 0;
}

static int l_stop(lua_State* L) {
  if (inprof_lua_stop(L) != INPROF_OK) return fail(L, "stop");
  return 0;
}

static int l_dump(lua_State* L) {
  const char* outputs = luaL_checkstring(L, 1);
  if (inprof_dump(outputs) != INPROF_OK) return fail(L, "dump");
  return 0;
}

static int l_label_set(lua_State* L) {
  const char* key = luaL_checkstring(L, 1);
  const char* value = luaL_checkstring(L, 2);
  if (inprof_label_set(key, value) != INPROF_OK) return fail(L, "label_set");
  return 0;
}

static int l_label_clear(lua_State* L) {
  const char* key = luaL_optstring(L, 1, NULL);
  if (inprof_label_clear(key) != INPROF_OK) return fail(L, "label_clear");
  return 0;
}

/* with_label(key, value, fn, ...): the results of fn(...); the thread's labels are put back
 * whether fn returns or raises (the error is raised again). */
static int l_with_label(lua_State* L) {
  const char* key = luaL_checkstring(L, 1);
  const char* value = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  const inprof_labels_t saved = inprof_labels_save();
  if (inprof_label_set(key, value) != INPROF_OK) {
    inprof_labels_restore(saved);
    return fail(L, "with_label");
  }
  const int base = 3;
  const int status = lua_pcall(L, lua_gettop(L) - base, LUA_MULTRET, 0);
  inprof_labels_restore(saved);
  if (status != 0) return lua_error(L);
  return lua_gettop(L) - (base - 1);
}

static int l_running(lua_State* L) {
  lua_pushboolean(L, inprof_is_running());
  return 1;
}

static const luaL_Reg kFunctions[] = {
    {"start", l_start},           {"stop", l_stop},           {"dump", l_dump},
    {"running", l_running},       {"label_set", l_label_set}, {"label_clear", l_label_clear},
    {"with_label", l_with_label}, {NULL, NULL}};

__attribute__((visibility("default"))) int luaopen_inprof(lua_State* L) {
  lua_newtable(L);
  luaL_register(L, NULL, kFunctions);
  return 1;
}
