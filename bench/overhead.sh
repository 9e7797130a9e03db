#!/usr/bin/env bash
# Whole-process overhead: wall time of a fixed-work CPU-bound program (bench/cpu_work.cpp,
# two busy threads) unprofiled, under inprof at 99 Hz and 250 Hz, and under gperftools'
# libprofiler at the same rates, run in interleaved order; reports medians and ratios.
#   bench/overhead.sh [BUILD_DIR] [REPETITIONS] [ROUNDS]
# ROUNDS sets the work per run (default 5000: about 5.5 s on a 2-vCPU VM; 1000 shows the
# fixed start/exit costs, which include symbolizing the profile at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
rounds=${3:-5000}
work="$build/bench/inprof_cpu_work"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$work" ] && [ -f "$lib" ] || { echo "overhead.sh: build first (cmake --build $build)" >&2; exit 1; }
gperf=$(ls /usr/lib/*-linux-gnu/libprofiler.so.0 2>/dev/null | head -n 1 || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

modes=(base inprof99 inprof250)
[ -n "$gperf" ] && modes+=(gperf99 gperf250) || echo "(gperftools not installed: scripts/install-deps bench)" >&2

run() {
  local mode=$1 start end
  start=$(date +%s%N)
  case $mode in
    base) "$work" "$rounds" >/dev/null ;;
    inprof99) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_FREQUENCY=99 INPROF_OUTPUT="$tmp/p.folded" "$work" "$rounds" >/dev/null ;;
    inprof250) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_FREQUENCY=250 INPROF_OUTPUT="$tmp/p.folded" "$work" "$rounds" >/dev/null ;;
    gperf99) LD_PRELOAD="$gperf" CPUPROFILE="$tmp/g.prof" CPUPROFILE_FREQUENCY=99 "$work" "$rounds" >/dev/null 2>&1 ;;
    gperf250) LD_PRELOAD="$gperf" CPUPROFILE="$tmp/g.prof" CPUPROFILE_FREQUENCY=250 "$work" "$rounds" >/dev/null 2>&1 ;;
  esac
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}

run base >/dev/null  # warm the page cache
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done

ratio_table "$tmp/times" base "${modes[@]}"
