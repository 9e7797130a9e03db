#!/usr/bin/env bash
# What a fork costs a profiled program: N forks whose children _exit at once (before their
# first sample), per fork in microseconds, interleaved over REPS rounds: without inprof, with
# the library loaded but idle, profiling with forks followed (the default) and not followed;
# the median of each and its difference from the run without inprof.
#   bench/fork.sh [BUILD_DIR] [REPS] [FORKS] [threads|threads=N]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
forks=${3:-2000}
extra=${4:-}
prog="$build/bench/inprof_fork_cost"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$prog" ] && [ -f "$lib" ] || { echo "fork.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
modes=(base loaded follow nofollow)
run() {
  case $1 in
    base) "$prog" "$forks" $extra ;;
    loaded) LD_PRELOAD="$lib" "$prog" "$forks" $extra ;;
    follow) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_OUTPUT="$tmp/p.folded" "$prog" "$forks" $extra ;;
    nofollow) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_FOLLOW_FORK=0 INPROF_OUTPUT="$tmp/p.folded" "$prog" "$forks" $extra ;;
  esac
}
for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do echo "$mode $(run "$mode")" >>"$tmp/times"; done
done
# Children that took no sample must leave nothing: only the parent's file. A child that was
# sampled in its few microseconds (its first period starts at a random point) writes its own
# p.<pid>.folded, with that sample in it; a child's file without a sample is a failure.
children=$(find "$tmp" -name 'p.*.folded' | wc -l)
empty=0
while IFS= read -r f; do
  grep -q '[^[:space:]]' "$f" || empty=$((empty + 1))
done < <(find "$tmp" -name 'p.*.folded')
base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %12s %12s\n' mode us_per_fork minus_base
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  printf '%-10s %12s %12.1f\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a - b }')"
done
echo "children that were sampled and wrote their own profile: $children"
echo "files left by children without samples: $empty"
