#!/usr/bin/env bash
# `inprof top` on a ~100 MB annotation JSON: generates the file once with
# bench/viewer_profile_gen.cpp (deterministic: same bytes on every machine), then times
# REPETITIONS runs after one warm-up run (page cache hot) and reports the median wall time
# and the median CPU time (user + system; on a busy shared machine the wall time mostly
# measures the neighbours).
#   bench/viewer_top.sh [BUILD_DIR] [REPETITIONS] [SCALE]
# SCALE 1 is about 100 MB; the generated file is kept in BUILD_DIR/bench/ for later runs.
# VIEWER=/path/to/inprof times another build of the viewer on the same file.
# Target: median under 1 s at SCALE 1.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-7}
scale=${3:-1}
viewer=${VIEWER:-$build/viewer/inprof}
gen="$build/bench/inprof_viewer_profile_gen"
[ -x "$viewer" ] && [ -x "$gen" ] || {
  echo "viewer_top.sh: build first (cmake --build $build --target inprof_viewer inprof_viewer_profile_gen)" >&2
  exit 1
}
json="$build/bench/viewer_top_$scale.json"
if [ ! -f "$json" ] || [ "$gen" -nt "$json" ]; then
  echo "generating $json ..." >&2
  "$gen" "$json" "$scale"
fi
size=$(stat -c %s "$json")

times=$(mktemp)
trap 'rm -f "$times"' EXIT
"$viewer" top "$json" >/dev/null  # warm the page cache
TIMEFORMAT='%R %U %S'
for ((r = 0; r < reps; r++)); do
  { time "$viewer" top "$json" >/dev/null; } 2>>"$times"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
wall=$(awk '{ print $1 * 1000 }' "$times" | median)
cpu=$(awk '{ print ($2 + $3) * 1000 }' "$times" | median)
range=$(awk '{ print $1 * 1000 }' "$times" | sort -n | awk 'NR == 1 { min = $1 } { max = $1 } END { print min "-" max }')
printf '%s top on %s (%.1f MB), %d runs: median wall %s ms (range %s), median CPU %s ms\n' \
  "$viewer" "$json" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" "$reps" "$wall" "$range" "$cpu"
