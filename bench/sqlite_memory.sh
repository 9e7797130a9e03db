#!/usr/bin/env bash
# What inprof adds to a real program's peak resident size, and where it goes: sqlite3 on a
# ROWS-row in-memory table (bench/lib.sh, sqlite_workload), its peak RSS (getrusage's
# ru_maxrss, through /usr/bin/time) interleaved over REPS rounds in five modes:
#   base     sqlite3 alone
#   loaded   the library preloaded, no profile (the runtime idle)
#   raw      profiling into a raw profile (*.inprofraw, as under `inprof record`): sampling's
#            memory (rings, stack copies, the sample table, the module map), no symbolization
#   folded   profiling into folded stacks: the above plus symbolizing at exit (libdw, the
#            symbol cache, the symbolized profile)
#   pprof    profiling into pprof: the above with pprof's tables and compression
# Per mode: the median and worst (largest) of the per-round differences from that round's bare
# run, in MB; the steps between modes are the parts' shares.
#   bench/sqlite_memory.sh [BUILD_DIR] [REPS] [ROWS] [HZ]
# Defaults: build, 5 rounds, 700000 rows, the default rate (99 Hz). Needs sqlite3 and
# /usr/bin/time (Debian: sqlite3, time).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-5}
rows=${3:-700000}
hz=${4:-99}
lib="$PWD/$build/sdk/libinprof.so"
[ -f "$lib" ] || { echo "sqlite_memory.sh: build first (cmake --build $build)" >&2; exit 1; }
for tool in sqlite3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "sqlite_memory.sh: $tool not found (apt-get install sqlite3 time)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sqlite_workload "$rows" >"$tmp/work.sql"

modes=(base loaded raw folded pprof)
rss_kb() {  # rss_kb MODE: sqlite3's peak RSS in kB (env execs sqlite3: /usr/bin/time is not preloaded)
  local preload=() out=()
  case $1 in
    base) ;;
    loaded) preload=(LD_PRELOAD="$lib") ;;
    raw) out=(INPROF_OUTPUT="$tmp/p.inprofraw") ;;
    folded) out=(INPROF_OUTPUT="$tmp/p.folded") ;;
    pprof) out=(INPROF_OUTPUT="$tmp/p.pb.gz") ;;
  esac
  [ ${#out[@]} -eq 0 ] || preload=(LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_FREQUENCY="$hz" "${out[@]}")
  rm -f "$tmp"/p.*
  /usr/bin/time -f '%M' -o "$tmp/rss" env "${preload[@]}" sqlite3 :memory: <"$tmp/work.sql" >/dev/null
  cat "$tmp/rss"
}

: >"$tmp/rows"
for ((i = 0; i < reps; i++)); do
  line=""
  for mode in "${modes[@]}"; do line+=" $(rss_kb "$mode")"; done
  echo "${line# }" >>"$tmp/rows"
done

echo "sqlite3, $rows rows, $hz Hz, $reps interleaved rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| mode | median peak RSS MB | added MB, median | added MB, worst |\n|---|---|---|---|\n'
for ((m = 0; m < ${#modes[@]}; m++)); do
  col=$((m + 1))
  med=$(awk -v c="$col" '{ print $c / 1024 }' "$tmp/rows" | median)
  if [ "$m" -eq 0 ]; then
    printf '| %s | %.1f | | |\n' "${modes[m]}" "$med"
    continue
  fi
  added=$(awk -v c="$col" '{ print ($c - $1) / 1024 }' "$tmp/rows" | median)
  worst=$(awk -v c="$col" '{ d = ($c - $1) / 1024; if (NR == 1 || d > w) w = d } END { print w }' "$tmp/rows")
  printf '| %s | %.1f | %+.1f | %+.1f |\n' "${modes[m]}" "$med" "$added" "$worst"
done
