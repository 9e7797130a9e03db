#!/usr/bin/env bash
# The long fuzzing pass behind docs/reliability.md's table: every target of a -DINPROF_FUZZ=ON
# build for RUNS inputs from a fixed seed (default 10 million), JOBS at a time (default 2),
# then one line per target with its executions, seconds and crashes, and a verdict.
#   fuzz/long.sh [BUILD_DIR] [RUNS] [JOBS] [TARGET...]
# With TARGETs, only those (names as in BUILD_DIR/fuzz/targets.txt, e.g. perf_report).
# INPROF_FUZZ_MAX_SECONDS caps each target's time (default: none); a capped target reports
# the executions it reached. INPROF_FUZZ_MAX_LEN sets libFuzzer's -max_len (default: its own,
# from the seeds); a large value (1048576) looks for inputs that take more than linear time,
# which -timeout then reports.
# As in fuzz/run.sh, a failing input is left in BUILD_DIR/fuzz/artifacts/NAME/ and the working
# corpus grows in BUILD_DIR/fuzz/corpus/NAME/; logs go to BUILD_DIR/fuzz/long/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
runs=${2:-10000000}
jobs=${3:-2}
shift $(($# < 3 ? $# : 3))
wanted=" $* "
list="$build/fuzz/targets.txt"
[ -f "$list" ] || { echo "fuzz/long.sh: configure $build with -DINPROF_FUZZ=ON first" >&2; exit 2; }
logs="$build/fuzz/long"
mkdir -p "$logs"

run_one() {
  local name=$1 seeds=$2
  local exe="$build/fuzz/inprof_${name}_fuzz" work="$build/fuzz/corpus/$name"
  local artifacts="$build/fuzz/artifacts/$name" log="$logs/$name.log"
  mkdir -p "$work" "$artifacts"
  local dirs=() existing=() d
  IFS=',' read -r -a dirs <<<"$seeds"
  for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  local extra=()
  [ -n "${INPROF_FUZZ_MAX_SECONDS:-}" ] && extra+=(-max_total_time="$INPROF_FUZZ_MAX_SECONDS")
  # -len_control=0: inputs up to the maximum from the start, not grown to it slowly.
  [ -n "${INPROF_FUZZ_MAX_LEN:-}" ] && extra+=(-max_len="$INPROF_FUZZ_MAX_LEN" -len_control=0)
  local start end rc
  start=$(date +%s)
  # -timeout: one input taking 10 s is a hang (or a superlinear path); -rss_limit_mb: a
  # reader must not balloon. Failures stop the target (libFuzzer's default), so "crashes" is
  # 0 or 1 and the input is in $artifacts.
  "$exe" -runs="$runs" -seed="${INPROF_FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" "$work" "${existing[@]}" \
    >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  local execs crashes=0
  execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  [ "$rc" -eq 0 ] || crashes=1
  printf '%-16s %12s %8s %8s\n' "$name" "${execs:-?}" "$((end - start))" "$crashes"
  if [ "$crashes" -ne 0 ]; then
    grep -m5 -E 'ERROR|SUMMARY|runtime error|round trip|does not|error |Test unit written' \
      "$log" | sed 's/^/    /'
  fi
}

# The list is read whole first: reconfiguring BUILD_DIR during a long pass rewrites it.
mapfile -t entries <"$list"
names=()
running=0
for entry in "${entries[@]}"; do
  IFS='|' read -r name seeds <<<"$entry"
  [ -n "$name" ] || continue
  [ -z "${wanted// /}" ] || [[ $wanted == *" $name "* ]] || continue
  names+=("$name")
  run_one "$name" "$seeds" >"$logs/$name.row" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
printf '%-16s %12s %8s %8s\n' target executions seconds crashes
failed=0
for name in "${names[@]}"; do
  cat "$logs/$name.row"
  grep -q -E '^[^ ]+ +[^ ]+ +[0-9]+ +1$' "$logs/$name.row" && failed=$((failed + 1))
done
echo "runs=$runs seed=${INPROF_FUZZ_SEED:-1} jobs=$jobs: $failed target(s) crashed"
[ "$failed" -eq 0 ]
