#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: installs what is missing, builds warning-free, runs
# every test, then every test again under AddressSanitizer +
# UndefinedBehaviorSanitizer, the unit tests under valgrind's leak checker,
# each libFuzzer target for 30 s on its corpus, the Kubernetes manifests
# against the real schemas (npm), and the Debian package (built, linted,
# installed, run, purged; as root only).
#   tools/test.sh            everything
#   tools/test.sh --quick    one plain pass only
# The first failure stops it.  Whatever happens, its last line is
# `N passed, M failed`: every check it ran, each meson test of each meson
# pass (plain, ASan, valgrind) as meson's summary counts it, and each check
# that is one command (the style, each ThreadSanitizer story, each fuzz
# target, the Kubernetes manifests, the package) as one; a check skipped
# (exit 77) is neither.  A step that is no check (a build) and fails counts
# as one failed, so that a failed run never ends with 0 failed.
set -euo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
count() { passed=$((passed + $1)); failed=$((failed + $2)); }
closing() {
  local rc=$?
  trap - EXIT
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
  fi
  echo "$passed passed, $failed failed"
  exit "$rc"
}
trap closing EXIT

# A check that is one command: one passed, or one failed and the suite stops.
check() {
  local rc=0
  "$@" || rc=$?
  if [ $rc -ne 0 ]; then
    count 0 1
    exit $rc
  fi
  count 1 0
}

# A check that may not apply here (exit 77: skipped, neither passed nor failed).
check_or_skip() {
  local rc=0
  "$@" || rc=$?
  case $rc in
  0) count 1 0 ;;
  77) echo "== skipped: $*" ;;
  *)
    count 0 1
    exit $rc
    ;;
  esac
}

# A meson pass: its output as it runs, counted from meson's own summary
# (Ok and Expected Fail passed; Fail, Unexpected Pass and Timeout failed;
# Skipped neither), the last summary of the output being meson's.
meson_pass() {  # the command: [env VAR=...] meson test ...
  local rc=0 log ok bad
  log=$(mktemp)
  "$@" 2>&1 | tee "$log" || rc=$?
  read -r ok bad < <(awk '/^Ok:/ {o = $2} /^Expected Fail:/ {x = $3} /^Fail:/ {f = $2}
    /^Unexpected Pass:/ {u = $3} /^Timeout:/ {t = $2} END {print o + x, f + u + t}' "$log")
  rm -f "$log"
  count "$ok" "$bad"
  if [ $rc -ne 0 ]; then
    [ "$bad" -gt 0 ] || count 0 1 # meson failed without a failed test to show for it
    exit $rc
  fi
}

quick=0
[ "${1:-}" = "--quick" ] && quick=1

tools/deps.sh

configure() {  # dir, extra meson args...
  local dir=$1; shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
  else
    meson setup "$dir" -Dwerror=true "$@" >/dev/null
  fi
  ninja -C "$dir"
}

echo "== style (tools/format.sh --check)"
check tools/format.sh --check

# Every timeout of the tests comes from tests/integration/timing.py: the
# stories scale their own waits by the build and the load; meson's bound on
# each test grows by the same factors.
multiplier() { python3 tests/integration/timing.py multiplier "$1"; }

echo "== build and test (warnings are errors)"
configure build
meson_pass meson test -C build --print-errorlogs --timeout-multiplier "$(multiplier plain)"

[ $quick -eq 1 ] && exit 0

echo "== all tests under ASan + UBSan (the daemon and simulator too)"
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
meson_pass env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  KVX_SANITIZED=1 \
  meson test -C build-asan --print-errorlogs --timeout-multiplier "$(multiplier asan)"

echo "== the concurrency tests under ThreadSanitizer"
configure build-tsan -Db_sanitize=thread -Db_lundef=false  # tests on: the stories need the simulator
tsan_story() {  # story [-k NAME]
  (cd tests/integration && KVX_SANITIZED=1 \
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/../tsan.supp" \
    python3 "$1" ../../build-tsan/mooncake-kv-exporter ../../build-tsan/tools/mooncake-kv-sim "${@:2}")
}
check tsan_story test_http.py -k scrape  # fifty scrapers, and scraping while ingesting
check tsan_story test_reconcile.py -k exact
check tsan_story test_ha.py
check tsan_story test_front_door.py  # the keeper's watchdog and lock, four server threads, the one bcrypt

echo "== unit tests under valgrind (leaks and invalid accesses fail)"
meson_pass meson test -C build --suite unit --print-errorlogs --timeout-multiplier "$(multiplier valgrind)" \
  --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect'

echo "== fuzzing: each libFuzzer target for 30 s on its corpus (clang, ASan + UBSan)"
CC=clang configure build-fuzz -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined -Db_lundef=false
for t in stream status answers handover; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$t/* "$work/"
  fuzz_rc=0
  (cd "$work" && UBSAN_OPTIONS=halt_on_error=1 "$OLDPWD/build-fuzz/tests/fuzz/fuzz_$t" \
      -max_total_time=30 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" > "$work.log" 2>&1) || fuzz_rc=$?
  if [ $fuzz_rc -ne 0 ]; then
    # the whole report, and the input that did it (libFuzzer writes crash-*/leak-*/timeout-* where it runs)
    cat "$work.log"
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      [ -e "$f" ] && { echo "fuzz_$t: input $f (base64):"; base64 -w 0 "$f"; echo; }
    done
    count 0 1
    exit $fuzz_rc
  fi
  count 1 0
  tail -n 4 "$work.log"
  rm -rf "$work" "$work.log"
done

echo "== the Kubernetes manifests, validated against the real schemas"
check_or_skip bash tests/k8s/test_manifests.sh build/mooncake-kv-exporter

echo "== the Debian package: build, lintian, install, run, purge"
check_or_skip bash tests/package/test_deb.sh build/tools/mooncake-kv-sim
