#!/usr/bin/env bash
# inprof's engines side by side with `perf record` (software cpu-clock) on the 50/30/20
# workload (tests/sdk/fixtures/workload.cpp `shares`): attributed leaf shares from each (per
# run and pooled, with the largest gap to perf record's), and the wall-time overhead ratio of
# each against the unprofiled run, interleaved.
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

modes=(base perf-record inprof-perf inprof-timer inprof-itimer)

# Leaf counts of hot50/hot30/hot20 ("n50 n30 n20"), from `perf script` or from folded stacks.
counts_perf() {
  perf script -i "$1" -F ip,sym 2>/dev/null | awk '
    /^$/ { leaf = ""; next }
    leaf == "" { leaf = $2; if (leaf ~ /^hot(50|30|20)$/) n[leaf]++ }
    END { printf "%d %d %d\n", n["hot50"], n["hot30"], n["hot20"] }'
}
counts_folded() {
  awk '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";");
         if (f[k] ~ /^hot(50|30|20)$/) n[f[k]] += c }
       END { printf "%d %d %d\n", n["hot50"], n["hot30"], n["hot20"] }' "$1"
}
percent() { awk '{ t = $1 + $2 + $3; printf "%.1f/%.1f/%.1f", 100*$1/t, 100*$2/t, 100*$3/t }'; }

run() {
  local mode=$1 rep=$2 start end
  start=$(date +%s%N)
  case $mode in
    base) "$work" shares "$seconds" ;;
    perf-record) perf record -q -e cpu-clock -F 997 -g -o "$tmp/perf.$rep.data" "$work" shares "$seconds" 2>/dev/null ;;
    inprof-*) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_ENGINE="${mode#inprof-}" INPROF_FREQUENCY=997 \
                INPROF_OUTPUT="$tmp/$mode.$rep.folded" "$work" shares "$seconds" ;;
  esac
  end=$(date +%s%N)
  echo "$mode $(( (end - start) / 1000000 ))" >>"$tmp/times"
  case $mode in
    base) ;;
    perf-record) echo "$rep $(counts_perf "$tmp/perf.$rep.data")" >>"$tmp/counts.$mode" ;;
    *) echo "$rep $(counts_folded "$tmp/$mode.$rep.folded")" >>"$tmp/counts.$mode" ;;
  esac
}

for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do run "$mode" "$r"; done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
pooled() { awk '{ a += $2; b += $3; c += $4 } END { print a, b, c }' "$tmp/counts.$1"; }
echo "leaf shares hot50/hot30/hot20 (expected 50/30/20), per run, then pooled over $reps runs;"
echo "'vs perf' is the largest gap to perf record's pooled shares, in points"
printf '%-13s %10s %8s  %-18s %8s  %s\n' mode median_ms ratio pooled "vs perf" "per run"
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
  if [ "$mode" = base ]; then
    printf '%-13s %10s %8s\n' "$mode" "$m" "$ratio"
    continue
  fi
  per_run=$(while read -r _ a b c; do echo "$a $b $c" | percent; printf ' '; done <"$tmp/counts.$mode")
  gap=$(paste <(pooled perf-record) <(pooled "$mode") | awk '{
    t = $1 + $2 + $3; u = $4 + $5 + $6; g = 0
    for (i = 1; i <= 3; i++) { d = 100 * $i / t - 100 * $(i + 3) / u; if (d < 0) d = -d; if (d > g) g = d }
    printf "%.2f", g }')
  printf '%-13s %10s %8s  %-18s %8s  %s\n' "$mode" "$m" "$ratio" "$(pooled "$mode" | percent)" "$gap" "$per_run"
done
