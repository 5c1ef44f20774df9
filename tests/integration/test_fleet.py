# SPDX-License-Identifier: Apache-2.0
"""Live test: a fleet of two Mooncake clusters seen from two central stores,
with Debian's binaries (docs/fleet.md).

Cluster a and cluster b are each a simulated master (Mooncake conductor, each
serving its own model) and one exporter.  Each cluster has its own shard
scraper, a Prometheus in agent mode whose external label names the cluster
(cluster="a", cluster="b"); both remote-write to a central Prometheus (the
remote-write receiver) that evaluates alerts/mooncake-kv.rules.yml.  The
second central store is VictoriaMetrics, fed by cluster a's agent and, for
cluster b, by vmagent (the other shard scraper docs/fleet.md describes, its
label given by -remoteWrite.label); vmalert evaluates the same rules against
it and writes what it records back.  Both shards rename the exporter's
instance and job to the same values, as two clusters whose manifests are
alike do: only `cluster` tells their series apart, so a rule that dropped
it would merge them.  Checks:
  - while both clusters are healthy no alert is pending or firing on
    either central store;
  - a publisher restart in cluster a fires MooncakeKVPublisherReset with
    cluster="a", once (one alert, active from its first poll to the end),
    and raises nothing else (active at RAISED_POLLS polls in a row), on
    both central stores;
  - every recording rule with series has them for both clusters, each with
    its cluster label, on both central stores; no rule is in error on the
    central Prometheus, nor on vmalert (alerts/mooncake-kv.vm.rules.yml);
  - every query of the fleet dashboard (dashboards/mooncake-kv-fleet.json)
    returns series for both clusters, with the cluster label, on both
    central stores, and its model panel names the model each cluster's
    master was given;
  - each store holds the histograms in the mode's form, for both clusters:
    the central Prometheus native ones (a query of the family returns
    `histogram` values, and no _bucket series) in native mode, classic
    _bucket series in classic mode; VictoriaMetrics classic ones in both;
  - the rules that read a histogram (the lag quantiles; the lifetime
    quantiles, each master clearing a tenant once heard so that its
    lifetimes are seen whole) record both clusters on both stores, and
    each median, series by series, agrees within bucket resolution: the
    central Prometheus's inside the classic bucket that holds
    VictoriaMetrics's (its `le` read off VictoriaMetrics), widened by one
    native bucket (its growth read off the native buckets stored) in native
    mode, by the neighbouring classic buckets in classic mode (the two
    stores' windows end a scrape apart).

Histogram modes (--histograms): classic (the text and OpenMetrics
expositions; the default: meson test `fleet`) and native (meson test
`fleet-native`: agents and the central Prometheus with
--enable-feature=native-histograms, remote_write's send_native_histograms;
VictoriaMetrics fed by vmagent alone, which keeps classic histograms: see
main()).  Native mode needs the exporter's protobuf exposition: an exporter
that serves none makes it exit 77 with why.

Alerts are polled once a second on both stores; windows are judged on what
the stores saw, each wait bounded by timing.py.  A missing binary (tools/deps.sh
test installs them) makes it exit 77 with one line that says which.

usage: test_fleet.py EXPORTER SIM REPO_ROOT [--histograms classic|native]
Prints one line per check and closes with 'N passed, N failed'."""
import http.server
import json
import os
import re
import shutil
import sys
import threading
import time
import traceback
import urllib.parse

from harness import Checks, Exporter, Procs, Sim, expect, free_port, http_get, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1:3]
ROOT = os.path.abspath(sys.argv[3])
RULES = os.path.join(ROOT, "alerts", "mooncake-kv.rules.yml")
VM_RULES = os.path.join(ROOT, "alerts", "mooncake-kv.vm.rules.yml")
DASHBOARD = os.path.join(ROOT, "dashboards", "mooncake-kv-fleet.json")
MODE = sys.argv[sys.argv.index("--histograms") + 1] if "--histograms" in sys.argv else "classic"

