#!/usr/bin/env bash
# What the allocation profiler costs a program, in interleaved runs (medians and spread):
#  (a) an unsampled malloc(32) + free pair (bench/malloc_pair.c, timed inside the program):
#      without inprof, with libinprof preloaded and INPROF_EVENTS=cpu (the interposed
#      allocator switched off), and with INPROF_EVENTS=alloc at the default rate; ns per pair
#      and the ns each adds to the unprofiled pair;
#  (b) a real allocation-heavy program: sqlite3's insert phase (ROWS INSERT statements into an
#      indexed table in one transaction, in memory; about 25 allocations per row): wall time
#      without inprof, with INPROF_EVENTS=alloc at the default rate (profile written at exit,
#      included), under heaptrack on the same input, and with Debian's jemalloc alone, with
#      its own sampling profiler (prof:true) and with inprof. Targets: inprof <= 1.03x the
#      unprofiled wall time, and >= 10x less added time than heaptrack.
#   bench/alloc_overhead.sh [BUILD_DIR] [REPETITIONS] [ROWS] [PAIRS]
# Defaults: build, 7 repetitions, 200000 rows, 20000000 pairs. Needs sqlite3 and heaptrack
# (installed with scripts/install-deps bench when missing). While the runtime does not know
# the alloc event the alloc modes are left out and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-7}
rows=${3:-200000}
pairs=${4:-20000000}
pair="$build/bench/inprof_malloc_pair"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$pair" ] && [ -f "$lib" ] || { echo "alloc_overhead.sh: build first (cmake --build $build --target inprof inprof_malloc_pair)" >&2; exit 1; }
if ! command -v sqlite3 >/dev/null || ! command -v heaptrack >/dev/null; then
  scripts/install-deps bench
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Does the runtime know the alloc event? (It refuses an unknown event and runs unprofiled.)
alloc=1
if LD_PRELOAD="$lib" INPROF_EVENTS=alloc INPROF_OUTPUT="$tmp/probe.folded" /bin/true 2>&1 |
   grep -Eq 'unknown event|INPROF_EVENTS: invalid'; then
  alloc=0
  echo "(the runtime does not know INPROF_EVENTS=alloc: alloc modes left out)" >&2
fi

# "mode value" lines -> per mode: median, min, max, and the median's difference from and ratio
# to BASE's median.
spread_table() {
  local values=$1 base_mode=$2 unit=$3 base m
  shift 3
  base=$(awk -v m="$base_mode" '$1 == m { print $2 }' "$values" | median)
  printf '| mode | median %s | min | max | added %s | ratio |\n|---|---|---|---|---|---|\n' "$unit" "$unit"
  for mode in "$@"; do
    m=$(awk -v m="$mode" '$1 == m { print $2 }' "$values" | median)
    awk -v m="$mode" -v med="$m" -v b="$base" '$1 == m { v = $2; if (n == 0 || v < lo) lo = v; if (n == 0 || v > hi) hi = v; n++ }
      END { printf "| %s | %.2f | %.2f | %.2f | %+.2f | %.3f |\n", m, med, lo, hi, med - b, med / b }' "$values"
  done
}

# (a) the unsampled pair.
pair_modes=(base cpu)
[ "$alloc" -eq 1 ] && pair_modes+=(alloc)
run_pair() {
  case $1 in
    base) "$pair" "$pairs" ;;
    cpu) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_EVENTS=cpu INPROF_OUTPUT="$tmp/c.folded" "$pair" "$pairs" ;;
    alloc) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_EVENTS=alloc INPROF_OUTPUT="$tmp/a.folded" "$pair" "$pairs" ;;
  esac
}
for ((r = 0; r < reps; r++)); do
  for mode in "${pair_modes[@]}"; do echo "$mode $(run_pair "$mode")" >>"$tmp/pairs"; done
done
echo "(a) malloc(32) + free, $pairs pairs per run, $reps runs per mode (ns per pair)"
spread_table "$tmp/pairs" base ns "${pair_modes[@]}"
echo

# (b) sqlite3's inserts: one statement per row, so every row is parsed and prepared (the
# allocations of a real client), into a table with an index, in one transaction.
awk -v rows="$rows" 'BEGIN {
  print "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);"
  print "CREATE INDEX tb ON t(b);"
  print "BEGIN;"
  for (i = 0; i < rows; i++)
    printf "INSERT INTO t(b, c) VALUES (\x27row%08d-%x\x27, %d.%d);\n", (i * 7919) % rows, (i * 2654435761) % 4294967296, i % 1000, i % 97
  print "COMMIT;"
  print "SELECT count(*) FROM t;"
}' >"$tmp/insert.sql"
sql_modes=(base)
[ "$alloc" -eq 1 ] && sql_modes+=(inprof)
sql_modes+=(heaptrack)
# Beside jemalloc's own sampling profiler (Debian's libjemalloc2 is built with it): jemalloc
# alone, with prof:true at the same mean interval (lg_prof_sample:19, 512 KiB), and with
# inprof preloaded before it (the program's allocations still go to jemalloc).
jemalloc=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -n 1 || true)
if [ -n "$jemalloc" ]; then
  sql_modes+=(jemalloc jemalloc_prof)
  [ "$alloc" -eq 1 ] && sql_modes+=(jemalloc_inprof)
