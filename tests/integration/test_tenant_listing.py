# SPDX-License-Identifier: Apache-2.0
"""Integration tests of reconciling every tenant (docs/guide.md, "Every tenant reconciled"):
a master that lists any tenant (tools/upstream/tenant-listing.patch) has every tenant
reconciled while traffic flows, exact and equal to what it holds; one that lists tenant
default only (upstream as released: 404) or that ignores the tenant (answers with
default's keys and names none) is asked once and its answer never used.  Ground truth:
the simulator's model of its master and of what the stream told.

usage: test_tenant_listing.py EXPORTER SIM [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import os
import sys
import time

import timing
from harness import Exporter, Sim, polls_pass, run_tests, wait_for
from harness import settle
from test_dialects import dialect_of
from test_exact import by_tenant, check_master, stale_reasons

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
TENANTS = ["default", "tenant-1", "tenant-2", "tenant-3"]


def all_exact(exp, source, backend):
    m = exp.metrics()
    return all(set(m.find("mooncake_kv_state_stale", source=source, backend_id=backend, tenant_id=t).values()) == {0}
               for t in TENANTS)


def lists_tenants(procs, dialect, seed):
    """A master that holds objects from before the exporter started (every tenant
    stale since start-up), under steady traffic: every tenant turns exact by a
    reconciliation while events flow; then one tenant's objects are erased by its
    quota without an event (release v0.3.12) and it is reconciled again."""
    flowing = os.path.join(procs.dir, "all-exact")
    evicted = os.path.join(procs.dir, "evicted-exact")
    extra = ["--tenants", "4", "--keys", "400", "--preload", "600", "--lists-tenants", "yes",
             "--quotas", "on", "--quota-bytes", "100000000"]
    extra += ["--dialect", "media"] if dialect == "media" else ["--mooncake", "v0.3.12"]
    sim = Sim(procs, SIM, ["steady:rate=1500,until=" + flowing, "quota-evict:count=300,tenant=2",
                           "steady:rate=1500,until=" + evicted, "sleep:seconds=0.5", "truth", "wait"],
              seed=seed, extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.source("l") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "1s"])
    sim.start()
    wait_for(lambda: exp.metrics().find("mooncake_kv_objects", source="l", tenant_id="default"), 10, "events arrive")
    backend = dict(next(iter(exp.metrics().find("mooncake_kv_objects", source="l", tenant_id="default"))))["backend_id"]
    wait_for(lambda: all_exact(exp, "l", backend), 30, "every tenant exact, traffic flowing")
    m = exp.metrics()
    assert not os.path.exists(sim.truth_path)  # still in its steady phase
    assert m.get("mooncake_kv_master_lists_tenants", source="l", member=sim.status_addr) == 1
    assert m.get("mooncake_kv_tenant_exact_transitions_total", source="l", cause="reconciled") >= 4
    assert m.get("mooncake_kv_reconciliations_total", source="l", result="ok") >= 4
    open(flowing, "w").close()
    if dialect == "object":  # the eviction publishes nothing: tenant-2 stale, then reconciled
        wait_for(lambda: exp.metrics().get("mooncake_kv_tenant_stale_transitions_total", source="l",
                                           reason="quota_eviction") == 1, 20, "the eviction turns tenant-2 stale")
    wait_for(lambda: set(exp.metrics().find("mooncake_kv_tenant_evicted_bytes_total", source="l",
                                            tenant_id="tenant-2").values()) - {0}, 20, "the eviction is seen")
    wait_for(lambda: all_exact(exp, "l", backend), 30, "every tenant exact again, traffic flowing")
    open(evicted, "w").close()
    truth = sim.truth_written()
    m = settle(exp, truth, "l")
    assert dialect_of(m, "l") == dialect
    assert truth["gaps"] == 0 and truth["restarts"] == 0
    if dialect == "object":
        assert truth["silent_removals"] > 0
    assert truth["tenant_listings"] >= 3  # tenants 1..3 at least
    for tenant in TENANTS:  # exact, and right: what the master holds, not the stream alone
        assert m.get("mooncake_kv_state_stale", source="l", backend_id=backend, tenant_id=tenant) == 0, tenant
        check_master(m, truth, "l", tenant)
    assert set(stale_reasons(m, "l").values()) == {0}


def test_lists_tenants_object(procs):
    """Release v0.3.12's publisher, a master with the per-tenant listing: every tenant
    exact after a reconciliation while traffic flows, and again after a silent quota
    eviction; every figure equal to the master's."""
    lists_tenants(procs, "object", 501)