CLUSTERS = {"a": "meta-llama/Llama-3.1-8B-Instruct", "b": "Qwen/Qwen2.5-7B-Instruct"}  # the model each serves
INSTANCE, JOB = "mooncake-kv-exporter:19557", "mooncake-kv"  # the same in both clusters: only `cluster` differs
INCIDENT = "MooncakeKVPublisherReset"
HEALTHY_SCRAPES = 10  # moves of each cluster's messages each central store saw in the healthy traffic
# an alert counts as raised once active at three polls in a row: at the edge of a restart a
# single scrape can see the subscriber reconnecting, and an alert pending for a second notifies
# nobody (as in test_prometheus.py); while all is healthy no alert may be active at any poll
RAISED_POLLS = 3
SETTLE_POLLS = 8      # alert polls after the incident's alert is raised on both stores
LAG = "mooncake_kv_event_lag_seconds"  # a histogram every message observes: both clusters have it
PROTOBUF = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"


def binaries():
    """The Debian binaries the story runs, or exit 77 naming what is missing."""
    found = {n: shutil.which(n) for n in ("prometheus", "victoria-metrics", "vmagent", "vmalert")}
    missing = [n for n, p in found.items() if not p]
    if missing:
        print("SKIP: not on the PATH: %s (tools/deps.sh test installs them)" % ", ".join(missing))
        sys.exit(77)
    return found


def native_or_skip(exp):
    """Native mode needs the protobuf exposition: exit 77 when the exporter has none."""
    _, headers, _ = http_get(exp.url + "/metrics", {"Accept": PROTOBUF})
    if not headers.get("Content-Type", "").startswith("application/vnd.google.protobuf"):
        print("SKIP: --histograms native: the exporter serves no protobuf exposition (Content-Type %s)"
              % headers.get("Content-Type"))
        sys.exit(77)


def ready(url):
    try:
        return http_get(url, timeout=1)[0] == 200
    except OSError:
        return False


class Store:
    """A central store: the Prometheus API of a central Prometheus or of
    VictoriaMetrics, and the alerts of what evaluates the rules there."""
    def __init__(self, name, query_url, alerts_url):
        self.name, self.query_url, self.alerts_url = name, query_url, alerts_url

    def query(self, expr):
        status, _, body = http_get(self.query_url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}),
                                   timeout=10)
        r = json.loads(body)
        assert status == 200 and r.get("status") == "success", "%s: %s: %s" % (self.name, expr, r)
        return r["data"]["result"]

    def by_cluster(self, expr):
        """{cluster: [labels of each series]} of an instant query (cluster None: a series without it)."""
        out = {}
        for s in self.query(expr):
            out.setdefault(s["metric"].get("cluster"), []).append(s["metric"])
        return out

    def rule_errors(self):
        """{rule name: its last evaluation's error} of every rule in error."""
        _, _, body = http_get(self.alerts_url + "/api/v1/rules", timeout=5)
        return {r["name"]: r.get("lastError", "") for g in json.loads(body)["data"]["groups"] for r in g["rules"]
                if r.get("health") == "err"}

    def alerts(self):
        """{(alertname, cluster, frozenset(labels)): state} of every active alert."""
        _, _, body = http_get(self.alerts_url + "/api/v1/alerts", timeout=5)
        out = {}
        for a in json.loads(body)["data"]["alerts"] or []:  # vmalert: null for none
            labels = dict(a["labels"])
            labels.pop("alertgroup", None)  # vmalert's group, which Prometheus does not add
            name = labels.get("alertname") or a.get("name")
            out[(name, labels.get("cluster"), frozenset(labels.items()))] = a["state"]
        return out


def long_for_alerts():
    """Alerts whose `for` is ten minutes or more: a lone failed read at an edge
    keeps them pending, and only firing counts (as in test_prometheus.py)."""
    out = set()
    for m in re.finditer(r"- alert: (\S+)\n(?:\s{8,}.*\n)*?\s+for: (\d+)([smh])\n", open(RULES).read()):
        if int(m.group(2)) * {"s": 1, "m": 60, "h": 3600}[m.group(3)] >= 600:
            out.add(m.group(1))
    return out


