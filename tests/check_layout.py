#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layout is the architecture (docs/design.md, "Map"): this keeps it so.

  layers  the boundary holds both ways, shown by compiling probes with the
          targets' own compile commands (from compile_commands.json):
          - the core compiles with its own folders and include/ alone, each
            of its layers (base, wire, model, master, expose, store) with its
            own folder and those before it: a daemon header, or a later
            layer's, must fail there, the layer's own must pass (so that the
            check can fail); no core file includes an I/O library's header;
          - the daemon compiles with include/ and its own folder alone: a
            core-private header must fail there, a public one must pass;
            every header a daemon file includes is the daemon's own or
            public (<mooncake_kv/...>);
          - each public header compiles alone with include/ only, and
            includes nothing but system headers and other public ones.
  map     docs/design.md names every C file of exporter/ and tools/sim/ and
          every public header by its path, and every path it names exists.
  size    no C file, nor a test's Python, is over MAX_LINES lines: a file
          holds one responsibility.
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
PUBLIC = 'include/mooncake_kv'
GENERATED = ('version.h', 'runbook_html.h')  # the daemon's, written by meson


def entries_of(build, target):
    with open(os.path.join(build, 'compile_commands.json')) as f:
        entries = json.load(f)
    found = [e for e in entries if target + '.p' in e.get('output', e['command'])]
    if not found:
        sys.exit('layers: no %s entry in compile_commands.json' % target)
    return found


def compile_flags(entry):
    args = shlex.split(entry['command'])
    keep = [args[0]]
    for a in args[1:]:
        if a.startswith(('-I', '-D', '-std')):
            keep.append(a)
    return keep


def include_dirs(entry, build, root):
    """The project's source folders a target is compiled with (meson's
    build folders and the system's left out)."""
    out = []
    for a in compile_flags(entry)[1:]:
        if a.startswith('-I'):
            path = os.path.normpath(os.path.join(entry['directory'], a[2:]))
            if path == build or path.startswith(build + os.sep):
                continue
            if path == root or path.startswith(root + os.sep):
                out.append(os.path.relpath(path, root))
    return out


def probe(flags, directory, include):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'probe.c')
        with open(src, 'w') as f:
            f.write('#include %s\nint probe(void);\n' % include)
        r = subprocess.run(flags + ['-fsyntax-only', src], cwd=directory, capture_output=True, text=True)
        return r.returncode == 0, r.stderr


def headers_under(root, top):
    found = set()
    for d, _, files in os.walk(os.path.join(root, top)):
        found.update(f for f in files if f.endswith('.h'))
    return found


def includes(path):
    text = open(path).read()
    return re.findall(r'#include\s+"([^"]+)"', text), re.findall(r'#include\s+<([^>]+)>', text)


def check_includes(root, folder, own, why, io):
    """Every file of folder includes its own headers ("..."), public ones
    (<mooncake_kv/...>) that exist, and, unless io, no I/O library."""
    bad = []
    public = headers_under(root, PUBLIC)
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in files:
            path = os.path.join(d, f)
            quoted, angled = includes(path)
            bad += ['%s includes "%s", %s' % (path, inc, why) for inc in quoted if inc not in own]
            bad += ['%s includes <%s>: the core does no I/O' % (path, inc) for inc in angled
                    if not io and inc.startswith(IO_HEADERS)]
            bad += ['%s includes <%s>, which is no public header' % (path, inc) for inc in angled
                    if inc.startswith('mooncake_kv/') and inc[len('mooncake_kv/'):] not in public]
    return bad


# The core's inner layers, in order (meson.build's core_layers), and a
# header of each for the probes: a layer compiles with its own folder and
# those before it, so a later layer's header must not compile in it.
LAYERS = (('base', '"kv_fmt.h"'), ('wire', '"kv_decode.h"'), ('model', '"kv_state.h"'),
          ('master', '"kv_drift.h"'), ('expose', '"kv_render.h"'), ('store', '"kv_store_impl.h"'))


def check_core(build, root):
    bad = []
    for i, (layer, own) in enumerate(LAYERS):
        entries = entries_of(build, 'libmooncake-kv-core-%s.a' % layer)
        allowed = {'include', 'exporter/core'} | {'exporter/core/' + l for l, _ in LAYERS[:i + 1]}
        for e in entries:
            for rel in include_dirs(e, build, root):
                if rel not in allowed:
                    bad.append('%s (layer %s) is compiled with -I%s: a layer sees itself and the layers before it'
                               % (e['file'], layer, rel))
        e = entries[0]
        ok, err = probe(compile_flags(e), e['directory'], own)
        if not ok:
            bad.append('the %s layer\'s own header %s does not compile with its flags (the probe is broken):\n%s'
                       % (layer, own, err))
        for later, header in LAYERS[i + 1:]:
            if probe(compile_flags(e), e['directory'], header)[0]:
                bad.append('a %s file can include %s, a header of the later layer %s' % (layer, header, later))
        for daemon_header in ('"kv_source.h"', '"kv_fetch.h"', '"exporter/daemon/kv_source.h"'):
            if probe(compile_flags(e), e['directory'], daemon_header)[0]:
                bad.append('a core file (layer %s) can include the daemon header %s' % (layer, daemon_header))
    return bad + check_includes(root, 'exporter/core', headers_under(root, 'exporter/core'), 'not a core header',
                                io=False)


