#!/usr/bin/env bash
# `perf script -F +srcline` with `inprof addr2line` as perf's addr2line against binutils'
# addr2line, on a profile where symbolization dominates: a large generated C++ binary
# (templates, inlining, -O2 -g) looping over all of its ~1200 functions for SECONDS under
# `perf record -g`, so that perf asks about tens of thousands of distinct addresses. perf
# 6.1 runs `addr2line -e DSO -i -f` once per binary and writes one address at a time.
# Prints wall and CPU seconds of each `perf script` run, their ratio, perf's own time
# without source lines, and how the two outputs differ. CPU seconds count perf and the
# addr2line children it waited for; perf 6.1 does not always reap them, so wall time (perf
# waits for every answer) is the measure here.
#   bench/perf_script_addr2line.sh [BUILD_DIR] [SECONDS] [UNITS] [FUNCTIONS_PER_UNIT]
# The looping binary and its profile are kept in BUILD_DIR/bench-perf-script/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-15}
units=${3:-8}
functions=${4:-150}
inprof="$build/viewer/inprof"
gen="$build/tests/symbolize/inprof_gen_inline_heavy"
[ -x "$inprof" ] && [ -x "$gen" ] || {
  echo "perf_script_addr2line.sh: build first (cmake --build $build --target inprof_viewer inprof_gen_inline_heavy)" >&2
  exit 1
}
for tool in perf addr2line; do
  command -v $tool >/dev/null || { echo "perf_script_addr2line.sh: $tool not found (scripts/install-deps bench)" >&2; exit 1; }
done

work="$(cd "$build" && pwd)/bench-perf-script"
big="$work/inline_heavy_loop_${units}x${functions}"
mkdir -p "$work"
if [ ! -x "$big" ]; then
  echo "generating $big ($units units x $functions functions, -O2 -g) ..." >&2
  for ((u = 0; u < units; u++)); do "$gen" "$work/u$u.cpp" "$u" "$functions"; done
  # main: every unit's RunAll, again and again, for argv[1] seconds.
  {
    echo '#include <chrono>'
    echo '#include <cstdlib>'
    for ((u = 0; u < units; u++)); do echo "namespace u$u { long RunAll$u(int); }"; done
    echo 'int main(int argc, char** argv) {'
    echo '  const double seconds = argc > 1 ? std::atof(argv[1]) : 1;'
    echo '  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);'
    echo '  long r = 0;'
    echo '  for (int round = 0; std::chrono::steady_clock::now() < end; ++round) {'
    for ((u = 0; u < units; u++)); do echo "    r += u$u::RunAll$u(round & 15);"; done
    echo '  }'
    echo '  return static_cast<int>(r & 1);'
    echo '}'
  } > "$work/main.cpp"
  ls "$work"/u*.cpp "$work/main.cpp" | xargs -P2 -I{} g++ -O2 -g -fno-omit-frame-pointer -c {} -o {}.o
  g++ -o "$big" "$work"/*.cpp.o
  rm -f "$work"/*.cpp.o
fi

data="$work/perf.data"
if [ ! -s "$data" ] || [ "$data" -ot "$big" ]; then
  echo "recording $seconds s of $big under perf record -g ..." >&2
  perf record -q -g -F 999 -o "$data" -- "$big" "$seconds" > /dev/null 2>&1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
ln -s "$(cd "$(dirname "$inprof")" && pwd)/inprof" "$tmp/bin/addr2line"

# Prints "wall cpu" seconds of one perf script run (cpu = user + system of perf and its
# addr2line children).
run() {
  local out=$1 path=$2
  PATH="$path" /usr/bin/time -o "$tmp/usage" -f '%e %U %S' \
    perf script -i "$data" -F +srcline > "$out" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$tmp/usage"
}

distinct=$(perf script -i "$data" -F ip 2>/dev/null | sort -u | wc -l)
printf '%s: %s samples, %s distinct addresses in their stacks; perf %s\n' \
  "$big" "$(perf script -i "$data" -F period 2>/dev/null | wc -l)" "$distinct" \
  "$(perf version | awk '{ print $3 }')"
read -r bw bc < <(run "$tmp/binutils.out" "$PATH")
read -r iw ic < <(run "$tmp/inprof.out" "$tmp/bin:$PATH")
printf '  %-40s %8s %8s\n' "perf script -F +srcline with" "wall s" "cpu s"
printf '  %-40s %8s %8s\n' "binutils addr2line $(addr2line --version | head -1 | awk '{ print $NF }')" "$bw" "$bc"
printf '  %-40s %8s %8s\n' "inprof addr2line" "$iw" "$ic"
awk -v bw="$bw" -v iw="$iw" -v bc="$bc" -v ic="$ic" 'BEGIN {
  printf "  ratio binutils/inprof: wall %.1fx, cpu %.1fx\n", bw / (iw > 0 ? iw : 0.01), bc / (ic > 0 ? ic : 0.01) }'
# perf itself, without source lines: the floor both runs share.
PATH="$tmp/bin:$PATH" /usr/bin/time -o "$tmp/usage" -f '%e %U %S' \
  perf script -i "$data" > /dev/null 2> "$tmp/err"
awk '{ printf "  %-40s %8.2f %8.2f\n", "(perf script without srcline)", $1, $2 + $3 }' "$tmp/usage"
if cmp -s "$tmp/binutils.out" "$tmp/inprof.out"; then
  echo "  outputs identical ($(wc -l < "$tmp/inprof.out") lines)"
else
  # Lines that differ only in the file name before ":LINE" are binutils 2.40 naming the
  # compile unit's own file for rows before the first DW_LNS_set_file (docs/symbolizer.md,
  # class 1); anything else is listed.
  awk 'NR == FNR { a[FNR] = $0; next }
       a[FNR] != $0 {
         x = a[FNR]; y = $0; sub(/^[ \t]*[^ \t:]*:/, ":", x); sub(/^[ \t]*[^ \t:]*:/, ":", y)
         if (x == y) file_only++
         else if (++other <= 5) print "    other: " a[FNR] " | " $0 > "/dev/stderr"
       }
       END { printf "  outputs: %d of %d lines differ: %d only in the file name (binutils bug), %d otherwise\n",
                    file_only + other, FNR, file_only, other }' "$tmp/binutils.out" "$tmp/inprof.out"
fi
printf '  (load: %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