class Watch(threading.Thread):
    """Polls both stores' alerts about once a second: every active alert, when."""
    def __init__(self, stores):
        super().__init__(daemon=True)
        self.stores = stores
        self.stop = False
        self.polls = 0
        self.seen = {s.name: [] for s in stores}  # store -> [(time, {key: state})]
        self.long_for = long_for_alerts()

    def run(self):
        while not self.stop:
            t = time.time()
            for s in self.stores:
                try:
                    active = {k: v for k, v in s.alerts().items() if k[0] not in self.long_for or v == "firing"}
                except (OSError, ValueError, KeyError):
                    continue
                self.seen[s.name].append((t, active))
            self.polls += 1
            time.sleep(max(0.0, 1 - (time.time() - t)))

    def between(self, store, start, end=None):
        return [(t, a) for t, a in self.seen[store] if t >= start and (end is None or t < end)]


class Sink:
    """An Alertmanager that takes every notification (vmalert wants one)."""
    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def scrape_job(target):
    """One exporter, renamed as every cluster's manifests would name it."""
    return ("scrape_configs:\n  - job_name: %s\n    static_configs:\n      - targets: ['%s']\n"
            "    relabel_configs:\n      - target_label: instance\n        replacement: '%s'\n"
            % (JOB, target, INSTANCE))


def prometheus_agent(procs, exe, cluster, target, writes):
    """A shard scraper: Prometheus in agent mode, its cluster an external label."""
    port = free_port()
    cfg = os.path.join(procs.dir, "agent-%s.yml" % cluster)
    rw = "".join("  - url: %s\n    queue_config: {batch_send_deadline: 1s, min_backoff: 100ms, max_backoff: 1s}\n"
                 % w for w in writes)
    if MODE == "native":
        # native mode: the agent scrapes the protobuf exposition and sends native histograms on
        # (without send_native_histograms 2.42 sends none of them)
        rw = rw.replace("    queue_config", "    send_native_histograms: true\n    queue_config")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  external_labels:\n    cluster: %s\n" % cluster
                + scrape_job(target) + "remote_write:\n" + rw)
    argv = [exe, "--enable-feature=agent", "--config.file", cfg, "--storage.agent.path",
            os.path.join(procs.dir, "agent-%s" % cluster), "--web.listen-address", "127.0.0.1:%d" % port,
            "--log.level", "warn"]
    if MODE == "native":
        argv[1] = "--enable-feature=agent,native-histograms"
    procs.start("agent-" + cluster, argv)
    wait_for(lambda: ready("http://127.0.0.1:%d/-/ready" % port), 30, "the agent of cluster %s is ready" % cluster)


def vmagent(procs, exe, cluster, target, write):
    """The other shard scraper: vmagent, its cluster a label on all it sends."""
    port = free_port()
    cfg = os.path.join(procs.dir, "vmagent-%s.yml" % cluster)
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n" + scrape_job(target))
    procs.start("vmagent-" + cluster, [
        exe, "-promscrape.config", cfg, "-remoteWrite.url", write, "-remoteWrite.label", "cluster=" + cluster,
        "-remoteWrite.tmpDataPath", os.path.join(procs.dir, "vmagent-" + cluster),
        "-remoteWrite.flushInterval", "500ms", "-httpListenAddr", "127.0.0.1:%d" % port])
    wait_for(lambda: ready("http://127.0.0.1:%d/health" % port), 30, "vmagent of cluster %s is ready" % cluster)


def central_prometheus(procs, exe):
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    cfg = os.path.join(procs.dir, "central.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  evaluation_interval: 1s\nrule_files:\n  - %s\n" % RULES)
    argv = [exe, "--config.file", cfg, "--storage.tsdb.path", os.path.join(procs.dir, "central"),
            "--web.listen-address", "127.0.0.1:%d" % port, "--web.enable-remote-write-receiver", "--log.level", "warn"]
    if MODE == "native":
        argv.append("--enable-feature=native-histograms")  # the receiver stores native histograms
    procs.start("central-prometheus", argv)
    wait_for(lambda: ready(url + "/-/ready"), 30, "the central Prometheus is ready")
    return Store("central Prometheus", url, url)


