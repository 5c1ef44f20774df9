# SPDX-License-Identifier: Apache-2.0
"""Integration tests of highly available masters: the simulator plays a cluster
(one leader, standbys without a publisher, scripted failovers, a split brain, a
standby that publishes, tenant quotas), the exporter watches it as one source of
several masters or as one sidecar per master, and /metrics must equal the
simulator's ground truth.

usage: test_ha.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import os
import re
import subprocess
import sys
import time

from harness import Exporter, Sim, free_port, http_get, run_tests, wait_for
import timing
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
PROMTOOL = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "-k" else None
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None

PLACEMENTS = ("cpu_only", "disk_only", "cpu_and_disk")


def promtool_check(m):
    if PROMTOOL:
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=m.text.encode(), capture_output=True, timeout=scaled(30))
        assert r.returncode == 0, "promtool: " + (r.stdout + r.stderr).decode()


def eq(m, name, want, **labels):
    got = m.get(name, **labels)
    assert got == want, "%s%s = %s, want %s" % (name, labels, got, want)


def check_tenants(m, source, tenants, events=None):
    """Each tenant's objects by placement equal `tenants` (a truth's list); with
    `events` (the truth's wire list), its event counters too."""
    for t in tenants:
        L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
        eq(m, "mooncake_kv_objects", t["objects"], **L)
        for p in PLACEMENTS:
            assert m.placement(p, **L) == t[p], (L, p, m.placement(p, **L), t[p])
    for t in events or ():
        L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
        for e in ("stored", "removed"):
            assert m.news("mooncake_kv_events_received_total", event_type=e, **L) == t[e], (L, e)


def check_members(m, source, sim, truth):
    """Each member's own stream figures equal what the simulator sent on it."""
    for label, mt in zip(sim.members, truth["members"]):
        L = dict(source=source, member=label)
        eq(m, "mooncake_kv_messages_received_total", mt["messages"], **L)
        eq(m, "mooncake_kv_last_sequence", mt["last_seq"], **L)
        eq(m, "mooncake_kv_publisher_resets_total", mt["restarts"], **L)
        eq(m, "mooncake_kv_sequence_gaps_total", 0, **L)
        eq(m, "mooncake_kv_standby_events_total", mt["standby_events"], **L)
        eq(m, "mooncake_kv_master_leader", 1 if mt["serving"] else 0, **L)
        eq(m, "mooncake_kv_master_role", 1, role="leader" if mt["serving"] else "standby", **L)
    eq(m, "mooncake_kv_master_failovers_total", truth["failovers"], source=source)
    eq(m, "mooncake_kv_master_view_version", truth["view_version"], source=source)
    eq(m, "mooncake_kv_master_split_brains_total", truth["split_brains"], source=source)
    eq(m, "mooncake_kv_master_split_brain", 0, source=source)


def settle(exp, sim, truth, source):
    """Until every member's messages arrived and the leader was polled after the end."""
    def done():
        m = exp.metrics()
        for label, mt in zip(sim.members, truth["members"]):
            if m.get("mooncake_kv_messages_received_total", source=source, member=label) < mt["messages"]:
                return False
        leader = sim.members[truth["leader"]]
        return (m.get("mooncake_kv_master_published_batches_total", source=source, member=leader)
                == truth["status"]["published_batches"])
    wait_for(done, 15, "the exporter caught up with source " + source)
    return exp.metrics()


def test_failover_mid_stream(procs):
    """Two masters, events flowing, a failover: the new leader's publisher starts at 1
    on its own endpoint, which is no restart of the old one's; the tenant state, fed by
    both, equals everything the wire carried; quotas come from the leader."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.6", "steady:rate=3000,seconds=1", "failover",
                           "steady:rate=3000,seconds=1", "quota-reject:count=7", "sleep:seconds=0.8", "truth", "wait"],
              seed=41, members=2, extra=["--quotas", "on", "--quota-bytes", "2000000"])
    exp = Exporter(procs, EXPORTER, [sim.ha_source("ha")])
    sim.start()
    wait_for(lambda: exp.metrics().get("mooncake_kv_master_leader", source="ha", member=sim.members[0]) == 1, 5,
             "member 0 leads")
    truth = sim.truth_written()  # the masters keep answering while we check
    m = settle(exp, sim, truth, "ha")
    assert truth["failovers"] == 1 and truth["leader"] == 1
    check_members(m, "ha", sim, truth)
    check_tenants(m, "ha", truth["tenants"], truth["tenants"])
    # one store: the sum is the store's, counted once
    assert sum(m.find("mooncake_kv_objects", source="ha").values()) == sum(t["objects"] for t in truth["tenants"])
    eq(m, "mooncake_kv_stale_tenants", len(truth["tenants"]), source="ha", reason="failover")
    # the warning names the new leader, as the metrics do, and the old one, labelled
    def failover_lines():
        return [l for l in procs.log(exp.proc).splitlines() if 'msg="master failover' in l]
    wait_for(failover_lines, 5, "the failover warning")
    lines = failover_lines()
    assert len(lines) == 1, lines
    assert " new_leader=%s old_leader=%s " % (sim.members[1], sim.members[0]) in lines[0], lines[0]
    for q in truth["quotas"]:
        L = dict(source="ha", tenant_id=q["tenant_id"])
        eq(m, "mooncake_kv_tenant_quota_requested_bytes", q["requested_quota_bytes"], **L)
        eq(m, "mooncake_kv_tenant_quota_effective_bytes", q["effective_quota_bytes"], **L)
        eq(m, "mooncake_kv_tenant_charged_bytes", q["charged_bytes"], **L)
        # each only while it holds
        assert m.news("mooncake_kv_tenant_over_quota", **L) == (1 if q["over_quota"] else 0), L
        # upstream: admission is closed for a tenant without an explicit policy, not for one over quota
        assert q["admission_closed"] == (not q["has_explicit_policy"])
        assert m.news("mooncake_kv_tenant_admission_closed", **L) == (1 if q["admission_closed"] else 0), L
    # the leader's refused puts, mirrored from its /metrics, each tenant's exactly
    assert sum(truth["quota_rejects"].values()) == 7
    got = {dict(k)["tenant_id"]: v for k, v in m.find("mooncake_kv_tenant_quota_rejects_total", source="ha").items()}
    assert got == {t: n for t, n in truth["quota_rejects"].items()}, (got, truth["quota_rejects"])
    assert any(q["over_quota"] for q in truth["quotas"]) and not all(q["over_quota"] for q in truth["quotas"]), truth["quotas"]
    eq(m, "mooncake_kv_tenant_quotas_enabled", 1, source="ha")
    assert http_get(exp.url + "/-/ready")[0] == 200
    promtool_check(m)


def test_twenty_thousand_tenants(procs):
    """A master with 20,000 tenants: its /metrics (~450 bytes a tenant) and its quota
    answer (~190) are several MiB, past --master.max-body-bytes; read as they arrive,
    every tenant's quota, the refused puts and the key count come through, and no
    read fails."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=30000", "quota-reject:count=40", "sleep:seconds=0.5",
                           "truth", "wait"],
              seed=47, extra=["--quotas", "on", "--tenants", "20000", "--keys", "20", "--quota-bytes", "8192"])
    # a read of several MiB from a simulator built like the exporter (TSan: several times slower) on a
    # busy machine: the exporter's own bound on it (and so its poll interval, never shorter) comes from
    # timing, as every wait of the tests does
    bound = "%dms" % (scaled(3) * 1000)
    exp = Exporter(procs, EXPORTER, [sim.source("big")],
                   extra=["--limits.max-tenants", "20000", "--master.poll-interval", bound, "--master.timeout", bound])
    sim.start()
    truth = sim.truth_written(timeout=60)
    metrics_body = http_get(sim.status_url + "/metrics", timeout=30)[2]
    quotas_body = http_get(sim.status_url + "/api/v1/tenant_quotas", timeout=30)[2]
    print("20,000 tenants: the master's /metrics %.1f MiB, its quotas %.1f MiB"
          % (len(metrics_body) / 2**20, len(quotas_body) / 2**20))
    assert len(metrics_body) > 2**20 and len(quotas_body) > 2**20

    def all_there():
        m = exp.metrics()
        return (len(m.find("mooncake_kv_tenant_quota_effective_bytes", source="big")) == 20000
                and m.get("mooncake_kv_master_keys", source="big") == truth["master_keys"]
                and sum(m.find("mooncake_kv_tenant_quota_rejects_total", source="big").values()) == 40)
    wait_for(all_there, 30, "every tenant's quota, the key count and the rejects")
    m = exp.metrics()
    for q in truth["quotas"][::997]:
        L = dict(source="big", tenant_id=q["tenant_id"])
        eq(m, "mooncake_kv_tenant_quota_effective_bytes", q["effective_quota_bytes"], **L)
        eq(m, "mooncake_kv_tenant_charged_bytes", q["charged_bytes"], **L)
    got = {dict(k)["tenant_id"]: v for k, v in m.find("mooncake_kv_tenant_quota_rejects_total", source="big").items()}
    assert got == truth["quota_rejects"]
    eq(m, "mooncake_kv_tenant_quotas_overflow", 0, source="big")
    for fam in ("mooncake_kv_master_keys_poll_errors_total", "mooncake_kv_master_quota_poll_errors_total"):
        assert sum(m.find(fam, source="big").values()) == 0, (fam, m.find(fam, source="big"))
    # what such a scrape costs (docs/performance.md): measured, never asserted
    walls, own = [], []
    for _ in range(5):
        t0 = time.time()
        body = http_get(exp.url + "/metrics")[2]
        walls.append(time.time() - t0)
        # the previous scrape's own figure, read off the text (parsing 49 MiB five times takes long)
        own.append(float(re.search(rb"^mooncake_kv_exporter_last_scrape_duration_seconds (\S+)$", body, re.M).group(1)))
    held = [float(re.search(rb'^mooncake_kv_scrape_lock_hold_seconds_%s\{source="big"\} (\S+)$' % k, body, re.M).group(1))
            for k in (b"sum", b"count")]
    print("20,000 tenants' scrape (%s build): %.1f MiB, wall median %.0f ms, the exporter's own median %.0f ms, "
          "the source's lock held %.2f ms a scrape (mean of %d)"
          % (timing.build(), len(body) / 2**20, sorted(walls)[2] * 1000, sorted(own[1:])[1] * 1000,
             held[0] / held[1] * 1000, held[1]))


