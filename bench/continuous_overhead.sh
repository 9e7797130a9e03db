#!/usr/bin/env bash
# Continuous-mode overhead: wall time of a fixed-work CPU-bound program (bench/cpu_work.cpp,
# two busy threads) unprofiled, profiled once (all outputs written at exit) and profiled in
# continuous mode at the default rate (99 Hz) with 1 s windows, every window written to all
# five outputs (folded, perf.log, JSON, flame graph, pprof); interleaved runs, medians and
# ratios to the unprofiled run.
#   bench/continuous_overhead.sh [BUILD_DIR] [REPETITIONS] [ROUNDS]
# ROUNDS sets the work per run (default 10000: about 11 s on a 2-vCPU VM, ten windows).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
rounds=${3:-10000}
work="$build/bench/inprof_cpu_work"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$work" ] && [ -f "$lib" ] || { echo "continuous_overhead.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
outputs() { echo "$tmp/$1/p.folded,$tmp/$1/perf.log,$tmp/$1/p.json,$tmp/$1/p.svg,$tmp/$1/p.pb.gz"; }
mkdir -p "$tmp/once" "$tmp/windows"

modes=(base once windows)
run() {
  local mode=$1 start end
  start=$(date +%s%N)
  case $mode in
    base) "$work" "$rounds" >/dev/null ;;
    once) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_OUTPUT="$(outputs once)" "$work" "$rounds" >/dev/null ;;
    windows) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_WINDOW=1 INPROF_KEEP=3 \
               INPROF_OUTPUT="$(outputs windows)" "$work" "$rounds" >/dev/null ;;
  esac
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}

run base >/dev/null  # warm the page cache
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %10s %8s\n' mode median_ms ratio
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  printf '%-10s %10s %8.3f\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
done
