# SPDX-License-Identifier: Apache-2.0
"""Integration tests of per-tenant exactness (docs/guide.md, "Stale tenants"): a store the
exporter watched from empty, proven so by the master's own answers, has every tenant
exact and every life observed, against each master (release v0.3.12, main since #3818,
dev/conductor); a tenant whose objects the master erased without an event (a quota
eviction or a BatchRemove of the release) is never left exact;
a master that holds objects before its publisher's first message proves nothing.
Ground truth: the simulator's model of its master and of what an ideal subscriber of
the dialect can know.

usage: test_exact.py EXPORTER SIM [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import os
import sys

from harness import Exporter, Sim, run_tests, wait_for
from harness import check_truth, promtool_check, settle
from test_dialects import dialect_of
from test_residency import check_residency

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
REASONS = ("startup", "gap", "reset", "reconnect", "overflow", "reconcile_incomplete", "failover", "dialect",
           "quota_eviction", "drift", "bootstrap", "removed_after_cleared")


class FromEmpty:
    """The simulator's first phases for a store watched from empty: it waits at a
    gate until the exporter has proven the store empty (two status answers with
    nothing published around a key count of 0), then its truth knows every tenant
    from there."""
    def __init__(self, procs):
        self.path = os.path.join(procs.dir, "gate-%d" % id(self))
        self.phases = ["gate:" + self.path, "known:all"]

    def open(self, exp, source):
        wait_for(lambda: exp.metrics().get("mooncake_kv_watched_from_empty", source=source) == 1, 15,
                 "the exporter proved the store empty")
        open(self.path, "w").close()


def stale_reasons(m, source):
    return {r: m.get("mooncake_kv_stale_tenants", source=source, reason=r) for r in REASONS}


def by_tenant(tenants):
    return {t["tenant_id"]: t for t in tenants}


def check_master(m, truth, source, tenant):
    """One tenant's figures equal what the master holds (its model, not the stream's)."""
    t = by_tenant(truth["master_tenants"])[tenant]
    L = dict(source=source, backend_id=t["backend_id"], tenant_id=tenant)
    assert m.get("mooncake_kv_objects", **L) == t["objects"], (tenant, m.get("mooncake_kv_objects", **L), t)


def watched_from_empty(procs, mooncake, seed):
    dialect = "object" if mooncake == "v0.3.12" else "media"
    extra = ["--tenants", "4", "--keys", "300", "--foreign-keys", "0", "--mooncake", mooncake]
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=3", "sleep:seconds=0.5", "truth", "wait"],
              seed=seed, extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.source("e")])
    sim.start()
    gate.open(exp, "e")
    truth = sim.truth_written()
    m = settle(exp, truth, "e")
    assert dialect_of(m, "e") == dialect
    # the proof came before the first message, and nothing was lost since
    assert m.get("mooncake_kv_watched_from_empty", source="e") == 1
    assert "every tenant exact from here" in procs.log(exp.proc)
    assert truth["gaps"] == 0 and truth["restarts"] == 0 and truth["silent_removals"] == 0
    assert all(not t["stale"] for t in truth["tenants"]) and len(truth["tenants"]) == 4
    check_truth(m, truth, "e")  # every figure, and every tenant exact (the truth's stale is false)
    assert set(stale_reasons(m, "e").values()) == {0}
    for tenant in by_tenant(truth["tenants"]):
        check_master(m, truth, "e", tenant)
    seen, unseen = check_residency(m, truth, "e", groups=False)
    assert seen > 500 and unseen == 0, (seen, unseen)  # every life whole
    promtool_check(m.text)


def test_watched_from_empty_object(procs):
    """Release v0.3.12's publisher, an empty master, the exporter subscribed first:
    every tenant exact from its first event, every life observed, equal to the truth."""
    watched_from_empty(procs, "v0.3.12", 401)


def test_watched_from_empty_media(procs):
    """The same with the guide's publisher (dev/conductor): no cleared needed."""
    watched_from_empty(procs, "conductor", 402)