fi
# Prints "wall_ms cpu_ms": wall time, and the user + system CPU time of the process and its
# children (heaptrack's interpreter included), which a loaded machine disturbs less.
run_sql() {
  local TIMEFORMAT='%R %U %S'
  {
    time case $1 in
      base) sqlite3 :memory: <"$tmp/insert.sql" >/dev/null ;;
      inprof) LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_EVENTS=alloc INPROF_OUTPUT="$tmp/s.folded" \
                sqlite3 :memory: <"$tmp/insert.sql" >/dev/null ;;
      heaptrack) heaptrack -o "$tmp/h" sqlite3 :memory: <"$tmp/insert.sql" >/dev/null 2>&1 ;;
      jemalloc) LD_PRELOAD="$jemalloc" sqlite3 :memory: <"$tmp/insert.sql" >/dev/null ;;
      jemalloc_prof) MALLOC_CONF=prof:true,lg_prof_sample:19 LD_PRELOAD="$jemalloc" \
                       sqlite3 :memory: <"$tmp/insert.sql" >/dev/null ;;
      jemalloc_inprof) LD_PRELOAD="$lib $jemalloc" INPROF_QUIET=1 INPROF_EVENTS=alloc \
                         INPROF_OUTPUT="$tmp/s.folded" sqlite3 :memory: <"$tmp/insert.sql" >/dev/null ;;
    esac
  } 2>&1 | tail -n 1 | awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }'
}
run_sql base >/dev/null  # warm the page cache
for ((r = 0; r < reps; r++)); do
  for mode in "${sql_modes[@]}"; do
    read -r wall cpu < <(run_sql "$mode")
    echo "$mode $wall" >>"$tmp/sql"
    echo "$mode $cpu" >>"$tmp/sql_cpu"
    rm -f "$tmp"/h.* "$tmp"/s.*
  done
done
echo "(b) sqlite3 :memory:, $rows INSERT statements with an index in one transaction, $reps runs per mode"
echo "wall time, ms:"
spread_table "$tmp/sql" base ms "${sql_modes[@]}"
echo "CPU time (user + system, children included), ms:"
spread_table "$tmp/sql_cpu" base ms "${sql_modes[@]}"
if [ "$alloc" -eq 1 ]; then
  echo
  for what in wall:sql cpu:sql_cpu; do
    base=$(awk '$1 == "base" { print $2 }' "$tmp/${what#*:}" | median)
    inprof=$(awk '$1 == "inprof" { print $2 }' "$tmp/${what#*:}" | median)
    heap=$(awk '$1 == "heaptrack" { print $2 }' "$tmp/${what#*:}" | median)
    awk -v w="${what%%:*}" -v b="$base" -v i="$inprof" -v h="$heap" 'BEGIN {
      ai = i - b; ah = h - b
      printf "%s time: inprof %.3fx the unprofiled run (target <= 1.03x): %s; ", w, i / b, (i / b <= 1.03) ? "met" : "NOT met"
      if (ai <= 0) printf "added: inprof %+.0f ms (within the noise), heaptrack %+.0f ms: met\n", ai, ah
      else printf "added: heaptrack %.0f ms / inprof %.0f ms = %.1fx (target >= 10x): %s\n", ah, ai, ah / ai, (ah / ai >= 10) ? "met" : "NOT met"
    }'
  done
fi
if [ -n "$jemalloc" ]; then
  je=$(awk '$1 == "jemalloc" { print $2 }' "$tmp/sql" | median)
  jp=$(awk '$1 == "jemalloc_prof" { print $2 }' "$tmp/sql" | median)
  ji=$(awk '$1 == "jemalloc_inprof" { print $2 }' "$tmp/sql" | median)
  awk -v je="$je" -v jp="$jp" -v ji="${ji:-0}" 'BEGIN {
    printf "under jemalloc, wall time: its own prof:true %.3fx", jp / je
    if (ji > 0) printf ", inprof %.3fx", ji / je
    printf " (jemalloc alone %d ms)\n", je }'
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
