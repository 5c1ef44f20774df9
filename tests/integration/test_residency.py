# SPDX-License-Identifier: Apache-2.0
"""Integration tests of residency (docs/guide.md, "Residency"): the simulator's truth holds
the lifetime of every life an ideal subscriber sees whole (from the event that made
the object present to the one that made it absent, by the publisher's timestamps),
and how many ended unobserved; every bucket, _count and _sum of the exporter's
histograms must equal what those lifetimes give, per tenant and per key group, in
both dialects.

usage: test_residency.py EXPORTER SIM [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import sys
import time

from harness import Exporter, Sim, run_tests, wait_for
from harness import check_truth, promtool_check, settle

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
# the buckets the README states, in ms (a bucket holds lifetimes up to its bound)
BOUNDS_MS = [1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 7200000,
             21600000, 86400000]
GROUP_RE = "^(?<model>[^/]+)/"


def le(ms):
    return "%g" % (ms / 1000)


def check_histogram(m, name, lifetimes, unobserved, **labels):
    """Every bucket, _sum and _count of one histogram against the truth's lifetimes; the
    histogram and the unobserved count each from their first life (absent before)."""
    if not lifetimes:
        assert not m.find(name + "_count", **labels), (name, labels)
    for bound in BOUNDS_MS if lifetimes else ():
        want = sum(1 for x in lifetimes if x <= bound)
        got = m.get(name + "_bucket", le=le(bound), **labels)
        assert got == want, "%s le=%s %s: %s, want %s" % (name, le(bound), labels, got, want)
    if lifetimes:
        assert m.get(name + "_bucket", le="+Inf", **labels) == len(lifetimes)
        assert m.get(name + "_count", **labels) == len(lifetimes), (labels, len(lifetimes))
        got = m.get(name + "_sum", **labels)
        assert got == sum(lifetimes) / 1000, "%s_sum %s: %r, want %r" % (name, labels, got, sum(lifetimes) / 1000)
    unseen = name.replace("_seconds", "_unobserved_total")
    got = m.news(unseen, **labels)
    assert got == unobserved, "%s unobserved %s: %s, want %s" % (name, labels, got, unobserved)
    assert unobserved or not m.find(unseen, **labels), (unseen, labels)


def check_residency(m, truth, source, groups=True):
    """Every tenant's and every key group's lifetimes equal the truth's; returns
    (lives observed, lives unobserved) over the tenants."""
    seen = unseen = 0
    for t in truth["tenants"]:
        L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
        check_histogram(m, "mooncake_kv_object_lifetime_seconds", t["lifetimes_ms"], t["lives_unobserved"], **L)
        assert m.get("mooncake_kv_object_age_tracked_objects", **L) == t["births_held"], (L, t["births_held"])
        seen += len(t["lifetimes_ms"])
        unseen += t["lives_unobserved"]
        if not groups:
            continue
        for model, g in t["groups"].items():
            if "lifetimes_ms" in g:
                check_histogram(m, "mooncake_kv_key_group_object_lifetime_seconds", g["lifetimes_ms"],
                                g["lives_unobserved"], key_group=model, **L)
    return seen, unseen


def check_mean_age(m, truth, source):
    """The mean age of the live objects whose birth was seen: the publisher's clock
    now (the host's, moved by the truth's clock steps) less the truth's mean birth,
    within the scrape's second."""
    now_ms = time.time() * 1000 + truth["clock_offset_ms"]
    checked = 0
    for t in truth["tenants"]:
        L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
        if not t["births_held"]:
            assert not m.find("mooncake_kv_object_age_mean_seconds", **L)
            continue
        want = (now_ms - t["birth_mean_ms"]) / 1000
        got = m.get("mooncake_kv_object_age_mean_seconds", **L)
        assert abs(got - want) < 1.5, (L, got, want)
        checked += 1
    return checked


