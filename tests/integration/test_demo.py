# SPDX-License-Identifier: Apache-2.0
"""The demo (tools/demo.sh, README's first command) run as a newcomer runs it,
with the binaries under test (KV_EXPORTER, KV_SIM) on ports of its own
(DEMO_PORT_BASE), for a bounded time (DEMO_SECONDS):

- it exits 0 by itself, and every process it started is gone (its ports free);
- its first table comes within 15 s (scaled by the build and the load), and
  the story's four stages follow, then the live view;
- every table (DEMO_JSON: each one's printed lines beside the /metrics text it
  was read from) says what that /metrics text says: every tenant of every
  source on a line of its own with its objects, cpu only, disk only, both,
  lives seen, exact or stale with every reason and since when; every master
  with its role, dialect, last sequence, the master's, and loss by cause; the
  model context each master's events name; who leads,
  the failovers, the reconciliations, the handover; and the lines are the
  ones the demo printed;
- the story happened: default's masters on Mooncake main (media, a model
  named) and fresh's on release v0.3.12 (object, no model) from stage 1, the
  loss and the restart in stage 2, fresh's tenant-2
  stale for its quota eviction, the new leader in stage 3, the second
  exporter's state taken from the first in stage 4, both still serving;
- Ctrl-C stops it cleanly (exit 0, every process gone);
- a clean stop removes its log folder, a failure keeps it and says where;
- what is new shows: /metrics in the protobuf exposition with one tenant's
  lifetimes as a native histogram (its lives between the text's before and
  after), and the tenants' series on the first exporter (only those with news)
  and the second (--metrics.all-series), as counted on their /metrics texts;
  and where a fleet goes next (docs/fleet.md, the fleet dashboard);
- at 80 columns (COLUMNS=80) every line it prints fits them;
- a port in use, or a process that dies, fails it at once with a message.

usage: test_demo.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import harness
from harness import parse_metrics, run_tests
from timing import factor, scaled

EXPORTER, SIM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEMO = os.path.join(ROOT, "tools", "demo.sh")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import demo_view  # noqa: E402  (the wording of a stale reason: presentation, not a figure)

FIRST_TABLE_S = 15


def port_base():
    """Ten consecutive loopback ports, free and reserved (harness.free_port's
    locks) against every other test on the machine."""
    rnd = random.Random(os.getpid() ^ int(time.time()))
    for _ in range(200):
        base = rnd.randrange(20000, 32760)
        ok = True
        for p in range(base, base + 10):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok and all(harness._reserve(p) for p in range(base, base + 10)):
            return base
    raise AssertionError("no ten free consecutive ports")


def listening(base):
    """The ports of base..base+9 something still listens on."""
    busy = []
    for p in range(base, base + 10):
        try:
            socket.create_connection(("127.0.0.1", p), timeout=0.5).close()
            busy.append(p)
        except OSError:
            pass
    return busy


class Demo:
    """tools/demo.sh in a session of its own (Ctrl-C goes to its whole
    process group, as a terminal's does), its output read line by line with
    the time each came."""

    def __init__(self, procs, seconds, extra_env=None, exporter=EXPORTER, sim=SIM):
        self.base = port_base()
        self.json = os.path.join(procs.dir, "demo-%d.jsonl" % self.base)
        env = dict(os.environ, KV_EXPORTER=exporter, KV_SIM=sim, DEMO_PORT_BASE=str(self.base),
                   DEMO_SECONDS=str(seconds), DEMO_JSON=self.json, DEMO_WAIT_FACTOR="%g" % factor(),
                   TMPDIR=procs.dir, NO_COLOR="1", COLUMNS="80")
        env.update(extra_env or {})
        self.t0 = time.time()
        self.proc = subprocess.Popen(["bash", DEMO], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.lines = []  # (seconds since the start, line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.append((time.time() - self.t0, raw.decode("utf-8", "replace").rstrip("\n")))

    def text(self):
        return "\n".join(l for _, l in self.lines)

    def wait_line(self, pattern, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for t, l in list(self.lines):
                if re.search(pattern, l):
                    return t
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError("no line like %r within %.0f s; the demo printed:\n%s" % (pattern, timeout, self.text()))

    def finish(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError("the demo did not stop within %.0f s; it printed:\n%s" % (timeout, self.text()))
        self.reader.join(5)
        return rc

    def records(self):
        with open(self.json) as f:
            return [json.loads(line) for line in f]

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def log_folders(procs):
    """The demo's log folders left in TMPDIR (the test's folder)."""
    return sorted(os.path.join(procs.dir, d) for d in os.listdir(procs.dir) if d.startswith("mooncake-kv-demo."))


def value(m, name, **labels):
    key = (name, frozenset(labels.items()))
    return m.get(key)


def find(m, name, **labels):
    want = set(labels.items())
    return {k[1]: v for k, v in m.items() if k[0] == name and want <= set(k[1])}


def member_value(m, name, source, member, single):
    v = value(m, name, source=source, member=member)
    if v is None and single:
        v = value(m, name, source=source)
    return v


def number(text):
    return None if text == "-" else float(text.replace(",", ""))


TENANT_ROW = re.compile(r"^  (\S+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+(-|[\d.]+ s|\d+ min(?: \d+ s)?)"
                        r"\s+(exact|stale|-)$")
MASTER_ROW = re.compile(r"^  (127\.0\.0\.1:\d+)\s+(leader|standby|unknown|-)\s+(connected|not connected|standing by)"
                        r"(?:, admin down)?\s+([\d,]+|-)\s+([\d,]+|-)\s+([\d,]+|-)$")
STALE_LINE = re.compile(r"^  stale(?: since (.+?))? \((.+?)\): (.*)$")
COLUMNS = 80
DIALECTS = {"object": "object (v0.3.12)", "media": "media (main since #3818)"}


def logical(lines):
    """The lines with each wrapped line's continuations (four spaces in, then a word)
    joined to it."""
    out = []
    for line in lines:
        if out and re.match(r"^    \S", line):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def loss_words(m, src, member, single):
    """A member's loss as the demo must say it, from /metrics: the missing numbers
    and their parts (queue + transport + unattributed, the rest not attributed yet),
    then a lost tail's late messages and the restarts."""
    v = lambda name: member_value(m, name, src, member, single) or 0
    num = demo_view.num
    missing, queue = v("mooncake_kv_sequence_missing_total"), v("mooncake_kv_queue_lost_events_total")
    transport = v("mooncake_kv_transport_lost_messages_total")
    unattributed = v("mooncake_kv_unattributed_lost_messages_total")
    late, restarts = v("mooncake_kv_sequence_tail_late_messages_total"), v("mooncake_kv_master_restarts_total")
    parts = []
    if missing:
        causes = (["%s dropped by the publisher's queue" % num(queue)] if queue else []) + \
                 (["%s lost in transport" % num(transport)] if transport else []) + \
                 (["%s unattributed (cause unknown)" % num(unattributed)] if unattributed else []) + \
                 (["%s not attributed yet" % num(missing - queue - transport - unattributed)]
                  if missing > queue + transport + unattributed else [])
        parts.append("%s missing: %s" % (num(missing), ", ".join(causes)))
    if late:
        parts.append("%s of a lost tail came late" % demo_view.plural(late, "message"))
    if restarts:
        parts.append("publisher restarted" if restarts == 1 else "publisher restarted %s" %
                     demo_view.plural(restarts, "time"))
    return "; ".join(parts) or "none"


