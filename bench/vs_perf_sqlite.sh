#!/usr/bin/env bash
# A large real program: sqlite3's self (leaf) shares per function under inprof's default
# engine against `perf record -e cpu-clock` on the same SQL, user-space samples only on both
# sides (unprivileged perf_event excludes the kernel; perf record's [k] samples are left out
# and the rest renormalised). Prints the top functions by perf's share, both shares, and the
# largest gap among the top 15.
#   bench/vs_perf_sqlite.sh [BUILD_DIR] [REPETITIONS] [HZ] [ROWS]
# Needs perf (Debian: linux-perf), sqlite3, and its debug symbols for names of static
# functions (libsqlite3-0-dbgsym); perf_event_paranoid <= 2.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build=${1:-build}
reps=${2:-2}
hz=${3:-1999}
rows=${4:-1200000}
lib="$PWD/$build/sdk/libinprof.so"
[ -f "$lib" ] || { echo "vs_perf_sqlite.sh: build first (cmake --build $build)" >&2; exit 1; }
for tool in perf sqlite3; do
  command -v $tool >/dev/null || { echo "vs_perf_sqlite.sh: $tool not found" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sqlite_workload "$rows" >"$tmp/work.sql"

# "count function" lines, summed over the repetitions.
: >"$tmp/perf.counts"
: >"$tmp/inprof.counts"
for rep in $(seq "$reps"); do
  perf record -q -e cpu-clock -F "$hz" -o "$tmp/perf.data" -- sqlite3 :memory: <"$tmp/work.sql" >/dev/null 2>&1
  perf script -i "$tmp/perf.data" -F ip,sym,dso 2>/dev/null |
    awk '$1 !~ /^ffff/ { dso = $NF; $1 = ""; $NF = ""; sub(/^ +/, ""); sub(/ +$/, "");
                         if ($0 == "" || $0 == "[unknown]") $0 = "[unknown] " dso; n[$0]++ }
         END { for (f in n) print n[f], f }' >>"$tmp/perf.counts"
  LD_PRELOAD="$lib" INPROF_OUTPUT="$tmp/i.folded" INPROF_FREQUENCY="$hz" INPROF_QUIET=1 \
    sqlite3 :memory: <"$tmp/work.sql" >/dev/null
  awk '{ c = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); n[f[k]] += c }
       END { for (x in n) print n[x], x }' "$tmp/i.folded" >>"$tmp/inprof.counts"
  echo "repetition $rep done" >&2
done

awk -v top=15 '
  FNR == 1 { file++ }
  { c = $1; $1 = ""; sub(/^ /, ""); if (file == 1) { p[$0] += c; pt += c } else { q[$0] += c; qt += c } }
  END {
    # Code without a symbol: perf script names it [unknown], inprof DSO+0xOFFSET; compared as
    # one total, not ranked.
    for (f in p) if (f ~ /^\[unknown\]/) pu += p[f]
    for (f in q) if (f ~ /\+0x[0-9a-f]+$/ || f ~ /^\[unknown\]/) qu += q[f]
    n = 0
    for (f in p) if (f !~ /^\[unknown\]/) names[++n] = f
    # sort by perf count, descending
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (p[names[j]] > p[names[i]]) { t = names[i]; names[i] = names[j]; names[j] = t }
    printf "| function | perf record %% | inprof %% | gap (pts) |\n|---|---|---|---|\n"
    worst = 0
    for (i = 1; i <= top && i <= n; i++) {
      f = names[i]; a = 100 * p[f] / pt; b = 100 * q[f] / qt; d = b - a; if (d < 0) d = -d
      if (d > worst) worst = d
      printf "| %s | %.2f | %.2f | %.2f |\n", f, a, b, d
    }
    printf "| (code without a symbol) | %.2f | %.2f | %.2f |\n", 100 * pu / pt, 100 * qu / qt, 100 * pu / pt - 100 * qu / qt
    printf "\nsamples: perf record %d, inprof %d; largest gap in the top %d: %.2f pts\n", pt, qt, top, worst
  }' "$tmp/perf.counts" "$tmp/inprof.counts"
