#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The demo's eyes (tools/demo.sh): reads an exporter's /metrics and prints
what it says as a short table a person reads at a glance, every number from
that one answer.

  demo_view.py show [--title TEXT] [--json FILE] [--since T] [wait options] URL [CONDITION...]
      one table: per source the model its events name and the dialect
      they are read in (once when its masters agree), its masters (role,
      stream, last sequence, the master's, behind), what each lost (the
      missing numbers as a total and its parts by cause, restarts),
      leadership, reconciliation and handover;
      per tenant its objects, where they are (cpu only, disk only, both),
      the lives seen whole, and exact or stale, the stale ones' reasons and
      since when a line per distinct pair; quotas and key groups where the
      exporter has them.  Every line fits the terminal (COLUMNS off one,
      else 80).  With conditions, waits
      for them first (as `wait`) and shows the answer that met them.
      --json appends one JSON line: the /metrics text read, the lines
      printed and the figures behind them.
  demo_view.py watch [--seconds N] [--every S] [--json FILE] URL
      the table again every S seconds for N seconds (N 0: until Ctrl-C),
      in place on a terminal while it fits, else a new one every 15 s.
  demo_view.py wait --what TEXT [--timeout S] [--alive PID[:NAME]]... URL CONDITION...
      polls URL/metrics until every CONDITION holds; exit 1 with a message
      saying what did not come (and what was seen) after S seconds (times
      DEMO_WAIT_FACTOR), or at once when a process named by --alive has
      exited.  CONDITION:
        NAME{label="value",...} OP NUMBER         the sum of the matching series
        count(NAME{...} OP NUMBER) OP NUMBER      how many series pass the first test
      OP is one of == != >= <= > <; a selector no series matches fails;
      `ready` waits for URL/-/ready to answer 200.
  demo_view.py formats [--json FILE] [wait options] URL [CONDITION...]
      one line: the size of /metrics in the protobuf exposition (what a
      Prometheus with native histograms asks for) beside the text's, and
      the lifetimes of the tenant with the most lives seen as the native
      histogram it carries there (lives, the buckets they are in, schema).
  demo_view.py series [--json FILE] URL URL_ALL
      one line: the tenants' series on URL (only those with news) and on
      URL_ALL, an exporter of the same sources with --metrics.all-series.
  demo_view.py ports PORT...
      exit 1, naming it, when something listens on one of the loopback ports.

Python's standard library only."""
import argparse
import json
import math
import os
import re
import shutil
import socket
import sys
import textwrap
import time
import http.client
import urllib.parse

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \S+)?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

# The reasons a tenant is stale (mooncake_kv_state_stale_reason), in words.
REASON_WORDS = {
    "startup": "startup",  # the master held objects before the exporter watched it
    "reset": "publisher reset",
    "quota_eviction": "quota eviction",
    "reconcile_incomplete": "reconciliation incomplete",
    "overflow": "over a limit",
    "dialect": "dialect changed",
    "drift": "drift from the master's key count",
    "bootstrap": "handover not proven",
    "removed_after_cleared": "a removal after cleared",
}

# The dialect a member's stream is read in (mooncake_kv_publisher_dialect),
# with the Mooncake that speaks it (docs/upstream.md, "Two dialects"):
# object is release v0.3.12 (main up to 3b5a594); media is
# the subscriber guide's, main since #3818 and dev/conductor.
DIALECT_WORDS = {"object": "object (v0.3.12)", "media": "media (main since #3818)"}


def reason_words(reason):
    return REASON_WORDS.get(reason, reason.replace("_", " "))


def unescape(v):
    return v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


class Scrape:
    """One /metrics answer, parsed."""

    def __init__(self, text, when=None):
        self.text = text
        self.when = time.time() if when is None else when
        self.by = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            if not m:
                continue
            labels = {k: unescape(v) for k, v in LABEL.findall(m.group(2) or "")}
            self.by.setdefault(m.group(1), []).append((labels, float(m.group(3))))

    def series(self, name, **want):
        return [(l, v) for l, v in self.by.get(name, ()) if all(l.get(k) == w for k, w in want.items())]

    def one(self, name, **want):
        s = self.series(name, **want)
        return s[0][1] if s else None


def fetch(url, path, timeout=5.0):
    """(HTTP status, body) of GET url+path; url is http://HOST:PORT."""
    host = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(host.hostname, host.port or 80, timeout=timeout)
    try:
        conn.request("GET", host.path.rstrip("/") + path)
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def fetch_bytes(url, path, accept, timeout=5.0):
    """(Content-Type, body as bytes) of GET url+path asking for `accept`."""
    host = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(host.hostname, host.port or 80, timeout=timeout)
    try:
        conn.request("GET", host.path.rstrip("/") + path, headers={"Accept": accept})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise OSError("%s%s answered HTTP %d" % (url, path, r.status))
        return r.getheader("Content-Type", ""), body
    finally:
        conn.close()


def scrape(url):
    status, body = fetch(url, "/metrics")
    if status != 200:
        raise OSError("%s/metrics answered HTTP %d" % (url, status))
    return Scrape(body)


# ---------------------------------------------------------------- the model

