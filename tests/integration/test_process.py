# SPDX-License-Identifier: Apache-2.0
"""The process as an operator starts and stops it: its flags and what they
refuse, endpoints ZMQ refuses, web config files refused, --run-as-user, its
JSON logs, and a clean SIGTERM under valgrind.

usage: test_process.py EXPORTER SIM [PROMTOOL] [-k NAME]
Prints one line per test and closes with 'N passed, N failed'."""
import os
import signal
import socket
import subprocess
import sys
import time

from harness import SANITIZED, Exporter, Sim, check_truth, free_port, http_get, run_tests, settle, wait_for
from timing import scaled

EXPORTER, SIM = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


def test_flags(procs):
    def run(*args):
        return subprocess.run([EXPORTER] + list(args), capture_output=True, timeout=scaled(10), text=True)
    for bad in (["--nope"], ["--zmq.endpoint"], [], ["--zmq.endpoint", "x"], ["--source", "zmq=tcp://a:1"],
                ["--zmq.endpoint", "tcp://a:1", "--limits.max-objects", "-3"],
                ["--zmq.endpoint", "tcp://a:1", "--log.level", "loud"],
                ["--zmq.endpoint", "tcp://a:1", "--master.poll-interval", "5 s"],
                ["--source", "name=a,zmq=tcp://a:1", "--source", "name=a,zmq=tcp://b:1"]):
        r = run(*bad)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("mooncake-kv-exporter: "), (bad, r.stderr)
    r = run("--help")
    assert r.returncode == 0 and "--web.listen-address" in r.stdout
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("mooncake-kv-exporter ")
    # a port already taken exits non-zero with a reason, instead of running deaf
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        r = run("--zmq.endpoint", "tcp://127.0.0.1:1", "--web.listen-address", "127.0.0.1:%d" % s.getsockname()[1])
        assert r.returncode == 2 and "cannot listen" in r.stderr, r.stderr


def test_source_endpoints(procs):
    """An endpoint ZMQ refuses is a bad flag value; a host that does not resolve
    yet is not: ZMQ keeps retrying it while the exporter serves."""
    for ep, why in (("foo://bar", "Protocol not supported"), ("tcp://a b:5557", "Invalid argument")):
        r = subprocess.run([EXPORTER, "--source", "name=m7,zmq=" + ep, "--web.listen-address", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=scaled(10))
        assert r.returncode == 2, (ep, r.returncode, r.stderr)
        assert r.stderr == 'mooncake-kv-exporter: source "m7": cannot connect to %s: %s\n' % (ep, why), r.stderr
    exp = Exporter(procs, EXPORTER, ["name=later,zmq=tcp://no-such-host.invalid:5557"])
    time.sleep(0.5)
    m = exp.metrics()
    assert m.get("mooncake_kv_subscriber_connected", source="later") == 0
    assert http_get(exp.url + "/-/ready")[0] == 503
    assert exp.proc.poll() is None


def test_web_config_rejected(procs):
    d = procs.dir
    cases = {"unknown key": "http_server_config:\n  http2: true\n",
             "plain password": "basic_auth_users:\n  alice: s3cret\n",
             "missing key file": "tls_server_config:\n  cert_file: nope.crt\n",
             "bad yaml": "basic_auth_users: [\n",
             "cert file absent": "tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n"}
    for name, text in cases.items():
        path = os.path.join(d, name.replace(" ", "_") + ".yml")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:1", "--web.listen-address",
                            "127.0.0.1:0", "--web.config.file", path], capture_output=True, text=True, timeout=scaled(10))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "web config" in r.stderr, (name, r.stderr)


def test_run_as_user(procs):
    if os.geteuid() != 0:
        print("  (not root: skipped)")
        return
    port = free_port()
    p = procs.start("user", [EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % free_port(),
                             "--web.listen-address", "127.0.0.1:%d" % port, "--run-as-user", "nobody"])
    wait_for(lambda: "msg=listening" in procs.log(p), 5, "it listens")
    uids = [l for l in open("/proc/%d/status" % p.pid) if l.startswith("Uid:")][0].split()[1:]
    assert set(uids) == {"65534"}, uids  # real, effective, saved, filesystem: all nobody
    assert http_get("http://127.0.0.1:%d/-/healthy" % port)[0] == 200
    assert procs.stop(p) == 0
    r = subprocess.run([EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:1", "--web.listen-address", "127.0.0.1:0",
                        "--run-as-user", "no-such-user-kvx"], capture_output=True, text=True, timeout=scaled(10))
    assert r.returncode == 2 and "no such user" in r.stderr, r.stderr


def test_json_logs(procs):
    import json
    p = procs.start("json", [EXPORTER, "--zmq.endpoint", "tcp://127.0.0.1:%d" % free_port(),
                             "--master.url", "http://127.0.0.1:%d" % free_port(),
                             "--web.listen-address", "127.0.0.1:0", "--log.format", "json"])
    wait_for(lambda: '"msg":"listening"' in procs.log(p), 5, "it logs that it listens")
    time.sleep(0.3)
    assert procs.stop(p) == 0
    lines = procs.log(p).splitlines()
    assert len(lines) >= 4, lines
    for line in lines:
        rec = json.loads(line)
        assert {"ts", "level", "msg"} <= rec.keys(), rec
    assert any(json.loads(l).get("reason") == "connect" for l in lines)


def test_sigterm_clean_under_valgrind(procs):
    if not os.path.exists("/usr/bin/valgrind") or SANITIZED:
        print("  (valgrind not wanted here, e.g. an ASan build: skipped)")
        return
    sim = Sim(procs, SIM, ["sleep:seconds=1.5", "ops:count=2000", "clear:all", "garbage:count=5", "sleep:seconds=0.5"],
              seed=4)
    exp = Exporter(procs, EXPORTER, [sim.source("v")], wrapper=[
        "valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect"])
    truth = sim.start().wait()
    check_truth(settle(exp, truth, "v"), truth, "v")
    exp.metrics(gz=True)
    rc = procs.stop(exp.proc, signal.SIGTERM, timeout=30)
    assert rc == 0, "exit %s: %s" % (rc, procs.log(exp.proc)[-3000:])


if __name__ == "__main__":
    sys.exit(run_tests(globals(), ONLY))
