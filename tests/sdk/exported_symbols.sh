#!/usr/bin/env bash
# libinprof.so exports exactly its public C API and the functions it interposes: nothing of
# its internals or of the standard library's templates (which would bind a program's own
# instantiations to ours). Compares `nm -D --defined-only` with sdk/libinprof.map.
#   exported_symbols.sh LIBINPROF_SO LIBINPROF_MAP [NM]
set -euo pipefail
lib=$1
map=$2
nm=${3:-nm}
expected=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^[[:space:]]+[A-Za-z_][A-Za-z0-9_]*;' |
  tr -d ' ;' | sort -u)
actual=$("$nm" -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^$' | sort -u)
extra=$(comm -13 <(echo "$expected") <(echo "$actual"))
missing=$(comm -23 <(echo "$expected") <(echo "$actual"))
status=0
if [ -n "$extra" ]; then
  echo "$lib exports symbols that are not public API:"
  echo "$extra" | sed 's/^/  /'
  status=1
fi
if [ -n "$missing" ]; then
  echo "$lib does not export:"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
[ $status -ne 0 ] || echo "$lib exports exactly the $(echo "$actual" | wc -l) symbols of $(basename "$map")"
exit $status
