# SPDX-License-Identifier: Apache-2.0
"""Integration tests of reconciliation with the master: the real simulator as
an upstream-shaped master that holds objects from before the exporter and
removes some without events, and a lying master for every way the
reconciliation can fail.

usage: test_reconcile.py EXPORTER SIM [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

from harness import Exporter, Procs, Sim, free_port, http_get, run_tests, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
SANITIZED = bool(os.environ.get("KVX_SANITIZED"))
FIGURES = ("objects", "cpu", "disk", "cpu_only", "disk_only", "cpu_and_disk")


def figures(m, source, tenant, backend="mooncake-master-1"):
    L = dict(source=source, backend_id=backend, tenant_id=tenant)
    return {"objects": m.get("mooncake_kv_objects", **L),
            "cpu": m.get("mooncake_kv_objects_by_medium", medium="cpu", **L),
            "disk": m.get("mooncake_kv_objects_by_medium", medium="disk", **L),
            **{p: m.placement(p, **L)
               for p in ("cpu_only", "disk_only", "cpu_and_disk")},
            "stale": m.get("mooncake_kv_state_stale", **L)}


def wait_truth(sim, timeout=60):
    """The truth the simulator writes at its `truth` phase (it then waits)."""
    wait_for(lambda: os.path.exists(sim.truth_path) or sim.proc.poll() is not None, timeout, "the truth phase")
    assert sim.proc.poll() is None, "sim exited: " + sim.procs.log(sim.proc)
    with open(sim.truth_path) as f:
        return json.load(f), time.time()


def reconciled_after(exp, source, t):
    """Waits for a reconciliation that started after t, and returns /metrics."""
    def done():
        m = exp.metrics()
        ts = m.find("mooncake_kv_reconcile_last_success_timestamp_seconds", source=source)
        dur = m.find("mooncake_kv_reconcile_duration_seconds", source=source)
        return ts and dur and list(ts.values())[0] - list(dur.values())[0] > t
    wait_for(done, 30, "a reconciliation after the truth")
    return exp.metrics()


def test_reconcile_makes_default_exact(procs):
    """A master (release v0.3.12) with objects from before the exporter, in default and
    two other tenants, that loses objects without events (BatchRemove, RemoveAll), drops
    events from its queue and restarts, with events flowing at a steady rate
    throughout.  After the last change, tenant default equals the master's true
    state and is not stale; the other tenants (which the listing does not
    cover) stay stale."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "steady:rate=3000,seconds=1.5", "batch-remove:count=300",
                           "burst:events=2000", "steady:rate=3000,seconds=1.5", "restart",
                           "steady:rate=3000,seconds=1.5", "clear:all", "steady:rate=3000,seconds=1.5",
                           "batch-remove:count=100", "truth", "wait"],
              seed=41, extra=["--mooncake", "v0.3.12", "--preload", "4000", "--tenants", "3", "--keys", "3000",
                              "--queue", "500"])
    exp = Exporter(procs, EXPORTER, ["name=r,zmq=%s,status=%s,reconcile=true" % (sim.zmq, sim.status_url)],
                   extra=["--master.reconcile-interval", "400ms"])
    sim.start()
    truth, t = wait_truth(sim)
    m = reconciled_after(exp, "r", t)
    master = {x["tenant_id"]: x for x in truth["master_tenants"]}
    got = figures(m, "r", "default")
    for f in FIGURES:
        assert got[f] == master["default"][f], (f, got, master["default"])
    assert got["stale"] == 0
    for other in ("tenant-1", "tenant-2"):
        assert figures(m, "r", other)["stale"] == 1
    ok = m.get("mooncake_kv_reconciliations_total", source="r", result="ok")
    assert ok >= 3, ok  # at start-up, after the gap, after the restart (at least)
    assert m.get("mooncake_kv_reconcile_corrections_total", source="r", kind="added") > 0  # the preload
    assert m.get("mooncake_kv_reconcile_corrections_total", source="r", kind="removed") > 0  # silent removals
    assert m.get("mooncake_kv_reconcile_listed_keys", source="r") >= master["default"]["objects"]
    assert m.get("mooncake_kv_stale_tenants", source="r", reason="reconcile_incomplete") == 0
    assert truth["silent_removals"] > 0 and truth["gaps"] >= 1 and truth["restarts"] == 1
    log = procs.log(exp.proc)
    assert 'msg="reconciled a tenant with the master"' in log and "cause=startup" in log
    assert log.count("cause=stale") >= 2, log  # after the gap and after the restart (and RemoveAll's drift)


