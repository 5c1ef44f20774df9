# SPDX-License-Identifier: Apache-2.0
"""Integration stories against Mooncake main since PR #3818, the simulator's default
(--mooncake main, docs/upstream.md): the subscriber guide as main publishes it, and what
it still leaves unsaid.

- On the wire, read here by a subscriber of our own (ZMTP 3.0 and msgpack, below): the
  model context on every event, and RemoveAll's cleared only for a tenant it emptied.
- The exporter against the master's model, as master_service.cpp at 00390e6e publishes:
  tier evictions and BatchRemove published (every tenant exact and the master's); an
  eviction that empties an object silent (a quota eviction: the tenant stale for
  quota_eviction; one for space: drift); a master restored from a snapshot (nothing
  announced, its clean-up silent too); HA with the op log (no whole-object removal
  published: drift, never silently wrong; a key put again sees its old removed before
  its stored); revokes and discarded processing replicas (never announced: harmless), a
  quota policy deleted.

usage: test_main.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import os
import socket
import struct
import sys
import threading

from harness import Exporter, Sim, check_truth, polls_pass, promtool_check, run_tests, settle, wait_for
from test_exact import FromEmpty, by_tenant, check_master, stale_reasons
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


# --- a subscriber of our own: the wire as it is, read without the exporter ---

def _unpack(b, i):
    """One msgpack object of b at i: (value, next index).  What the publishers send."""
    c = b[i]
    if c <= 0x7f:
        return c, i + 1
    if c >= 0xe0:
        return c - 0x100, i + 1
    if 0x80 <= c <= 0x8f or c in (0xde, 0xdf):
        n, i = (c & 0x0f, i + 1) if c <= 0x8f else \
            (struct.unpack_from(">H" if c == 0xde else ">I", b, i + 1)[0], i + (3 if c == 0xde else 5))
        d = {}
        for _ in range(n):
            k, i = _unpack(b, i)
            d[k], i = _unpack(b, i)
        return d, i
    if 0x90 <= c <= 0x9f or c in (0xdc, 0xdd):
        n, i = (c & 0x0f, i + 1) if c <= 0x9f else \
            (struct.unpack_from(">H" if c == 0xdc else ">I", b, i + 1)[0], i + (3 if c == 0xdc else 5))
        a = []
        for _ in range(n):
            v, i = _unpack(b, i)
            a.append(v)
        return a, i
    if 0xa0 <= c <= 0xbf or c in (0xd9, 0xda, 0xdb):
        w = {0xd9: 1, 0xda: 2, 0xdb: 4}.get(c, 0)
        n = c & 0x1f if not w else int.from_bytes(b[i + 1:i + 1 + w], "big")
        i += 1 + w
        return b[i:i + n].decode(), i + n
    fixed = {0xc0: (None, 0), 0xc2: (False, 0), 0xc3: (True, 0)}
    if c in fixed:
        return fixed[c][0], i + 1
    ints = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q",
            0xca: ">f", 0xcb: ">d"}
    if c in ints:
        return struct.unpack_from(ints[c], b, i + 1)[0], i + 1 + struct.calcsize(ints[c])
    raise AssertionError("msgpack byte 0x%02x not expected from a publisher" % c)


class Wire:
    """A SUB socket of our own on a publisher (ZMTP 3.0, NULL mechanism, subscribed to
    everything): a thread keeps every message, [seq, timestamp, [event maps], dp_rank],
    until the publisher goes."""

    def __init__(self, endpoint):
        host, port = endpoint.replace("tcp://", "").rsplit(":", 1)
        self.addr = (host, int(port))
        self.messages = []
        self.error = None
        self.sock = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _recv(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def _frame(self):
        flags = self._recv(1)[0]
        size = struct.unpack(">Q", self._recv(8))[0] if flags & 2 else self._recv(1)[0]
        return flags, self._recv(size)

    def _send_frame(self, flags, body):
        self.sock.sendall(bytes([flags, len(body)]) + body)

    def _run(self):
        try:
            for _ in range(int(scaled(100))):  # the publisher binds when it starts
                try:
                    self.sock = socket.create_connection(self.addr, timeout=scaled(5))
                    break
                except OSError:
                    threading.Event().wait(0.1)
            self.sock.settimeout(None)
            greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
            self.sock.sendall(greeting)
            self._recv(64)
            ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 3) + b"SUB"
            self._send_frame(0x04, ready)
            flags, body = self._frame()
            assert flags & 4 and body.startswith(b"\x05READY"), body
            self._send_frame(0x00, b"\x01")  # subscribe to every topic (the topic frame is empty)
            parts = []
            while True:
                flags, body = self._frame()
                if flags & 4:
                    continue  # a command (a heartbeat)
                parts.append(body)
                if flags & 1:
                    continue
                if len(parts) == 3:
                    ts, events, dp = _unpack(parts[2], 0)[0]
                    self.messages.append((struct.unpack(">Q", parts[1])[0], ts, events, dp))
                parts = []
        except EOFError:
            pass
        except Exception as e:  # told by the test, not lost in a thread
            self.error = e

    def events(self):
        assert self.error is None, self.error
        return [e for m in self.messages for e in m[2]]

    def close(self):
        if self.sock:
            self.sock.close()


def cleared_by_tenant(events):
    out = {}
    for e in events:
        if e["event_type"] == "cleared":
            out[e["tenant_id"]] = out.get(e["tenant_id"], 0) + 1
    return out


def wired(procs, extra, phases, seed, members=1):
    """Runs a simulator to its end with our subscriber on its first member: (its truth,
    the messages read, their events)."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.3"] + phases + ["sleep:seconds=0.3"], seed=seed, members=members,
              extra=extra)
    sim.start()
    wire = Wire(sim.zmq)
    truth = sim.wait()
    wire.thread.join(scaled(10))
    wire.close()
    return truth, wire.messages, wire.events()


