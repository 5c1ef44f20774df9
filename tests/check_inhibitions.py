#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shipped Alertmanager configuration, run: a real Alertmanager on
loopback loads alerts/alertmanager.example.yml, each case of the table below
posts alerts that can fire together (their severity taken from the shipped
rules), and the test reads back which ones are suppressed and which receiver
each of the others reaches.  A case is a small incident; its expectation is
what an operator should get.

usage: check_inhibitions.py ALERTMANAGER CONFIG RULES"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))
from timing import scaled  # noqa: E402  (every timeout of the tests comes from there)

AM, CONFIG, RULES = sys.argv[1:4]

I = {"instance": "exp-0:19557", "job": "mooncake-kv"}


def a(name, **labels):
    return (name, dict(I, **labels))


# (what happens, [alerts firing together], {alert: receiver or None for suppressed})
# An alert is (name, labels); the expectation is keyed by name and, where a
# name fires twice, name@member / name@source.
CASES = [
    ("a standby is down while its leader loses events: both reach someone, the standby no page",
     [a("MooncakeKVStandbyDown", source="ha", member="b:9003"),
      a("MooncakeKVTransportLoss", source="ha"),
      a("MooncakeKVTenantsStale", source="ha")],
     {"MooncakeKVStandbyDown": "mooncake-tickets", "MooncakeKVTransportLoss": "mooncake-tickets",
      "MooncakeKVTenantsStale": None}),
    ("a standby is down while a tenant of the store is refused puts",
     [a("MooncakeKVStandbyDown", source="ha", member="b:9003"),
      a("MooncakeKVTenantQuotaRejects", source="ha", tenant_id="t1", reason="quota_exceeded"),
      a("MooncakeKVTenantOverQuota", source="ha", tenant_id="t1")],
     {"MooncakeKVStandbyDown": "mooncake-tickets", "MooncakeKVTenantQuotaRejects": "mooncake-tickets",
      "MooncakeKVTenantOverQuota": None}),
    ("a standby's failing reads are its being down; the leader's are its own",
     [a("MooncakeKVStandbyDown", source="ha", member="b:9003"),
      a("MooncakeKVMasterReadsFailing", source="ha", member="b:9003", endpoint="/ha_status and /leader"),
      a("MooncakeKVMasterReadsFailing", source="ha", member="a:9003", endpoint="/metrics")],
     {"MooncakeKVStandbyDown": "mooncake-tickets", "MooncakeKVMasterReadsFailing@b:9003": None,
      "MooncakeKVMasterReadsFailing@a:9003": "mooncake-tickets"}),
    ("the only master crashes: one page, the rest is that incident",
     [a("MooncakeKVMasterDown", source="m0", member="m0:9003"),
      a("MooncakeKVStreamSilent", source="m0"),
      a("MooncakeKVTenantsStale", source="m0"),
      a("MooncakeKVPublisherReset", source="m0"),
      a("MooncakeKVReconciliationFailing", source="m0"),
      a("MooncakeKVExporterBehind", source="m0")],
     {"MooncakeKVMasterDown": "mooncake-page", "MooncakeKVStreamSilent": None, "MooncakeKVTenantsStale": None,
      "MooncakeKVPublisherReset": None, "MooncakeKVReconciliationFailing": None,
      "MooncakeKVExporterBehind": None}),
    ("the leader is down and nobody takes over: the cause pages, not the lack of a leader",
     [a("MooncakeKVMasterDown", source="ha", member="a:9003"),
      a("MooncakeKVMasterNoLeader", source="ha")],
     {"MooncakeKVMasterDown": "mooncake-page", "MooncakeKVMasterNoLeader": None}),
    ("one store's master is down, another store on the same exporter is silent: two pages",
     [a("MooncakeKVMasterDown", source="x", member="x:9003"),
      a("MooncakeKVStreamSilent", source="y")],
     {"MooncakeKVMasterDown": "mooncake-page", "MooncakeKVStreamSilent": "mooncake-page"}),
    ("no KV event publisher on the leader: the cause pages, not the silence",
     [a("MooncakeKVPublisherDisabled", source="m0", member="m0:9003"),
      a("MooncakeKVSubscriberDisconnected", source="m0", member="m0:9003"),
      a("MooncakeKVStreamSilent", source="m0")],
     {"MooncakeKVPublisherDisabled": "mooncake-page", "MooncakeKVSubscriberDisconnected": None,
      "MooncakeKVStreamSilent": None}),
    ("the subscription is broken: one page, not two",
     [a("MooncakeKVSubscriberDisconnected", source="m0"),
      a("MooncakeKVStreamSilent", source="m0")],
     {"MooncakeKVSubscriberDisconnected": "mooncake-page", "MooncakeKVStreamSilent": None}),
    ("the leader's admin API is gone while its stream flows",
     [a("MooncakeKVMasterUnreachable", source="m0", member="a:9003"),
      a("MooncakeKVReconciliationFailing", source="m0"),
      a("MooncakeKVMasterReadsFailing", source="m0", endpoint="/api/v1/tenant_quotas")],
     {"MooncakeKVMasterUnreachable": "mooncake-tickets", "MooncakeKVReconciliationFailing": None,
      "MooncakeKVMasterReadsFailing": None}),
    ("the queue drops events: that is why the tenants are stale",
     [a("MooncakeKVPublisherDroppingEvents", source="m0"),
      a("MooncakeKVTenantsStale", source="m0")],
     {"MooncakeKVPublisherDroppingEvents": "mooncake-tickets", "MooncakeKVTenantsStale": None}),
    ("two leaders, then a failover ends it",
     [a("MooncakeKVMasterSplitBrain", source="ha"),
      a("MooncakeKVMasterFailover", source="ha")],
     {"MooncakeKVMasterSplitBrain": "mooncake-page", "MooncakeKVMasterFailover": None}),
    ("a page never hides an unrelated warning of the same store",
     [a("MooncakeKVMasterNoLeader", source="ha"),
      a("MooncakeKVDecodeErrors", source="ha", reason="msgpack_parse"),
      a("MooncakeKVLimitOverflow")],
     {"MooncakeKVMasterNoLeader": "mooncake-page", "MooncakeKVDecodeErrors": "mooncake-tickets",
      "MooncakeKVLimitOverflow": "mooncake-tickets"}),
    ("a restart that recovered, and a failover: information only",
     [a("MooncakeKVPublisherReset", source="m0"),
      a("MooncakeKVMasterFailover", source="ha")],
     {"MooncakeKVPublisherReset": "mooncake-info", "MooncakeKVMasterFailover": "mooncake-info"}),
    ("the master's clock stepped back, then it crashed: the page does not hide the information",
     [a("MooncakeKVEventTimestampsUnusable", source="m0", member="m0:9003", reason="backwards"),
      a("MooncakeKVMasterDown", source="m0", member="m0:9003")],
     {"MooncakeKVEventTimestampsUnusable": "mooncake-info", "MooncakeKVMasterDown": "mooncake-page"}),
    ("a client floods the exporter's front door and guesses passwords while the store's master is down: "
     "the page hides neither, and neither hides the other",
     [a("MooncakeKVExporterHTTPRejecting"),
      a("MooncakeKVExporterLoginFailures"),
      a("MooncakeKVMasterDown", source="m0", member="m0:9003"),
      a("MooncakeKVStreamSilent", source="m0")],
     {"MooncakeKVExporterHTTPRejecting": "mooncake-tickets", "MooncakeKVExporterLoginFailures": "mooncake-tickets",
      "MooncakeKVMasterDown": "mooncake-page", "MooncakeKVStreamSilent": None}),
]


