#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rewrites every generated artifact from the code, in the order they feed
# each other: builds, then the render goldens (tests/fixtures/render, from
# the renderer over the captures), docs/reference.md (from --help and the
# renderer), the dashboards (tools/gen/gen_dashboards.py) and the Kubernetes
# manifests, which embed the dashboards and the rules (tools/gen/gen_k8s.py), and
# the rules for vmalert (tools/gen/gen_vm_rules.py).
# Run it after adding or changing a metric family, a flag or a panel, then
# read the diff (`git diff --stat`; the goldens' text with zcat).
#   tools/gen/regen.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" mooncake-kv-exporter tests/render_dump >/dev/null
python3 tests/check_render_golden.py "$build/tests/render_dump" tests/fixtures --write
python3 tools/gen/gen_reference.py --write docs/reference.md "$build/mooncake-kv-exporter" "$build/tests/render_dump" \
  tests/fixtures/upstream/drops.zmqcap tests/fixtures/upstream/edge.zmqcap
python3 tools/gen/gen_dashboards.py
python3 tools/gen/gen_k8s.py
python3 tools/gen/gen_vm_rules.py
git status --short -- tests/fixtures/render docs/reference.md dashboards deploy/kubernetes alerts/mooncake-kv.vm.rules.yml
