#!/usr/bin/env bash
# The per-user symbol cache: what symbolizing a small export costs a process on its own,
# cold (empty cache: libdwfl opens the program and libc's separate debug file) and warm
# (every answer from the cache), on ~1,000 distinct addresses spread over the bench program
# and libc (libc6-dbg installed). Each run is a new process; runs are interleaved; medians.
#   bench/symbol_cache.sh [BUILD_DIR] [RUNS] [ADDRESSES]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
build=${1:-build}
runs=${2:-15}
count=${3:-1000}
bench="$build/bench/inprof_symbol_cache_bench"
[ -x "$bench" ] || {
  echo "symbol_cache.sh: build first (cmake --build $build --target inprof_symbol_cache_bench)" >&2
  exit 1
}
libc=$(readlink -f "$(ldd "$bench" | awk '/libc.so.6/ { print $3 }')")
libc_id=$(LC_ALL=C readelf -n "$libc" | awk '/Build ID/ { print $3 }')
[ -e "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug" ] ||
  echo "symbol_cache.sh: no debug info for $libc (apt-get install libc6-dbg): libc is resolved from symbols only" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bench" "$tmp/warm" "$count" > /dev/null  # fills the cache the warm runs read
: > "$tmp/times"
for ((i = 0; i < runs; i++)); do
  rm -rf "$tmp/cold"
  read -r ms save n hits misses files lines < <("$bench" "$tmp/cold" "$count")
  echo "cold $ms $save $n $hits $misses $files $lines" >> "$tmp/times"
  read -r ms save n hits misses files lines < <("$bench" "$tmp/warm" "$count")
  echo "warm $ms $save $n $hits $misses $files $lines" >> "$tmp/times"
  read -r ms save n hits misses files lines < <("$bench" - "$count")
  echo "none $ms $save $n $hits $misses $files $lines" >> "$tmp/times"
done

col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$tmp/times" | median; }
echo "$count addresses (half in $bench, half in $libc), $runs runs each, medians"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %12s %9s %6s %6s %7s %6s\n' mode symbolize_ms save_ms hits misses files lines
for mode in none cold warm; do
  printf '%-28s %12s %9s %6s %6s %7s %6s\n' \
    "$(case $mode in none) echo "no cache" ;; cold) echo "cold (empty cache)" ;; warm) echo "warm (all from the cache)" ;; esac)" \
    "$(col $mode 2)" "$(col $mode 3)" "$(col $mode 5)" "$(col $mode 6)" "$(col $mode 7)" "$(col $mode 8)"
done
awk -v c="$(col cold 2)" -v w="$(col warm 2)" 'BEGIN { printf "cold / warm: %.1fx\n", c / w }'
echo "cache files: $(find "$tmp/warm" -type f | wc -l), $(du -sk "$tmp/warm" | cut -f1) KiB"
