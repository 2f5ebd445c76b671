#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and builds examples/cmake_project
# against it with find_package(genie); then pkg-config must find genie.pc; then both
# consumers run on stories260K.
set -euo pipefail
build_dir=$1 source_dir=$2 testdata=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$source_dir/examples/cmake_project" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
export LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}"
# GENIE_TEST_PRELOAD: the sanitizer runtime, in a sanitizer build (test/CMakeLists.txt).
out=$(LD_PRELOAD="${GENIE_TEST_PRELOAD:-}" "$work/build/consumer_cpp" "$testdata/models/stories260K.gguf" "Once upon a time")
case "$out" in
  ", there was a little girl named Lily"*) ;;
  *) echo "unexpected C++ consumer output: $out" >&2; exit 1 ;;
esac
LD_PRELOAD="${GENIE_TEST_PRELOAD:-}" "$work/build/consumer_c" "$testdata/models/stories260K.gguf" | grep -q "^libgenie "
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig" pkg-config --libs genie | grep -q -- "-lgenie"
echo "install test passed"
