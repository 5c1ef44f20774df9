# SPDX-License-Identifier: Apache-2.0
"""Every master flag, build option and admin endpoint the runbook and the
alerts name exists upstream (tests/fixtures/upstream-flags.txt, each with the
upstream file it comes from; `patched` endpoints exist with the project's
upstream patch alone), and every exporter flag they name is in the
exporter's --help.  Advice that names a flag the master does not have is
advice an operator cannot follow.

usage: check_upstream_names.py EXPORTER FIXTURE DOC..."""
import re
import subprocess
import sys

exporter, fixture, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
known = {}
for line in open(fixture):
    if line.strip() and not line.startswith("#"):
        kind, name, where = line.split()
        known[(kind, name)] = where
helptext = subprocess.run([exporter, "--help"], capture_output=True, text=True, timeout=10).stdout
exporter_flags = set(re.findall(r"--[a-z][a-z0-9.-]*", helptext))

# the exporter's own paths (exporter/daemon/http_server.c), which the docs name beside the master's
OURS = {"/runbook", "/metrics", "/state", "/status"}
problems, seen = [], 0
for path in docs:
    text = open(path).read()
    # master flags: gflags names with underscores, as --flag or bare flag=value in code spans
    for name in re.findall(r"--([a-z][a-z0-9]*_[a-z0-9_]+)", text) + \
            re.findall(r"`((?:enable_)?kv_events[a-z0-9_]*)(?:=[^`]*)?`", text):
        seen += 1
        if ("flag", name) not in known:
            problems.append("%s: master flag %s is not upstream's" % (path, name))
    for name in re.findall(r"-D([A-Z][A-Z0-9_]+)=", text):
        seen += 1
        if ("build", name) not in known:
            problems.append("%s: build option %s is not upstream's" % (path, name))
    # admin endpoints the master serves: `GET /x`, `/x` in code spans, URLs on :9003
    for name in re.findall(r"(?:GET|PUT|POST|DELETE) (/[a-z][a-z0-9_/]*)", text) + \
            re.findall(r"`(/[a-z][a-z0-9_]*(?:/[a-z0-9_]+)*)`", text) + \
            re.findall(r":9003(/[a-z][a-z0-9_/]*)", text):
        seen += 1
        if ("endpoint", name) not in known and ("patched", name) not in known and name not in OURS:
            problems.append("%s: master endpoint %s is not upstream's" % (path, name))
    # the exporter's own flags (dotted, or --source)
    for name in re.findall(r"--(?:[a-z]+\.[a-z0-9.-]+|source)\b", text):
        seen += 1
        if name not in exporter_flags:
            problems.append("%s: exporter flag %s is not in --help" % (path, name))
assert not problems, "\n".join(sorted(set(problems)))
print("%d names checked in %s" % (seen, ", ".join(docs)))
