#!/usr/bin/env bash
# Runs a test binary as an unprivileged user (nobody), so engine selection and perf_event
# fallbacks are exercised the way most users run them, even when the suite runs as root.
#   run_as_nobody.sh BINARY [ARGS...]
# Exit 77 (skipped) when that is not possible here: not root, no setpriv, or the build tree
# is not reachable by nobody.
set -u
if [ "$(id -u)" -ne 0 ]; then
  echo "already unprivileged (uid $(id -u)): the ordinary run covers this"; exit 77
fi
command -v setpriv >/dev/null || { echo "setpriv not found"; exit 77; }
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env)
if ! "${as_nobody[@]}" test -x "$1"; then
  echo "the build tree is not reachable by nobody: $1"; exit 77
fi
exec "${as_nobody[@]}" env TMPDIR=/tmp "$@"
