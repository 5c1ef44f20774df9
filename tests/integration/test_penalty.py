# SPDX-License-Identifier: Apache-2.0
"""The login penalty that ends (issue 56; docs/guide.md, "Securing the
endpoint"; docs/design.md, "The front door"): after five failures an address
is penalized, its tries answered 429 without a check but for one check every
5 s and the credentials verified before, until 30 s after its last failure.

- a client that rotated its password, scraping every 4 s, is served again
  within 30 s of switching to the new one;
- a guesser and an honest client behind one address: the guesser's tries are
  refused and almost none are checked, the honest client is served on every
  scrape, past the minute its verified credential stays cached;
- another address is never affected, and an address listed in
  --web.login-penalty-exempt is never penalized.

Every client is on a loopback address of its own (127.0.0.3 and up); the test
reads /metrics from 127.0.0.1.  Every load is bounded in count and in time,
every wait is for a condition, bounded through timing.scaled().

usage: test_penalty.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import base64
import http.client
import os
import sys
import threading
import time

from harness import Exporter, Metrics, bcrypt, free_port, run_tests, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None

SCRAPER = "127.0.0.1"  # the test's own reads of /metrics, with a user of their own
SCRAPER_USER, SCRAPER_PASSWORD = "test", "test-only"
USER, PASSWORD = "prometheus", "secret"
# the rule (exporter/daemon/http_auth.c), as docs/guide.md states it
PEER_FAILS = 5     # failures, each within 10 s of the one before, begin a penalty
PENALTY_GAP = 5.0  # while it lasts, one password check in this many seconds an address
CACHE_TTL = 60.0   # a verified credential is checked again after this long


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class Door(Exporter):
    """The exporter with basic auth: users is {user: password}, and the test's
    own user (its credential is not the clients')."""

    def __init__(self, procs, users, extra=()):
        users = dict(users, **{SCRAPER_USER: SCRAPER_PASSWORD})
        path = os.path.join(procs.dir, "web-%d.yml" % free_port())
        with open(path, "w") as f:
            f.write("basic_auth_users:\n" + "".join("  %s: %s\n" % (u, bcrypt(p, 5)) for u, p in users.items()))
        super().__init__(procs, EXPORTER, ["name=door,zmq=tcp://127.0.0.1:%d" % free_port()],
                         ["--web.config.file", path] + list(extra))

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError("exporter exited: " + self.procs.log(self.proc))
        try:
            return ask(self, "/-/healthy", SCRAPER, SCRAPER_USER, SCRAPER_PASSWORD) == 200
        except (OSError, http.client.HTTPException):
            return False

    def metrics(self, cred=(SCRAPER_USER, SCRAPER_PASSWORD)):
        """/metrics, read from SCRAPER with cred (a cached one costs no check)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=scaled(5), source_address=(SCRAPER, 0))
        try:
            c.request("GET", "/metrics", headers={"Authorization": basic(*cred)})
            r = c.getresponse()
            body = r.read()
        finally:
            c.close()
        assert r.status == 200, (r.status, body[:200])
        return Metrics(body.decode("utf-8"))


def ask(exp, path, src, user, password):
    """One GET from src on a connection of its own: its status."""
    c = http.client.HTTPConnection("127.0.0.1", exp.port, timeout=scaled(5), source_address=(src, 0))
    try:
        c.request("GET", path, headers={"Authorization": basic(user, password)})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def failures(m, reason):
    return m.get("mooncake_kv_http_login_failures_total", reason=reason)


def checks(m):
    return m.get("mooncake_kv_http_password_checks_total")


def stops_cleanly(exp):
    assert exp.proc.poll() is None, "exporter exited: " + exp.procs.log(exp.proc)[-2000:]
    rc = exp.procs.stop(exp.proc)
    assert rc == 0, "exit %s: %s" % (rc, exp.procs.log(exp.proc)[-3000:])


def test_rotation_at_4s(procs):
    """The password was rotated on the exporter; a scraper on 127.0.0.3 still
    has the old one, every 4 s, until its address is penalized (429), then gets
    the new one and goes on every 4 s: it is served again within 30 s."""
    client = "127.0.0.3"
    exp = Door(procs, {USER: "rotated"})
    m0 = exp.metrics()
    statuses = []
    for k in range(PEER_FAILS + 3):  # the old password until refused unchecked (a bounded number of scrapes)
        statuses.append(ask(exp, "/metrics", client, USER, PASSWORD))
        if statuses[-1] == 429:
            break
        time.sleep(4)  # the scrape interval: pacing, not waiting for anything
    assert statuses == [401] * PEER_FAILS + [429], statuses
    # the client has the new password now, and scrapes on every 4 s until it is served
    switched = time.monotonic()
    answers = []

    def scrape():
        answers.append(ask(exp, "/metrics", client, USER, "rotated"))
        if answers[-1] != 200:
            time.sleep(4)
        return answers[-1] == 200
    try:
        wait_for(scrape, 30, "the rotated client is served again")
    except AssertionError:
        raise AssertionError("the rotated client, scraping every 4 s with its new password, was not served "
                             "within 30 s (scaled): its answers %s" % answers)
    took = time.monotonic() - switched
    assert set(answers[:-1]) <= {429}, answers
    # and from then on from the cache, every scrape
    for _ in range(3):
        assert ask(exp, "/metrics", client, USER, "rotated") == 200
    m = exp.metrics()
    assert failures(m, "wrong_password") == PEER_FAILS, m.find("mooncake_kv_http_login_failures_total")
    assert failures(m, "throttled") == 1 + len(answers) - 1, m.find("mooncake_kv_http_login_failures_total")
    # its five wrong passwords and its new one, checked once
    assert checks(m) - checks(m0) == PEER_FAILS + 1, (checks(m0), checks(m))
    print("  (served %.1f s after switching, on its scrape %d at 4 s)" % (took, len(answers)), flush=True)
    stops_cleanly(exp)


def test_guesser_beside_honest_client(procs):
    """A guesser and an honest scraper behind one address (127.0.0.4): the
    guesser sends wrong passwords as fast as it is answered; once its address
    is penalized its tries are refused unchecked but for one in 5 s, and the
    honest scraper, every 2 s, is served on every scrape for more than the
    minute its credential stays cached (checked again when it expires)."""
    nat = "127.0.0.4"
    exp = Door(procs, {"honest": "right"})
    m0 = exp.metrics()
    assert ask(exp, "/metrics", nat, "honest", "right") == 200  # verified: one check
    first = time.monotonic()
    guesses, stop = [], threading.Event()
    bound = first + scaled(CACHE_TTL + 60)

    def guesser():
        for k in range(4000):  # bounded in count and in time
            if stop.is_set() or time.monotonic() > bound:
                return
            guesses.append(ask(exp, "/metrics", nat, "honest", "guess%d" % k))
            time.sleep(0.02)
    g = threading.Thread(target=guesser, daemon=True)
    g.start()
    honest = []
    try:
        # the honest scraper, every 2 s, until it has scraped 5 s past its cache entry's expiry
        while time.monotonic() < first + CACHE_TTL + 5 and time.monotonic() < bound:
            time.sleep(2)  # the scrape interval: pacing
            honest.append(ask(exp, "/metrics", nat, "honest", "right"))
            assert honest[-1] == 200, "the honest client's scrape %d, %.1f s after its first: %s (guesser: %s)" % (
                len(honest), time.monotonic() - first, honest[-1], sorted(set(guesses)))
    finally:
        stop.set()
        g.join(scaled(10))
    assert not g.is_alive(), "the guesser did not stop"
    elapsed = time.monotonic() - first
    m = exp.metrics(("honest", "right"))  # cached: this read costs no check
    wrong, throttled = failures(m, "wrong_password"), failures(m, "throttled")
    assert guesses.count(401) == wrong and guesses.count(429) == throttled and len(guesses) == wrong + throttled, \
        (len(guesses), guesses.count(401), guesses.count(429), m.find("mooncake_kv_http_login_failures_total"))
    # the guesser: its five, then at most one check in every 5 s of its penalty
    bound_checked = PEER_FAILS + int(elapsed / PENALTY_GAP) + 1
    assert PEER_FAILS <= wrong <= bound_checked and throttled > 10 * wrong, (wrong, bound_checked, throttled)
    # the honest client: checked at its first scrape and once when its entry expired, no more
    honest_checks = checks(m) - checks(m0) - wrong
    assert honest_checks == 2, (honest_checks, elapsed)
    print("  (%.0f s: %d honest scrapes, all served; the guesser's %d tries: %d checked, bound %d, %d refused "
          "unchecked)" % (elapsed, len(honest), len(guesses), wrong, bound_checked, throttled), flush=True)
    stops_cleanly(exp)


def test_other_address_and_exempt(procs):
    """While 127.0.0.3 is penalized, 127.0.0.5 is checked as ever (its wrong
    passwords 401, never 429; a credential never seen before served at once),
    and 127.0.0.6, listed in --web.login-penalty-exempt, is never penalized:
    each of its wrong passwords is checked and answered 401."""
    guesser, other, exempt = "127.0.0.3", "127.0.0.5", "127.0.0.6"
    exp = Door(procs, {USER: PASSWORD, "other": "pw2", "third": "pw3"},
               ["--web.login-penalty-exempt=127.0.0.6", "--web.login-penalty-exempt=10.0.0.0/8"])
    statuses = [ask(exp, "/metrics", guesser, USER, "guess%d" % k) for k in range(PEER_FAILS + 3)]
    assert statuses == [401] * PEER_FAILS + [429] * 3, statuses
    m0 = exp.metrics()
    got = [ask(exp, "/metrics", other, "other", "wrong%d" % k) for k in range(PEER_FAILS - 1)]
    assert got == [401] * (PEER_FAILS - 1), got
    assert ask(exp, "/metrics", other, "other", "pw2") == 200
    got = [ask(exp, "/metrics", exempt, "third", "wrong%d" % k) for k in range(3 * PEER_FAILS)]
    assert got == [401] * (3 * PEER_FAILS), got
    assert ask(exp, "/metrics", exempt, "third", "pw3") == 200
    assert ask(exp, "/metrics", guesser, USER, "guess-again") == 429  # still penalized meanwhile
    m = exp.metrics()
    # every one of those checked: 4 + 1 from the other address, 15 + 1 from the exempt one
    assert checks(m) - checks(m0) == PEER_FAILS + 3 * PEER_FAILS + 1, (checks(m0), checks(m))
    assert failures(m, "wrong_password") - failures(m0, "wrong_password") == PEER_FAILS - 1 + 3 * PEER_FAILS
    assert failures(m, "throttled") - failures(m0, "throttled") == 1
    log = procs.log(exp.proc)  # its first lines (ten in ten seconds a reason)
    assert "reason=wrong_password peer=%s" % guesser in log and "reason=throttled peer=%s" % guesser in log
    stops_cleanly(exp)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
