#!/usr/bin/env bash
# A real program without frame pointers at a high rate: sqlite3 on a ROWS-row in-memory table
# (bench/lib.sh, sqlite_workload) unprofiled, under inprof at HZ with its default unwinder
# (DWARF for sqlite3: stacks copied in the handler, unwound and symbolized in the same run),
# the same with the perf engine's period redraw off (INPROF_DITHER=0: two system calls per
# sample less), with frame pointers only (INPROF_UNWIND=fp: what the stack copy and the DWARF
# unwinding cost together), and under `perf record -F HZ --call-graph dwarf` (which copies
# stacks too and unwinds later, in `perf report`), interleaved over REPS rounds; and under
# bench/signal_floor.c, which takes the same perf_event signals at HZ and does nothing with
# them: the floor of any sampler whose samples are signals, on this machine. Prints each
# mode's median wall time, its ratio to the unprofiled run and the spread, and inprof's summary
# line of the last round (samples taken, their rate).
#   bench/sqlite_overhead.sh [BUILD_DIR] [REPS] [HZ] [ROWS]
# Defaults: build, 7 rounds, 999 Hz, 700000 rows. Needs sqlite3; perf (Debian: linux-perf)
# and perf_event_paranoid <= 2 for the perf column.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
hz=${3:-999}
rows=${4:-700000}
lib="$PWD/$build/sdk/libinprof.so"
[ -f "$lib" ] || { echo "sqlite_overhead.sh: build first (cmake --build $build)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite_overhead.sh: sqlite3 not found (apt-get install sqlite3)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sqlite_workload "$rows" >"$tmp/work.sql"

floor_lib="$PWD/$build/bench/libinprof_bench_signal_floor.so"
modes=(base inprof inprof-nodither inprof-fp)
if [ -f "$floor_lib" ]; then modes+=(signal-floor); else echo "(no $floor_lib: no signal-floor column; cmake --build $build --target inprof_bench_signal_floor)"; fi
if command -v perf >/dev/null; then modes+=(perf-dwarf); else echo "(perf not found: no perf column)"; fi

run() {  # run MODE: appends "MODE milliseconds"
  local mode=$1 start end
  start=$(date +%s%N)
  case $mode in
    base) sqlite3 :memory: <"$tmp/work.sql" >/dev/null ;;
    inprof) LD_PRELOAD="$lib" INPROF_FREQUENCY="$hz" INPROF_OUTPUT="$tmp/p.folded" \
              sqlite3 :memory: <"$tmp/work.sql" >/dev/null 2>"$tmp/summary" ;;
    inprof-nodither) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_DITHER=0 INPROF_FREQUENCY="$hz" \
                       INPROF_OUTPUT="$tmp/p.folded" sqlite3 :memory: <"$tmp/work.sql" >/dev/null ;;
    inprof-fp) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_UNWIND=fp INPROF_FREQUENCY="$hz" \
                 INPROF_OUTPUT="$tmp/p.folded" sqlite3 :memory: <"$tmp/work.sql" >/dev/null ;;
    signal-floor) LD_PRELOAD="$floor_lib" SIGNAL_FLOOR_HZ="$hz" \
                    sqlite3 :memory: <"$tmp/work.sql" >/dev/null ;;
    perf-dwarf) perf record -q -F "$hz" --call-graph dwarf -o "$tmp/perf.data" -- \
                  sqlite3 :memory: <"$tmp/work.sql" >/dev/null 2>&1 ;;
  esac
  end=$(date +%s%N)
  rm -f "$tmp"/p.*
  echo "$mode $(((end - start) / 1000000))" >>"$tmp/times"
}

for ((r = 0; r < reps; r++)); do
  for mode in "${modes[@]}"; do run "$mode"; done
done

base=$(awk '$1 == "base" { print $2 }' "$tmp/times" | median)
echo "sqlite3, $rows rows, $hz Hz, $reps interleaved rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| mode | median ms | ratio | min–max ms |\n|---|---|---|---|\n'
for mode in "${modes[@]}"; do
  m=$(awk -v m="$mode" '$1 == m { print $2 }' "$tmp/times" | median)
  range=$(awk -v m="$mode" '$1 == m { if (n == 0 || $2 < lo) lo = $2; if (n == 0 || $2 > hi) hi = $2; n++ }
            END { print lo "–" hi }' "$tmp/times")
  printf '| %s | %s | %.3f | %s |\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')" "$range"
done
echo "inprof's summary, last round:"
grep '^inprof: engine=' "$tmp/summary" || cat "$tmp/summary"