def wire_of(procs, extra, phases, seed):
    """Runs a simulator to its end with our subscriber on it: (its truth, its messages),
    every message and event it sent read."""
    truth, messages, events = wired(procs, extra, phases, seed)
    assert len(messages) == truth["messages"] and len(events) == truth["events_sent"], \
        (len(messages), truth["messages"], len(events), truth["events_sent"])
    return truth, messages


CONTEXT = ("model_name", "block_size", "additional_salt", "lora_name", "dp_rank")


def test_main_by_default(procs):
    """The simulator plays Mooncake main since #3818 unless told otherwise: the same
    operations publish every removal and a cleared for each tenant RemoveAll emptied;
    the guide's five status fields (nothing keyless); each tenant exact from its cleared
    and, where exact, the master's."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.4", "ops:count=4000", "clear:all", "batch-remove:count=300",
                           "ops:count=1000", "sleep:seconds=0.6"], seed=13, extra=["--tenants", "3", "--keys", "400"])
    exp = Exporter(procs, EXPORTER, [sim.source("u")])
    truth = sim.start().wait()
    assert truth["mooncake"] == "main" and truth["dialect"] == "media" and truth["silent_removals"] == 0
    assert sorted(truth["status"]) == ["dropped_events", "enabled", "published_batches", "published_events",
                                       "skipped_keyless_events"]
    assert truth["status"]["skipped_keyless_events"] == 0
    m = settle(exp, truth, "u")
    check_truth(m, truth, "u")
    master = {t["tenant_id"]: t for t in truth["master_tenants"]}
    for t in truth["tenants"]:
        assert t["cleared"] == 1 and not t["stale"], t
        assert t["objects"] == master[t["tenant_id"]]["objects"], t


def test_model_context_on_every_event(procs):
    """main stamps the model context of its configuration on every event (the
    guide's envelope), and its dp_rank on every batch; by default a realistic one.
    v0.3.12 stamps none (nil, dp_rank too); dev/conductor its configuration (by
    default none but dp_rank 0).  The exporter reads main's stream so: no event
    refused, every figure the truth's."""
    flags = ["--model-name", "Qwen/Qwen3-32B", "--lora-name", "sql-adapter", "--additional-salt", "s1",
             "--block-size", "64", "--dp-rank", "3"]
    cases = [
        (flags, {"model_name": "Qwen/Qwen3-32B", "block_size": 64, "additional_salt": "s1",
                 "lora_name": "sql-adapter", "dp_rank": 3}),
        ([], {"model_name": "meta-llama/Llama-3.1-8B-Instruct", "block_size": 16, "additional_salt": None,
              "lora_name": None, "dp_rank": 0}),
        (["--mooncake", "v0.3.12"] + flags, {k: None for k in CONTEXT}),
        (["--mooncake", "conductor"], {"model_name": None, "block_size": None, "additional_salt": None,
                                       "lora_name": None, "dp_rank": 0}),
    ]
    for i, (extra, want) in enumerate(cases):
        truth, messages = wire_of(procs, extra + ["--tenants", "3", "--keys", "200"],
                                  ["ops:count=300", "clear:tenant=1"], 600 + i)
        assert truth["model_context"] == want, (extra, truth["model_context"])
        events = [e for m in messages for e in m[2]]
        assert {e["event_type"] for e in events} >= {"stored", "removed"}, extra
        for e in events:
            assert {k: e[k] for k in CONTEXT} == want, (extra, e)
        assert {m[3] for m in messages} == {want["dp_rank"] or 0}, extra  # the batch's

    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=2000", "clear:tenant=2", "ops:count=300",
                           "sleep:seconds=0.5"], seed=610, extra=flags + ["--tenants", "3", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("c")])
    truth = sim.start().wait()
    m = settle(exp, truth, "c")
    assert truth["dialect"] == "media" and truth["mooncake"] == "main"
    check_truth(m, truth, "c")  # no decode error either
    promtool_check(m.text)


