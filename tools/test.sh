#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: installs what the tests need (tools/deps.sh test),
# then runs every pass (tests/README.md, "What tools/test.sh runs"):
#   style         clang-format (tools/format.sh --check)
#   plain         the meson suite (unit, integration, rules, install), warnings as errors
#   clock-1min    the meson suite where CLOCK_MONOTONIC and CLOCK_BOOTTIME read a
#                 minute (a machine just booted), two busy loops competing for the cores
#                 (tools/clockpass.sh; root, as the next)
#   clock-10y     the meson suite where they read ten years (tools/clockpass.sh; root)
#   asan          the meson suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   tsan          the stories that drive threads against each other, under ThreadSanitizer
#   valgrind      the unit tests under valgrind's leak checker
#   fuzz          each libFuzzer target for 30 s on its corpus
#   k8s           the Kubernetes manifests against the real schemas (npm)
#   package       the Debian package: built, linted, then installed, run and purged
#                 in a throwaway root (tests/package/test_deb.sh; root)
#   tools/test.sh            everything
#   tools/test.sh --quick    style and the plain pass only
# Every pass runs, whatever failed before it; a pass whose build failed is
# not run.  Its last lines name every check that failed (`failed: asan /
# integration / front_door`) and every one not run, with why, then
# `N passed, M failed`: every check it ran, each meson test of each meson
# pass as one, and each check that is one command (the style, each
# ThreadSanitizer story, each fuzz target, the Kubernetes manifests, the
# package) as one; a build or an installation that fails counts as one
# failed.  A check not run (exit 77: not root, no npm registry...) is
# neither.  Exit 1 when anything failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

passed=0
failed=0
failures=()
not_run=()
fail() { failed=$((failed + 1)); failures+=("$1"); echo "== FAILED: $1"; }
skip() { not_run+=("$1 ($2)"); echo "== NOT RUN: $1 ($2)"; }

interrupted=0
closing() {
  trap - EXIT
  echo
  [ $interrupted -eq 1 ] && skip "the passes after the interruption" "interrupted"
  for f in "${failures[@]}"; do echo "failed: $f"; done
  for n in "${not_run[@]}"; do echo "not run: $n"; done
  echo "$passed passed, $failed failed"
  [ $interrupted -eq 1 ] && exit 130
  [ "$failed" -eq 0 ] && exit 0
  exit 1
}
trap closing EXIT
trap 'interrupted=1; exit 130' INT TERM

# check NAME CMD...: a check that is one command.  Exit 77 is "not run",
# the reason its last line of output.
check() {
  local name=$1 rc=0 log
  shift
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  case $rc in
  0) passed=$((passed + 1)) ;;
  77) skip "$name" "$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)" ;;
  *) fail "$name" ;;
  esac
  rm -f "$log"
}

# meson_pass NAME DIR CMD...: a meson pass (CMD: [env VAR=...] meson test -C
# DIR ...), its output as it runs, each test counted from meson's own log of
# the run (OK and EXPECTEDFAIL passed; FAIL, UNEXPECTEDPASS, TIMEOUT and
# ERROR failed, each named; SKIP neither).
meson_pass() {
  local name=$1 dir=$2 rc=0 json ok bad log
  shift 2
  # meson's log of the run: NAME.json, NAME-WRAPPER.json under --wrap
  rm -f "$dir/meson-logs/$name.json" "$dir/meson-logs/$name"-*.json
  log=$(mktemp)
  "$@" --logbase "$name" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ $rc -eq 77 ]; then # tools/clockpass.sh: cannot run here, and says why
    skip "$name" "$(grep -o 'not run: .*' "$log" | tail -n 1 | sed 's/^not run: //')"
    rm -f "$log"
    return
  fi
  rm -f "$log"
  local names=()
  json=$(ls "$dir/meson-logs/$name.json" "$dir/meson-logs/$name"-*.json 2>/dev/null | head -n 1)
  if [ -n "$json" ]; then
    { read -r ok bad; mapfile -t names; } < <(python3 - "$json" <<'EOF'
import json, sys
ok, bad = 0, []
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t["result"] in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif t["result"] in ("FAIL", "UNEXPECTEDPASS", "TIMEOUT", "ERROR"):
        bad.append(t["name"].split(":", 1)[-1] + ("" if t["result"] == "FAIL" else " (%s)" % t["result"].lower()))
print(ok, len(bad))
print("\n".join(bad))
EOF
    )
    passed=$((passed + ok))
    for n in "${names[@]}"; do [ -n "$n" ] && fail "$name / $n"; done
  else
    bad=0
  fi
  # meson failed without a failed test to show for it (a build, a setup)
  [ $rc -ne 0 ] && [ "$bad" -eq 0 ] && fail "$name (meson test exited $rc)"
  return 0
}

# build NAME DIR MESON_ARGS...: configures and builds DIR; false (and one
# failed check) when it fails, so that what needs it is not run
build() {
  local name=$1 dir=$2 rc=0
  shift 2
  echo "== build: $name ($dir)"
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null || rc=$?
  else
    meson setup "$dir" -Dwerror=true "$@" >/dev/null || rc=$?
  fi
  [ $rc -eq 0 ] && { ninja -C "$dir" || rc=$?; }
  if [ $rc -ne 0 ]; then
    fail "build $name ($dir)"
    return 1
  fi
}

