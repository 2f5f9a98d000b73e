"""
test/apply_cases/harness.py -- helpers of the apply-surface tests
(test/apply_cases/apply_cases.py): the suite's PostgreSQL database and
MariaDB databases, sources that are snapshotted, started, applied until they
caught up with MariaDB and dropped, errors checked field by field, canonical
dumps of tables on both sides, and the case protocol ("ok - apply/NAME").

The connection helpers, waits and the all-types table come from the
streaming tests (test/streaming/common.py and values.py).
"""

import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'streaming'))

import psycopg2                                     # noqa: E402
import psycopg2.extensions                          # noqa: E402

sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from logcheck import mark_case                      # noqa: E402

from common import (Deadline, Fail, PGHOST, PGPORT, PGUSER, check, create_source,  # noqa: E402,F401
                    log, mdb, mx, q, q1, short, status, wait_for, wait_streaming)

PGDB = 'blf_apply'              # the suite's PostgreSQL database
MDB_PREFIX = 'blf_ac_'          # the suite's MariaDB databases start with this
KEEP = os.environ.get('BLF_APPLY_KEEP') == '1'


def pg(db=PGDB, user=None):
    c = psycopg2.connect(host=PGHOST, port=PGPORT, user=user or PGUSER, dbname=db,
                         application_name='85-apply-cases', connect_timeout=10)
    c.autocommit = True
    with c.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'; SET extra_float_digits = 3")
    return c


# ---------------------------------------------------------------------------
# Errors

class Error:
    """A PostgreSQL error's fields."""

    def __init__(self, e):
        d = e.diag
        self.sqlstate = d.sqlstate
        self.message = d.message_primary or ''
        self.detail = d.message_detail or ''
        self.hint = d.message_hint or ''
        self.context = d.context or ''

    def __str__(self):
        return 'ERROR %s: %s (detail: %s; hint: %s; context: %s)' % (
            self.sqlstate, self.message, self.detail, self.hint, self.context)


def expect_error(conn, sql, args=None, what=None, sqlstate=None, message=None, detail=None,
                 hint=None, context=None):
    """Run sql; it must fail with an error whose fields contain the given
    strings (each argument: a string or a list of strings).  Returns Error."""
    what = what or short(sql, 80)
    try:
        q(conn, sql, args)
    except psycopg2.Error as e:
        if not conn.autocommit:
            conn.rollback()
        err = Error(e)
        if err.sqlstate is None:
            raise
        log('%s -> %s' % (what, short(str(err), 600)))
        if sqlstate:
            check(err.sqlstate == sqlstate, '%s: SQLSTATE %s, expected %s (%s)' % (
                what, err.sqlstate, sqlstate, short(str(err), 400)))
        for field, want in (('message', message), ('detail', detail), ('hint', hint),
                            ('context', context)):
            if want is None:
                continue
            for w in (want if isinstance(want, list) else [want]):
                check(w in getattr(err, field), '%s: expected %r in the error %s, got %s' % (
                    what, w, field, short(str(err), 600)))
        return err
    raise Fail('%s: no error (expected %s)' % (what, message or sqlstate))


# ---------------------------------------------------------------------------
# Sources

SERVER_IDS = iter(list(range(9851, 9900)) + list(range(29851, 29990)))


def gtid_seq(gtid, domain='0'):
    """The sequence number of domain's GTID in a MariaDB GTID list."""
    for g in (gtid or '').split(','):
        parts = g.strip().split('-')
        if len(parts) == 3 and parts[0] == domain:
            return int(parts[2])
    return 0


