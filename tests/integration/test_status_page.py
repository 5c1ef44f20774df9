# SPDX-License-Identifier: Apache-2.0
"""Integration tests of the status page (/status) in a real browser: headless Chromium
(Debian's `chromium`, which tools/deps.sh installs) loads the page the exporter serves,
and the DOM it rendered is read back. Every figure on it (each names its family and
labels in data- attributes, docs/design.md "The status page") equals the sample /metrics
gives for the same moment, the streams settled first, for sources, members and tenants;
every member and tenant /metrics knows has its row; tenants come stale first, then by
objects; a stale tenant shows every reason and since when; the filter and the limit say
what they left out; at 1280 px the page fits the window (nothing scrolls sideways or is
clipped, measured in Chromium); the tenants' one backend is said once; a bad limit is refused with 400 saying why; with basic auth on,
/status without credentials is 401.

Without a chromium on the PATH the stories print why and pass, except under CI=true,
where tools/deps.sh has installed it and its absence fails them. (The README's screenshot
is the demo's: DEMO_SCREENSHOT=docs/status-page.png tools/demo.sh.)

usage: test_status_page.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import base64
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

from harness import Exporter, Sim, free_port, http_get, run_tests, wait_for
from harness import bcrypt
from harness import settle
from test_ha import settle as settle_ha
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
NNBSP = "\u202f"  # the page groups the digits of large numbers with it


def need_chromium():
    """True when the browser is there; else says why the story does not run (and
    fails under CI, where tools/deps.sh installs it)."""
    if CHROMIUM:
        return True
    if os.environ.get("CI") == "true":
        raise AssertionError("no chromium on the PATH: tools/deps.sh installs Debian's chromium")
    print("  (no chromium on the PATH: install Debian's chromium, as tools/deps.sh does; skipped)")
    return False


def browse(procs, url, *args):
    """Headless Chromium at url: the DOM it rendered (--dump-dom), or what args ask."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=procs.dir)
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-extensions", "--disable-background-networking",
            "--user-data-dir=" + profile] + (list(args) or ["--dump-dom"]) + [url]
    r = subprocess.run(argv, capture_output=True, timeout=scaled(120))
    assert r.returncode == 0, "chromium exited %d: %s" % (r.returncode, r.stderr.decode()[-2000:])
    return r.stdout.decode("utf-8")


# Measured in the page itself: the document no wider than the window, and no box of it
# (a source's section, a table's scroller, a table, a cell) whose content is wider than
# the box, so that nothing scrolls sideways or is clipped.
MEASURE = """<script>
var over = [];
document.querySelectorAll('main, section, div, dl, table, th, td, form, p, h2, h3').forEach(function (e) {
  if (e.scrollWidth > e.clientWidth + 1)
    over.push(e.tagName.toLowerCase() + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth + ': '
              + e.textContent.slice(0, 60));
});
var out = document.createElement('pre');
out.id = 'fit';
out.textContent = JSON.stringify({page: document.documentElement.scrollWidth, window: window.innerWidth,
                                  tables: document.querySelectorAll('table').length, over: over});
document.body.appendChild(out);
</script>"""


def check_fits(procs, url, width=1280):
    """The page as served, laid out by Chromium in a window `width` px wide: returns the
    measure (MEASURE) and asserts nothing is wider than its box. The page runs no script
    (its Content-Security-Policy forbids any), so a copy of it without that one meta
    element, and with the measuring script at its end, is what Chromium loads."""
    status, headers, body = http_get(url)
    assert status == 200, status
    page, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", body.decode("utf-8"))
    assert n == 1 and page.count("</body>") == 1
    path = os.path.join(procs.dir, "status-measured.html")
    with open(path, "w") as f:
        f.write(page.replace("</body>", MEASURE + "</body>"))
    dom = DOM(browse(procs, "file://" + path, "--window-size=%d,900" % width, "--hide-scrollbars", "--dump-dom"))
    fit = json.loads(dom.by_id("fit").text())
    assert fit["window"] == width and fit["tables"] > 0, fit
    assert fit["page"] <= fit["window"] and not fit["over"], \
        "at %d px the page is %d px wide; wider than their box:\n  %s" % (width, fit["page"], "\n  ".join(fit["over"]))
    return fit


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, pred):
        for c in self.children:
            if isinstance(c, Node):
                if pred(c):
                    yield c
                yield from c.find(pred)

    def classes(self):
        return (self.attrs.get("class") or "").split()


