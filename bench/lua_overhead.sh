#!/usr/bin/env bash
# Overhead of the LuaJIT bridge: wall time of a fixed CPU-bound Lua script (bench/lua_cpu.lua)
# under the stock luajit, without the inprof module, with it in Lua mode at the default rate
# (99 Hz: LuaJIT's profiler every 10 ms, line precision) and in mixed mode (native CPU samples
# at 99 Hz plus LuaJIT's profiler every 1 ms for the Lua stacks); interleaved runs, medians
# and ratios to the plain run.
#   bench/lua_overhead.sh [BUILD_DIR] [REPETITIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
rounds=${3:-1500}
module_dir="$PWD/$build/bridges/luajit"
[ -f "$module_dir/inprof.so" ] || { echo "lua_overhead.sh: build first (cmake --build $build)" >&2; exit 1; }
command -v luajit >/dev/null || { echo "lua_overhead.sh: luajit is not installed (scripts/install-deps)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
modes=(none lua mixed)
run() {
  local mode=$1 start end
  start=$(date +%s%N)
  LUA_CPATH="$module_dir/?.so" luajit bench/lua_cpu.lua "$mode" "$rounds" "$tmp/$mode.folded" >/dev/null
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}
run none >/dev/null
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done
ratio_table "$tmp/times" none "${modes[@]}"
