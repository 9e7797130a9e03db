#!/usr/bin/env bash
# What `inprof record` costs a whole process tree, side by side with the same tree unprofiled
# in one run, interleaved, medians and ratios (docs/record.md, "Cost"):
#   loop   a shell loop that starts 200 short processes (sha256sum of 64 KB, about 1 ms each)
#   build  `make -j2` of a generated 40-file C++ project (bench/gen_cxx_project.sh), from clean
# each unprofiled (base) and under `inprof record` at the default rate (record). Then checks
# that the last recorded build's profile shows the compiler (cc1plus) as the dominant process
# and prints what the recorder said it symbolized.
#   bench/record_tree.sh [BUILD_DIR] [REPS] [FILES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-5}
files=${3:-40}
inprof="$PWD/$build/viewer/inprof"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$inprof" ] && [ -f "$lib" ] || { echo "record_tree.sh: build first (cmake --build $build)" >&2; exit 1; }
export INPROF_LIBRARY="$lib"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 65536 /dev/urandom >"$tmp/data"
loop="for i in \$(seq 200); do sha256sum '$tmp/data' >/dev/null; done"
bench/gen_cxx_project.sh "$tmp/project" "$files"

ms() { echo $(( ($2 - $1) / 1000000 )); }
run_loop() {
  local start end
  start=$(date +%s%N)
  if [ "$1" = base ]; then
    sh -c "$loop"
  else
    rm -rf "$tmp/loop-out"
    "$inprof" record -q -o "$tmp/loop-out" -- sh -c "$loop" 2>>"$tmp/loop.err"
  fi
  end=$(date +%s%N)
  ms "$start" "$end"
}
run_build() {
  local start end
  make -s -C "$tmp/project" clean
  start=$(date +%s%N)
  if [ "$1" = base ]; then
    make -s -C "$tmp/project" -j2 >/dev/null
  else
    rm -rf "$tmp/build-out"
    "$inprof" record -o "$tmp/build-out" -- make -s -C "$tmp/project" -j2 >/dev/null \
      2>"$tmp/build.err"
  fi
  end=$(date +%s%N)
  ms "$start" "$end"
}

run_loop base >/dev/null  # warm the page cache and the symbol cache
run_loop record >/dev/null
for ((r = 0; r < reps; r++)); do
  # Alternate which mode goes first, so drift in the machine's load hits both alike.
  if ((r % 2 == 0)); then order=(base record); else order=(record base); fi
  for mode in "${order[@]}"; do echo "loop_$mode $(run_loop "$mode")" >>"$tmp/times"; done
  for mode in "${order[@]}"; do echo "build_$mode $(run_build "$mode")" >>"$tmp/times"; done
done

echo "== 200-process shell loop (target: record <= 1.5 x base)"
ratio_table "$tmp/times" loop_base loop_base loop_record
echo "== make -j2, $files C++ files (target: record <= 1.05 x base)"
ratio_table "$tmp/times" build_base build_base build_record
echo "== the last recorded build"
# The process tree's root frames and their shares, from the folded stacks.
awk '{ n = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[1]); w[f[1]] += n; t += n }
     END { for (k in w) printf "%6.1f%% %s\n", 100 * w[k] / t, k }' \
  "$tmp/build-out/profile.folded" | sort -rn | head -n 5
top=$(awk '{ n = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[1]); w[f[1]] += n; t += n }
           END { for (k in w) if (w[k] > best) { best = w[k]; name = k }; print name }' \
  "$tmp/build-out/profile.folded")
grep -E "^symbolized|took samples" "$tmp/build.err" || true
if [ "$top" = cc1plus ]; then
  echo "dominant process: cc1plus (ok)"
else
  echo "dominant process: $top (expected cc1plus)"
  exit 1
fi
