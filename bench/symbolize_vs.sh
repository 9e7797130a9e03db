#!/usr/bin/env bash
# `inprof addr2line -i -f` against binutils addr2line and llvm-symbolizer-14: the time to
# resolve N random code addresses, with inline expansion, in one process each (as perf
# drives them), on a large generated C++ binary full of templates and inlining (-O2 -g)
# and on libc with Debian's libc6-dbg. Prints wall and CPU seconds, CPU ratios to inprof,
# peak RSS of each tool, and the cold-start time of each (one address, median of 7 runs).
#   bench/symbolize_vs.sh [BUILD_DIR] [ADDRESSES] [UNITS] [FUNCTIONS_PER_UNIT]
# The generated binary is kept in BUILD_DIR/bench-symbolize/ between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
count=${2:-100000}
units=${3:-8}
functions=${4:-150}
inprof="$build/viewer/inprof"
gen="$build/tests/symbolize/inprof_gen_inline_heavy"
[ -x "$inprof" ] && [ -x "$gen" ] || {
  echo "symbolize_vs.sh: build first (cmake --build $build --target inprof_viewer inprof_gen_inline_heavy)" >&2
  exit 1
}
for tool in addr2line llvm-symbolizer-14; do
  command -v $tool >/dev/null || { echo "symbolize_vs.sh: $tool not found (scripts/install-deps)" >&2; exit 1; }
done

work="$build/bench-symbolize"
big="$work/inline_heavy_${units}x${functions}"
mkdir -p "$work"
if [ ! -x "$big" ]; then
  echo "generating $big ($units units x $functions functions, -O2 -g) ..." >&2
  for ((u = 0; u < units; u++)); do "$gen" "$work/u$u.cpp" "$u" "$functions"; done
  "$gen" "$work/main.cpp" "$units" main
  ls "$work"/u*.cpp "$work/main.cpp" | xargs -P2 -I{} g++ -O2 -g -c {} -o {}.o
  g++ -o "$big" "$work"/*.cpp.o
  rm -f "$work"/*.cpp.o
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# N addresses drawn uniformly over the executable sections (fixed seed).
addresses() {
  local sections
  sections=$(LC_ALL=C readelf -SW "$1" | sed 's/\[ */[/' |
    while read -r _ _ _ addr _ size _ flags _; do
      if [[ $flags == *X* ]]; then echo "$((16#$addr)) $((16#$size))"; fi
    done)
  # shellcheck disable=SC2046
  printf '0x%x\n' $(echo "$sections" | awk -v n="$count" '
    { addr[k] = $1; size[k] = $2; total += $2; k++ }
    END {
      srand(1);
      for (i = 0; i < n; i++) {
        x = int(rand() * total);
        for (j = 0; j < k - 1 && x >= size[j]; j++) x -= size[j]
        if (x >= size[j]) x = size[j] - 1  # rounding at the very end
        printf "%.0f\n", addr[j] + x
      }
    }')
}

# Prints "wall cpu rss_mb" of one run (cpu = user + system, rss = peak resident set).
timed() {
  local out=$1; shift
  /usr/bin/time -o "$tmp/usage" -f '%e %U %S %M' "$@" < "$tmp/addresses" > "$out" 2>/dev/null
  awk '{ printf "%.2f %.2f %.0f\n", $1, $2 + $3, $4 / 1024 }' "$tmp/usage"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / (b > 0 ? b : 0.01) }'; }

