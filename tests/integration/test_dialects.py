# SPDX-License-Identifier: Apache-2.0
"""Integration tests of the two dialects (docs/upstream.md): the simulator plays
release v0.3.12's master (object), Mooncake main since #3818 or dev/conductor (both the
subscriber guide: media); the exporter must tell which from the master's status fields
and be exact against each.

usage: test_dialects.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import json
import os
import sys

from harness import Exporter, Sim, run_tests, wait_for
from harness import check_truth, promtool_check, settle

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
FIGURES = ("objects", "cpu", "disk", "cpu_only", "disk_only", "cpu_and_disk")


def figures(m, source, t):
    L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
    return {"objects": m.get("mooncake_kv_objects", **L),
            "cpu": m.get("mooncake_kv_objects_by_medium", medium="cpu", **L),
            "disk": m.get("mooncake_kv_objects_by_medium", medium="disk", **L),
            **{p: m.placement(p, **L)
               for p in ("cpu_only", "disk_only", "cpu_and_disk")}}


def dialect_of(m, source):
    got = m.find("mooncake_kv_publisher_dialect", source=source)
    assert len(got) == 1 and list(got.values()) == [1], got
    return dict(list(got)[0])["dialect"]


def default_reconciled(exp, sim, source):
    """Waits for the simulator's truth (its `truth` phase), then until tenant default
    equals the master's; returns the truth."""
    wait_for(lambda: os.path.exists(sim.truth_path), 30, "the truth")
    truth = json.load(open(sim.truth_path))
    t = {"backend_id": truth["tenants"][0]["backend_id"], "tenant_id": "default"}
    want = {f: x[f] for x in truth["master_tenants"] if x["tenant_id"] == "default" for f in FIGURES}
    wait_for(lambda: figures(exp.metrics(), source, t) == want, 30, "tenant default reconciled to the master")
    return truth


def settled(procs, source, phases, seed, extra):
    """The simulator through `phases`, and the exporter once it has every message:
    (the exporter's /metrics, the truth, the master's tenants by id)."""
    sim = Sim(procs, SIM, phases, seed=seed, extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.source(source)])
    truth = sim.start().wait()
    m = settle(exp, truth, source)
    return exp, m, truth, {t["tenant_id"]: t for t in truth["master_tenants"]}


def test_release_object_counts_equal_the_master(procs):
    """Release v0.3.12's master (main at 3b5a594), 20,000 operations at full speed
    (puts of one and of two replicas, removes, evictions of either tier, offloads,
    upserts): every tenant's object count equals what the master holds, the media mix
    what the puts announced, and auto says object."""
    exp, m, truth, master = settled(procs, "o", ["sleep:seconds=0.5", "ops:count=20000", "sleep:seconds=0.6"],
                                    201, ["--mooncake", "v0.3.12", "--tenants", "5", "--keys", "3000"])
    assert truth["dialect"] == "object" and "invalid_event_hashes" not in truth["status"]
    check_truth(m, truth, "o")
    assert dialect_of(m, "o") == "object"
    for t in truth["tenants"]:
        got = figures(m, "o", t)
        assert got["objects"] == master[t["tenant_id"]]["objects"], (t["tenant_id"], got, master[t["tenant_id"]])
    # the tier changes main publishes nothing for: the media announced are not the master's
    assert any(t["disk"] != master[t["tenant_id"]]["disk"] for t in truth["tenants"])
    # what the media dialect would have made of the same stream: objects left behind
    assert sum(t["removed"] for t in truth["tenants"]) > 1000
    assert sum(m.find("mooncake_kv_removed_unknown_total", source="o").values()) == 0
    log = procs.log(exp.proc)
    assert 'msg="publisher dialect"' in log and "dialect=object reason=status_fields" in log, log[-2000:]
    promtool_check(m.text)


def guide_master_everything_exact(procs, mooncake, seed):
    exp, m, truth, master = settled(procs, "g", ["sleep:seconds=0.5", "ops:count=20000", "clear:all",
                                                 "ops:count=3000", "sleep:seconds=0.6"],
                                    seed, ["--mooncake", mooncake, "--tenants", "5", "--keys", "3000"])
    assert truth["dialect"] == "media" and truth["mooncake"] == mooncake
    if mooncake == "conductor":
        assert truth["status"]["invalid_event_hashes"] == 0
    else:  # the guide's five fields
        assert "invalid_event_hashes" not in truth["status"] and "skipped_keyless_events" in truth["status"]
    check_truth(m, truth, "g")
    assert dialect_of(m, "g") == "media"
    for t in truth["tenants"]:
        got = figures(m, "g", t)
        want = {f: master[t["tenant_id"]][f] for f in FIGURES}
        assert got == want, (t["tenant_id"], got, want)
        assert not t["stale"]  # the clear made each tenant exact, and nothing was lost since
    assert m.get("mooncake_kv_events_received_total", source="g", backend_id=truth["tenants"][0]["backend_id"],
                 tenant_id="default", event_type="cleared") == 1
    log = procs.log(exp.proc)
    assert "dialect=media reason=status_fields" in log, log[-2000:]


def test_guide_master_everything_exact(procs):
    """The guide's publisher as dev/conductor has it (its status fields): auto says
    media, and every figure, media included, equals the master's."""
    guide_master_everything_exact(procs, "conductor", 202)


