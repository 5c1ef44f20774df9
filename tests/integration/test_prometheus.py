"""Live test: a real Prometheus scrapes the exporter every second, with the
rules of alerts/ loaded, while the simulator plays drops (a gap), a restart,
malformed messages and finally a master outage.  Then, through Prometheus's
HTTP API, every dashboard query and every rule expression must parse and
(but for quiet alerts) return series, and exactly the alerts the story
calls for must be pending or firing.

usage: test_prometheus.py EXPORTER SIM PROMETHEUS REPO_ROOT
Prints one line per check and closes with 'N passed, N failed'."""
import json
import os
import re
import sys
import time
import urllib.parse

from harness import Exporter, Procs, Sim, free_port, http_get, wait_for

EXPORTER, SIM, PROMETHEUS = sys.argv[1:4]
ROOT = os.path.abspath(sys.argv[4])
RULES = os.path.join(ROOT, "alerts", "mooncake-kv.rules.yml")

MUST_FIRE = {"MooncakeKVPublisherDroppingEvents", "MooncakeKVSequenceGaps", "MooncakeKVPublisherReset",
             "MooncakeKVDecodeErrors", "MooncakeKVTenantsStale", "MooncakeKVMasterUnreachable",
             "MooncakeKVTenantOverQuota"}
MUST_NOT = {"MooncakeKVStreamSilent", "MooncakeKVTransportLoss", "MooncakeKVPublisherDisabled",
            "MooncakeKVKeylessEvents", "MooncakeKVLimitOverflow", "MooncakeKVSubscriberDisconnected",
            "MooncakeKVExporterBehind", "MooncakeKVReconciliationFailing", "MooncakeKVKeyGroupsOverflow",
            "MooncakeKVMasterSplitBrain", "MooncakeKVMasterNoLeader", "MooncakeKVMasterFailover"}

STORY = ["sleep:seconds=2", "ops:count=2000", "sleep:seconds=1.5", "burst:events=3000", "sleep:seconds=1.5",
         "ops:count=1000", "sleep:seconds=1.5", "restart", "sleep:seconds=1.5", "ops:count=1000",
         "garbage:count=10", "sleep:seconds=2", "outage:seconds=120"]


class Prom:
    def __init__(self, procs, exporter_port):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(procs.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: mooncake-kv\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (RULES, exporter_port))
        self.proc = procs.start("prometheus", [
            PROMETHEUS, "--config.file", cfg, "--storage.tsdb.path", os.path.join(procs.dir, "tsdb"),
            "--web.listen-address", "127.0.0.1:%d" % self.port, "--log.level", "warn"])
        wait_for(lambda: self.ready(), 30, "prometheus is ready")

    def ready(self):
        try:
            return http_get(self.url + "/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def api(self, path, **params):
        status, _, body = http_get(self.url + path + "?" + urllib.parse.urlencode(params), timeout=10)
        return status, json.loads(body)

    def query(self, expr):
        return self.api("/api/v1/query", query=expr)

    def active_alerts(self):
        _, r = self.api("/api/v1/alerts")
        return {a["labels"]["alertname"]: a["state"] for a in r["data"]["alerts"]}


def dashboard_queries():
    subst = {"$source": "m0", "$tenant_id": ".*", "$instance": ".*", "$key_group": ".*", "$__rate_interval": "1m"}
    for f in sorted(os.listdir(os.path.join(ROOT, "dashboards"))):
        if not f.endswith(".json"):
            continue
        d = json.load(open(os.path.join(ROOT, "dashboards", f)))
        exprs = [("%s / %s" % (f, p["title"]), t["expr"]) for p in d["panels"] for t in p["targets"]]
        for v in d["templating"]["list"]:
            if v["type"] == "query":
                m = re.match(r"label_values\((.*),\s*(\w+)\)$", v["definition"])
                exprs.append(("%s / variable %s" % (f, v["name"]), "group by (%s) (%s)" % (m.group(2), m.group(1))))
        for where, e in exprs:
            for k, val in subst.items():
                e = e.replace(k, val)
            yield where, e


def rule_exprs():
    text = open(RULES).read()
    for m in re.finditer(r"- (record|alert): (\S+)\n\s+expr: (>-\n((?:\s{10,}.*\n)+)|(.*)\n)", text):
        kind, name = m.group(1), m.group(2)
        expr = " ".join(l.strip() for l in m.group(4).splitlines()) if m.group(4) else m.group(5)
        yield kind, name, expr


def main():
    procs = Procs()
    results = []

    def check(name, fn):
        try:
            fn()
            results.append(True)
            print("ok   " + name, flush=True)
        except Exception as e:
            results.append(False)
            print("FAIL %s: %s" % (name, e), flush=True)

    try:
        # tenant quotas small enough that some tenants go over them
        sim = Sim(procs, SIM, STORY, seed=77, extra=["--queue", "1000", "--tenants", "4", "--quotas", "on",
                                                     "--quota-bytes", "300000"], truth=False)
        # reconciling, as an operator would: every dashboard panel then has series
        exp = Exporter(procs, EXPORTER, [sim.source("m0") + ",reconcile=true"],
                       extra=["--master.timeout", "150ms", "--master.reconcile-interval", "1s",
                              "--key.group-regex", "^(?<model>[^/]+)/"])
        prom = Prom(procs, exp.port)
        # counters must have samples from before the story for increase() to see it
        wait_for(lambda: prom.query("mooncake_kv_messages_received_total")[1]["data"]["result"], 20,
                 "prometheus scraped the exporter")
        time.sleep(2)
        sim.start()
        t0 = time.time()
        # the story's last act: after the restart and the garbage, the master goes away
        wait_for(lambda: prom.query("mooncake_kv_decode_errors_total > 0 and on (source) "
                                    "(mooncake_kv_publisher_resets_total >= 1) and on (source) "
                                    "(mooncake_kv_master_up == 0)")[1]["data"]["result"], 90,
                 "the story reached the master outage")
        time.sleep(3)  # a few more evaluations
        print("(story and scrapes took %.0f s)" % (time.time() - t0))

        for where, expr in dashboard_queries():
            def q(expr=expr):
                status, r = prom.query(expr)
                assert status == 200 and r["status"] == "success", r
                assert r["data"]["result"], "no series for " + expr
            check("dashboard " + where, q)

        active = prom.active_alerts()
        for kind, name, expr in rule_exprs():
            def q(kind=kind, name=name, expr=expr):
                status, r = prom.query(expr)
                assert status == 200 and r["status"] == "success", r
                if kind == "record":
                    assert r["data"]["result"], "no series for " + expr
                    status, r = prom.query(name)  # and Prometheus recorded it
                    assert r["data"]["result"], "nothing recorded as " + name
                elif name in MUST_FIRE:
                    assert r["data"]["result"], "the story should make this true: " + expr
            check("%s %s" % (kind, name), q)

        for name in sorted(MUST_FIRE):
            check("alert %s is pending or firing" % name, lambda name=name: (
                None if active.get(name) in ("pending", "firing") else (_ for _ in ()).throw(
                    AssertionError("state %s; active: %s" % (active.get(name), active)))))
        for name in sorted(MUST_NOT):
            check("alert %s stays quiet" % name, lambda name=name: (
                None if name not in active else (_ for _ in ()).throw(AssertionError("it is " + active[name]))))
        _, rules = prom.api("/api/v1/rules")
        health = [r for g in rules["data"]["groups"] for r in g["rules"] if r.get("health") != "ok"]
        check("every rule evaluates healthily", lambda: (None if not health else (_ for _ in ()).throw(
            AssertionError(health))))
    finally:
        procs.close()
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