# Cold start: one address, a fresh process each time; prints the median wall ms and the
# mean CPU ms (user + system) of 20 runs with hyperfine (scripts/install-deps bench), else
# the medians of 7 runs (CPU from perf stat's task-clock, "-" without perf).
cold() {
  if command -v hyperfine > /dev/null; then
    # The address as an argument: every tool takes one there.
    hyperfine -N -w 3 -r 20 --export-json "$tmp/hf.json" "$(printf '%q ' "$@" "$(cat "$tmp/one")")" \
      > /dev/null 2>&1
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.1f %.1f" % (r["median"] * 1e3, (r["user"] + r["system"]) * 1e3))' "$tmp/hf.json"
    return
  fi
  local walls=() cpus=()
  for _ in 1 2 3 4 5 6 7; do
    local start end
    start=$(date +%s%N)
    if command -v perf > /dev/null; then
      perf stat -x, -e task-clock -o "$tmp/stat" "$@" < "$tmp/one" > /dev/null 2>&1
      cpus+=("$(awk -F, '/task-clock/ { print $1 }' "$tmp/stat")")
    else
      "$@" < "$tmp/one" > /dev/null 2>&1
      cpus+=(0)
    fi
    end=$(date +%s%N)
    walls+=($(((end - start) / 1000)))
  done
  local wall cpu
  wall=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[4] / 1000 }')
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[4] }')
  command -v perf > /dev/null || cpu=-
  echo "$wall $cpu"
}

bench() {
  local name=$1 file=$2
  addresses "$file" > "$tmp/addresses"
  head -1 "$tmp/addresses" > "$tmp/one"
  local size
  size=$(du -m "$file" | cut -f1)
  local -a inprof_cmd=("$inprof" addr2line -e "$file" -i -f)
  local -a llvm_cmd=(llvm-symbolizer-14 --obj="$file" --inlines --functions=linkage --output-style=GNU)
  local -a binutils_cmd=(addr2line -e "$file" -i -f)
  printf '\n%s: %s (%s MB), %s addresses, -i -f\n' "$name" "$file" "$size" "$(wc -l < "$tmp/addresses")"
  printf '  %-24s %8s %8s %10s %8s %21s %10s\n' tool "wall s" "cpu s" "cpu ratio" "peak MB" "1 address: wall/cpu ms" "cpu ratio"
  read -r iw ic im < <(timed "$tmp/inprof.out" "${inprof_cmd[@]}")
  read -r ikw ikc < <(cold "${inprof_cmd[@]}")
  printf '  %-24s %8s %8s %10s %8s %21s %10s\n' "inprof addr2line" "$iw" "$ic" "1.0" "$im" "$ikw / $ikc" "1.0"
  read -r lw lc lm < <(timed "$tmp/llvm.out" "${llvm_cmd[@]}")
  read -r lkw lkc < <(cold "${llvm_cmd[@]}")
  printf '  %-24s %8s %8s %10s %8s %21s %10s\n' "llvm-symbolizer-14" "$lw" "$lc" "$(ratio "$lc" "$ic")" "$lm" "$lkw / $lkc" "$(ratio "$lkc" "$ikc")"
  read -r bw bc bm < <(timed "$tmp/binutils.out" "${binutils_cmd[@]}")
  read -r bkw bkc < <(cold "${binutils_cmd[@]}")
  printf '  %-24s %8s %8s %10s %8s %21s %10s\n' "binutils addr2line $(addr2line --version | head -1 | awk '{print $NF}')" "$bw" "$bc" "$(ratio "$bc" "$ic")" "$bm" "$bkw / $bkc" "$(ratio "$bkc" "$ikc")"
  # Sanity: same number of answers (lines) as binutils, identical on most of them.
  local same total
  same=$(paste "$tmp/inprof.out" "$tmp/binutils.out" | awk -F'\t' '$1 == $2' | wc -l)
  total=$(wc -l < "$tmp/binutils.out")
  printf '  output lines identical to binutils: %s of %s\n' "$same" "$total"
  printf '  (ratios: the other tool over inprof; 1 address = fresh runs, median wall / mean CPU; load: %s)\n' \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
}

bench "generated C++" "$big"
libc=$(ldd "$inprof" | awk '/libc.so.6/ { print $3 }')
libc=$(readlink -f "$libc")
id=$(LC_ALL=C readelf -n "$libc" | awk '/Build ID/ { print $3 }')
if [ -n "$id" ] && [ -f "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]; then
  bench "libc + libc6-dbg" "$libc"
else
  echo "(libc skipped: no /usr/lib/debug/.build-id file; apt-get install libc6-dbg)"
fi
