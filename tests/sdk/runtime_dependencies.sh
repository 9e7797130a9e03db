#!/usr/bin/env bash
# libinprof.so, as every process of a profiled command tree loads it, needs the C library and
# nothing a process must map, relocate and start before it runs: its NEEDED entries are
# within the allowed set, and a preloaded process that ends before its first sample has none
# of the debug-information libraries (libdw, libelf, libunwind, zlib) loaded, while one that
# samples with DWARF unwinding and writes a profile loads them, once, on demand.
# MODE "static" checks the NEEDED entries only (a cross build, whose library this host cannot
# load); "live" runs the processes too.
#   runtime_dependencies.sh MODE LIBINPROF_SO READELF ALLOWED_NEEDED...
set -euo pipefail
mode=$1
lib=$2
readelf=$3
shift 3
allowed=$(printf '%s\n' "$@" | sort -u)
needed=$("$readelf" -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
extra=$(comm -13 <(echo "$allowed") <(echo "$needed"))
status=0
if [ -n "$extra" ]; then
  echo "$lib needs libraries beyond $(echo $allowed):"
  echo "$extra" | sed 's/^/  /'
  status=1
fi
[ "$mode" = live ] || exit $status

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
debug_libs='(libdw|libelf|libunwind|libz)\.so'
# What the loader loaded into the process, by name (LD_DEBUG=files goes to the given file).
loaded() { grep -hoE 'file=[^ ]+' "$tmp"/ld.* 2>/dev/null | sed 's/file=//' | sort -u || true; }

# No sample: the first period of the bootstrap timer is a whole one, longer than this process.
rm -f "$tmp"/ld.*
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" LD_PRELOAD="$lib" INPROF_QUIET=1 \
  INPROF_TEST_WHOLE_FIRST_PERIOD=1 INPROF_OUTPUT="$tmp/none.folded" /bin/true
if loaded | grep -qE "$debug_libs"; then
  echo "a preloaded process that took no sample loaded:"
  loaded | grep -E "$debug_libs" | sed 's/^/  /'
  status=1
fi
if [ -e "$tmp/none.folded" ]; then
  echo "a process that took no sample wrote $tmp/none.folded"
  status=1
fi

# Samples, DWARF unwinding, a pprof profile: libdw, libunwind and zlib are loaded.
rm -f "$tmp"/ld.*
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" LD_PRELOAD="$lib" INPROF_QUIET=1 INPROF_UNWIND=dwarf \
  INPROF_FREQUENCY=999 INPROF_OUTPUT="$tmp/busy.pb.gz" \
  /bin/sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done'
for want in libdw.so libunwind libz.so; do
  if ! loaded | grep -q "$want"; then
    echo "a process that sampled with DWARF unwinding and wrote pprof did not load $want:"
    loaded | sed 's/^/  /'
    status=1
  fi
done
[ -s "$tmp/busy.pb.gz" ] || { echo "no profile written to $tmp/busy.pb.gz"; status=1; }
exit $status
