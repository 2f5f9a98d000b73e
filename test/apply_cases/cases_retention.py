"""
test/apply_cases/cases_retention.py -- the source's binlog retention against
the acknowledged position (issue 11 item 5), on a throwaway MariaDB that
expires binlogs after a day (--binlog-expire-logs-seconds=86400):

  retention
      binlog_fdw.status shows the source's oldest binlog, how many files it
      keeps before the acknowledged one and its expiry; when a PURGE makes
      the acknowledged file the oldest, retention_files is 0 and the worker
      logs a WARNING naming the position; when the acknowledged file is
      purged while the worker streams on, -1 and a second WARNING; once all
      it read is applied, the durable position follows the source's
      rotation into the file it keeps (an idle source does not pin an old
      binlog).  A stopped source whose position was purged fails to start
      with an error that says so; reset(), snapshot() and start() make it
      equal to the source again.

Instance "ac-ret" (BLF_APPLY_RET_PORT, 3445), destroyed at the end unless
BLF_APPLY_KEEP=1.  binlog_fdw.retention_check_interval is set to 1 s for
the case (ALTER SYSTEM) and reset after it.
"""

import os

from cases_images import destroy_instance, start_instance
from common import RUN
from harness import (Source, check, log, mdb_fresh, mx, q, short, status, wait_for)

RET_PORT = int(os.environ.get('BLF_APPLY_RET_PORT', '3445'))
DB = 'blf_ac_ret'


def binlogs(m):
    return [r[0] for r in mx(m, 'SHOW BINARY LOGS')]


def pg_log_text():
    path = os.environ.get('BLF_PG_LOG') or os.path.join(RUN, 'pg-main', 'postgresql.log')
    with open(path, errors='replace') as f:
        return f.read()


def retention(conn, name):
    s = status(conn, name) or {}
    return s.get('source_oldest_file'), s.get('retention_files'), s.get('binlog_expire_seconds'), \
        s.get('acked_file')


def wait_retention(conn, name, files, what):
    return wait_for('%s: retention_files %s' % (what, files),
                    lambda: (lambda r: r if r[1] == files else None)(retention(conn, name)), 30, 0.2)


