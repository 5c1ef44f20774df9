# SPDX-License-Identifier: Apache-2.0
"""Live test: a real Prometheus scrapes the exporter every second, with the
rules of alerts/ loaded, while the simulator plays an upstream master (no
`cleared`, textual keys, silent removals): a healthy run, then one incident
at a time (a queue overflow, malformed messages, the master's clock stepping
back, a publisher restart, a master crash, a standby and its promotion).  Checks:
  - during the healthy run the exporter reports it healthy (messages arrive,
    never behind, every read of the master answered) and no alert is
    pending or firing;
  - each incident raises exactly its one alert, and no other;
  - every dashboard query and every rule expression parses and (but for the
    quiet alerts and a table of problems that is empty when all is well)
    returns series; every rule evaluates healthily.
An alert counts as raised once it has been active (pending or firing) at
three alert polls in a row: at the edge of an incident a single scrape can
land between the master's publisher and its admin API coming back, and a
pending alert that clears within seconds notifies nobody.  Long windows
(for: 30m, 10m increases) are covered by promtool's tests instead, and an
alert whose `for` is ten minutes or more counts as raised only when it fires:
its expression is a ten-minute increase that a lone failed read at an
incident's edge keeps pending, and the `for` is what lets that lone error
pass (promtool's "the other reads of the admin API" shows it never fires).

Every window is judged on what the exporter reports and Prometheus saw, not
on wall time: the simulator keeps its traffic steady until the test opens
the next gate (its `until=`).  The healthy run lasts until Prometheus has
scraped the exporter's messages moving HEALTHY_SCRAPES times and evaluated
the rules after; each incident's window, until its alert is raised and
SETTLE_POLLS more alert polls have passed (so another alert it raised
wrongly would show in it), each wait bounded by timing.py.

usage: test_prometheus.py EXPORTER SIM PROMETHEUS REPO_ROOT
Prints one line per check and closes with 'N passed, N failed'."""
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.parse

from harness import Checks, Exporter, Procs, Sim, expect, free_port, http_get, wait_for
from timing import scaled

EXPORTER, SIM, PROMETHEUS = sys.argv[1:4]
ROOT = os.path.abspath(sys.argv[4])
RULES = os.path.join(ROOT, "alerts", "mooncake-kv.rules.yml")



def story(gate):
    """The simulator's phases: steady traffic until gate(i) exists, then incident i."""
    steady = ["steady:rate=300,until=" + gate(i) for i in range(7)]
    return ["sleep:seconds=1", steady[0],
            "burst:events=3000", steady[1],
            "garbage:count=10", steady[2],
            "clock:ms=-3000", steady[3],
            "restart", steady[4],
            "crash:seconds=12", steady[5],
            "standby:seconds=8", steady[6], "wait"]


# each incident, how the exporter's /metrics shows it has begun, and its one alert
INCIDENTS = [
    ("queue overflow", lambda m: m.get("mooncake_kv_master_dropped_events_total", 0) > 0,
     "MooncakeKVPublisherDroppingEvents"),
    ("malformed messages", lambda m: m.get("mooncake_kv_decode_errors_total", 0) > 0, "MooncakeKVDecodeErrors"),
    ("clock step back", lambda m: m.get("mooncake_kv_event_timestamps_unusable_total", 0) > 0,
     "MooncakeKVEventTimestampsUnusable"),
    ("publisher restart", lambda m: m.get("mooncake_kv_master_restarts_total", 0) >= 1, "MooncakeKVPublisherReset"),
    # both gone, as the exporter reports it: a lone status poll that timed out is no crash
    ("master crash", lambda m: m.get("mooncake_kv_master_up", 1) == 0 and
     m.get("mooncake_kv_subscriber_connected", 1) == 0, "MooncakeKVMasterDown"),
    ("standby and promotion", lambda m: m.get("mooncake_kv_master_standby", 0) == 1, "MooncakeKVMasterFailover"),
]
HEALTHY_SCRAPES = 12  # scrapes of the healthy traffic in which the exporter's messages moved
SETTLE_POLLS = 8      # alert polls after an incident's alert is raised (one a second)
# what the exporter reports of its reads of the master: none may fail while all is well
READ_ERRORS = "mooncake_kv_master_(ha_|keys_|quota_)?poll_errors_total"
# panels that list problems: empty when all is well
EMPTY_WHEN_HEALTHY = {"Tenants over quota", "Puts refused for the quota", "State taken from a peer at start-up"}
# the simulator plays release v0.3.12, whose object dialect never sends cleared: the
# exporter serves no clears series for it (docs/design.md, "Dialects")
EMPTY_IN_OBJECT_DIALECT = ("mooncake_kv_tenant_clears_total",)


