#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory after a burst (docs/performance.md): RSS per tracked object 5 s after
the last event, when 2M distinct objects arrive paced and when they arrive
flat out (the receive queue fills to --zmq.rcvhwm meanwhile).

    ninja -C build && python3 tools/bench/burst_memory.py [EXPORTER] [--objects N] [--rcvhwm N]

Loopback only, bounded in time.  Numbers are printed, never asserted."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
args = [a for a in sys.argv[1:]]


def opt(name, default):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return type(default)(v)
    return default


OBJECTS = opt("--objects", 2000000)
RCVHWM = opt("--rcvhwm", 0)
EXPORTER = args[0] if args else os.path.join(ROOT, "build", "mooncake-kv-exporter")
BLASTER = os.path.join(ROOT, "build", "tools", "mooncake-kv-blaster")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(url, name):
    for line in urllib.request.urlopen(url + "/metrics", timeout=10).read().decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run(rate):
    pub, web = free_port(), free_port()
    url = "http://127.0.0.1:%d" % web
    extra = ["--zmq.rcvhwm", str(RCVHWM)] if RCVHWM else []
    exp = subprocess.Popen([EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % pub, "--web.listen-address",
                            "127.0.0.1:%d" % web, "--limits.max-objects", str(OBJECTS * 2)] + extra,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        base = rss_kb(exp.pid)
        cmd = [BLASTER, "--pub", "tcp://127.0.0.1:%d" % pub, "--keys", str(OBJECTS), "--tenants", "16", "--load",
               "--events", str(OBJECTS)] + (["--rate", str(rate)] if rate else [])
        sent = json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout)
        # until the exporter has everything it will get, then 5 s more
        last, still = -1.0, 0
        while still < 3:
            time.sleep(0.2)
            n = metric(url, "mooncake_kv_messages_received_total")
            still = still + 1 if n == last else 0
            last = n
        time.sleep(5)
        rss = rss_kb(exp.pid)
        objects = metric(url, "mooncake_kv_tracked_objects")
        table = metric(url, "mooncake_kv_object_table_bytes")
        print(json.dumps(dict(
            what="memory after ingest", pace="%d events/s" % rate if rate else "flat out",
            rcvhwm=RCVHWM or "default", objects=int(objects), messages_sent=sent["messages"],
            messages_received=int(last), rss_growth_mib=round((rss - base) / 1024, 1),
            bytes_per_object=round((rss - base) * 1024 / objects, 1) if objects else None,
            table_bytes_per_object=round(table / objects, 1) if objects else None)), flush=True)
    finally:
        exp.terminate()
        exp.wait(30)


if __name__ == "__main__":
    run(400000)
    run(0)
