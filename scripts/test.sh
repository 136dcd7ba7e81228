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

# A brief fuzz of every target on its seed corpus (FUZZ_SECONDS each, 20 by default; 0 skips),
# where clang's libFuzzer is installed. The clang build is the cost (a few minutes); the runs are
# 7 x FUZZ_SECONDS. Longer runs: scripts/fuzz.sh TARGET SECONDS.
fuzz_seconds=${FUZZ_SECONDS:-20}
if [[ $fuzz_seconds -gt 0 ]] && command -v "${FUZZ_CXX:-clang++-14}" >/dev/null; then
  for target in fuzz_hardware fuzz_backend fuzz_model fuzz_measurements fuzz_cli fuzz_sweep_spec fuzz_traces; do
    FUZZ_JOBS=$jobs ./scripts/fuzz.sh "$target" "$fuzz_seconds"
  done
else
  echo "test.sh: no clang++ (libFuzzer): fuzzing skipped"
fi
