# SPDX-License-Identifier: Apache-2.0
"""The pages of docs/ stay readable: no page over 40 KB, all of them (every
docs/*.md) under 200 KB together.  Docs say how the exporter is now; history
goes to CHANGELOG.md and git, figures to docs/performance.md and
docs/reliability.md, a fact is said once and linked.  A page that grows past
the bound is a page to cut, not a bound to raise.

usage: check_doc_size.py SOURCE_ROOT"""
import os
import sys

PAGE_MAX = 40_000    # bytes of one page
TOTAL_MAX = 200_000  # bytes of every page together

docs = os.path.join(sys.argv[1], "docs")
sizes = {f: os.path.getsize(os.path.join(docs, f)) for f in sorted(os.listdir(docs)) if f.endswith(".md")}
problems = ["docs/%s is %d bytes, over %d: cut it (history to CHANGELOG.md, repetition to a link)"
            % (f, n, PAGE_MAX) for f, n in sizes.items() if n > PAGE_MAX]
total = sum(sizes.values())
if total > TOTAL_MAX:
    problems.append("docs/*.md are %d bytes together, over %d" % (total, TOTAL_MAX))
for p in problems:
    print(p)
print("%d pages, %d bytes together (at most %d; each at most %d), largest %s"
      % (len(sizes), total, TOTAL_MAX, PAGE_MAX, max(sizes, key=sizes.get) if sizes else "none"))
sys.exit(1 if problems else 0)