def severities():
    text = open(RULES).read()
    out = {}
    for block in re.split(r"\n      - alert: ", text)[1:]:
        name = block.split("\n", 1)[0].strip()
        out[name] = re.search(r"severity: (\w+)", block).group(1)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, path, body=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"},
                                 method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req, timeout=scaled(5)) as r:
        return json.loads(r.read() or b"null")


def key(name, labels, names):
    if names.count(name) < 2:
        return name
    return name + "@" + labels.get("member", labels.get("source", ""))


def main():
    sev = severities()
    bad = []
    for _, alerts, want in CASES:
        for name, _ in alerts:
            if name not in sev:
                bad.append("the table names %s, which the rules do not have" % name)
    if bad:
        sys.exit("\n".join(bad))
    with tempfile.TemporaryDirectory() as tmp:
        port, cport = free_port(), free_port()
        proc = subprocess.Popen([AM, "--config.file", CONFIG, "--storage.path", tmp,
                                 "--web.listen-address", "127.0.0.1:%d" % port,
                                 "--cluster.listen-address", "", "--log.level", "warn"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = "http://127.0.0.1:%d/api/v2" % port
        try:
            deadline = time.time() + scaled(10)
            while True:
                try:
                    call(base, "/status")
                    break
                except OSError:
                    if time.time() > deadline:
                        raise SystemExit("alertmanager did not start: " + proc.stderr.read().decode()[-500:])
                    time.sleep(0.1)
            for i, (what, alerts, want) in enumerate(CASES):
                # each case its own exporter: every inhibition is within one
                # instance, so nothing of an earlier case leaks into this one
                case = "case-%d" % i
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                posted = [{"labels": dict(labels, alertname=name, severity=sev[name], case=case,
                                          instance="exp-%d:19557" % i),
                           "startsAt": now} for name, labels in alerts]
                call(base, "/alerts", posted)
                names = [n for n, _ in alerts]
                got = {}
                deadline = time.time() + scaled(5)
                while time.time() < deadline:  # the inhibitor learns of new alerts asynchronously
                    time.sleep(0.1)
                    got = {}
                    for al in call(base, "/alerts?filter=case%%3D%%22%s%%22" % case):
                        lb = al["labels"]
                        k = key(lb["alertname"], lb, names)
                        got[k] = None if al["status"]["state"] == "suppressed" else \
                            ",".join(sorted(r["name"] for r in al["receivers"]))
                    if got == want:
                        break
                verdict = "ok  " if got == want else "FAIL"
                print("%s %s" % (verdict, what))
                if got != want:
                    bad.append("%s:\n  want %s\n  got  %s" % (what, want, got))
        finally:
            proc.terminate()
            proc.wait(timeout=scaled(10))
    if bad:
        sys.exit("inhibitions:\n" + "\n".join(bad))
    print("%d incidents, each reaching the receivers it should" % len(CASES))


if __name__ == "__main__":
    main()
