#!/usr/bin/env bash
# `inprof flame` beside Brendan Gregg's flamegraph.pl on one big folded file (default 60,000
# distinct stacks, 8-48 frames deep, from bench/flame_stacks.py), run alternately, and the
# ratio of their median times. The target is inprof at least 60x faster.
#   bench/flame_vs_flamegraph.sh [FLAMEGRAPH_PL] [BUILD_DIR] [REPETITIONS] [STACKS]
# FLAMEGRAPH_PL (or the environment variable of that name) is flamegraph.pl from
# https://github.com/brendangregg/FlameGraph; this script never downloads it. Put a copy
# anywhere outside the repository, e.g. /tmp/flamegraph.pl. Without it, or without perl
# or python3, the script says so and exits 0 (nothing to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
flamegraph=${1:-${FLAMEGRAPH_PL:-}}
build=${2:-build}
reps=${3:-5}
stacks=${4:-60000}
inprof="$build/viewer/inprof"

skip() { echo "flame_vs_flamegraph.sh: skipped: $*" >&2; exit 0; }
command -v perl >/dev/null || skip "perl is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (it generates the input)"
[ -n "$flamegraph" ] || skip "no flamegraph.pl given (argument 1 or FLAMEGRAPH_PL)"
[ -f "$flamegraph" ] || skip "$flamegraph does not exist"
[ -x "$inprof" ] || { echo "flame_vs_flamegraph.sh: build first (cmake --build $build --target inprof_viewer)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
input="$tmp/big.folded"
python3 bench/flame_stacks.py "$stacks" > "$input"
echo "input: $(wc -l < "$input") distinct stacks, $(awk -F';' '{ n += NF } END { print n }' "$input") frames, $(du -h "$input" | cut -f1)"

# Seconds of wall and of CPU (user + system) for one run of `COMMAND... > OUT`, from bash's
# `time`; a failing run stops the comparison.
measure() {
  local out=$1 TIMEFORMAT='%R %U %S' line
  shift
  if ! line=$( { time "$@" > "$out" 2> "$tmp/stderr"; } 2>&1 ); then
    echo "flame_vs_flamegraph.sh: failed: $*" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$line"
}

walls_inprof=() cpus_inprof=() walls_pl=() cpus_pl=()
for ((i = 1; i <= reps; i++)); do
  result=$(measure "$tmp/inprof.svg" "$inprof" flame "$input")
  read -r wall cpu <<<"$result"
  walls_inprof+=("$wall") cpus_inprof+=("$cpu")
  result=$(measure "$tmp/flamegraph.svg" perl "$flamegraph" "$input")
  read -r wall2 cpu2 <<<"$result"
  walls_pl+=("$wall2") cpus_pl+=("$cpu2")
  printf 'run %d: inprof flame %6.3f s (cpu %6.3f s)   flamegraph.pl %7.3f s (cpu %7.3f s)\n' \
    "$i" "$wall" "$cpu" "$wall2" "$cpu2"
done

# Both drew the same profile: the root box holds every sample.
total() { grep -o '<title>all ([0-9,]* samples' "$1" | head -n 1 | tr -dc '0-9'; }
[ "$(total "$tmp/inprof.svg")" = "$(total "$tmp/flamegraph.svg")" ] ||
  { echo "flame_vs_flamegraph.sh: the two graphs disagree on the total" >&2; exit 1; }
echo "both: $(total "$tmp/inprof.svg") samples in the root box; svg sizes: inprof $(du -h "$tmp/inprof.svg" | cut -f1), flamegraph.pl $(du -h "$tmp/flamegraph.svg" | cut -f1)"

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
wi=$(median "${walls_inprof[@]}") wp=$(median "${walls_pl[@]}")
ci=$(median "${cpus_inprof[@]}") cp=$(median "${cpus_pl[@]}")
awk -v wi="$wi" -v wp="$wp" -v ci="$ci" -v cp="$cp" 'BEGIN {
  printf "median wall: inprof flame %.3f s, flamegraph.pl %.3f s, ratio %.1fx\n", wi, wp, wp / wi
  printf "median cpu:  inprof flame %.3f s, flamegraph.pl %.3f s, ratio %.1fx\n", ci, cp, cp / ci
  ok = wp / wi >= 60 && cp / ci >= 60
  printf "target (>= 60x faster, wall and cpu): %s\n", ok ? "met" : "NOT met"
  exit ok ? 0 : 1
}'
