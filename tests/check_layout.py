#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layout is the architecture (docs/design.md, "Map"): this keeps it so.

  layers  kvcore compiles with the core's folders alone: a core file that
          includes a daemon header, or an I/O library's, does not build.
          Shown by compiling probes with kvcore's own compile command (from
          compile_commands.json): a daemon header must fail, a core header
          must pass (so that the check can fail).
  map     docs/design.md names every C file of exporter/ and tools/sim/ by
          its path, and every path it names exists.
  license every source file (C, Python, shell, JavaScript, meson) says
          its licence in an SPDX line near its top (LICENSE has the text).

usage: check_layout.py BUILD_DIR SOURCE_ROOT
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

IO_HEADERS = ('zmq.h', 'curl/', 'microhttpd.h', 'pthread.h', 'sys/socket.h', 'netdb.h')


def kvcore_command(build):
    with open(os.path.join(build, 'compile_commands.json')) as f:
        entries = json.load(f)
    core = [e for e in entries if 'libkvcore.a.p' in e.get('output', e['command'])]
    if not core:
        sys.exit('layers: no kvcore entry in compile_commands.json')
    return core


def compile_flags(entry):
    args = shlex.split(entry['command'])
    keep = [args[0]]
    for a in args[1:]:
        if a.startswith(('-I', '-D', '-std')):
            keep.append(a)
    return keep


def probe(entry, include):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'probe.c')
        with open(src, 'w') as f:
            f.write('#include "%s"\nint probe(void);\n' % include)
        r = subprocess.run(compile_flags(entry) + ['-fsyntax-only', src], cwd=entry['directory'],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr


def check_layers(build, root):
    bad = []
    entries = kvcore_command(build)
    for e in entries:
        for a in compile_flags(e)[1:]:
            if not a.startswith('-I'):
                continue
            path = os.path.normpath(os.path.join(e['directory'], a[2:]))
            if path.startswith(build + os.sep) or path == build:
                continue  # meson's generated headers
            rel = os.path.relpath(path, root)
            if rel != 'exporter/core' and not rel.startswith('exporter/core/'):
                bad.append('%s is compiled with -I%s (outside exporter/core)' % (e['file'], rel))
    e = entries[0]
    ok, err = probe(e, 'kv_state.h')
    if not ok:
        bad.append('a core header does not compile with kvcore\'s flags (the probe is broken):\n' + err)
    for daemon_header in ('kv_source.h', 'kv_fetch.h', 'exporter/daemon/kv_source.h'):
        ok, _ = probe(e, daemon_header)
        if ok:
            bad.append('a core file can include the daemon header "%s"' % daemon_header)
    core_headers = set()
    for d, _, files in os.walk(os.path.join(root, 'exporter/core')):
        core_headers.update(f for f in files if f.endswith('.h'))
    for d, _, files in os.walk(os.path.join(root, 'exporter/core')):
        for f in files:
            text = open(os.path.join(d, f)).read()
            for inc in re.findall(r'#include\s+"([^"]+)"', text):
                if inc not in core_headers:
                    bad.append('%s includes "%s", not a core header' % (os.path.join(d, f), inc))
            for inc in re.findall(r'#include\s+<([^>]+)>', text):
                if inc.startswith(IO_HEADERS):
                    bad.append('%s includes <%s>: the core does no I/O' % (os.path.join(d, f), inc))
    return bad


def check_map(root):
    design = open(os.path.join(root, 'docs/design.md')).read()
    bad = []
    files = []
    for top in ('exporter', 'tools/sim'):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith('.c')]
    for f in sorted(files):
        if '`%s`' % f not in design:
            bad.append('docs/design.md does not name %s' % f)
    for f in sorted(set(re.findall(r'`((?:exporter|tools/sim)/[\w/.-]+\.[ch])`', design))):
        if not os.path.exists(os.path.join(root, f)):
            bad.append('docs/design.md names %s, which does not exist' % f)
    return bad


SOURCES = ('.c', '.h', '.py', '.sh', '.mjs', '.in')


def check_license(root):
    bad = []
    if not os.path.exists(os.path.join(root, 'LICENSE')):
        bad.append('no LICENSE file')
    for top in ('exporter', 'tools', 'tests', '.ci'):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in ('fixtures', 'corpus', 'node_modules')]
            for n in names:
                if not (n.endswith(SOURCES) or n in ('meson.build', 'run')):
                    continue
                path = os.path.join(d, n)
                with open(path, errors='replace') as f:
                    head = ''.join(f.readline() for _ in range(3))
                if 'SPDX-License-Identifier: Apache-2.0' not in head:
                    bad.append('%s has no SPDX line' % os.path.relpath(path, root))
    return bad


def main():
    build, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    bad = check_layers(build, root) + check_map(root) + check_license(root)
    for b in bad:
        print('layout: ' + b)
    if bad:
        sys.exit(1)
    print('layout: the core builds alone, docs/design.md maps every C file, every source has its SPDX line')


if __name__ == '__main__':
    main()
