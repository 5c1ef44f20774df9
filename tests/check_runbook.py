#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runbook links: every runbook_url of the rules is BASE#section, BASE the one
line of alerts/runbook-base.txt (set there, in one place; tools/gen/set_runbook_base.py
rewrites what derives from it), section a heading of docs/runbook.md, and the
rules' tests and the Kubernetes PrometheusRule use the same base.  The base
must be an https URL a browser reaches whatever the deployment: not the
exporter's instance (a pod IP, plain http behind TLS, dead with the exporter).

usage: check_runbook.py RULES RUNBOOK"""
import os
import re
import sys

rules_path, runbook_path = sys.argv[1:3]
root = os.path.join(os.path.dirname(os.path.abspath(rules_path)), "..")
rules, runbook = open(rules_path).read(), open(runbook_path).read()
base = open(os.path.join(root, "alerts", "runbook-base.txt")).read().strip()
assert base.startswith("https://") and "{{" not in base, "the runbook base is no https URL: %s" % base
anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
           for h in re.findall(r"^#+ (.+)$", runbook, re.M)}
urls = re.findall(r"runbook_url: (.+)$", rules, re.M)
alerts = re.findall(r"- alert: (\S+)", rules)
assert len(urls) == len(alerts) > 0, (len(urls), len(alerts))
bad = [u for u in urls if not u.startswith('"%s#' % base) or u.rstrip('"').split("#")[-1] not in anchors]
assert not bad, "runbook_url not BASE#section of docs/runbook.md: %s" % bad
for other in ("alerts/tests/mooncake-kv.rules.test.yml", "deploy/kubernetes/prometheusrule.yaml"):
    text = open(os.path.join(root, other)).read()
    stray = [u for u in re.findall(r"runbook_url: \"?([^\"\n]+)", text) if not u.startswith(base + "#")]
    assert not stray, "%s has runbook links off the base: %s" % (other, stray[:3])
for field in ("severity:", "summary:", "description:"):
    assert rules.count(field) >= len(alerts), field
print("%d alerts, each linking %s#<its section>" % (len(alerts), base))
