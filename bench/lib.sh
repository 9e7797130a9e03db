# Shared by the overhead scripts (source it): medians of interleaved timed runs and their
# ratios to a baseline.

# The median of the numbers on stdin, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ratio_table TIMES BASE MODE...: TIMES has "mode milliseconds" lines; prints each mode's
# median and its ratio to BASE's median, after the machine's load (the noise to expect).
ratio_table() {
  local times=$1 base_mode=$2 base m mode
  shift 2
  base=$(awk -v m="$base_mode" '$1 == m { print $2 }' "$times" | median)
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-10s %10s %8s\n' mode median_ms ratio
  for mode in "$@"; do
    m=$(awk -v m="$mode" '$1 == m { print $2 }' "$times" | median)
    printf '%-10s %10s %8.3f\n' "$mode" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
  done
}