def member_value(s, name, source, member, single, **more):
    """A member's series: labelled with it, or, on a source of one master,
    labelled with the source alone (the exporter leaves `member` off those)."""
    v = s.one(name, source=source, member=member, **more)
    if v is None and single:
        for labels, value in s.series(name, source=source, **more):
            if "member" not in labels:
                return value
    return v


def tenant_sort_key(t):
    return (t != "default", [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", t)])


def model(s):
    """Every figure the table shows, by source, from one scrape."""
    sources = []
    for labels, _ in s.series("mooncake_kv_watched_from_empty"):
        if labels["source"] not in sources:
            sources.append(labels["source"])
    out = {"time": s.when, "sources": []}
    for src in sources:
        members = []
        for labels, _ in s.series("mooncake_kv_master_leader", source=src):
            if labels["member"] not in members:
                members.append(labels["member"])
        single = len(members) == 1
        ms = []
        for m in members:
            role = next((l["role"] for l, v in s.series("mooncake_kv_master_role", source=src, member=m) if v == 1),
                        None)
            dialect = next((l["dialect"] for l, v in s.series("mooncake_kv_publisher_dialect", source=src, member=m)
                            if v == 1), None)

            def mv(name, m=m):
                return member_value(s, name, src, m, single)
            models = [l for l, _ in s.series("mooncake_kv_publisher_model_info", source=src, member=m)]
            ms.append({
                "member": m,
                "role": role,
                "model": models[0] if models else None,
                "leader": s.one("mooncake_kv_master_leader", source=src, member=m) == 1,
                "connected": mv("mooncake_kv_subscriber_connected") == 1,
                "admin_up": mv("mooncake_kv_master_up") == 1,
                "dialect": dialect,
                "last_sequence": mv("mooncake_kv_last_sequence"),
                "master_last_sequence": mv("mooncake_kv_master_last_sequence"),
                "behind": mv("mooncake_kv_sequence_behind"),
                "lists_tenants": s.one("mooncake_kv_master_lists_tenants", source=src, member=m),
                "loss": {
                    "missing": mv("mooncake_kv_sequence_missing_total"),
                    "queue_events": mv("mooncake_kv_queue_lost_events_total"),
                    "transport_messages": mv("mooncake_kv_transport_lost_messages_total"),
                    "unattributed_messages": mv("mooncake_kv_unattributed_lost_messages_total"),
                    "tail_late_messages": mv("mooncake_kv_sequence_tail_late_messages_total"),
                    "restarts": mv("mooncake_kv_master_restarts_total"),
                },
            })
        results = {l["result"]: v for l, v in s.series("mooncake_kv_reconciliations_total", source=src)}
        reconcile = None
        if results:
            reconcile = {
                "results": results,
                "last_success": s.one("mooncake_kv_reconcile_last_success_timestamp_seconds", source=src),
                "corrections": {l["kind"]: v for l, v in s.series("mooncake_kv_reconcile_corrections_total", source=src)},
            }
        boot = {l["result"]: v for l, v in s.series("mooncake_kv_bootstrap_total", source=src)}
        handover = None
        if boot:
            joins = {l["result"]: v for l, v in s.series("mooncake_kv_bootstrap_joins_total", source=src)}
            handover = {
                "results": boot,
                "continued": joins.get("continued"),
                "broken": joins.get("broken"),
                "waiting": s.one("mooncake_kv_bootstrap_joins_waiting", source=src),
                "overlap_messages": s.one("mooncake_kv_bootstrap_overlap_messages_total", source=src),
            }
        quotas = None
        if s.one("mooncake_kv_tenant_quotas_enabled", source=src) == 1:
            quotas = {
                "over": sorted((l["tenant_id"] for l, v in s.series("mooncake_kv_tenant_over_quota", source=src)
                                if v == 1), key=tenant_sort_key),
                "rejects": {},
                "evicted_bytes": {l["tenant_id"]: v for l, v in s.series("mooncake_kv_tenant_evicted_bytes_total",
                                                                         source=src) if v > 0},
            }
            for l, v in s.series("mooncake_kv_tenant_quota_rejects_total", source=src):
                quotas["rejects"][l["tenant_id"]] = quotas["rejects"].get(l["tenant_id"], 0) + v
            quotas["rejects"] = {t: v for t, v in quotas["rejects"].items() if v > 0}
        tenants = []
        for l, objects in s.series("mooncake_kv_objects", source=src):
            key = {"source": src, "backend_id": l["backend_id"], "tenant_id": l["tenant_id"]}
            # the placement from the objects and the medium mix (by_placement: --metrics.all-series only)
            cpu = s.one("mooncake_kv_objects_by_medium", medium="cpu", **key)
            disk = s.one("mooncake_kv_objects_by_medium", medium="disk", **key)
            place = {} if cpu is None or disk is None else {
                "cpu_only": objects - disk, "disk_only": objects - cpu, "cpu_and_disk": cpu + disk - objects}
            # with residency on, a count of lives appears at its first: 0 before
            residency = s.one("mooncake_kv_object_age_tracked_objects", **key) is not None
            news = (lambda name: s.one(name, **key) or (0 if residency else None))
            reasons = [rl["reason"] for rl, v in s.series("mooncake_kv_state_stale_reason", **key) if v == 1]
            groups = {gl["key_group"]: v for gl, v in s.series("mooncake_kv_objects_by_key_group", **key)}
            tenants.append({
                "backend_id": l["backend_id"],
                "tenant_id": l["tenant_id"],
                "objects": objects,
                "cpu_only": place.get("cpu_only"),
                "disk_only": place.get("disk_only"),
                "cpu_and_disk": place.get("cpu_and_disk"),
                "stale": s.one("mooncake_kv_state_stale", **key),
                "reasons": reasons,
                "stale_since": s.one("mooncake_kv_state_stale_since_timestamp_seconds", **key),
                "lives_seen": news("mooncake_kv_object_lifetime_seconds_count"),
                "lives_seconds": news("mooncake_kv_object_lifetime_seconds_sum"),
                "lives_unseen": news("mooncake_kv_object_lifetime_unobserved_total"),
                "key_groups": groups,
            })
        tenants.sort(key=lambda t: (t["backend_id"], tenant_sort_key(t["tenant_id"])))
        out["sources"].append({
            "source": src,
            "members": ms,
            "failovers": s.one("mooncake_kv_master_failovers_total", source=src),
            "split_brain": s.one("mooncake_kv_master_split_brain", source=src),
            "watched_from_empty": s.one("mooncake_kv_watched_from_empty", source=src),
            "reconcile": reconcile,
            "handover": handover,
            "quotas": quotas,
            "tenants": tenants,
        })
    out["exporter"] = {
        "tracked_objects": s.one("mooncake_kv_tracked_objects"),
        "scrape_seconds": s.one("mooncake_kv_exporter_last_scrape_duration_seconds"),
        "scrape_bytes": s.one("mooncake_kv_exporter_last_scrape_bytes"),
    }
    return out


# ---------------------------------------------------------------- the words

def num(v):
    if v is None:
        return "-"
    if v != v or math.isinf(v):
        return str(v)
    return "{:,}".format(int(v)) if v == int(v) else "{:,.1f}".format(v)


def plural(n, one, many=None):
    return "%s %s" % (num(n), one if n == 1 else (many or one + "s"))


def duration(sec):
    sec = max(0, int(round(sec)))
    if sec < 60:
        return "%d s" % sec
    if sec < 3600:
        return "%d min %d s" % (sec // 60, sec % 60) if sec % 60 else "%d min" % (sec // 60)
    return "%d h %d min" % (sec // 3600, sec % 3600 // 60)


def short_duration(sec):
    if sec is None:
        return "-"
    if sec < 10:
        return "%.1f s" % sec
    return duration(sec)


def size(b):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f:
            return "%.1f %s" % (b / f, unit)
    return "%d B" % b


def loss_words(loss):
    """A member's loss as a total and its parts, in the metrics' words: every
    missing sequence number is in one bucket once a poll has attributed it
    (queue + transport + unattributed = missing; docs/design.md, "Loss by
    cause"), the newest waiting for the next poll; restarts apart."""
    parts = []
    missing = loss["missing"] or 0
    if missing:
        causes = []
        if loss["queue_events"]:
            causes.append("%s dropped by the publisher's queue" % num(loss["queue_events"]))
        if loss["transport_messages"]:
            causes.append("%s lost in transport" % num(loss["transport_messages"]))
        if loss["unattributed_messages"]:
            causes.append("%s unattributed (cause unknown)" % num(loss["unattributed_messages"]))
        waiting = missing - sum(loss[k] or 0 for k in ("queue_events", "transport_messages", "unattributed_messages"))
        if waiting > 0:
            causes.append("%s not attributed yet" % num(waiting))
        parts.append("%s missing: %s" % (num(missing), ", ".join(causes)))
    if loss["tail_late_messages"]:
        parts.append("%s of a lost tail came late" % plural(loss["tail_late_messages"], "message"))
    if loss["restarts"]:
        parts.append("%s restarted" % ("publisher" if loss["restarts"] == 1
                                       else "publisher %s" % plural(loss["restarts"], "time")))
    return "; ".join(parts) if parts else "none"


def stale_groups(tenants, now):
    """The stale tenants by reasons and since when, each distinct pair once
    with its tenants: [(since, reasons, [tenant])], since "" when unknown."""
    groups = []
    for t in tenants:
        if not t["stale"]:
            continue
        since = duration(now - t["stale_since"]) if t["stale_since"] is not None else ""
        reasons = ", ".join(reason_words(r) for r in t["reasons"])
        for g in groups:
            if g[0] == since and g[1] == reasons:
                g[2].append(t)
                break
        else:
            groups.append((since, reasons, [t]))
    return groups


def state_words(t, now):
    if t["stale"] == 0:
        return "exact"
    if t["stale"] is None:
        return "-"
    since = " since %s" % duration(now - t["stale_since"]) if t["stale_since"] is not None else ""
    return "stale%s: %s" % (since, ", ".join(reason_words(r) for r in t["reasons"]))


def model_words(ctx):
    """A member's model context (mooncake_kv_publisher_model_info's labels)
    in words."""
    if not any(ctx.get(k) for k in ("model_name", "lora_name", "block_size", "dp_rank")):
        return "none named on its events"
    words = [ctx.get("model_name") or "no model name"]
    if ctx.get("lora_name"):
        words.append("LoRA " + ctx["lora_name"])
    if ctx.get("block_size"):
        words.append("block size " + ctx["block_size"])
    if ctx.get("dp_rank"):
        words.append("dp rank " + ctx["dp_rank"])
    if ctx.get("additional_salt") == "present":
        words.append("salted")
    return ", ".join(words)


def model_lines(src):
    """One line per model context the source's members stamp, naming the
    members when it has several: what a newcomer asks first (which model
    does this store serve?)."""
    contexts = []  # (words, [members])
    for m in src["members"]:
        if m["model"] is None:
            continue
        w = model_words(m["model"])
        for c in contexts:
            if c[0] == w:
                c[1].append(m["member"])
                break
        else:
            contexts.append((w, [m["member"]]))
    out = []
    for w, members in contexts:
        who = ""
        if len(src["members"]) > 1:  # a standby that never published names none yet
            who = " (%s)" % ("every" + NBSP + "master" if len(members) == len(src["members"])
                             else "the events of " + ", ".join(members))
        out.append("model: %s%s" % (w, who))
    return out


def dialect_lines(src):
    """The dialect the source's masters' streams are read in, once when they
    agree, else one line per dialect naming its masters."""
    groups = []
    for m in src["members"]:
        w = DIALECT_WORDS.get(m["dialect"], "not yet known")
        for g in groups:
            if g[0] == w:
                g[1].append(m["member"])
                break
        else:
            groups.append((w, [m["member"]]))
    out = []
    for w, members in groups:
        who = ""
        if len(src["members"]) > 1:
            who = " of " + ("every" + NBSP + "master" if len(members) == len(src["members"]) else ", ".join(members))
        out.append("dialect%s: %s" % (who, w))
    return out


def source_headline(src):
    ms = src["members"]
    leader = next((m["member"] for m in ms if m["leader"]), None)
    if len(ms) == 1:
        words = ["1 master"]
    else:
        words = ["%d masters, %s leads" % (len(ms), leader or "none")]
    if src["failovers"]:
        words.append(plural(src["failovers"], "failover"))
    if src["split_brain"]:
        words.append("SPLIT BRAIN: more than one serves")
    if src["watched_from_empty"] == 1:
        words.append("watched from empty: every tenant exact from its first event")
    lists = [m["lists_tenants"] for m in ms if m["lists_tenants"] is not None]
    if src["reconcile"] is None:
        words.append("reconciliation off")
    elif lists and lists[0] == 1 and all(v == 1 for v in lists):
        words.append("every tenant reconciled from its own key listing")
    elif lists and all(v == 0 for v in lists):
        words.append("tenant default reconciled (%s no other tenant)" % ("its master lists" if len(ms) == 1
                                                                           else "its masters list"))
    else:  # not asked yet: no tenant but default was stale since this exporter started
        words.append("reconciled with its master")
    return "; ".join(words)


def reconcile_words(rec, now):
    res = rec["results"]
    if not any(res.values()):
        return "none yet by this exporter"
    parts = ["%s ok" % num(res.get("ok", 0))]
    for k in ("failed", "aborted", "superseded"):
        if res.get(k):
            parts.append("%s %s" % (num(res[k]), k))
    text = ", ".join(parts)
    if rec["last_success"] is not None:
        ago = now - rec["last_success"]
        text += ", last just now" if ago < 1 else ", last %s ago" % duration(ago)
    c = rec["corrections"]
    fixes = []
    if c.get("added"):
        fixes.append("%s the stream had missed" % plural(c["added"], "object"))
    if c.get("removed"):
        fixes.append("%s the master no longer had" % plural(c["removed"], "object"))
    if c.get("medium"):
        fixes.append("%s on other media" % plural(c["medium"], "object"))
    if fixes:
        text += "; corrected " + ", ".join(fixes)
    return text


def handover_words(h):
    taken = h["results"].get("taken", 0)
    if not taken:
        refused = [k for k, v in h["results"].items() if v]
        return "state not taken from the peer (%s): started empty" % (", ".join(refused) or "no peer answered")
    parts = ["state taken from the peer exporter"]
    if h["continued"]:
        parts.append("%s proved its stream continues it" % plural(h["continued"], "master"))
    if h["waiting"]:
        parts.append("%s waiting for a message that proves it (a standby publishes none)"
                     % plural(h["waiting"], "master"))
    if h["broken"]:
        parts.append("%s could not prove it: its tenants turned stale" % plural(h["broken"], "master"))
    return "; ".join(parts)


GREEN, YELLOW, RED, BOLD, RESET = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[1m", "\x1b[0m"


def table(rows, aligns, width=None, paint=None):
    """Rows of cells, each column as wide as its widest cell.  A row wider
    than `width` has its last cell on a line of its own, further in.
    paint(text) colours a row's last cell (not the header's)."""
    n = len(aligns)
    widths = [max(len(r[i]) for r in rows) for i in range(n)]

    def head(r):
        return "  ".join(c.rjust(widths[i]) if aligns[i] == ">" else c.ljust(widths[i]) for i, c in enumerate(r[:-1]))

    def last(r):
        return r[-1].rjust(widths[-1]) if aligns[-1] == ">" else r[-1]
    paint = paint or (lambda text: text)
    lines = [head(rows[0]) + "  " + last(rows[0])]
    if width and len(lines[0]) > width:
        lines = [head(rows[0]).rstrip(), "      " + rows[0][-1]]
    for r in rows[1:]:
        if width and len(head(r) + "  " + last(r)) > width:
            lines += [head(r).rstrip(), "      " + paint(r[-1])]
        else:
            lines.append(head(r) + "  " + paint(last(r)))
    return lines


NBSP = "\u00a0"  # joins words prose() keeps on one line


def prose(text, width, indent="  "):
    """A line of words, wrapped at `width` (or 120), continued further in:
    four spaces in at least, so that a reader (tests/integration/
    test_demo.py) can join a line's continuations."""
    return [line.replace(NBSP, " ") for line in textwrap.wrap(
        text, width=width or 120, initial_indent=indent, subsequent_indent=max(indent + "  ", "    "),
        break_on_hyphens=False)]


def render(view, url, width=None, color=False):
    """The table's lines: `width` the terminal's (None: lines as long as
    they are), `color` for a terminal."""
    now = view["time"]

    def c(code, text):
        return code + text + RESET if color else text

    def state_paint(text):
        return c(GREEN, text) if text == "exact" else c(YELLOW, text) if text.startswith("stale") else text

    def loss_paint(text):
        return c(RED, text)
    lines = []
    for src in view["sources"]:
        head = prose("%s: %s" % (src["source"], source_headline(src)), width, indent="")
        head[0] = c(BOLD, src["source"]) + head[0][len(src["source"]):]
        lines += head
        for line in model_lines(src):
            lines += prose(line, width)
        for line in dialect_lines(src):
            lines += prose(line, width)
        rows = [["  master", "role", "stream", "last seq", "master said", "behind"]]
        for m in src["members"]:
            stream = "connected" if m["connected"] else "standing by" if m["role"] == "standby" else "not connected"
            if not m["admin_up"]:
                stream += ", admin down"
            rows.append(["  " + m["member"], m["role"] or "-", stream, num(m["last_sequence"]),
                         num(m["master_last_sequence"]), num(m["behind"])])
        lines += table(rows, "<<<>>>", width)
        losses = [(m["member"], loss_words(m["loss"])) for m in src["members"]]
        if all(w == "none" for _, w in losses):
            lines.append("  lost: none")
        else:
            for member, words in losses:
                lost = prose(("lost by %s: " % member if len(losses) > 1 else "lost: ") + words, width)
                lines += [loss_paint(l) if words != "none" else l for l in lost]
        if src["reconcile"]:
            lines += prose("reconciliation: " + reconcile_words(src["reconcile"], now), width)
        if src["handover"]:
            lines += prose("handover: " + handover_words(src["handover"]), width)
        backends = sorted({t["backend_id"] for t in src["tenants"]})
        rows = [["  tenant" if len(backends) < 2 else "  backend/tenant", "objects", "cpu only", "disk only", "both",
                 "lives seen", "mean life", "state"]]
        for t in src["tenants"]:
            name = t["tenant_id"] if len(backends) < 2 else t["backend_id"] + "/" + t["tenant_id"]
            life = t["lives_seconds"] / t["lives_seen"] if t["lives_seen"] else None
            state = "exact" if t["stale"] == 0 else "stale" if t["stale"] else "-"
            rows.append(["  " + name, num(t["objects"]), num(t["cpu_only"]), num(t["disk_only"]),
                         num(t["cpu_and_disk"]), num(t["lives_seen"]), short_duration(life), state])
        if len(rows) > 1:
            lines += table(rows, "<>>>>>><", width, state_paint)
        else:
            lines.append("  no tenant yet")
        for since, reasons, ts in stale_groups(src["tenants"], now):
            names = ", ".join(t["tenant_id"] if len(backends) < 2 else t["backend_id"] + "/" + t["tenant_id"]
                              for t in ts)
            lines += [c(YELLOW, l) for l in prose("stale%s (%s): %s" % (" since " + since if since else "", names,
                                                                      reasons), width)]
        q = src["quotas"]
        if q is not None:
            words = []
            if q["over"]:
                words.append("over quota: " + ", ".join(q["over"]))
            if q["rejects"]:
                words.append("puts refused for quota: " + ", ".join(
                    "%s%s%s" % (t, NBSP, num(v)) for t, v in sorted(q["rejects"].items(), key=lambda i: tenant_sort_key(i[0]))))
            if q["evicted_bytes"]:
                words.append("evicted for quota, without an event: " + ", ".join(
                    "%s%s%s" % (t, NBSP, size(v).replace(" ", NBSP)) for t, v in sorted(q["evicted_bytes"].items(),
                                                              key=lambda i: tenant_sort_key(i[0]))))
            lines += prose("quotas (the leader's): " + ("; ".join(words) if words else "every tenant within its quota"),
                           width)
        groups = sorted({g for t in src["tenants"] for g, v in t["key_groups"].items() if g and v})
        if groups:
            lines.append("  objects per model (the key groups of --key.group-regex):")
            rows = [["  tenant"] + groups]
            if any(t["key_groups"].get("") for t in src["tenants"]):
                rows[0].append("(no model in key)")
            for t in src["tenants"]:
                rows.append(["  " + t["tenant_id"]] + [num(t["key_groups"].get(g, 0)) for g in groups]
                            + ([num(t["key_groups"].get("", 0))] if len(rows[0]) > len(groups) + 1 else []))
            lines += table(rows, "<" + ">" * (len(rows[0]) - 1))
        lines.append("")
    e = view["exporter"]
    text = "exporter: %s in memory, of %s in %s" % (
        plural(e["tracked_objects"] or 0, "object"),
        plural(sum(len(s["tenants"]) for s in view["sources"]), "tenant"), plural(len(view["sources"]), "source"))
    if e["scrape_bytes"] and e["scrape_seconds"] is not None:
        text += "; the scrape before this one took it %.1f ms for %s" % (e["scrape_seconds"] * 1000,
                                                                          size(e["scrape_bytes"]))
    lines += prose(text, width, indent="")
    return lines


def header(title, url, width, since=None, when=None, color=False):
    out = []
    if title:
        out += [BOLD + line + RESET if color else line for line in textwrap.wrap(title, width=min(width, 100))]
    when = time.time() if when is None else when
    at = time.strftime("%H:%M:%S", time.localtime(when))
    if since:
        at += ", %.1f s into the demo" % (when - since)
    out += prose("(what %s/metrics says at %s)" % (url.rstrip("/"), at), width)
    out.append("")
    return out


def term_width():
    """The terminal's columns; not on a terminal, COLUMNS, else 80: every
    line the demo prints fits them."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((80, 40)).columns
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 80


def one_table(url, title, json_path, since=None, s=None):
    """The lines to print (coloured on a terminal, unless NO_COLOR is set),
    of the scrape s or of a new one; with json_path, appends the record of
    them there."""
    s = s or scrape(url)
    view = model(s)
    width = term_width()
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    lines = header(title, url, width, since, s.when) + render(view, url, width)
    if json_path:
        with open(json_path, "a") as f:
            f.write(json.dumps({"url": url, "title": title, "time": view["time"], "metrics": s.text,
                                "view": view, "lines": lines}) + "\n")
    if color:
        lines = header(title, url, width, since, s.when, True) + render(view, url, width, True)
    return lines


# ------------------------------------------------- the protobuf exposition
# Just enough of protobuf's wire format to read one histogram out of the
# delimited MetricFamily messages Prometheus asks for with native histograms
# (io.prometheus.client: MetricFamily name 1, metric 4; Metric label 1,
# histogram 7; LabelPair name 1, value 2; Histogram sample_count 1, schema 5,
# zero_count 7, positive_delta 13).

PROTO_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
                "application/openmetrics-text;version=1.0.0;q=0.8,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def varint(b, i):
    n = shift = 0
    while True:
        x = b[i]
        n, shift, i = n | (x & 0x7f) << shift, shift + 7, i + 1
        if not x & 0x80:
            return n, i


def fields(b):
    """(field number, value) of a message's fields: a varint as an int, the
    rest as bytes."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        wire = key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("protobuf wire type %d" % wire)
        yield key >> 3, v


def zigzag(v):
    return (v >> 1) ^ -(v & 1)  # sint32, sint64


def native_histograms(body, family):
    """{(source, tenant_id): (count, schema, native buckets holding a life)}
    of `family`'s histograms in a delimited protobuf body."""
    out, i = {}, 0
    while i < len(body):
        n, i = varint(body, i)
        fam, i = body[i:i + n], i + n
        if dict(fields(fam)).get(1) != family.encode():
            continue
        for f, metric in fields(fam):
            if f != 4:
                continue
            labels, hist = {}, None
            for g, v in fields(metric):
                if g == 1:
                    pair = dict(fields(v))
                    labels[pair.get(1, b"").decode()] = pair.get(2, b"").decode()
                elif g == 7:
                    hist = v
            if hist is None:
                continue
            count, schema, buckets, deltas = 0, None, 0, []
            for g, v in fields(hist):
                if g == 1:
                    count = v
                elif g == 5:
                    schema = zigzag(v)
                elif g == 7:
                    buckets += v > 0  # the zero bucket's count
                elif g == 13:  # positive_delta: packed, or one at a time
                    j = 0
                    while isinstance(v, bytes) and j < len(v):
                        d, j = varint(v, j)
                        deltas.append(zigzag(d))
                    if not isinstance(v, bytes):
                        deltas.append(zigzag(v))
            total = 0
            for d in deltas:  # each bucket's count, as the change from the one before
                total += d
                buckets += total > 0
            out[(labels.get("source"), labels.get("tenant_id"))] = (count, schema, buckets)
    return out


def busiest_tenant(s):
    """(source, tenant_id) of the tenant with the most lives seen whole."""
    best = max(s.series("mooncake_kv_object_lifetime_seconds_count"), key=lambda lv: lv[1], default=None)
    return (best[0]["source"], best[0]["tenant_id"]) if best else None


def tenant_series(s):
    """(tenants, their samples) in a text exposition: the series a Prometheus
    scraping it stores for the tenants."""
    tenants, n = set(), 0
    for rows in s.by.values():
        for labels, _ in rows:
            if "tenant_id" in labels:
                tenants.add((labels.get("source"), labels["tenant_id"]))
                n += 1
    return len(tenants), n


def cmd_formats(a):
    """One line: the protobuf exposition a Prometheus with native histograms
    asks for, its size beside the text's, and one tenant's lifetimes as the
    native histogram it carries."""
    s = (wait(a) if a.conditions else None) or scrape(a.url)
    who = busiest_tenant(s)
    ctype, proto = fetch_bytes(a.url, "/metrics", PROTO_ACCEPT)
    after = scrape(a.url)  # a life may end between the two: its count lies between this one's and s's
    if not ctype.startswith("application/vnd.google.protobuf"):
        raise SystemExit("demo: %s/metrics answered %s to protobuf" % (a.url, ctype))
    text = "/metrics in protobuf, as a Prometheus with native histograms asks: %s (text: %s)" % (
        size(len(proto)), size(len(s.text.encode())))
    hist = native_histograms(proto, "mooncake_kv_object_lifetime_seconds").get(who)
    if hist:
        count, schema, buckets = hist
        text += "; the lifetimes of %s's %s there: one native histogram, %s in %s (schema %d)" % (
            who[0], who[1], plural(count, "life", "lives"), plural(buckets, "bucket"), schema)
    lines = prose(text, term_width(), indent="")
    print("\n".join(lines), flush=True)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"kind": "formats", "url": a.url, "lines": lines, "metrics": s.text,
                                "metrics_after": after.text, "protobuf_bytes": len(proto), "content_type": ctype,
                                "tenant": who, "native": hist}) + "\n")


def cmd_series(a):
    """One line: what the tenants cost in series on an exporter that serves
    only the series with news, and on one with --metrics.all-series."""
    news, every = scrape(a.url), scrape(a.url_all)
    (tenants, n), (_, m) = tenant_series(news), tenant_series(every)
    each = lambda x: num(round(x / tenants)) if tenants else "-"
    lines = prose("series of the %s in text (key groups, quotas and each histogram bucket counted): "
                  "%s (%s a tenant) on the first exporter, which serves only those with news; "
                  "%s (%s a tenant) on the second, started with --metrics.all-series: the set served before" % (
                      plural(tenants, "tenant"), num(n), each(n), num(m), each(m)), term_width(), indent="")
    print("\n".join(lines), flush=True)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"kind": "series", "url": a.url, "url_all": a.url_all, "lines": lines,
                                "metrics": news.text, "metrics_all": every.text, "tenants": tenants,
                                "series": n, "series_all": m}) + "\n")