class DOM(HTMLParser):
    """The serialised DOM as a tree (Chromium closes every element that is not void)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#document", [], None)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)

    def by_id(self, i):
        found = list(self.root.find(lambda n: n.attrs.get("id") == i))
        assert len(found) == 1, "id %s: %d elements" % (i, len(found))
        return found[0]


def scope_of(node):
    """The labels of the scope a figure stands in: its row's or section's (data-source,
    -member, -backend, -tenant), and a member's span inside a section."""
    labels, member = {}, None
    n = node
    while n is not None:
        a = n.attrs
        if "data-member" in a and "data-source" not in a and member is None:
            member = a["data-member"]
        if "data-source" in a:
            labels["source"] = a["data-source"]
            if "data-member" in a:
                member = a["data-member"]
            if "data-tenant" in a:
                labels["backend_id"], labels["tenant_id"] = a["data-backend"], a["data-tenant"]
            break
        n = n.parent
    return labels, member


def figures(dom):
    """Every figure: (node, family, labels with and without its member, value text)."""
    out = []
    for n in dom.root.find(lambda n: "data-m" in n.attrs):
        labels, member = scope_of(n)
        if "data-l" in n.attrs:
            k, v = n.attrs["data-l"].split("=", 1)
            labels[k] = v
        out.append((n, n.attrs["data-m"], labels, member, n.attrs["data-v"]))
    return out


def sample(m, family, labels, member):
    """The sample of /metrics the figure names: with its member label where the family
    has one (every member's family of a source of several masters, the HA families)."""
    if member is not None:
        key = (family, frozenset(dict(labels, member=member).items()))
        if key in m.samples:
            return m.samples[key]
    return m.samples.get((family, frozenset(labels.items())))


def mismatches(dom, m):
    """Every figure whose value is not /metrics', as text (none: the page agrees)."""
    bad = []
    for n, family, labels, member, v in figures(dom):
        want = sample(m, family, labels, member)
        if want is None or float(v) != want:
            bad.append("%s%s member=%s: page %s, /metrics %s" % (family, labels, member, v, want))
    return bad


def page_and_metrics(procs, exp, path="/status"):
    """The page Chromium rendered and /metrics of the same moment: /metrics before and
    after the page, the page checked against the first; when a figure moved between
    the two, again (each story settles its streams first, so it does not)."""
    for _ in range(5):
        m1 = exp.metrics()
        dom = DOM(browse(procs, exp.url + path))
        bad = mismatches(dom, m1)
        if not bad:
            return dom, m1
        m2 = exp.metrics()
        if not mismatches(dom, m2):
            return dom, m2
        if m1.samples == m2.samples:  # nothing moved: the page is wrong
            break
    raise AssertionError("the page differs from /metrics:\n  " + "\n  ".join(bad[:20]))


def check_text(dom):
    """What a person reads is the figure's value: a number's text (its digits grouped by
    U+202F), a chip's count, a time's datetime."""
    checked = 0
    for n, family, labels, member, v in figures(dom):
        cls = n.classes()
        if "n" in cls:
            assert n.text().replace(NNBSP, "") == v, (family, labels, n.text(), v)
        if "chip" in cls and list(n.find(lambda c: c.tag == "b")):
            b = next(n.find(lambda c: c.tag == "b"))
            assert b.text().replace(NNBSP, "") == v, (family, labels, b.text(), v)
        times = list(n.find(lambda c: c.tag == "time"))
        if times:
            stamp = times[0].attrs["datetime"]  # 2026-12-05T18:48:44.123Z
            secs = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + int(stamp[20:23]) / 1000
            assert abs(secs - float(v)) < 0.0005, (family, labels, stamp, v)
        checked += 1
    return checked


def rows(dom, kind):
    """The tenants' (kind 'tenant') or members' rows, in the page's order."""
    if kind == "tenant":
        return list(dom.root.find(lambda n: n.tag == "tr" and "data-tenant" in n.attrs))
    return list(dom.root.find(lambda n: n.tag == "tr" and "data-source" in n.attrs and "data-tenant" not in n.attrs))


def figure_in(row, family):
    found = [n for n in row.find(lambda n: n.attrs.get("data-m") == family)]
    return found