class TextProxy:
    """Passes scrapes to the exporter without their Accept header: Prometheus
    2.x asks for OpenMetrics, and through this it gets the 0.0.4 text."""
    def __init__(self, exporter_port):
        upstream = "http://127.0.0.1:%d" % exporter_port

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, headers, body = http_get(upstream + self.path)
                self.send_response(status)
                self.send_header("Content-Type", headers.get("Content-Type", "text/plain"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Prom:
    def __init__(self, procs, exporter_port, text_port):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(procs.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: mooncake-kv\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n"
                    "  - job_name: mooncake-kv-text\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (RULES, exporter_port, text_port))
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

    def query(self, expr, at=None):
        return self.api("/api/v1/query", query=expr, **({"time": "%.3f" % at} if at else {}))

    def samples(self, expr, at=None):
        """{labels: value} of an instant query."""
        return {frozenset(r["metric"].items()): float(r["value"][1]) for r in self.query(expr, at)[1]["data"]["result"]}

    def active_alerts(self):
        _, r = self.api("/api/v1/alerts")
        return {a["labels"]["alertname"]: a["state"] for a in r["data"]["alerts"]}


def dashboard_queries():
    subst = {"$source": "m0", "$tenant_id": ".*", "$instance": ".*", "$key_group": ".*", "$__rate_interval": "1m",
             "$cluster": ".*", "$namespace": ".*", "$job": ".*"}
    for f in sorted(os.listdir(os.path.join(ROOT, "dashboards"))):
        if not f.endswith(".json"):
            continue
        d = json.load(open(os.path.join(ROOT, "dashboards", f)))
        exprs = [("%s / %s" % (f, p["title"]), t["expr"]) for p in d["panels"] for t in p.get("targets", [])]
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


def long_for_alerts():
    """The alerts whose `for` is ten minutes or more (see the docstring)."""
    text = open(RULES).read()
    out = set()
    for m in re.finditer(r"- alert: (\S+)\n(?:\s{8,}.*\n)*?\s+for: (\d+)([smh])\n", text):
        seconds = int(m.group(2)) * {"s": 1, "m": 60, "h": 3600}[m.group(3)]
        if seconds >= 600:
            out.add(m.group(1))
    return out


def source_figures(exp):
    """The source's figures that mark an incident, summed over its labels."""
    out = {}
    try:
        text = http_get(exp.url + "/metrics", timeout=2)[2].decode()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("#") or 'source="m0"' not in line:
            continue
        name = line.split("{", 1)[0]
        out[name] = out.get(name, 0) + float(line.rsplit(" ", 1)[1])
    return out


class Watch(threading.Thread):
    """Polls Prometheus's alerts every second and the exporter's figures every
    quarter second: when each incident began, and when each alert was raised."""
    def __init__(self, prom, exp):
        super().__init__(daemon=True)
        self.prom, self.exp = prom, exp
        self.stop = False
        self.began = {}    # incident -> time
        self.raised = {}   # alert -> time of the third active poll in a row
        self.active_runs = {}
        self.any_active = []  # (time, names) of every poll with an active alert
        self.polls = 0        # alert polls done
        self.caught_up = None  # when the exporter first reported its stream caught up
        self.long_for = long_for_alerts()

    def run(self):
        next_alerts = 0
        while not self.stop:
            now = time.time()
            figures = source_figures(self.exp)
            if self.caught_up is None and figures.get("mooncake_kv_sequence_behind") == 0 and \
                    figures.get("mooncake_kv_master_up") == 1 and figures.get("mooncake_kv_subscriber_connected") == 1:
                self.caught_up = now
            for name, began, _ in INCIDENTS:
                if name not in self.began and figures and began(figures):
                    self.began[name] = now
            if now >= next_alerts:
                next_alerts = now + 1
                try:
                    states = self.prom.active_alerts()
                except Exception:
                    states = {}
                active = set(states)
                if active:
                    self.any_active.append((now, sorted(active)))
                for a in active:
                    if a in self.long_for and states[a] != "firing":
                        continue
                    self.active_runs[a] = self.active_runs.get(a, 0) + 1
                    if self.active_runs[a] == 3 and a not in self.raised:
                        self.raised[a] = now
                for a in list(self.active_runs):
                    if a not in active:
                        self.active_runs[a] = 0
                self.polls += 1
            time.sleep(0.25)


def main():
    procs = Procs()
    check = Checks()

    try:
        def gate(i):
            return os.path.join(procs.dir, "go-%d" % i)

        def go(i):  # the simulator's steady traffic i ends: incident i begins
            open(gate(i), "w").close()

        def until(pred, seconds):  # a bounded wait whose outcome the checks below judge
            try:
                wait_for(pred, seconds, "")
            except AssertionError:
                pass

        # an upstream master (the simulator's default), with quotas that no tenant reaches
        sim = Sim(procs, SIM, story(gate), seed=77, extra=["--mooncake", "v0.3.12", "--queue", "1000",
                                                           "--tenants", "4", "--quotas", "on",
                                                           "--quota-bytes", "100000000"], truth=False)
        # reconciling, as an operator would: every dashboard panel then has series.  Its reads of
        # the master are bounded as every wait of the tests is (timing.py): a fixed 150 ms timed
        # out on a loaded machine, and each read that fails is (rightly) an alert pending
        poll = "%dms" % round(1000 * scaled(0.25))
        exp = Exporter(procs, EXPORTER, [sim.source("m0") + ",reconcile=true"],
                       extra=["--master.poll-interval", poll, "--master.timeout", poll,
                              "--master.reconcile-interval", "1s",
                              "--key.group-regex", "^(?<model>[^/]+)/"])
        # the master first, as in production: the exporter and Prometheus join a healthy one
        sim.start()
        t0 = time.time()
        wait_for(lambda: http_get(exp.url + "/-/ready")[0] == 200, 10, "the exporter is ready")
        text = TextProxy(exp.port)
        prom = Prom(procs, exp.port, text.port)
        # counters must have samples from before the incidents for increase() to see them, and from
        # before the healthy traffic in both jobs, for its figures to be judged from start to end
        wait_for(lambda: len(prom.query("mooncake_kv_messages_received_total")[1]["data"]["result"]) == 2, 20,
                 "prometheus scraped the exporter in both formats")
        watch = Watch(prom, exp)
        watch.start()

        # the healthy traffic: from when the exporter reports its stream caught up, until Prometheus
        # has scraped its messages moving HEALTHY_SCRAPES times and evaluated the rules after
        wait_for(lambda: watch.caught_up, 30, "the exporter reports its stream caught up")
        healthy_start = watch.caught_up
        moved = 'changes(mooncake_kv_messages_received_total{job="mooncake-kv",source="m0"}[%ds])'
        wait_for(lambda: sum(prom.samples(moved % max(1, time.time() - healthy_start)).values()) >= HEALTHY_SCRAPES,
                 60, "Prometheus scraped %d moves of the healthy traffic" % HEALTHY_SCRAPES)
        n = watch.polls
        wait_for(lambda: watch.polls >= n + 3, 10, "three alert polls after them")
        healthy_end = time.time()
        go(0)

        # each incident's window: until its alert is raised and SETTLE_POLLS more alert polls have passed
        windows, opened = [], healthy_end
        for i, (name, _, alert) in enumerate(INCIDENTS):
            until(lambda alert=alert, opened=opened: watch.raised.get(alert, 0) >= opened, 60)
            n = watch.polls
            until(lambda n=n: watch.polls >= n + SETTLE_POLLS, 30)
            windows.append((opened, time.time()))
            opened = time.time()
            if i + 1 < len(INCIDENTS):
                go(i + 1)
        watch.stop = True
        watch.join(5)
        print("(story and scrapes took %.0f s; healthy traffic %.0f s, incidents %s s)" % (
            time.time() - t0, healthy_end - healthy_start, " ".join("%.0f" % (b - a) for a, b in windows)))

        def reported_healthy():
            w = "[%ds]" % max(1, healthy_end - healthy_start)
            behind = prom.samples('max_over_time(mooncake_kv_sequence_behind{job="mooncake-kv",source="m0"}%s)' % w,
                                  healthy_end)
            expect(behind and set(behind.values()) == {0}, "mooncake_kv_sequence_behind over the window: %s" % behind)
            reads = '{__name__=~"%s",job="mooncake-kv",source="m0"}' % READ_ERRORS
            before, after = prom.samples(reads, healthy_start), prom.samples(reads, healthy_end)
            failed = {dict(k)["__name__"] + "{" + dict(k)["reason"] + "}": v - before.get(k, 0)
                      for k, v in after.items() if v != before.get(k, 0)}
            expect(after and not failed, "reads of the master failed: %s" % failed)
        check("the exporter reports the healthy traffic healthy (never behind, every master read answered)",
              reported_healthy)
        active = [a for t, a in watch.any_active if healthy_start <= t <= healthy_end]
        check("no alert is pending or firing during the healthy traffic (%.0f s)" % (healthy_end - healthy_start),
              lambda: expect(not active, active))
        check("every incident happened, in order", lambda: expect(
            [n for n, _, _ in INCIDENTS] == sorted(watch.began, key=watch.began.get), watch.began))
        for (name, _, alert), (start, end) in zip(INCIDENTS, windows):
            got = sorted(a for a, t in watch.raised.items() if start <= t < end)
            check("incident %s raises exactly %s" % (name, alert),
                  lambda got=got, alert=alert: expect(got == [alert], "raised: %s" % got))
        check("nothing else was raised", lambda: expect(
            set(watch.raised) == {a for _, _, a in INCIDENTS}, watch.raised))

        # both formats, scraped by a real Prometheus: OpenMetrics (what it asks for) and the text
        for job in ("mooncake-kv", "mooncake-kv-text"):
            def scraped(job=job):
                r = prom.query('up{job="%s"} == 1 and scrape_samples_scraped{job="%s"} > 100' % (job, job))[1]
                assert r["data"]["result"], "job %s: %s" % (job, prom.api("/api/v1/targets")[1])
                r = prom.query('mooncake_kv_messages_received_total{job="%s",source="m0"} > 0' % job)[1]
                assert r["data"]["result"], "no messages counted through " + job
            check("Prometheus scrapes the %s format" % ("OpenMetrics" if job == "mooncake-kv" else "text"),
                  scraped)
        _, targets = prom.api("/api/v1/targets")
        check("no scrape error in either format", lambda: expect(
            not [t["lastError"] for t in targets["data"]["activeTargets"] if t["lastError"]], targets))

        for where, expr in dashboard_queries():
            def q(expr=expr, where=where):
                status, r = prom.query(expr)
                assert status == 200 and r["status"] == "success", r
                if where.split(" / ")[-1] not in EMPTY_WHEN_HEALTHY and \
                        not any(n in expr for n in EMPTY_IN_OBJECT_DIALECT):
                    assert r["data"]["result"], "no series for " + expr
            check("dashboard " + where, q)

        for kind, name, expr in rule_exprs():
            def q(kind=kind, name=name, expr=expr):
                status, r = prom.query(expr)
                assert status == 200 and r["status"] == "success", r
                if kind == "record":
                    assert r["data"]["result"], "no series for " + expr
                    status, r = prom.query(name)  # and Prometheus recorded it
                    assert r["data"]["result"], "nothing recorded as " + name
            check("%s %s" % (kind, name), q)
        _, rules = prom.api("/api/v1/rules")
        health = [r for g in rules["data"]["groups"] for r in g["rules"] if r.get("health") != "ok"]
        check("every rule evaluates healthily", lambda: expect(not health, health))
    finally:
        procs.close()
    return check.rc()


if __name__ == "__main__":
    sys.exit(main())
