# SPDX-License-Identifier: Apache-2.0
"""Every runbook_url of the rules points at a heading of docs/runbook.md, as
the exporter that raised the alert serves it (http://INSTANCE/runbook#anchor).

usage: check_runbook.py RULES RUNBOOK"""
import re
import sys

rules, runbook = open(sys.argv[1]).read(), open(sys.argv[2]).read()
anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
           for h in re.findall(r"^#+ (.+)$", runbook, re.M)}
urls = re.findall(r"runbook_url: (.+)$", rules, re.M)
alerts = re.findall(r"- alert: (\S+)", rules)
assert len(urls) == len(alerts) > 0, (len(urls), len(alerts))
# every link points at the runbook the exporter that raised the alert serves
prefix = '"http://{{ $labels.instance }}/runbook#'
bad = [u for u in urls if not u.startswith(prefix) or u.rstrip('"').split("#")[-1] not in anchors]
assert not bad, "runbook_url without a runbook section: %s" % bad
for field in ("severity:", "summary:", "description:"):
    assert rules.count(field) >= len(alerts), field
print("%d alerts, each with a runbook section" % len(alerts))