def check_tenants(dom, m, sources):
    """Every tenant /metrics has is a row, stale first and then by objects; each stale
    one shows every reason /metrics gives it and since when, an exact one neither."""
    want = {(dict(k)["source"], dict(k)["backend_id"], dict(k)["tenant_id"])
            for k in m.find("mooncake_kv_objects") if dict(k)["source"] in sources}
    got = [(r.attrs["data-source"], r.attrs["data-backend"], r.attrs["data-tenant"]) for r in rows(dom, "tenant")]
    assert len(got) == len(set(got)) and set(got) == want, (sorted(got), sorted(want))
    order = []
    for r, (s, b, t) in zip(rows(dom, "tenant"), got):
        L = dict(source=s, backend_id=b, tenant_id=t)
        stale = m.get("mooncake_kv_state_stale", **L)
        reasons = {dict(k)["reason"] for k in m.find("mooncake_kv_state_stale_reason", **L)}
        shown = {f.attrs["data-l"].split("=", 1)[1] for f in figure_in(r, "mooncake_kv_state_stale_reason")}
        assert shown == reasons, (t, shown, reasons)
        since = figure_in(r, "mooncake_kv_state_stale_since_timestamp_seconds")
        assert len(since) == (1 if stale else 0), (t, stale, since)
        assert ("stale" in r.text()) == bool(stale)
        order.append((-stale, -m.get("mooncake_kv_objects", **L)))
    assert order == sorted(order), order
    assert int(dom.by_id("tenants-matching").text()) == len(want)
    assert int(dom.by_id("tenants-shown").text()) == len(want)
    assert int(dom.by_id("tenants-left-out").text()) == 0
    assert int(dom.by_id("tenants-stale").text()) == sum(1 for k, v in m.find("mooncake_kv_state_stale").items()
                                                           if dict(k)["source"] in sources and v == 1)


# The families the page shows wherever /metrics has them (per member, source, tenant):
# every such sample of /metrics is a figure on the page; those of SHOWN_NONZERO where
# they are not 0, the one-hot ones of SHOWN_ONE where they are 1.
SHOWN = ("mooncake_kv_subscriber_connected", "mooncake_kv_last_sequence", "mooncake_kv_master_last_sequence",
         "mooncake_kv_sequence_behind", "mooncake_kv_messages_received_total", "mooncake_kv_sequence_gaps_total",
         "mooncake_kv_sequence_missing_total", "mooncake_kv_queue_lost_events_total",
         "mooncake_kv_transport_lost_messages_total", "mooncake_kv_unattributed_lost_messages_total",
         "mooncake_kv_master_restarts_total", "mooncake_kv_subscriber_reconnects_total",
         "mooncake_kv_last_event_timestamp_seconds", "mooncake_kv_master_failovers_total",
         "mooncake_kv_master_split_brain", "mooncake_kv_tenants_expired_total", "mooncake_kv_watched_from_empty",
         "mooncake_kv_objects", "mooncake_kv_objects_by_medium", "mooncake_kv_objects_by_placement",
         "mooncake_kv_state_stale", "mooncake_kv_state_stale_reason",
         "mooncake_kv_state_stale_since_timestamp_seconds", "mooncake_kv_object_lifetime_seconds_count",
         "mooncake_kv_object_lifetime_unobserved_total", "mooncake_kv_tracked_tenants", "mooncake_kv_tracked_objects",
         "mooncake_kv_master_up")
SHOWN_NONZERO = ("mooncake_kv_stale_tenants", "mooncake_kv_decode_errors_total",
                 "mooncake_kv_tenant_stale_transitions_total", "mooncake_kv_tenant_exact_transitions_total")
SHOWN_ONE = ("mooncake_kv_publisher_dialect", "mooncake_kv_master_role", "mooncake_kv_master_leader")


def check_complete(dom, m, sources):
    """Every sample of the families the page shows is on it (the page shows what /metrics
    has, not only the reverse)."""
    on_page = set()
    for n, family, labels, member, v in figures(dom):
        for key in ((family, frozenset(dict(labels, member=member).items())) if member is not None else None,
                    (family, frozenset(labels.items()))):
            if key in m.samples:
                on_page.add(key)
                break
    missing = []
    for (family, labels), v in m.samples.items():
        source = dict(labels).get("source")
        if source is not None and source not in sources:
            continue
        if family in SHOWN or (family in SHOWN_NONZERO and v != 0) or (family in SHOWN_ONE and v == 1):
            if (family, labels) not in on_page:
                missing.append("%s%s = %s" % (family, dict(labels), v))
    assert not missing, "on /metrics, not on the page:\n  " + "\n  ".join(sorted(missing)[:30])
    return len(on_page)


