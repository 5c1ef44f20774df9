# SPDX-License-Identifier: Apache-2.0
"""The stream against the simulator's ground truth: every tenant figure and
stream counter after clears, queue drops, publisher restarts (fast ones
too), a lost tail, reconnects with and without loss, several sources, and
the wire's variants (upstream's master by default, legacy and object keys
off).

usage: test_stream_story.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import signal
import sys
import time

from harness import Exporter, Sim, check_books, check_truth, polls_pass, promtool_check, run_tests, settle, wait_for

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


# A story with everything a master's stream can do: clears, queue drops
# that leave a gap, a restart, malformed messages.  Sleeps let the exporter
# poll the master between the phases whose counters it must see.
STORY = ["sleep:seconds=0.5", "ops:count=3000", "clear:all", "ops:count=2000", "sleep:seconds=0.5",
         "burst:events=2500", "sleep:seconds=0.6", "ops:count=1000", "sleep:seconds=0.6", "restart",
         "sleep:seconds=0.6", "ops:count=1500", "garbage:count=12", "sleep:seconds=0.6"]


def test_story_matches_ground_truth(procs):
    sim = Sim(procs, SIM, STORY, seed=11, extra=["--queue", "1000", "--tenants", "5", "--keys", "700"])
    exp = Exporter(procs, EXPORTER, [sim.source("m0")])
    truth = sim.start().wait()
    assert truth["gaps"] == 1 and truth["missing"] == 1500 and truth["restarts"] == 1
    m = settle(exp, truth, "m0")
    check_truth(m, truth, "m0")
    promtool_check(m.text)
    # the same figures compressed
    mz = exp.metrics(gz=True)
    # what moves between two scrapes on its own: the exporter's own figures (its scrapes too)
    # and the polls of a master that has gone away with the simulator
    # and of a publisher that has gone away with it (its disconnect can land between the scrapes)
    volatile = ("mooncake_kv_exporter_", "mooncake_kv_scrape_", "process_", "mooncake_kv_master_last_poll",
                "mooncake_kv_master_poll_duration", "mooncake_kv_master_poll_errors", "mooncake_kv_master_up",
                "mooncake_kv_master_leader", "mooncake_kv_master_role", "mooncake_kv_subscriber_connected")
    strip = lambda s: {k: v for k, v in s.items() if not k[0].startswith(volatile)}
    a, b = strip(mz.samples), strip(m.samples)
    assert a == b, sorted(set(a.items()) ^ set(b.items()))


def test_release_v0312_erases_silently(procs):
    """The simulator plays the release (v0.3.12, main at 3b5a594) when told: no
    cleared, removals that publish nothing, every textual key counted as unparsed."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.4", "ops:count=4000", "clear:all", "batch-remove:count=300",
                           "ops:count=1000", "sleep:seconds=0.6"], seed=13,
              extra=["--mooncake", "v0.3.12", "--tenants", "3", "--keys", "400"])
    exp = Exporter(procs, EXPORTER, [sim.source("u")])
    truth = sim.start().wait()
    assert not truth["spec_extras"] and truth["silent_removals"] > 0
    assert truth["status"]["skipped_unparsed_keys"] == truth["events_sent"]  # every key is textual
    m = settle(exp, truth, "u")
    check_truth(m, truth, "u")
    for t in truth["tenants"]:
        assert t["cleared"] == 0 and t["stale"], t
    # the stream alone cannot see what the master erased without an event
    wire = sum(t["objects"] for t in truth["tenants"])
    assert wire > sum(t["objects"] for t in truth["master_tenants"])
    assert sum(m.find("mooncake_kv_objects", source="u").values()) == wire


