#!/usr/bin/env bash
# Memory of a long continuous-mode run under churn: the workload's churn mode (threads
# created and destroyed continuously, a library dlopen()ed and dlclose()d, thousands of
# distinct stacks) with 1 s windows and a small memory budget; prints the resident size every
# 30 s, the windows written and the overflow count.
#   bench/continuous_churn.sh [BUILD_DIR] [SECONDS] [MAX_MEMORY]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-600}
budget=${3:-8M}
work="$build/tests/sdk/inprof_workload"
plugin="$build/tests/sdk/libinprof_plugin_fixture.so"
lib="$PWD/$build/sdk/libinprof.so"
[ -x "$work" ] && [ -f "$lib" ] || { echo "continuous_churn.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_PRELOAD="$lib" INPROF_WINDOW=1 INPROF_KEEP=5 INPROF_MAX_MEMORY="$budget" \
  INPROF_OUTPUT="$tmp/out.folded,$tmp/p.json,$tmp/p.pb.gz" \
  "$work" churn "$seconds" "$plugin" >"$tmp/out" 2>"$tmp/err"
awk '/^rss / { n++; if (n % 30 == 1) printf "t=%4ds rss=%6d kB\n", n - 1, $2; last = $2 } END { printf "end    rss=%6d kB\n", last }' "$tmp/out"
grep -E '^rounds' "$tmp/out" | sed 's/^/workload: /'
grep -E 'windows:|samples=' "$tmp/err"