class Source:
    """A binlog_fdw source (foreign server) on the suite's MariaDB."""

    def __init__(self, conn, name, include, **options):
        self.conn = conn
        self.name = name
        q(conn, 'DROP SERVER IF EXISTS %s CASCADE' % name)
        create_source(conn, name, next(SERVER_IDS), include=include,
                      extra={k: str(v) for k, v in options.items()})

    def snapshot(self, tables, truncate=False):
        return q(self.conn, 'SELECT source, target, rows, created FROM binlog_fdw.snapshot(%s, %s, %s)',
                 (self.name, tables, truncate))

    def start(self):
        # the worker starts when start()'s transaction commits
        q(self.conn, 'SELECT binlog_fdw.start(%s)', (self.name,))
        return wait_streaming(self.conn, self.name)

    def apply(self, conn=None, max_changes=100000, max_seconds=10, wait=0.0):
        with (conn or self.conn).cursor() as cur:
            cur.execute('SELECT * FROM binlog_fdw.apply(%s, %s, %s, %s)',
                        (self.name, max_changes, max_seconds, wait))
            return dict(zip([d[0] for d in cur.description], cur.fetchone()))

    def wait_read(self, m, timeout=20):
        """Wait until the worker read the binlog up to MariaDB's current end."""
        r = mx(m, 'SHOW MASTER STATUS')
        f, p = r[0][0], int(r[0][1])

        def done():
            s = status(self.conn, self.name)
            return s and s['read_file'] is not None and (s['read_file'], s['read_pos']) >= (f, p)
        wait_for('source %s to read up to %s:%d' % (self.name, f, p), done, timeout, 0.05)

    def apply_error(self, m, what, conn=None, **expect):
        """Once the worker has read everything: apply() must fail as expect says."""
        self.wait_read(m)
        return expect_error(conn or self.conn, 'SELECT * FROM binlog_fdw.apply(%s)', (self.name,), what, **expect)

    def applied_gtid(self):
        return q1(self.conn, 'SELECT gtid FROM binlog_fdw.source_state WHERE server_name = %s',
                  (self.name,))

    def sync(self, m, conn=None, timeout=30):
        """apply() until every transaction m committed is applied; returns
        the summed apply results."""
        target = gtid_seq(mx(m, 'SELECT @@last_gtid')[0][0])
        total = {'transactions': 0, 'rows': 0, 'ddl': 0, 'calls': 0}
        d = Deadline(timeout)
        while gtid_seq(self.applied_gtid()) < target:
            if d.expired():
                raise Fail('source %s: applied up to GTID %s, MariaDB is at 0-?-%d after %ss (status: %s)'
                           % (self.name, self.applied_gtid(), target, timeout,
                              short(status(self.conn, self.name), 500)))
            r = self.apply(conn, wait=0.5)
            total['calls'] += 1
            for k in ('transactions', 'rows', 'ddl'):
                total[k] += r[k] or 0
        return total

    def drop(self):
        for sql in ('SELECT binlog_fdw.stop(%s)', 'SELECT binlog_fdw.reset(%s)'):
            try:
                q(self.conn, sql, (self.name,))
            except psycopg2.Error as e:
                log('cleanup of %s: %s' % (self.name, str(e).strip()))
        q(self.conn, 'DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (self.name,))
        q(self.conn, 'DROP SERVER IF EXISTS %s CASCADE' % self.name)


def drop_database(admin, db, timeout=15):
    """DROP DATABASE db WITH (FORCE), once nothing is connected to it.

    A source stopped just before may still have its worker connected for a
    moment; FORCE would terminate it and the server log would hold a FATAL
    that no case asked for.  What is still connected after timeout seconds
    is logged and terminated by FORCE."""
    deadline = time.monotonic() + timeout
    left = []
    while time.monotonic() < deadline:
        left = q(admin, 'SELECT pid, backend_type, application_name FROM pg_stat_activity '
                        'WHERE datname = %s AND pid <> pg_backend_pid()', (db,))
        if not left:
            break
        time.sleep(0.2)
    if left:
        log('drop of database %s: still connected after %ds: %s' % (db, timeout, left))
    q(admin, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % db)


def mdb_fresh(m, db):
    """A new empty MariaDB database (dropped first)."""
    mx(m, 'DROP DATABASE IF EXISTS %s' % mq(db))
    mx(m, 'CREATE DATABASE %s' % mq(db))


def mq(name):
    """A MariaDB identifier, quoted."""
    return '`%s`' % name.replace('`', '``')


def pq(name):
    """A PostgreSQL identifier, quoted."""
    return '"%s"' % name.replace('"', '""')


def col_types(conn, schema, table):
    """{column: format_type} of a PostgreSQL table, NOT NULL as ' not null'."""
    rows = q(conn, 'SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull '
                   'FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid '
                   'JOIN pg_namespace n ON n.oid = c.relnamespace '
                   'WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped '
                   'ORDER BY a.attnum', (schema, table))
    return {r[0]: r[1] + (' not null' if r[2] else '') for r in rows}


def table_exists(conn, schema, table):
    return bool(q1(conn, 'SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace '
                         'WHERE n.nspname = %s AND c.relname = %s', (schema, table)))


# ---------------------------------------------------------------------------
# Cases

class Runner:
    def __init__(self, conn_box):
        self.failed = 0
        self.passed = 0
        self.conn_box = conn_box

    def run(self, name, fn):
        t0 = time.monotonic()
        log('---- %s' % name)
        # what the server logs from now on is this case's (test/lib/logcheck.py)
        try:
            with self.conn_box[0].cursor() as cur:
                mark_case(cur, 'apply/' + name)
        except psycopg2.Error as e:
            log('could not mark case %s in the server log: %s' % (name, e))
        try:
            fn()
        except Fail as e:
            self.failed += 1
            print('not ok - apply/%s: %s' % (name, short(str(e), 1500)), flush=True)
        except Exception as e:                      # noqa: BLE001
            self.failed += 1
            log(traceback.format_exc())
            print('not ok - apply/%s: %s: %s' % (name, type(e).__name__, short(str(e).strip(), 800)),
                  flush=True)
        else:
            self.passed += 1
            print('ok - apply/%s' % name, flush=True)
        log('%s: %.1fs' % (name, time.monotonic() - t0))
