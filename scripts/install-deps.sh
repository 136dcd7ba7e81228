#!/usr/bin/env bash
# Installs the Debian 12 packages attnsim builds with, when any is missing (run as root).
set -euo pipefail
packages=(build-essential cmake ninja-build libyaml-cpp-dev libeigen3-dev libboost-graph-dev libsqlite3-dev
          zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libfmt-dev nlohmann-json3-dev
          pybind11-dev python3-dev python3-pytest clang-tidy clang-format
          libclang-rt-14-dev  # clang's ASan/UBSan and libFuzzer runtimes: the sanitizer and fuzz build (scripts/test.sh)
          openmpi-bin  # openmpi-bin: the sweep test under mpirun (tests/test_store.cpp skips without it)
          chromium fonts-dejavu-core)  # headless render of the HTML reports (tests/test_reports.cpp skips without it)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
