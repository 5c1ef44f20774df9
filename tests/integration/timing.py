# SPDX-License-Identifier: Apache-2.0
"""Every timeout of the tests, from one place.

A timeout here is an upper bound on waiting for a condition, never a pause:
the tests wait for what they need (harness.wait_for) and give up only after
`scaled(seconds)`.  What a wait may take depends on how the binaries were
built and on how busy the machine is, so both scale every bound:

- the build, read off the exporter binary itself (its sanitizer runtime), or
  named in KVX_BUILD (plain, asan, tsan, valgrind): a sanitized daemon is
  several times slower, ThreadSanitizer most (a 20,000-tenant scrape took
  over 5 s under it), valgrind slowest;
- the load: the one-minute load average over the cores, read at each call,
  so that a suite running beside other work waits longer, not fails.

A generous bound costs nothing when the condition holds (the wait ends at
once); a tight one fails by chance.  The same factors give meson's
--timeout-multiplier (tools/test.sh: `python3 tests/integration/timing.py
multiplier BUILD`), so the outer timeout of each test grows with the inner.

Nothing here shortens a bound: the factors are 1 at least."""
import os
import sys

BUILD_FACTOR = {"plain": 1.0, "asan": 3.0, "tsan": 6.0, "valgrind": 20.0}
MAX_LOAD_FACTOR = 4.0

_build = None


def _detect(exe):
    """The sanitizer an executable was built with, from the runtime symbols it
    imports (gcc links libasan/libtsan dynamically)."""
    try:
        with open(exe, "rb") as f:
            data = f.read()
    except OSError:
        return "plain"
    if b"__tsan_init" in data:
        return "tsan"
    if b"__asan_init" in data:
        return "asan"
    return "plain"


def set_binary(exe):
    """The build of the binaries under test, from the exporter's (KVX_BUILD
    wins when set)."""
    global _build
    _build = os.environ.get("KVX_BUILD") or _detect(exe)
    if _build not in BUILD_FACTOR:
        raise SystemExit("KVX_BUILD=%s: want one of %s" % (_build, ", ".join(BUILD_FACTOR)))


def build():
    return _build or os.environ.get("KVX_BUILD") or "plain"


def load_factor():
    """1 on an idle machine; grows with the run queue beyond the cores."""
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 1.0
    cores = os.cpu_count() or 1
    return min(MAX_LOAD_FACTOR, max(1.0, load / cores))


def factor(extra=None):
    """The multiplier now: the build's (or `extra`'s, a wrapper such as
    valgrind around a plain binary) times the load's."""
    b = BUILD_FACTOR[build()]
    if extra:
        b = max(b, BUILD_FACTOR[extra])
    return b * load_factor()


def scaled(seconds, extra=None):
    """The bound for a wait that takes `seconds` at most on an idle machine
    with a plain build."""
    return seconds * factor(extra)


if __name__ == "__main__":
    # tools/test.sh: `timing.py multiplier BUILD` prints meson's --timeout-multiplier
    if len(sys.argv) == 3 and sys.argv[1] == "multiplier" and sys.argv[2] in BUILD_FACTOR:
        os.environ["KVX_BUILD"] = sys.argv[2]
        print("%g" % round(factor(), 1))
    else:
        raise SystemExit("usage: timing.py multiplier {%s}" % "|".join(BUILD_FACTOR))
