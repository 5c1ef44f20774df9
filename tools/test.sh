#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds warning-free, runs
# every test, then the unit tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer and under valgrind's leak checker.
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

echo "== build and test (warnings are errors)"
configure build
meson test -C build --print-errorlogs

[ $quick -eq 1 ] && exit 0

echo "== all tests under ASan + UBSan (the daemon and simulator too)"
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
KVX_NO_VALGRIND=1 \
  meson test -C build-asan --print-errorlogs --timeout-multiplier 3

echo "== unit tests under valgrind (leaks and invalid accesses fail)"
meson test -C build --suite unit --print-errorlogs --timeout-multiplier 20 \
  --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect'
