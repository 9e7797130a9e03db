#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a consumer project with
# find_package(inprof) and a C program with pkg-config, against that prefix only; then the
# same consumer with inprof's source tree added through add_subdirectory.
#   install_test.sh BUILD_DIR SOURCE_DIR
# A cross build sets INPROF_TOOLCHAIN_FILE (the consumer is built with the same toolchain),
# INPROF_EMULATOR (runs the consumers) and CC.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
toolchain=()
[ -z "${INPROF_TOOLCHAIN_FILE:-}" ] || toolchain=(-DCMAKE_TOOLCHAIN_FILE="$INPROF_TOOLCHAIN_FILE")
read -r -a run <<<"${INPROF_EMULATOR:-}"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/package/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  "${toolchain[@]}" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64" "${run[@]}" "$tmp/consumer/consumer" "$tmp/out.folded"
test -s "$tmp/out.folded" || { echo "find_package consumer wrote no profile"; exit 1; }

pcdir=$(dirname "$(find "$tmp/prefix" -name inprof.pc | head -n 1)")
cat > "$tmp/c_consumer.c" <<'C'
#include <inprof/inprof.h>
int main(void) { return inprof_start("quiet=1") == INPROF_OK && inprof_stop() == INPROF_OK ? 0 : 1; }
C
${CC:-cc} "$tmp/c_consumer.c" -o "$tmp/c_consumer" $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs inprof)
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64" "${run[@]}" "$tmp/c_consumer"

# The same program with inprof's sources added to its tree (add_subdirectory). Native builds
# only: the cross lane would build the whole runtime a second time under the same toolchain.
# No build type (no optimisation, no debug info), which the subproject must leave as it is:
# what is checked is that the tree builds, links and runs as a subproject, unoptimised too
# (libdw's inline functions are then calls), and the runtime a second time at -O2 took two
# minutes of the suite.
if [ -z "${INPROF_TOOLCHAIN_FILE:-}" ]; then
  cmake -S "$src/tests/package/subdir_consumer" -B "$tmp/subdir" -DINPROF_SOURCE_DIR="$src" \
    -DCMAKE_BUILD_TYPE= >/dev/null
  cmake --build "$tmp/subdir" -j "$(nproc)" >/dev/null
  "$tmp/subdir/consumer" "$tmp/subdir.folded"
  test -s "$tmp/subdir.folded" || { echo "add_subdirectory consumer wrote no profile"; exit 1; }
  echo "add_subdirectory consumer works"
fi
echo "installed package: find_package and pkg-config consumers work"
