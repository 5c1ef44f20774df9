# SPDX-License-Identifier: Apache-2.0
"""Live test: two real Prometheus scrape the same exporter every second, one
with --enable-feature=native-histograms (it asks for the protobuf exposition
and gets native histograms), one without (it asks for OpenMetrics and gets
classic ones), while the simulator plays a master whose tenants are made
exact by a cleared, so that their objects' lifetimes are seen whole.  Both
start before the traffic; once the simulator wrote its truth and both have
scraped the exporter's final figures, checks:
  - the native Prometheus stores each histogram as a native histogram (a query
    returns `histogram` values) and nothing as _bucket (2.42 ingests only the
    native buckets of a histogram that has them); the classic one the reverse;
  - histogram_quantile(0.5) of a tenant's native lifetime histogram is the
    median of the truth's lifetimes within a native bucket's width;
  - every recording rule and dashboard panel that reads a histogram returns
    series in both; the lifetime quantile rules give the truth's quantiles
    within the bucket resolution of each mode, the unobserved share the
    truth's, in both.

usage: test_native_histograms.py EXPORTER SIM PROMETHEUS REPO_ROOT [NAME]"""
import gzip
import json
import math
import os
import re
import sys
import urllib.parse

from harness import Exporter, Sim, free_port, http_get, run_tests, settle, wait_for
from timing import scaled

EXPORTER, SIM, PROMETHEUS = sys.argv[1:4]
ROOT = os.path.abspath(sys.argv[4])
RULES = os.path.join(ROOT, "alerts", "mooncake-kv.rules.yml")
LIFE_BOUNDS = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]  # docs/guide.md
# what Prometheus 2.42 sends with native histograms on (its scrapeAcceptHeaderWithProtobuf)
PROTO_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
                "application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,"
                "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
HISTOGRAMS = ("mooncake_kv_event_lag_seconds", "mooncake_kv_batch_events", "mooncake_kv_object_lifetime_seconds",
              "mooncake_kv_key_group_object_lifetime_seconds", "mooncake_kv_scrape_lock_hold_seconds")


class Prom:
    def __init__(self, procs, name, exporter_port, native):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        d = os.path.join(procs.dir, name)
        os.makedirs(d)
        cfg = os.path.join(d, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: mooncake-kv\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (RULES, exporter_port))
        self.proc = procs.start("prometheus-" + name, [
            PROMETHEUS, "--config.file", cfg, "--storage.tsdb.path", os.path.join(d, "tsdb"),
            "--web.listen-address", "127.0.0.1:%d" % self.port, "--log.level", "warn"] +
            (["--enable-feature=native-histograms"] if native else []))
        wait_for(self.ready, scaled(30), "prometheus %s is ready" % name)

    def ready(self):
        try:
            return http_get(self.url + "/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def query(self, expr):
        status, _, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=10)
        r = json.loads(body)
        assert status == 200 and r["status"] == "success", (expr, r)
        return r["data"]["result"]

    def scalar(self, expr):
        r = self.query(expr)
        assert len(r) == 1, (expr, r)
        return float(r[0]["value"][1])


def histogram_reads():
    """Every rule and panel expression that reads a histogram: (where, expr)."""
    text = open(RULES).read()
    for m in re.finditer(r"- (record|alert): (\S+)\n\s+expr: (>-\n((?:\s{10,}.*\n)+)|(.*)\n)", text):
        expr = " ".join(l.strip() for l in m.group(4).splitlines()) if m.group(4) else m.group(5)
        if any(h in expr for h in HISTOGRAMS):
            yield "rule " + m.group(2), expr
    subst = {"$__rate_interval": "1m"}
    for f in sorted(os.listdir(os.path.join(ROOT, "dashboards"))):
        if f.endswith(".json"):
            for p in json.load(open(os.path.join(ROOT, "dashboards", f)))["panels"]:
                for t in p.get("targets", []):
                    e = re.sub(r'(\w+)=~"\$\w+"', r'\1=~".*"', t["expr"])
                    for k, v in subst.items():
                        e = e.replace(k, v)
                    if any(h in e for h in HISTOGRAMS):
                        yield "panel %s / %s" % (f, p["title"]), e


def rank_range(values, q):
    """The values around the q quantile's rank: what an estimate from buckets
    may land between, before the bucket's width."""
    v = sorted(values)
    r = max(1, math.ceil(q * len(v)))
    return v[max(0, r - 2)], v[min(len(v) - 1, r)]


def classic_bucket(x):
    lo = 0
    for b in LIFE_BOUNDS:
        if x <= b:
            return lo, b
        lo = b
    return lo, math.inf


