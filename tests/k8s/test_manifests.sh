#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes manifests, validated offline: the npm packages of the real
# schemas are installed (pinned in package.json) into a scratch directory,
# then validate.mjs checks every object.  Generated files must be current.
#   tests/k8s/test_manifests.sh EXPORTER
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
exporter=$(realpath "$1")
python3 "$root/tools/gen/gen_k8s.py" --check
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "SKIP: node and npm are needed to validate the manifests (Debian: nodejs npm)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/validate.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --silent >/dev/null)
node "$work/validate.mjs" "$root" "$exporter"
