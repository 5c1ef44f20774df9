# SPDX-License-Identifier: Apache-2.0
"""The master's faults: masters down, slow, answering errors, junk, wrong
field types and huge bodies; a master standing by, then promoted; a
publisher killed for good.  Each is counted by reason, logged once, and the
exporter serves on.

usage: test_master_faults.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import http.server
import socket
import sys
import threading

from harness import Exporter, Sim, check_truth, free_port, http_get, promtool_check, run_tests, settle, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


HUGE_BODY = b"{" + b" " * (100 << 20) + b"}"  # 100 MB, built once


class Replies(http.server.BaseHTTPRequestHandler):
    """A lying master: the reply depends on the path prefix the test picked."""
    reads_fail = True  # "reads": its status is good; its /metrics and quotas fail while this holds

    def do_GET(self):
        kind = self.path.strip("/").split("/")[0]
        if kind == "reads":
            kind = "ok" if self.path.endswith("/kv_events/status") else self.path[len("/reads"):]
            if kind == "/metrics":
                kind = "err500" if Replies.reads_fail else "keys"
            elif kind == "/api/v1/tenant_quotas":
                kind = "garbage" if Replies.reads_fail else "quotas"
        bodies = {
            "keys": (200, b"# TYPE master_key_count gauge\nmaster_key_count 5\n"),
            "quotas": (200, b'{"success":true,"data":[]}'),
            "err500": (500, b"internal error"),
            "garbage": (200, b"<html>not json"),
            "wrongtypes": (200, b'{"enabled":"yes","published_batches":1,"published_events":1,'
                                b'"dropped_events":0,"skipped_keyless_events":0}'),
            "huge": (200, HUGE_BODY),
            "ok": (200, b'{"enabled":true,"published_batches":3,"published_events":9,'
                        b'"dropped_events":0,"skipped_unparsed_keys":1}'),
        }
        code, body = bodies.get(kind, (404, b"no"))
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *a):
        pass


def test_master_down_slow_lying(procs):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Replies)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)  # accepts (in the kernel) and never answers
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    dead = free_port()
    cases = {
        "down": ("http://127.0.0.1:%d" % dead, "connect"),
        "slow": ("http://127.0.0.1:%d" % hang.getsockname()[1], "timeout"),
        "e500": (base + "/err500", "http_status"),
        "junk": (base + "/garbage", "parse"),
        "types": (base + "/wrongtypes", "field"),
        "huge": (base + "/huge", "body_too_large"),
        "ok": (base + "/ok", None),
    }
    srcs = ["name=%s,zmq=tcp://127.0.0.1:%d,status=%s" % (n, free_port(), u) for n, (u, _) in cases.items()]
    try:
        # the bound on a read from timing.py: the answers of this test's own server are late on a
        # loaded machine, and a late one is counted `timeout`, not its own reason
        bound = "%dms" % round(1000 * scaled(0.2))
        exp = Exporter(procs, EXPORTER, srcs, extra=["--master.poll-interval", bound, "--master.timeout", bound])

        def all_polled():
            m = exp.metrics()
            return all(sum(m.find("mooncake_kv_master_poll_errors_total", source=n).values()) >= 2
                       for n, (_, r) in cases.items() if r)
        wait_for(all_polled, 10, "every bad master was polled twice")
        m = exp.metrics()
        for n, (_, reason) in cases.items():
            errs = m.find("mooncake_kv_master_poll_errors_total", source=n)
            if reason is None:
                assert m.get("mooncake_kv_master_up", source=n) == 1
                assert m.get("mooncake_kv_master_unparsed_keys_total", source=n) == 1
                assert not m.find("mooncake_kv_master_skipped_keyless_events_total", source=n)
                assert sum(errs.values()) == 0
                continue
            assert m.get("mooncake_kv_master_up", source=n) == 0, n
            for labels, v in errs.items():
                r = dict(labels)["reason"]
                assert (v >= 2) if r == reason else (v == 0), (n, r, v)
        promtool_check(m.text)
        # one warning per master going down, not one per failed poll
        log = procs.log(exp.proc)
        assert log.count('msg="master status poll failed"') == len(cases) - 1, log
    finally:
        srv.shutdown()
        hang.close()


def test_master_reads_fail_then_recover(procs):
    """A master whose status is good but whose /metrics answers 500 and whose
    quotas are junk: each failed read counted by reason, each told once in the
    log, not once a poll; then both read again, and that is told once too."""
    Replies.reads_fail = True
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Replies)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/reads" % srv.server_address[1]
    try:
        exp = Exporter(procs, EXPORTER, ["name=r,zmq=tcp://127.0.0.1:%d,status=%s" % (free_port(), base)],
                       extra=["--master.poll-interval", "200ms"])

        def errors(fam, reason):
            return exp.metrics().get(fam, source="r", reason=reason) or 0
        wait_for(lambda: errors("mooncake_kv_master_keys_poll_errors_total", "http_status") >= 3
                 and errors("mooncake_kv_master_quota_poll_errors_total", "parse") >= 3, 10,
                 "three failed reads of each")
        log = procs.log(exp.proc)
        failed = [l for l in log.splitlines() if 'msg="master read failed' in l]
        assert len(failed) == 2, failed
        assert any(" url=%s/metrics reason=http_status" % base in l for l in failed), failed
        assert any(" url=%s/api/v1/tenant_quotas reason=parse" % base in l for l in failed), failed
        assert exp.metrics().get("mooncake_kv_master_up", source="r") == 1  # the status polls are fine

        Replies.reads_fail = False
        wait_for(lambda: list(exp.metrics().find("mooncake_kv_master_keys", source="r").values()) == [5], 10,
                 "the key count read")
        wait_for(lambda: procs.log(exp.proc).count('msg="master read ok"') == 2, 10, "both reads told ok")
        log = procs.log(exp.proc)
        assert log.count('msg="master read failed') == 2, log
        m = exp.metrics()
        assert m.get("mooncake_kv_tenant_quotas_enabled", source="r") == 1
        promtool_check(m.text)
    finally:
        srv.shutdown()


def test_standby_master(procs):
    # upstream: a standby has no publisher; its promotion starts a new one at 1
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=300", "standby:seconds=1.5", "ops:count=200",
                           "sleep:seconds=0.5", "truth", "wait"], seed=3)
    # reconciling too: a standby is not asked, and that is no failure
    exp = Exporter(procs, EXPORTER, [sim.source("s") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "200ms"])
    sim.start()
    wait_for(lambda: exp.metrics().get("mooncake_kv_master_standby", source="s") == 1, 5, "standby shows")
    m = exp.metrics()
    assert m.get("mooncake_kv_master_up", source="s") == 1
    # a standby no longer describes the store: its tenant figures go (no sum counts the store twice),
    # and a standby is healthy: ready, and role standby
    assert m.find("mooncake_kv_objects", source="s") == {}
    assert sum(m.find("mooncake_kv_stale_tenants", source="s").values()) == 0
    assert m.get("mooncake_kv_master_role", source="s", member=sim.status_addr, role="standby") == 1
    assert m.get("mooncake_kv_master_leader", source="s", member=sim.status_addr) == 0
    assert http_get(exp.url + "/-/ready")[0] == 200
    errors = m.find("mooncake_kv_master_poll_errors_total", source="s")
    wait_for(lambda: exp.metrics().get("mooncake_kv_master_standby", source="s") == 0, 5, "standby ends")
    # a standby is not an error: nothing was counted while it lasted
    assert exp.metrics().find("mooncake_kv_master_poll_errors_total", source="s") == errors
    assert m.get("mooncake_kv_master_poll_errors_total", source="s", reason="http_status") == 0
    truth = sim.truth_written()  # the master keeps answering while we check
    settle(exp, truth, "s")
    # the promotion left every tenant stale: default is reconciled at its next turn, after the poll
    # that saw the promotion (a loaded machine can take longer than the stream's tail)
    def reconciled():
        m = exp.metrics()
        stale = m.find("mooncake_kv_state_stale", source="s", tenant_id="default")
        return m.get("mooncake_kv_reconciliations_total", source="s", result="ok") >= 1 and \
            stale and not any(stale.values())
    wait_for(reconciled, 10, "default is reconciled after the promotion")
    m = exp.metrics()
    assert m.get("mooncake_kv_reconciliations_total", source="s", result="failed") == 0
    # tenant default is the master's own state now; the others what the stream told since the promotion
    check_truth(m, truth, "s", reconciled=("default",), objects=truth["tenants_since_promotion"])
    # the promotion moved the view: a failover, and the leader again
    assert m.get("mooncake_kv_master_failovers_total", source="s") == truth["failovers"] == 1
    assert m.get("mooncake_kv_master_leader", source="s", member=sim.status_addr) == 1
    assert m.get("mooncake_kv_master_view_version", source="s") == truth["view_version"] == 2


def test_publisher_killed_for_good(procs):
    sim = Sim(procs, SIM, ["sleep:seconds=0.3", "ops:count=2000", "wait"], seed=31, truth=False)
    exp = Exporter(procs, EXPORTER, [sim.source("k")])
    sim.start()
    wait_for(lambda: exp.metrics().get("mooncake_kv_messages_received_total", source="k") > 0, 5, "events arrive")
    sim.proc.kill()
    sim.proc.wait()
    wait_for(lambda: exp.metrics().get("mooncake_kv_subscriber_connected", source="k") == 0, 5, "disconnect shows")
    wait_for(lambda: exp.metrics().get("mooncake_kv_master_up", source="k") == 0, 5, "master down shows")
    m = exp.metrics()
    assert m.get("mooncake_kv_objects", source="k", backend_id="mooncake-master-1", tenant_id="default") >= 0
    assert exp.proc.poll() is None and http_get(exp.url + "/-/healthy")[0] == 200


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