def test_watched_from_empty_main(procs):
    """The same with Mooncake main since #3818 (the guide, stateless)."""
    watched_from_empty(procs, "main", 409)


def quota_eviction(procs, mooncake, seed):
    dialect = "object" if mooncake == "v0.3.12" else "media"
    extra = ["--tenants", "3", "--keys", "300", "--quotas", "on", "--quota-bytes", "100000000", "--foreign-keys", "0",
             "--mooncake", mooncake]
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=2", "quota-evict:count=400,tenant=2",
                                         "sleep:seconds=1.5", "truth", "wait"], seed=seed, extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.source("q")])
    sim.start()
    gate.open(exp, "q")
    truth = sim.truth_written()
    m = settle(exp, truth, "q")
    assert m.get("mooncake_kv_watched_from_empty", source="q") == 1
    evicted = truth["evicted_bytes"]
    assert list(evicted) == ["tenant-2"] and evicted["tenant-2"] > 0, evicted
    wait_for(lambda: exp.metrics().get("mooncake_kv_tenant_evicted_bytes_total", source="q", tenant_id="tenant-2")
             == evicted["tenant-2"], 5, "the leader's evicted bytes are mirrored")
    m = exp.metrics()
    L = dict(source="q", backend_id=truth["tenants"][0]["backend_id"])
    if mooncake != "conductor":
        # v0.3.12, and main since #3818 for each object it empties, erased objects of
        # tenant-2 without an event: its figure cannot be trusted
        assert truth["silent_removals"] > 0
        assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1
        assert stale_reasons(m, "q")["quota_eviction"] == 1
        assert m.get("mooncake_kv_tenant_stale_transitions_total", source="q", reason="quota_eviction") == 1
        assert "without events: tenants stale" in procs.log(exp.proc)
        exact = ["default", "tenant-1"]
    else:  # dev/conductor publishes every eviction: no reason to distrust anyone
        assert truth["silent_removals"] == 0
        assert set(stale_reasons(m, "q").values()) == {0}
        exact = ["default", "tenant-1", "tenant-2"]
    for tenant in exact:  # exact, and right: what the master holds
        assert m.get("mooncake_kv_state_stale", tenant_id=tenant, **L) == 0, tenant
        check_master(m, truth, "q", tenant)


def test_quota_eviction_object(procs):
    """On release v0.3.12 a quota eviction publishes nothing: the tenant whose
    mooncake_tenant_evict_bytes_total rose turns stale (quota_eviction); the others
    stay exact, equal to the master."""
    quota_eviction(procs, "v0.3.12", 403)


def test_quota_eviction_media(procs):
    """dev/conductor publishes each eviction's removals: every tenant stays exact and
    equal to the master; the eviction is no reason."""
    quota_eviction(procs, "conductor", 404)


def test_quota_eviction_main(procs):
    """Mooncake main since #3818 publishes nothing for an object the eviction
    empties (PublishKvRemovedAfterEvict returns on the invalid object, and
    EraseMetadata finds no medium left): tenant-2 stale (quota_eviction), as on
    v0.3.12."""
    quota_eviction(procs, "main", 410)


