#!/usr/bin/env bash
# Memory of a long continuous-mode run under churn: the workload's churn mode (threads
# created and destroyed continuously, a library dlopen()ed and dlclose()d, thousands of
# distinct stacks) with 1 s windows and a small memory budget; prints the resident size and
# the heap in use per 30 s, the windows written and the overflow count.
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
# Per 30 s: the resident size's range, and the heap in use (malloc's, all arenas) at its
# lowest and highest: windows being exported swing the heap, its floor shows growth.
awk '/^rss / { t = int(n / 30); n++
               if (!(t in rlo) || $2 < rlo[t]) rlo[t] = $2; if ($2 > rhi[t]) rhi[t] = $2
               if (!(t in hlo) || $4 < hlo[t]) hlo[t] = $4; if ($4 > hhi[t]) hhi[t] = $4 }
     END { for (i = 0; i <= t; i++)
             printf "t=%4d-%4ds rss %6d..%6d kB  heap %6d..%6d kB\n", i * 30, i * 30 + 29,
                    rlo[i], rhi[i], hlo[i], hhi[i] }' "$tmp/out"
grep -E '^rounds' "$tmp/out" | sed 's/^/workload: /'
grep -E 'windows:|samples=' "$tmp/err"
