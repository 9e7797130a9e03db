#!/bin/sh
# Proves the "no unwind tables" matrix fixture really has none: no FDE in .eh_frame covers any
# of its mx_nounwind_* functions (the linker still adds FDEs for the crt code), and it has no
# .debug_frame. The nofp fixture is the control: every mx_nofp_* function has an FDE.
# Usage: check_matrix_fixtures.sh NOUNWIND_LIB NOFP_LIB
set -eu

# Prints "covered" or "uncovered" for each exported function whose name starts with $2.
coverage() {
  fdes=$(readelf --wide --debug-dump=frames "$1" | sed -n 's/.* FDE .*pc=\([0-9a-f]*\)\.\.\([0-9a-f]*\).*/\1 \2/p')
  nm -D --defined-only "$1" | awk -v prefix="$2" '$3 ~ "^" prefix { print $1, $3 }' |
    while read -r addr name; do
      state=uncovered
      for range in $(echo "$fdes" | tr ' ' ':'); do
        lo=$((0x${range%%:*})); hi=$((0x${range##*:})); a=$((0x$addr))
        if [ "$a" -ge "$lo" ] && [ "$a" -lt "$hi" ]; then state=covered; fi
      done
      echo "$name $state"
    done
}

fail=0
out=$(coverage "$1" mx_nounwind_)
[ "$(echo "$out" | grep -c .)" -eq 4 ] || { echo "inprof: $1: expected 4 mx_nounwind_ functions"; fail=1; }
if echo "$out" | grep -q ' covered'; then
  echo "inprof: $1: .eh_frame covers functions that must have no unwind info:"; echo "$out"; fail=1
fi
if readelf -S --wide "$1" | grep -q '\.debug_frame'; then
  echo "inprof: $1: has a .debug_frame section"; fail=1
fi
out=$(coverage "$2" mx_nofp_)
[ "$(echo "$out" | grep -c ' covered')" -eq 4 ] || {
  echo "inprof: $2: expected 4 mx_nofp_ functions covered by .eh_frame:"; echo "$out"; fail=1; }
[ "$fail" -eq 0 ] && echo "mx_nounwind_*: no unwind info; mx_nofp_*: all covered"
exit "$fail"