def victoria(procs, exes, sink):
    port, alert_port = free_port(), free_port()
    url, alert_url = "http://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % alert_port
    # what was written is searchable at once: no latency offset, no cache of results
    procs.start("victoria-metrics", [
        exes["victoria-metrics"], "-storageDataPath", os.path.join(procs.dir, "vm"),
        "-httpListenAddr", "127.0.0.1:%d" % port, "-search.latencyOffset", "0s", "-search.disableCache"])
    wait_for(lambda: ready(url + "/health"), 30, "VictoriaMetrics is ready")
    procs.start("vmalert", [
        exes["vmalert"], "-rule", VM_RULES, "-datasource.url", url, "-remoteWrite.url", url,
        "-remoteWrite.flushInterval", "500ms", "-notifier.url", sink.url, "-evaluationInterval", "1s",
        "-httpListenAddr", "127.0.0.1:%d" % alert_port])
    wait_for(lambda: ready(alert_url + "/health"), 30, "vmalert is ready")
    return Store("VictoriaMetrics", url, alert_url), url + "/api/v1/write"


def raised_in(polls, run=RAISED_POLLS):
    """The alerts active at `run` polls in a row."""
    out, runs = set(), {}
    for _, active in polls:
        runs = {k: runs.get(k, 0) + 1 for k in active}
        out |= {k for k, n in runs.items() if n >= run}
    return out


def rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def finite(v):
    return v not in ("NaN", "+Inf", "-Inf")


def native_growth(series):
    """The largest ratio of a native bucket's upper to its lower bound among
    the positive buckets of the `histogram` values of a query: the resolution
    of the native histograms stored."""
    out = 1.0
    for s in series:
        for _, lo, hi, _ in s["histogram"][1].get("buckets", []):
            if float(lo) > 0:
                out = max(out, float(hi) / float(lo))
    return out


def recording_rules():
    return re.findall(r"- record: (\S+)", open(RULES).read())


def dashboard_queries():
    """(panel title, query) of the fleet dashboard, its variables at All."""
    d = json.load(open(DASHBOARD))
    subst = {"$__rate_interval": "1m"}
    for v in d["templating"]["list"]:
        subst["$" + v["name"]] = ".*"
    for p in d["panels"]:
        targets = p.get("targets", [])
        for t in targets:
            e = t["expr"]
            for k in sorted(subst, key=len, reverse=True):
                e = e.replace(k, subst[k])
            yield p["title"] + (" [%s]" % t["refId"] if len(targets) > 1 else ""), e
    # and the cluster variable lists both
    yield "variable cluster", "group by (cluster) (mooncake_kv_exporter_build_info)"