# ---------------------------------------------------------------- commands

LEGEND = ("How to read it: last seq is the number of the last message the exporter received from the master's "
          "publisher, master said the one the master reported at its last poll, behind how far the stream is "
          "behind it; lost counts the missing sequence numbers and what took them (the publisher's queue, "
          "transport, or unattributed when a restart took the counters that would tell); cpu only, disk only and both say "
          "where a tenant's objects are; lives seen counts the objects whose whole life (stored, then removed) "
          "the exporter saw, mean life how long they lasted; a stale tenant's figures may be incomplete, for the "
          "reasons named, since the time shown.")


def cmd_show(a):
    s = wait(a) if a.conditions else None
    lines = one_table(a.url, a.title, a.json, a.since, s)
    if a.legend:
        lines += [""] + prose(LEGEND, min(term_width(), 100), indent="")
    print("\n".join(lines), flush=True)


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def cmd_watch(a):
    """On a terminal tall enough for the table, it is redrawn in place every
    --every seconds; else a new one follows every 15 s, and a last one at
    the end of --seconds."""
    end = time.time() + a.seconds if a.seconds > 0 else None
    tty = sys.stdout.isatty()

    def rows(lines):
        """The screen rows the lines take, when they fit the screen."""
        if not tty:
            return 0
        screen = shutil.get_terminal_size((100, 40))
        n = sum(max(1, math.ceil(len(ANSI.sub("", l)) / screen.columns)) for l in lines)
        return n if n < screen.lines else 0
    try:
        fits = rows(one_table(a.url, "", None, a.since)) > 0
    except OSError:
        fits = False
    every = a.every if fits else max(a.every, 15)
    print("\n".join(prose("%s: a new table every %g s%s." % (a.title or "Live", every, " for %g s" % a.seconds
                                                             if end else ", until Ctrl-C"), term_width(), indent="")),
          flush=True)
    shown, first = 0, True
    while end is None or time.time() < end:
        if not (first and fits):
            time.sleep(max(0, every if end is None else min(every, end - time.time())))
        first = False
        try:
            lines = one_table(a.url, "", a.json, a.since)
        except OSError as e:
            lines = ["(%s did not answer: %s)" % (a.url, e)]
        n = rows(lines)
        sys.stdout.write("\x1b[%dF\x1b[J" % shown if shown and n else "\n")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        shown = n
        every = a.every if n else max(a.every, 15)