def test_drift_of_a_default_only_master(procs):
    """All objects in tenant default (release v0.3.12, whose BatchRemove is silent):
    the master's key count tells the drift, and a reconciliation follows it."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "burst:events=800", "sleep:seconds=3", "batch-remove:count=600",
                           "truth", "wait"], seed=43,
              extra=["--mooncake", "v0.3.12", "--preload", "1500", "--tenants", "1", "--keys", "2000",
                     "--foreign-keys", "0"])
    # a long interval: only start-up and drift may call for one within the test
    exp = Exporter(procs, EXPORTER, ["name=d,zmq=%s,status=%s,reconcile=true" % (sim.zmq, sim.status_url)],
                   extra=["--master.reconcile-interval", "2s"])
    sim.start()
    truth, t = wait_truth(sim)
    m = reconciled_after(exp, "d", t)
    master = truth["master_tenants"][0]
    assert figures(m, "d", "default")["objects"] == master["objects"]
    assert m.get("mooncake_kv_master_keys", source="d") == master["objects"]
    assert "cause=drift" in procs.log(exp.proc)


def test_replay_overflow_aborts(procs):
    """More events arrive during the listing than --master.reconcile-max-replay:
    the attempt is abandoned and counted, the stream's view stays."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "steady:rate=20000,seconds=6", "truth", "wait"], seed=47,
              extra=["--preload", "1500000", "--tenants", "1", "--keys", "300000"])
    exp = Exporter(procs, EXPORTER, ["name=o,zmq=%s,status=%s,reconcile=true" % (sim.zmq, sim.status_url)],
                   extra=["--master.reconcile-max-replay", "1000", "--master.reconcile-interval", "100ms"])
    sim.start()
    wait_for(lambda: exp.metrics().find("mooncake_kv_reconciliations_total", source="o", result="aborted")
             .get(frozenset({("source", "o"), ("result", "aborted")}), 0) >= 1, 30, "an aborted reconciliation")
    assert "more events than --master.reconcile-max-replay" in procs.log(exp.proc)
    m = exp.metrics()
    assert figures(m, "o", "default")["stale"] == 1  # never adopted