def test_fast_restart_is_not_transport_loss(procs):
    """Issue 9, items 1, 2 and 5: a burst with drops, a restart, a larger burst
    with drops before the new publisher's first send, all well inside one poll
    interval.  Whatever the polls saw, nothing is blamed on transport, the
    restart counts once, and the numbers reserved before the new process's first
    message are missing."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=200", "burst:events=3000", "restart", "burst:events=6000",
                           "ops:count=200", "sleep:seconds=3.5"], seed=17, extra=["--queue", "1000"])
    exp = Exporter(procs, EXPORTER, [sim.source("f")], extra=["--master.poll-interval", "3s"])
    truth = sim.start().wait()
    assert truth["restarts"] == 1 and truth["missing"] == 2000 + 5000, truth
    m = settle(exp, truth, "f")
    check_truth(m, truth, "f")
    assert m.get("mooncake_kv_publisher_resets_total", source="f") == 1
    # the new process's 5,000 drops are explained by its own counters
    assert m.get("mooncake_kv_queue_lost_events_total", source="f") >= truth["status"]["dropped_events"] == 5000
    log = procs.log(exp.proc)
    assert 'msg="publisher reset: sequence restarted"' in log and 'missing=5000' in log, log[-3000:]
    assert 'msg="missing sequence numbers attributed"' in log


def test_lost_tail_after_a_stall(procs):
    """Issue 9, item 3: the exporter is stopped while the publisher sends a flood
    and goes quiet.  The lost tail is counted once the master's last number has
    stayed ahead with nothing arriving, as transport loss, and never twice."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=200,batch=1", "sleep:seconds=1.5",
                           "ops:count=60000,batch=1", "sleep:seconds=8"], seed=19,
              extra=["--sndhwm", "50", "--tenants", "2", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("t")], extra=["--zmq.rcvhwm", "50"])
    sim.start()
    wait_for(lambda: exp.metrics().get("mooncake_kv_messages_received_total", source="t") >= 200, 5, "warm-up")
    exp.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(3)
    finally:
        exp.proc.send_signal(signal.SIGCONT)

    def counted():
        m = exp.metrics()
        return m.get("mooncake_kv_sequence_tail_losses_total", source="t") >= 1 and \
            m.find("mooncake_kv_sequence_behind", source="t").get(frozenset({("source", "t")})) == 0
    wait_for(counted, 15, "the lost tail is counted")
    truth = sim.wait(timeout=30)
    m = exp.metrics()
    received = m.get("mooncake_kv_messages_received_total", source="t")
    missing = m.get("mooncake_kv_sequence_missing_total", source="t")
    assert received < truth["messages"], "nothing was lost: the test proves nothing"
    assert received + missing == truth["last_seq"], (received, missing, truth["last_seq"])
    assert m.get("mooncake_kv_master_last_sequence", source="t") == truth["last_seq"]
    assert m.get("mooncake_kv_transport_lost_messages_total", source="t") == missing
    assert m.get("mooncake_kv_queue_lost_events_total", source="t") == 0
    # one event a message: the event ids tell the same loss
    assert m.get("mooncake_kv_transport_lost_events_total", source="t") == missing
    check_books(m, "t")
    assert m.get("mooncake_kv_stale_tenants", source="t", reason="gap") == 2
    assert 'msg="lost the tail of the stream"' in procs.log(exp.proc)
    polls_pass(exp, 3, source="t")  # more polls: counted once
    assert exp.metrics().get("mooncake_kv_sequence_missing_total", source="t") == missing


def test_reconnect_is_not_a_loss(procs):
    """Issue 9, item 6: a connection reset that loses nothing leaves the tenants
    as they were; one that loses messages marks them stale for the reconnect."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=500", "sleep:seconds=0.5", "rebind", "ops:count=500",
                           "sleep:seconds=0.6"], seed=23)
    exp = Exporter(procs, EXPORTER, [sim.source("r")])
    truth = sim.start().wait()
    m = settle(exp, truth, "r")
    check_truth(m, truth, "r")
    assert m.get("mooncake_kv_subscriber_reconnects_total", source="r") >= 1
    assert m.get("mooncake_kv_stale_tenants", source="r", reason="reconnect") == 0

    lossy = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=500", "sleep:seconds=0.5", "rebind:lose=40",
                             "ops:count=500", "sleep:seconds=0.6"], seed=29)
    exp2 = Exporter(procs, EXPORTER, [lossy.source("l")])
    truth = lossy.start().wait()
    assert truth["lost_messages"] >= 30 and truth["missing"] == truth["lost_messages"], truth
    m = settle(exp2, truth, "l")
    check_truth(m, truth, "l")
    assert m.get("mooncake_kv_stale_tenants", source="l", reason="reconnect") == len(truth["tenants"])


def test_three_sources(procs):
    sims = [Sim(procs, SIM, ["sleep:seconds=0.4", "ops:count=%d" % (2000 + 500 * i), "clear:all",
                             "ops:count=800", "sleep:seconds=0.5"], seed=100 + i,
                extra=["--tenants", str(2 + i), "--backend", "master-%d" % i]) for i in range(3)]
    exp = Exporter(procs, EXPORTER, [s.source("m%d" % i) for i, s in enumerate(sims)])
    for s in sims:
        s.start()
    for i, s in enumerate(sims):
        truth = s.wait()
        check_truth(settle(exp, truth, "m%d" % i), truth, "m%d" % i)
    m = exp.metrics()
    assert m.get("mooncake_kv_tracked_tenants") == 2 + 3 + 4
    promtool_check(m.text)


def test_spec_switches_legacy_and_object_key_off(procs):
    """legacy off decodes the same; object keys off leaves only cleared on the wire."""
    a = Sim(procs, SIM, ["sleep:seconds=0.4", "ops:count=1500", "sleep:seconds=0.5"], seed=5,
            extra=["--legacy", "off"])
    b = Sim(procs, SIM, ["sleep:seconds=0.4", "ops:count=1500", "clear:all", "sleep:seconds=0.5"], seed=6,
            extra=["--object-key", "off", "--spec-extras", "on"])
    exp = Exporter(procs, EXPORTER, [a.source("a"), b.source("b")])
    a.start(), b.start()
    ta, tb = a.wait(), b.wait()
    check_truth(settle(exp, ta, "a"), ta, "a")
    assert tb["keyless_total"] > 1000 and tb["status"]["skipped_keyless_events"] == tb["keyless_total"]
    assert "skipped_unparsed_keys" not in tb["status"]
    m = settle(exp, tb, "b")
    check_truth(m, tb, "b")
    for t in tb["tenants"]:
        assert t["stored"] == 0 and t["removed"] == 0 and t["cleared"] >= 1, t
        assert t["objects"] == 0 and not t["stale"], t


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