def test_removeall_cleared_only_when_emptied(procs):
    """RemoveAll publishes each object's removal, then cleared for a tenant it emptied
    that held objects: none for a tenant that held nothing (unlike dev/conductor), none
    where an object was still leased and skipped.  Each cleared makes its tenant exact,
    and its figures are then the master's."""
    phases = ["ops:count=1500", "clear:tenant=1", "clear:tenant=1", "clear:tenant=2,leased=3", "clear:all",
              "ops:count=400"]
    extra = ["--tenants", "4", "--keys", "300"]
    truth, messages = wire_of(procs, extra, phases, 620)
    # on the wire: tenant-1 once (its second RemoveAll found it empty), tenant-2 once (at
    # the RemoveAll of all, not at its own with leased objects), and each other once
    assert cleared_by_tenant([e for m in messages for e in m[2]]) == \
        {"default": 1, "tenant-1": 1, "tenant-2": 1, "tenant-3": 1}
    # dev/conductor, the same operations: a cleared for the empty tenant-1 too
    truth_c, messages_c = wire_of(procs, extra + ["--mooncake", "conductor"], phases, 620)
    assert cleared_by_tenant([e for m in messages_c for e in m[2]])["tenant-1"] == 2

    # the exporter: at the gate tenant-1 is exact (its cleared), tenant-2 is not (none came)
    gate = os.path.join(procs.dir, "after-leased")
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=1500", "clear:tenant=1", "clear:tenant=1",
                           "clear:tenant=2,leased=3", "gate:" + gate, "clear:all", "ops:count=400",
                           "sleep:seconds=0.5", "truth", "wait"], seed=620, extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.source("r")])
    sim.start()
    L = dict(source="r", backend_id="mooncake-master-1")

    def at_gate():
        m = exp.metrics()
        return m.news("mooncake_kv_events_received_total", tenant_id="tenant-1", event_type="cleared", **L) == 1 and \
            m.get("mooncake_kv_objects", tenant_id="tenant-2", **L) > 0
    wait_for(at_gate, 15, "the first RemoveAlls arrived")
    m = exp.metrics()
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-1", **L) == 0
    assert m.get("mooncake_kv_objects", tenant_id="tenant-1", **L) == 0
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1  # its leased objects remain
    open(gate, "w").close()
    truth = sim.truth_written()
    m = settle(exp, truth, "r")
    check_truth(m, truth, "r")
    assert not any(t["stale"] for t in truth["tenants"])
    for t in by_tenant(truth["tenants"]):  # exact, and right: what the master holds
        check_master(m, truth, "r", t)
    assert set(stale_reasons(m, "r").values()) == {0}


