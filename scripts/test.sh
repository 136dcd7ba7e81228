#!/usr/bin/env bash
# Builds and runs the whole test suite twice, a release build then an ASan+UBSan build, and lints
# the sources (clang-format, clang-tidy, file length) against the release build's compile commands.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
./scripts/lint.sh build

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DATTNSIM_SANITIZE=ON -DATTNSIM_BUILD_BENCH=OFF -DATTNSIM_BUILD_PYTHON=OFF
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
