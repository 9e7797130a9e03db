#!/usr/bin/env bash
# The per-user symbol cache: what symbolizing a small export costs a process on its own,
# cold (empty cache: libdwfl opens the program and libc's separate debug file), warm (the
# same addresses again) and warm with other addresses in the same functions (each address
# moved by a few bytes inside its function, as the next run of a sampled program meets
# other instructions of the same hot functions), on ~1,000 distinct addresses spread over
# the bench program and libc (libc6-dbg installed). Each run is a new process; runs are
# interleaved; medians. The warm runs read the cache one run of the first addresses made.
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
cp -a "$tmp/warm" "$tmp/filled"
: > "$tmp/times"
for ((i = 0; i < runs; i++)); do
  rm -rf "$tmp/other"
  cp -a "$tmp/filled" "$tmp/other"  # what the other addresses' misses add is not kept
  read -r ms save n hits misses files lines < <("$bench" "$tmp/other" "$count" other)
  echo "other $ms $save $n $hits $misses $files $lines" >> "$tmp/times"
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
for mode in none cold warm other; do
  printf '%-28s %12s %9s %6s %6s %7s %6s\n' \
    "$(case $mode in none) echo "no cache" ;; cold) echo "cold (empty cache)" ;; warm) echo "warm, same addresses" ;; other) echo "warm, other addresses" ;; esac)" \
    "$(col $mode 2)" "$(col $mode 3)" "$(col $mode 5)" "$(col $mode 6)" "$(col $mode 7)" "$(col $mode 8)"
done
awk -v c="$(col cold 2)" -v w="$(col warm 2)" -v o="$(col other 2)" \
  'BEGIN { printf "cold / warm: %.1fx; cold / warm with other addresses: %.1fx\n", c / w, c / o }'
echo "cache files: $(find "$tmp/filled" -type f | wc -l), $(du -sk "$tmp/filled" | cut -f1) KiB"
for f in $(find "$tmp/filled" -type f); do
  # The header's entry count (offset 16) and the size, per file.
  echo "  $(basename "$(dirname "$f")")$(basename "$f"): $(od -An -t u8 -j 16 -N 8 "$f" | tr -d ' ') entries, $(($(stat -c %s "$f") / 1024)) KiB"
done
