"""
test/apply_cases/cases_load.py -- initial loads on a source that is already
streaming (issue 11): sync_table() and snapshot() while changes of the
tables they copy are in the ring and not applied yet, and while the
continuous apply worker applies; afterwards every table equals MariaDB's,
with no duplicate (a keyless table would take duplicates without an
error, a keyed one would stop on a duplicate key).
"""

import random
import threading
import time

from harness import (Source, check, log, mdb, mdb_fresh, mx, pg, q, q1, short, status, wait_for)

DB = 'blf_ac_load'


def pg_rows(conn, table, cols):
    return sorted(q(conn, 'SELECT %s FROM %s.%s' % (cols, DB, table)), key=repr)


def mdb_rows(m, table, cols):
    return sorted([tuple(r) for r in mx(m, 'SELECT %s FROM %s.%s' % (cols, DB, table))], key=repr)


TABLES = {'o': 'id, v', 'k': 'id, v', 'nk': 'a, b'}


def same_all(conn, m, what, tables=TABLES):
    for t, cols in tables.items():
        got, exp = pg_rows(conn, t, cols), mdb_rows(m, t, cols)
        check(got == exp, '%s: %s.%s has %d rows in PostgreSQL, %d in MariaDB; PostgreSQL %s, MariaDB %s'
              % (what, DB, t, len(got), len(exp), short(got, 400), short(exp, 400)))


class Writes:
    """Inserts, updates and deletes on o, k, nk (keyless, with identical rows)."""

    def __init__(self, m, seed):
        self.m = m
        self.rnd = random.Random(seed)
        self.next_id = 1000

    def one(self):
        m, r = self.m, self.rnd
        t = r.choice(['o', 'k', 'nk'])
        op = r.random()
        if t in ('o', 'k'):
            if op < 0.5:
                self.next_id += 1
                mx(m, 'INSERT INTO %s.%s (id, v) VALUES (%d, %d)' % (DB, t, self.next_id, r.randint(0, 99)))
            elif op < 0.8:
                mx(m, 'UPDATE %s.%s SET v = v + 1 WHERE id %% 7 = %d' % (DB, t, r.randint(0, 6)))
            else:
                mx(m, 'DELETE FROM %s.%s WHERE id %% 11 = %d LIMIT 1' % (DB, t, r.randint(0, 10)))
        else:
            a = r.randint(0, 9)
            if op < 0.5:
                mx(m, "INSERT INTO %s.nk (a, b) VALUES (%d, 'x'), (%d, 'x')" % (DB, a, a))
            elif op < 0.8:
                mx(m, "UPDATE %s.nk SET b = CONCAT(b, 'y') WHERE a = %d LIMIT 1" % (DB, a))
            else:
                mx(m, 'DELETE FROM %s.nk WHERE a = %d LIMIT 1' % (DB, a))

    def many(self, n):
        for _ in range(n):
            self.one()


