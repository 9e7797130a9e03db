#!/usr/bin/env bash
# What inprof costs a process that ends before its first sample: PROGRAM (default /bin/true)
# started N times with posix_spawn, per process in microseconds, interleaved over REPS
# rounds: without inprof, with an empty shared object preloaded (what any preloaded library
# costs), with the library loaded but idle, profiling with the session
# deferred to the first sample (the default) and with the whole session at load
# (INPROF_LAZY=0); the median of each, its difference from the empty preload (the target:
# deferred within +0.1 ms of it) and from the library merely loaded.
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
empty="$PWD/$build/bench/libinprof_bench_empty.so"
[ -x "$spawn" ] && [ -f "$lib" ] && [ -f "$empty" ] || { echo "process_start.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
modes=(base empty loaded deferred eager)
run() {
  case $1 in
    base) "$spawn" "$n" "$program" ;;
    empty) "$spawn" "$n" LD_PRELOAD="$empty" "$program" ;;
    loaded) "$spawn" "$n" LD_PRELOAD="$lib" "$program" ;;
    deferred) "$spawn" "$n" LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_OUTPUT="$tmp/p.folded" "$program" ;;
    eager) "$spawn" "$n" LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_LAZY=0 INPROF_OUTPUT="$tmp/p.folded" "$program" ;;
  esac
}
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done
loaded=$(awk '$1 == "loaded" { print $2 }' "$tmp/times" | median)
empty=$(awk '$1 == "empty" { print $2 }' "$tmp/times" | median)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %12s %15s %16s\n' mode us_per_proc minus_empty_ms minus_loaded_ms
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  printf '%-10s %12s %15.3f %16.3f\n' "$mode" "$m" \
    "$(awk -v a="$m" -v b="$empty" 'BEGIN { print (a - b) / 1000 }')" \
    "$(awk -v a="$m" -v b="$loaded" 'BEGIN { print (a - b) / 1000 }')"
done
d=$(awk '$1 == "deferred" { print $2 }' "$tmp/times" | median)
awk -v d="$d" -v e="$empty" 'BEGIN { x = (d - e) / 1000;
  printf "target (deferred within +0.1 ms of the empty preload): %s (+%.3f ms)\n", x <= 0.1 ? "met" : "NOT met", x }'

echo "files left by processes without samples: $(find "$tmp" -name 'p.*' | wc -l)"