def test_main_master_everything_exact(procs):
    """Mooncake main since #3818 (the guide's five status fields): auto says media,
    and every figure, media included, equals the master's."""
    guide_master_everything_exact(procs, "main", 205)


def test_auto_tells_each_master(procs):
    """Each of the three masters, told by its status fields alone: release v0.3.12
    object, main since #3818 and dev/conductor media; and the simulator plays main
    unless told otherwise."""
    for i, (extra, mooncake, dialect) in enumerate([([], "main", "media"),
                                                     (["--mooncake", "v0.3.12"], "v0.3.12", "object"),
                                                     (["--dialect", "object"], "v0.3.12", "object"),
                                                     (["--mooncake", "conductor"], "conductor", "media"),
                                                     (["--dialect", "media"], "conductor", "media")]):
        src = "a%d" % i
        exp, m, truth, _ = settled(procs, src, ["sleep:seconds=0.5", "ops:count=500", "sleep:seconds=0.6"],
                                   206 + i, extra + ["--tenants", "2", "--keys", "200"])
        assert truth["mooncake"] == mooncake and truth["dialect"] == dialect, (extra, truth["mooncake"])
        assert dialect_of(m, src) == dialect, extra
        check_truth(m, truth, src)


def test_without_status_url(procs):
    """No status URL: nothing can tell the dialect.  Without dialect= the exporter
    reads the guide's and says so; with dialect=object it is exact against release
    v0.3.12."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=5000", "sleep:seconds=0.6"], seed=203, status=False,
              extra=["--mooncake", "v0.3.12"])
    exp = Exporter(procs, EXPORTER, [sim.source("given"),
                                      "name=guessed,zmq=%s" % sim.zmq])
    truth = sim.start().wait()
    m = settle(exp, truth, "given")
    settle(exp, truth, "guessed")
    m = exp.metrics()
    check_truth(m, truth, "given", with_master=False)
    assert dialect_of(m, "given") == "object" and dialect_of(m, "guessed") == "media"
    # the guide's rule on main's stream keeps objects the master erased
    assert sum(m.find("mooncake_kv_objects", source="guessed").values()) > \
        sum(m.find("mooncake_kv_objects", source="given").values())
    log = procs.log(exp.proc)
    assert "source=guessed" in log and "dialect=media reason=no_status_url" in log, log[-2000:]
    assert "dialect=object reason=flag" in log


def test_no_status_answer_in_time_then_switch(procs):
    """The master's admin port is gone when the first messages arrive: after
    --master.timeout the exporter reads the guide's dialect, says so, and when the
    master answers, switches to object, marks the tenants stale (dialect) and
    reconciles tenant default, which then equals the master."""
    sim = Sim(procs, SIM, ["admin-off", "sleep:seconds=0.5", "ops:count=3000", "sleep:seconds=1.5", "admin-on",
                           "ops:count=1000", "sleep:seconds=0.5", "truth", "wait"], seed=204,
              extra=["--mooncake", "v0.3.12"])
    exp = Exporter(procs, EXPORTER, [sim.source("s") + ",reconcile=true"],
                   extra=["--master.timeout", "500ms", "--master.poll-interval", "1s",
                          "--master.reconcile-interval", "400ms"])
    sim.start()
    wait_for(lambda: "dialect=media reason=no_status_answer" in procs.log(exp.proc), 10, "the fallback")
    wait_for(lambda: 'msg="publisher dialect changed' in procs.log(exp.proc), 15, "the switch")
    log = procs.log(exp.proc)
    assert "dialect=object reason=status_fields" in log, log[-2000:]
    truth = default_reconciled(exp, sim, "s")
    m = exp.metrics()
    assert dialect_of(m, "s") == "object"
    assert m.get("mooncake_kv_stale_tenants", source="s", reason="dialect") == len(truth["tenants"]) - 1


def test_master_upgraded_in_place(procs):
    """A master upgraded in place speaks the other dialect (release v0.3.12 to main
    since #3818, and back; dev/conductor to the release): each way, the exporter
    switches, marks the tenants stale (reason dialect), logs it once, and
    reconciliation makes tenant default equal the master again."""
    for start, then, after in (("v0.3.12", "main", "media"), ("main", "v0.3.12", "object"),
                               ("conductor", "v0.3.12", "object")):
        sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=3000", "sleep:seconds=1.5", "upgrade",
                               "ops:count=3000", "sleep:seconds=1.5", "truth", "wait"], seed=205,
                  extra=["--mooncake", start, "--tenants", "3"])
        exp = Exporter(procs, EXPORTER, [sim.source("u") + ",reconcile=true"],
                       extra=["--master.poll-interval", "500ms", "--master.reconcile-interval", "400ms"])
        sim.start()
        wait_for(lambda: 'msg="publisher dialect changed' in procs.log(exp.proc), 20, "the switch")
        truth = default_reconciled(exp, sim, "u")
        assert truth["dialect"] == after and truth["mooncake"] == then
        m = exp.metrics()
        assert dialect_of(m, "u") == after
        assert m.get("mooncake_kv_stale_tenants", source="u", reason="dialect") == 2  # the others
        log = procs.log(exp.proc)
        assert log.count('msg="publisher dialect changed') == 1, log[-3000:]
        assert "dialect=%s reason=status_fields" % after in log
        procs.stop(exp.proc)
        procs.stop(sim.proc)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