def create_tables(m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE %s.o (id INT PRIMARY KEY, v INT)' % DB)
    mx(m, 'CREATE TABLE %s.k (id INT PRIMARY KEY, v INT)' % DB)
    mx(m, 'CREATE TABLE %s.nk (a INT, b VARCHAR(200))' % DB)
    for t in ('o', 'k'):
        mx(m, 'INSERT INTO %s.%s VALUES %s' % (DB, t, ', '.join('(%d, %d)' % (i, i) for i in range(1, 101))))
    mx(m, 'INSERT INTO %s.nk VALUES %s' % (DB, ', '.join("(%d, 'x')" % (i % 10) for i in range(100))))


def case_sync_running(conn, m):
    """sync_table() and snapshot() with changes of their tables in the ring."""
    create_tables(m)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_load', r'^blf_ac_load\.', keyless='full_row')
    try:
        src.snapshot(['%s.o' % DB])
        src.start()
        w = Writes(m, 1101)
        w.many(60)
        # o's changes are applied, k and nk's wait in the ring (no target yet)
        src.wait_read(m)
        r = q(conn, 'SELECT binlog_fdw.sync_table(%s, %s)', ('ac_load', '%s.k' % DB))
        n = mx(m, 'SELECT count(*) FROM %s.k' % DB)[0][0]
        check(r[0][0] == n, 'sync_table() copied %s rows of k, MariaDB has %s' % (r[0][0], n))
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s)', ('ac_load', '%s.nk' % DB))
        w.many(40)
        src.sync(m)
        same_all(conn, m, 'sync_table() with buffered changes')

        # every table again, truncated, with changes of all of them in the ring
        w.many(60)
        src.wait_read(m)
        r = src.snapshot(['%s.%s' % (DB, t) for t in TABLES], truncate=True)
        check(len(r) == 3, 'snapshot() returned %s' % (r,))
        w.many(40)
        src.sync(m)
        same_all(conn, m, 'snapshot() of every table with buffered changes')

        # and once more while part of the ring is applied and part not
        w.many(30)
        src.wait_read(m)
        src.apply(max_changes=5)
        w.many(10)
        src.wait_read(m)
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s, true)', ('ac_load', '%s.nk' % DB))
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s, true)', ('ac_load', '%s.k' % DB))
        w.many(20)
        src.sync(m)
        same_all(conn, m, 'sync_table(truncate) after a partial apply')

        # apply() called while a load of a table whose changes it holds runs
        apply_during_load(conn, m, src, w)
        same_all(conn, m, 'apply() during sync_table(truncate)')

        # DDL in the ring before the loads: in the copies, not applied again
        # (ADD COLUMN would fail, TRUNCATE would empty the copy)
        w.many(10)
        mx(m, 'ALTER TABLE %s.k ADD COLUMN c INT NOT NULL DEFAULT 5' % DB)
        mx(m, 'TRUNCATE TABLE %s.nk' % DB)
        w.many(30)
        src.wait_read(m)
        # k is created again (with c), nk is truncated and loaded
        q(conn, 'DROP TABLE %s.k' % DB)
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s)', ('ac_load', '%s.k' % DB))
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s, true)', ('ac_load', '%s.nk' % DB))
        w.many(30)
        mx(m, 'UPDATE %s.k SET c = c + id %% 3' % DB)
        src.sync(m)
        check(q1(conn, 'SELECT count(*) FROM %s.nk' % DB) > 0, 'the copy of nk is empty')
        same_all(conn, m, 'DDL before the loads', dict(TABLES, k='id, v, c'))
    finally:
        src.drop()


def waiting_on_lock(conn, pid):
    return q1(conn, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,))


def apply_during_load(conn, m, src, w):
    """
    A load held up before it commits (its mapping write waits for a lock of
    ours), then apply() of changes that the copy holds: apply must wait for
    the load and skip them, not apply them with the old position.
    """
    w.many(40)
    src.wait_read(m)
    hold = pg()
    loader, applier = pg(), pg()
    results = {}
    try:
        hold.autocommit = False
        q(hold, 'LOCK TABLE binlog_fdw.table_mapping IN EXCLUSIVE MODE')
        lpid = q1(loader, 'SELECT pg_backend_pid()')
        apid = q1(applier, 'SELECT pg_backend_pid()')

        def run(name, c, sql, args):
            try:
                results[name] = q(c, sql, args)
            except Exception as e:                  # noqa: BLE001
                results[name] = e

        tl = threading.Thread(target=run, args=('load', loader, 'SELECT binlog_fdw.sync_table(%s, %s, true)',
                                                ('ac_load', '%s.nk' % DB)))
        tl.start()
        wait_for('sync_table() to wait before its commit', lambda: waiting_on_lock(conn, lpid), 30, 0.05)
        ta = threading.Thread(target=run, args=('apply', applier, 'SELECT rows FROM binlog_fdw.apply(%s)',
                                                ('ac_load',)))
        ta.start()
        wait_for('apply() to wait', lambda: waiting_on_lock(conn, apid) or not ta.is_alive(), 30, 0.05)
        hold.commit()
        tl.join(60)
        ta.join(60)
        for k in ('load', 'apply'):
            check(not isinstance(results.get(k), Exception), '%s failed: %s' % (k, results.get(k)))
        log('apply during the load applied %s rows' % results['apply'][0][0])
        w.many(10)
        src.sync(m)
    finally:
        for c in (hold, loader, applier):
            c.close()


