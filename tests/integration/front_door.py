# SPDX-License-Identifier: Apache-2.0
"""What the front door's stories share (test_front_door.py: connections and
odd requests; test_front_door_auth.py: logins and TLS): the exporter behind
its door, the honest client, the hostile crowds, and the figures they read.
A story's argv is read here (EXPORTER SIM [PROMTOOL] [-k NAME] [--measure])."""
import base64
import http.client
import os
import socket
import statistics
import sys
import threading
import time

from harness import Exporter, Metrics, bcrypt, free_port, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
MEASURE = "--measure" in sys.argv

HONEST = "127.0.0.2"   # the honest client's address
SCRAPER = "127.0.0.1"  # where the test reads /metrics from (the baseline's one connection)
PER_ADDRESS = 16       # --web.max-connections-per-address's default
PEER_FAILS = 5         # failures within 10 s before an address is answered 429 unchecked (http_auth.c)

# a request that never ends: its line and first header at once, then the rest of its headers a
# byte at a time (the connection's deadline, not the line's, applies: docs/design.md)
SLOW_LINE = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
SLOW_REST = b"User-Agent: trickle\r\nX-Pad: " + b"a" * 4000


def attacker(i):
    """The i-th hostile address (0: 127.0.0.3): never the exporter's, the
    honest client's nor the scraper's."""
    return "127.0.%d.%d" % (i // 250, 3 + i % 250)


def b64(raw):
    return "Basic " + base64.b64encode(raw).decode()


class Door(Exporter):
    """The exporter, with its web config (basic auth: `auth` is the honest
    client's user and password) and TLS (`tls`: the client's SSL context)."""

    def __init__(self, procs, extra=(), web=None, auth=None, tls=None, sources=None):
        self.auth = auth
        self.tls = tls
        if web is not None:
            path = os.path.join(procs.dir, "web-%d.yml" % free_port())
            with open(path, "w") as f:
                f.write(web)
            extra = ["--web.config.file", path] + list(extra)
        super().__init__(procs, EXPORTER, sources or ["name=door,zmq=tcp://127.0.0.1:%d" % free_port()], extra)

    def connection(self, src, timeout):
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, source_address=(src, 0),
                                               context=self.tls)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(src, 0))

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError("exporter exited: " + self.procs.log(self.proc))
        try:
            return ask(self, "/-/healthy", src=SCRAPER)[0] == 200
        except (OSError, http.client.HTTPException):
            return False

    def metrics(self, gz=False):
        status, body, _ = ask(self, "/metrics", src=SCRAPER, timeout=5)
        assert status == 200, (status, body[:200])
        return Metrics(body.decode("utf-8"))


def ask(exp, path, auth=None, src=HONEST, timeout=1):
    """One GET from `src` on a connection of its own, closed after the answer:
    (status, body, seconds).  `auth`: None for the exporter's own credentials,
    False for none, a (user, password) pair or a whole Authorization value.
    The timeout is a liveness bound (scaled), not a benchmark."""
    auth = exp.auth if auth is None else auth
    headers = {}
    if isinstance(auth, tuple):
        headers["Authorization"] = b64(("%s:%s" % auth).encode())
    elif auth:
        headers["Authorization"] = auth
    c = exp.connection(src, scaled(timeout))
    t0 = time.monotonic()
    try:
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        body = r.read()
        return r.status, body, time.monotonic() - t0
    finally:
        c.close()


def served(exp, what, latencies=None, auth=None):
    """The honest client gets /-/healthy and /metrics, each within a second
    (scaled): the /metrics it got."""
    got = {}
    for path in ("/-/healthy", "/metrics"):
        try:
            status, body, took = ask(exp, path, auth)
        except (OSError, http.client.HTTPException) as e:
            raise AssertionError("%s: the honest client's GET %s failed: %r" % (what, path, e))
        assert status == 200, "%s: the honest client's GET %s answered %s: %r" % (what, path, status, body[:200])
        got[path] = body
        if latencies is not None:
            latencies.append(took)
    return Metrics(got["/metrics"].decode("utf-8"))


def still_serving(exp):
    """The end of each test: the exporter is alive and serves, then stops
    cleanly on SIGTERM (exit 0: under ASan, no leak either)."""
    assert exp.proc.poll() is None, "exporter exited: " + exp.procs.log(exp.proc)[-2000:]
    served(exp, "at the end")
    rc = exp.procs.stop(exp.proc)
    assert rc == 0, "exit %s: %s" % (rc, exp.procs.log(exp.proc)[-3000:])


def report(what, latencies):
    """The honest client's figures, for docs/reliability.md."""
    ms = sorted(t * 1000 for t in latencies)
    print("  (honest client, %s: %d requests, median %.1f ms, max %.1f ms)"
          % (what, len(ms), statistics.median(ms), ms[-1]), flush=True)


def gauge(m):
    return m.get("mooncake_kv_http_connections")


def quiet(exp, what="only the scrape's own connection is open"):
    """Waits until the exporter holds one connection, the scrape's that asks
    (a client's closed connection is released within a watchdog round): the
    baseline, 1."""
    wait_for(lambda: gauge(exp.metrics()) == 1, 2, what)
    return 1


def rejected(m, reason):
    return m.get("mooncake_kv_http_connections_rejected_total", reason=reason)


def failures(m, reason):
    return m.get("mooncake_kv_http_login_failures_total", reason=reason)


def checks(m):
    return m.get("mooncake_kv_http_password_checks_total")


REASONS = ("limit", "address_limit", "header_timeout", "request_timeout", "malformed")


class Crowd:
    """n connections to the exporter from `addrs` (in turn), each sent `first`
    at once and then, by a thread, one byte of `trickle` every `every` seconds,
    at most `rounds` times, until close().  A connection the exporter refused or
    cut is dropped, never reopened: each is one connection, counted once."""

    def __init__(self, port, addrs, n, first=b"", trickle=b"", every=0.5, rounds=120):
        self.socks, self.dead = [], 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = None
        try:
            for i in range(n):
                s = socket.socket()
                self.socks.append(s)
                s.settimeout(scaled(5))
                s.bind((addrs[i % len(addrs)], 0))
                s.connect(("127.0.0.1", port))
                if first:
                    try:
                        s.sendall(first)
                    except OSError:  # refused before it said anything
                        pass
        except BaseException:
            for s in self.socks:
                s.close()
            raise
        if trickle:
            self.thread = threading.Thread(target=self._trickle, args=(trickle, every, rounds), daemon=True)
            self.thread.start()

    def _trickle(self, data, every, rounds):
        for k in range(rounds):
            if self.stop.wait(every):
                return
            with self.lock:
                live = [s for s in self.socks if s.fileno() >= 0]
                if not live:
                    return
                for s in live:
                    try:
                        s.send(data[k % len(data):k % len(data) + 1], socket.MSG_DONTWAIT)
                    except OSError:  # refused or cut: it is done
                        s.close()
                        self.dead += 1

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(scaled(5))
            assert not self.thread.is_alive(), "the trickler did not stop"
        with self.lock:
            for s in self.socks:
                s.close()



def cpu(exp):
    return exp.metrics().get("process_cpu_seconds_total")


USER, PASSWORD = "prometheus", "secret"


def auth_config(cost=10, users=None):
    users = users or {USER: PASSWORD}
    return "basic_auth_users:\n" + "".join("  %s: %s\n" % (u, bcrypt(p, cost)) for u, p in users.items())
