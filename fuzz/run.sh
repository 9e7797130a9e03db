#!/usr/bin/env bash
# Runs every fuzz target of a -DINPROF_FUZZ=ON build for SECONDS each, two at a time, and
# prints "N passed, N failed". A target fails when libFuzzer finds a crash, a leak, a
# timeout, undefined behaviour or a broken reader guarantee (fuzz/reader_checks.h); the input
# is left in BUILD_DIR/fuzz/artifacts/NAME/ -- add it to fuzz/corpus/NAME/ with the fix.
#   fuzz/run.sh [BUILD_DIR] [SECONDS] [JOBS]
# The working corpus grows in BUILD_DIR/fuzz/corpus/NAME/ across runs; the seeds (the
# committed goldens and fuzz/corpus/NAME/) are only read.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-25}
jobs=${3:-2}
list="$build/fuzz/targets.txt"
[ -f "$list" ] || { echo "fuzz/run.sh: configure $build with -DINPROF_FUZZ=ON first" >&2; exit 2; }

run_one() {
  local name=$1 seeds=$2
  local exe="$build/fuzz/inprof_${name}_fuzz" work="$build/fuzz/corpus/$name"
  local artifacts="$build/fuzz/artifacts/$name" log="$build/fuzz/$name.log"
  mkdir -p "$work" "$artifacts"
  local dirs=()
  IFS=',' read -r -a dirs <<<"$seeds"
  local existing=()
  for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a reader must not balloon.
  # INPROF_FUZZ_RUNS (CI sets it) makes the run a fixed number of inputs from a fixed seed:
  # the same inputs on every machine, so a CI result does not depend on the machine's speed
  # or luck; without it the target explores freely for SECONDS.
  local budget=(-max_total_time="$seconds")
  if [ -n "${INPROF_FUZZ_RUNS:-}" ]; then
    budget=(-runs="$INPROF_FUZZ_RUNS" -seed="${INPROF_FUZZ_SEED:-1}" -max_total_time=600)
  fi
  if "$exe" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$work" "${existing[@]}" >"$log" 2>&1; then
    echo "PASS $name ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs)"
  else
    echo "FAIL $name: see $log and $artifacts/"
    grep -m5 -E 'ERROR|SUMMARY|runtime error|round trip|does not|error ' "$log" | sed 's/^/    /'
  fi
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
running=0
while IFS='|' read -r name seeds; do
  [ -n "$name" ] || continue
  run_one "$name" "$seeds" >>"$results" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done <"$list"
wait
cat "$results"
passed=$(grep -c '^PASS' "$results")
failed=$(grep -c '^FAIL' "$results")
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