COND = re.compile(r'^\s*(?:(count)\(\s*)?([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s*'
                  r'(?:(==|!=|>=|<=|>|<)\s*([-+0-9.eE]+)\s*\)\s*)?(==|!=|>=|<=|>|<)\s*([-+0-9.eE]+)\s*$')
OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b,
       "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b}


def check(s, cond):
    """(holds, what was seen) for one CONDITION against a scrape."""
    m = COND.match(cond)
    if not m:
        raise SystemExit("demo_view: cannot read the condition %r" % cond)
    count, name, sel, inner_op, inner_v, op, v = m.groups()
    if bool(count) != bool(inner_op):
        raise SystemExit("demo_view: cannot read the condition %r" % cond)
    want = {k: unescape(x) for k, x in LABEL.findall(sel or "")}
    series = s.series(name, **want)
    if count:
        seen = sum(1 for _, x in series if OPS[inner_op](x, float(inner_v)))
    else:
        seen = sum(x for _, x in series)
    return bool(series) and OPS[op](seen, float(v)), "%s: %s" % (cond, num(seen) if series else "no such series")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by the shell) is gone as well
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait(a):
    """Polls until every condition of `a` holds: returns the scrape that
    showed it (None when only readiness was asked), or exits 1 saying what
    did not come within a.timeout seconds times DEMO_WAIT_FACTOR."""
    bound = a.timeout * float(os.environ.get("DEMO_WAIT_FACTOR") or 1)
    start = time.time()
    seen = ["nothing yet"]
    while True:
        for pid, name in a.alive:
            if not alive(pid):
                print("demo: %s (pid %d) exited while waiting for %s" % (name, pid, a.what), file=sys.stderr)
                sys.exit(1)
        try:
            results, s = [], None
            for cond in a.conditions:
                if cond == "ready":
                    status = fetch(a.url, "/-/ready", timeout=2)[0]
                    results.append((status == 200, "ready: HTTP %d" % status))
                else:
                    s = s or scrape(a.url)
                    results.append(check(s, cond))
            seen = [w for _, w in results]
            if all(ok for ok, _ in results):
                if os.environ.get("DEMO_TRACE"):
                    print("demo: %.1f s for %s" % (time.time() - start, a.what), file=sys.stderr)
                return s
        except OSError as e:
            seen = ["%s did not answer: %s" % (a.url, e)]
        if time.time() - start >= bound:
            print("demo: waited %.0f s for %s; it did not come. Last seen:\n  %s"
                  % (bound, a.what, "\n  ".join(seen)), file=sys.stderr)
            sys.exit(1)
        time.sleep(0.1)