def check_daemon(build, root):
    bad = []
    entries = entries_of(build, 'libkvdaemon.a')
    for e in entries:
        for rel in include_dirs(e, build, root):
            if rel not in ('include', 'exporter/daemon'):
                bad.append('%s is compiled with -I%s (the daemon sees include/ and its own folder only)'
                           % (e['file'], rel))
    e = entries[0]
    ok, err = probe(compile_flags(e), e['directory'], '<mooncake_kv/store.h>')
    if not ok:
        bad.append('a public header does not compile with the daemon\'s flags (the probe is broken):\n' + err)
    for private in ('"kv_state.h"', '"kv_stream.h"', '"kv_master_status.h"', '"exporter/core/model/kv_state.h"'):
        if probe(compile_flags(e), e['directory'], private)[0]:
            bad.append('a daemon file can include the core-private header %s' % private)
    return bad + check_includes(root, 'exporter/daemon', headers_under(root, 'exporter/daemon') | set(GENERATED),
                                'neither the daemon\'s nor public', io=True)


def check_public(build, root):
    """Each public header stands alone: it compiles with include/ only and
    includes nothing but system headers and public ones."""
    bad = []
    e = entries_of(build, 'libkvdaemon.a')[0]
    flags = [a for a in compile_flags(e) if not a.startswith('-I')] + ['-I' + os.path.join(root, 'include')]
    names = sorted(headers_under(root, PUBLIC))
    if not names:
        bad.append('no public header in ' + PUBLIC)
    for h in names:
        quoted, angled = includes(os.path.join(root, PUBLIC, h))
        for inc in quoted:
            bad.append('%s/%s includes "%s": a public header includes only <mooncake_kv/...>' % (PUBLIC, h, inc))
        ok, err = probe(flags, root, '<mooncake_kv/%s>' % h)
        if not ok:
            bad.append('%s/%s does not compile alone with -Iinclude:\n%s' % (PUBLIC, h, err))
    return bad


def check_layers(build, root):
    return check_core(build, root) + check_daemon(build, root) + check_public(build, root)


def check_map(root):
    design = open(os.path.join(root, 'docs/design.md')).read()
    bad = []
    files = []
    for top in ('exporter', 'tools/sim'):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith('.c')]
    files += [os.path.join(PUBLIC, h) for h in os.listdir(os.path.join(root, PUBLIC)) if h.endswith('.h')]
    for f in sorted(files):
        if '`%s`' % f not in design:
            bad.append('docs/design.md does not name %s' % f)
    for f in sorted(set(re.findall(r'`((?:exporter|tools/sim|include)/[\w/.-]+\.[ch])`', design))):
        if not os.path.exists(os.path.join(root, f)):
            bad.append('docs/design.md names %s, which does not exist' % f)
    return bad


MAX_LINES = 600


def check_size(root):
    bad = []
    for top in ('exporter', 'include', 'tools', 'tests', 'examples'):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in ('fixtures', 'corpus', 'node_modules')]
            for n in names:
                if n.endswith(('.c', '.h')) or (top == 'tests' and n.endswith('.py')):
                    path = os.path.join(d, n)
                    with open(path, errors='replace') as f:
                        lines = sum(1 for _ in f)
                    if lines > MAX_LINES:
                        bad.append('%s has %d lines, over %d: split it by responsibility'
                                   % (os.path.relpath(path, root), lines, MAX_LINES))
    return bad


SOURCES = ('.c', '.h', '.py', '.sh', '.mjs', '.in')


def check_license(root):
    bad = []
    if not os.path.exists(os.path.join(root, 'LICENSE')):
        bad.append('no LICENSE file')
    for top in ('exporter', 'include', 'tools', 'tests', 'examples', '.ci'):
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
    bad = check_layers(build, root) + check_map(root) + check_size(root) + check_license(root)
    for b in bad:
        print('layout: ' + b)
    if bad:
        sys.exit(1)
    print('layout: the core and the daemon build apart, each public header alone; docs/design.md maps every C file '
          'and public header; no C file is over %d lines; every source has its SPDX line' % MAX_LINES)


if __name__ == '__main__':
    main()
