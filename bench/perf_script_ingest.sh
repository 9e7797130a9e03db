#!/usr/bin/env bash
# `inprof convert perf.script -o out.folded` against Brendan Gregg's stackcollapse-perf.pl on
# the same large `perf script` text, one after the other, with the throughput of each and
# the ratio; the two outputs are checked to hold the same stacks and counts.
#   bench/perf_script_ingest.sh [BUILD_DIR] [PERF_SCRIPT_FILE]
# Without a file, a deterministic one of $SIZE_MB MB (default 200) is generated: perf's
# default fields, call chains 8-40 deep from a pool of 2000 functions in 20 modules, periods
# as cpu-clock prints them, a kernel tail on some samples and [unknown] frames.
# stackcollapse-perf.pl is not part of inprof: fetch it from github.com/brendangregg/FlameGraph
# to /tmp (or set STACKCOLLAPSE=path); without it the comparison is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
input=${2:-}
size_mb=${SIZE_MB:-200}
inprof="$build/viewer/inprof"
[ -x "$inprof" ] || { echo "perf_script_ingest.sh: build first (cmake --build $build --target inprof_viewer)" >&2; exit 1; }
collapse=${STACKCOLLAPSE:-}
for candidate in /tmp/stackcollapse-perf.pl /tmp/FlameGraph/stackcollapse-perf.pl; do
  [ -z "$collapse" ] && [ -f "$candidate" ] && collapse=$candidate
done
if [ -z "$collapse" ] || [ ! -f "$collapse" ]; then
  echo "perf_script_ingest.sh: skipped: stackcollapse-perf.pl not found (put it in /tmp or set STACKCOLLAPSE)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -z "$input" ]; then
  input="$tmp/perf.script"
  # Names without '(' : stackcollapse-perf.pl cuts a name at its first parenthesis.
  awk -v limit=$((size_mb << 20)) 'BEGIN {
    srand(42); t = 1000.0; bytes = 0
    for (m = 0; m < 20; m++) mod[m] = sprintf("/usr/lib/libmod%02d.so.1", m)
    for (f = 0; f < 2000; f++) fn[f] = sprintf("ns%d::Class%d::method_%d", f % 7, f % 113, f)
    # A few hundred call paths, reused with varying leaves, as real programs do.
    for (p = 0; p < 400; p++) {
      depth[p] = 8 + int(rand() * 33)
      for (d = 0; d < depth[p]; d++) path[p, d] = int(rand() * 2000)
    }
    while (bytes < limit) {
      p = int(rand() * rand() * 400); t += 0.000251
      line = sprintf("app 4242/%d [%03d] %.6f:     250000 cpu-clock: \n", 4242 + int(rand() * 8), int(rand() * 4), t)
      leafs = int(rand() * 3)
      if (rand() < 0.05) line = line "\tffffffff81001234 handle_irq+0x2c ([kernel.kallsyms])\n\tffffffff81005678 asm_common_interrupt+0x22 ([kernel.kallsyms])\n"
      for (d = depth[p] - 1 + leafs; d >= 0; d--) {
        f = d < depth[p] ? path[p, d] : int(rand() * 2000)
        if (rand() < 0.01) line = line sprintf("\t%12x [unknown] (%s)\n", 4096 + d, mod[f % 20])
        else line = line sprintf("\t%12x %s+0x%x (%s)\n", 4096 + f * 64 + d, fn[f], d * 4, mod[f % 20])
      }
      line = line "\n"; printf "%s", line; bytes += length(line)
    }
  }' > "$input"
fi
mb=$(awk -v b="$(stat -c %s "$input")" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "input: $input ($mb MB, $(grep -c 'cpu-clock:' "$input") samples)"

seconds() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", (e - s) / 1e9 }'; }
start=$(date +%s%N)
"$inprof" convert --no-progress "$input" -o "$tmp/inprof.folded"
end=$(date +%s%N)
t_inprof=$(seconds "$start" "$end")
start=$(date +%s%N)
perl "$collapse" "$input" > "$tmp/collapse.folded"
end=$(date +%s%N)
t_collapse=$(seconds "$start" "$end")

# stackcollapse-perf.pl puts the command name at the root; inprof does not.
sed 's/^[^;]*;//' "$tmp/collapse.folded" | awk '{ c = $NF; sub(/ [0-9]+$/, ""); n[$0] += c }
  END { for (k in n) print k " " n[k] }' | sort > "$tmp/collapse.sorted"
sort "$tmp/inprof.folded" > "$tmp/inprof.sorted"
if cmp -s "$tmp/collapse.sorted" "$tmp/inprof.sorted"; then same="identical stacks and counts"; else same="OUTPUTS DIFFER"; fi

awk -v mb="$mb" -v a="$t_inprof" -v b="$t_collapse" -v same="$same" 'BEGIN {
  printf "inprof convert:        %6.2f s  %7.1f MB/s\n", a, mb / a
  printf "stackcollapse-perf.pl: %6.2f s  %7.1f MB/s\n", b, mb / b
  printf "inprof is %.1fx faster (%s)\n", b / a, same }'
[ "$same" != "OUTPUTS DIFFER" ]