quick=0
[ "${1:-}" = "--quick" ] && quick=1

echo "== dependencies (tools/deps.sh test)"
tools/deps.sh test || fail "deps (tools/deps.sh test)"

echo "== style (tools/format.sh --check)"
check style tools/format.sh --check

# Every timeout of the tests comes from tests/integration/timing.py: the
# stories scale their own waits by the build and the load; meson's bound on
# each test grows by the same factors.
multiplier() { python3 tests/integration/timing.py multiplier "$1"; }

plain_ok=0
build plain build -Dtests=true && plain_ok=1
if [ $plain_ok -eq 1 ]; then
  echo "== plain: the meson suite (warnings are errors)"
  meson_pass plain build meson test -C build --print-errorlogs --timeout-multiplier "$(multiplier plain)"
else
  skip plain "its build failed"
fi

if [ $quick -eq 1 ]; then
  for p in clock-1min clock-10y asan tsan valgrind fuzz k8s package; do skip "$p" "--quick"; done
  exit
fi

# The clock passes (tools/clockpass.sh): the meson suite again where the
# monotonic clocks read what they read on a machine booted a minute ago,
# with a busy loop on every core (meson's bound doubled for them), then
# where they read ten years.
if [ $plain_ok -eq 1 ]; then
  echo "== clock-1min: the meson suite at a monotonic clock of one minute, every core busy"
  busy_multiplier=$(python3 -c "print(round(2 * $(multiplier plain), 1))")
  meson_pass clock-1min build tools/clockpass.sh --busy 60 \
    meson test -C build --print-errorlogs --timeout-multiplier "$busy_multiplier"
  echo "== clock-10y: the meson suite at a monotonic clock of ten years"
  meson_pass clock-10y build tools/clockpass.sh $((10 * 365 * 86400)) \
    meson test -C build --print-errorlogs --timeout-multiplier "$(multiplier plain)"
else
  skip clock-1min "the plain build failed"
  skip clock-10y "the plain build failed"
fi

if build asan build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug; then
  echo "== asan: the meson suite under ASan + UBSan (the daemon and simulator too)"
  meson_pass asan build-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    KVX_SANITIZED=1 \
    meson test -C build-asan --print-errorlogs --timeout-multiplier "$(multiplier asan)"
else
  skip asan "its build failed"
fi

tsan_story() {  # story [-k NAME]
  (cd tests/integration && KVX_SANITIZED=1 \
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/../tsan.supp" \
    python3 "$1" ../../build-tsan/mooncake-kv-exporter ../../build-tsan/tools/mooncake-kv-sim "${@:2}")
}
tsan_stories=(
  "test_http.py -k scrape"  # fifty scrapers, and scraping while ingesting
  "test_reconcile.py -k exact"
  "test_ha.py"
  "test_front_door.py"       # the keeper's watchdog and lock, four server threads
  "test_front_door_auth.py"  # the one bcrypt thread and its queue
)
if build tsan build-tsan -Db_sanitize=thread -Db_lundef=false; then  # tests on: the stories need the simulator
  echo "== tsan: the concurrency stories under ThreadSanitizer"
  for s in "${tsan_stories[@]}"; do
    # shellcheck disable=SC2086
    check "tsan / ${s%.py*}${s#*.py}" tsan_story $s
  done
else
  skip tsan "its build failed"
fi

if [ $plain_ok -eq 1 ]; then
  echo "== valgrind: the unit tests under valgrind (leaks and invalid accesses fail)"
  meson_pass valgrind build meson test -C build --suite unit --print-errorlogs \
    --timeout-multiplier "$(multiplier valgrind)" \
    --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect'
else
  skip valgrind "the plain build failed"
fi

fuzz_target() {  # t: 30 s on a copy of its corpus; on failure, the report and the input
  local t=$1 work rc=0
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work/"
  (cd "$work" && UBSAN_OPTIONS=halt_on_error=1 "$OLDPWD/build-fuzz/tests/fuzz/fuzz_$t" \
      -max_total_time=30 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" > "$work.log" 2>&1) || rc=$?
  if [ $rc -ne 0 ]; then
    # the whole report, and the input that did it (libFuzzer writes crash-*/leak-*/timeout-* where it runs)
    cat "$work.log"
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      [ -e "$f" ] && { echo "fuzz_$t: input $f (base64):"; base64 -w 0 "$f"; echo; }
    done
  else
    tail -n 4 "$work.log"
  fi
  rm -rf "$work" "$work.log"
  return $rc
}
if CC=clang build fuzz build-fuzz -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined -Db_lundef=false; then
  echo "== fuzz: each libFuzzer target for 30 s on its corpus (clang, ASan + UBSan)"
  for t in stream status answers handover; do
    check "fuzz / $t" fuzz_target "$t"
  done
else
  skip fuzz "its build failed"
fi

if [ $plain_ok -eq 1 ]; then
  echo "== k8s: the Kubernetes manifests, validated against the real schemas"
  check k8s bash tests/k8s/test_manifests.sh build/mooncake-kv-exporter
  echo "== package: the Debian package: build, lintian; install, run, purge in a throwaway root"
  check package bash tests/package/test_deb.sh build/tools/mooncake-kv-sim
else
  skip k8s "the plain build failed"
  skip package "the plain build failed"
fi
