# SPDX-License-Identifier: Apache-2.0
"""Checks the Grafana dashboards.

usage: check_dashboards.py DASHBOARD_DIR RULES GENERATOR RENDER_DUMP CAPTURE...

Rejects broken JSON, duplicate panel ids or uids, a missing ${datasource}
variable or a panel not using it, a missing instance/source/tenant_id variable,
a query selecting by $source without $instance, any
metric the exporter does not export (the exposition of replayed captures)
nor a recording rule defines, and JSON that differs from the generator's."""
import json
import os
import re
import subprocess
import sys
import tempfile

dash_dir, rules_path, generator, render_dump = sys.argv[1:5]
captures = sys.argv[5:]

exposition = subprocess.run([render_dump] + captures, capture_output=True, check=True, text=True).stdout
exported = set()
for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", exposition, re.M):
    exported.add(name)
    if kind == "histogram":
        exported |= {name + "_bucket", name + "_sum", name + "_count"}
recorded = set(re.findall(r"- record: (\S+)", open(rules_path).read()))

PROMQL_WORDS = {"sum", "rate", "increase", "by", "without", "topk", "histogram_quantile", "max", "min",
                "avg", "count", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "irate",
                "histogram_count", "histogram_sum"}


def metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # strings
    e = re.sub(r"\{[^}]*\}", "", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                      # ranges
    e = re.sub(r"\boffset\s+\w+", "", e)                  # offsets
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    return {t for t in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e)
            if t not in PROMQL_WORDS and not t.startswith("__")}


problems = []
uids = set()
files = sorted(f for f in os.listdir(dash_dir) if f.endswith(".json"))
assert len(files) >= 3, files
for f in files:
    try:
        d = json.load(open(os.path.join(dash_dir, f)))
    except ValueError as e:
        problems.append("%s: not JSON: %s" % (f, e))
        continue
    if d.get("uid") in uids or not d.get("uid"):
        problems.append("%s: missing or duplicate uid" % f)
    uids.add(d.get("uid"))
    if d.get("schemaVersion", 0) < 36:
        problems.append("%s: schemaVersion %s is too old" % (f, d.get("schemaVersion")))
    variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
    if variables.get("datasource", {}).get("type") != "datasource":
        problems.append("%s: no ${datasource} variable of type datasource" % f)
    if "source" not in variables or "instance" not in variables:
        problems.append("%s: no source or instance variable" % f)
    ids = [p.get("id") for p in d["panels"]]
    if len(ids) != len(set(ids)) or None in ids:
        problems.append("%s: duplicate or missing panel ids %s" % (f, ids))
    for p in d["panels"]:
        where = "%s panel %r" % (f, p.get("title"))
        if p.get("type") == "row":  # a heading: no query of its own
            continue
        if p.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(where + ": datasource is not ${datasource}")
        if not p.get("targets"):
            problems.append(where + ": no query")
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}":
                problems.append(where + ": target datasource is not ${datasource}")
            # one exporter per master all call their source "default": a
            # selection by source alone mixes masters
            if "$source" in t["expr"] and "$instance" not in t["expr"]:
                problems.append(where + ": selects by $source without $instance")
            for used in re.findall(r"\$(\w+)", t["expr"]):
                if used not in variables and not used.startswith("__"):
                    problems.append(where + ": uses undefined variable $" + used)
            for m in metric_names(t["expr"]):
                if m not in exported and m not in recorded:
                    problems.append(where + ": metric %s is not exported" % m)
    if "tenant" in f and "tenant_id" not in variables:
        problems.append("%s: no tenant_id variable" % f)

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, generator, tmp], check=True)
    for f in files:
        if open(os.path.join(tmp, f)).read() != open(os.path.join(dash_dir, f)).read():
            problems.append("%s differs from what tools/gen/gen_dashboards.py writes: run it" % f)

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("%d dashboards, %d panels checked against %d exported families"
      % (len(files), sum(len(json.load(open(os.path.join(dash_dir, f)))["panels"]) for f in files), len(exported)))
