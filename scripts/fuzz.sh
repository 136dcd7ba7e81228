#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on its seed corpus (fuzz/corpus/TARGET, read-only; new
# inputs go to BUILD/corpus/TARGET). Builds BUILD (FUZZ_BUILD, default build-fuzz) with clang
# (-DATTNSIM_FUZZ=ON) first when it is not configured; scripts/test.sh passes its sanitizer build.
#   scripts/fuzz.sh TARGET SECONDS     TARGET: fuzz_hardware fuzz_backend fuzz_model fuzz_measurements fuzz_cli
#                                       fuzz_sweep_spec fuzz_traces
# Prints libFuzzer's last status line (execs, coverage); a finding leaves its input under
# BUILD/findings/TARGET/ and exits non-zero. Keep each fixed finding as a regression case
# in tests/data/bad_inputs/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
[[ -d fuzz/corpus/$target ]] || { echo "fuzz.sh: no seed corpus fuzz/corpus/$target" >&2; exit 2; }
cxx=${FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (set FUZZ_CXX)" >&2; exit 2; }

build=${FUZZ_BUILD:-build-fuzz}
if [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DATTNSIM_FUZZ=ON \
    -DATTNSIM_BUILD_TESTS=OFF -DATTNSIM_BUILD_BENCH=OFF -DATTNSIM_BUILD_PYTHON=OFF \
    ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
fi
if grep -q '^ATTNSIM_FUZZ_COVERAGE:BOOL=OFF' "$build/CMakeCache.txt"; then
  echo "fuzz.sh: $build is built without libFuzzer's coverage (it only replays inputs); use another FUZZ_BUILD" >&2
  exit 2
fi
cmake --build $build -j"${FUZZ_JOBS:-2}" --target "$target" >/dev/null

work=$build/corpus/$target findings=$build/findings/$target
mkdir -p "$work" "$findings"
log=$build/$target.log
# stdout (the program's answers) is closed for the command-line target; stderr keeps the reports.
status=0
(cd "$findings" && "$OLDPWD/$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -close_fd_mask=1 -print_final_stats=1 "$OLDPWD/$work" "$OLDPWD/fuzz/corpus/$target") >"$log" 2>&1 ||
  status=$?
grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 || true
grep -E '^stat::number_of_executed_units' "$log" || true
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: $target found a problem (exit $status); see $log and $findings/" >&2
  grep -E 'ERROR|SUMMARY|terminate|deadly' "$log" | head -5 >&2 || true
fi
exit $status
