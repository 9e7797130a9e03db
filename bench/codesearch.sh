#!/usr/bin/env bash
# Profile-guided code search at scale: `inprof hot` filtering a million search hits against a
# profile of thousands of files, and `inprof grep` over a large source tree beside
# `grep -rn | inprof hot` (and ripgrep when installed). Everything is generated under a
# temporary directory: a tree of FILES sources of LINES lines each, a folded profile that
# samples every 10th line of every file, and HITS random "path:line:text" lines.
#   bench/codesearch.sh [BUILD_DIR] [FILES] [LINES] [HITS] [RUNS]
# Prints, for each command, the best wall time and the best CPU time (user + system) of RUNS
# runs: on a shared machine the CPU time is the steadier number.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
files=${2:-2000}
lines=${3:-400}
hits=${4:-1000000}
runs=${5:-3}
inprof="$PWD/$build/viewer/inprof"
[ -x "$inprof" ] || { echo "codesearch.sh: build the viewer first (cmake --build $build --target inprof_viewer)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree="$tmp/tree"
mkdir -p "$tree"

# Sources: d<k>/f<i>.cpp, every 10th line carrying the searched pattern.
awk -v files="$files" -v lines="$lines" -v tree="$tree" 'BEGIN {
  for (d = 0; d < 50; d++) system("mkdir -p " tree "/d" d)
  for (i = 0; i < files; i++) {
    f = tree "/d" (i % 50) "/f" i ".cpp"
    for (l = 1; l <= lines; l++) {
      if (l % 10 == 0) printf "  std::string s%d = std::to_string(v + %d);\n", l, l > f
      else printf "  total += values[%d] * %d;  // filler\n", l, i > f
    }
    close(f)
  }
}'
# Profile: every 10th line of every file sampled, weights spread over two orders of magnitude.
awk -v files="$files" -v lines="$lines" -v tree="$tree" 'BEGIN {
  srand(1)
  for (i = 0; i < files; i++) {
    f = tree "/d" (i % 50) "/f" i ".cpp"
    for (l = 10; l <= lines; l += 10) {
      printf "main (%s/main.cpp:1);fn%d (%s:%d) %d\n", tree, i, f, l, 1 + int(100 * rand() * rand())
    }
  }
}' > "$tmp/profile.folded"
# Hits as grep -rn prints them from the tree's parent: relative paths, random lines.
awk -v files="$files" -v lines="$lines" -v hits="$hits" 'BEGIN {
  srand(2)
  for (n = 0; n < hits; n++) {
    i = int(rand() * files); l = 1 + int(rand() * lines)
    printf "tree/d%d/f%d.cpp:%d:  std::string s = std::to_string(v + %d);\n", i % 50, i, l, l
  }
}' > "$tmp/hits.txt"

echo "tree: $files files x $lines lines ($(du -sh "$tree" | cut -f1)); profile: $(wc -l < "$tmp/profile.folded") sampled lines; hits: $(wc -l < "$tmp/hits.txt") lines"

best() {  # best() NAME COMMAND: best wall and CPU time of $runs runs, output discarded
  local name=$1 cmd=$2 best_wall="" best_cpu="" t wall cpu
  for _ in $(seq "$runs"); do
    t=$( { TIMEFORMAT='%R %U %S'; time { (cd "$tmp" && eval "$cmd") > /dev/null 2>&1 || true; }; } 2>&1 )
    read -r wall user sys <<< "$t"
    wall=$(awk -v w="$wall" 'BEGIN { printf "%d", w * 1000 }')
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')
    if [ -z "$best_wall" ] || [ "$wall" -lt "$best_wall" ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$cpu" -lt "$best_cpu" ]; then best_cpu=$cpu; fi
  done
  printf '%-58s %7d ms wall %7d ms cpu\n' "$name" "$best_wall" "$best_cpu"
}

cd "$tmp"
passed=$("$inprof" hot profile.folded < hits.txt | wc -l)
echo "inprof hot passes $passed of $hits hits"
best "inprof hot < /dev/null (load the profile only)" "'$inprof' hot profile.folded < /dev/null"
best "inprof hot < $hits hits" "'$inprof' hot profile.folded < hits.txt"
best "inprof hot --json < $hits hits" "'$inprof' hot --json profile.folded < hits.txt"
best "grep -rn PATTERN tree (alone)" "grep -rn 'std::to_string' tree"
best "grep -rn PATTERN tree | inprof hot" "grep -rn 'std::to_string' tree | '$inprof' hot profile.folded"
if command -v rg > /dev/null; then
  best "rg -n --column PATTERN tree | inprof hot" "rg -n --column 'std::to_string' tree | '$inprof' hot profile.folded"
fi
best "inprof grep PATTERN profile tree" "'$inprof' grep 'std::to_string' profile.folded tree"
best "inprof grep PATTERN profile (the profiled files)" "'$inprof' grep 'std::to_string' profile.folded"
a=$(grep -rn 'std::to_string' tree | "$inprof" hot --plain profile.folded | sort | md5sum)
b=$("$inprof" grep --color=never 'std::to_string' profile.folded tree | sed 's/\[G[0-9] L[0-9] incl [^]]*\]//' | sort | md5sum)
echo "grep -rn | inprof hot and inprof grep $([ "$a" = "$b" ] && echo agree || echo DISAGREE) on the hot hits"
