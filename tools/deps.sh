#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages a command needs, when any is missing. Safe to
# run again: it does nothing when all are there.
#   tools/deps.sh demo   what tools/demo.sh needs: build the exporter and the
#                        simulator, run them, show the tables (python3)
#   tools/deps.sh test   (the default) that and what tools/test.sh needs: the
#                        tools the tests run, the
#                        sanitizers' and the fuzzers' compiler, the package's
#                        build tools, Node.js for the Kubernetes manifests
set -euo pipefail

what=${1:-test}

demo=(
  gcc meson ninja-build pkg-config python3
  libzmq3-dev libmsgpack-dev libmicrohttpd-dev libcurl4-openssl-dev
  libjansson-dev libxxhash-dev zlib1g-dev
  libgnutls28-dev libcrypt-dev libyaml-dev libpcre2-dev
  libcmocka-dev  # the simulator comes with -Dtests=true, whose configuration looks for it
)
test=(
  openssl curl valgrind clang libclang-rt-14-dev clang-format
  prometheus prometheus-alertmanager  # promtool, amtool, and a real Prometheus (test_prometheus.py)
  victoria-metrics  # victoria-metrics, vmagent and vmalert: a fleet's second central store (test_fleet.py)
  debhelper dpkg-dev fakeroot lintian help2man systemd  # the Debian package (tests/package)
  chromium  # headless, it renders /status in tests/integration/test_status_page.py
  # protobuf-c decodes the protobuf exposition from Prometheus's own metrics.proto (tests/check_proto.py)
  protobuf-c-compiler libprotobuf-c-dev libprotobuf-dev golang-github-prometheus-client-model-dev
)
# ISA-L gzips the scrapes (meson option isal): Debian builds it for these;
# elsewhere zlib does.
case $(dpkg --print-architecture 2>/dev/null) in
amd64 | arm64) demo+=(libisal-dev) ;;
esac
# Node.js validates the Kubernetes manifests (tests/k8s); any node and npm on
# the PATH do, else Debian's.
test_commands=(node:nodejs npm:npm)

case $what in
demo) packages=("${demo[@]}") commands=() ;;
test) packages=("${demo[@]}" "${test[@]}") commands=("${test_commands[@]}") ;;
*) echo "usage: tools/deps.sh [demo|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for c in "${commands[@]}"; do
  command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing for the $what: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# prometheus and prometheus-alertmanager pull in services; we only use their
# binaries (prometheus, promtool, amtool), never the units.
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