def check_members(dom, m, sources):
    """Every member /metrics has is a row, with its stream's and its master's figures."""
    want = set()
    for k in m.find("mooncake_kv_messages_received_total"):
        d = dict(k)
        if d["source"] in sources:
            want.add((d["source"], d.get("member")))
    got = {(r.attrs["data-source"], r.attrs.get("data-member")) for r in rows(dom, "member")}
    # a one-master source's member label is on its row, not on its stream's samples
    assert {s for s, _ in got} == {s for s, _ in want}, (got, want)
    assert {x for x in want if x[1]} <= got, (got, want)
    for r in rows(dom, "member"):
        for family in ("mooncake_kv_subscriber_connected", "mooncake_kv_last_sequence",
                       "mooncake_kv_messages_received_total", "mooncake_kv_sequence_missing_total",
                       "mooncake_kv_queue_lost_events_total", "mooncake_kv_transport_lost_messages_total",
                       "mooncake_kv_unattributed_lost_messages_total", "mooncake_kv_master_restarts_total",
                       "mooncake_kv_master_role"):
            assert len(figure_in(r, family)) == 1, (r.attrs, family)


# One store of two masters (the leader publishes, the standby does not) and one of the
# guide's dialect whose publisher drops a burst, restarts, sends garbage, and clears a
# tenant: members with loss by cause and rejections, stale tenants with several reasons,
# exact ones after them.
HA_PHASES = ["sleep:seconds=0.5", "steady:rate=1500,seconds=2", "sleep:seconds=0.5", "truth", "wait"]
GUIDE_PHASES = ["sleep:seconds=0.5", "ops:count=2000", "burst:events=2500", "sleep:seconds=0.6", "restart",
                "sleep:seconds=0.6", "ops:count=1500", "garbage:count=5", "clear:tenant=2", "sleep:seconds=0.6",
                "truth", "wait"]


def two_stores(procs, extra=()):
    ha = Sim(procs, SIM, HA_PHASES, seed=501, members=2, extra=["--tenants", "3", "--keys", "300"])
    guide = Sim(procs, SIM, GUIDE_PHASES, seed=502,
                extra=["--tenants", "5", "--keys", "400", "--dialect", "media", "--queue", "1000"])
    # every series: the page shows figures (a placement, a 0 of a rare event) that /metrics
    # serves only with --metrics.all-series, and each is checked against /metrics
    exp = Exporter(procs, EXPORTER, [ha.ha_source("store"), guide.source("guide")],
                   extra=["--metrics.all-series"] + list(extra))
    ha.start()
    guide.start()
    settle_ha(exp, ha, ha.truth_written(), "store")
    truth = guide.truth_written()
    settle(exp, truth, "guide")
    return exp, ha, guide


def test_page_equals_metrics_in_chromium(procs):
    """Chromium renders /status; every figure on it is /metrics' for the same moment,
    every member and tenant has its row, stale tenants first with their reasons and
    since when; the landing page links it."""
    if not need_chromium():
        return
    exp, ha, guide = two_stores(procs)
    dom, m = page_and_metrics(procs, exp)
    n = check_text(dom)
    assert n > 150, n
    check_members(dom, m, ("store", "guide"))
    check_tenants(dom, m, ("store", "guide"))
    covered = check_complete(dom, m, ("store", "guide"))
    print("  %d figures on the page, each /metrics' sample; %d samples of the families it shows" % (n, covered))
    # the story's figures are there to see: loss by cause, a restart, a rejection, a
    # leader, both dialects, stale tenants with several reasons and an exact one
    G = dict(source="guide")
    assert m.get("mooncake_kv_queue_lost_events_total", **G) > 0
    assert m.get("mooncake_kv_master_restarts_total", **G) == 1
    assert sum(m.find("mooncake_kv_decode_errors_total", **G).values()) > 0
    assert m.get("mooncake_kv_master_leader", source="store", member=ha.members[0]) == 1
    stale = {dict(k)["tenant_id"]: v for k, v in m.find("mooncake_kv_state_stale", **G).items()}
    assert 0 in stale.values() and 1 in stale.values(), stale
    assert len(m.find("mooncake_kv_state_stale_reason", **G)) > len(stale)  # several reasons each
    heading = [s for s in dom.root.find(lambda n: n.tag == "section" and n.attrs.get("data-source") == "guide")]
    assert len(heading) == 1 and "tenants stale" in heading[0].text()
    text = dom.root.text()
    for word in ("Loss by cause", "queue", "transport", "unattributed", "State, and why", "Stale since",
                 "leader", "media", "object", "Reconciliation", "Handover"):
        assert word in text, word
    status, headers, body = http_get(exp.url + "/")
    assert status == 200 and b'href="/status"' in body
    # the tenants' backend, the same for all, is said once above their table, not on each row
    backends = {dict(k)["backend_id"] for k in m.find("mooncake_kv_objects")}
    assert len(backends) == 1, backends
    assert dom.by_id("tenants-backend").text() == backends.pop()
    assert not list(dom.root.find(lambda n: n.tag == "th" and n.text() == "Backend"))
    # at 1280 px nothing scrolls sideways, nothing is clipped
    fit = check_fits(procs, exp.url + "/status")
    print("  at 1280 px: the page %d px wide, %d tables, none wider than its box" % (fit["page"], fit["tables"]))
    # the pages' memory all returned (under ASan, a leak fails the exit)
    rc = procs.stop(exp.proc)
    assert rc == 0, "exit %s: %s" % (rc, procs.log(exp.proc)[-3000:])


