#!/usr/bin/env bash
# Overhead of the LuaJIT bridge: wall time of a fixed CPU-bound Lua script (bench/lua_cpu.lua)
# under the stock luajit, without the inprof module, with it in Lua mode at the default rate
# (99 Hz: LuaJIT's profiler every 10 ms, line precision) and in mixed mode (native CPU samples
# at 99 Hz plus LuaJIT's profiler every 1 ms for the Lua stacks); interleaved runs, medians
# and ratios to the plain run.
#   bench/lua_overhead.sh [BUILD_DIR] [REPETITIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
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
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "none" { print $2 }' "$tmp/times" | median)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %8s\n' mode median_ms ratio
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  printf '%-8s %10s %8.3f\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
done
