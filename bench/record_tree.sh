#!/usr/bin/env bash
# What `inprof record` costs a whole process tree, side by side with the same tree unprofiled
# in one run, interleaved, medians and ratios (docs/record.md, "Cost"):
#   loop   a shell loop that starts 200 short processes (sha256sum of 64 KB, about 1 ms each)
#   build  `make -j2` of a generated 40-file C++ project (bench/gen_cxx_project.sh), from clean
# each unprofiled (base) and under `inprof record` at the default rate (record); the loop also
# with libinprof.so merely preloaded, nothing profiled (loaded), which is the share of the
# cost that loading the runtime into 200 processes takes. Then checks
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

# timed MODE CMD...: runs CMD, appends "MODE wall_ms" and "MODE_cpu cpu_ms" (user + system
# time of the whole tree, the recorder's own symbolization included) to the times file. On a
# shared machine the CPU time is the steadier measure: other jobs stretch wall time only.
timed() {
  local mode=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@"
  awk -v m="$mode" '{ printf "%s %d\n%s_cpu %d\n", m, $1 * 1000, m, ($2 + $3) * 1000 }' \
    "$tmp/time" >>"$tmp/times"
}
run_loop() {
  case $1 in
    base) timed loop_base sh -c "$loop" ;;
    loaded) timed loop_loaded env LD_PRELOAD="$lib" sh -c "$loop" ;;
    record)
      rm -rf "$tmp/loop-out"
      timed loop_record "$inprof" record -q -o "$tmp/loop-out" -- sh -c "$loop" 2>>"$tmp/loop.err"
      ;;
  esac
}
run_build() {
  make -s -C "$tmp/project" clean
  if [ "$1" = base ]; then
    timed build_base make -s -C "$tmp/project" -j2 >/dev/null
  else
    rm -rf "$tmp/build-out"
    timed build_record "$inprof" record -o "$tmp/build-out" -- make -s -C "$tmp/project" -j2 \
      >/dev/null 2>"$tmp/build.err"
  fi
}

run_loop base  # warm the page cache and the symbol cache
run_loop record
: >"$tmp/times"
for ((r = 0; r < reps; r++)); do
  # Alternate which mode goes first, so drift in the machine's load hits both alike.
  if ((r % 2 == 0)); then order=(base record); else order=(record base); fi
  for mode in "${order[@]}" loaded; do run_loop "$mode"; done
  for mode in "${order[@]}"; do run_build "$mode"; done
done

echo "== 200-process shell loop (target: record <= 1.5 x base), wall ms"
ratio_table "$tmp/times" loop_base loop_base loop_loaded loop_record
echo "   CPU ms"
ratio_table "$tmp/times" loop_base_cpu loop_base_cpu loop_loaded_cpu loop_record_cpu | tail -n +2
echo "== make -j2, $files C++ files (target: record <= 1.05 x base), wall ms"
ratio_table "$tmp/times" build_base build_base build_record
echo "   CPU ms"
ratio_table "$tmp/times" build_base_cpu build_base_cpu build_record_cpu | tail -n +2
echo "== the last recorded build"
# The process tree's root frames and their shares, from the folded stacks.
awk '{ n = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[1]); w[f[1]] += n; t += n }
     END { for (k in w) printf "%6.1f%% %s\n", 100 * w[k] / t, k }' \
  "$tmp/build-out/profile.folded" | sort -rn | head -n 5
top=$(awk '{ n = $NF; split($0, f, ";"); sub(/ [0-9]+$/, "", f[1]); w[f[1]] += n; t += n }
           END { for (k in w) if (w[k] > best) { best = w[k]; name = k }; print name }' \
  "$tmp/build-out/profile.folded")
grep -E "^symbolized|^Processes by" "$tmp/build.err" || true
if [ "$top" = cc1plus ]; then
  echo "dominant process: cc1plus (ok)"
else
  echo "dominant process: $top (expected cc1plus)"
  exit 1
fi