def test_fits_1280(procs):
    """At 1280 px (a laptop's browser) the page fits without scrolling sideways, with
    what makes it widest in practice: a store of two masters as the demo runs it (a
    long model name with a LoRA adapter, thousands of messages, a standby), a store
    whose queue dropped thousands and whose publisher restarted, long backend ids."""
    if not need_chromium():
        return
    ha = Sim(procs, SIM, ["sleep:seconds=0.5", "steady:rate=4000,seconds=3", "sleep:seconds=0.5", "truth", "wait"],
             seed=511, members=2, extra=["--tenants", "3", "--keys", "300", "--model-name",
                                         "meta-llama/Llama-3.1-70B-Instruct", "--lora-name", "sql-adapter-v2",
                                         "--backend", "mooncake-store-us-east-1a-0001"])
    lossy = Sim(procs, SIM, ["sleep:seconds=0.5", "ops:count=4000", "burst:events=12000", "sleep:seconds=0.6",
                             "restart", "sleep:seconds=0.6", "ops:count=3000", "sleep:seconds=0.6", "truth", "wait"],
                seed=512, extra=["--tenants", "5", "--keys", "400", "--queue", "1000",
                                 "--backend", "mooncake-store-us-east-1b-0002"])
    exp = Exporter(procs, EXPORTER, [ha.ha_source("default"), lossy.source("lossy")], extra=["--metrics.all-series"])
    ha.start()
    lossy.start()
    settle_ha(exp, ha, ha.truth_written(), "default")
    settle(exp, lossy.truth_written(), "lossy")
    m = exp.metrics()
    assert m.get("mooncake_kv_queue_lost_events_total", source="lossy") >= 1000, "no loss to show"
    fit = check_fits(procs, exp.url + "/status")
    print("  at 1280 px: the page %d px wide, %d tables, none wider than its box" % (fit["page"], fit["tables"]))


def test_filter_and_limit(procs):
    """?tenant= keeps the tenants whose source, backend or id holds it (case aside) and
    says how many matched; ?limit= shows the first that many and says how many it left
    out; limit=0 the sources alone."""
    if not need_chromium():
        return
    exp, ha, guide = two_stores(procs)
    m = exp.metrics()
    tenants = [dict(k) for k in m.find("mooncake_kv_objects")]
    match = [t for t in tenants if "tenant-1" in (t["source"] + t["backend_id"] + t["tenant_id"]).lower()]
    assert 0 < len(match) < len(tenants)
    dom, m = page_and_metrics(procs, exp, "/status?tenant=TENANT-1&limit=100")
    got = {r.attrs["data-tenant"] for r in rows(dom, "tenant")}
    assert got == {t["tenant_id"] for t in match}, (got, match)
    assert int(dom.by_id("tenants-matching").text()) == len(match)
    form = next(dom.root.find(lambda n: n.tag == "input" and n.attrs.get("name") == "tenant"))
    assert form.attrs["value"] == "TENANT-1"
    dom, m = page_and_metrics(procs, exp, "/status?limit=3")
    shown = rows(dom, "tenant")
    assert len(shown) == 3
    assert int(dom.by_id("tenants-shown").text()) == 3
    assert int(dom.by_id("tenants-matching").text()) == len(tenants)
    assert int(dom.by_id("tenants-left-out").text()) == len(tenants) - 3
    # the first three of the page's order: the stale ones with the most objects
    key = lambda t: (-m.get("mooncake_kv_state_stale", **t), -m.get("mooncake_kv_objects", **t))
    best = sorted(key(t) for t in tenants)[:3]
    assert [key(dict(source=r.attrs["data-source"], backend_id=r.attrs["data-backend"],
                     tenant_id=r.attrs["data-tenant"])) for r in shown] == best
    dom, m = page_and_metrics(procs, exp, "/status?limit=0")
    assert rows(dom, "tenant") == [] and len(rows(dom, "member")) == 3
    assert int(dom.by_id("tenants-left-out").text()) == len(tenants)


