#!/usr/bin/env bash
# The demo: the exporter against the bundled simulator. The daemon and the
# simulator are the subject of the daemon issue; until they land this says so.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
if [ ! -f exporter/main.c ]; then
  echo "demo: the exporter daemon and simulator are coming in the daemon issue;"
  echo "      the core library and its tests are here: tools/test.sh"
  exit 1
fi
