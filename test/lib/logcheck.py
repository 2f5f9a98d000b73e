#!/usr/bin/python3
"""
test/lib/logcheck.py -- the one checker of server logs for every suite
(issue #9 item 5): a WARNING, ERROR, FATAL or PANIC, a reference-leak report,
a sanitizer report or "terminated by signal" in a PostgreSQL or MariaDB log
fails the case that wrote it, unless that case's allowlist expects it.

Used by test/run.sh after each suite for the main servers' logs (the part
the suite wrote), and by suites for the logs of their own instances (the
Python API: LogWatch).

What a case expects is listed next to the cases: test/suites/NN-name.allow
(or any file a suite passes), one entry a line:

    CASE  REGEX        # why this case logs it

CASE is a case name or an fnmatch pattern of names ("apply/conflicts",
"apply/*"; "-" is the suite's setup before its first case); REGEX is a
Python regular expression searched in the log line (make it narrow: the
message, not the level).  Lines starting with # are comments.  "CASE  @errors-in GLOB" expects each
"ERROR:  message" line of the files GLOB names (relative to the project's
root; pg_regress's expected outputs) exactly.  A line "@instances" makes
test/run.sh check the logs of the suite's own instances too (the copies
pg-NAME.log and mariadb-NAME.log it leaves in its scratch directory).  The
entries
of test/lib/logcheck.allow hold for every suite (what servers always log,
e.g. at start).

Cases are told apart in a PostgreSQL log by the marker lines a suite logs
when a case begins (mark_case(): "LOG:  blf-case: NAME"); a log without
markers (MariaDB's) is checked against the entries of every case of the
suite.

Command line:
    logcheck.py offsets FILE...          print "SIZE FILE" per file (0 if missing)
    logcheck.py check --suite NAME --offsets FILE [--allow FILE]...
        print one case line per log checked: "ok - NAME/server-logs" or
        "not ok - NAME/server-logs: N unexpected lines: ..."; exit 1 on any
    logcheck.py selftest                 the checker's own test
"""

import fnmatch
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GLOBAL_ALLOW = os.path.join(HERE, 'logcheck.allow')
MARKER = 'blf-case: '

# the primary line of a report (PostgreSQL: "... LEVEL:  message";
# MariaDB: "... [ERROR] ..." / "[Warning]")
BAD = re.compile(r'\b(WARNING|ERROR|FATAL|PANIC):  |\[(ERROR|Warning)\]|'
                 r'reference leak|still referenced|LeakSanitizer|AddressSanitizer|'
                 r'UndefinedBehaviorSanitizer|runtime error: |terminated by signal|'
                 r'mariadbd got signal|Assertion .* failed', re.I)
PG_MARKER = re.compile(r'\bLOG:  ' + re.escape(MARKER) + r'(\S+)')


class Allow:
    def __init__(self, files=()):
        self.entries = []
        for f in [GLOBAL_ALLOW] + list(files):
            self.load(f)

    def load(self, path):
        if not path or not os.path.exists(path):
            return
        with open(path, errors='replace') as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip('\n')
                if not line.strip() or line.lstrip().startswith('#') or line.strip() == '@instances':
                    continue
                # "CASE  REGEX  # comment": the comment starts at "  # "
                line = re.split(r'\s+#\s', line, 1)[0].rstrip()
                parts = line.split(None, 1)
                if len(parts) != 2:
                    raise ValueError('%s:%d: expected "CASE REGEX"' % (path, n))
                if parts[1].startswith('@errors-in '):
                    # each "ERROR:  message" of these expected outputs, exactly
                    for msg in expected_errors(parts[1].split(None, 1)[1]):
                        self.entries.append((parts[0], re.compile(
                            r'ERROR:  ' + re.escape(msg) + r'( at character \d+)?$'), '%s:%d' % (path, n)))
                    continue
                self.entries.append((parts[0], re.compile(parts[1]), '%s:%d' % (path, n)))

    def allows(self, case, line):
        for pat, rx, _ in self.entries:
            if (case is None or pat == '*' or fnmatch.fnmatchcase(case, pat)) and rx.search(line):
                return True
        return False


def expected_errors(pattern):
    """The messages of the ERROR lines of the files pattern (a glob
    relative to the project's root) names: pg_regress's expected outputs,
    whose errors the regression tests check exactly."""
    import glob
    root = os.path.dirname(os.path.dirname(HERE))
    msgs = set()
    for f in glob.glob(os.path.join(root, pattern)):
        with open(f, errors='replace') as fh:
            for line in fh:
                if line.startswith('ERROR:  '):
                    msgs.add(line[len('ERROR:  '):].rstrip('\n'))
    return sorted(msgs)