def check_record(rec, printed):
    """One table against the /metrics text it was read from: every figure
    on it is that text's, every tenant and master is on it, and its lines
    are the ones the demo printed."""
    block = "\n".join(rec["lines"])
    assert block in printed, "a table the viewer recorded is not what the demo printed:\n" + block
    wide = [l for l in rec["lines"] if len(l) > COLUMNS]
    assert not wide, "lines wider than %d columns:\n%s" % (COLUMNS, "\n".join(wide))
    lines = logical(rec["lines"])
    m = parse_metrics(rec["metrics"])
    now = rec["time"]
    sources = []
    for labels, _ in find(m, "mooncake_kv_watched_from_empty").items():
        sources.append(dict(labels)["source"])
    assert sorted(sources) == ["default", "fresh", "listed"], sources
    # the lines of each source's block
    blocks, current = {}, None
    for line in lines:
        head = re.match(r"^(\w+): ", line)
        if head and head.group(1) in sources:
            current = head.group(1)
            blocks[current] = []
        elif line.startswith("exporter: "):
            current = None
        if current:
            blocks[current].append(line)
    assert sorted(blocks) == sorted(sources), sorted(blocks)
    seen_tenants = 0
    for src, bl in blocks.items():
        text = "\n".join(bl)
        members = [dict(l)["member"] for l in find(m, "mooncake_kv_master_leader", source=src)]
        single = len(members) == 1
        # who leads, failovers
        leader = [dict(l)["member"] for l, v in find(m, "mooncake_kv_master_leader", source=src).items() if v == 1]
        failovers = value(m, "mooncake_kv_master_failovers_total", source=src)
        if len(members) > 1:
            assert "%d masters, %s leads" % (len(members), leader[0]) in bl[0], bl[0]
        if failovers:
            assert demo_view.plural(failovers, "failover") in bl[0], bl[0]
        else:
            assert "failover" not in bl[0], bl[0]
        # every master, its figures
        rows = {}
        for line in bl:
            mm = MASTER_ROW.match(line)
            if mm:
                rows[mm.group(1)] = mm
        assert sorted(rows) == sorted(members), (src, sorted(rows), members)
        for member, row in rows.items():
            role = [dict(l)["role"] for l, v in find(m, "mooncake_kv_master_role", source=src, member=member).items()
                    if v == 1]
            assert row.group(2) == (role[0] if role else "-"), (member, row.group(2), role)
            connected = member_value(m, "mooncake_kv_subscriber_connected", src, member, single)
            assert row.group(3) == ("connected" if connected == 1 else "standing by" if role == ["standby"]
                                    else "not connected"), (member, row.group(3), role)
            assert number(row.group(4)) == member_value(m, "mooncake_kv_last_sequence", src, member, single)
            assert number(row.group(5)) == member_value(m, "mooncake_kv_master_last_sequence", src, member, single)
            assert number(row.group(6)) == member_value(m, "mooncake_kv_sequence_behind", src, member, single)
        # loss: the missing numbers as a total and its parts, one line per master
        # (one line for the source when none lost anything)
        want_loss = {member: loss_words(m, src, member, single) for member in members}
        lost = [l for l in bl if l.startswith("  lost")]
        if all(w == "none" for w in want_loss.values()):
            assert lost == ["  lost: none"], (src, lost)
        elif single:
            assert lost == ["  lost: " + want_loss[members[0]]], (src, lost, want_loss)
        else:
            assert sorted(lost) == sorted("  lost by %s: %s" % i for i in want_loss.items()), (src, lost, want_loss)
        # the dialect each master's stream is read in: once when they agree
        dialects = {}
        for member in members:
            d = [dict(l)["dialect"] for l, v in find(m, "mooncake_kv_publisher_dialect", source=src,
                                                        member=member).items() if v == 1]
            dialects.setdefault(DIALECTS[d[0]] if d else "not yet known", []).append(member)
        want_dialects = []
        for words, who in dialects.items():
            of = "" if single else " of " + ("every master" if len(who) == len(members) else ", ".join(who))
            want_dialects.append("  dialect%s: %s" % (of, words))
        assert sorted(l for l in bl if l.startswith("  dialect")) == sorted(want_dialects), (src, want_dialects, bl)
        # the model context each master's events name: one line per distinct
        # context, naming its masters unless every master of the source has it
        contexts = {}
        for l in find(m, "mooncake_kv_publisher_model_info", source=src):
            d = dict(l)
            words = [d["model_name"] or "no model name"] if any(
                d[k] for k in ("model_name", "lora_name", "block_size", "dp_rank")) else ["none named on its events"]
            if d["lora_name"]:
                words.append("LoRA " + d["lora_name"])
            if d["block_size"]:
                words.append("block size " + d["block_size"])
            if d["dp_rank"]:
                words.append("dp rank " + d["dp_rank"])
            if d["additional_salt"] == "present":
                words.append("salted")
            contexts.setdefault(", ".join(words), []).append(d["member"])
        want_models = []
        for words, who in contexts.items():
            if len(members) > 1:
                words += " (%s)" % ("every master" if len(who) == len(members)
                                    else "the events of " + ", ".join(sorted(who, key=members.index)))
            want_models.append("  model: " + words)
        assert sorted(l for l in bl if l.startswith("  model: ")) == sorted(want_models), (src, want_models, bl)
        # reconciliation
        ok = value(m, "mooncake_kv_reconciliations_total", source=src, result="ok")
        rec_line = [l for l in bl if l.startswith("  reconciliation: ")]
        if ok is None:
            assert not rec_line, rec_line
        elif ok:
            assert rec_line and rec_line[0].startswith("  reconciliation: %s ok" % demo_view.num(ok)), (rec_line, ok)
        # handover
        taken = value(m, "mooncake_kv_bootstrap_total", source=src, result="taken")
        if taken is None:
            assert "handover:" not in text
        else:
            assert ("state taken from the peer exporter" in text) == (taken == 1), text
            continued = value(m, "mooncake_kv_bootstrap_joins_total", source=src, result="continued")
            if continued:
                assert "%s proved its stream continues it" % demo_view.plural(continued, "master") in text
        # every tenant, its figures
        tenants = {}
        for line in bl:
            tm = TENANT_ROW.match(line)
            if tm:
                tenants[tm.group(1)] = tm
        want = {dict(l)["tenant_id"]: dict(l)["backend_id"] for l in find(m, "mooncake_kv_objects", source=src)}
        assert sorted(tenants) == sorted(want), (src, sorted(tenants), sorted(want))
        for tenant, row in tenants.items():
            key = dict(source=src, backend_id=want[tenant], tenant_id=tenant)
            assert number(row.group(2)) == value(m, "mooncake_kv_objects", **key), (src, tenant, row.group(0))
            # the placement from the objects and the medium mix (by_placement: --metrics.all-series only)
            objects = value(m, "mooncake_kv_objects", **key)
            cpu = value(m, "mooncake_kv_objects_by_medium", medium="cpu", **key)
            disk = value(m, "mooncake_kv_objects_by_medium", medium="disk", **key)
            assert number(row.group(3)) == objects - disk
            assert number(row.group(4)) == objects - cpu
            assert number(row.group(5)) == cpu + disk - objects
            lives = value(m, "mooncake_kv_object_lifetime_seconds_count", **key) or 0  # from its first life
            assert number(row.group(6)) == lives
            life = value(m, "mooncake_kv_object_lifetime_seconds_sum", **key) / lives if lives else None
            assert row.group(7) == demo_view.short_duration(life), (row.group(7), life)
            stale = value(m, "mooncake_kv_state_stale", **key)
            state = row.group(8)
            # a stale tenant's reasons and since when: on the one line below the table
            # of the tenants that share them
            said = [sm for sm in map(STALE_LINE.match, bl) if sm and tenant in sm.group(2).split(", ")]
            if stale == 0:
                assert state == "exact" and not said, (src, tenant, state, said)
            else:
                assert state == "stale" and len(said) == 1, (src, tenant, state, said)
                sm = said[0]
                reasons = [dict(l)["reason"] for l, v in find(m, "mooncake_kv_state_stale_reason", **key).items()
                           if v == 1]
                assert sorted(sm.group(3).split(", ")) == sorted(demo_view.reason_words(r) for r in reasons), \
                    (sm.group(0), reasons)
                since = value(m, "mooncake_kv_state_stale_since_timestamp_seconds", **key)
                assert sm.group(1) == demo_view.duration(now - since), (sm.group(0), now - since)
            seen_tenants += 1
        named_stale = [t for sm in map(STALE_LINE.match, bl) if sm for t in sm.group(2).split(", ")]
        assert sorted(named_stale) == sorted(t for t in tenants if value(
            m, "mooncake_kv_state_stale", source=src, backend_id=want[t], tenant_id=t)), (src, named_stale)
        # objects per model: the key groups' figures, every named group with objects
        groups = find(m, "mooncake_kv_objects_by_key_group", source=src)
        named = sorted({dict(l)["key_group"] for l, v in groups.items() if dict(l)["key_group"] and v})
        if named:
            at = bl.index("  objects per model (the key groups of --key.group-regex):")
            assert bl[at + 1].split() == ["tenant"] + named, bl[at + 1]
            for line in bl[at + 2:at + 2 + len(want)]:
                cells = line.split()
                key = dict(source=src, backend_id=want[cells[0]], tenant_id=cells[0])
                assert [number(c) for c in cells[1:len(named) + 1]] == [
                    value(m, "mooncake_kv_objects_by_key_group", key_group=g, **key) or 0 for g in named], line
        else:
            assert "objects per model" not in text
        # quotas: the puts refused, by tenant
        rejects = {}
        for l, v in find(m, "mooncake_kv_tenant_quota_rejects_total", source=src).items():
            rejects[dict(l)["tenant_id"]] = rejects.get(dict(l)["tenant_id"], 0) + v
        for tenant, n in rejects.items():
            if n:
                assert re.search(r"puts refused for quota: .*\b%s %s\b" % (re.escape(tenant), demo_view.num(n)),
                                 text), (tenant, n, text)
    return seen_tenants


