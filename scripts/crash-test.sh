#!/usr/bin/env bash
# Crash safety (issue 16): kill -9 at a random moment of a measurement import and of a sweep, then
# run the same command again to resume. A trial passes when `PRAGMA integrity_check` says ok after the
# kill and after the resume, the resumed command exits 0, and the store's rows equal those of an
# uninterrupted run (timestamps, run logs and row ids left out; see rows() below).
#   scripts/crash-test.sh [TRIALS]    TRIALS of each (default 20); ATTNSIM=path/to/attnsim (default build/attnsim)
# Prints "import: N/N passed", "sweep: N/N passed" and how many kills landed while the process ran;
# exits 1 when a trial fails (its store is kept and named). Takes about a minute; docs/STORE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-20}
bin=$(realpath "${ATTNSIM:-build/attnsim}")
[[ -x $bin ]] || { echo "crash-test.sh: no $bin (build first, or set ATTNSIM)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "crash-test.sh: needs the sqlite3 shell" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/attnsim-crash.XXXXXX")
keep=0
trap '[[ $keep == 1 ]] || rm -rf "$work"' EXIT

csvs=(measurements/data/h100/measurements.csv measurements/data/h200/measurements.csv)
# Each runs attnsim in place of the (sub)shell that calls it (exec), so kill -9 reaches attnsim itself:
# call them in ( ) or with &.
import_cmd() { exec "$bin" measurements import "${csvs[@]}" --db "$1"; }
# Small commits and one worker: many transactions, so kills land between and inside them.
sweep_cmd() { exec "$bin" sweep default --db "$1" --jobs 1 --commit-points 20; }

# Every table's rows in a fixed order, without what differs between runs by design: the run log
# (sweep_runs: an interrupted run leaves its own row), timestamps, and measurement row ids (a
# re-import replaces rows under new ids).
rows() {
  local db=$1 t cols
  for t in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sweep_runs' ORDER BY name"); do
    cols=$(sqlite3 "$db" "SELECT group_concat(name, ',') FROM pragma_table_info('$t')
                          WHERE name NOT IN ('started', 'finished', 'created')
                            AND NOT ('$t' = 'measurements' AND name = 'id')")
    echo "== $t"
    sqlite3 "$db" "SELECT $cols FROM $t ORDER BY $cols"
  done | md5sum | cut -d' ' -f1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# trial KIND CMD REFERENCE_ROWS DURATION_MS N: one kill -9 and resume; prints nothing on success.
trial() {
  local kind=$1 cmd=$2 reference=$3 duration=$4 n=$5
  local db=$work/$kind-$n.db delay pid check
  delay=$((RANDOM * 32768 + RANDOM))
  delay=$((delay % (duration + 1)))
  $cmd "$db" >/dev/null 2>&1 &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null || true
  if [[ -f $db ]]; then
    check=$(sqlite3 "$db" "PRAGMA integrity_check" 2>&1) || true
    [[ $check == ok ]] || { echo "$kind trial $n (kill at $delay ms): integrity_check after the kill: $check ($db)"; return 1; }
  fi
  ($cmd "$db") >/dev/null 2>"$db.resume.log" || { echo "$kind trial $n: the resume failed ($db.resume.log)"; return 1; }
  check=$(sqlite3 "$db" "PRAGMA integrity_check" 2>&1) || true
  [[ $check == ok ]] || { echo "$kind trial $n: integrity_check after the resume: $check ($db)"; return 1; }
  [[ $(rows "$db") == "$reference" ]] || { echo "$kind trial $n (kill at $delay ms): rows differ from an uninterrupted run ($db)"; return 1; }
  rm -f "$db" "$db-wal" "$db-shm" "$db.resume.log"
}

status=0
for kind in import sweep; do
  cmd=${kind}_cmd
  start=$(now_ms)
  ($cmd "$work/$kind-reference.db") >/dev/null
  duration=$(($(now_ms) - start))
  reference=$(rows "$work/$kind-reference.db")
  passed=0 killed=0
  for n in $(seq 1 "$trials"); do
    if trial "$kind" "$cmd" "$reference" "$duration" "$n"; then passed=$((passed + 1)); else status=1 keep=1; fi
  done
  echo "$kind: $passed/$trials passed ($killed killed while running; an uninterrupted run takes $duration ms)"
done
[[ $keep == 0 ]] || echo "crash-test.sh: failed stores kept in $work" >&2
exit $status
