#!/usr/bin/env bash
# libinprof.so exports exactly its public C API and the functions it interposes: nothing of
# its internals or of the standard library's templates (which would bind a program's own
# instantiations to ours). Compares `nm -D --defined-only` with sdk/libinprof.exports (exported
# without a version) and the `global:` names of the configured version script (exported with
# its node's version, e.g. pthread_cond_wait@@GLIBC_2.3.2).
#   exported_symbols.sh LIBINPROF_SO LIBINPROF_EXPORTS CONFIGURED_MAP [NM]
set -euo pipefail
lib=$1
exports=$2
map=$3
nm=${4:-nm}
node=$(grep -oE '^[A-Za-z_][A-Za-z0-9_.]* \{' "$map" | head -1 | tr -d ' {')
unversioned=$(grep -vE '^[[:space:]]*(#|$)' "$exports" | tr -d ' ' | sort -u)
versioned=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^[[:space:]]+[A-Za-z_][A-Za-z0-9_]*;' |
  tr -d ' ;' | sed "s/\$/@@$node/" | sort -u)
expected=$(printf '%s\n%s\n' "$unversioned" "$versioned" | grep -v '^$' | sort -u)
# nm prints a versioned definition as name@@VERSION and the version's own symbol as VERSION.
actual=$("$nm" -D --defined-only "$lib" | awk '{print $3}' | grep -v '^$' | grep -vxF "$node" | sort -u)
extra=$(comm -13 <(echo "$expected") <(echo "$actual"))
missing=$(comm -23 <(echo "$expected") <(echo "$actual"))
status=0
if [ -n "$extra" ]; then
  echo "$lib exports symbols that are not public API (or not with the version they should have):"
  echo "$extra" | sed 's/^/  /'
  status=1
fi
if [ -n "$missing" ]; then
  echo "$lib does not export:"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
[ $status -ne 0 ] || echo "$lib exports exactly the $(echo "$actual" | wc -l) symbols of $(basename "$exports") and $(basename "$map")"
exit $status
