#!/usr/bin/env bash
# Renders the README's picture: runs the default study, writes its priorities report and takes a
# headless-Chromium screenshot of the HTML page into docs/img/priorities-report.png.
#   ./scripts/render-report.sh [ATTNSIM]   (default: ./build/attnsim; needs chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
attnsim=$(realpath "${1:-./build/attnsim}")
command -v chromium >/dev/null || { echo "render-report: chromium is not installed (apt-get install chromium)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# As the README runs it (the page names the store as given: study.db).
(cd "$work" && "$attnsim" sweep default --db study.db && "$attnsim" report priorities --db study.db --out report)
mkdir -p docs/img
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1200,1500 --screenshot="$work/shot.png" "file://$work/report/priorities.html" 2>/dev/null
cp "$work/shot.png" docs/img/priorities-report.png
echo "wrote docs/img/priorities-report.png"
