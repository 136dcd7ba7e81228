#!/usr/bin/env bash
# Builds and runs the whole test suite twice, a release build (GCC) then an ASan+UBSan build (clang),
# lints the sources (clang-format, clang-tidy, file length) against the release build's compile
# commands, and fuzzes each libFuzzer target briefly. Prints how long each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)

t0=$SECONDS
took() { echo "test.sh: $1 in $((SECONDS - t0)) s"; t0=$SECONDS; }

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
took "release build"
ctest --test-dir build --output-on-failure -j "$jobs"
took "release tests"
./scripts/lint.sh build
took "lint"

# One clang build serves both the sanitizer run of every test (ASan+UBSan, -O1) and the libFuzzer
# targets (fuzz/, -DATTNSIM_FUZZ=ON): one compile of the sources instead of two.
cxx=${FUZZ_CXX:-clang++-14}
# Line tables are all a sanitizer report needs (file:line in each frame); full debug info made every
# compile about 10% slower and the binaries several times larger.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DCMAKE_CXX_COMPILER="$cxx" -DATTNSIM_SANITIZE=ON -DATTNSIM_FUZZ=ON -DATTNSIM_BUILD_BENCH=OFF \
  -DATTNSIM_BUILD_PYTHON=OFF
cmake --build build-asan -j "$jobs"
took "sanitizer and fuzz build"
# Left out of the sanitizer run, each checked by the release run above and its code run under ASan by
# smaller tests: the refit of every shipped calibration from the committed data (80 s under ASan; the
# fitting code runs in MoeFits, Extending, Uncertainty, ...), and rank against select over every catalog
# scenario (82 s under ASan; the same two code paths run in Validity's other tests and in the goldens).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" \
  -E '^(EngineKernels\.CalibrateReproducesTheCommittedYaml|Validity\.RankAndSelectAgreeOverTheWholeCatalog)$'
took "sanitizer tests"

# A brief fuzz of every target on its seed corpus (FUZZ_SECONDS each, 10 by default; 0 skips).
# Longer runs: scripts/fuzz.sh TARGET SECONDS.
fuzz_seconds=${FUZZ_SECONDS:-10}
if [[ $fuzz_seconds -gt 0 ]]; then
  for target in fuzz_hardware fuzz_backend fuzz_model fuzz_measurements fuzz_cli fuzz_sweep_spec fuzz_traces; do
    FUZZ_BUILD=build-asan FUZZ_JOBS=$jobs ./scripts/fuzz.sh "$target" "$fuzz_seconds"
  done
  took "fuzzing"
fi
