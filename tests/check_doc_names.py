# SPDX-License-Identifier: Apache-2.0
"""Every name of the project's code that a maintainer's page names exists: a
`mkv_*`, `kvd_*` or `kv_*` identifier (`MKV_*`, `KVD_*`, `KV_*`) in
docs/design.md, CONTRIBUTING.md or
tests/README.md is defined or used somewhere in the C sources (exporter/,
include/, tests/, tools/, examples/).  A design page that traces a frame
through functions renamed or gone sends its reader nowhere.  Upstream's own
names (Mooncake's `kv_events_*` flags, `kv_event_*` config) are not ours and
are skipped.

usage: check_doc_names.py SOURCE_ROOT PAGE..."""
import os
import re
import sys

root, pages = sys.argv[1], sys.argv[2:]
UPSTREAM = re.compile(r"^kv_events?_|^kv_connector_")
words = set()
for top in ("exporter", "include", "tests", "tools", "examples"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".c", ".h", ".in")):
                with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                    words.update(re.findall(r"\b(?:[mM]?[kK][vV]|[kK][vV][dD])_\w+", fh.read()))
problems, seen = [], 0
for page in pages:
    with open(page, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            for name in re.findall(r"\b(?:mkv|MKV|kvd|KVD|kv|KV)_\w+", line):
                if UPSTREAM.match(name) or name.endswith("_"):  # a prefix: `kv_store_*`
                    continue
                seen += 1
                if name not in words:
                    problems.append(f"{page}:{n}: names {name}, which no source defines")
for p in problems:
    print(p)
print(f"{seen} names checked in {len(pages)} pages, {len(problems)} unknown")
sys.exit(1 if problems else 0)
