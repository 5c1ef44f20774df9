#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, as an operator meets it: built from a copy of the tree
# with dpkg-buildpackage, checked by lintian (errors and warnings fail; the
# overrides in debian/ say why each remaining tag stays), installed with
# apt-get, its unit checked by systemd-analyze, the installed exporter run
# against the simulator, then purged: nothing of it may remain.
#
#   tests/package/test_deb.sh SIMULATOR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sim=$(realpath "$1")
pkg=prometheus-mooncake-kv-exporter

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the package test installs with apt-get and needs root"
  exit 77
fi
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
  echo "FAIL: $pkg is installed on this machine; the test would purge it" >&2
  exit 1
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed && apt-get purge -y -qq "$pkg" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

echo "-- build"
mkdir "$work/src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src")
(cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || { tail -30 "$work/build.log"; exit 1; }
deb=$(ls "$work"/${pkg}_*.deb)
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

echo "-- lintian"
lintian --fail-on error,warning --pedantic -I "$deb" "$work"/*.changes 2>&1 | grep -v '^running with root' || true
lintian --fail-on error,warning "$deb" "$work"/*.changes >/dev/null 2>&1 || { echo "FAIL: lintian"; exit 1; }

echo "-- install"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
for f in /usr/bin/mooncake-kv-exporter /etc/default/$pkg /lib/systemd/system/$pkg.service \
         /usr/share/man/man1/mooncake-kv-exporter.1.gz /usr/share/$pkg/alerts/mooncake-kv.rules.yml \
         /usr/share/$pkg/dashboards/mooncake-kv-overview.json /usr/share/doc/$pkg/runbook.md.gz; do
  [ -e "$f" ] || { echo "FAIL: $f is not installed"; exit 1; }
done
out=$(systemd-analyze verify --man=no /lib/systemd/system/$pkg.service 2>&1) || { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "FAIL: systemd-analyze verify: $out"; exit 1; }
echo "unit verified; $(grep -c '^[A-Z][A-Za-z]*=' /lib/systemd/system/$pkg.service) settings"
# a bad flag exits 2, and the unit does not restart on 2 (it would loop forever)
rc=0; /usr/bin/mooncake-kv-exporter --no.such-flag >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: a bad flag exits $rc, not 2"; exit 1; }
grep -qx 'RestartPreventExitStatus=2' /lib/systemd/system/$pkg.service || { echo "FAIL: the unit restarts on exit 2"; exit 1; }
echo "a bad flag exits 2, and the unit does not restart on it"

echo "-- run the installed exporter against the simulator"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pub=$(port) adm=$(port) web=$(port)
"$sim" --pub tcp://127.0.0.1:$pub --status 127.0.0.1:$adm --phase sleep:seconds=1 --phase ops:count=500 \
  --phase wait >"$work/sim.log" 2>&1 &
pids+=($!)
# the ARGS the unit would pass, pointed at the simulator
. /etc/default/$pkg
set -- $ARGS
[ "$1" = "--zmq.endpoint" ] || { echo "FAIL: unexpected default ARGS: $ARGS"; exit 1; }
/usr/bin/mooncake-kv-exporter --zmq.endpoint tcp://127.0.0.1:$pub --master.url http://127.0.0.1:$adm \
  --web.listen-address 127.0.0.1:$web >"$work/exporter.log" 2>&1 &
pids+=($!)
# 10 s on an idle machine, scaled as every timeout of the tests (tests/integration/timing.py)
tries=$(python3 "$root/tests/integration/timing.py" multiplier plain | awk '{printf "%d", $1 * 50}')
for _ in $(seq "$tries"); do
  # not listening yet: curl fails, and pipefail must not end the test here
  n=$(curl -sf "http://127.0.0.1:$web/metrics" | awk '/^mooncake_kv_messages_received_total/ {print $2}') || n=""
  [ -n "$n" ] && [ "$n" != 0 ] && break
  sleep 0.2
done
[ -n "$n" ] && [ "$n" != 0 ] || { echo "FAIL: no messages received"; cat "$work/exporter.log"; exit 1; }
curl -sf "http://127.0.0.1:$web/runbook" | grep -q 'id="master-down"' || { echo "FAIL: /runbook"; exit 1; }
echo "received $n messages; /runbook served"
for p in "${pids[@]}"; do kill "$p"; done
wait 2>/dev/null || true
pids=()

echo "-- purge"
apt-get purge -y -qq "$pkg" >/dev/null 2>&1
left=$(ls -d /usr/bin/mooncake-kv-exporter /etc/default/$pkg /lib/systemd/system/$pkg.service /usr/share/$pkg \
          /usr/share/doc/$pkg /usr/share/man/man1/mooncake-kv-exporter.1.gz 2>/dev/null || true)
[ -z "$left" ] || { echo "FAIL: left after purge: $left"; exit 1; }
! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed || { echo "FAIL: still known to dpkg"; exit 1; }
echo "purged: nothing left"
echo "package test: ok"