class Lying(http.server.BaseHTTPRequestHandler):
    """A master whose first listing is good (5 keys) and whose later answers
    fail in the way the path's first segment names."""
    GOOD = ["k1", "k2", "k3", "k4", "k5"]
    served = {}

    def send(self, code, body, ctype="text/plain", length=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        mode, _, rest = u.path.strip("/").partition("/")
        if rest == "kv_events/status":
            return self.send(200, b'{"enabled":true,"published_batches":0,"published_events":0,'
                                  b'"dropped_events":0,"skipped_unparsed_keys":0}', "application/json")
        if rest == "metrics":
            return self.send(200, b"master_key_count 5\n")
        n = Lying.served.get((mode, rest), 0)
        Lying.served[(mode, rest)] = n + 1
        first = n == 0 and mode != "odd"
        if rest == "get_all_keys":
            if first or mode in ("garbage", "odd"):
                keys = self.GOOD if mode != "odd" else ["ok1", "a,b", "\u00e9t\u00e9", "ok2"]
                body = "".join(k + "\n" for k in keys).encode()
                if mode == "odd":
                    body += b"bad\xff\xfeutf8\n"
                return self.send(200, body)
            if mode == "s503":
                return self.send(503, b'{"success":false,"error_code":-1011,"error_message":"service plane is not active"}')
            if mode == "e500":
                return self.send(500, b"internal error")
            if mode == "trunc":
                return self.send(200, b"k1\nk2\nk", length=10000)  # the connection closes early
            if mode == "big":
                return self.send(200, "".join("key%d\n" % i for i in range(100)).encode())
        if rest == "batch_query_keys":
            keys = urllib.parse.parse_qs(u.query).get("keys", [""])[0].split(",")
            if mode == "garbage" and Lying.served.get((mode, "get_all_keys"), 0) > 1:
                return self.send(200, b'{"success":true,"data":[1,2', "application/json")
            data = {k: {"ok": True, "values": [{"transport_endpoint_": "h:1"}],
                        **({"local_disk_values": [{"client_id": "c"}]} if k.endswith("2") else {})}
                    for k in keys}
            return self.send(200, json.dumps({"success": True, "data": data}).encode(), "application/json")
        self.send(404, b"no")

    def log_message(self, *a):
        pass


def test_reconcile_failures_keep_the_state(procs):
    """500, garbage JSON, a truncated listing, a listing over the limit, keys
    that cannot be asked about: each counted, the state before the attempt kept,
    /metrics answering throughout.  A 503 is a standby: not asked, not counted."""
    Lying.served = {}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Lying)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    cases = {"s503": None, "e500": "failed", "garbage": "failed", "trunc": "failed", "big": "aborted",
             "odd": "ok"}
    srcs = ["name=%s,zmq=tcp://127.0.0.1:%d,status=%s/%s,reconcile=true,backend=b1" % (n, free_port(), base, n)
            for n in cases]
    try:
        exp = Exporter(procs, EXPORTER, srcs, extra=["--master.reconcile-interval", "300ms",
                                                     "--master.reconcile-max-keys", "50"])

        def counted():
            m = exp.metrics()
            return all(m.find("mooncake_kv_reconciliations_total", source=n, result=r)
                       and m.get("mooncake_kv_reconciliations_total", source=n, result=r) >= 2
                       for n, r in cases.items() if r)
        wait_for(counted, 30, "every way of failing counted twice")
        m = exp.metrics()
        for n, result in cases.items():
            f = figures(m, n, "default", backend="b1")
            if n == "odd":
                # a key with a comma and one that is not UTF-8 cannot be asked about
                assert f["objects"] == 3 and f["disk"] == 1, f
                assert f["stale"] == 1
                assert m.get("mooncake_kv_stale_tenants", source=n, reason="reconcile_incomplete") == 1
                continue
            # the first listing was good: its 5 objects stay through the failures
            assert f["objects"] == 5 and f["stale"] == 0, (n, f)
            assert m.get("mooncake_kv_reconciliations_total", source=n, result="ok") == 1, n
            if result is None:
                assert sum(m.find("mooncake_kv_reconciliations_total", source=n).values()) == 1, n
        log = procs.log(exp.proc)
        assert "longer than --master.reconcile-max-keys" in log
        assert http_get(exp.url + "/-/healthy")[0] == 200
    finally:
        srv.shutdown()


def test_reconcile_flags(procs):
    import subprocess

    def run(*args):
        return subprocess.run([EXPORTER] + list(args), capture_output=True, timeout=scaled(10), text=True)
    for bad, why in ((["--source", "name=a,zmq=tcp://a:1,reconcile=true"], "needs the master's admin URL"),
                     (["--source", "name=a,zmq=tcp://a:1,status=http://a:2,reconcile=yes"], "true or false"),
                     (["--source", "name=a,zmq=tcp://a:1,backend="], "needs a backend_id"),
                     (["--master.reconcile", "--source", "name=a,zmq=tcp://a:1,status=http://a:2"],
                      "is for the --zmq.endpoint source"),
                     (["--zmq.endpoint", "tcp://a:1", "--master.reconcile"], "needs the master's admin URL")):
        r = run(*bad)
        assert r.returncode == 2 and why in r.stderr, (bad, r.stderr)
    assert "--master.reconcile-interval" in run("--help").stdout


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
