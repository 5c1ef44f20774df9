#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The exporter's whole scrape of 10,000 tenants, two builds side by side:

    python3 tools/bench/ab_scrape.py BEFORE_EXPORTER AFTER_EXPORTER [ROUNDS [TENANTS]]

Both exporters run at once, loaded alike (run_bench.py's whole_scrape: 20 objects
a tenant, 10,000 tenants unless TENANTS says), and are scraped in turn, round by round, the
order swapped every round, so that a shared machine's slow phases fall on
both.  Each scrape is timed by the exporter itself (the next scrape's
mooncake_kv_exporter_last_scrape_duration_seconds: snapshot, render and
compression, not the transfer), plain, in OpenMetrics, gzipped, in
OpenMetrics gzipped (what Prometheus asks for) and in the protobuf exposition
gzipped (what Prometheus asks for with native histograms).  Prints, per kind, each
build's median and best, and the median over the rounds of after / before.
Numbers are printed, never asserted."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402

TENANTS = 10000
OPENMETRICS = "application/openmetrics-text;version=1.0.0"
KINDS = {
    "plain": {},
    "openmetrics": {"Accept": OPENMETRICS},
    "gzip": {"Accept-Encoding": "gzip"},
    "openmetrics, gzip": {"Accept-Encoding": "gzip", "Accept": OPENMETRICS},
    "protobuf, gzip": {"Accept-Encoding": "gzip", "Accept": run_bench.PROTOBUF_ACCEPT},
}


def last_ms(exp):
    for line in exp.scrape(60, {"Accept-Encoding": "gzip"}).splitlines():
        if line.startswith("mooncake_kv_exporter_last_scrape_duration_seconds "):
            return float(line.split()[1]) * 1e3
    raise SystemExit("no mooncake_kv_exporter_last_scrape_duration_seconds")


def main(argv):
    if len(argv) not in (3, 4, 5):
        sys.exit(__doc__)
    builds = {"before": argv[1], "after": argv[2]}
    rounds = int(argv[3]) if len(argv) >= 4 else 20
    tenants = int(argv[4]) if len(argv) == 5 else TENANTS
    print("machine: " + run_bench.machine(), flush=True)
    exps = {}
    for name, path in builds.items():
        run_bench.EXPORTER = path
        exps[name] = run_bench.Exporter(["--limits.max-tenants", str(2 * tenants)])
        run_bench.blast(exps[name], 0, load=True, keys=20 * tenants, extra=["--tenants", str(tenants)])
    for exp in exps.values():
        exp.scrape(60)  # the first scrape sizes the next ones' buffers
    ms = {(n, k): [] for n in exps for k in KINDS}
    for r in range(rounds):
        order = list(exps.items()) if r % 2 == 0 else list(reversed(list(exps.items())))
        for kind, headers in KINDS.items():
            for name, exp in order:
                exp.scrape(60, headers, raw=True)
                ms[(name, kind)].append(last_ms(exp))
    for kind in KINDS:
        before, after = ms[("before", kind)], ms[("after", kind)]
        print(json.dumps(dict(what="whole scrape, as the exporter times it", tenants=tenants, kind=kind,
                              rounds=rounds, before_median_ms=round(statistics.median(before), 1),
                              before_best_ms=round(min(before), 1), after_median_ms=round(statistics.median(after), 1),
                              after_best_ms=round(min(after), 1),
                              after_over_before=round(statistics.median(a / b for a, b in zip(after, before)), 2))),
              flush=True)
    for exp in exps.values():
        exp.stop()


if __name__ == "__main__":
    main(sys.argv)
