#!/usr/bin/env bash
# `inprof top` on a ~100 MB annotation JSON: generates the file once with
# bench/viewer_profile_gen.cpp (deterministic: same bytes on every machine), then times
# REPETITIONS runs after one warm-up run (page cache hot) and reports the median and range.
#   bench/viewer_top.sh [BUILD_DIR] [REPETITIONS] [SCALE]
# SCALE 1 is about 100 MB; the generated file is kept in BUILD_DIR/bench/ for later runs.
# Target: median under 1 s at SCALE 1.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-7}
scale=${3:-1}
viewer="$build/viewer/inprof"
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

times=()
"$viewer" top "$json" >/dev/null  # warm the page cache
for ((r = 0; r < reps; r++)); do
  start=$(date +%s%N)
  "$viewer" top "$json" >/dev/null
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000000 )))
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' <<<"$sorted")
printf 'inprof top on %s (%.1f MB), %d runs: median %s ms (min %s, max %s)\n' "$json" \
  "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" "$reps" "$median" \
  "$(head -n 1 <<<"$sorted")" "$(tail -n 1 <<<"$sorted")"
