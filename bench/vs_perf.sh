#!/usr/bin/env bash
# inprof's engines side by side with `perf record` (software cpu-clock) on the 50/30/20
# workload (tests/sdk/fixtures/workload.cpp `shares`): attributed leaf shares from each, and
# the wall-time overhead ratio of each against the unprofiled run, interleaved.
#   bench/vs_perf.sh [BUILD_DIR] [REPETITIONS] [SECONDS_PER_THREAD]
# Needs perf (Debian: linux-perf) and perf_event_paranoid <= 2.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
seconds=${3:-3}
work="$build/tests/sdk/inprof_workload"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$work" ] && [ -f "$lib" ] || { echo "vs_perf.sh: build first (cmake --build $build)" >&2; exit 1; }
command -v perf >/dev/null || { echo "vs_perf.sh: perf not found (apt-get install linux-perf)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

modes=(base perf-record inprof-perf inprof-timer)

# Leaf shares of hot50/hot30/hot20 among them, from `perf script` or from folded stacks.
shares_perf() {
  perf script -i "$1" -F ip,sym 2>/dev/null | awk '
    /^$/ { leaf = ""; next }
    leaf == "" { leaf = $2; if (leaf ~ /^hot(50|30|20)$/) { n[leaf]++; t++ } }
    END { printf "%.1f/%.1f/%.1f", 100*n["hot50"]/t, 100*n["hot30"]/t, 100*n["hot20"]/t }'
}
shares_folded() {
  awk '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";");
         if (f[k] ~ /^hot(50|30|20)$/) { n[f[k]] += c; t += c } }
       END { printf "%.1f/%.1f/%.1f", 100*n["hot50"]/t, 100*n["hot30"]/t, 100*n["hot20"]/t }' "$1"
}

run() {
  local mode=$1 rep=$2 start end
  start=$(date +%s%N)
  case $mode in
    base) "$work" shares "$seconds" ;;
    perf-record) perf record -q -e cpu-clock -F 997 -g -o "$tmp/perf.$rep.data" "$work" shares "$seconds" 2>/dev/null ;;
    inprof-perf) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_ENGINE=perf INPROF_FREQUENCY=997 \
                   INPROF_OUTPUT="$tmp/perf-engine.$rep.folded" "$work" shares "$seconds" ;;
    inprof-timer) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_ENGINE=timer INPROF_FREQUENCY=997 \
                    INPROF_OUTPUT="$tmp/timer-engine.$rep.folded" "$work" shares "$seconds" ;;
  esac
  end=$(date +%s%N)
  echo "$mode $(( (end - start) / 1000000 ))" >>"$tmp/times"
}

for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do run "$mode" "$r"; done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
printf '%-13s %10s %8s   %s\n' mode median_ms ratio "leaf shares hot50/hot30/hot20 (expected 50/30/20), last run"
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  last=$((reps - 1))
  case $mode in
    base) s="-" ;;
    perf-record) s=$(shares_perf "$tmp/perf.$last.data") ;;
    inprof-perf) s=$(shares_folded "$tmp/perf-engine.$last.folded") ;;
    inprof-timer) s=$(shares_folded "$tmp/timer-engine.$last.folded") ;;
  esac
  printf '%-13s %10s %8.3f   %s\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')" "$s"
done
