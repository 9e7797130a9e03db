#!/usr/bin/env bash
# Resources of a program that loads and unloads many distinct shared libraries (plugins,
# generated code), each sampled while loaded: open descriptors and resident size every
# 100 libraries, with the profiler and without it, in continuous mode (1 s windows, each
# symbolized while the run goes on) and one-shot (everything symbolized at exit).
#   bench/dlopen_soak.sh [BUILD_DIR] [LIBRARIES] [MS_PER_LIBRARY]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
count=${2:-1000}
ms=${3:-20}
lib="$PWD/$build/sdk/libinprof.so"
[ -f "$lib" ] || { echo "dlopen_soak.sh: build first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# LIBRARIES distinct libraries (distinct code and build-ids), built in parallel.
cat >"$tmp/plugin.c" <<'C'
#include <stdint.h>
// Busy for `ms` milliseconds of CPU in this library's own code.
__attribute__((noinline)) uint64_t plugin_spin(uint64_t x) { return x * 6364136223846793005u + ID; }
uint64_t plugin_work(int ms) {
  uint64_t x = ID;
  for (long i = 0; i < ms * 400000L; ++i) x = plugin_spin(x);
  return x;
}
C
seq 0 $((count - 1)) | xargs -P "$(nproc)" -I{} \
  cc -O1 -g -fPIC -shared -DID={} -Wl,--build-id -o "$tmp/libplugin{}.so" "$tmp/plugin.c"

cat >"$tmp/driver.c" <<'C'
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int fds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own
}
static long rss_kb(void) {
  long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}
int main(int argc, char** argv) {
  const int count = atoi(argv[2]), ms = atoi(argv[3]);
  uint64_t sum = 0;
  int peak = 0;
  for (int i = 0; i < count; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libplugin%d.so", argv[1], i);
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    uint64_t (*work)(int) = (uint64_t (*)(int))dlsym(h, "plugin_work");
    sum += work(ms);
    dlclose(h);
    const int n = fds();
    if (n > peak) peak = n;
    if ((i + 1) % 100 == 0) printf("libraries %5d fds %4d (peak %4d) rss %7ld kB\n", i + 1, n, peak, rss_kb());
  }
  fprintf(stderr, "checksum %llu\n", (unsigned long long)sum);
  return 0;
}
C
cc -O1 -o "$tmp/driver" "$tmp/driver.c" -ldl

run() {
  local name=$1; shift
  echo "== $name"
  env "$@" "$tmp/driver" "$tmp" "$count" "$ms" 2>"$tmp/err" | sed 's/^/  /'
  grep -E '^inprof: (windows|threads|wrote)' "$tmp/err" | sed 's/^/  /' | head -3 || true
}
run "without inprof" INPROF_UNUSED=1
run "continuous (1 s windows)" LD_PRELOAD="$lib" INPROF_WINDOW=1 INPROF_KEEP=3 \
  INPROF_OUTPUT="$tmp/w.folded,$tmp/w.pb.gz"
run "one-shot (symbolized at exit)" LD_PRELOAD="$lib" INPROF_OUTPUT="$tmp/o.folded,$tmp/o.json"
if [ -f "$tmp/o.folded" ]; then
  named=$(grep -c 'plugin_spin' "$tmp/o.folded" || true)
  echo "  one-shot: $named distinct stacks name plugin_spin"
fi