FORMATS_LINE = re.compile(r"^/metrics in protobuf, as a Prometheus with native histograms asks: (\S+ \S+) \(text: "
                          r"(\S+ \S+)\); the lifetimes of (\w+)'s (\S+) there: one native histogram, ([\d,]+) "
                          r"(?:life|lives) in ([\d,]+) buckets? \(schema (-?\d+)\)$")
SERIES_LINE = re.compile(r"^series of the (\d+) tenants in text \(key groups, quotas and each histogram bucket "
                         r"counted\): ([\d,]+) \(([\d,]+) a tenant\) on the first exporter, which "
                         r"serves only those with news; ([\d,]+) \(([\d,]+) a tenant\) on the second, started with "
                         r"--metrics\.all-series: the set served before$")


def tenants_series(text):
    """(tenants, samples labelled with a tenant) of a text exposition,
    counted on its raw lines."""
    tenants, n = set(), 0
    for line in text.splitlines():
        if line.startswith("#") or 'tenant_id="' not in line:
            continue
        n += 1
        tenants.add((re.search(r'source="([^"]*)"', line).group(1), re.search(r'tenant_id="([^"]*)"', line).group(1)))
    return len(tenants), n


def check_extras(extras, printed):
    """The two lines of what is new: the protobuf exposition with a native
    histogram, and what the tenants cost in series with and without
    --metrics.all-series; each says what the /metrics texts it read say."""
    kinds = sorted(r["kind"] for r in extras)
    assert kinds == ["formats", "series"], kinds
    for rec in extras:
        block = "\n".join(rec["lines"])
        assert block in printed, "a line the viewer recorded is not what the demo printed:\n" + block
        assert all(len(l) <= COLUMNS for l in rec["lines"]), rec["lines"]
        assert len(logical(rec["lines"])) == 1, rec["lines"]
    fmt = [r for r in extras if r["kind"] == "formats"][0]
    fm = FORMATS_LINE.match(logical(fmt["lines"])[0])
    assert fm, fmt["lines"]
    assert fmt["content_type"].startswith("application/vnd.google.protobuf;"), fmt["content_type"]
    assert fm.group(2) == demo_view.size(len(fmt["metrics"].encode())), (fm.group(2), len(fmt["metrics"]))
    assert fm.group(1) == demo_view.size(fmt["protobuf_bytes"]) and fmt["protobuf_bytes"] < len(fmt["metrics"])
    # the tenant with the most lives seen whole; its count between the text scrapes before and after
    before, after = parse_metrics(fmt["metrics"]), parse_metrics(fmt["metrics_after"])
    counts = find(before, "mooncake_kv_object_lifetime_seconds_count")
    src, tenant = fm.group(3), fm.group(4)
    key = dict(source=src, backend_id="mooncake-master-1", tenant_id=tenant)
    first = value(before, "mooncake_kv_object_lifetime_seconds_count", **key)
    assert first == max(counts.values()), (fm.group(0), counts)
    lives = number(fm.group(5))
    assert first <= lives <= \
        value(after, "mooncake_kv_object_lifetime_seconds_count", **key), fm.group(0)
    # at most 16 native buckets a histogram (CHANGELOG), a schema Prometheus reads (-4..8)
    assert 1 <= number(fm.group(6)) <= min(16, lives) and -4 <= int(fm.group(7)) <= 8, fm.group(0)
    ser = [r for r in extras if r["kind"] == "series"][0]
    sm = SERIES_LINE.match(logical(ser["lines"])[0])
    assert sm, ser["lines"]
    (tenants, n), (tenants_all, m) = tenants_series(ser["metrics"]), tenants_series(ser["metrics_all"])
    assert tenants == tenants_all == int(sm.group(1)) == 12, (tenants, tenants_all, sm.group(0))
    assert [number(sm.group(i)) for i in (2, 3, 4, 5)] == [n, round(n / tenants), m, round(m / tenants)], \
        (sm.group(0), n, m)
    assert n < m, (n, m)
    # the first exporter serves only the series with news, the second the set served before
    assert "mooncake_kv_objects_by_placement{" not in ser["metrics"]
    assert "mooncake_kv_objects_by_placement{" in ser["metrics_all"]
    # where a fleet goes next
    for path in ("docs/fleet.md", "dashboards/mooncake-kv-fleet.json"):
        assert path in printed and os.path.exists(os.path.join(ROOT, path)), path


