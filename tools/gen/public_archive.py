#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The installed libmooncake-kv.a exports the public interface and nothing
else (docs/design.md, "Embedding the core").

The core is compiled with -fvisibility=hidden and its public declarations
marked MKV_EXTERN, but hidden visibility binds only a shared object: an
archive's hidden symbols still resolve for whoever links it.  So the core's
objects are linked into one relocatable object (cc -r), whose hidden
symbols are then made local (objcopy --localize-hidden): calls inside the
core are resolved by then, and nothing but the MKV_EXTERN functions is left
for a program to link against.  The unit tests link the core's own archive
(core_private_dep), which keeps every symbol.

usage: public_archive.py OBJCOPY AR INPUT.a OUTPUT.a CC [CC_ARGS...]
"""
import os
import subprocess
import sys
import tempfile


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('public_archive: %s failed (%d): %s' % (cmd[0], r.returncode, r.stderr.strip()))


def main():
    objcopy, ar, inp, out = sys.argv[1:5]
    cc = sys.argv[5:]
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out))) as tmp:
        obj = os.path.join(tmp, 'mooncake-kv.o')
        run(cc + ['-r', '-nostdlib', '-o', obj, '-Wl,--whole-archive', inp, '-Wl,--no-whole-archive'])
        run([objcopy, '--localize-hidden', obj])
        if os.path.exists(out):
            os.unlink(out)  # ar would add to what is there
        run([ar, 'rcs', out, obj])


if __name__ == '__main__':
    main()
