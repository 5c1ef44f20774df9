#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Points every alert's runbook_url at BASE#section: the one place the base is
set is alerts/runbook-base.txt, and this rewrites everything derived from it
(the rules, their tests, the rules for vmalert, the Kubernetes
PrometheusRule).  The default base is
the runbook in this project's repository, which an operator's browser reaches
whatever the deployment; point it at an internal copy (a wiki, a Git mirror)
where that is what the operators read.  Section anchors are the runbook's
headings, as GitHub and the exporter's own /runbook both make them.

usage: tools/gen/set_runbook_base.py [BASE]   (no BASE: reapply the current one)"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BASE_FILE = os.path.join(ROOT, "alerts", "runbook-base.txt")
FILES = [os.path.join(ROOT, "alerts", "mooncake-kv.rules.yml"),
         os.path.join(ROOT, "alerts", "tests", "mooncake-kv.rules.test.yml")]


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else open(BASE_FILE).read().strip()
    if not re.match(r"https?://", base) or "#" in base or '"' in base:
        sys.exit("the base is an http(s) URL without a fragment or quotes")
    with open(BASE_FILE, "w") as f:
        f.write(base + "\n")
    for path in FILES:
        text = open(path).read()
        text = re.sub(r'(runbook_url: "?)[^"#\n]*#', lambda m: m.group(1) + base + "#", text)
        with open(path, "w") as f:
            f.write(text)
    for gen in ("gen_k8s.py", "gen_vm_rules.py"):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen", gen)], check=True)
    print("runbook_url base: %s" % base)


if __name__ == "__main__":
    main()
