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
set -euo pipefail
cd "$(dirname "$0")/.."

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
tools/format.sh --check

# Every timeout of the tests comes from tests/integration/timing.py: the
# stories scale their own waits by the build and the load; meson's bound on
# each test grows by the same factors.
multiplier() { python3 tests/integration/timing.py multiplier "$1"; }

echo "== build and test (warnings are errors)"
configure build
meson test -C build --print-errorlogs --timeout-multiplier "$(multiplier plain)"

[ $quick -eq 1 ] && exit 0

echo "== all tests under ASan + UBSan (the daemon and simulator too)"
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
KVX_SANITIZED=1 \
  meson test -C build-asan --print-errorlogs --timeout-multiplier "$(multiplier asan)"

echo "== the concurrency tests under ThreadSanitizer"
configure build-tsan -Db_sanitize=thread -Db_lundef=false -Dtests=false
(cd tests/integration && KVX_SANITIZED=1 \
  TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/../tsan.supp" \
  python3 test_daemon.py ../../build-tsan/mooncake-kv-exporter ../../build-tsan/tools/mooncake-kv-sim -k scrape &&
  KVX_SANITIZED=1 TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/../tsan.supp" \
  python3 test_reconcile.py ../../build-tsan/mooncake-kv-exporter ../../build-tsan/tools/mooncake-kv-sim -k exact &&
  KVX_SANITIZED=1 TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/../tsan.supp" \
  python3 test_ha.py ../../build-tsan/mooncake-kv-exporter ../../build-tsan/tools/mooncake-kv-sim)

echo "== unit tests under valgrind (leaks and invalid accesses fail)"
meson test -C build --suite unit --print-errorlogs --timeout-multiplier "$(multiplier valgrind)" \
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
    exit $fuzz_rc
  fi
  tail -n 4 "$work.log"
  rm -rf "$work" "$work.log"
done

echo "== the Kubernetes manifests, validated against the real schemas"
k8s_rc=0
bash tests/k8s/test_manifests.sh build/mooncake-kv-exporter || k8s_rc=$?
[ $k8s_rc -eq 0 ] || [ $k8s_rc -eq 77 ] || exit $k8s_rc

echo "== the Debian package: build, lintian, install, run, purge"
pkg_rc=0
bash tests/package/test_deb.sh build/tools/mooncake-kv-sim || pkg_rc=$?
[ $pkg_rc -eq 0 ] || [ $pkg_rc -eq 77 ] || exit $pkg_rc

# One closing line for whoever reads the end of the log: every meson test
# of every pass (failures stop the script before this line).
python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json \
  build/meson-logs/testlog-valgrind.json <<'PY'
import json, sys
ok = bad = 0
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line).get("result")
        ok += r == "OK"
        bad += r not in ("OK", "SKIP", None)
print("test.sh: %d passed, %d failed" % (ok, bad))
PY