def read_from(path, offset):
    """The text of path from byte offset (all of it if the file shrank)."""
    try:
        with open(path, 'rb') as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(offset if offset <= size else 0)
            return f.read().decode('utf-8', 'replace')
    except FileNotFoundError:
        return ''


def unexpected(text, allow, markers=True):
    """[(case, line)] of the report lines of text that allow does not expect.
    markers: the log carries blf-case markers (PostgreSQL); else every
    case's entries apply to every line."""
    case = '-' if markers else None
    bad = []
    for line in text.splitlines():
        m = PG_MARKER.search(line)
        if m:
            case = m.group(1)
            continue
        if BAD.search(line) and not allow.allows(case, line):
            bad.append((case or '?', line))
    return bad


def is_pg_log(path):
    return path.endswith('postgresql.log') or os.path.basename(path).startswith('pg-')


class LogWatch:
    """For suites: watch = LogWatch([paths]); ...; bad = watch.check(allow)."""

    def __init__(self, paths):
        self.offsets = {}
        self.mark(paths)

    def mark(self, paths=None):
        for p in paths or list(self.offsets):
            try:
                self.offsets[p] = os.path.getsize(p)
            except OSError:
                self.offsets[p] = 0

    def check(self, allow):
        bad = []
        for p, off in self.offsets.items():
            bad += [(p, c, l) for c, l in unexpected(read_from(p, off), allow, is_pg_log(p))]
        return bad


def mark_case(cur, name):
    """Log the marker of case name in the PostgreSQL log (cur: a cursor)."""
    cur.execute("DO $$BEGIN RAISE LOG '%s%s'; END$$" % (MARKER, name.replace("'", "")))


def summary(bad, n=3):
    return '; '.join('[%s] %s: %s' % (c, os.path.basename(p), l.strip()[:300]) for p, c, l in bad[:n])


def selftest():
    allow = Allow()
    allow.entries.append(('apply/conflicts', re.compile(r'row to update not found in blf_ac_conf\.c1'), 't'))
    text = '\n'.join([
        '2026-12-02 05:19:57.549 UTC [1] LOG:  blf-case: apply/conflicts',
        '2026-12-02 05:19:57.549 UTC [1] postgres@x ERROR:  row to update not found in blf_ac_conf.c1',
        '2026-12-02 05:19:57.549 UTC [1] LOG:  blf-case: apply/keys',
        '2026-12-02 05:19:57.549 UTC [1] postgres@x ERROR:  row to update not found in blf_ac_conf.c1',
        '2026-12-02 05:19:57.549 UTC [1] postgres@x WARNING:  relcache reference leak: relation "t" not closed',
        '2026-12-02 05:19:57.549 UTC [1] LOG:  server process (PID 2) was terminated by signal 11',
    ])
    bad = unexpected(text, allow)
    got = [(c, l.split('  ', 1)[1]) for c, l in bad]
    exp = [('apply/keys', 'row to update not found in blf_ac_conf.c1'),
           ('apply/keys', 'relcache reference leak: relation "t" not closed'),
           ('apply/keys', 'server process (PID 2) was terminated by signal 11')]
    if got != exp:
        print('not ok - logcheck/selftest: got %r' % got)
        return 1
    print('ok - logcheck/selftest')
    return 0


def main(argv):
    if len(argv) >= 1 and argv[0] == 'selftest':
        return selftest()
    if len(argv) >= 2 and argv[0] == 'offsets':
        for p in argv[1:]:
            try:
                size = os.path.getsize(p)
            except OSError:
                size = 0
            print('%d %s' % (size, p))
        return 0
    if len(argv) >= 1 and argv[0] == 'check':
        suite, offsets, allows = None, None, []
        i = 1
        while i < len(argv):
            if argv[i] == '--suite':
                suite = argv[i + 1]
            elif argv[i] == '--offsets':
                offsets = argv[i + 1]
            elif argv[i] == '--allow':
                allows.append(argv[i + 1])
            else:
                print('logcheck: unknown argument %s' % argv[i], file=sys.stderr)
                return 2
            i += 2
        allow = Allow(allows)
        rc = 0
        with open(offsets) as f:
            for line in f:
                off, path = line.rstrip('\n').split(' ', 1)
                bad = [(path, c, l) for c, l in unexpected(read_from(path, int(off)), allow, is_pg_log(path))]
                what = '%s/server-log %s' % (suite, os.path.basename(path))
                if bad:
                    rc = 1
                    print('not ok - %s: %d unexpected lines (allowlists: %s): %s'
                          % (what, len(bad), ', '.join(allows) or 'none', summary(bad)))
                    for p, c, l in bad:
                        print('# unexpected [%s] %s' % (c, l))
                else:
                    print('ok - %s' % what)
        return rc
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