def check_story(demo, records, printed):
    check_extras([r for r in records if "kind" in r], printed)
    records = [r for r in records if "kind" not in r]
    titles = [r["title"] for r in records]
    stages = [r for r in records if re.match(r"^[1-4]/4 ", r["title"])]
    assert [r["title"][:3] for r in stages] == ["1/4", "2/4", "3/4", "4/4"], titles
    assert len(records) > 4, "no live table after the story: " + repr(titles)
    web, web2 = "http://127.0.0.1:%d" % demo.base, "http://127.0.0.1:%d" % (demo.base + 1)
    status2 = "127.0.0.1:%d" % (demo.base + 7)
    assert [r["url"] for r in stages] == [web, web, web, web2], [r["url"] for r in stages]
    for rec in records:
        assert check_record(rec, printed) == 12, rec["title"]
    # today's main (media, the model it is configured with) and release v0.3.12 (object, no model), side by side
    one, one_text = parse_metrics(stages[0]["metrics"]), "\n".join(stages[0]["lines"])
    assert value(one, "mooncake_kv_publisher_dialect", source="default", member="127.0.0.1:%d" % (demo.base + 6),
                 dialect="media") == 1
    assert value(one, "mooncake_kv_publisher_dialect", source="fresh", member="127.0.0.1:%d" % (demo.base + 8),
                 dialect="object") == 1
    assert re.search(r"^  model: meta-llama/Llama-3\.1-8B-Instruct, block size 16", one_text, re.M), one_text
    assert "object (v0.3.12)" in one_text and "media (main since #3818)" in one_text, one_text
    two = parse_metrics(stages[1]["metrics"])
    assert sum(find(two, "mooncake_kv_queue_lost_events_total", source="default").values()) > 0
    assert sum(find(two, "mooncake_kv_master_restarts_total", source="default").values()) >= 1
    two_text = "\n".join(logical(stages[1]["lines"]))
    assert re.search(r"^  lost by \S+: [\d,]+ missing: [\d,]+ dropped by the publisher's queue.*; publisher restarted$",
                     two_text, re.M), two_text
    assert re.search(r"^  stale since \S+ s \(tenant-2\): quota eviction$", two_text, re.M), two_text
    three = parse_metrics(stages[2]["metrics"])
    assert value(three, "mooncake_kv_master_leader", source="default", member=status2) == 1
    assert "default: 2 masters, %s leads; 1 failover;" % status2 in "\n".join(logical(stages[2]["lines"]))
    four = "\n".join(logical(stages[3]["lines"]))
    assert four.count("handover: state taken from the peer exporter") == 3, four
    # every URL it printed answers while it runs (the live view is on): both exporters
    for url in (web, web2):
        assert url + "/metrics" in printed and url + "/status" in printed
    assert web + "/runbook" in printed


