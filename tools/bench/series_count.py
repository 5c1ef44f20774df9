#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The series table of docs/sizing.md: counts a live exporter's series per
unit of what it watches (tenant, tenant and key group, tenant with a quota,
master, source, the exporter itself), with residency's families apart.

    DEMO_SECONDS=90 tools/demo.sh &   # or any running exporter
    python3 tools/bench/series_count.py [URL|FILE]   (default http://127.0.0.1:19557/metrics)

Prints one JSON line per unit: the fewest and most series any one of them
has, and how many there are.  Numbers are printed, never asserted."""
import collections
import json
import re
import sys
import urllib.request

URL = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:19557/metrics"
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# residency's families (docs/guide.md, "Residency"): a tenant's lives and ages
RESIDENCY = re.compile(r"mooncake_kv_(key_group_)?object_(lifetime|age)")


def samples(text):
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{")
        labels = dict(LABEL.findall(rest.rpartition("}")[0])) if rest else {}
        yield name.split(" ")[0], labels


def unit(name, l):
    """The unit a sample describes, and the one it is of."""
    if "source" not in l:
        return "exporter", ()
    s = l["source"]
    if "key_group" in l:
        return "tenant and key group", (s, l["backend_id"], l["tenant_id"], l["key_group"])
    if "backend_id" in l:
        return "tenant", (s, l["backend_id"], l["tenant_id"])
    if "tenant_id" in l:
        return "tenant with a quota", (s, l["tenant_id"])
    if "member" in l:
        return "master (member) of a source", (s, l["member"])
    return "source", (s,)


def main():
    if "://" in URL:
        text = urllib.request.urlopen(URL, timeout=30).read().decode()
    else:
        with open(URL) as f:
            text = f.read()
    counts = collections.defaultdict(collections.Counter)  # (unit, residency) -> who -> series
    for name, l in samples(text):
        u, who = unit(name, l)
        counts[(u, bool(RESIDENCY.match(name)))][who] += 1
    for (u, res), c in sorted(counts.items()):
        print(json.dumps({"per": u, "residency": res, "min": min(c.values()), "max": max(c.values()),
                          "how_many": len(c), "series": sum(c.values())}))
    print(json.dumps({"per": "all", "series": sum(sum(c.values()) for c in counts.values()),
                      "bytes": len(text.encode())}))


if __name__ == "__main__":
    main()
