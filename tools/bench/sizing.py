#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The table of docs/sizing.md, "What a Prometheus pays": what the exporter
costs the Prometheus that scrapes it.

    python3 tools/bench/sizing.py [--mode text|protobuf|both] [--tenants 100,1000,10000]
                                  [--residency on,off] [--minutes 2] [--interval 10]
                                  [--exporter PATH] [--whole-scrape ROUNDS]
                                  [--prometheus-env NAME=VALUE ...]

For each number of tenants and each residency setting: the simulator
(`mooncake-kv-sim`, 20 keys a tenant, steady traffic, held at a gate until the
exporter has proven its store empty, so that every tenant is exact and its
lifetimes observed) and an exporter with its
default flags (`--residency.enabled=false` for "off"), scraped every 10 s by
Debian's Prometheus 2.42 for two minutes: in text mode as it is, in protobuf
mode with `--enable-feature=native-histograms` (Prometheus then asks for the
protobuf exposition first).  Prints one JSON line per run: series a tenant
(in the exporter's text, and as Prometheus holds them),
samples a scrape (Prometheus's `scrape_samples_scraped`), Prometheus's RSS
and head series after two minutes, its median scrape (`scrape_duration_seconds`
over the run), a tenant's median object lifetime as PromQL answers it
(`histogram_quantile(0.5, ...)` of the native histogram, or of the classic
buckets in text mode) and how many tenants have a finite one, and the
exporter's own RSS and its last whole scrape.
`--prometheus-env NAME=VALUE`: Prometheus runs with that in its
environment, for the Go runtime's knobs a stock Prometheus honours:
`GOMEMLIMIT=270MiB` (a soft memory limit: its collector works harder near
it rather than letting the heap double) or `GOGC=50` (what Prometheus has
set itself since 2.53).
`--whole-scrape ROUNDS`: instead, the exporter's whole scrape of the same
workload, timed by the exporter, in turn in each format Prometheus asks for.

Loopback only; every process is stopped and every directory removed at the
end; each run is bounded by --minutes plus a minute.  Numbers are printed,
never asserted."""
import argparse
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.path.join(ROOT, "build")
EXPORTER = os.path.join(B, "mooncake-kv-exporter")
SIM = os.path.join(B, "tools", "mooncake-kv-sim")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
KEYS_A_TENANT = 20
# the simulator's traffic: a fill that touches most keys of every tenant,
# then steady stores and removes
FILL_RATE, STEADY_RATE = 50000, 2000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def get(url, timeout=30, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
        return (gzip.decompress(body) if r.headers.get("Content-Encoding") == "gzip" else body).decode()


def wait_for(what, check, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            v = check()
            if v:
                return v
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("timed out waiting for " + what)


def exporter_figures(text):
    """Series a tenant (samples labelled with a tenant and no key group, over
    the tenants), the tenants, every sample, and the exporter's last whole
    scrape."""
    tenants, tenant_samples, samples, last = set(), 0, 0, None
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        samples += 1
        if line.startswith("mooncake_kv_exporter_last_scrape_duration_seconds "):
            last = float(line.split()[1])
        i = line.find('tenant_id="')
        if i >= 0 and "key_group=" not in line and 'backend_id="' in line:
            tenants.add(line[i:line.index('"', i + 11)])
            tenant_samples += 1
    return dict(tenants=len(tenants), samples=samples, last_scrape_s=last,
                series_a_tenant=round(tenant_samples / len(tenants), 1) if tenants else None)


def query(port, promql):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": promql}))
    r = json.loads(get(url))["data"]["result"]
    return float(r[0]["value"][1]) if r else None


def stop(p):
    if p and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def start(tenants, residency, tmp, procs):
    """The simulator and an exporter, every tenant seen and exact; returns the
    exporter's process and its /metrics."""
    pub, status, web = free_port(), free_port(), free_port()
    # an empty store, watched from empty: the simulator holds its traffic
    # at a gate until the exporter has proven the store empty, so every
    # tenant is exact from its first event and its lifetimes are observed
    gate = os.path.join(tmp, "gate")
    sim = subprocess.Popen([SIM, "--pub", "tcp://127.0.0.1:%d" % pub, "--status", "127.0.0.1:%d" % status,
                            "--tenants", str(tenants), "--keys", str(KEYS_A_TENANT), "--foreign-keys", "0",
                            "--phase", "gate:" + gate,
                            "--phase", "steady:rate=%d,seconds=%d" % (FILL_RATE, max(2, tenants * 20 // FILL_RATE)),
                            "--phase", "steady:rate=%d" % STEADY_RATE],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(sim)
    argv = [run.exporter, "--source", "name=a,zmq=tcp://127.0.0.1:%d,status=http://127.0.0.1:%d" % (pub, status),
            "--web.listen-address", "127.0.0.1:%d" % web, "--log.level", "error"]
    if residency == "off":
        argv.append("--residency.enabled=false")
    exp = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(exp)
    metrics = "http://127.0.0.1:%d/metrics" % web
    wait_for("the exporter to prove the store empty",
             lambda: 'mooncake_kv_watched_from_empty{source="a"} 1\n' in get(metrics), 60)
    open(gate, "w").close()
    # every tenant seen (the simulator's fill), before Prometheus starts
    wait_for("the exporter to see every tenant",
             lambda: exporter_figures(get(metrics))["tenants"] >= tenants, 120)
    return exp, metrics


def run(tenants, residency, mode, minutes, interval, prometheus_env=()):
    tmp = tempfile.mkdtemp(prefix="mkv-sizing-")
    procs = []
    try:
        exp, metrics = start(tenants, residency, tmp, procs)
        web, prom = int(metrics.split(":")[2].split("/")[0]), free_port()
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: %ds\n  scrape_timeout: %ds\n"
                    "scrape_configs:\n  - job_name: mooncake\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (interval, interval, web))
        pargv = [PROMETHEUS, "--config.file", os.path.join(tmp, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(tmp, "data"),
                 "--web.listen-address", "127.0.0.1:%d" % prom, "--log.level", "warn"]
        if mode == "protobuf":
            pargv.append("--enable-feature=native-histograms")
        env = dict(os.environ, **dict(e.split("=", 1) for e in prometheus_env))
        p = subprocess.Popen(pargv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        procs.append(p)
        t0 = time.time()
        wait_for("Prometheus's first scrape",
                 lambda: query(prom, 'scrape_samples_scraped{job="mooncake"}'), 60 + interval)
        time.sleep(max(0.0, minutes * 60 - (time.time() - t0)))  # two minutes after its start
        window = "%ds" % int(minutes * 60 + interval)
        row = dict(mode=mode, tenants=tenants, residency=residency, minutes=minutes, interval_s=interval)
        if prometheus_env:
            row["prometheus_env"] = list(prometheus_env)
        row["prometheus_rss_mib"] = round(rss_mib(p.pid))
        row["prometheus_head_series"] = json.loads(get("http://127.0.0.1:%d/api/v1/status/tsdb" % prom))[
            "data"]["headStats"]["numSeries"]
        row["samples_a_scrape"] = query(prom, 'scrape_samples_scraped{job="mooncake"}')
        med = query(prom, 'quantile_over_time(0.5, scrape_duration_seconds{job="mooncake"}[%s])' % window)
        row["prometheus_median_scrape_s"] = round(med, 3) if med is not None else None
        row["scrapes"] = query(prom, 'count_over_time(up{job="mooncake"}[%s])' % window)
        # series a tenant as Prometheus holds them: in protobuf mode a native
        # histogram is one series, whatever the text format would have said
        sel = '{job="mooncake",backend_id!="",tenant_id!="",key_group=""}'
        held, tenants_held = query(prom, "count(%s)" % sel), query(prom, "count(count by (backend_id, tenant_id) (%s))" % sel)
        row["prometheus_series_a_tenant"] = round(held / tenants_held, 1) if held and tenants_held else None
        # a tenant's median object lifetime over the run, as PromQL answers it:
        # a native histogram in protobuf mode, classic buckets in text mode
        life = "mooncake_kv_object_lifetime_seconds" + ("" if mode == "protobuf" else "_bucket")
        rate = 'rate(%s{job="mooncake",tenant_id=%s}[%s])' % (life, "%s", window)
        med = "histogram_quantile(0.5, %s)" % (rate if mode == "protobuf" else "sum by (le) (%s)" % rate)
        row["tenant_median_lifetime_s"] = query(prom, med % '"tenant-1"')
        row["tenants_with_finite_median_lifetime"] = query(prom, "count(%s)" % (
            "histogram_quantile(0.5, %s) < +Inf" % (rate if mode == "protobuf" else
                                                    "sum by (backend_id, tenant_id, le) (%s)" % rate)) % '~".+"')
        row["exact_tenants"] = query(prom, 'count(mooncake_kv_state_stale{job="mooncake"} == 0)')
        row["exporter_rss_mib"] = round(rss_mib(exp.pid), 1)
        ef = exporter_figures(get(metrics, headers={"Accept-Encoding": "gzip"}))
        row["series_a_tenant"] = ef["series_a_tenant"]
        row["tenants_seen"] = ef["tenants"]
        row["exporter_samples"] = ef["samples"]
        # the exporter's own figure of its last whole scrape (Prometheus's)
        row["exporter_last_scrape_ms"] = round(ef["last_scrape_s"] * 1e3, 1) if ef["last_scrape_s"] else None
        row["load_average_1_5_min"] = [round(x, 2) for x in os.getloadavg()[:2]]  # a shared machine's
        return row
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def whole_scrape(tenants, residency, rounds):
    """The exporter's whole scrape of this workload (exact tenants, lifetimes
    observed), as it times it itself (the next scrape's
    mooncake_kv_exporter_last_scrape_duration_seconds), no Prometheus
    running: what Prometheus asks for with native histograms (protobuf, gzip),
    the same without gzip (snapshot and render alone) and what it asks for
    without them (OpenMetrics, gzip), in turn, round by round."""
    import run_bench
    kinds = {"protobuf, gzip": {"Accept": run_bench.PROTOBUF_ACCEPT, "Accept-Encoding": "gzip"},
             "protobuf": {"Accept": run_bench.PROTOBUF_ACCEPT},
             "openmetrics, gzip": {"Accept": "application/openmetrics-text;version=1.0.0",
                                   "Accept-Encoding": "gzip"}}
    tmp = tempfile.mkdtemp(prefix="mkv-sizing-")
    procs = []
    try:
        exp, metrics = start(tenants, residency, tmp, procs)
        time.sleep(30)  # lives end: the lifetime histograms fill
        ms, size = {k: [] for k in kinds}, {}
        for _ in range(rounds):
            for kind, headers in kinds.items():
                req = urllib.request.Request(metrics, headers=headers)
                with urllib.request.urlopen(req, timeout=60) as r:
                    body = r.read()
                    size[kind] = len(gzip.decompress(body) if r.headers.get("Content-Encoding") == "gzip" else body)
                ms[kind].append(exporter_figures(get(metrics, headers={"Accept-Encoding": "gzip"}))["last_scrape_s"] * 1e3)
        for kind, v in ms.items():
            print(json.dumps(dict(what="whole scrape, as the exporter times it", tenants=tenants, residency=residency,
                                  kind=kind, bytes_before_gzip=size[kind], rounds=rounds,
                                  best_ms=round(min(v), 1), median_ms=round(sorted(v)[len(v) // 2], 1),
                                  load_average_1_5_min=[round(x, 2) for x in os.getloadavg()[:2]])), flush=True)
    finally:
        for proc in reversed(procs):
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="text", choices=("text", "protobuf", "both"))
    ap.add_argument("--tenants", default="100,1000,10000")
    ap.add_argument("--residency", default="on,off")
    ap.add_argument("--minutes", type=float, default=2)
    ap.add_argument("--interval", type=int, default=10)
    ap.add_argument("--whole-scrape", type=int, metavar="ROUNDS",
                    help="instead: the exporter's whole scrape of this workload, ROUNDS rounds, no Prometheus")
    ap.add_argument("--prometheus-env", metavar="NAME=VALUE", action="append", default=[],
                    help="run Prometheus with this in its environment (GOMEMLIMIT=270MiB, GOGC=50); repeatable")
    ap.add_argument("--exporter", default=EXPORTER, help="the exporter to run (default build/mooncake-kv-exporter)")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))  # the runs' cleanup still runs
    run.exporter = a.exporter
    for path in (a.exporter, SIM, PROMETHEUS):
        if not os.access(path, os.X_OK):
            sys.exit("missing %s (ninja -C build; tools/deps.sh test)" % path)
    modes = ("text", "protobuf") if a.mode == "both" else (a.mode,)
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("machine: %s, %d cores, %s; %s" % (model, os.cpu_count(), os.uname().release,
                                             subprocess.run([PROMETHEUS, "--version"], capture_output=True,
                                                            text=True).stdout.splitlines()[0]), flush=True)
    if a.whole_scrape:
        for n in (int(x) for x in a.tenants.split(",")):
            for res in a.residency.split(","):
                whole_scrape(n, res, a.whole_scrape)
        return
    for mode in modes:
        for n in (int(x) for x in a.tenants.split(",")):
            for res in a.residency.split(","):
                print(json.dumps(run(n, res, mode, a.minutes, a.interval, a.prometheus_env)), flush=True)


if __name__ == "__main__":
    main()
