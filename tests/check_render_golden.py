#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The exposition as served, byte for byte, against golden files: every
upstream capture (tests/fixtures/upstream/*.zmqcap, .zmqcap.gz), each alone
and all together (one source each), rendered by tests/render_dump in the
text format and in OpenMetrics; and for all together and for `volume` (the
capture with the most tenants and key groups) in every mode a scrape can ask
for besides: with or without --metrics.exclude, with or without
--metrics.tenant-summary.  The filters are decided per family from its row,
whatever the capture, so a capture alone under a filter repeats what these
two show (FULL); and all captures together with --metrics.all-series.

    check_render_golden.py RENDER_DUMP FIXTURES_DIR           # compare
    check_render_golden.py RENDER_DUMP FIXTURES_DIR --write   # (re)write the goldens

The goldens (FIXTURES_DIR/render/CAPTURE.MODE.txt.gz) were written by the
renderer before it decided the format and the families per family as it
writes (it used to parse its own text again): a change meant to leave the
output alone must leave them alone.  A change that means to change it (a new
family, a new help text) rewrites them with --write, and the diff of their
gunzipped text is the review."""
import difflib
import gzip
import os
import subprocess
import sys

# an exclusion that takes a counter of ours, mirrored counters, a gauge, a
# histogram, a key group's family and the process family
EXCLUDE = ("process_.*|mooncake_kv_master_.*_total|mooncake_kv_event_lag_seconds|"
           "mooncake_kv_object_table_bytes|mooncake_kv_objects_by_key_group")

MODES = {
    "text": [],
    "text-exclude": ["--exclude", EXCLUDE],
    "text-summary": ["--tenant-summary"],
    "text-exclude-summary": ["--exclude", EXCLUDE, "--tenant-summary"],
    "om": ["--openmetrics"],
    "om-exclude": ["--openmetrics", "--exclude", EXCLUDE],
    "om-summary": ["--openmetrics", "--tenant-summary"],
    "om-exclude-summary": ["--openmetrics", "--exclude", EXCLUDE, "--tenant-summary"],
}
# --metrics.all-series, of every capture together: the series served before
# only news was (all.text-all is all.text as it was then, byte for byte)
ALL_SERIES_MODES = {
    "text-all": ["--all-series"],
    "om-all": ["--openmetrics", "--all-series"],
}
# every mode for these; the two formats alone for the other captures
FULL = ("all", "volume")
PLAIN = ("text", "om")


def modes_of(name):
    return MODES if name in FULL else {m: MODES[m] for m in PLAIN}


def captures(fixtures):
    up = os.path.join(fixtures, "upstream")
    found = sorted(f for f in os.listdir(up) if f.endswith(".zmqcap") or f.endswith(".zmqcap.gz"))
    runs = [(f.split(".zmqcap")[0], [os.path.join(up, f)]) for f in found]
    runs.append(("all", [os.path.join(up, f) for f in found]))
    return runs


def main(argv):
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--write"):
        sys.exit("usage: check_render_golden.py RENDER_DUMP FIXTURES_DIR [--write]")
    dump, fixtures, write = argv[1], argv[2], len(argv) == 4
    golden_dir = os.path.join(fixtures, "render")
    os.makedirs(golden_dir, exist_ok=True)
    expected, failed = set(), 0
    for name, files in captures(fixtures):
        for mode, flags in list(modes_of(name).items()) + (list(ALL_SERIES_MODES.items()) if name == "all" else []):
            path = os.path.join(golden_dir, "%s.%s.txt.gz" % (name, mode))
            expected.add(os.path.basename(path))
            got = subprocess.run([dump] + flags + files, capture_output=True, check=True, timeout=120).stdout
            if write:
                with open(path, "wb") as f:
                    f.write(gzip.compress(got, mtime=0))
                continue
            if not os.path.exists(path):
                print("%s: no golden file (write them with --write)" % path)
                failed += 1
                continue
            with gzip.open(path, "rb") as f:
                want = f.read()
            if got != want:
                failed += 1
                print("%s %s: differs from %s" % (name, mode, path))
                diff = difflib.unified_diff(want.decode("utf-8", "replace").splitlines(),
                                            got.decode("utf-8", "replace").splitlines(),
                                            "golden", "rendered", lineterm="", n=1)
                for i, line in enumerate(diff):
                    if i == 40:
                        print("  ...")
                        break
                    print("  " + line)
    stray = sorted(set(os.listdir(golden_dir)) - expected)
    for f in stray:
        print("%s: a golden file no capture and mode renders" % os.path.join(golden_dir, f))
    if write:
        print("wrote %d golden files in %s" % (len(expected), golden_dir))
        return 1 if stray else 0
    print("%d renders (%d captures and all together in %d formats; %s in all %d modes), %d differ"
          % (len(expected), len(captures(fixtures)) - 1, len(PLAIN), " and ".join(FULL), len(MODES), failed))
    return 1 if failed or stray else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
