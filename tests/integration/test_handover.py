# SPDX-License-Identifier: Apache-2.0
"""Integration tests of the state handover (--state.serve, --state.peer; README,
"Restarts and upgrades"): exporter A watches a store from empty; exporter B starts
from A while the simulator publishes 20,000 operations a second, and equals A and
the simulator's truth for every tenant, medium, key group and lifetime bucket; A
loses nothing while it serves; then A restarts from B and equals it again.  Whether
the master lists tenants comes with the state: B knows it at once and reconciles a
tenant that turns stale without a periodic turn of its own.  And
what is never taken: a peer of another store, one that is not there, one that
stalls, one whose copy was corrupted on the way: the new exporter starts as
without a peer, and says why.
Ground truth: the simulator's model of its master and of what an ideal subscriber
of the dialect can know.

usage: test_handover.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import http.server
import os
import sys
import threading
import time
import urllib.request

from harness import Exporter, Sim, free_port, run_tests, wait_for
from harness import check_truth, promtool_check, settle
from test_exact import FromEmpty, check_master
from test_residency import check_residency

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
GROUPS = ["--key.group-regex", "^(?<model>[^/]+)/"]


def tenant_lines(exp, source):
    """Every series of a source that names a tenant, but for the age of its
    objects (it moves with the clock between two scrapes)."""
    text = urllib.request.urlopen(exp.url + "/metrics", timeout=10).read().decode()
    return sorted(l for l in text.splitlines()
                  if 'tenant_id="' in l and ('source="%s"' % source) in l and not l.startswith("#")
                  and not l.startswith("mooncake_kv_object_age_mean_seconds"))


def same_as(a, b, source, what):
    """Waits until b's per-tenant series equal a's (both have every message)."""
    last = {}

    def equal():
        last["a"], last["b"] = tenant_lines(a, source), tenant_lines(b, source)
        return last["a"] == last["b"] and len(last["a"]) > 50
    try:
        wait_for(equal, 15, what)
    except AssertionError:
        diff = sorted(set(last["a"]) ^ set(last["b"]))[:10]
        raise AssertionError("%s: differ in %s" % (what, diff))


def boot(m, source, result):
    return m.get("mooncake_kv_bootstrap_total", source=source, result=result)


def test_handover_under_traffic(procs):
    """A from empty; B takes A's state while 20,000 operations a second flow, then A
    restarts from B: each equal to the other and to the truth, every tenant exact."""
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=20000,seconds=9", "sleep:seconds=0.5", "truth", "wait"],
              seed=501, extra=["--tenants", "4", "--keys", "3000", "--foreign-keys", "0"])
    a = Exporter(procs, EXPORTER, [sim.source("h")], extra=["--state.serve"] + GROUPS)
    sim.start()
    gate.open(a, "h")
    wait_for(lambda: a.metrics().get("mooncake_kv_messages_received_total", source="h") > 200, 10,
             "A has taken in traffic")
    t0 = time.time()
    b = Exporter(procs, EXPORTER, [sim.source("h")], extra=["--state.serve", "--state.peer", a.url] + GROUPS)
    took_s = time.time() - t0
    log_b = procs.log(b.proc)
    assert "state taken from a peer" in log_b, log_b[-2000:]
    assert "serving the state to a peer" in procs.log(a.proc)
    mb = b.metrics()
    assert boot(mb, "h", "taken") == 1, mb.find("mooncake_kv_bootstrap_total")
    wait_for(lambda: b.metrics().get("mooncake_kv_bootstrap_joins_total", source="h", result="continued") == 1,
             10, "B's stream proved it continues A's")
    # A restarts from B while the traffic flows
    wait_for(lambda: b.metrics().get("mooncake_kv_messages_received_total", source="h") > 200, 10,
             "B has taken in traffic")
    # A lost nothing while it served the copy
    ma = a.metrics()
    for name in ("mooncake_kv_sequence_gaps_total", "mooncake_kv_sequence_missing_total",
                 "mooncake_kv_transport_lost_events_total"):
        assert ma.get(name, source="h") == 0, (name, ma.get(name, source="h"))
    procs.stop(a.proc)
    a2 = Exporter(procs, EXPORTER, [sim.source("h")], extra=["--state.peer", b.url] + GROUPS)
    assert "state taken from a peer" in procs.log(a2.proc)
    truth = sim.truth_written()
    assert truth["gaps"] == 0 and truth["restarts"] == 0
    m = settle(b, dict(truth, messages=0), "h")
    same_as(b, a2, "h", "A, restarted from B, equals B")
    for exp in (b, a2):
        m = exp.metrics()
        assert m.get("mooncake_kv_bootstrap_joins_total", source="h", result="continued") == 1
        assert m.get("mooncake_kv_bootstrap_joins_total", source="h", result="broken") == 0
        assert m.get("mooncake_kv_sequence_gaps_total", source="h") == 0
        assert m.get("mooncake_kv_watched_from_empty", source="h") == 1
        # every tenant exact and equal to the truth: objects, media, events, lives
        for t in truth["tenants"]:
            L = dict(source="h", backend_id=t["backend_id"], tenant_id=t["tenant_id"])
            assert m.get("mooncake_kv_state_stale", **L) == 0, L
            assert m.get("mooncake_kv_objects", **L) == t["objects"], (L, t["objects"])
            for p in ("cpu_only", "disk_only", "cpu_and_disk"):
                assert m.placement(p, **L) == t[p], (L, p)
            for e in ("stored", "removed"):
                assert m.news("mooncake_kv_events_received_total", event_type=e, **L) == t[e], (L, e)
        seen, unseen = check_residency(m, truth, "h", groups=True)
        assert seen > 1000 and unseen == 0, (seen, unseen)
        promtool_check(m.text)
    print("  (B started from A in %.2f s, traffic flowing)" % took_s)


def test_lists_tenants_carried(procs):
    """A reconciles every tenant of a master that lists tenants (every reconcile
    interval a second) and so knows it does; B takes A's state with an interval of
    10 minutes, so its own periodic turn is an hour away: right after the handover B
    serves mooncake_kv_master_lists_tenants 1, and when the master's quota evicts
    tenant-2's objects without an event (release v0.3.12), B reconciles it at once,
    equal to what the master holds."""
    handed = os.path.join(procs.dir, "handed")
    done = os.path.join(procs.dir, "done")
    sim = Sim(procs, SIM, ["steady:rate=1500,until=" + handed, "quota-evict:count=300,tenant=2",
                           "steady:rate=1500,until=" + done, "sleep:seconds=0.5", "truth", "wait"],
              seed=504, extra=["--tenants", "4", "--keys", "400", "--preload", "600", "--lists-tenants", "yes",
                               "--mooncake", "v0.3.12", "--quotas", "on", "--quota-bytes", "100000000"])
    a = Exporter(procs, EXPORTER, [sim.source("l") + ",reconcile=true"],
                 extra=["--state.serve", "--master.reconcile-interval", "1s"])
    sim.start()

    def knows(exp):
        got = exp.metrics().find("mooncake_kv_master_lists_tenants", source="l", member=sim.status_addr)
        return next(iter(got.values()), None)  # None while absent

    def all_exact(exp):
        stale = exp.metrics().find("mooncake_kv_state_stale", source="l")
        return len(stale) == 4 and set(stale.values()) == {0}
    wait_for(lambda: knows(a) == 1 and all_exact(a), 30, "A reconciled every tenant and knows the master lists them")
    b = Exporter(procs, EXPORTER, [sim.source("l") + ",reconcile=true"],
                 extra=["--state.peer", a.url, "--master.reconcile-interval", "10m"])
    seen = {}

    def taken():
        seen["m"] = b.metrics()
        return sum(seen["m"].find("mooncake_kv_bootstrap_total", source="l").values()) > 0
    wait_for(taken, 10, "B took A's state")
    m = seen["m"]  # the first scrape after the take (the take counts and sets under one lock)
    assert boot(m, "l", "taken") == 1, m.find("mooncake_kv_bootstrap_total")
    # at once: the handover said it, no tenant of B was due
    assert m.find("mooncake_kv_master_lists_tenants", source="l", member=sim.status_addr), \
        "B does not know whether the master lists tenants"
    assert m.get("mooncake_kv_master_lists_tenants", source="l", member=sim.status_addr) == 1
    wait_for(lambda: b.metrics().get("mooncake_kv_bootstrap_joins_total", source="l", result="continued") == 1,
             10, "B's stream proved it continues A's")
    assert all_exact(b)
    procs.stop(a.proc)  # B alone from here
    ok_before = b.metrics().get("mooncake_kv_reconciliations_total", source="l", result="ok")
    open(handed, "w").close()
    wait_for(lambda: b.metrics().get("mooncake_kv_tenant_stale_transitions_total", source="l",
                                     reason="quota_eviction") == 1, 20, "the eviction turns tenant-2 stale in B")
    wait_for(lambda: all_exact(b), 30, "B reconciled tenant-2, traffic flowing")
    m = b.metrics()
    assert m.get("mooncake_kv_reconciliations_total", source="l", result="ok") > ok_before
    assert m.get("mooncake_kv_tenant_exact_transitions_total", source="l", cause="reconciled") >= 1
    open(done, "w").close()
    truth = sim.truth_written()
    assert truth["silent_removals"] > 0 and truth["gaps"] == 0 and truth["restarts"] == 0
    m = settle(b, dict(truth, messages=0), "l")  # B counts only the messages it received
    for tenant in ("default", "tenant-1", "tenant-2", "tenant-3"):
        check_master(m, truth, "l", tenant)


def test_refusals(procs):
    """Peers that give nothing to take: not there, of another store, stalling, a
    corrupted copy.  Each is counted and logged; the exporter starts as without a
    peer (stale since start-up), and a good peer after them is still taken."""
    sim = Sim(procs, SIM, ["steady:rate=2000,seconds=30", "wait"], seed=502, extra=["--tenants", "2"])
    other = Sim(procs, SIM, ["steady:rate=2000,seconds=30", "wait"], seed=503, extra=["--tenants", "2"])
    sim.start()
    other.start()
    a = Exporter(procs, EXPORTER, [sim.source("r")], extra=["--state.serve"])
    o = Exporter(procs, EXPORTER, [other.source("other")], extra=["--state.serve"])
    wait_for(lambda: a.metrics().get("mooncake_kv_messages_received_total", source="r") > 20, 10, "A has traffic")
    copy = urllib.request.urlopen(a.url + "/state", timeout=10).read()
    assert copy[:1] == b"\x01" and len(copy) > 100

    class Fake(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/stall"):
                time.sleep(5)
                return
            body = bytearray(copy)  # /old: a whole copy, but seconds old
            if self.path.startswith("/corrupt"):
                body[len(body) // 2] ^= 0x10  # one bit flipped on the way
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(bytes(body))

        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    fake = "http://127.0.0.1:%d" % srv.server_address[1]
    closed = "http://kvx:secret-word@127.0.0.1:%d" % free_port()  # credentials are never logged
    try:
        peers = ["--state.peer", closed, "--state.peer", o.url, "--state.peer", fake + "/stall",
                 "--state.peer", fake + "/corrupt", "--state.peer-timeout", "1s"]
        b = Exporter(procs, EXPORTER, [sim.source("r")], extra=peers)
        m = b.metrics()
        for result in ("unreachable", "absent", "timeout", "checksum"):
            assert boot(m, "r", result) == 1, (result, m.find("mooncake_kv_bootstrap_total"))
        assert boot(m, "r", "taken") == 0
        log = procs.log(b.proc)
        for result in ("unreachable", "absent", "timeout", "checksum"):
            assert "result=" + result in log, (result, log[-3000:])
        assert "secret-word" not in log and "http://***@127.0.0.1:" in log, log[-3000:]
        wait_for(lambda: b.metrics().get("mooncake_kv_messages_received_total", source="r") > 0, 10, "B ingests")
        m = b.metrics()
        assert m.get("mooncake_kv_stale_tenants", source="r", reason="startup") >= 1
        assert m.get("mooncake_kv_stale_tenants", source="r", reason="bootstrap") == 0
        # the same refusals, then a good peer: taken
        c = Exporter(procs, EXPORTER, [sim.source("r")], extra=peers[:2] + ["--state.peer", a.url])
        m = c.metrics()
        assert boot(m, "r", "unreachable") == 1 and boot(m, "r", "taken") == 1
        # another store under the same name (its master elsewhere): not taken
        d = Exporter(procs, EXPORTER, [sim.source("other")], extra=["--state.peer", o.url])
        assert boot(d.metrics(), "other", "mismatch") == 1
        # a peer behind the queue: its copy is whole, but older than anything this
        # exporter's stream holds: taken, and refuted by the first message
        e = Exporter(procs, EXPORTER, [sim.source("r")], extra=["--state.peer", fake + "/old"])
        assert boot(e.metrics(), "r", "taken") == 1
        wait_for(lambda: e.metrics().get("mooncake_kv_bootstrap_joins_total", source="r", result="broken") == 1,
                 10, "the old copy is refuted by the stream")
        m = e.metrics()
        assert m.get("mooncake_kv_stale_tenants", source="r", reason="bootstrap") >= 1
        assert all(v == 1 for v in m.find("mooncake_kv_state_stale", source="r").values())
        assert "not provably continuous" in procs.log(e.proc)
    finally:
        srv.shutdown()


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