def test_evictions(procs):
    """Watched from empty.  Main publishes a tier evicted while another stays (the
    mix's) and BatchRemove's removals, but a quota eviction that empties an object
    publishes nothing (PublishKvRemovedAfterEvict returns on the invalid object, and
    EraseMetadata finds no medium left to name): the stream keeps those objects.  The
    leader's mooncake_tenant_evict_bytes_total{tenant-2} rises all the same, and tenant-2
    turns stale (quota_eviction); the other tenants stay exact and the master's, medium
    by medium."""
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=2", "quota-evict:count=300,tenant=2",
                                         "batch-remove:count=100", "ops:count=500", "sleep:seconds=1.5", "truth",
                                         "wait"],
              seed=630, extra=["--tenants", "3", "--keys", "300", "--quotas", "on", "--quota-bytes", "100000000",
                               "--foreign-keys", "0"])
    exp = Exporter(procs, EXPORTER, [sim.source("e")])
    sim.start()
    gate.open(exp, "e")
    truth = sim.truth_written()
    m = settle(exp, truth, "e")
    assert truth["silent_removals"] > 0 and truth["evicted_bytes"]["tenant-2"] > 0
    wire, master = by_tenant(truth["tenants"]), by_tenant(truth["master_tenants"])
    assert wire["tenant-2"]["objects"] > master["tenant-2"]["objects"]  # the stream alone is wrong
    wait_for(lambda: exp.metrics().get("mooncake_kv_tenant_evicted_bytes_total", source="e", tenant_id="tenant-2")
             == truth["evicted_bytes"]["tenant-2"], 5, "the leader's evicted bytes are mirrored")
    m = exp.metrics()
    L = dict(source="e", backend_id="mooncake-master-1")
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1
    assert m.get("mooncake_kv_objects", tenant_id="tenant-2", **L) == wire["tenant-2"]["objects"]
    assert stale_reasons(m, "e") == {r: 1 if r == "quota_eviction" else 0 for r in stale_reasons(m, "e")}
    for name in ("default", "tenant-1"):  # the stream's view is the master's, medium by medium
        assert m.get("mooncake_kv_state_stale", tenant_id=name, **L) == 0, name
        for k in ("objects", "cpu", "disk", "cpu_only", "disk_only", "cpu_and_disk"):
            assert wire[name][k] == master[name][k], (name, k)
        check_master(m, truth, "e", name)
    assert wire["tenant-1"]["removed"] > 0
    promtool_check(m.text)


def test_space_eviction_drift(procs):
    """A BatchEvict for space that empties memory-only objects publishes nothing
    either, and no per-tenant counter says whose: every tenant was exact (watched from
    empty), their sum stays above master_key_count poll after poll, and the drift
    check turns every exact tenant stale (drift).  Only objects the eviction leaves on
    disk lose cpu on the wire."""
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["steady:rate=1500,seconds=2", "evict:count=200,tenant=1",
                                         "sleep:seconds=1", "truth", "wait"],
              seed=635, extra=["--tenants", "3", "--keys", "300", "--foreign-keys", "0"])
    exp = Exporter(procs, EXPORTER, [sim.source("v")])
    sim.start()
    gate.open(exp, "v")
    truth = sim.truth_written()
    wire, master = by_tenant(truth["tenants"]), by_tenant(truth["master_tenants"])
    assert truth["silent_removals"] > 16  # beyond the drift tolerance
    assert wire["tenant-1"]["objects"] - master["tenant-1"]["objects"] == truth["silent_removals"]
    for name in ("default", "tenant-2"):
        assert wire[name]["objects"] == master[name]["objects"], name
    settle(exp, truth, "v")
    wait_for(lambda: exp.metrics().get("mooncake_kv_stale_tenants", source="v", reason="drift") == 3, 20,
             "the drift blames every exact tenant")
    assert stale_reasons(exp.metrics(), "v")["quota_eviction"] == 0