def main():
    exes = binaries()
    procs = Procs()
    check = Checks()

    try:
        gates = {c: os.path.join(procs.dir, "go-" + c) for c in CLUSTERS}
        clears = {c: os.path.join(procs.dir, "clear-" + c) for c in CLUSTERS}
        done = os.path.join(procs.dir, "done")
        sims, exps = {}, {}
        poll = "%dms" % round(1000 * scaled(1.0))
        t0 = time.time()
        for i, (c, model) in enumerate(sorted(CLUSTERS.items())):
            # each master clears a tenant once its exporter hears it: that tenant turns exact and its
            # objects' lifetimes are seen whole (the lifetime quantiles have series), the others stay
            # stale since startup (the stale age has series); conductor, which sends a tenant's cleared
            # even when it held nothing yet. Cluster a restarts its publisher at its gate; b runs
            # steady to the end
            phases = ["sleep:seconds=1", "steady:rate=200,until=" + clears[c], "clear:tenant=tenant-1",
                      "steady:rate=200,until=" + gates[c]]
            if c == "a":
                phases += ["restart", "steady:rate=200,until=" + done]
            sims[c] = Sim(procs, SIM, phases + ["wait"], seed=58 + i,
                          extra=["--mooncake", "conductor", "--tenants", "3", "--model-name", model], truth=False)
            sims[c].start()
            exps[c] = Exporter(procs, EXPORTER, [sims[c].source("default")],
                               extra=["--master.poll-interval", poll])
        for c in CLUSTERS:
            wait_for(lambda c=c: ready(exps[c].url + "/-/ready"), 10, "the exporter of cluster %s is ready" % c)
        for c in CLUSTERS:
            wait_for(lambda c=c: sum(exps[c].metrics().find("mooncake_kv_messages_received_total").values()) > 0, 30,
                     "the exporter of cluster %s hears its master" % c)
            open(clears[c], "w").close()
        for c in CLUSTERS:
            wait_for(lambda c=c: {0, 1} <= set(exps[c].metrics().find("mooncake_kv_state_stale").values()), 30,
                     "the exporter of cluster %s holds a tenant exact and others stale" % c)
        if MODE == "native":
            native_or_skip(exps["a"])

        prom = central_prometheus(procs, exes["prometheus"])
        sink = Sink()
        vm, vm_write = victoria(procs, exes, sink)
        write = prom.query_url + "/api/v1/write"
        # cluster a: one agent writes to both central stores; cluster b: an agent to the
        # central Prometheus, vmagent to VictoriaMetrics
        targets = {c: "127.0.0.1:%d" % exps[c].port for c in CLUSTERS}
        if MODE == "classic":
            prometheus_agent(procs, exes["prometheus"], "a", targets["a"], [write, vm_write])
            prometheus_agent(procs, exes["prometheus"], "b", targets["b"], [write])
            vmagent(procs, exes["vmagent"], "b", targets["b"], vm_write)
        else:
            # native mode: VictoriaMetrics 1.79.5 answers 204 to native histograms and keeps nothing of
            # them (not even a count), and a Prometheus 2.42 scraping with native-histograms keeps no
            # classic buckets of a histogram that has native ones: the agents write native histograms
            # to the central Prometheus only, and vmagent (which scrapes the text format, classic
            # histograms) feeds VictoriaMetrics for both clusters (docs/fleet.md, "Histograms")
            for c in sorted(CLUSTERS):
                prometheus_agent(procs, exes["prometheus"], c, targets[c], [write])
                vmagent(procs, exes["vmagent"], c, targets[c], vm_write)
        stores = [prom, vm]
        for s in stores:
            wait_for(lambda s=s: set(s.by_cluster('mooncake_kv_messages_received_total{job="%s"}' % JOB)) ==
                     set(CLUSTERS), 60, "%s has both clusters' samples" % s.name)
        watch = Watch(stores)
        watch.start()

        # the healthy traffic: until each store saw each cluster's messages move HEALTHY_SCRAPES
        # times, then three more alert polls
        healthy_start = time.time()

        def moved(s):
            expr = "changes(mooncake_kv_messages_received_total[%ds])" % max(2, round(time.time() - healthy_start))
            got = {c: 0 for c in CLUSTERS}
            for r in s.query(expr):
                got[r["metric"].get("cluster")] = got.get(r["metric"].get("cluster"), 0) + float(r["value"][1])
            return all(got[c] >= HEALTHY_SCRAPES for c in CLUSTERS)
        for s in stores:
            wait_for(lambda s=s: moved(s), 90, "%s saw %d moves of each cluster's traffic" % (s.name, HEALTHY_SCRAPES))
        n = watch.polls
        wait_for(lambda: watch.polls >= n + 3, 15, "three alert polls after them")
        healthy_end = time.time()

        # the incident: cluster a's publisher restarts, as its exporter reports
        open(gates["a"], "w").close()
        def restarts(c):
            return sum(exps[c].metrics().find("mooncake_kv_publisher_resets_total", source="default").values())
        wait_for(lambda: restarts("a") >= 1, 30, "the exporter of cluster a reports the publisher's restart")

        check("only cluster a's exporter reports a publisher restart",
              lambda: expect(restarts("b") == 0, "cluster b's exporter reports a restart"))

        def raised(s):
            return any(k[0] == INCIDENT for _, a in watch.between(s.name, healthy_end) for k in a)
        try:
            wait_for(lambda: all(raised(s) for s in stores), 60, "%s on both stores" % INCIDENT)
        except AssertionError:
            pass  # judged below
        n = watch.polls
        wait_for(lambda: watch.polls >= n + SETTLE_POLLS, 30, "%d alert polls after it" % SETTLE_POLLS)
        incident_end = time.time()
        print("(story took %.0f s to the incident's end; healthy traffic %.0f s, incident %.0f s; %s histograms)"
              % (incident_end - t0, healthy_end - healthy_start, incident_end - healthy_end, MODE), flush=True)

        for s in stores:
            healthy = [(round(t - healthy_start), sorted(k[:2] for k in a))
                       for t, a in watch.between(s.name, healthy_start, healthy_end) if a]
            check("%s: no alert pending or firing while both clusters are healthy (%d polls)" % (
                s.name, len(watch.between(s.name, healthy_start, healthy_end))),
                lambda healthy=healthy: expect(not healthy, healthy))

            def incident(s=s):
                polls = watch.between(s.name, healthy_end, incident_end)
                keys = {k for k in raised_in(polls)}
                expect({k[:2] for k in keys} == {(INCIDENT, "a")}, "raised: %s" % sorted(k[:2] for k in keys))
                expect(len(keys) == 1, "more than one %s: %s" % (INCIDENT, keys))
                key = keys.pop()
                labels = dict(key[2])
                expect(labels.get("instance") == INSTANCE and labels.get("source") == "default", labels)
                on = [key in a for _, a in polls]
                first = on.index(True)
                expect(all(on[first:]), "not active from its first poll to the end (fired twice): %s" % on)
                expect(any(a.get(key) == "firing" for _, a in polls), "never firing")
            check("%s: the restart in cluster a fires %s with cluster=\"a\" only, once" % (s.name, INCIDENT),
                  incident)
        watch.stop = True
        watch.join(5)
        print("(resident memory, MB: %s)" % ", ".join(
            "%s %.0f" % (p.name, rss_mb(p.pid)) for p in procs.procs
            if p.poll() is None and not p.name.startswith("sim")), flush=True)

        for s in stores:
            def recorded(s=s):
                with_series = 0
                for name in recording_rules():
                    got = s.by_cluster(name)
                    if not got:
                        continue
                    with_series += 1
                    expect(set(got) == set(CLUSTERS), "%s: series by cluster %s" % (name, sorted(got, key=str)))
                for name in ("source:mooncake_kv_messages_received:rate1m",
                             "source_cause:mooncake_kv_lost_sequences:rate5m",
                             "source:mooncake_kv_objects:sum", "source_medium:mooncake_kv_objects_by_medium:sum"):
                    expect(set(s.by_cluster(name)) == set(CLUSTERS), "%s: not recorded for both clusters" % name)
                print("  (%s: %d recording rules with series, each for both clusters)" % (s.name, with_series))
            check("%s: recording rules keep the cluster label" % s.name, recorded)

        def rules_run(s):
            def fn():
                errors = s.rule_errors()
                expect(not errors, "rules in error: %s" % {n: e[:200] for n, e in errors.items()})
            return fn
        check("central Prometheus: no rule in error", rules_run(prom))
        check("vmalert: no rule in error", rules_run(vm))

        prom_native = MODE == "native"

        def held(s, native):
            def fn():
                plain, buckets = s.by_cluster(LAG), s.by_cluster(LAG + "_bucket")
                if native:
                    expect(set(plain) == set(CLUSTERS), "%s as native: clusters %s" % (LAG, sorted(plain, key=str)))
                    kinds = {("histogram" in r, "value" in r) for r in s.query(LAG)}
                    expect(kinds == {(True, False)}, "%s: not every value a histogram: %s" % (LAG, kinds))
                    expect(not buckets, "%s_bucket stored beside the native histograms: %s"
                           % (LAG, sorted(buckets, key=str)))
                else:
                    expect(set(buckets) == set(CLUSTERS), "%s_bucket: clusters %s" % (LAG, sorted(buckets, key=str)))
                    expect(not s.query(LAG), "%s stored as a native histogram" % LAG)
            return fn
        check("central Prometheus holds the histograms as %s, for both clusters" % MODE, held(prom, prom_native))
        check("VictoriaMetrics holds the histograms as classic, for both clusters", held(vm, False))

        def histogram_rules():
            quantile_rules = [r for r in recording_rules() if re.search(r":p\d+_", r)]
            expect(quantile_rules, "no quantile recording rule in %s" % RULES)
            compared = {}
            for name in quantile_rules:
                family = name.split(":")[1]
                got = [s.by_cluster(name) for s in stores]
                for s, g in zip(stores, got):
                    expect(set(g) == set(CLUSTERS), "%s on %s: clusters %s" % (name, s.name, sorted(g, key=str)))
                if ":p50_" not in name:
                    continue
                # the median recorded on both stores, series by series
                bounds = sorted({float(r["metric"]["le"]) for r in vm.query("count by (le) (%s_bucket)" % family)})
                growth = native_growth(prom.query(family)) if prom_native else 1.0
                expect(len(bounds) > 1, "%s: no classic buckets on VictoriaMetrics" % family)

                def key(m):
                    return tuple(sorted((k, v) for k, v in m.items() if k not in ("__name__", "instance", "job")))
                values = [{key(r["metric"]): r["value"][1] for r in s.query(name)} for s in stores]
                for k in sorted(set(values[0]) & set(values[1])):
                    p, v = values[0][k], values[1][k]
                    if not (finite(p) and finite(v)):
                        continue
                    p, v = float(p), float(v)
                    i = next((i for i, b in enumerate(bounds) if v <= b), len(bounds) - 1)
                    # The agent and vmagent scrape each exporter on their own
                    # schedules, so the two stores hold different moments: a
                    # median on a bucket's edge may sit one bucket over on the
                    # other store, in either histogram mode.
                    lo, hi = (bounds[i - 2] if i > 1 else 0.0), bounds[min(i + 1, len(bounds) - 1)]
                    expect(lo / growth <= p <= hi * growth,
                           "%s %s: central Prometheus %g, VictoriaMetrics %g, not within (%g, %g]"
                           % (name, dict(k), p, v, lo / growth, hi * growth))
                    compared.setdefault(name, set()).add(dict(k).get("cluster"))
                    print("  (%s %s: central Prometheus %.4g, VictoriaMetrics %.4g, within (%.4g, %.4g])"
                          % (name, ",".join(x for _, x in k), p, v, lo / growth, hi * growth))
            for name in quantile_rules:
                if ":p50_" in name:
                    expect(compared.get(name) == set(CLUSTERS), "%s compared for clusters %s only"
                           % (name, sorted(compared.get(name, ()), key=str)))
        check("histogram quantile rules record both clusters on both stores and agree (%s)" % MODE,
              histogram_rules)

        for title, expr in dashboard_queries():
            for s in stores:
                def panel(s=s, expr=expr):
                    got = s.by_cluster(expr)
                    expect(set(got) == set(CLUSTERS), "series by cluster %s for %s" % (sorted(got, key=str), expr))
                    if "model_info" in expr:
                        for c, model in CLUSTERS.items():
                            expect({m.get("model_name") for m in got[c]} == {model}, "cluster %s: %s" % (c, got[c]))
                check("%s: fleet dashboard / %s: both clusters" % (s.name, title), panel)
    except Exception:
        check.fail()
        traceback.print_exc()
        for p in procs.procs:
            print("--- log of %s (last 2000 bytes):\n%s" % (p.name, procs.log(p)[-2000:]))
    finally:
        procs.close()
        # the stores' data go; the logs stay beside the other stories' in the temporary folder
        for d in os.listdir(procs.dir):
            if os.path.isdir(os.path.join(procs.dir, d)):
                shutil.rmtree(os.path.join(procs.dir, d), ignore_errors=True)
    return check.rc()


if __name__ == "__main__":
    if MODE not in ("classic", "native"):
        raise SystemExit("--histograms is classic or native")
    sys.exit(main())
