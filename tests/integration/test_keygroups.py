# SPDX-License-Identifier: Apache-2.0
"""Integration tests of key groups: the simulator's keys shaped like each
integration's (docs/key-groups.md), the documented regex, and its per-model
truth, through gaps, a restart and a reconciliation.

usage: test_keygroups.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import subprocess
import sys

from harness import Exporter, Sim, run_tests, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
PROMTOOL = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "-k" else None
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None

# style: (the regex docs/key-groups.md gives, the label it makes of a model)
STYLES = {
    "plain": (r"^(?<model>[^/]+)/", "{}"),
    "vllm": (r"(?<model>[^@]+)@tp_rank:", "{}"),
    "lmcache": (r"^(?<fmt>[^@]+)@(?<model>[^@]+)@", "vllm/{}"),
    "sglang": (r"^(?<tag>[^_]+)_(?<model>.+)_[0-9a-f]{16}", "prod/{}"),
}
STORY = ["sleep:seconds=0.5", "ops:count=3000", "burst:events=2000", "ops:count=1000", "restart", "ops:count=1500",
         "sleep:seconds=0.7"]


def held(groups):
    """A truth's groups as their object figures, those that hold objects (the truth
    also lists groups by their lifetimes, test_residency's)."""
    return {name: {k: g[k] for k in ("objects", "cpu", "disk")} for name, g in groups.items() if g["objects"]}


def groups(m, source, tenant):
    out = {}
    for labels, v in m.find("mooncake_kv_objects_by_key_group", source=source, tenant_id=tenant).items():
        g = dict(labels)["key_group"]
        out[g] = {"objects": v}
        for medium in ("cpu", "disk"):
            out[g][medium] = m.get("mooncake_kv_objects_by_key_group_medium", medium=medium, **dict(labels))
    return out


def test_groups_equal_the_truth(procs):
    """Each integration's key shape, through a gap and a restart: every tenant's
    figures per group equal the simulator's, and add up to the tenant's."""
    for i, (style, (regex, label)) in enumerate(STYLES.items()):
        sim = Sim(procs, SIM, STORY, seed=60 + i, extra=["--key-style", style, "--models", "3", "--queue", "700",
                                                         "--tenants", "3", "--keys", "900"])
        exp = Exporter(procs, EXPORTER, [sim.source(style)], extra=["--key.group-regex", regex])
        truth = sim.start().wait()
        assert truth["gaps"] >= 1 and truth["restarts"] == 1
        wait_for(lambda: exp.metrics().get("mooncake_kv_messages_received_total", source=style) == truth["messages"],
                 10, "every message")
        m = exp.metrics()
        for t in truth["tenants"]:
            want = {label.format(model): g for model, g in held(t["groups"]).items()}
            got = {g: f for g, f in groups(m, style, t["tenant_id"]).items() if f["objects"]}
            assert got == want, (style, t["tenant_id"], got, want)
            assert sum(f["objects"] for f in got.values()) == t["objects"]
        events = sum(m.find("mooncake_kv_key_group_events_total", source=style, event_type="stored").values())
        assert events == sum(t["stored"] for t in truth["tenants"]), style
        if PROMTOOL:
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=m.text.encode(), capture_output=True, timeout=scaled(30))
            assert r.returncode == 0, (r.stdout + r.stderr).decode()


def test_reconciliation_rebuilds_groups(procs):
    """A master with objects from before the exporter: after reconciliation,
    tenant default's groups are the master's."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=2000", "batch-remove:count=200", "truth", "wait"], seed=71,
              extra=["--key-style", "lmcache", "--models", "4", "--preload", "3000", "--tenants", "2",
                     "--keys", "2000"])
    exp = Exporter(procs, EXPORTER, ["name=r,zmq=%s,status=%s,reconcile=true" % (sim.zmq, sim.status_url)],
                   extra=["--key.group-regex", STYLES["lmcache"][0], "--master.reconcile-interval", "300ms"])
    sim.start()
    import json
    import os
    import time
    wait_for(lambda: os.path.exists(sim.truth_path), 30, "the truth phase")
    truth = json.load(open(sim.truth_path))
    t0 = time.time()

    def reconciled():
        m = exp.metrics()
        ts = m.find("mooncake_kv_reconcile_last_success_timestamp_seconds", source="r")
        dur = m.find("mooncake_kv_reconcile_duration_seconds", source="r")
        return ts and list(ts.values())[0] - list(dur.values())[0] > t0
    wait_for(reconciled, 20, "a reconciliation after the truth")
    master = {t["tenant_id"]: t for t in truth["master_tenants"]}["default"]
    want = {"vllm/" + model: g for model, g in master["groups"].items()}
    got = {g: f for g, f in groups(exp.metrics(), "r", "default").items() if f["objects"]}
    assert got == want, (got, want)


def test_overflow(procs):
    """Beyond --limits.max-key-groups, new groups count under __overflow__."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=2000", "sleep:seconds=0.5"], seed=73,
              extra=["--key-style", "vllm", "--models", "4", "--tenants", "1"])
    exp = Exporter(procs, EXPORTER, [sim.source("o")],
                   extra=["--key.group-regex", STYLES["vllm"][0], "--limits.max-key-groups", "2"])
    truth = sim.start().wait()
    wait_for(lambda: exp.metrics().get("mooncake_kv_messages_received_total", source="o") == truth["messages"],
             10, "every message")
    m = exp.metrics()
    got = groups(m, "o", "default")
    assert "__overflow__" in got and len([g for g in got if g not in ("__overflow__", "")]) == 2, got
    assert sum(f["objects"] for f in got.values()) == truth["tenants"][0]["objects"]
    assert m.get("mooncake_kv_key_groups_overflow_total") > 0
    assert m.get("mooncake_kv_tracked_key_groups") == 2


def test_per_source_regex(procs):
    """Two masters with different integrations in one exporter: the source
    with group_regex= groups by its own regex, the other by --key.group-regex."""
    sims = {style: Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=1500", "sleep:seconds=0.5"], seed=80 + i,
                       extra=["--key-style", style, "--models", "2", "--tenants", "1"])
            for i, style in enumerate(("vllm", "sglang"))}
    sglang = STYLES["sglang"][0].replace("{16}", "{16,16}")  # a comma in the regex
    exp = Exporter(procs, EXPORTER, [sims["vllm"].source("vllm"), sims["sglang"].source("sglang") + ",group_regex=" + sglang],
                   extra=["--key.group-regex", STYLES["vllm"][0]])
    for style, sim in sims.items():
        truth = sim.start().wait()
        wait_for(lambda: exp.metrics().get("mooncake_kv_messages_received_total", source=style) == truth["messages"],
                 10, "every message of " + style)
        want = {STYLES[style][1].format(model): g for model, g in held(truth["tenants"][0]["groups"]).items()}
        got = {g: f for g, f in groups(exp.metrics(), style, "default").items() if f["objects"]}
        assert got == want, (style, got, want)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