def test_promoted_from_snapshot(procs):
    """A standby promoted with a snapshot's objects announces none of them, and its
    clean-up erases some of them without an event: the objects put since the snapshot
    are gone, those removed since are back.  The failover turns every tenant stale, and it
    stays so until the master says otherwise: a RemoveAll's cleared (tenant-1), a
    reconciliation (default).  Where exact, the figures are the master's.  (Later
    removals in tenant-1 may turn it stale again: its cleared came while it was stale,
    in a store of several masters: "RemoveAll and the op log".)"""
    promoted, cleared = os.path.join(procs.dir, "promoted"), os.path.join(procs.dir, "cleared")
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=2000", "snapshot", "ops:count=1500",
                           "failover:restore=40", "ops:count=300", "gate:" + promoted, "clear:tenant=1", "truth",
                           "gate:" + cleared, "ops:count=300", "sleep:seconds=0.5", "truth", "wait"],
              seed=640, members=2, extra=["--tenants", "3", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.ha_source("h") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "1s"])
    sim.start()
    L = dict(source="h", backend_id="mooncake-master-1")
    wait_for(lambda: exp.metrics().get("mooncake_kv_stale_tenants", source="h", reason="failover") >= 2, 30,
             "the failover is seen")
    m = exp.metrics()
    for t in ("tenant-1", "tenant-2"):
        assert m.get("mooncake_kv_state_stale", tenant_id=t, **L) == 1, t
    open(promoted, "w").close()
    truth = sim.truth_written()
    assert truth["restored_cells"] > 0 and truth["cleanup_removals"] == 40 and truth["failovers"] == 1
    wait_for(lambda: exp.metrics().get("mooncake_kv_state_stale", tenant_id="tenant-1", **L) == 0 and
             exp.metrics().get("mooncake_kv_state_stale", tenant_id="default", **L) == 0, 30,
             "tenant-1 cleared, default reconciled")
    m = settle_ha(exp, truth, "h")
    for t in ("default", "tenant-1"):  # exact, and the master's
        check_master(m, truth, "h", t)
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1
    assert m.get("mooncake_kv_stale_tenants", source="h", reason="failover") == 1
    # later removals name restored objects this exporter never held: harmless, counted
    assert sum(m.find("mooncake_kv_removed_unknown_total", source="h").values()) > 0
    os.remove(sim.truth_path)
    open(cleared, "w").close()
    truth = sim.truth_written()
    m = settle_ha(exp, truth, "h")
    for name in ("default", "tenant-1", "tenant-2"):
        if m.get("mooncake_kv_state_stale", tenant_id=name, **L) == 0:
            check_master(m, truth, "h", name)
    assert m.get("mooncake_kv_state_stale", tenant_id="tenant-2", **L) == 1


def test_standby_restored_from_snapshot(procs):
    """One master (the sidecar topology) stands by and takes over again from a
    snapshot: the exporter forgets its figures while it stands by and starts afresh
    on its promotion, every tenant stale since start-up; the clean-up erases objects
    without an event.  Reconciled, tenant default is
    the master's; the others stay stale."""
    sim = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=1500", "snapshot", "ops:count=1000",
                           "standby:seconds=1.5,restore=30", "ops:count=300", "sleep:seconds=0.5", "truth", "wait"],
              seed=645, extra=["--tenants", "3", "--keys", "300"])
    exp = Exporter(procs, EXPORTER, [sim.source("s") + ",reconcile=true"],
                   extra=["--master.reconcile-interval", "1s"])
    sim.start()
    truth = sim.truth_written()
    assert truth["restored_cells"] > 0 and truth["cleanup_removals"] == 30
    L = dict(source="s", backend_id="mooncake-master-1")
    wait_for(lambda: exp.metrics().get("mooncake_kv_state_stale", tenant_id="default", **L) == 0, 30,
             "default reconciled")
    m = settle(exp, truth, "s")
    check_master(m, truth, "s", "default")
    for t in ("tenant-1", "tenant-2"):
        assert m.get("mooncake_kv_state_stale", tenant_id=t, **L) == 1, t
        assert m.get("mooncake_kv_state_stale_reason", tenant_id=t, reason="startup", **L) == 1, t


