#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The interface is exactly include/ (docs/design.md, "The core's interface").

  symbols  the global symbols libmooncake-kv.a (the archive as installed)
           defines are the functions and objects the public headers
           declare, both ways: nothing declared is missing, nothing
           exported is undeclared.  Names reserved to the implementation
           (__*, _X*: a sanitizer's, the compiler's) are not the core's.
  prefix   every exported symbol, public macro and tag carries the
           project's prefix (mkv_, MKV_): an embedding program's own
           names cannot collide with them.
  version  include/mooncake_kv/version.h says the project's version
           (meson.build's), in each of its macros.

The declarations are read from the headers as the compiler sees them: one
translation unit including every public header, preprocessed, each
top-level declaration that came from include/mooncake_kv/ taken apart
(typedefs, tags, static inline functions and macros declare no symbol).

usage: check_interface.py NM LIBRARY INCLUDE_DIR VERSION CC [CC_ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile

PUBLIC = 'mooncake_kv'
RESERVED = re.compile(r'^(__|_[A-Z])')
TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*|\d[\w.]*|\.\.\.|\S')
KEYWORDS = {'const', 'volatile', 'restrict', 'extern', 'inline', 'unsigned', 'signed', 'struct', 'union', 'enum',
            'void', 'char', 'short', 'int', 'long', 'float', 'double', '_Bool', '_Atomic', 'register'}


def public_text(cc, include, headers):
    """The preprocessed text of every public header, without what they
    include from the system."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'all.c')
        with open(src, 'w') as f:
            f.writelines('#include <%s/%s>\n' % (PUBLIC, h) for h in headers)
        r = subprocess.run(cc + ['-E', '-I' + include, src], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('interface: the public headers do not preprocess:\n' + r.stderr)
    out, keep = [], False
    for line in r.stdout.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]+)"', line)
        if m:
            keep = os.path.normpath(m.group(1)).startswith(os.path.normpath(os.path.join(include, PUBLIC)) + os.sep)
        elif keep and not line.startswith('#'):
            out.append(line)
    return '\n'.join(out)


def past_group(tokens, i, opening, closing):
    """The index just past the bracketed group that opens at tokens[i] (or the end)."""
    depth = 0
    while i < len(tokens):
        depth += tokens[i] == opening
        depth -= tokens[i] == closing
        i += 1
        if not depth:
            break
    return i


def strip_attributes(tokens):
    out, i = [], 0
    while i < len(tokens):
        if tokens[i] in ('__attribute__', '__extension__', '__asm__', '__asm', 'asm'):
            i += 1
            if i < len(tokens) and tokens[i] == '(':
                i = past_group(tokens, i, '(', ')')
            continue
        out.append(tokens[i])
        i += 1
    return out


def statements(tokens):
    """Top-level declarations as token lists; a function's body ends one."""
    stmt, depth, i = [], 0, 0
    while i < len(tokens):
        t = tokens[i]
        if t == '{' and not depth and stmt and stmt[-1] == ')':  # a definition: static inline
            i = past_group(tokens, i, '{', '}')
            yield stmt + ['{}']
            stmt = []
            continue
        if t in '({[':
            depth += 1
        elif t in ')}]':
            depth -= 1
        if t == ';' and not depth:
            yield stmt
            stmt = []
        else:
            stmt.append(t)
        i += 1


def flat(stmt):
    """The statement with braced bodies (a struct's, an enum's) left out."""
    out, depth = [], 0
    for t in stmt:
        if t == '{':
            depth += 1
        elif t == '}':
            depth -= 1
        elif not depth:
            out.append(t)
    return out


def declarator_name(tokens):
    """The name a declarator declares: the first identifier in it that is
    not a keyword, a tag's or a type's (the last one before the declarator's
    own parenthesis, bracket or end)."""
    depth, last = 0, None
    for k, t in enumerate(tokens):
        if t == '(' and last is not None and not depth:
            return last  # f(args): the function's name
        if t in '([':
            depth += 1
        elif t in ')]':
            depth -= 1
        elif t == '=' and not depth:
            break
        elif depth == 0 and re.match(r'[A-Za-z_]\w*$', t) and t not in KEYWORDS:
            last = t
        elif depth == 1 and tokens[k - 1] == '*' and re.match(r'[A-Za-z_]\w*$', t):
            return t  # (*f)(args): a pointer to a function, an object
    return last


def declared(text):
    """The names of the functions and objects declared (not typedefs, not
    tags, not static functions)."""
    names = set()
    for stmt in statements(strip_attributes(TOKEN.findall(text))):
        if not stmt or stmt[0] in ('typedef', '_Static_assert', 'static_assert') or 'static' in stmt:
            continue
        toks = flat(stmt)
        if toks and toks[0] in ('struct', 'union', 'enum') and len(toks) <= 2:
            continue  # a tag declared, with or without its body
        # the declarators, split at top-level commas: int a, b(void);
        parts, cur, depth = [], [], 0
        for t in toks:
            if t in '([':
                depth += 1
            elif t in ')]':
                depth -= 1
            if t == ',' and not depth:
                parts.append(cur)
                cur = []
            else:
                cur.append(t)
        parts.append(cur)
        spec = parts[0]
        name = declarator_name(spec)
        if name:
            names.add(name)
        for p in parts[1:]:
            n = declarator_name(p)
            if n:
                names.add(n)
    return names


def self_test():
    """The reader tells declarations from what declares no symbol: without
    this, an empty answer would pass as long as the library exported
    nothing either."""
    text = '''
typedef struct s { int a; int (*fn)(int); } s;
struct t;
enum e { E1, E2 };
extern const char *const names[4];
int f(int (*cb)(void *), void *arg);
struct s *g(void) ;
typedef int (*h_fn)(int);
static inline int k(int x) { return x + 1; }
__attribute__((visibility("default"))) void v(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int (*hook)(int), count;
'''
    got = declared(text)
    want = {'names', 'f', 'g', 'v', 'hook', 'count'}
    if got != want:
        sys.exit('interface: the declaration reader is broken: read %s, expected %s' % (sorted(got), sorted(want)))


def exported(nm, library):
    r = subprocess.run([nm, '-P', '-g', '--defined-only', library], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('interface: %s cannot read %s: %s' % (nm, library, r.stderr.strip()))
    names = set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and not f[0].endswith(':') and not f[0].endswith(']:'):
            names.add(f[0])
    return {n for n in names if not RESERVED.match(n)}


def check_prefix(nm_names, include):
    """Everything of the interface carries the project's prefix, so that a
    program embedding the archive keeps its own names: every exported
    symbol mkv_, every macro of the public headers MKV_ (or a header guard,
    MOONCAKE_KV_*_H), every tag mkv_."""
    bad = ['%s is exported without the mkv_ prefix' % n for n in sorted(nm_names) if not n.startswith('mkv_')]
    for h in sorted(os.listdir(os.path.join(include, PUBLIC))):
        if not h.endswith('.h'):
            continue
        text = open(os.path.join(include, PUBLIC, h)).read()
        for n in re.findall(r'^\s*#\s*define\s+(\w+)', text, re.M):
            if not n.startswith('MKV_') and not re.match(r'MOONCAKE_KV_\w+_H$', n):
                bad.append('%s/%s defines %s without the MKV_ prefix' % (PUBLIC, h, n))
        for n in re.findall(r'\b(?:struct|union|enum)\s+(\w+)', re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)):
            if not n.startswith('mkv_'):
                bad.append('%s/%s declares the tag %s without the mkv_ prefix' % (PUBLIC, h, n))
    return bad


def check_version(include, version):
    text = open(os.path.join(include, PUBLIC, 'version.h')).read()
    macros = dict(re.findall(r'#define\s+(MKV_VERSION_\w+)\s+(\S+)', text))
    want = version.split('.')
    bad = []
    for k, v in zip(('MAJOR', 'MINOR', 'PATCH'), want):
        if macros.get('MKV_VERSION_' + k) != str(int(v)):
            bad.append('MKV_VERSION_%s is %s, the project is %s' % (k, macros.get('MKV_VERSION_' + k), version))
    if macros.get('MKV_VERSION_STRING') != '"%s"' % version:
        bad.append('MKV_VERSION_STRING is %s, the project is %s' % (macros.get('MKV_VERSION_STRING'), version))
    return ['version.h: ' + b + ' (meson.build\'s project version)' for b in bad]


def main():
    nm, library, include, version = sys.argv[1:5]
    cc = sys.argv[5:]
    include = os.path.abspath(include)
    self_test()
    headers = sorted(h for h in os.listdir(os.path.join(include, PUBLIC)) if h.endswith('.h'))
    decl = declared(public_text(cc, include, headers))
    if not decl:
        sys.exit('interface: no declaration found in the public headers (the reader is broken)')
    have = exported(nm, library)
    bad = ['%s is declared in include/%s/ but %s does not export it (not defined, or not MKV_EXTERN)'
           % (n, PUBLIC, os.path.basename(library)) for n in sorted(decl - have)]
    bad += ['%s is exported by %s but no public header declares it (make it static, or leave it hidden)'
            % (n, os.path.basename(library)) for n in sorted(have - decl)]
    bad += check_version(include, version)
    bad += check_prefix(have, include)
    for b in bad:
        print('interface: ' + b)
    if bad:
        sys.exit(1)
    print('interface: %s exports the %d functions and objects include/%s/ declares, and nothing else; '
          'version.h says %s' % (os.path.basename(library), len(decl), PUBLIC, version))


if __name__ == '__main__':
    main()
