# SPDX-License-Identifier: Apache-2.0
"""Start-up refusals, as an operator meets them: each says why on one line of
stderr, before anything else is logged, and the exporter exits 2 (README: "A
bad flag or value exits 2 with one line on stderr").

usage: test_errors.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import socket
import subprocess
import sys

from harness import free_port, run_tests
from timing import scaled

EXPORTER = sys.argv[1]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None

NOWHERE = "tcp://127.0.0.1:1"  # a publisher that is not there: never refused, never reached


def refused(*args):
    """Runs the exporter, which must refuse at once: its one line of stderr."""
    r = subprocess.run([EXPORTER] + list(args), capture_output=True, text=True, timeout=scaled(10))
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1, (args, r.stdout, r.stderr)
    assert r.stderr.startswith("mooncake-kv-exporter: "), (args, r.stderr)
    return r.stderr[len("mooncake-kv-exporter: "):-1]


def test_port_in_use(procs):
    """A port another process listens on: the OS's reason, first and alone."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        for addr in ("127.0.0.1:%d" % port,
                     ":%d" % port):  # any address: IPv6's, then IPv4's, both taken on 127.0.0.1
            why = refused("--zmq.endpoint", NOWHERE, "--web.listen-address", addr)
            assert why == "--web.listen-address %s: cannot listen: address already in use" % addr, why


def test_port_taken_during_start_up(procs):
    """A port taken after the flags were checked (here while the exporter asks a
    peer for its state, before it serves): the log line that ends it says why."""
    peer = socket.socket()
    peer.bind(("127.0.0.1", 0))
    peer.listen(1)  # accepts the exporter's request and never answers it
    port = free_port()
    p = procs.start("exporter", [EXPORTER, "--zmq.endpoint", NOWHERE, "--web.listen-address", "127.0.0.1:%d" % port,
                                 "--state.peer", "http://127.0.0.1:%d" % peer.getsockname()[1],
                                 "--state.peer-timeout", "1s"])
    peer.settimeout(scaled(20))
    conn, _ = peer.accept()  # the exporter is past its flags, not yet serving
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen(1)
        assert p.wait(scaled(20)) == 2
    conn.close()
    peer.close()
    want = 'level=error msg="cannot listen" address=127.0.0.1:%d reason="address already in use"' % port
    assert any(want in line for line in procs.log(p).splitlines()), procs.log(p)


def test_flag_time_refusals(procs):
    """What is wrong with a value, and what is allowed, before any log line."""
    for args, want in (
            (["--web.listen-address", ":99999"],
             '--web.listen-address ":99999": port "99999" is not a number from 0 to 65535 ([HOST]:PORT)'),
            (["--web.listen-address", "0.0.0.0:-1"],
             '--web.listen-address "0.0.0.0:-1": port "-1" is not a number from 0 to 65535 ([HOST]:PORT)'),
            (["--web.listen-address", "localhost:metrics"],
             '--web.listen-address "localhost:metrics": port "metrics" is not a number from 0 to 65535 '
             '([HOST]:PORT)'),
            (["--log.level=verbose"], '--log.level "verbose" is not one of debug, info, warn, error'),
            (["--log.format", "text"], '--log.format "text" is not one of logfmt, json'),
            (["--stream.dialect=main"], '--stream.dialect "main" is not one of auto, media, object'),
            (["--web.login-penalty-exempt", "10.1.0.0/8"],
             '--web.login-penalty-exempt "10.1.0.0/8" has bits set beyond its prefix length (write the '
             "network's first address)")):
        assert refused("--zmq.endpoint", NOWHERE, *args) == want, (args, want)


def test_endpoint_without_its_port(procs):
    """An endpoint says what it lacks, in each of the three ways to give one."""
    for args, want in (
            (["--zmq.endpoint", "tcp://127.0.0.1"], "--zmq.endpoint tcp://127.0.0.1 has no port: tcp://HOST:PORT"),
            (["--source", "name=m,zmq=tcp://127.0.0.1"],
             'source "m": zmq endpoint tcp://127.0.0.1 has no port: tcp://HOST:PORT'),
            (["--source", "name=ha,master=tcp://10.0.0.1:5557@http://10.0.0.1:9003,"
                          "master=tcp://10.0.0.2@http://10.0.0.2:9003"],
             'source "ha": zmq endpoint tcp://10.0.0.2 has no port: tcp://HOST:PORT'),
            (["--zmq.endpoint", "tcp://m:65536"], '--zmq.endpoint tcp://m:65536: port "65536" is not a number '
                                                  'from 1 to 65535'),
            (["--zmq.endpoint", "ipc://"], "--zmq.endpoint ipc:// has no path: ipc://PATH")):
        assert refused("--web.listen-address", "127.0.0.1:0", *args) == want, (args, want)


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