def case_retention(conn, m_main):
    name = 'ac_ret'
    m = start_instance('ac-ret', RET_PORT, '--binlog-expire-logs-seconds=86400')
    src = None
    try:
        q(conn, 'ALTER SYSTEM SET binlog_fdw.retention_check_interval = 1')
        q(conn, 'SELECT pg_reload_conf()')
        mdb_fresh(m, DB)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)' % DB)
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
        q(conn, 'CREATE SCHEMA %s' % DB)
        q(conn, 'CREATE TABLE %s.t (id int PRIMARY KEY, v int)' % DB)
        mx(m, 'FLUSH BINARY LOGS')
        src = Source(conn, name, r'^%s\.' % DB, port=RET_PORT)
        src.start()
        mx(m, 'INSERT INTO %s.t VALUES (1, 1)' % DB)
        src.sync(m)
        files = binlogs(m)
        acked = retention(conn, name)[3]
        want = files.index(acked)
        r = wait_retention(conn, name, want, 'after the first apply')
        log('binlogs %s; status %s' % (files, r))
        check(r[0] == files[0] and r[2] == 86400,
              'status: oldest %s (source %s), expiry %s (source 86400)' % (r[0], files[0], r[2]))

        # a PURGE leaves the acknowledged file the oldest: 0 and a WARNING (a
        # change read and not applied keeps the position where it is)
        mx(m, 'INSERT INTO %s.t VALUES (2, 2)' % DB)
        mx(m, 'FLUSH BINARY LOGS')
        mx(m, 'FLUSH BINARY LOGS')
        mx(m, "PURGE BINARY LOGS TO '%s'" % acked)
        r = wait_retention(conn, name, 0, 'the acked file is the oldest')
        check(r[0] == acked, 'oldest %s, acked %s' % (r[0], acked))
        want_warning = ('source "%s": the acknowledged position %s:' % (name, acked),
                        "is in the source's oldest binlog, the next one it purges")
        text = wait_for('the WARNING of the oldest binlog', lambda: (lambda t: t if all(
            w in t for w in want_warning) else None)(pg_log_text()), 30, 0.2)
        check(text.count(want_warning[1]) == 1, 'the WARNING came %d times (once per acked file)'
              % text.count(want_warning[1]))

        # the acknowledged file purged while the worker streams on: -1, a WARNING
        newest = binlogs(m)[-1]
        mx(m, "PURGE BINARY LOGS TO '%s'" % newest)
        r = wait_retention(conn, name, -1, 'the acked file is purged')
        check(r[0] == newest, 'oldest %s after the purge, expected %s' % (r[0], newest))
        wait_for('the WARNING of the purged binlog', lambda: 'the source has purged binlog %s, which holds '
                 'the acknowledged position' % acked in pg_log_text() or None, 30, 0.2)

        # applying what was read: the durable position then follows the
        # source's rotation into the binlog it still has, with nothing to ack
        src.sync(m)
        check(q(conn, 'SELECT id, v FROM %s.t ORDER BY id' % DB) == [(1, 1), (2, 2)], 'rows of t')
        r = wait_for('the acked position to follow the rotation into %s' % newest, lambda: (
            lambda x: x if x[3] == newest and x[1] == 0 else None)(retention(conn, name)), 30, 0.2)
        log('after applying: binlogs %s, status %s' % (binlogs(m), r))
        st = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s', (name,))
        check(st == [(newest, 4)], 'source_state after the rotation: %s, expected [(%r, 4)]' % (st, newest))
        acked = newest

        # a stopped source whose position is purged: the start fails, saying so
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        mx(m, 'INSERT INTO %s.t VALUES (3, 3)' % DB)
        mx(m, 'FLUSH BINARY LOGS')
        # MariaDB keeps a binlog a dump thread still reads: the stopped
        # worker's connection goes first
        wait_for('the binlog dump threads to end', lambda: mx(
            m, "SELECT count(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")[0][0] == 0,
            30, 0.2)
        newest = binlogs(m)[-1]

        def purged():
            # ... and one its binlog checkpoint has not passed yet
            mx(m, "PURGE BINARY LOGS TO '%s'" % newest)
            return binlogs(m) == [newest] or None
        wait_for('PURGE BINARY LOGS TO %s' % newest, purged, 30, 0.3)
        q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
        err = wait_for('the start to fail on the purged position', lambda: (
            lambda e: e if e and '1236' in e else None)((status(conn, name) or {}).get('last_error')), 30, 0.2)
        log('start at a purged position: %s' % short(err, 400))
        check(acked in err or 'purged' in err or 'not find' in err, 'error: %s' % short(err, 400))
        check(q(conn, 'SELECT count(*) FROM %s.t' % DB) == [(2,)], 'a row was applied past the purge')
        # the way out the error names: reset(), a new snapshot, start
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        q(conn, 'SELECT binlog_fdw.reset(%s)', (name,))
        src.snapshot(['%s.t' % DB], truncate=True)
        src.start()
        mx(m, 'INSERT INTO %s.t VALUES (4, 4)' % DB)
        src.sync(m)
        got = q(conn, 'SELECT id, v FROM %s.t ORDER BY id' % DB)
        check(got == [tuple(r) for r in mx(m, 'SELECT id, v FROM %s.t ORDER BY id' % DB)] and len(got) == 4,
              'rows after reset(), snapshot() and start(): %s' % got)
    finally:
        q(conn, 'ALTER SYSTEM RESET binlog_fdw.retention_check_interval')
        q(conn, 'SELECT pg_reload_conf()')
        if src:
            src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
        destroy_instance('ac-ret')