def silent_batch_remove(procs, reconcile, seed):
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=2", "sleep:seconds=0.5",
                                         "batch-remove:count=150,tenant=1", "sleep:seconds=1", "truth", "wait"],
              seed=seed, extra=["--mooncake", "v0.3.12", "--tenants", "3", "--keys", "300", "--foreign-keys", "0"])
    src = sim.source("d") + (",reconcile=true" if reconcile else "")
    exp = Exporter(procs, EXPORTER, [src], extra=["--master.reconcile-interval", "1s"])
    sim.start()
    gate.open(exp, "d")
    truth = sim.truth_written()
    assert truth["silent_removals"] > 16  # beyond the drift tolerance
    m = settle(exp, truth, "d")

    def blamed():
        return exp.metrics().get("mooncake_kv_stale_tenants", source="d", reason="drift") >= 1
    wait_for(blamed, 10, "the drift blames the exact tenants")
    m = exp.metrics()
    L = dict(source="d", backend_id=truth["tenants"][0]["backend_id"])
    # the master's count and the exact tenants' sum are apart: the tenants it cannot
    # rebuild are no longer trusted, tenant-1 (the one that was wrong) among them
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-1", **L) == 1
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1
    if reconcile:  # default was rebuilt from the master's listing: exact, and right
        assert m.get("mooncake_kv_state_stale", tenant_id="default", **L) == 0
        check_master(m, truth, "d", "default")
        assert stale_reasons(m, "d")["drift"] == 2
    else:
        assert m.get("mooncake_kv_state_stale", tenant_id="default", **L) == 1
        assert stale_reasons(m, "d")["drift"] == 3


def test_silent_batch_remove_drift(procs):
    """A BatchRemove in tenant-1 publishes nothing (release v0.3.12): every tenant is
    exact (watched from empty), so their sum must be the master's key count; it is
    not, poll after poll, and every exact tenant turns stale (drift)."""
    silent_batch_remove(procs, False, 405)


def test_silent_batch_remove_drift_reconciled(procs):
    """The same with reconciliation: tenant default is rebuilt and stays exact; the
    sum is still apart, and the tenants that cannot be reconciled turn stale."""
    silent_batch_remove(procs, True, 406)


def test_silent_batch_remove_during_traffic(procs):
    """The same drift while events keep flowing: the events in flight during each
    poll widen the tolerance, they do not silence the check.  The traffic goes on
    until the exporter has blamed the tenants (the simulator's steady phase ends at
    the test's go-ahead), so the drift was told under traffic, not in a lull."""
    gate = FromEmpty(procs)
    done = os.path.join(procs.dir, "blamed")
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=2", "batch-remove:count=900,tenant=1",
                                         "steady:rate=1500,until=" + done, "truth", "wait"],
              seed=408, extra=["--mooncake", "v0.3.12", "--tenants", "3", "--keys", "1000", "--foreign-keys", "0"])
    exp = Exporter(procs, EXPORTER, [sim.source("t")])
    sim.start()
    gate.open(exp, "t")
    wait_for(lambda: exp.metrics().get("mooncake_kv_stale_tenants", source="t", reason="drift") == 3, 20,
             "the drift blames every exact tenant, traffic flowing")
    assert not os.path.exists(sim.truth_path)  # still in its steady phase
    open(done, "w").close()
    truth = sim.truth_written()
    assert truth["silent_removals"] > 100 and truth["gaps"] == 0
    m = settle(exp, truth, "t")
    assert m.get("mooncake_kv_tenant_stale_transitions_total", source="t", reason="drift") == 3


def test_master_with_objects_proves_nothing(procs):
    """A master that holds objects before its publisher's first message (a leader
    restored from a snapshot publishes from 1 all the same): its key count is not 0,
    nothing is proven, and every tenant stays stale since start-up."""
    sim = Sim(procs, SIM, ["sleep:seconds=1.5", "steady:rate=1500,seconds=1.5", "sleep:seconds=0.5", "truth", "wait"],
              seed=407, extra=["--tenants", "3", "--keys", "300", "--preload", "200"])
    exp = Exporter(procs, EXPORTER, [sim.source("p")])
    sim.start()
    truth = sim.truth_written()
    m = settle(exp, truth, "p")
    assert truth["status"]["published_batches"] > 0 and truth["master_keys"] > 0
    assert m.get("mooncake_kv_watched_from_empty", source="p") == 0
    assert m.get("mooncake_kv_stale_tenants", source="p", reason="startup") == len(truth["tenants"]) == 3
    check_truth(m, truth, "p")


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
