#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns docs/runbook.md into the HTML page the exporter serves at /runbook,
as a C header holding one string, so that every alert's runbook_url resolves
wherever the exporter runs (alerts/README.md, "Runbook links").  Headings get
the anchors GitHub gives them, which the rules' links use.

usage: runbook_html.py RUNBOOK_MD OUT_H"""
import html
import re
import sys


def anchor(title):
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def inline(text):
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)


def convert(md):
    out, para = [], []

    def flush():
        if para:
            out.append("<p>" + inline(" ".join(para)) + "</p>")
            para.clear()
    for line in md.splitlines():
        m = re.match(r"^(#+) (.+)$", line)
        if m:
            flush()
            level, title = len(m.group(1)), m.group(2)
            out.append('<h%d id="%s">%s</h%d>' % (level, anchor(title), inline(title), level))
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
    flush()
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>mooncake-kv-exporter runbook</title>"
            "<style>body{max-width:50em;margin:2em auto;font-family:sans-serif;line-height:1.45}"
            "code{background:#f2f2f2}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def c_string(s):
    lines = []
    for chunk in s.splitlines(keepends=True):
        esc = chunk.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append('\t"%s"' % esc)
    return "\n".join(lines)


page = convert(open(sys.argv[1], encoding="utf-8").read())
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("/* Generated from docs/runbook.md by tools/gen/runbook_html.py: do not edit. */\n"
            "static const char runbook_html[] =\n%s;\n" % c_string(page))