def case_sync_continuous(conn, m):
    """sync_table() while the continuous apply worker applies a writer's changes."""
    create_tables(m)
    # copies that take a while: apply rounds begin while they run
    mx(m, 'INSERT INTO %s.k SELECT seq, seq FROM %s.seq_100000_to_199999' % (DB, DB))
    mx(m, "INSERT INTO %s.nk SELECT seq %% 10, 'filler' FROM %s.seq_1_to_100000" % (DB, DB))
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_loadc', r'^blf_ac_load\.', keyless='full_row', unmapped='skip',
                 continuous='true')
    halt = threading.Event()
    errors = []

    def writer():
        wm = mdb()
        w = Writes(wm, 2202)
        try:
            while not halt.is_set():
                w.one()
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            wm.close()

    th = threading.Thread(target=writer, daemon=True)
    try:
        src.snapshot(['%s.o' % DB])
        src.start()
        wait_for('the apply worker of ac_loadc', lambda: (status(conn, 'ac_loadc') or {}).get('apply_pid'), 30)
        th.start()
        time.sleep(0.5)
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s)', ('ac_loadc', '%s.k' % DB))
        q(conn, 'SELECT binlog_fdw.sync_table(%s, %s)', ('ac_loadc', '%s.nk' % DB))
        for i in range(4):
            time.sleep(0.3)
            r = src.snapshot(['%s.%s' % (DB, t) for t in ('nk', 'k', 'o')], truncate=True)
            check(len(r) == 3, 'snapshot() returned %s' % (r,))
            q(conn, 'SELECT binlog_fdw.sync_table(%s, %s, true)',
              ('ac_loadc', '%s.%s' % (DB, 'nk' if i % 2 else 'k')))
        time.sleep(0.3)
        halt.set()
        th.join(30)
        check(not errors, 'the writer failed: %s' % errors)
        mx(m, 'INSERT INTO %s.o VALUES (999999, 0)' % DB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn, 'SELECT count(*) FROM %s.o WHERE id = 999999' % DB), 60, 0.1)
        st = status(conn, 'ac_loadc')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        same_all(conn, m, 'sync_table() and snapshot() under continuous apply')
        log('continuous: %s transactions, %s rows applied' % (st.get('applied_transactions'),
                                                           st.get('applied_rows')))
    finally:
        halt.set()
        src.drop()


def case_snapshot_gtid(conn, m):
    """
    The GTID state snapshot() records for a source that never streamed is
    the state at the copy's own position (BINLOG_GTID_POS), not one read
    a moment later, while a writer commits as fast as it can: a state ahead
    of the position would make a GTID start skip the transactions between.
    """
    create_tables(m)
    halt = threading.Event()
    errors = []

    def writer():
        wm = mdb()
        n = 0
        try:
            while not halt.is_set():
                n += 1
                mx(wm, 'UPDATE %s.o SET v = v + 1 WHERE id = %d' % (DB, n % 100 + 1))
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            wm.close()

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    try:
        for i in range(20):
            q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
            src = Source(conn, 'ac_loadg', r'^blf_ac_load\.')
            try:
                src.snapshot(['%s.o' % DB])
                f, p, g = q(conn, 'SELECT file, pos, gtid_state FROM binlog_fdw.source_state '
                                  'WHERE server_name = %s', ('ac_loadg',))[0]
                want = mx(m, 'SELECT BINLOG_GTID_POS(%s, %s)', (f, p))[0][0]
                check(g == want, 'snapshot %d: the recorded GTID state %s is not the one at %s:%s (%s)'
                      % (i, g, f, p, want))
            finally:
                src.drop()
        check(not errors, 'the writer failed: %s' % errors)
    finally:
        halt.set()
        th.join(30)
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
