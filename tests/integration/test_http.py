# SPDX-License-Identifier: Apache-2.0
"""The HTTP endpoint as its clients meet it: fifty scrapers at once and
scraping while ingesting (the ThreadSanitizer story: tools/test.sh runs
`-k scrape` under it), readiness, TLS with client certificates and basic
auth, HTTP hygiene, the runbook, OpenMetrics and the series controls.

usage: test_http.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import gzip
import os
import re
import socket
import subprocess
import sys
import threading
import time

from harness import (Exporter, Metrics, Sim, bcrypt, check_truth, free_port, http_get, in_threads, make_pki,
                     promtool_check, run_tests, settle, wait_for)
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


def test_fifty_concurrent_scrapers(procs):
    sim = Sim(procs, SIM, ["sleep:seconds=0.3", "steady:rate=20000,seconds=3", "sleep:seconds=0.5"], seed=22,
              extra=["--tenants", "20"])
    # fifty connections from one address: more than its default share
    exp = Exporter(procs, EXPORTER, [sim.source("c")], extra=["--web.max-connections-per-address=64"])
    sim.start()
    codes, lock = [], threading.Lock()

    def scraper():
        for _ in range(10):
            code = http_get(exp.url + "/metrics", {"Accept-Encoding": "gzip"}, timeout=10)[0]
            with lock:
                codes.append(code)
    in_threads(50, scraper)
    truth = sim.wait()
    assert len(codes) == 500 and set(codes) == {200}, (len(codes), set(codes))
    check_truth(settle(exp, truth, "c"), truth, "c")


def test_scrape_while_ingesting(procs):
    sim = Sim(procs, SIM, ["sleep:seconds=0.3", "steady:rate=40000,seconds=3", "sleep:seconds=0.5"], seed=21,
              extra=["--tenants", "50", "--keys", "5000"])
    exp = Exporter(procs, EXPORTER, [sim.source("w")])
    sim.start()
    results, stop = [], time.time() + 3.5

    def scraper():
        while time.time() < stop and len(results) < 2000:
            code, _, body = http_get(exp.url + "/metrics", {"Accept-Encoding": "gzip"})
            Metrics(gzip.decompress(body).decode())  # parses
            results.append(code)
    in_threads(4, scraper, timeout=10)
    truth = sim.wait()
    assert len(results) > 20 and set(results) == {200}, (len(results), set(results))
    check_truth(settle(exp, truth, "w"), truth, "w")


def test_ready_follows_sources(procs):
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=100", "sleep:seconds=0.3"], seed=2)
    exp = Exporter(procs, EXPORTER, [sim.source("r")])
    assert http_get(exp.url + "/-/ready")[0] == 503
    sim.start()
    wait_for(lambda: http_get(exp.url + "/-/ready")[0] == 200, 5, "ready")
    assert http_get(exp.url + "/")[0] == 200
    assert http_get(exp.url + "/nope")[0] == 404
    sim.wait()


def curl(url, *args):
    """(exit code, http code, headers) of one request."""
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", "-w", "\n%{http_code}", "--max-time", "5", url]
                       + list(args), capture_output=True, text=True, timeout=scaled(20))
    lines = r.stdout.strip().splitlines()
    return r.returncode, int(lines[-1]) if lines and lines[-1].isdigit() else 0, r.stdout


def test_web_config_tls_and_basic_auth(procs):
    d = procs.dir
    make_pki(d)
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                "basic_auth_users:\n  alice: %s\n  bob: %s\n" % (bcrypt("s3cret"), bcrypt("other")))
    port = free_port()
    p = procs.start("tls", [EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % free_port(),
                            "--web.listen-address", "127.0.0.1:%d" % port, "--web.config.file",
                            os.path.join(d, "web.yml")])
    url = "https://127.0.0.1:%d/metrics" % port
    tls = ["--cacert", os.path.join(d, "ca.crt"), "--cert", os.path.join(d, "client.crt"),
           "--key", os.path.join(d, "client.key")]
    wait_for(lambda: p.poll() is None and curl(url, *tls, "-u", "alice:s3cret")[1] == 200, 5, "TLS answers")

    rc, code, headers = curl(url, *tls, "-u", "alice:wrong")
    assert code == 401 and 'WWW-Authenticate: Basic realm="mooncake-kv-exporter"' in headers, headers
    assert curl(url, *tls, "-u", "mallory:s3cret")[1] == 401
    assert curl(url, *tls)[1] == 401
    assert curl("https://127.0.0.1:%d/-/healthy" % port, *tls)[1] == 401   # every path is protected
    assert curl(url, *tls, "-u", "bob:other")[1] == 200
    # no client certificate: refused, in the handshake or with 403
    rc, code, _ = curl(url, "--cacert", os.path.join(d, "ca.crt"), "-u", "alice:s3cret")
    assert rc != 0 or code == 403, (rc, code)
    # plain HTTP to the TLS port fails cleanly, and the exporter serves on
    rc, code, _ = curl("http://127.0.0.1:%d/metrics" % port)
    assert code != 200, code
    assert p.poll() is None and curl(url, *tls, "-u", "alice:s3cret")[1] == 200
    assert procs.stop(p) == 0


def test_http_hygiene(procs):
    import urllib.request
    exp = Exporter(procs, EXPORTER, ["name=h,zmq=tcp://127.0.0.1:%d" % free_port()])
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        req = urllib.request.Request(exp.url + "/metrics", data=b"x" * 10, method=method)
        try:
            urllib.request.urlopen(req, timeout=scaled(5))
            raise AssertionError(method + " was served")
        except urllib.error.HTTPError as e:
            assert e.code == 405 and e.headers.get("Allow") == "GET, HEAD", (method, e.code)
    status, headers, body = http_get(exp.url + "/metrics")
    req = urllib.request.Request(exp.url + "/metrics", method="HEAD")
    with urllib.request.urlopen(req, timeout=scaled(5)) as r:
        assert r.status == 200 and r.read() == b""
    # an oversized request head is refused; the exporter carries on
    with socket.create_connection(("127.0.0.1", exp.port), timeout=scaled(5)) as c:
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
        try:
            reply = c.recv(64)
        except OSError:
            reply = b""
        assert not reply.startswith(b"HTTP/1.1 200"), reply
    # slowloris: 40 connections from another address that never finish their
    # headers (bounded: closed below)
    slow = []
    try:
        for _ in range(40):
            c = socket.create_connection(("127.0.0.1", exp.port), timeout=scaled(5), source_address=("127.0.0.3", 0))
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            slow.append(c)
        for _ in range(5):
            assert http_get(exp.url + "/metrics", timeout=5)[0] == 200
    finally:
        for c in slow:
            c.close()
    assert exp.proc.poll() is None and http_get(exp.url + "/-/healthy")[0] == 200


def test_runbook_served_where_the_alerts_point(procs):
    """Every alert's runbook_url is RUNBOOK_BASE#section; the exporter serves the
    same runbook at /runbook too, an offline copy with every one of those anchors
    and the version that matches it."""
    exp = Exporter(procs, EXPORTER, ["name=r,zmq=tcp://127.0.0.1:%d" % free_port()])
    status, headers, body = http_get(exp.url + "/runbook")
    page = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/html"), (status, headers)
    rules = open(os.path.join(os.path.dirname(__file__), "..", "..", "alerts", "mooncake-kv.rules.yml")).read()
    anchors = re.findall(r'runbook_url: "[^"#]+#([a-z0-9-]+)"', rules)
    assert len(anchors) == rules.count("- alert:") > 20
    missing = [a for a in anchors if 'id="%s"' % a not in page]
    assert not missing, missing
    assert "<code>--kv_events_queue_capacity</code>" in page  # the runbook's text, rendered
    assert 'href="/runbook"' in http_get(exp.url + "/")[2].decode()


def test_openmetrics_and_series_controls(procs):
    """The scraper's Accept chooses the format; --metrics.tenant-summary and
    --metrics.exclude leave families out of both; --metrics.all-series serves the
    series without news too."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.3", "ops:count=400", "wait"], seed=5, truth=False,
              extra=["--tenants", "3"])
    full = Exporter(procs, EXPORTER, [sim.source("f")])
    lean = Exporter(procs, EXPORTER, [sim.source("f")],
                    extra=["--metrics.tenant-summary", "--metrics.exclude", "process_.*|mooncake_kv_batch_events"])
    every = Exporter(procs, EXPORTER, [sim.source("f")], extra=["--metrics.all-series"])
    sim.start()
    for e in (full, lean, every):
        wait_for(lambda e=e: e.metrics().get("mooncake_kv_messages_received_total", source="f") > 0, 5, "events")
    om = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"

    def openmetrics(exp, gz):
        asked = {"Accept": om, "Accept-Encoding": "gzip"} if gz else {"Accept": om}
        status, headers, body = http_get(exp.url + "/metrics", asked)
        assert status == 200 and headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        assert "Accept" in headers["Vary"]
        assert (headers.get("Content-Encoding") == "gzip") == gz
        text = (gzip.decompress(body) if gz else body).decode()
        assert text.endswith("# EOF\n") and text.count("# EOF") == 1
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        assert not [n for n, k in types.items() if k == "counter" and n.endswith("_total")], \
            "counter families keep _total"
        # every sample belongs to the family announced before it
        family = None
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                family = line.split()[2]
            elif line and not line.startswith("#"):
                assert line.startswith(family), (family, line)
        return text, types

    text, types = openmetrics(full, False)
    assert types["mooncake_kv_messages_received"] == "counter"
    assert re.search(r'^mooncake_kv_messages_received_total\{source="f"\} [1-9]', text, re.M)
    assert re.search(r'^mooncake_kv_messages_received_created\{source="f"\} 1[0-9]{9}', text, re.M)
    assert "# UNIT mooncake_kv_event_lag_seconds seconds" in text
    # gzip: the same text, shaped a piece at a time on its way to the compressor
    ztext, ztypes = openmetrics(full, True)
    assert ztypes.items() >= types.items(), set(types.items()) - set(ztypes.items())
    assert re.search(r'^mooncake_kv_messages_received_created\{source="f"\} 1[0-9]{9}', ztext, re.M)
    assert "# HELP mooncake_kv_messages_received " in ztext
    # the same figures in the text format, which promtool checks
    m = full.metrics()
    promtool_check(m.text)
    per_tenant = lambda m: {k[0] for k in m.samples if ("tenant_id", "tenant-1") in k[1]}
    assert per_tenant(m) >= {"mooncake_kv_objects", "mooncake_kv_events_received_total",
                             "mooncake_kv_objects_by_medium"}
    # by default no series without news (the simulator's ops store no duplicate, clear nothing, and
    # overflow no limit); with --metrics.all-series the set served before, zeros and all
    news_only = {"mooncake_kv_objects_by_placement", "mooncake_kv_tenant_clears_total",
                 "mooncake_kv_tenant_objects_overflow_total"}
    assert not per_tenant(m) & news_only, per_tenant(m) & news_only
    em = every.metrics()
    assert per_tenant(em) >= per_tenant(m) | news_only | {"mooncake_kv_stored_duplicates_total",
                                                          "mooncake_kv_removed_unknown_total"}, per_tenant(em)
    L = dict(source="f", backend_id="mooncake-master-1", tenant_id="tenant-1")
    assert em.get("mooncake_kv_tenant_objects_overflow_total", **L) == 0
    for p in ("cpu_only", "disk_only", "cpu_and_disk"):
        assert em.get("mooncake_kv_objects_by_placement", placement=p, **L) == em.placement(p, **L), p
    # the lean exporter: four families per tenant, none of the excluded ones, in both formats
    lm = lean.metrics()
    promtool_check(lm.text)
    assert per_tenant(lm) == {"mooncake_kv_objects", "mooncake_kv_objects_by_medium", "mooncake_kv_state_stale",
                              "mooncake_kv_state_stale_since_timestamp_seconds"}, per_tenant(lm)
    assert len([k for k in lm.samples if ("tenant_id", "tenant-1") in k[1]]) == 5
    assert not [k for k in lm.samples if k[0].startswith("process_") or k[0].startswith("mooncake_kv_batch_events")]
    assert lm.get("mooncake_kv_objects", source="f", backend_id="mooncake-master-1", tenant_id="tenant-1") == \
        m.get("mooncake_kv_objects", source="f", backend_id="mooncake-master-1", tenant_id="tenant-1")
    for gz in (False, True):
        lom = openmetrics(lean, gz)[0]
        assert "process_" not in lom and "mooncake_kv_events_received" not in lom
        assert "# TYPE mooncake_kv_objects gauge" in lom


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