def test_native_and_classic_agree(procs):
    # the traffic waits for both Prometheus to have scraped the exporter once
    gate = os.path.join(procs.dir, "go")
    sim = Sim(procs, SIM, ["steady:rate=50,until=" + gate, "clear:all", "steady:rate=1500,seconds=6", "truth",
                           "wait"],
              seed=411, extra=["--dialect", "media", "--tenants", "3", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("n")])
    native = Prom(procs, "native", exp.port, True)
    classic = Prom(procs, "classic", exp.port, False)
    sim.start()
    for p in (native, classic):
        wait_for(lambda p=p: p.query('up{job="mooncake-kv"} == 1'), scaled(30), "prometheus scraped the exporter")
    open(gate, "w").close()
    # what the native one asked for and got: the protobuf exposition, gzip as asked
    status, headers, body = http_get(exp.url + "/metrics", {"Accept": PROTO_ACCEPT, "Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("Content-Encoding") == "gzip", (status, headers)
    assert headers.get("Content-Type") == ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                                           "encoding=delimited"), headers
    d, n, shift, i = gzip.decompress(body), 0, 0, 0
    while True:  # the first MetricFamily's length, a varint
        n |= (d[i] & 0x7f) << shift
        shift, i = shift + 7, i + 1
        if not d[i - 1] & 0x80:
            break
    assert 0 < n <= len(d) - i and d[i + 2:i + 2 + len(b"mooncake_kv_")] == b"mooncake_kv_", d[:40]
    status, headers, body = http_get(exp.url + "/metrics", {"Accept": "text/plain;version=0.0.4"})
    assert headers.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8", headers
    truth = sim.truth_written()
    m = settle(exp, truth, "n")
    # both have the final figures: the lives seen whole of every tenant, as counted
    seen = sum(len(t["lifetimes_ms"]) for t in truth["tenants"])
    assert seen > 300, seen
    wait_for(lambda: native.query("sum(histogram_count(mooncake_kv_object_lifetime_seconds)) == %d" % seen) and
             classic.query("sum(mooncake_kv_object_lifetime_seconds_count) == %d" % seen),
             scaled(30), "both Prometheus scraped the final lifetimes")

    # native: histograms as native series only; classic: the reverse
    for h in HISTOGRAMS:
        if h == "mooncake_kv_key_group_object_lifetime_seconds":
            continue  # no key groups here
        r = native.query(h)
        assert r and all("histogram" in s and "value" not in s for s in r), (h, r[:1])
        assert not native.query(h + "_bucket") and not native.query(h + "_count"), h
        assert classic.query(h + "_bucket") and not classic.query(h), h
    print("2.42 with native histograms stores them native only; without, classic only")

    for t in truth["tenants"]:
        lives = [x / 1000 for x in t["lifetimes_ms"]]
        if len(lives) < 20:
            continue
        sel = 'source="n",tenant_id="%s"' % t["tenant_id"]
        lo, hi = rank_range(lives, 0.5)
        # the native buckets' width: base = 2^(2^-schema), from the buckets Prometheus holds
        h = native.query("mooncake_kv_object_lifetime_seconds{%s}" % sel)[0]["histogram"][1]
        base = max(float(b[2]) / float(b[1]) for b in h["buckets"] if float(b[1]) > 0)
        got = native.scalar("histogram_quantile(0.5, mooncake_kv_object_lifetime_seconds{%s})" % sel)
        assert lo / base <= got <= hi * base, (t["tenant_id"], got, lo, hi, base)
        # the rules, in both modes: the quantiles of the lives within each mode's buckets
        for q, rec in ((0.5, "p50_1h"), (0.9, "p90_1h")):
            expr = [e for w, e in histogram_reads() if w == "rule source_tenant:mooncake_kv_object_lifetime_seconds:" + rec][0]
            lo, hi = rank_range(lives, q)
            n = native.query("(%s) and on (tenant_id) mooncake_kv_objects{%s}" % (expr, sel))
            c = classic.query("(%s) and on (tenant_id) mooncake_kv_objects{%s}" % (expr, sel))
            assert len(n) == 1 and len(c) == 1, (rec, n, c)
            n, c = float(n[0]["value"][1]), float(c[0]["value"][1])
            assert lo / base <= n <= hi * base, ("native", rec, t["tenant_id"], n, lo, hi)
            assert classic_bucket(lo)[0] <= c <= classic_bucket(hi)[1], ("classic", rec, t["tenant_id"], c, lo, hi)
            print("%s %s: truth %.3f..%.3f s, native %.3f, classic %.3f" % (t["tenant_id"], rec, lo, hi, n, c))
        # the share of lives ended unseen: the same in both (each Prometheus's window
        # starts at its own first scrape, the traffic before the gate in it or not)
        expr = [e for w, e in histogram_reads()
                if w == "rule source_tenant:mooncake_kv_object_lifetime_unobserved:ratio_rate1h"][0]
        share = []
        for p in (native, classic):
            r = p.query("(%s) and on (tenant_id) mooncake_kv_objects{%s}" % (expr, sel))
            assert len(r) == 1, r
            share.append(float(r[0]["value"][1]))
        assert abs(share[0] - share[1]) <= 0.1 * max(share + [0.01]), (t["tenant_id"], share)
        print("%s unobserved share: native %.4f, classic %.4f, truth (the whole run) %.4f" % (
            t["tenant_id"], share[0], share[1], t["lives_unobserved"] / (t["lives_unobserved"] + len(lives))))

    # every rule and panel that reads a histogram has series in both modes (a
    # panel may read what a rule recorded: evaluated since the final figures)
    for p in (native, classic):
        wait_for(lambda p=p: p.query("source_tenant:mooncake_kv_object_lifetime_seconds:p50_1h"), scaled(30),
                 "the lifetime rules recorded")
        _, _, body = http_get(p.url + "/api/v1/rules", timeout=10)
        bad = [r["name"] for g in json.loads(body)["data"]["groups"] for r in g["rules"] if r.get("health") != "ok"]
        assert not bad, bad
    empty = []
    for where, expr in histogram_reads():
        if "key_group" in expr:
            continue  # no key groups here
        for name, p in (("native", native), ("classic", classic)):
            if not p.query(expr):
                empty.append("%s (%s)" % (where, name))
    assert not empty, empty


if __name__ == "__main__":
    sys.exit(run_tests(dict(globals()), sys.argv[5] if len(sys.argv) > 5 else None))
