#!/usr/bin/env bash
# Lints the tracked sources: clang-format, clang-tidy (.clang-tidy, findings are errors) and a file-length limit.
# Usage: scripts/lint.sh [BUILD_DIR]   (default: build; it must hold compile_commands.json from a configure)
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
# fuzz/ compiles only in the clang fuzz build (-DATTNSIM_FUZZ=ON, scripts/fuzz.sh), whose compile commands
# (target-specific definitions such as ATTNSIM_FUZZ_KIND) are not in this build's database.
mapfile -t units < <(git ls-files '*.cpp' ':!:fuzz/*')

echo "lint: clang-format on ${#sources[@]} files"
if ! "$clang_format" --dry-run -Werror "${sources[@]}"; then
  failed+=(clang-format)
fi

echo "lint: clang-tidy on ${#units[@]} files, $jobs jobs"
# The build passes GCC-only flags (-Wno-restrict, LTO's -fno-fat-lto-objects) that clang does not know.
tidy_log=$(mktemp)
trap 'rm -f "$tidy_log"' EXIT
if ! printf '%s\0' "${units[@]}" |
  xargs -0 -P "$jobs" -n 1 "$clang_tidy" -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-ignored-optimization-argument >"$tidy_log" 2>&1; then
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