def test_three_members_split_brain_flap_and_a_dead_one(procs):
    """Three masters and a fourth that never answers: a split brain, a standby that
    publishes, a member whose admin flaps, then a failover to the member that
    published while standing by (its second publisher: a restart of its stream)."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.6", "ops:count=400", "split-brain:seconds=1.5,member=1",
                           "ops:count=200", "standby-publish:count=150,member=2", "outage:seconds=0.6,member=1",
                           "sleep:seconds=0.3", "outage:seconds=0.6,member=1", "failover:to=2",
                           "ops:count=300", "sleep:seconds=0.8", "truth", "wait"],
              seed=43, members=3)
    dead = ("tcp://127.0.0.1:%d" % free_port(), "http://127.0.0.1:%d" % free_port())
    exp = Exporter(procs, EXPORTER, [sim.ha_source("c3", [dead])])
    sim.start()
    wait_for(lambda: exp.metrics().get("mooncake_kv_master_split_brain", source="c3") == 1, 5, "the split brain shows")
    m = exp.metrics()
    assert m.get("mooncake_kv_master_leader", source="c3", member=sim.members[0]) == 1  # it keeps the title
    assert m.get("mooncake_kv_master_failovers_total", source="c3") == 0
    truth = sim.truth_written()  # the masters keep answering while we check
    m = settle(exp, sim, truth, "c3")
    check_members(m, "c3", sim, truth)
    assert truth["members"][2]["standby_events"] > 0 and truth["members"][2]["restarts"] == 1
    check_tenants(m, "c3", truth["tenants"], truth["tenants"])
    # the member that never answered: down, no leader, not holding up readiness
    down = dead[1][len("http://"):]
    eq(m, "mooncake_kv_master_up", 0, source="c3", member=down)
    eq(m, "mooncake_kv_master_leader", 0, source="c3", member=down)
    eq(m, "mooncake_kv_master_role", 1, source="c3", member=down, role="unknown")
    eq(m, "mooncake_kv_subscriber_connected", 0, source="c3", member=down)
    assert m.get("mooncake_kv_master_poll_errors_total", source="c3", member=down, reason="connect") > 0
    assert m.get("mooncake_kv_master_poll_errors_total", source="c3", member=sim.members[1], reason="connect") > 0
    assert http_get(exp.url + "/-/ready")[0] == 200
    # quotas not enabled (409): nothing exported, said once
    eq(m, "mooncake_kv_tenant_quotas_enabled", 0, source="c3")
    assert m.find("mooncake_kv_tenant_quota_effective_bytes", source="c3") == {}
    log = procs.log(exp.proc)
    assert log.count("tenant quotas are not enabled") == 1, log
    assert log.count("split brain") == 1
    promtool_check(m)


def test_sidecar_exporters_count_the_store_once(procs):
    """One exporter per master, as a sidecar: after a failover the old leader's
    exporter is a quiet, ready standby without tenant series, the new one's counts
    what its publisher said since its promotion, and the sum over both is that."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.8", "ops:count=600", "sleep:seconds=0.4", "failover", "ops:count=600",
                           "sleep:seconds=0.8", "truth", "wait"], seed=47, members=2)
    exps = [Exporter(procs, EXPORTER, [sim.member_source("default", i)]) for i in range(2)]
    sim.start()
    # before: the standby's exporter is ready and shows no tenants
    wait_for(lambda: exps[0].metrics().find("mooncake_kv_objects", source="default"), 5, "the leader's tenants")
    wait_for(lambda: http_get(exps[1].url + "/-/ready")[0] == 200, 5, "the standby's exporter is ready")
    assert exps[1].metrics().find("mooncake_kv_objects", source="default") == {}
    truth = sim.truth_written()  # the masters keep answering while we check
    wait_for(lambda: exps[1].metrics().get("mooncake_kv_messages_received_total", source="default")
             == truth["members"][1]["messages"], 10, "the new leader's messages")
    wait_for(lambda: exps[0].metrics().get("mooncake_kv_master_standby", source="default") == 1, 5,
             "the old leader stands by")
    old, new = exps[0].metrics(), exps[1].metrics()
    assert old.find("mooncake_kv_objects", source="default") == {}
    assert sum(old.find("mooncake_kv_stale_tenants", source="default").values()) == 0
    assert http_get(exps[0].url + "/-/ready")[0] == 200
    check_tenants(new, "default", truth["tenants_since_promotion"])
    total = sum(new.find("mooncake_kv_objects").values()) + sum(old.find("mooncake_kv_objects").values())
    assert total == sum(t["objects"] for t in truth["tenants_since_promotion"])
    eq(new, "mooncake_kv_master_leader", 1, source="default", member=sim.members[1])
    eq(old, "mooncake_kv_master_leader", 0, source="default", member=sim.members[0])
    for m in (old, new):
        promtool_check(m)


