# SPDX-License-Identifier: Apache-2.0
"""Processes, ports and /metrics parsing for the integration tests.

Every process started here is on loopback, bounded in time, and killed in
teardown whatever happens."""
import fcntl
import gzip
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import timing
from timing import scaled

# the binaries under test: every story takes the exporter first
if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
    timing.set_binary(sys.argv[1])

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


_ports = random.Random(os.getpid())
_held = {}  # port -> the open lock file that reserves it until this process ends
_LOCKS = os.path.join(tempfile.gettempdir(), "mooncake-kv-test-ports-%d" % os.getuid())


def _reserve(port):
    """Reserve a port for this process, against this process and every other test
    process on the machine: an flock on a file named for it, which the kernel
    drops when the process ends, however it ends."""
    if port in _held:
        return False
    os.makedirs(_LOCKS, exist_ok=True)
    f = open(os.path.join(_LOCKS, str(port)), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return False
    _held[port] = f
    return True


def free_port():
    """A loopback port free now and never handed out twice, picked at random
    below the kernel's ephemeral range.  Tests leave ports unbound for a while
    on purpose (a simulator binds its admin port only when it starts, a standby
    master binds none until it is promoted, a master that never answers): a
    port free to bind now is not enough, so each one handed out is reserved
    (`_reserve`) and no later call, here or in a test running beside this one,
    is given it.  Without that the exporter once listened on the port a
    simulator was about to bind."""
    for _ in range(1000):
        port = _ports.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if _reserve(port):
            return port
    raise AssertionError("no free port in 20000-32767")


def parse_metrics(text):
    """{(name, frozenset(labels.items())): value}, checking HELP/TYPE order."""
    out, families = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert name not in families, "family twice: " + name
            families.add(name)
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, "bad sample line: " + line
        labels = {k: v for k, v in LABEL.findall(m.group(3) or "")}
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


class Metrics:
    def __init__(self, text):
        self.text = text
        self.samples = parse_metrics(text)

    def news(self, name, **labels):
        """A series served only with news (docs/guide.md, "Metrics": a counter of rare
        events before its first, an event type before its first, a 0/1 that does not
        hold): its value, 0 when absent."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def placement(self, p, **labels):
        """A tenant's objects on cpu_only, disk_only or cpu_and_disk, from its objects
        and medium mix (mooncake_kv_objects_by_placement: --metrics.all-series only)."""
        o = self.get("mooncake_kv_objects", **labels)
        cpu = self.get("mooncake_kv_objects_by_medium", medium="cpu", **labels)
        disk = self.get("mooncake_kv_objects_by_medium", medium="disk", **labels)
        return {"cpu_only": o - disk, "disk_only": o - cpu, "cpu_and_disk": cpu + disk - o}[p]

    def get(self, name, **labels):
        key = (name, frozenset(labels.items()))
        if key not in self.samples:
            raise KeyError("%s%s not exported" % (name, labels))
        return self.samples[key]

    def find(self, name, **labels):
        """Every sample of a name whose labels include these."""
        want = set(labels.items())
        return {k[1]: v for k, v in self.samples.items() if k[0] == name and want <= set(k[1])}


def http_get(url, headers=None, timeout=5):
    """GET, within `timeout` seconds on an idle machine with a plain build
    (scaled: timing.py)."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=scaled(timeout)) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Procs:
    """Starts processes and guarantees they are gone at the end."""

    def __init__(self):
        self.procs = []
        self.dir = tempfile.mkdtemp(prefix="kvx-it-")

    def start(self, name, argv, **kw):
        log = open(os.path.join(self.dir, name + ".log"), "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        p.log_path = log.name
        p.name = name
        self.procs.append(p)
        return p

    def log(self, p):
        with open(p.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, p, sig=signal.SIGTERM, timeout=10):
        if p.poll() is None:
            p.send_signal(sig)
        timeout = scaled(timeout, getattr(p, "wrapped", None))
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError("%s did not stop within %ss" % (p.name, timeout))

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


class Exporter:
    def __init__(self, procs, exe, sources, extra=(), wrapper=()):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        argv = list(wrapper) + [exe, "--web.listen-address", "127.0.0.1:%d" % self.port,
                                "--master.poll-interval", "200ms", "--log.level", "debug"]
        for s in sources:
            argv += ["--source", s]
        argv += list(extra)
        self.proc = procs.start("exporter-%d" % self.port, argv)
        self.proc.wrapped = "valgrind" if any("valgrind" in w for w in wrapper) else None
        self.procs = procs
        wait_for(lambda: self.healthy(), 5, "exporter answers /-/healthy", extra=self.proc.wrapped)

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError("exporter exited: " + self.procs.log(self.proc))
        try:
            return http_get(self.url + "/-/healthy", timeout=1)[0] == 200
        except OSError:
            return False

    def metrics(self, gz=False):
        status, headers, body = http_get(self.url + "/metrics",
                                         {"Accept-Encoding": "gzip"} if gz else None)
        assert status == 200, status
        assert headers.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8", headers
        if gz:
            assert headers.get("Content-Encoding") == "gzip"
            body = gzip.decompress(body)
        return Metrics(body.decode("utf-8"))


def mooncake_of(extra):
    """The master a simulator with these flags plays: main (since #3818) unless told."""
    ex = list(extra)

    def flag(name):
        return ex[ex.index(name) + 1] if name in ex else None
    if flag("--mooncake"):
        return flag("--mooncake")
    if flag("--spec-extras") == "on" or flag("--dialect") == "media":
        return "conductor"
    return "v0.3.12" if flag("--dialect") == "object" else "main"


class Sim:
    """The simulator: one master, or with members=N a cluster of N (member 0 leads
    first), each with its own publisher endpoint and admin port."""
    def __init__(self, procs, exe, phases, seed=1, extra=(), status=True, truth=True, members=1):
        self.pub_ports = [free_port() for _ in range(members)]
        self.status_ports = [free_port() for _ in range(members)] if status else []
        self.zmqs = ["tcp://127.0.0.1:%d" % p for p in self.pub_ports]
        self.status_urls = ["http://127.0.0.1:%d" % p for p in self.status_ports]
        self.members = ["127.0.0.1:%d" % p for p in self.status_ports]  # the exporter's `member` label
        self.pub_port, self.zmq = self.pub_ports[0], self.zmqs[0]
        self.status_port = self.status_ports[0] if status else None
        self.status_url = self.status_urls[0] if status else None
        self.status_addr = self.members[0] if status else None
        self.truth_path = os.path.join(procs.dir, "truth-%d.json" % self.pub_port) if truth else None
        self.argv = [exe, "--seed", str(seed)] + list(extra)
        # which master it plays (--mooncake; --dialect and --spec-extras are older names) and
        # what its publisher speaks (docs/upstream.md): main since #3818 by default, the guide
        self.mooncake = mooncake_of(extra)
        self.dialect = "object" if self.mooncake == "v0.3.12" else "media"
        for i in range(members):
            self.argv += ["--pub", self.zmqs[i]] + (["--status", self.members[i]] if status else [])
        if truth:
            self.argv += ["--truth", self.truth_path]
        for ph in phases:
            self.argv += ["--phase", ph]
        self.procs = procs

    def source(self, name, dialect=None):
        """A source of the first member.  Without a status URL nothing can tell the exporter
        the dialect: it is given, as an operator would (dialect="" leaves it to the default)."""
        s = "name=%s,zmq=%s" % (name, self.zmq)
        if self.status_url:
            s += ",status=" + self.status_url
        elif dialect is None:
            dialect = self.dialect
        return s + (",dialect=" + dialect if dialect else "")

    def ha_source(self, name, extra_members=()):
        """A source of every member (master=ZMQ@URL each), plus (zmq, url) pairs of masters
        the simulator does not play."""
        pairs = list(zip(self.zmqs, self.status_urls)) + list(extra_members)
        return "name=%s," % name + ",".join("master=%s@%s" % p for p in pairs)

    def member_source(self, name, i):
        """A one-master source of member i: the sidecar topology."""
        return "name=%s,zmq=%s,status=%s" % (name, self.zmqs[i], self.status_urls[i])

    def start(self):
        self.proc = self.procs.start("sim-%d" % self.pub_port, self.argv)
        return self

    def truth_written(self, timeout=60):
        """The truth a `truth` phase wrote, the simulator still running (its last
        phase `wait`): its admin endpoints still answer while the test checks."""
        wait_for(lambda: os.path.exists(self.truth_path), timeout, "the simulator wrote its truth")
        with open(self.truth_path) as f:
            return json.load(f)

    def wait(self, timeout=60):
        rc = self.proc.wait(scaled(timeout))
        assert rc == 0, "sim failed: " + self.procs.log(self.proc)
        with open(self.truth_path) as f:
            return json.load(f)


def in_threads(n, fn, timeout=30):
    """Runs fn in n threads at once and waits for all of them."""
    import threading
    threads = [threading.Thread(target=fn) for _ in range(n)]
    for t in threads:
        t.start()
    deadline = time.time() + scaled(timeout)
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    assert not any(t.is_alive() for t in threads), "threads still running after %ss" % timeout


class Checks:
    """A story's named checks, each run on the spot: `ok` or `FAIL` with the
    reason printed as it ends, a failure never stopping the ones after it;
    `rc()` prints the count and is the story's exit code (0 only when some ran
    and all passed)."""

    def __init__(self):
        self.results = []

    def __call__(self, name, fn):
        try:
            fn()
            self.results.append(True)
            print("ok   " + name, flush=True)
        except Exception as e:
            self.results.append(False)
            print("FAIL %s: %s" % (name, e), flush=True)

    def fail(self):
        self.results.append(False)

    def rc(self):
        passed = sum(self.results)
        print("%d passed, %d failed" % (passed, len(self.results) - passed))
        return 0 if self.results and all(self.results) else 1


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def wait_for(pred, timeout, what, extra=None):
    """Polls pred until it holds; fails after `timeout` seconds (as on an idle
    machine with a plain build: scaled by timing.py)."""
    deadline = time.time() + scaled(timeout, extra)
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting until " + what)


def polls_pass(exp, n=3, **labels):
    """Waits until the exporter has polled the master n more times (each poll
    moves mooncake_kv_master_last_poll_timestamp_seconds): for a check that
    more polls count nothing more, waiting for the polls, not for a time."""
    def stamp():
        return sorted(exp.metrics().find("mooncake_kv_master_last_poll_timestamp_seconds", **labels).values())
    seen = [stamp()]

    def moved():
        now = stamp()
        if now != seen[-1]:
            seen.append(now)
        return len(seen) > n
    wait_for(moved, 5 * n, "%d more polls" % n)


def run_tests(names, only=None):
    """Runs every test_* function of a module's globals (those whose name
    holds `only`, if given), each with fresh Procs; prints one line per test
    and closes with 'N passed, N failed'.  Returns the exit code."""
    import traceback
    tests = [(n, f) for n, f in names.items() if n.startswith("test_") and callable(f)]
    if only:
        tests = [(n, f) for n, f in tests if only in n]
    passed = failed = 0
    for name, fn in tests:
        procs = Procs()
        t0 = time.time()
        try:
            fn(procs)
            passed += 1
            print("ok   %-45s %.1fs" % (name, time.time() - t0), flush=True)
        except Exception:
            failed += 1
            print("FAIL %-45s %.1fs" % (name, time.time() - t0), flush=True)
            traceback.print_exc()
            for p in procs.procs:
                print("--- log of %s (last 2000 bytes):\n%s" % (p.name, procs.log(p)[-2000:]))
        finally:
            procs.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, in d."""
    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True, timeout=scaled(30))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=kvx-test-ca")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for who in ("server", "client"):
        ossl("req", *ec, "-keyout", who + ".key", "-out", who + ".csr", "-subj", "/CN=kvx-test-" + who)
        ossl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", who + ".crt", "-days", "2", "-extfile", "san.ext")


def bcrypt(password, cost=5):
    """A bcrypt hash of password (cost 5 by default: quick to check)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # crypt is deprecated in Python 3.11; the hash is what is wanted
        import crypt
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << cost))


