#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A program outside the core builds against the core as installed, and its
figures are the capture's (docs/design.md, "Embedding the core").

  install  meson install (the devel files: the archive, the public headers,
           mooncake-kv.pc) into a temporary folder; nothing of the core's
           own headers is there.
  build    examples/ copied out of the tree and built with make (or, with
           no make, the Makefile's own command) and pkg-config, finding
           mooncake-kv.pc in that folder alone: the example sees the public
           headers and links the installed archive, nothing else.
  run      the example reads a capture (its own few lines read the file)
           and prints the exposition, whose stream figures must be those the
           capture's truth file says: messages, events, gaps, numbers
           missing, the last number.
  c++      where a C++ compiler is found, a C++ program including every
           public header links against the same archive and calls into it
           (extern "C"; C++23 for <stdatomic.h>, which store.h uses).

usage: check_example.py MESON BUILD_DIR SOURCE_ROOT CAPTURE TRUTH SANITIZE PKG_CONFIG MAKE|- CXX|- CC [CC_ARGS...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(cmd, why, env=None, cwd=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        sys.exit('example: %s failed (%s, exit %d):\n%s%s' % (why, ' '.join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def install(meson, build, dest):
    run([meson, 'install', '-C', build, '--destdir', dest, '--no-rebuild', '--tags', 'devel'],
        'installing the core (is install_core off?)')
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == 'mooncake-kv.pc']
    if len(pcs) != 1:
        sys.exit('example: the install left %d mooncake-kv.pc files, not one' % len(pcs))
    headers = sorted(f for d, _, fs in os.walk(dest) for f in fs if f.endswith('.h'))
    return pcs[0], headers


def pkg_env(pc, dest):
    env = dict(os.environ)
    env['PKG_CONFIG_PATH'] = os.path.dirname(pc)  # searched before the system's folders
    env['PKG_CONFIG_SYSROOT_DIR'] = dest  # the .pc says the prefix; the files are under dest
    return env


def values(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r'([a-z_:]+)(\{[^}]*\})? (\S+)$', line)
        if m:
            out[m.group(1) + (m.group(2) or '')] = float(m.group(3))
    return out


def main():
    meson, build, root, capture, truth_path, sanitize, pkg_config, make, cxx = sys.argv[1:10]
    cc = sys.argv[10:]
    truth = json.load(open(truth_path))['capture']
    flags = ['-O1', '-g', '-Wall', '-Wextra', '-Werror']
    if sanitize != 'none':  # the archive was built so: the program links the runtime
        flags.append('-fsanitize=' + sanitize)
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, 'dest')
        pc, headers = install(meson, build, dest)
        public = sorted(f for f in os.listdir(os.path.join(root, 'include/mooncake_kv')) if f.endswith('.h'))
        if headers != public:
            sys.exit('example: the install has the headers %s, the public ones are %s' % (headers, public))
        env = pkg_env(pc, dest)
        where = run([pkg_config, '--variable=pcfiledir', 'mooncake-kv'], 'pkg-config', env=env).strip()
        if os.path.realpath(where) != os.path.realpath(os.path.dirname(pc)):
            sys.exit('example: pkg-config found mooncake-kv.pc in %s, not in the install (%s)' % (where, pc))
        version = run([pkg_config, '--modversion', 'mooncake-kv'], 'pkg-config', env=env).strip()

        src = os.path.join(tmp, 'examples')
        shutil.copytree(os.path.join(root, 'examples'), src)
        if make != '-':
            run([make, '-C', src, 'CC=' + ' '.join(cc), 'PKG_CONFIG=' + pkg_config, 'CFLAGS=' + ' '.join(flags),
                 'LDFLAGS=' + ' '.join(f for f in flags if f.startswith('-fsanitize'))], 'make', env=env)
        else:  # the Makefile's recipe, spelt out
            cflags = run([pkg_config, '--cflags', 'mooncake-kv'], 'pkg-config', env=env).split()
            libs = run([pkg_config, '--libs', '--static', 'mooncake-kv'], 'pkg-config', env=env).split()
            run(cc + ['-std=c11'] + flags + cflags + ['-o', os.path.join(src, 'scrape_capture'),
                                                       os.path.join(src, 'scrape_capture.c')] + libs,
                'building the example', env=env)
        text = run([os.path.join(src, 'scrape_capture'), capture], 'the example on ' + capture)

        got = values(text)
        want = {
            'mooncake_kv_messages_received_total{source="capture"}': truth['messages'],
            'mooncake_kv_batch_events_sum{source="capture"}': truth['events'],
            'mooncake_kv_sequence_gaps_total{source="capture"}': len(truth['seq_gaps']),
            'mooncake_kv_sequence_missing_total{source="capture"}': sum(g['missing'] for g in truth['seq_gaps']),
            'mooncake_kv_sequence_duplicates_total{source="capture"}': 0,
            'mooncake_kv_last_sequence{source="capture"}': truth['seq_last'],
        }
        bad = ['%s is %s, the capture\'s truth says %s' % (k, got.get(k, 'absent'), v)
               for k, v in want.items() if got.get(k) != v]
        if 'mooncake_kv_exporter_build_info{version="%s",revision="example"}' % version not in got:
            bad.append('no exporter_build_info with version %s (the .pc\'s): the example printed MKV_VERSION_STRING' % version)

        if cxx != '-':
            prog = os.path.join(tmp, 'probe.cc')
            with open(prog, 'w') as f:
                f.writelines('#include <mooncake_kv/%s>\n' % h for h in public)
                f.write('#include <cstdio>\nint main() {\n'
                        '\tmkv_buf b;\n\tmkv_buf_init(&b);\n\tmkv_buf_adds(&b, mkv_poll_error_name(MKV_POLL_TIMEOUT));\n'
                        '\tchar err[128];\n\tmkv_keygroup_re *re = mkv_keygroup_compile("^(?<m>[^/]+)/", err, sizeof(err));\n'
                        '\tstd::printf("%s %zu\\n", mkv_buf_str(&b), re ? mkv_keygroup_names(re) : 0);\n'
                        '\tmkv_keygroup_free(re);\n\tmkv_buf_free(&b);\n\treturn 0;\n}\n')
            cflags = run([pkg_config, '--cflags', 'mooncake-kv'], 'pkg-config', env=env).split()
            libs = run([pkg_config, '--libs', '--static', 'mooncake-kv'], 'pkg-config', env=env).split()
            exe = os.path.join(tmp, 'probe')
            run([cxx, '-std=c++2b'] + flags + cflags + ['-o', exe, prog] + libs, 'a C++ program against the core',
                env=env)
            out = run([exe], 'the C++ program')
            if out != 'timeout 1\n':
                bad.append('the C++ program printed %r, not the core\'s answers %r' % (out, 'timeout 1\n'))

    for b in bad:
        print('example: ' + b)
    if bad:
        sys.exit(1)
    print('example: built against the installed mooncake-kv %s with pkg-config alone; on %s it counts %d messages, '
          '%d events, %d gaps, %d numbers missing, last %d, as the truth says%s'
          % (version, os.path.basename(capture), truth['messages'], truth['events'], len(truth['seq_gaps']),
             sum(g['missing'] for g in truth['seq_gaps']), truth['seq_last'],
             '; a C++ program links it too' if cxx != '-' else ''))


if __name__ == '__main__':
    main()