def test_demo_tells_the_story(procs):
    seconds = 8
    demo = Demo(procs, seconds)
    try:
        first = demo.wait_line(r"^  \(what http://\S+/metrics says at ", scaled(FIRST_TABLE_S))
        assert first <= scaled(FIRST_TABLE_S), first
        print("     first table after %.1f s (bound %.0f s)" % (first, scaled(FIRST_TABLE_S)), flush=True)
        # while the live view runs, every URL the demo printed answers
        demo.wait_line(r"^Live: ", scaled(60))
        for port in (demo.base, demo.base + 1):
            for path in ("/metrics", "/runbook"):
                status = harness.http_get("http://127.0.0.1:%d%s" % (port, path))[0]
                assert status == 200, (port, path, status)
        rc = demo.finish(scaled(60) + seconds)
        printed = demo.text()
        assert rc == 0, "exit %d:\n%s" % (rc, printed)
        assert "demo stopped: every process it started has exited; its logs removed" in printed, printed
        assert listening(demo.base) == [], listening(demo.base)
        assert log_folders(procs) == [], log_folders(procs)
        # at 80 columns (COLUMNS, as a terminal of 80) every line it printed fits, but
        # those that name the log folder, which is where TMPDIR says
        wide = [l for _, l in demo.lines if len(l) > COLUMNS and procs.dir not in l]
        assert not wide, "lines wider than %d columns:\n%s" % (COLUMNS, "\n".join(wide))
        check_story(demo, demo.records(), printed)
    finally:
        demo.kill()