# The stream's ground truth, shared by the stories:
# wait until the exporter has caught up with a simulator's run, then check every
# figure against the truth the simulator wrote.

# Set by tools/test.sh for the ASan/UBSan build: no valgrind on top of it, and
# no RSS bounds (the sanitizer's quarantine keeps freed memory resident).
SANITIZED = bool(os.environ.get("KVX_SANITIZED"))

REASONS = ["frame_count", "sequence_length", "msgpack_parse", "payload_shape", "event_shape",
           "missing_field", "field_type", "unknown_event_type", "unknown_medium"]

# a story's third argument: promtool, when meson found it (a story that does not lint
# ignores it)
PROMTOOL = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "-k" else None


def settle(exp, truth, source):
    """Waits until the exporter has every message and a poll after the end."""
    def done():
        m = exp.metrics()
        if m.get("mooncake_kv_messages_received_total", source=source) < truth["messages"]:
            return False
        if "status" in truth and m.find("mooncake_kv_master_published_events_total", source=source):
            st = truth["status"]
            attributed = sum(m.get(n, source=source) for n in (
                "mooncake_kv_queue_lost_events_total", "mooncake_kv_transport_lost_messages_total",
                "mooncake_kv_unattributed_lost_messages_total"))
            return (m.get("mooncake_kv_master_published_events_total", source=source) == st["published_events"]
                    and m.get("mooncake_kv_master_published_batches_total", source=source) == st["published_batches"]
                    and attributed == m.get("mooncake_kv_sequence_missing_total", source=source))
        return True
    wait_for(done, 10, "the exporter caught up with source " + source)
    return exp.metrics()


