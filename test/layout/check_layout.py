#!/usr/bin/env python3
"""test/layout/check_layout.py -- the arrows between the parts of src/.

Each folder of src/ is one part; a part may include the headers of the parts
below it only (docs/architecture.md, "Layout"):

    decoder <- source <- tools
    decoder <- base <- store <- worker (also source)
               base <- types
                         store <- sql (also types, source)
                         store <- apply (also types, source)

Prints one case line per part ("ok - layout/PART" or "not ok - layout/PART:
..."), plus "layout/one-header": every PostgreSQL-side part has the one
header named after it (src/PART/PART.h) that its files include.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SRC = os.path.join(ROOT, 'src')

ALLOWED = {
    'decoder': set(),
    'source': {'decoder'},
    'tools': {'decoder', 'source'},
    'base': {'decoder'},
    'types': {'base', 'decoder'},
    'store': {'base', 'decoder'},
    'worker': {'store', 'base', 'source', 'decoder'},
    'sql': {'store', 'types', 'base', 'source', 'decoder'},
    'apply': {'store', 'types', 'base', 'source', 'decoder'},
}
PG_PARTS = ['base', 'types', 'store', 'worker', 'sql', 'apply']

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def part_files(part):
    d = os.path.join(SRC, part)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(('.c', '.h')))


def main():
    parts = sorted(p for p in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, p)))
    # which part owns a bare header name ("bl_decoder.h")
    owner = {}
    for p in parts:
        for f in part_files(p):
            if f.endswith('.h'):
                owner[os.path.basename(f)] = p
    failed = 0
    unknown = [p for p in parts if p not in ALLOWED]
    if unknown:
        print('not ok - layout/parts: folders without a place in the layout: %s' % ', '.join(unknown))
        failed += 1
    for p in parts:
        if p not in ALLOWED:
            continue
        bad = []
        for f in part_files(p):
            for inc in INCLUDE.findall(open(f, encoding='utf-8').read()):
                if '/' in inc:
                    target = inc.split('/')[0]
                    if target not in ALLOWED or not os.path.exists(os.path.join(SRC, inc)):
                        continue		# a PostgreSQL header ("utils/rel.h")
                else:
                    target = owner.get(inc)
                    if target is None:
                        continue		# a system or PostgreSQL header
                if target != p and target not in ALLOWED[p]:
                    bad.append('%s includes %s (%s)' % (os.path.relpath(f, ROOT), inc, target))
        if bad:
            print('not ok - layout/%s: %s' % (p, '; '.join(bad)))
            failed += 1
        else:
            print('ok - layout/%s' % p)
    missing = []
    for p in PG_PARTS:
        hdr = os.path.join(SRC, p, p + '.h')
        if not os.path.exists(hdr):
            missing.append('src/%s/%s.h is missing' % (p, p))
            continue
        others = [os.path.basename(f) for f in part_files(p) if f.endswith('.h') and f != hdr]
        if others:
            missing.append('src/%s has headers besides %s.h: %s' % (p, p, ', '.join(others)))
        for f in part_files(p):
            if f.endswith('.c') and '"%s/%s.h"' % (p, p) not in open(f, encoding='utf-8').read():
                missing.append('%s does not include %s/%s.h' % (os.path.relpath(f, ROOT), p, p))
    if os.path.exists(os.path.join(SRC, 'pg')):
        missing.append('src/pg still exists')
    if missing:
        print('not ok - layout/one-header: %s' % '; '.join(missing))
        failed += 1
    else:
        print('ok - layout/one-header')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
