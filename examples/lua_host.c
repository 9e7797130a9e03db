/* A program that embeds LuaJIT and profiles its Lua code with inprof (inprof/luajit.h):
 *
 *   inprof_lua_host SCRIPT.lua [CONFIG]
 *
 * runs SCRIPT.lua with a `host.crunch(seconds)` C function (and `host_ffi_crunch` for the
 * FFI) and CONFIG as inprof_lua_start's configuration, default
 * "mixed=1,output=lua.folded,perf.log,lua.json,lua.svg,lua.pb.gz". With mixed=1 the native
 * samples of host_crunch carry the Lua frames that called it. See docs/luajit.md. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <time.h>

#include "inprof/inprof.h"
#include "inprof/luajit.h"

static volatile double g_sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The native work Lua calls: a dependent floating-point chain for `seconds` of CPU time. */
__attribute__((noinline)) double host_crunch(double seconds) {
  const double end = cpu_seconds() + seconds;
  double x = g_sink;
  while (cpu_seconds() < end) {
    for (int i = 0; i < 20000; ++i) x = x * 0.999999 + 1.0; /* HOST-CRUNCH-LINE */
  }
  g_sink = x;
  return x;
}

/* Called through LuaJIT's FFI (the executable exports it). */
__attribute__((visibility("default"), noinline)) double host_ffi_crunch(double seconds) {
  return host_crunch(seconds) + 1;
}

static int lua_crunch(lua_State* L) {
  lua_pushnumber(L, host_crunch(luaL_checknumber(L, 1)));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCRIPT.lua [CONFIG]\n", argv[0]);
    return 2;
  }
  const char* config =
      argc > 2 ? argv[2] : "mixed=1,output=lua.folded,perf.log,lua.json,lua.svg,lua.pb.gz";
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  lua_pushcfunction(L, lua_crunch);
  lua_setfield(L, -2, "crunch");
  lua_setglobal(L, "host");
  if (inprof_lua_start(L, config) != INPROF_OK) {
    fprintf(stderr, "%s\n", inprof_last_error());
    return 1;
  }
  int status = 0;
  if (luaL_dofile(L, argv[1]) != 0) {
    fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
    status = 1;
  }
  if (inprof_lua_stop(L) != INPROF_OK) {
    fprintf(stderr, "%s\n", inprof_last_error());
    status = 1;
  }
  lua_close(L);
  return status;
}
