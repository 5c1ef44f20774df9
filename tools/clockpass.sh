#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command where CLOCK_MONOTONIC and CLOCK_BOOTTIME read SECONDS when
# it starts, as on a machine booted SECONDS ago, in a Linux time namespace
# (unshare --time; the wall clock is the host's), optionally with busy loops
# competing for every core.  tools/test.sh runs the meson suite so: the clock
# of a machine booted a minute ago (every CI runner, every container) and one
# up ten years, so that no test or code path that mixes a fixed time with
# the real monotonic clock passes by the host's uptime alone.
#
#   tools/clockpass.sh [--busy] SECONDS CMD...
#
# --busy: one busy loop per core (nproc) beside the command, each bounded by
#   CLOCKPASS_BUSY_MAX seconds (default 3600) and killed when the command ends.
# Before the command, it checks inside the namespace that both clocks and
# /proc/uptime read SECONDS (to within the minute it may take to get there on
# a loaded machine) and says what they read.
# Exit: the command's status; 77 when it cannot run here (not root, or no
# time namespaces), saying why on one line.
set -euo pipefail

busy=0
[ "${1:-}" = "--busy" ] && { busy=1; shift; }
[ $# -ge 2 ] || { echo "usage: tools/clockpass.sh [--busy] SECONDS CMD..." >&2; exit 2; }
want=$1
shift
case $want in '' | *[!0-9]*) echo "clockpass: SECONDS must be a whole number: $want" >&2; exit 2 ;; esac

# Time namespaces need CAP_SYS_ADMIN (root here; an unprivileged user
# namespace would do too, but then the command would not run as root, and
# the suite's root-only checks would change under it) and a kernel >= 5.6.
if [ "$(id -u)" -ne 0 ]; then
  echo "clockpass: not run: time namespaces need root (unshare --time)"
  exit 77
fi
if ! unshare --time --fork true 2>/dev/null; then
  echo "clockpass: not run: unshare --time fails here (a kernel without time namespaces, or a container that forbids them)"
  exit 77
fi

# An offset is added to the host's clock, and the kernel refuses one that
# would make the clock read below zero (ERANGE), so a minute on a host up an
# hour is the offset 60 - 3600; each clock has its own (BOOTTIME also counts
# the time suspended).
now() { python3 -c "import time; print(int(time.clock_gettime(time.$1)))"; }
off_mono=$((want - $(now CLOCK_MONOTONIC)))
off_boot=$((want - $(now CLOCK_BOOTTIME)))

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ $busy -eq 1 ]; then
  for _ in $(seq "$(nproc)"); do
    timeout "${CLOCKPASS_BUSY_MAX:-3600}" sh -c 'while :; do :; done' &
    pids+=($!)
  done
  echo "clockpass: $(nproc) busy loops (pids ${pids[*]}), each for at most ${CLOCKPASS_BUSY_MAX:-3600} s"
fi

# Inside: the clocks as the tests will read them, checked, then the command.
# shellcheck disable=SC2016
rc=0
unshare --time --fork --monotonic="$off_mono" --boottime="$off_boot" -- bash -c '
  want=$1; shift
  read -r mono boot < <(python3 -c "import time; print(int(time.clock_gettime(time.CLOCK_MONOTONIC)), int(time.clock_gettime(time.CLOCK_BOOTTIME)))")
  up=$(cut -d" " -f1 /proc/uptime)
  offsets=$(tr -s " \n" " " < /proc/self/timens_offsets)
  echo "clockpass: CLOCK_MONOTONIC reads $mono s, CLOCK_BOOTTIME $boot s, /proc/uptime $up s (wanted $want; timens_offsets: $offsets)"
  for v in "$mono" "$boot" "${up%.*}"; do
    # read since the offsets were set: at least SECONDS, and a loaded machine
    # takes seconds to get here, not a minute
    if [ "$v" -lt "$want" ] || [ "$v" -gt $((want + 60)) ]; then
      echo "clockpass: FAIL: a clock reads $v s, not $want s" >&2
      exit 1
    fi
  done
  exec "$@"' clockpass "$want" "$@" || rc=$?
exit $rc