def test_lists_tenants_media(procs):
    """The same with the guide's publisher (dev/conductor, whose evictions publish)."""
    lists_tenants(procs, "media", 502)


def default_only(procs, kind, seed):
    sim = Sim(procs, SIM, ["steady:rate=1500,seconds=2", "sleep:seconds=0.5", "truth", "wait"], seed=seed,
              extra=["--tenants", "4", "--keys", "300", "--preload", "400", "--lists-tenants", kind])
    exp = Exporter(procs, EXPORTER, [sim.source("o") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "1s"])
    sim.start()
    truth = sim.truth_written()
    m = settle(exp, truth, "o")
    wait_for(lambda: exp.metrics().find("mooncake_kv_master_lists_tenants", source="o") == {
        frozenset({("source", "o"), ("member", sim.status_addr)}): 0}, 15,
        "the master's answer says it lists tenant default only")
    polls_pass(exp, 10, source="o")  # reconciliations go on: default's, never another's
    m = exp.metrics()
    assert "the master lists tenant default only" in procs.log(exp.proc)
    backend = truth["tenants"][0]["backend_id"]
    L = dict(source="o", backend_id=backend)
    assert m.get("mooncake_kv_state_stale", tenant_id="default", **L) == 0
    check_master(m, truth, "o", "default")
    wire = by_tenant(truth["tenants"])
    for tenant in TENANTS[1:]:  # stale since start-up, with what the stream told: nothing taken from the answer
        assert m.get("mooncake_kv_state_stale", tenant_id=tenant, **L) == 1, tenant
        assert m.get("mooncake_kv_objects", tenant_id=tenant, **L) == wire[tenant]["objects"], tenant
    assert stale_reasons(m, "o")["startup"] == 3
    assert m.get("mooncake_kv_tenant_exact_transitions_total", source="o", cause="reconciled") == 1  # default
    assert truth["tenant_listings"] == (1 if kind == "ignores" else 0)  # asked once (404s are not counted)
    assert m.get("mooncake_kv_reconciliations_total", source="o", result="failed") == 0


def test_upstream_lists_default_only(procs):
    """Upstream as released: 404 at the per-tenant listing.  Asked once, counted as
    no failure; only tenant default is reconciled."""
    default_only(procs, "no", 503)


def test_master_ignoring_the_tenant_is_never_used(procs):
    """A master that answers the per-tenant path with tenant default's keys and names
    no tenant: its answer is never taken for another tenant's keys."""
    default_only(procs, "ignores", 504)


def test_a_thousand_stale_tenants(procs):
    """A master with 1,000 tenants, each holding objects from before the exporter
    started, under light traffic: every tenant turns exact, one listing each, each
    equal to what the master holds.  How long that takes and what it asked of the
    master are printed (docs/operating.md), never asserted."""
    n = 1000
    done = os.path.join(procs.dir, "all-exact")
    sim = Sim(procs, SIM, ["steady:rate=500,until=" + done, "sleep:seconds=0.5", "truth", "wait"], seed=505,
              extra=["--tenants", str(n), "--keys", "20", "--preload", "8000", "--lists-tenants", "yes"])
    exp = Exporter(procs, EXPORTER, [sim.source("k") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "60s", "--limits.max-tenants", str(2 * n)])
    sim.start()
    t0 = time.time()

    def stale_count():
        return sum(exp.metrics().find("mooncake_kv_state_stale", source="k").values())
    wait_for(lambda: len(exp.metrics().find("mooncake_kv_state_stale", source="k")) >= n * 0.9, 20,
             "the tenants' first events")
    wait_for(lambda: stale_count() == 0 and len(exp.metrics().find("mooncake_kv_state_stale", source="k")) == n,
             120, "every one of the 1,000 tenants exact")
    took = time.time() - t0
    m = exp.metrics()
    runs = m.get("mooncake_kv_reconciliations_total", source="k", result="ok")
    open(done, "w").close()
    truth = sim.truth_written()
    m = settle(exp, truth, "k")
    assert truth["gaps"] == 0 and truth["restarts"] == 0
    assert m.get("mooncake_kv_master_lists_tenants", source="k", member=sim.status_addr) == 1
    # one listing for each tenant but default (each stale once, the interval a minute)
    assert n - 1 <= truth["tenant_listings"] <= n + 10, truth["tenant_listings"]
    for t in truth["master_tenants"]:
        check_master(m, truth, "k", t["tenant_id"])
    print("1,000 stale tenants (%s build): all exact %.1f s after start, %d reconciliations, %d per-tenant "
          "listings, %d objects" % (timing.build(), took, runs, truth["tenant_listings"], truth["master_keys"]))


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
