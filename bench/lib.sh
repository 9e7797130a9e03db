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

# sqlite_workload ROWS: the SQL of the sqlite3 benchmarks on stdout: a ROWS-row in-memory
# table built, indexed, searched, grouped, sorted and joined with itself (sqlite3 has no
# frame pointers: the default unwinder copies stacks and unwinds them with DWARF).
sqlite_workload() {
  local rows=$1
  cat <<EOF
CREATE TABLE t(a INTEGER, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < $rows)
INSERT INTO t SELECT i, printf('row%08d-%s', (i*7919)%$rows, hex(randomblob(8))), (i*0.37)%1000 FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b LIKE 'row0001%';
SELECT a%97, count(*), avg(c) FROM t GROUP BY a%97 ORDER BY 3 DESC LIMIT 3;
SELECT count(*) FROM (SELECT b FROM t ORDER BY c, b);
SELECT count(*) FROM t x JOIN t y ON x.a = y.a + 1 WHERE x.c < 500;
EOF
}