def cmd_wait(a):
    wait(a)


def cmd_ports(a):
    """Something listening on a port the demo would bind is another demo, or
    another server: said before anything starts."""
    for p in a.ports:
        try:
            socket.create_connection(("127.0.0.1", p), timeout=0.5).close()
        except OSError:
            continue
        print("demo: port %d of 127.0.0.1 is in use (something listens there): is a demo running already? "
              "DEMO_PORT_BASE=N picks ten others from N on" % p, file=sys.stderr)
        sys.exit(1)


def pid_name(v):
    pid, _, name = v.partition(":")
    return int(pid), name or "process"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    def waits(p, required):
        p.add_argument("--what", required=required, default="the conditions",
                       help="what the conditions mean, for the message if they fail")
        p.add_argument("--timeout", type=float, default=20, help="seconds, times DEMO_WAIT_FACTOR")
        p.add_argument("--alive", type=pid_name, action="append", default=[], metavar="PID[:NAME]")
        p.add_argument("conditions", nargs="+" if required else "*")
    show = sub.add_parser("show")
    show.add_argument("url")
    show.add_argument("--title", default="")
    show.add_argument("--json")
    show.add_argument("--since", type=float, help="the demo's start (unix seconds): the header says how long ago")
    show.add_argument("--legend", action="store_true", help="how to read the table, under it")
    waits(show, False)
    watch = sub.add_parser("watch")
    watch.add_argument("url")
    watch.add_argument("--title", default="")
    watch.add_argument("--json")
    watch.add_argument("--since", type=float)
    watch.add_argument("--seconds", type=float, default=0)
    watch.add_argument("--every", type=float, default=2)
    wait_ = sub.add_parser("wait")
    wait_.add_argument("url")
    waits(wait_, True)
    formats = sub.add_parser("formats")
    formats.add_argument("url")
    formats.add_argument("--json")
    waits(formats, False)
    series = sub.add_parser("series")
    series.add_argument("url")
    series.add_argument("url_all", help="an exporter of the same sources with --metrics.all-series")
    series.add_argument("--json")
    ports = sub.add_parser("ports")
    ports.add_argument("ports", type=int, nargs="+")
    a = p.parse_args(argv)
    try:
        {"show": cmd_show, "watch": cmd_watch, "wait": cmd_wait, "ports": cmd_ports, "formats": cmd_formats,
         "series": cmd_series}[a.cmd](a)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as e:
        if a.cmd == "ports":
            raise
        print("demo: %s did not answer: %s" % (a.url, getattr(e, "reason", e)), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
