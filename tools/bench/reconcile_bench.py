#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reconciliation benchmark of docs/performance.md: how long it takes and how
much memory it needs to rebuild tenant default from the simulated master's
listing, with and without events flowing meanwhile.

    ninja -C build && python3 tools/bench/reconcile_bench.py [KEYS...]   (default 1000000 10000000)

Loopback only; every run bounded in time.  Numbers are printed, never asserted."""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPORTER = os.path.join(ROOT, "build", "mooncake-kv-exporter")
SIM = os.path.join(ROOT, "build", "tools", "mooncake-kv-sim")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def status_kb(pid, field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def run(keys, rate):
    pub, adm, web = free_port(), free_port(), free_port()
    # a master that holds ~keys objects in tenant default before the exporter
    # starts, then (rate > 0) stores and removes at `rate` events/s
    phases = ["sleep:seconds=1"] + (["steady:rate=%d,seconds=600" % rate] if rate else ["wait"])
    sim = subprocess.Popen([SIM, "--pub", "tcp://127.0.0.1:%d" % pub, "--status", "127.0.0.1:%d" % adm,
                            "--tenants", "1", "--keys", str(keys), "--preload", str(keys * 5)]
                           + sum((["--phase", p] for p in phases), []),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % web
    # wait for the preload: the master answers once it is done
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/metrics" % adm, timeout=1).read()
            break
        except OSError:
            time.sleep(0.2)
    exp = subprocess.Popen([EXPORTER, "--web.listen-address", "127.0.0.1:%d" % web,
                            "--source", "name=b,zmq=tcp://127.0.0.1:%d,status=http://127.0.0.1:%d,reconcile=true,"
                            "backend=mooncake-master-1" % (pub, adm),
                            "--master.reconcile-interval", "1h", "--limits.max-objects", str(keys * 3),
                            # room for the events of a long listing at `rate`
                            "--master.reconcile-max-replay", str(max(1000000, keys // 2))],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        rss_before = status_kb(exp.pid, "VmRSS")
        deadline = time.time() + 900
        m = {}
        lag_max = 0.0
        while time.time() < deadline:
            time.sleep(0.5)
            try:
                m = metrics(url)
            except OSError:
                continue
            if m.get('mooncake_kv_reconciliations_total{source="b",result="ok"}', 0) >= 1:
                break
        rss_after = status_kb(exp.pid, "VmRSS")
        peak = status_kb(exp.pid, "VmHWM")
        objects = m.get('mooncake_kv_objects{source="b",backend_id="mooncake-master-1",tenant_id="default"}', 0)
        listed = m.get('mooncake_kv_reconcile_listed_keys{source="b"}', 0)
        dur = m.get('mooncake_kv_reconcile_duration_seconds{source="b"}', 0)
        res = dict(what="reconcile", keys_listed=int(listed), objects_after=int(objects),
                   seconds=round(dur, 2), keys_per_s=int(listed / dur) if dur else 0,
                   rss_before_mib=round(rss_before / 1024, 1), rss_after_mib=round(rss_after / 1024, 1),
                   peak_rss_mib=round(peak / 1024, 1),
                   peak_extra_bytes_per_key=round((peak - rss_before) * 1024 / listed, 1) if listed else None,
                   events_per_s_during=rate)
        if rate:
            res["messages_received"] = int(m.get('mooncake_kv_messages_received_total{source="b"}', 0))
            res["missing_during"] = int(m.get('mooncake_kv_sequence_missing_total{source="b"}', 0))
            res["superseded"] = int(m.get('mooncake_kv_reconciliations_total{source="b",result="superseded"}', 0))
            count = m.get('mooncake_kv_event_lag_seconds_count{source="b"}', 0)
            res["event_lag_mean_ms"] = round(m.get('mooncake_kv_event_lag_seconds_sum{source="b"}', 0) / count * 1000,
                                              2) if count else None
        print(json.dumps(res), flush=True)
    finally:
        exp.terminate()
        sim.terminate()
        exp.wait(30)
        sim.wait(30)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [1000000, 10000000]
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(json.dumps(dict(what="machine", cpu=model, cores=os.cpu_count())))
    for keys in sizes:
        run(keys, 0)
        run(keys, 20000)


if __name__ == "__main__":
    main()
