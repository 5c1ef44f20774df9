#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, as an operator meets it: built from a copy of the tree
# with dpkg-buildpackage, checked by lintian (errors and warnings fail; the
# overrides in debian/ say why each remaining tag stays), then, in a
# throwaway root, installed with apt-get (with what it depends on), its unit
# checked by systemd-analyze, the installed exporter run against the
# simulator, and purged: nothing of it may remain.
#
# The throwaway root: in a mount namespace of its own, an overlay whose lower
# layer is the host's / and whose upper layer is a tmpfs, chrooted into (with
# /proc, /dev, /sys, an empty /run and /tmp, and the work folder, this tree
# and the simulator's folder at their own paths). Whatever apt-get and dpkg
# write lands in the tmpfs and is gone with the namespace; the test checks
# that the host's packages (dpkg-query's list) and the package's paths on the
# host are as they were before. The exporter installed on the host by an
# operator changes nothing: the throwaway root purges its copy first.
# Where no throwaway root can be made (no overlayfs, no mount namespace), it
# runs on the host's own root only when asked (CI=true: a runner thrown away
# after), refusing if the package is installed there; otherwise it is not run
# (exit 77, saying why). It needs root either way (exit 77 without).
#
#   tests/package/test_deb.sh SIMULATOR
#   tests/package/test_deb.sh --inside WORK SIMULATOR   (install, run, purge: where it may)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
self=$root/tests/package/test_deb.sh
pkg=prometheus-mooncake-kv-exporter
# what the package installs, checked present after the install and absent after the purge
paths=(/usr/bin/mooncake-kv-exporter /etc/default/$pkg /lib/systemd/system/$pkg.service /usr/share/$pkg
  /usr/share/doc/$pkg /usr/share/man/man1/mooncake-kv-exporter.1.gz)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the package test installs with apt-get and needs root"
  exit 77
fi

# throwaway CMD...: CMD run as root of a throwaway root (above); BINDS: the
# host folders to see there at their own paths
throwaway() {
  local t rc=0
  t=$(mktemp -d "${TMPDIR:-/tmp}/kvx-throwaway.XXXXXX")
  unshare --mount --fork -- bash -euc '
    t=$1 n=$2; shift 2
    mount --make-rprivate /
    mount -t tmpfs -o mode=755 tmpfs "$t"
    mkdir "$t/upper" "$t/work" "$t/root"
    r=$t/root
    mount -t overlay overlay -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$r"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount --rbind /sys "$r/sys"
    mount -t tmpfs -o mode=755 tmpfs "$r/run"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    for d in "${@:1:$n}"; do
      mkdir -p "$r$d"
      mount --rbind "$d" "$r$d"
    done
    shift "$n"
    exec chroot "$r" "$@"' throwaway "$t" "${#BINDS[@]}" "${BINDS[@]}" "$@" || rc=$?
  rmdir "$t" 2>/dev/null || true
  return $rc
}

# the host's packages and the package's paths on it, to compare before and after
host_state() {
  dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' | sort
  ls -d "${paths[@]}" 2>/dev/null || true
}

if [ "${1:-}" != "--inside" ]; then
  sim=$(realpath "$1")
  BINDS=()
  where=throwaway
  if ! throwaway true 2>/dev/null; then
    if [ "${CI:-}" != true ]; then
      echo "SKIP: no throwaway root here (an overlay over / in a mount namespace failed), and the test installs on the host's own root only when asked (CI=true)"
      exit 77
    fi
    where=host
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      echo "FAIL: $pkg is installed on this machine and there is no throwaway root here; the test would purge it" >&2
      exit 1
    fi
  fi

  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "-- build"
  mkdir "$work/src"
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src")
  (cd "$work/src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || { tail -30 "$work/build.log"; exit 1; }
  deb=$(ls "$work"/${pkg}_*.deb)
  echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

  echo "-- lintian"
  lintian --fail-on error,warning --pedantic -I "$deb" "$work"/*.changes 2>&1 | grep -v '^running with root' || true
  lintian --fail-on error,warning "$deb" "$work"/*.changes >/dev/null 2>&1 || { echo "FAIL: lintian"; exit 1; }

  if [ "$where" = host ]; then
    echo "-- on the host's own root (CI=true; no throwaway root here)"
    bash "$self" --inside "$work" "$sim"
    exit
  fi
  echo "-- in a throwaway root (an overlay over /, its changes in a tmpfs)"
  before=$(host_state)
  BINDS=("$work" "$root" "$(dirname "$sim")")
  throwaway bash "$self" --inside "$work" "$sim"
  after=$(host_state)
  if [ "$before" != "$after" ]; then
    echo "FAIL: the host changed:"
    diff <(echo "$before") <(echo "$after") || true
    exit 1
  fi
  echo "the host's packages ($(echo "$before" | grep -c ' ii ') installed) and the package's paths on it: as before"
  echo "package test: ok"
  exit 0
fi

# --inside WORK SIMULATOR: install, run, purge, here
work=$2
sim=$3
deb=$(ls "$work"/${pkg}_*.deb)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
    apt-get purge -y -qq "$pkg" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
# in a throwaway root, the host's own copy (an operator's) goes first: the
# one under test is installed, not left as "already the newest version"
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
  echo "(the host's $pkg purged first, in the throwaway root only)"
  apt-get purge -y -qq "$pkg" >/dev/null 2>&1
fi

echo "-- install"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
for f in "${paths[@]}" /usr/share/$pkg/alerts/mooncake-kv.rules.yml \
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
# into a file: grep -q stops reading at its match, and curl, cut off, fails the pipeline
rc=0; curl -sf -o "$work/runbook.html" "http://127.0.0.1:$web/runbook" || rc=$?
[ $rc = 0 ] || { echo "FAIL: /runbook: curl exit $rc"; exit 1; }
grep -q 'id="master-down"' "$work/runbook.html" || { echo "FAIL: /runbook has no master-down section"; exit 1; }
echo "received $n messages; /runbook served"
for p in "${pids[@]}"; do kill "$p"; done
wait 2>/dev/null || true
pids=()

echo "-- purge"
apt-get purge -y -qq "$pkg" >/dev/null 2>&1
left=$(ls -d "${paths[@]}" 2>/dev/null || true)
[ -z "$left" ] || { echo "FAIL: left after purge: $left"; exit 1; }
! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed || { echo "FAIL: still known to dpkg"; exit 1; }
echo "purged: nothing left"