def test_bad_limit(procs):
    """A ?limit= that is no whole number from 0 to 2,000 (docs/operating.md, "The status
    page") is refused with 400 and one line that says why, counted as every malformed
    request (mooncake_kv_http_connections_rejected_total{reason="malformed"}) and
    logged; not shown as the default page."""
    exp = Exporter(procs, EXPORTER, ["name=lone,zmq=tcp://127.0.0.1:%d" % free_port()])
    malformed = lambda: exp.metrics().get("mooncake_kv_http_connections_rejected_total", reason="malformed")
    before = malformed()
    bad = {"banana": b"not a whole number", "2001": b"over 2000", "-1": b"not a whole number",
           "1.5": b"not a whole number", "": b"empty", "99999999999999999999999": b"over 2000"}
    for text, why in bad.items():
        status, headers, body = http_get(exp.url + "/status?limit=" + text)
        assert status == 400, (text, status, body[:200])
        assert headers["Content-Type"] == "text/plain; charset=utf-8", headers
        assert body.endswith(b"\n") and body.count(b"\n") == 1 and why in body and b"limit" in body, (text, body)
        assert b"<html" not in body
    assert malformed() == before + len(bad), (before, malformed())
    assert "bad limit: not a whole number" in procs.log(exp.proc)
    # the good ones still answer the page: the bounds, and no limit at all
    for q in ("?limit=0", "?limit=2000", "?limit=007", "", "?tenant=x"):
        status, headers, body = http_get(exp.url + "/status" + q)
        assert status == 200 and body.startswith(b"<!DOCTYPE html>"), (q, status, body[:200])
    assert malformed() == before + len(bad)
    rc = procs.stop(exp.proc)  # under ASan, a leak of a refusal fails the exit
    assert rc == 0, "exit %s: %s" % (rc, procs.log(exp.proc)[-3000:])


def test_basic_auth(procs):
    """Behind basic auth, /status is answered as /metrics is: 401 without credentials
    (Chromium gets no page), the page with them."""
    d = procs.dir
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("basic_auth_users:\n  alice: %s\n" % bcrypt("s3cret"))
    port = free_port()
    p = procs.start("auth", [EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % free_port(),
                             "--web.listen-address", "127.0.0.1:%d" % port, "--web.config.file",
                             os.path.join(d, "web.yml")])
    url = "http://127.0.0.1:%d" % port
    good = {"Authorization": "Basic " + base64.b64encode(b"alice:s3cret").decode()}
    def answers():
        try:
            return p.poll() is None and http_get(url + "/-/healthy", good, timeout=1)[0] == 200
        except OSError:  # not listening yet
            return False
    wait_for(answers, 5, "the exporter answers")
    status, headers, body = http_get(url + "/status")
    assert status == 401 and 'Basic realm="mooncake-kv-exporter"' in headers.get("WWW-Authenticate", ""), status
    assert b"<html" not in body
    bad = {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}
    assert http_get(url + "/status", bad)[0] == 401
    status, headers, body = http_get(url + "/status", good)
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8", (status, headers)
    assert body.startswith(b"<!DOCTYPE html>") and b'data-m="mooncake_kv_subscriber_connected"' in body
    if need_chromium():
        # the browser meets the challenge (headless, it cannot ask) and renders no figure
        dom = DOM(browse(procs, url + "/status"))
        assert not list(dom.root.find(lambda n: "data-m" in n.attrs))


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
