#!/usr/bin/env bash
# Builds and runs the whole test suite twice, a release build (GCC) then an ASan+UBSan build (clang),
# lints the sources (clang-format, clang-tidy, file length) against the release build's compile
# commands, and replays each libFuzzer target's seed corpus. Prints how long each stage took.
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
# targets (fuzz/, -DATTNSIM_FUZZ=ON, here without coverage: they replay their corpora below): one
# compile of the sources instead of two. Four suites share a test process, so the catalog is parsed
# once per four (about a second of CPU each under ASan).
cxx=${FUZZ_CXX:-clang++-14}
# Line tables are all a sanitizer report needs (file:line in each frame); full debug info made every
# compile about 10% slower and the binaries several times larger.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DCMAKE_CXX_COMPILER="$cxx" -DATTNSIM_SANITIZE=ON -DATTNSIM_FUZZ=ON -DATTNSIM_FUZZ_COVERAGE=OFF \
  -DATTNSIM_BUILD_BENCH=OFF -DATTNSIM_BUILD_PYTHON=OFF -DATTNSIM_SUITES_PER_TEST=4
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

# Each libFuzzer target replays its seed corpus once (fuzz/corpus/TARGET, 7 targets): every input that
# once found new code still loads or is refused cleanly under ASan+UBSan. Fuzzing proper needs the
# coverage build: scripts/fuzz.sh TARGET SECONDS.
for target in fuzz_hardware fuzz_backend fuzz_model fuzz_measurements fuzz_cli fuzz_sweep_spec fuzz_traces; do
  mapfile -t inputs < <(find "fuzz/corpus/$target" -type f | sort)
  if ! build-asan/fuzz/"$target" -close_fd_mask=1 -rss_limit_mb=2048 -timeout=30 "${inputs[@]}" >"build-asan/$target.replay.log" 2>&1; then
    echo "test.sh: $target failed on its seed corpus; see build-asan/$target.replay.log" >&2
    grep -E 'ERROR|SUMMARY|Running:' "build-asan/$target.replay.log" | tail -5 >&2 || true
    exit 1
  fi
done
took "seed corpus replay"
