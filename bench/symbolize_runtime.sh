#!/usr/bin/env bash
# The SDK's export-time symbolizer (inprof::Symbolizer: module map of the running process,
# demangling, canonical source paths) against llvm-symbolizer-14 on the same N random code
# addresses of libc (with libc6-dbg), with inline expansion. The SDK's time is measured
# inside the process (symbolization only, after start-up); llvm-symbolizer's is the whole
# process, start-up included, as `cpu s` of one run (user + system).
#   bench/symbolize_runtime.sh [BUILD_DIR] [ADDRESSES]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
count=${2:-100000}
bench="$build/bench/inprof_symbolize_runtime_bench"
[ -x "$bench" ] || {
  echo "symbolize_runtime.sh: build first (cmake --build $build --target inprof_symbolize_runtime_bench)" >&2
  exit 1
}
command -v llvm-symbolizer-14 >/dev/null || { echo "symbolize_runtime.sh: llvm-symbolizer-14 not found (scripts/install-deps)" >&2; exit 1; }
libc=$(readlink -f "$(ldd "$bench" | awk '/libc.so.6/ { print $3 }')")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# N file addresses drawn uniformly over libc's executable sections (fixed seed).
LC_ALL=C readelf -SW "$libc" | sed 's/\[ */[/' |
  while read -r _ _ _ addr _ size _ flags _; do
    if [[ $flags == *X* ]]; then echo "$((16#$addr)) $((16#$size))"; fi
  done |
  awk -v n="$count" '
    { addr[k] = $1; size[k] = $2; total += $2; k++ }
    END {
      srand(1);
      for (i = 0; i < n; i++) {
        x = int(rand() * total);
        for (j = 0; j < k - 1 && x >= size[j]; j++) x -= size[j]
        if (x >= size[j]) x = size[j] - 1
        printf "0x%x\n", addr[j] + x
      }
    }' > "$tmp/addresses"

"$bench" libc.so.6 "$tmp/addresses" > "$tmp/inprof.out"
read -r n icpu iwall iframes ilines < "$tmp/inprof.out"
iwarm=$(awk '$1 == "warm" { print $2 }' "$tmp/inprof.out")
/usr/bin/time -o "$tmp/usage" -f '%e %U %S' llvm-symbolizer-14 --obj="$libc" --inlines \
  --output-style=LLVM < "$tmp/addresses" > "$tmp/llvm.out"
read -r lwall lcpu < <(awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$tmp/usage")
# LLVM style: two lines per frame (function, file:line:column), a blank line per address.
lframes=$(grep -c . "$tmp/llvm.out" | awk '{ print $1 / 2 }')
echo "libc + libc6-dbg ($libc): $n addresses, inline expansion"
printf '  %-44s %8s %8s %8s\n' tool "cpu s" "wall s" frames
printf '  %-44s %8s %8s %8s\n' "inprof::Symbolizer (in process, no start-up)" "$icpu" "$iwall" "$iframes"
printf '  %-44s %8s %8s %8s\n' "llvm-symbolizer-14 (whole process)" "$lcpu" "$lwall" "$lframes"
awk -v a="$lcpu" -v b="$icpu" 'BEGIN { printf "  cpu ratio llvm-symbolizer / inprof: %.1fx\n", a / (b > 0 ? b : 0.001) }'
printf '  inprof::Symbolizer, the same addresses again (cached): %s ns each\n' "$iwarm"
printf '  (%s of the innermost frames have a line; load: %s)\n' "$ilines" "$(cut -d' ' -f1-3 /proc/loadavg)"
