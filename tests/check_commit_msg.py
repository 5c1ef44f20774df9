#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/hooks/commit-msg against messages whose verdict CONTRIBUTING.md
("Commits") gives: each case passes or is refused as the rules say.

usage: check_commit_msg.py HOOK"""
import os
import subprocess
import sys
import tempfile

CASES = [
    ("config: refuse an admin URL over 1024 characters\n\nThe poller cut it silently.\n", True),
    ("x" * 72 + "\n\nwhy\n", True),
    ("x" * 73 + "\n\nwhy\n", False),  # a subject over 72 characters
    ("é" * 72 + "\n\nwhy\n", True),  # characters, not bytes
    ("subject\nno blank line\n", False),
    ("subject alone\n", False),  # no body
    ("subject\n\n   \n", False),  # a body of blanks is none
    ("subject\n# a comment git strips\n\nwhy\n", True),
    ("\n\nwhy\n", False),  # no subject
    ("Merge branch 'docs'\n", True),  # git's own message
]

hook = sys.argv[1]
failed = 0
for text, ok in CASES:
    with tempfile.NamedTemporaryFile("w", suffix=".msg", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        r = subprocess.run(["sh", hook, f.name], capture_output=True, text=True, timeout=10,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
    finally:
        os.unlink(f.name)
    if (r.returncode == 0) != ok:
        failed += 1
        print("%r: %s, expected %s (%s)" % (text[:40], "passed" if r.returncode == 0 else "refused",
                                           "to pass" if ok else "a refusal", r.stderr.strip()))
    elif not ok and "\n" in r.stderr.strip():
        failed += 1
        print("%r: the refusal is not one line: %r" % (text[:40], r.stderr))
print("%d cases, %d wrong" % (len(CASES), failed))
sys.exit(1 if failed else 0)