def test_oplog_removals_never_published(procs):
    """With HA and the op log main publishes no whole-object removal: Remove, BatchRemove
    and evictions mark replicas REMOVED, and FinalizeRemovedReplicasAfterDurable erases
    the entry with no media hint.  RemoveAll's cleared goes out at once (its objects
    count as removed) and their removals never.  A key put again after its discard
    timeout sees its old entry's removed before the new object's stored.  The stream's
    figures stay above the master's; the exporter, watching from empty, turns the
    tenants stale (drift, or removed_after_cleared for a removal after a cleared it
    cannot place), and no tenant it calls exact differs from the master."""
    extra = ["--tenants", "4", "--keys", "300", "--foreign-keys", "0", "--oplog", "on"]
    # the wire, read by our own subscriber of both members
    phases = ["ops:count=1500", "clear:tenant=1", "reput:count=5,tenant=1", "ops:count=300", "durable",
              "clear:tenant=2", "durable", "ops:count=300"]
    truth, _, events = wired(procs, extra, phases, 650, members=2)
    assert truth["oplog"] and truth["reputs"] == 5 and truth["durable_erased"] > 0 and truth["held_entries"] > 0
    assert truth["silent_removals"] > 0 and len(events) == truth["events_sent"]
    assert cleared_by_tenant(events) == {"tenant-1": 1, "tenant-2": 1}
    at = next(i for i, e in enumerate(events) if e["event_type"] == "cleared" and e["tenant_id"] == "tenant-1")
    first = {}  # tenant-1's keys after its cleared: their first event, and whether a stored follows
    for e in events[at + 1:]:
        if e["tenant_id"] != "tenant-1" or e["event_type"] == "cleared":
            continue
        k = e["object_key"]
        if k not in first:
            first[k] = [e["event_type"], False]
        elif first[k][0] == "removed" and e["event_type"] == "stored":
            first[k][1] = True
    # the cleared took every object: only the re-put keys begin with a removal (their old
    # entry's), each followed by the new object's stored
    reput = {k: v for k, v in first.items() if v[0] == "removed"}
    assert len(reput) == 5 and all(v[1] for v in reput.values()), reput
    ws, ms = by_tenant(truth["tenants"]), by_tenant(truth["master_tenants"])
    assert sum(t["objects"] for t in ws.values()) > sum(t["objects"] for t in ms.values())  # phantoms

    # the exporter
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + phases + ["sleep:seconds=1", "truth", "wait"], seed=650, members=2,
              extra=extra)
    exp = Exporter(procs, EXPORTER, [sim.ha_source("o")])
    sim.start()
    gate.open(exp, "o")
    truth = sim.truth_written()
    settle_ha(exp, truth, "o")
    L = dict(source="o", backend_id="mooncake-master-1")
    master = by_tenant(truth["master_tenants"])

    def flagged():  # every tenant the stream got wrong is stale
        m = exp.metrics()
        return all(m.get("mooncake_kv_state_stale", tenant_id=n, **L) == 1 or
                   m.get("mooncake_kv_objects", tenant_id=n, **L) == master[n]["objects"] for n in master)
    wait_for(flagged, 20, "the drift flags the tenants the stream got wrong")
    m = exp.metrics()
    reasons = stale_reasons(m, "o")
    assert reasons["drift"] + reasons["removed_after_cleared"] >= 1, reasons
    assert m.get("mooncake_kv_tenant_stale_transitions_total", source="o", reason="drift") >= 1
    promtool_check(m.text)


def settle_ha(exp, truth, source):
    """Every member's messages received, a poll after the end."""
    def done():
        m = exp.metrics()
        return sum(m.find("mooncake_kv_messages_received_total", source=source).values()) >= truth["messages"]
    wait_for(done, 15, "the exporter caught up with source " + source)
    return exp.metrics()


def test_harmless_operations(procs):
    """What main does without an event but without harm to the figures: copy/move
    revokes and discarded processing replicas erase only PROCESSING replicas, never
    announced (KvMediaForMetadata names COMPLETE ones); a quota policy deleted of an
    empty tenant (refused for one that holds objects: no cleared owed) changes nothing.
    Watched from empty, every tenant stays exact and the master's, medium by medium, and
    more polls blame no one."""
    gate = FromEmpty(procs)
    sim = Sim(procs, SIM, gate.phases + ["ops:count=1500", "clear:tenant=2", "quota-delete:tenant=2",
                                         "quota-delete:tenant=1", "discard:count=20,tenant=0", "revoke:count=40",
                                         "ops:count=300", "sleep:seconds=1", "truth", "wait"],
              seed=660, extra=["--tenants", "3", "--keys", "300", "--foreign-keys", "0", "--quotas", "on"])
    exp = Exporter(procs, EXPORTER, [sim.source("s")])
    sim.start()
    gate.open(exp, "s")
    truth = sim.truth_written()
    m = settle(exp, truth, "s")
    assert truth["discarded"] == 20 and truth["revoked"] == 40 and truth["silent_removals"] == 0
    polls_pass(exp, 3, source="s")
    m = exp.metrics()
    check_truth(m, truth, "s")  # every figure the stream's, every tenant exact
    wire, master = by_tenant(truth["tenants"]), by_tenant(truth["master_tenants"])
    for name in wire:
        check_master(m, truth, "s", name)
        for k in ("objects", "cpu", "disk", "cpu_only", "disk_only", "cpu_and_disk"):
            assert wire[name][k] == master[name][k], (name, k)
    quotas = {q["tenant_id"] for q in truth["quotas"]}
    assert "tenant-2" not in quotas and "tenant-1" in quotas  # refused: tenant-1 holds objects
    assert set(stale_reasons(m, "s").values()) == {0}


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
