#!/usr/bin/env bash
# DWARF unwinding, whole process: the 50/30/20 workload built without frame pointers
# (inprof_workload_nofp `shares`, two threads) unprofiled, under `perf record --call-graph dwarf`
# and under inprof with unwind=dwarf, auto and fp at the default rate (99 Hz), interleaved.
# Reports the median wall-time ratio of each against the unprofiled run and the share of
# samples whose stack is complete (reaches main or the thread's start routine).
#   bench/dwarf_overhead.sh [BUILD_DIR] [REPETITIONS] [SECONDS_PER_THREAD]
# Needs perf (Debian: linux-perf) and perf_event_paranoid <= 2 for the perf column.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
seconds=${3:-3}
work="$build/tests/sdk/inprof_workload_nofp"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$work" ] && [ -f "$lib" ] || { echo "dwarf_overhead.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

modes=(base inprof-dwarf inprof-auto inprof-fp)
if command -v perf >/dev/null; then modes+=(perf-dwarf); else echo "(perf not found: no perf column)"; fi

complete_folded() {
  awk '{ c = $NF; t += c; if ($0 ~ /(^|;)(main|start_thread)(;|$)/) k += c }
       END { printf "%.1f", t ? 100 * k / t : 0 }' "$1"
}
complete_perf() {
  perf script -i "$1" -F ip,sym 2>/dev/null | awk '
    /^[[:space:]]*$/ { if (n) { t++; if (ok) k++ } n = 0; ok = 0; next }
    { n++; if ($2 == "main" || $2 == "start_thread") ok = 1 }
    END { if (n) { t++; if (ok) k++ } printf "%.1f", t ? 100 * k / t : 0 }'
}

run() {
  local mode=$1 rep=$2 start end
  start=$(date +%s%N)
  case $mode in
    base) "$work" shares "$seconds" ;;
    perf-dwarf) perf record -q -F 99 --call-graph dwarf -o "$tmp/perf.$rep.data" "$work" shares "$seconds" 2>/dev/null ;;
    inprof-*) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_UNWIND="${mode#inprof-}" \
                INPROF_OUTPUT="$tmp/$mode.$rep.folded" "$work" shares "$seconds" ;;
  esac
  end=$(date +%s%N)
  echo "$mode $(( (end - start) / 1000000 ))" >>"$tmp/times"
}

for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do run "$mode" "$r"; done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
last=$((reps - 1))
printf '%-13s %10s %8s  %s\n' mode median_ms ratio "complete stacks % (last run)"
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  case $mode in
    base) c="-" ;;
    perf-dwarf) c=$(complete_perf "$tmp/perf.$last.data") ;;
    *) c=$(complete_folded "$tmp/$mode.$last.folded") ;;
  esac
  printf '%-13s %10s %8.3f  %s\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')" "$c"
done