def test_media_lifetimes_equal_the_truth(procs):
    """The guide's publisher: tenants made exact by a cleared each; then seconds of
    steady operations (puts of one and two replicas, removes, evictions, offloads,
    upserts), a clock stepped back by 3 s, a burst that overflows the queue (a gap:
    every birth held is forgotten), a cleared again, and more.  Every bucket,
    _count and _sum per tenant and per key group equal the truth; the backwards
    timestamps are counted; nothing else is observed."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "clear:all", "steady:rate=1500,seconds=4", "clock:ms=-3000",
                           "steady:rate=1500,seconds=2", "burst:events=2000", "steady:rate=1500,seconds=1.5",
                           "clear:all", "steady:rate=1500,seconds=3", "truth", "wait"],
              seed=301, extra=["--dialect", "media", "--tenants", "4", "--keys", "400", "--queue", "500"])
    exp = Exporter(procs, EXPORTER, [sim.source("r")], extra=["--key.group-regex", GROUP_RE])
    sim.start()
    truth = sim.truth_written()
    m = settle(exp, truth, "r")
    check_truth(m, truth, "r", with_master=False)
    seen, unseen = check_residency(m, truth, "r")
    # the run has every kind of life: seen whole, across a gap, ended by a cleared
    assert seen > 300 and unseen > 50, (seen, unseen)
    assert max(x for t in truth["tenants"] for x in t["lifetimes_ms"]) > 2500  # more than the first buckets
    assert truth["gaps"] >= 1 and truth["timestamps_backwards"] > 0
    assert m.get("mooncake_kv_event_timestamps_unusable_total", source="r", reason="backwards") == \
        truth["timestamps_backwards"]
    assert m.get("mooncake_kv_event_timestamps_unusable_total", source="r", reason="invalid") == 0
    assert check_mean_age(m, truth, "r") > 0
    promtool_check(m.text)


def test_tenant_cleared_while_empty(procs):
    """dev/conductor's RemoveAll of one tenant publishes its cleared even when the
    tenant holds nothing (docs/upstream.md).  Cleared before any event, tenant-1 is
    known exact and empty: every life of it from then on is seen whole, while the
    other tenants' lives end unobserved until tenant-2's own RemoveAll (its objects'
    removals, then its cleared) makes it exact too.  Every bucket equals the truth."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "clear:tenant=1", "steady:rate=1500,seconds=3", "clear:tenant=2",
                           "steady:rate=1500,seconds=3", "truth", "wait"],
              seed=304, extra=["--dialect", "media", "--tenants", "3", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("e")])
    sim.start()
    truth = sim.truth_written()
    m = settle(exp, truth, "e")
    check_truth(m, truth, "e")
    check_residency(m, truth, "e", groups=False)  # (check_truth compared clears, objects and staleness)
    by = {t["tenant_id"]: t for t in truth["tenants"]}
    # the ground truth has the story the test is about
    assert by["tenant-1"]["cleared"] == 1 and by["tenant-2"]["cleared"] == 1 and by["default"]["cleared"] == 0
    assert len(by["tenant-1"]["lifetimes_ms"]) > 100 and by["tenant-1"]["lives_unobserved"] == 0
    assert by["tenant-2"]["lives_unobserved"] > 0 and len(by["tenant-2"]["lifetimes_ms"]) > 0
    assert not by["default"]["lifetimes_ms"] and by["default"]["lives_unobserved"] > 0
    assert not by["tenant-1"]["stale"] and not by["tenant-2"]["stale"] and by["default"]["stale"]
    promtool_check(m.text)


def test_object_lifetimes_equal_the_truth(procs):
    """Release v0.3.12's publisher: no cleared, so only a reconciliation makes a tenant
    exact.  The exporter reconciles tenant default of an empty master before the
    first event; from then every life of default is seen whole, and those of the
    other tenants (never exact) all end unobserved.  Every bucket equals the truth."""
    sim = Sim(procs, SIM, ["sleep:seconds=4", "known:tenant=0", "steady:rate=1500,seconds=6", "truth", "wait"],
              seed=302, extra=["--mooncake", "v0.3.12", "--tenants", "3", "--keys", "400"])
    sim.start()
    t0 = time.time()
    src = "name=o,zmq=%s,status=%s,reconcile=true,backend=mooncake-master-1" % (sim.zmq, sim.status_url)
    exp = Exporter(procs, EXPORTER, [src], extra=["--key.group-regex", GROUP_RE])
    wait_for(lambda: exp.metrics().get("mooncake_kv_reconciliations_total", source="o", result="ok") >= 1, 3,
             "tenant default reconciled")
    assert time.time() - t0 < 3.8, "reconciled too late for the test's known phase"
    truth = sim.truth_written()
    m = settle(exp, truth, "o")
    assert truth["dialect"] == "object"
    seen, unseen = check_residency(m, truth, "o")
    by = {t["tenant_id"]: t for t in truth["tenants"]}
    assert len(by["default"]["lifetimes_ms"]) > 300 and by["default"]["lives_unobserved"] == 0
    assert all(not t["lifetimes_ms"] and t["lives_unobserved"] > 0 for n, t in by.items() if n != "default")
    # one reconciliation: a later one would have been a cut-over in the middle of lives
    assert m.get("mooncake_kv_reconciliations_total", source="o", result="ok") == 1
    assert check_mean_age(m, truth, "o") == 1
    promtool_check(m.text)


def test_residency_off(procs):
    """--residency.enabled=false: no residency series at all, and the same figures
    otherwise."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "clear:all", "ops:count=3000", "truth", "wait"],
              seed=303, extra=["--dialect", "media", "--tenants", "2", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("r")], extra=["--residency.enabled=false"])
    sim.start()
    truth = sim.truth_written()
    m = settle(exp, truth, "r")
    check_truth(m, truth, "r", with_master=False)
    assert "lifetime" not in m.text and "object_age" not in m.text and "timestamps_unusable" not in m.text


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
