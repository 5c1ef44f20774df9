# SPDX-License-Identifier: Apache-2.0
"""Integration tests of loss at the seams (issue 21): a new leader's first
messages, a master restarted after being down, and events that were rejected.
Each member's books must balance: received + missing = the numbers its master
says it used, with every missing number attributed and nothing behind.

usage: test_seams.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import sys

from harness import Exporter, Sim, run_tests, wait_for
from harness import check_truth, settle

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
POLL = ["--master.poll-interval", "500ms"]


def books(exp, source, member, used):
    """Waits until the member's received + missing = `used` (the numbers its publishers
    used), every missing number is in one bucket, nothing is behind and no message
    came after its number was counted lost; returns
    (received, missing, transport)."""
    L = dict(source=source, member=member) if member else dict(source=source)
    state = {}

    def balanced():
        m = exp.metrics()
        received = m.get("mooncake_kv_messages_received_total", **L)
        missing = m.get("mooncake_kv_sequence_missing_total", **L)
        buckets = [m.get(n, **L) for n in ("mooncake_kv_queue_lost_events_total",
                                           "mooncake_kv_transport_lost_messages_total",
                                           "mooncake_kv_unattributed_lost_messages_total")]
        behind = list(m.find("mooncake_kv_sequence_behind", **L).values())
        # a tail counted lost whose messages came after all: received and missing both hold them
        late = m.get("mooncake_kv_sequence_tail_late_messages_total", **L)
        state.update(received=received, missing=missing, buckets=buckets, behind=behind, late=late)
        return received + missing == used and sum(buckets) == missing and behind in ([0], []) and late == 0
    try:
        wait_for(balanced, 20, "the books of %s balance at %d" % (member or source, used))
    except AssertionError:
        raise AssertionError("books of %s, want %d used: %s" % (member or source, used, state))
    return state["received"], state["missing"], state["buckets"][1]


def failover(procs, after, seed):
    phases = ["sleep:seconds=0.5", "ops:count=3000", "sleep:seconds=1", "failover:after=%s" % after,
              "ops:count=20000,batch=1", "steady:rate=2000,seconds=1", "sleep:seconds=1.5", "truth", "wait"]
    sim = Sim(procs, SIM, phases, seed=seed, members=2)
    exp = Exporter(procs, EXPORTER, [sim.ha_source("h")], extra=POLL)
    sim.start()
    truth = sim.truth_written()
    assert truth["leader"] == 1 and truth["failovers"] == 1
    new = truth["members"][1]
    got = books(exp, "h", sim.members[1], new["last_seq"])
    m = exp.metrics()
    assert m.get("mooncake_kv_publisher_resets_total", source="h", member=sim.members[1]) == 0
    return exp, truth, got, m


def test_new_leader_publishing_after_300ms_loses_nothing(procs):
    """The new leader binds, and publishes 300 ms later: the exporter, which tries a
    standby's endpoint every 100 ms, is there in time."""
    exp, truth, (received, missing, transport), m = failover(procs, 0.3, 301)
    assert missing == 0 and received == truth["members"][1]["messages"], (received, missing)


def test_new_leader_publishing_at_once_is_counted(procs):
    """The new leader publishes 20,000 one-event messages the moment it binds: what
    the exporter missed before it connected is counted, as transport loss (the
    master's counters say it was published), the books balance, and the tenants
    are stale for it."""
    exp, truth, (received, missing, transport), m = failover(procs, 0, 302)
    print("new leader publishing at once: %d of %d messages missed" % (missing, truth["members"][1]["last_seq"]))
    assert missing > 0 and transport == missing
    assert m.get("mooncake_kv_sequence_gaps_total", source="h", member=truth["members"][1]["status"]) == 1
    assert m.get("mooncake_kv_stale_tenants", source="h", reason="gap") >= 1


def test_new_leader_first_burst_lost_whole(procs):
    """The new leader publishes 200 one-event messages the moment it binds, then
    nothing: a burst the exporter may miss entirely.  Whatever it did not receive
    is a lost tail of a stream counted from 1 (the poller saw the member stand by),
    so the books balance even when not one message arrived."""
    phases = ["sleep:seconds=0.5", "ops:count=3000", "sleep:seconds=1.5", "failover:after=0",
              "ops:count=200,batch=1", "sleep:seconds=4", "truth", "wait"]
    sim = Sim(procs, SIM, phases, seed=303, members=2)
    exp = Exporter(procs, EXPORTER, [sim.ha_source("h")], extra=POLL)
    sim.start()
    truth = sim.truth_written()
    new = truth["members"][1]
    received, missing, transport = books(exp, "h", sim.members[1], new["last_seq"])
    print("first burst of a new leader: %d of %d messages received" % (received, new["last_seq"]))
    assert transport == missing
    m = exp.metrics()
    assert m.get("mooncake_kv_publisher_resets_total", source="h", member=sim.members[1]) == 0


def restarted(procs, before, down, after, seed, what):
    """One master publishes `before` one-event operations, crashes, stays down `down`
    seconds and comes back publishing `after` at once: the restart counts once and the books
    balance across both processes."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=%d,batch=1" % before, "sleep:seconds=0.6",
                           "crash:seconds=%d,after=0" % down, "ops:count=%d,batch=1" % after,
                           "steady:rate=2000,seconds=1", "sleep:seconds=1.5", "truth", "wait"], seed=seed)
    exp = Exporter(procs, EXPORTER, [sim.source("c")], extra=POLL)
    sim.start()
    truth = sim.truth_written(timeout=60)
    assert truth["restarts"] == 1
    received, missing, transport = books(exp, "c", None, truth["messages"])
    print("%s: %d of %d messages missed" % (what, missing, truth["messages"]))
    m = exp.metrics()
    assert m.get("mooncake_kv_publisher_resets_total", source="c") == 1
    assert m.get("mooncake_kv_master_restarts_total", source="c") == 1


def test_single_master_restarted_after_10s_down(procs):
    """8,000 messages, down 10 s, then 2,000 at once: the new process publishes fewer
    before the exporter is back than the old one did in all, so its numbers go back."""
    restarted(procs, 8000, 10, 2000, 303, "restarted master publishing at once")


def test_single_master_restarted_past_its_old_numbers(procs):
    """300 messages, down 3 s, then 8,000 at once: by the time the exporter is back, the
    new process has passed the old one's numbers and event ids.  The poller saw the
    master down, so the jump is a restart from 1, not a gap."""
    restarted(procs, 300, 3, 8000, 304, "restarted master past its old numbers")


def test_poison_events_move_nothing(procs):
    """Messages with one event of an unknown event_type among good ones, its
    event_id 2^63 or the next valid id: rejected and counted, and no sequence,
    restart or loss figure moves."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=2000", "poison:count=6", "ops:count=2000",
                           "sleep:seconds=0.6"], seed=304)
    exp = Exporter(procs, EXPORTER, [sim.source("p")])
    truth = sim.start().wait()
    assert truth["decode_errors"]["unknown_event_type"] == 6 and truth["gaps"] == 0 and truth["restarts"] == 0
    m = settle(exp, truth, "p")
    check_truth(m, truth, "p")  # gaps, missing, restarts, transport loss, every tenant figure
    assert m.get("mooncake_kv_stale_tenants", source="p", reason="reset") == 0
    assert 'msg="publisher reset' not in procs.log(exp.proc)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
