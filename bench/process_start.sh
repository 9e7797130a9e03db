#!/usr/bin/env bash
# What inprof costs a process that ends before its first sample: PROGRAM (default /bin/true)
# started N times with posix_spawn, per process in microseconds, interleaved over REPS
# rounds: without inprof, with the library loaded but idle, profiling with the session
# deferred to the first sample (the default) and with the whole session at load
# (INPROF_LAZY=0); the median of each and its difference from the library merely loaded.
#   bench/process_start.sh [BUILD_DIR] [REPS] [N] [PROGRAM]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
n=${3:-500}
program=${4:-/bin/true}
spawn="$build/bench/inprof_spawn_cost"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$spawn" ] && [ -f "$lib" ] || { echo "process_start.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
modes=(base loaded deferred eager)
run() {
  case $1 in
    base) "$spawn" "$n" "$program" ;;
    loaded) "$spawn" "$n" LD_PRELOAD="$lib" "$program" ;;
    deferred) "$spawn" "$n" LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_OUTPUT="$tmp/p.folded" "$program" ;;
    eager) "$spawn" "$n" LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_LAZY=0 INPROF_OUTPUT="$tmp/p.folded" "$program" ;;
  esac
}
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done
loaded=$(awk '$1 == "loaded" { print $2 }' "$tmp/times" | median)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %12s %16s\n' mode us_per_proc minus_loaded_ms
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  printf '%-10s %12s %16.3f\n' "$mode" "$m" "$(awk -v a="$m" -v b="$loaded" 'BEGIN { print (a - b) / 1000 }')"
done
echo "files left by processes without samples: $(find "$tmp" -name 'p.*' | wc -l)"