def test_reference_lists_the_labels_of_live_metrics(procs):
    """docs/reference.md lists each family's labels from the families' rows: a live
    exporter (a source of two masters, a sidecar source of one with reconciliation,
    key groups, quotas, refused puts, quota evictions) serves every sample of every
    family it shows with exactly those label names."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    sys.path.insert(0, os.path.join(root, "tools", "gen"))
    import gen_reference
    with open(os.path.join(root, "docs", "reference.md")) as f:
        rows = gen_reference.reference_rows(f.read())
    sim = Sim(procs, SIM, ["sleep:seconds=0.6", "steady:rate=2000,seconds=1", "quota-reject:count=5",
                           "quota-evict:count=50", "steady:rate=2000,seconds=0.5", "truth", "wait"],
              seed=53, members=2, extra=["--quotas", "on", "--quota-bytes", "2000000"])
    exp = Exporter(procs, EXPORTER, [sim.ha_source("ha"), sim.member_source("one", 0) + ",reconcile=true"],
                   extra=["--key.group-regex", "^(?<model>[^/]+)/", "--master.reconcile-interval", "1s"])
    sim.start()
    sim.truth_written()

    def everything():
        m = exp.metrics()
        return all(m.find(name) for name in ("mooncake_kv_tenant_quota_rejects_total", "mooncake_kv_tenant_evicted_bytes_total",
                                             "mooncake_kv_master_keys", "mooncake_kv_publisher_dialect",
                                             "mooncake_kv_reconciliations_total", "mooncake_kv_master_role",
                                             "mooncake_kv_objects_by_key_group_medium"))
    wait_for(everything, 30, "the quota, key count, dialect, reconcile, HA and key group families")
    text = http_get(exp.url + "/metrics")[2].decode()
    samples = gen_reference.sample_labels(text)
    shown = {name for name, _ in samples}
    # both sources give their masters' admin URLs; only "ha" has several
    errors = gen_reference.label_mismatches(rows, samples, lambda source, several: source == "ha" or not several)
    assert not errors, "\n".join(errors)
    assert len(shown) >= 100, "only %d families shown: %s" % (len(shown), sorted(shown))
    print("%d of the reference's %d families served, every sample with its listed labels" % (len(shown), len(rows)))


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
