#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Soak: does the exporter's memory stay flat over a long run?  (Not part of
the test suite: it takes half an hour.)

    ninja -C build && python3 tools/bench/soak.py [--minutes 30] [--rate 20000]

The simulator plays a master at a steady rate with churn (stores, removes,
upserts, clears, 200 tenants appearing as traffic reaches them, LMCache-shaped
keys of four models) and a burst that overflows its queue every few minutes;
the exporter counts key groups and reconciles tenant default with the master
(every 30 s at the most); /metrics is scraped every second.  Every 10 s the exporter's RSS, object table bytes and open file
descriptors are sampled and printed.  At the end: the least-squares slope of
RSS minus table bytes after the warm-up, and the verdict, "flat" or
"growing", against the threshold printed beside it.  Loopback only; bounded
by --minutes."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPORTER = os.path.join(ROOT, "build", "mooncake-kv-exporter")
SIM = os.path.join(ROOT, "build", "tools", "mooncake-kv-sim")
THRESHOLD_KIB_PER_MIN = 100  # ~3 MiB over half an hour


def opt(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


MINUTES = opt("--minutes", 30.0)
RATE = opt("--rate", 20000)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    out = {}
    for line in urllib.request.urlopen(url + "/metrics", timeout=10).read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def slope(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0


def main():
    pub, adm, web = free_port(), free_port(), free_port()
    url = "http://127.0.0.1:%d" % web
    # a burst every 3 minutes; the last phase is cut short by the bound
    phases = []
    for _ in range(int(MINUTES / 3) + 1):
        phases += ["steady:rate=%d,seconds=170" % RATE, "burst:events=100000"]
    sim = subprocess.Popen([SIM, "--pub", "tcp://127.0.0.1:%d" % pub, "--status", "127.0.0.1:%d" % adm,
                            "--spec-extras", "on", "--tenants", "200", "--keys", "500", "--queue", "20000",
                            "--key-style", "lmcache", "--models", "4"]
                           + sum((["--phase", p] for p in phases), []),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    exp = subprocess.Popen([EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % pub, "--master.url",
                            "http://127.0.0.1:%d" % adm, "--web.listen-address", "127.0.0.1:%d" % web,
                            "--key.group-regex", "^(?<fmt>[^@]+)@(?<model>[^@]+)@", "--master.reconcile",
                            "--master.reconcile-interval", "30s"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def scraper():
        while not stop.wait(1.0):
            try:
                urllib.request.urlopen(url + "/metrics", timeout=5).read()
            except OSError:
                pass
    threading.Thread(target=scraper, daemon=True).start()
    t0, samples = time.time(), []
    try:
        print(json.dumps(dict(what="soak", minutes=MINUTES, rate=RATE, threshold_kib_per_min=THRESHOLD_KIB_PER_MIN)))
        while time.time() - t0 < MINUTES * 60:
            time.sleep(10)
            m = scrape(url)
            rss = m.get("process_resident_memory_bytes", 0)
            table = sum(v for k, v in m.items() if k.startswith("mooncake_kv_object_table_bytes"))
            s = dict(t=round(time.time() - t0), rss_mib=round(rss / 2**20, 2), table_mib=round(table / 2**20, 2),
                     fds=int(m.get("process_open_fds", 0)), objects=int(m.get("mooncake_kv_tracked_objects", 0)),
                     tenants=int(m.get("mooncake_kv_tracked_tenants", 0)),
                     groups=int(m.get("mooncake_kv_tracked_key_groups", 0)),
                     reconciliations=int(sum(v for k, v in m.items()
                                             if k.startswith("mooncake_kv_reconciliations_total"))),
                     missing=int(sum(v for k, v in m.items() if k.startswith("mooncake_kv_sequence_missing_total"))))
            samples.append(s)
            print(json.dumps(s), flush=True)
    finally:
        stop.set()
        exp.terminate()
        sim.terminate()
        exp.wait(30)
        sim.wait(30)
    warm = [s for s in samples if s["t"] >= min(300, MINUTES * 60 * 0.2)]
    if len(warm) < 3:
        print(json.dumps(dict(what="verdict", verdict="too short")))
        return
    xs = [s["t"] / 60 for s in warm]
    k = slope(xs, [(s["rss_mib"] - s["table_mib"]) * 1024 for s in warm])
    kt = slope(xs, [s["table_mib"] * 1024 for s in warm])
    kf = slope(xs, [s["fds"] for s in warm])
    print(json.dumps(dict(what="verdict", rss_minus_table_kib_per_min=round(k, 1), table_kib_per_min=round(kt, 1),
                          fds_per_min=round(kf, 3), threshold_kib_per_min=THRESHOLD_KIB_PER_MIN,
                          verdict="flat" if k < THRESHOLD_KIB_PER_MIN and kf < 0.1 else "growing")))


if __name__ == "__main__":
    main()