def test_demo_stops_on_ctrl_c(procs):
    demo = Demo(procs, 600)
    try:
        demo.wait_line(r"^  \(what http://\S+/metrics says at ", scaled(30))
        os.killpg(demo.proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        rc = demo.finish(scaled(15))
        assert rc == 0, "exit %d:\n%s" % (rc, demo.text())
        assert "demo stopped: every process it started has exited; its logs removed" in demo.text(), demo.text()
        assert listening(demo.base) == [], listening(demo.base)
        assert log_folders(procs) == [], log_folders(procs)
    finally:
        demo.kill()


def test_demo_fails_loudly(procs):
    # a port in use: said at once, before anything starts
    busy, demo = socket.socket(), None
    try:
        base = port_base()
        busy.bind(("127.0.0.1", base + 4))
        busy.listen()
        demo = Demo(procs, 5, extra_env={"DEMO_PORT_BASE": str(base)})
        rc = demo.finish(scaled(30))
        assert rc == 1, (rc, demo.text())
        assert "port %d of 127.0.0.1 is in use" % (base + 4) in demo.text(), demo.text()
    finally:
        busy.close()
        if demo:
            demo.kill()
    # a simulator that dies at once: the first wait says so, and the demo stops everything
    demo = Demo(procs, 5, sim="/bin/false")
    try:
        rc = demo.finish(scaled(30))
        assert rc == 1, (rc, demo.text())
        assert re.search(r"demo: sim-\w+ \(pid \d+\) exited while waiting for ", demo.text()), demo.text()
        assert "demo: failed (exit 1); every process stopped; its logs are kept" in demo.text(), demo.text()
        assert listening(demo.base) == [], listening(demo.base)
        # a failed run keeps its logs, and says where
        kept = log_folders(procs)
        assert len(kept) == 1 and kept[0] in demo.text(), (kept, demo.text())
        assert os.path.exists(os.path.join(kept[0], "exporter.log")), os.listdir(kept[0])
    finally:
        demo.kill()


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
