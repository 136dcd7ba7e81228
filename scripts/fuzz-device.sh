#!/usr/bin/env bash
# Long fuzz runs on a machine with more cores (issue 16 asks >= 10 minutes a target), in two steps:
#   scripts/fuzz-device.sh pack [BUILD]      here: packs the clang fuzz binaries of BUILD (default
#                                            build-asan, scripts/test.sh's) and the shared libraries they
#                                            load into .devcarry/fuzz.tar.xz (git-ignored, about 10 MB),
#                                            to be carried over
#   scripts/fuzz-device.sh run SECONDS [OUT] there, from the repository root: runs every target at once,
#                                            each for SECONDS on its seed corpus (fuzz/corpus/TARGET) in a
#                                            fresh working corpus, then writes OUT/summary.txt (each
#                                            target's executions and exit status) and any finding's input
#                                            to OUT/ (default ./fuzz-out)
# A finding is fixed and its input kept in fuzz/corpus/TARGET and tests/data/bad_inputs/ (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(fuzz_hardware fuzz_backend fuzz_model fuzz_measurements fuzz_cli fuzz_sweep_spec fuzz_traces)
tarball=.devcarry/fuzz.tar.xz

case "${1:-}" in
pack)
  build=${2:-build-asan}
  pack=$(mktemp -d)
  trap 'rm -rf "$pack"' EXIT
  mkdir -p "$pack/lib" .devcarry
  for t in "${targets[@]}"; do
    [[ -x $build/fuzz/$t ]] || { echo "fuzz-device.sh: $build/fuzz/$t is missing (build with -DATTNSIM_FUZZ=ON)" >&2; exit 2; }
    strip -o "$pack/$t" "$build/fuzz/$t"
    # Libraries outside the C library's own set, which the other machine may lack or hold in another version.
    ldd "$build/fuzz/$t" | awk '$3 ~ /^\// {print $3}' | grep -v -E '/lib(c|m|pthread|dl|rt|gcc_s|stdc\+\+)\.so' |
      xargs -r -I{} cp -L -n {} "$pack/lib/"
  done
  tar -C "$pack" -cJf "$tarball" .
  du -h "$tarball"
  ;;
run)
  seconds=${2:?usage: scripts/fuzz-device.sh run SECONDS [OUT]}
  out=${3:-fuzz-out}
  mkdir -p "$out"
  pack=/tmp/fuzz-pack
  rm -rf "$pack" && mkdir -p "$pack" && tar -C "$pack" -xJf "$tarball"
  export LD_LIBRARY_PATH=$pack/lib
  pids=()
  for t in "${targets[@]}"; do
    mkdir -p "/tmp/fuzz-work/$t" "/tmp/fuzz-findings/$t"
    (cd "/tmp/fuzz-findings/$t" && exec "$pack/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=8192 -close_fd_mask=1 -print_final_stats=1 "/tmp/fuzz-work/$t" "$OLDPWD/fuzz/corpus/$t") \
      >"/tmp/fuzz-findings/$t.log" 2>&1 &
    pids+=($!)
  done
  : >"$out/summary.txt"
  for i in "${!targets[@]}"; do
    t=${targets[$i]}
    status=0
    wait "${pids[$i]}" || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "/tmp/fuzz-findings/$t.log")
    echo "$t execs=${execs:-?} exit=$status" | tee -a "$out/summary.txt"
    if [[ $status -ne 0 ]]; then
      tail -40 "/tmp/fuzz-findings/$t.log" >"$out/$t.log"
      for f in /tmp/fuzz-findings/"$t"/{crash,leak,timeout,oom}-*; do
        [[ -f $f ]] && cp "$f" "$out/$t-$(basename "$f")"
      done
    fi
  done
  ;;
*)
  echo "usage: scripts/fuzz-device.sh pack [BUILD] | run SECONDS [OUT]" >&2
  exit 2
  ;;
esac
