# SPDX-License-Identifier: Apache-2.0
"""Every section of a page under docs/ that the tree cites exists: a comment
or a page that sends its reader to `docs/performance.md, "Memory after a
burst"` must find that heading there.  Pages are rewritten and sections
merged; a citation left behind points nowhere, and nothing else notices.

Forms recognised, over line breaks and comment markers (` * `, `# `, `// `):
    docs/X.md, "Heading"        docs/X.md ("Heading")       (docs/X.md "Heading")
    docs/X.md, "A" and "B"      "Heading" in docs/X.md      docs/X.md#github-anchor
(the path in backticks or not; X.md#anchor also without docs/, from a page
beside it).  A citation names a heading when it is the heading's text, or
the text before the heading's ": ...", " (...)" or ", ..." tail, case aside.

usage: check_doc_sections.py SOURCE_ROOT"""
import bisect
import os
import re
import sys

root = sys.argv[1]
DOCS = os.path.join(root, "docs")
SKIP_DIRS = {".git", "subprojects", "node_modules", "__pycache__", "fixtures"}
EXTS = (".md", ".c", ".h", ".in", ".py", ".sh", ".build", ".txt", ".yml", ".yaml", ".json", ".rst",
        ".service", ".1", ".cfg", ".toml")


def slug(text):
    """GitHub's anchor for a heading: lower case, punctuation but - and _ gone, spaces to -."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def plain(text):
    return re.sub(r"[`*_]", "", text).strip()


def headings(page):
    found, fence = [], False
    with open(page, encoding="utf-8") as fh:
        for line in fh:
            if line.lstrip().startswith("```"):
                fence = not fence
            elif not fence and re.match(r"#{1,6} ", line):
                found.append(line.lstrip("#").strip())
    return found


pages = {}
for f in sorted(os.listdir(DOCS)):
    if f.endswith(".md"):
        hs = headings(os.path.join(DOCS, f))
        names = set()
        for h in hs:
            h = plain(h).lower()
            names.add(h)
            for cut in (": ", " (", ", "):
                if cut in h:
                    names.add(h.split(cut, 1)[0])
        pages[f[:-3]] = (names, {slug(re.sub(r"`", "", h)) for h in hs})

PAGE = r"`?(?:\./)?docs/(%s)\.md`?" % "|".join(re.escape(p) for p in sorted(pages, key=len, reverse=True))
QUOTED = r'"[A-Za-z0-9`\'][^"\n]{0,119}"'  # a heading's words, not a "$shell" argument
RUN = r"%s(?:\s*(?:,\s*and|,\s*or|,|and|or)\s*%s)*" % (QUOTED, QUOTED)
AFTER = re.compile(r"%s\s*(?:,\s*|\(\s*)?(%s)" % (PAGE, RUN))
BEFORE = re.compile(r"(%s)\s+in\s+%s" % (RUN, PAGE))
ANCHOR = re.compile(r"(?:\bdocs/|(?<![\w/.-]))(%s)\.md#([\w-]+)" % "|".join(re.escape(p) for p in pages))
# a line's leading comment marker, dropped when lines are joined
MARKER = re.compile(r"^\s*(?:/\*+|\*+(?!/)|//+|#+|--)?\s*")


def joined(text):
    """The text with each line break and the next line's comment marker made
    one space, and the offset where each line starts in it."""
    parts, starts, at = [], [], 0
    for i, line in enumerate(text.split("\n")):
        line = MARKER.sub("", line, count=1) if i else line
        starts.append(at)
        parts.append(line)
        at += len(line) + 1
    return " ".join(parts), starts


def cites(path):
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (UnicodeDecodeError, OSError):
        return
    if "docs/" not in text and ".md#" not in text:
        return
    flat, starts = joined(text)

    def line_of(pos):
        return bisect.bisect_right(starts, pos)

    for m in AFTER.finditer(flat):
        for q in re.findall(QUOTED, m.group(2)):
            yield line_of(m.start()), m.group(1), q[1:-1], False
    for m in BEFORE.finditer(flat):
        for q in re.findall(QUOTED, m.group(1)):
            yield line_of(m.start()), m.group(2), q[1:-1], False
    for m in ANCHOR.finditer(flat):
        yield line_of(m.start()), m.group(1), m.group(2), True


problems, seen = [], 0
for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith((".", "build")))
    for f in sorted(files):
        if not f.endswith(EXTS) and f not in ("meson.build", "control", "rules"):
            continue
        path = os.path.join(d, f)
        rel = os.path.relpath(path, root)
        for n, page, section, is_anchor in cites(path):
            seen += 1
            names, anchors = pages[page]
            if is_anchor:
                ok = section.lower() in anchors
            else:
                ok = plain(section).rstrip(".,;:").lower() in names
            if not ok:
                what = "#" + section if is_anchor else '"%s"' % section
                problems.append(f"{rel}:{n}: cites docs/{page}.md {what}, which is not a heading there")
for p in problems:
    print(p)
print(f"{seen} citations of a section checked, {len(problems)} that name no heading")
sys.exit(1 if problems else 0)
