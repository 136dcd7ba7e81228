#!/usr/bin/env bash
# Lints the tracked sources: clang-format, clang-tidy (.clang-tidy, findings are errors) and a file-length limit.
# Usage: scripts/lint.sh [BUILD_DIR]   (default: build; it must hold compile_commands.json from a configure,
# unity or not)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
max_lines=400
jobs=$(nproc)
start=$SECONDS
failed=()

if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "lint: $build/compile_commands.json is missing; configure with cmake first" >&2
  exit 2
fi
clang_format=$(command -v clang-format-14 || command -v clang-format)
clang_tidy=$(command -v clang-tidy-14 || command -v clang-tidy)

mapfile -t sources < <(git ls-files '*.cpp' '*.hpp')
# The translation units are the compile database's: with a unity build (the default) one per batch of
# sources, so each heavy header is parsed and matched once per batch; .clang-tidy's HeaderFilterRegex
# covers our .cpp files as well, so findings in a batched source are reported at its own line. fuzz/
# compiles only in the clang fuzz build, whose compile commands are not in this database; generated
# sources (the embedded catalog) are not ours to lint.
mapfile -t db_files < <(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$build/compile_commands.json")
units=()
covered=$(mktemp)
trap 'rm -f "$covered"' EXIT
for f in "${db_files[@]}"; do
  if [[ $f == */Unity/unity_*.cxx ]]; then
    units+=("$f")
    sed -n 's|^#include "'"$PWD"'/\(.*\)"$|\1|p' "$f" >>"$covered"
  elif git ls-files --error-unmatch "$f" >/dev/null 2>&1 && [[ $f != */fuzz/* ]]; then
    units+=("$f")
    realpath --relative-to=. "$f" >>"$covered"
  fi
done
mapfile -t unlinted < <(git ls-files '*.cpp' ':!:fuzz/*' | sort | comm -23 - <(sort -u "$covered"))
if ((${#unlinted[@]})); then
  echo "lint: not in $build's compile database, so not linted: ${unlinted[*]}"
  failed+=(unlinted)
fi

echo "lint: clang-format on ${#sources[@]} files"
if ! "$clang_format" --dry-run -Werror "${sources[@]}"; then
  failed+=(clang-format)
fi

echo "lint: clang-tidy on ${#units[@]} translation units, $jobs jobs"
# The build passes GCC-only flags (-Wno-restrict, LTO's -fno-fat-lto-objects) that clang does not know.
# Tests are linted for naming, size and modernize only (tests/.clang-tidy); a unity batch of tests is not
# under tests/, so the same check list is given on the command line.
tidy_log=$(mktemp)
trap 'rm -f "$covered" "$tidy_log"' EXIT
tidy_one() {
  local extra=()
  local relative=${1#"$PWD"/} checks=()
  # A unity batch includes our .cpp files by design.
  [[ $1 == */Unity/unity_*.cxx ]] && checks+=(-bugprone-suspicious-include)
  if [[ $relative == tests/* || $1 == */tests/CMakeFiles/attnsim_test_sources.dir/Unity/* ]]; then
    checks+=('-bugprone-*' '-performance-*')
  fi
  if ((${#checks[@]})); then
    extra=(--checks="$(IFS=,; echo "${checks[*]}")")
  fi
  "$clang_tidy" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option \
    --extra-arg=-Wno-ignored-optimization-argument "${extra[@]}" "$1"
}
export -f tidy_one
export clang_tidy build
if ! printf '%s\0' "${units[@]}" | xargs -0 -P "$jobs" -n 1 bash -c 'tidy_one "$1"' _ >"$tidy_log" 2>&1; then
  # clang-tidy prints "N warnings generated." on stderr even when all are filtered out; show only the findings.
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$tidy_log" || true
  failed+=(clang-tidy)
fi

echo "lint: files over $max_lines lines (tests/ exempt)"
long=0
for f in "${sources[@]}"; do
  [[ $f == tests/* ]] && continue
  n=$(wc -l <"$f")
  if ((n > max_lines)); then
    echo "$f: $n lines (limit $max_lines)"
    long=1
  fi
done
((long)) && failed+=(file-length)

if ((${#failed[@]})); then
  echo "lint: FAILED (${failed[*]}) in $((SECONDS - start))s"
  exit 1
fi
echo "lint: clean in $((SECONDS - start))s"