def check_truth(m, truth, source, with_master=True, reconciled=(), objects=None):
    """Every tenant figure and every stream counter equals the ground truth; the
    objects of the tenants in `reconciled` equal the master's true state, the others
    those of `objects` (a truth's tenant list) when given."""
    def eq(name, want, **labels):
        got = m.get(name, **labels)
        assert got == want, "%s%s = %s, want %s" % (name, labels, got, want)

    def news(name, want, **labels):
        """Served from its first event: absent while the truth says none."""
        if want == 0:
            assert not m.find(name, **labels), "%s%s served with no news" % (name, labels)
        else:
            eq(name, want, **labels)

    master = {t["tenant_id"]: t for t in truth["master_tenants"]}
    figures = {t["tenant_id"]: t for t in objects or ()}
    for wire in truth["tenants"]:
        t = dict(wire)
        if t["tenant_id"] in figures:
            t.update({k: v for k, v in figures[t["tenant_id"]].items() if k != "groups"})
        L = dict(source=source, backend_id=t["backend_id"], tenant_id=t["tenant_id"])
        if t["tenant_id"] in reconciled or t["tenant_id"] in figures:
            if t["tenant_id"] in reconciled:
                t.update({k: master[t["tenant_id"]][k] for k in ("objects", "cpu", "disk", "cpu_only",
                                                                  "disk_only", "cpu_and_disk")}, stale=False)
            # duplicates and unknown removals count what the stream saw against the view of the
            # moment, which reconciliations changed
            t["stored_duplicates"] = m.news("mooncake_kv_stored_duplicates_total", **L)
            t["removed_unknown"] = m.news("mooncake_kv_removed_unknown_total", **L)
        eq("mooncake_kv_objects", t["objects"], **L)
        eq("mooncake_kv_objects_by_medium", t["cpu"], medium="cpu", **L)
        eq("mooncake_kv_objects_by_medium", t["disk"], medium="disk", **L)
        for p in ("cpu_only", "disk_only", "cpu_and_disk"):
            got = m.placement(p, **L)
            assert got == t[p], "%s %s = %s, want %s" % (L, p, got, t[p])
        # what others determine is served only with --metrics.all-series
        assert not m.find("mooncake_kv_objects_by_placement", **L)
        assert not m.find("mooncake_kv_tenant_clears_total", **L)
        for e in ("stored", "removed"):
            news("mooncake_kv_events_received_total", t[e], event_type=e, **L)
        if truth["dialect"] == "object":  # it never sends cleared: no series for it
            assert not m.find("mooncake_kv_events_received_total", event_type="cleared", **L)
        else:
            news("mooncake_kv_events_received_total", t["cleared"], event_type="cleared", **L)
        news("mooncake_kv_stored_duplicates_total", t["stored_duplicates"], **L)
        news("mooncake_kv_removed_unknown_total", t["removed_unknown"], **L)
        eq("mooncake_kv_state_stale", 1 if t["stale"] else 0, **L)
        # a stale tenant says since when; an exact one has no age
        since = m.find("mooncake_kv_state_stale_since_timestamp_seconds", **L)
        if t["stale"]:
            assert len(since) == 1 and time.time() - 600 < list(since.values())[0] <= time.time(), since
        else:
            assert since == {}, since
    assert len(m.find("mooncake_kv_objects", source=source)) == len(truth["tenants"])
    if not truth["gaps"] and not truth["restarts"] and not reconciled:
        # without a break, a tenant is stale only for want of a snapshot
        eq("mooncake_kv_stale_tenants", sum(1 for t in truth["tenants"] if t["stale"]),
           source=source, reason="startup")

    eq("mooncake_kv_messages_received_total", truth["messages"], source=source)
    eq("mooncake_kv_sequence_gaps_total", truth["gaps"], source=source)
    eq("mooncake_kv_sequence_missing_total", truth["missing"], source=source)
    eq("mooncake_kv_publisher_resets_total", truth["restarts"], source=source)
    eq("mooncake_kv_sequence_duplicates_total", 0, source=source)
    eq("mooncake_kv_last_sequence", truth["last_seq"], source=source)
    eq("mooncake_kv_transport_lost_events_total", truth["lost_events"], source=source)
    for r in REASONS:
        eq("mooncake_kv_decode_errors_total", truth["decode_errors"].get(r, 0), source=source, reason=r)
    eq("mooncake_kv_batch_events_count", truth["messages"] - truth["garbage_messages"], source=source)
    if with_master:
        st = truth["status"]
        # (up, standby and connected are checked while the simulator runs:
        # here it has exited)
        eq("mooncake_kv_master_publisher_enabled", 1, source=source)
        eq("mooncake_kv_master_published_batches_total", st["published_batches"], source=source)
        eq("mooncake_kv_master_published_events_total", st["published_events"], source=source)
        eq("mooncake_kv_master_dropped_events_total", st["dropped_events"], source=source)
        eq("mooncake_kv_master_last_sequence", st["published_batches"] + st["dropped_events"], source=source)
        # each master reports its own field, and only that one is shown
        for field, name in (("skipped_unparsed_keys", "mooncake_kv_master_unparsed_keys_total"),
                            ("skipped_keyless_events", "mooncake_kv_master_skipped_keyless_events_total")):
            if field in st:
                eq(name, st[field], source=source)
            else:
                assert not m.find(name, source=source), name
        eq("mooncake_kv_master_restarts_total", truth["restarts"], source=source)
        eq("mooncake_kv_transport_lost_messages_total", truth["lost_messages"], source=source)
        check_books(m, source)
        # once it is known, a stream that has everything is not behind
        assert set(m.find("mooncake_kv_sequence_behind", source=source).values()) <= {0}


def check_books(m, source):
    """Every missing sequence number is in exactly one bucket."""
    got = sum(m.get(n, source=source) for n in ("mooncake_kv_queue_lost_events_total",
                                                 "mooncake_kv_transport_lost_messages_total",
                                                 "mooncake_kv_unattributed_lost_messages_total"))
    missing = m.get("mooncake_kv_sequence_missing_total", source=source)
    assert got == missing, "queue + transport + unattributed = %s, missing = %s" % (got, missing)


def promtool_check(text):
    if not PROMTOOL:
        return
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=scaled(30))
    assert r.returncode == 0, "promtool: " + (r.stdout + r.stderr).decode()
