#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the build, the tests and the demo need, when
# any is missing. Safe to run again: it does nothing when all are there.
set -euo pipefail

packages=(
  gcc meson ninja-build pkg-config
  libzmq3-dev libmsgpack-dev libmicrohttpd-dev libcurl4-openssl-dev
  libjansson-dev libxxhash-dev zlib1g-dev libcmocka-dev
  libgnutls28-dev libcrypt-dev libyaml-dev libpcre2-dev openssl
  valgrind curl prometheus prometheus-alertmanager python3 clang libclang-rt-14-dev clang-format
  debhelper dpkg-dev fakeroot lintian help2man systemd
  chromium  # headless, it renders /status in tests/integration/test_status_page.py
)

# Node.js validates the Kubernetes manifests (tests/k8s); any node and npm on
# the PATH do, else Debian's.
commands=(node:nodejs npm:npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for c in "${commands[@]}"; do
  command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
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
