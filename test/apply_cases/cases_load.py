"""
test/apply_cases/cases_load.py -- initial loads on a source that is already
streaming (issue 11): sync_table() and snapshot() while changes of the
tables they copy are in the ring and not applied yet, and while the
continuous apply worker applies; afterwards every table equals MariaDB's,
with no duplicate (a keyless table would take duplicates without an
error, a keyed one would stop on a duplicate key).
"""

import os
import random
import signal
import threading
import time

import pymysql

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


# ---------------------------------------------------------------------------
# chunked loads: CALL binlog_fdw.load()

def chunks(conn, server, table):
    return q1(conn, 'SELECT cardinality(load_key_hi) FROM binlog_fdw.table_mapping '
                    'WHERE server_name = %s AND source_schema = %s AND source_table = %s',
              (server, DB, table)) or 0


class KeyMoves(Writes):
    """Writes plus updates that move rows of k across chunks (up, down)."""

    def one(self):
        r = self.rnd
        if r.random() < 0.15:
            x = r.randint(1, 30000)
            if r.random() < 0.5:
                mx(self.m, 'UPDATE %s.k SET id = id + 1000000 WHERE id = %d' % (DB, x))
            else:
                mx(self.m, 'UPDATE %s.k SET id = -id WHERE id = %d' % (DB, x))
            return
        Writes.one(self)


def loader_mysql_connections(m):
    return [r[0] for r in mx(m, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s "
                                "AND COMMAND <> 'Binlog Dump' AND ID <> CONNECTION_ID()", ('repl',))]


def case_load_chunked(conn, m):
    """
    load() in chunks of 1000 rows while a writer changes the tables (rows
    moving between chunks too) and the continuous apply worker applies;
    faults between chunks: the loader's MySQL connection killed, the
    loading backend killed with -9 (PostgreSQL restarts); load() called
    again from two sessions at once goes on at the next chunk; in the end
    every table equals MariaDB's and load_status shows the chunks.
    """
    create_tables(m)
    mx(m, 'INSERT INTO %s.k SELECT seq, seq FROM %s.seq_101_to_30000' % (DB, DB))
    mx(m, "INSERT INTO %s.nk SELECT seq %% 10, 'filler' FROM %s.seq_1_to_3000" % (DB, DB))
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_loadk', r'^blf_ac_load\.', keyless='full_row', unmapped='skip',
                 continuous='true')
    halt = threading.Event()
    errors = []
    tables = ['%s.%s' % (DB, t) for t in ('k', 'nk', 'o')]

    def writer():
        wm = mdb()
        w = KeyMoves(wm, 3303)
        w.next_id = 2000000
        try:
            while not halt.is_set():
                w.one()
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            wm.close()

    def call_load(c):
        q(c, 'CALL binlog_fdw.load(%s, %s, 1000, parallel => 1)', ('ac_loadk', tables))

    th = threading.Thread(target=writer, daemon=True)
    try:
        src.start()
        wait_for('the apply worker of ac_loadk', lambda: (status(conn, 'ac_loadk') or {}).get('apply_pid'), 30)
        th.start()

        # fault 1: the loader's MySQL connection killed, whenever it has one
        loader = pg()
        res = {}

        def run():
            try:
                call_load(loader)
            except Exception as e:                  # noqa: BLE001
                res['error'] = e
        tl = threading.Thread(target=run)
        tl.start()
        wait_for('3 chunks of k', lambda: chunks(conn, 'ac_loadk', 'k') >= 3, 60, 0.02)
        killed = 0
        while tl.is_alive():
            for i in loader_mysql_connections(m):
                try:
                    mx(m, 'KILL %d' % i)
                    killed += 1
                except Exception:                   # noqa: BLE001
                    pass                            # gone meanwhile
            time.sleep(0.005)
        tl.join(60)
        done_before = chunks(conn, 'ac_loadk', 'k')
        check('error' in res, 'load() ended without an error while its connections were killed (%d)' % killed)
        log('load() stopped after %d kills, %d chunks of k done: %s'
            % (killed, done_before, short(str(res['error']).strip(), 300)))
        loader.close()

        # fault 2: kill -9 of the loading backend
        res.clear()
        loader = pg()
        tl = threading.Thread(target=run)
        tl.start()
        wait_for('a chunk more of k', lambda: chunks(conn, 'ac_loadk', 'k') >= done_before + 1, 60, 0.02)
        lpid = q1(conn, "SELECT pid FROM pg_stat_activity WHERE query LIKE 'CALL binlog_fdw.load%%' "
                        "AND pid <> pg_backend_pid()")
        check(lpid, 'no backend runs load()')
        os.kill(lpid, signal.SIGKILL)
        tl.join(60)
        try:
            loader.close()
        except Exception:                           # noqa: BLE001
            pass
        # the postmaster restarts every backend
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn2 = pg()
        wait_for('ac_loadk streaming again',
                 lambda: (status(conn2, 'ac_loadk') or {}).get('state') == 'streaming', 60, 0.2)
        log('killed load() backend %d after %d chunks of k' % (lpid, chunks(conn2, 'ac_loadk', 'k')))

        # again, from two sessions at once: they go on at the next chunk and
        # share the rest (each chunk once), to the end
        res2 = []

        def again():
            c = pg()
            try:
                call_load(c)
            except Exception as e:                  # noqa: BLE001
                res2.append(e)
            finally:
                c.close()
        ts = [threading.Thread(target=again) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        check(not res2, 'load() from two sessions: %s' % res2)
        n = chunks(conn2, 'ac_loadk', 'k')
        check(n >= 30, 'k was loaded in %d chunks' % n)
        log('k loaded in %d chunks' % n)
        time.sleep(0.5)
        halt.set()
        th.join(30)
        check(not errors, 'the writer failed: %s' % errors)
        mx(m, 'INSERT INTO %s.o VALUES (999999, 0)' % DB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn2, 'SELECT count(*) FROM %s.o WHERE id = 999999' % DB), 60, 0.1)
        st = status(conn2, 'ac_loadk')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        same_all(conn2, m, 'load() in chunks with faults')
        moved = q1(conn2, 'SELECT count(*) FROM %s.k WHERE id < 0 OR id BETWEEN 1000000 AND 1999999' % DB)
        check(moved > 0, 'no row moved between chunks')
        log('%d rows of k moved between chunks' % moved)
        ls = q(conn2, 'SELECT chunks, keys_to, complete, last_position FROM binlog_fdw.load_status '
                      'WHERE server = %s AND source = %s', ('ac_loadk', '%s.k' % DB))
        check(len(ls) == 1 and ls[0][0] == n and ls[0][2] is True and ls[0][3].startswith('mysql-bin.'),
              'load_status of k: %s (%d chunks)' % (ls, n))
        check(int(ls[0][1]) >= 28000, 'load_status of k: keys up to %s' % ls[0][1])
        ls = q(conn2, 'SELECT chunks, keys_to, complete FROM binlog_fdw.load_status '
                      'WHERE server = %s AND source = %s', ('ac_loadk', '%s.nk' % DB))
        check(ls == [(1, None, True)], 'load_status of the keyless nk: %s' % ls)
        # loaded: a second call does nothing
        call_load(conn2)
        check(chunks(conn2, 'ac_loadk', 'k') == n, 'load() of a loaded table copied again')
        conn2.close()
    finally:
        halt.set()
        src.conn = pg()
        src.drop()
        src.conn.close()


def com_counter(m, name):
    return int(mx(m, "SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])


def case_load_table_locks(conn, m):
    """
    load() with the server option snapshot_lock 'tables' on MariaDB: each
    chunk's snapshot takes its position as on MySQL (LOCK TABLES ... READ
    of its table on a second connection around START TRANSACTION WITH
    CONSISTENT SNAPSHOT and SHOW MASTER STATUS, not MariaDB's
    binlog_snapshot_file), while writers commit transactions that span two
    tables and keep their metadata locks for a while; two loaders, chunks
    of 1000 keys, the continuous apply worker applying; then snapshot() of
    the three tables again (truncate, one LOCK TABLES of all three) while
    the writers go on: every table ends equal to MariaDB's, and MariaDB
    counted the locks (Com_lock_tables), no FLUSH TABLES WITH READ LOCK.
    """
    create_tables(m)
    mx(m, 'INSERT INTO %s.k SELECT seq, seq FROM %s.seq_101_to_20000' % (DB, DB))
    mx(m, "INSERT INTO %s.nk SELECT seq %% 10, 'filler' FROM %s.seq_1_to_2000" % (DB, DB))
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_loadl', r'^blf_ac_load\.', keyless='full_row', unmapped='skip',
                 continuous='true', snapshot_lock='tables', snapshot_lock_timeout='20')
    halt = threading.Event()
    errors = []
    tables = ['%s.%s' % (DB, t) for t in ('k', 'nk', 'o')]

    def writer(seed):
        wm = mdb()
        w = KeyMoves(wm, seed)
        w.next_id = 2000000 + seed * 100000
        r = random.Random(seed)
        try:
            while not halt.is_set():
                try:
                    w.one()
                    # a transaction over k and o holding its locks a while
                    mx(wm, 'BEGIN')
                    x = r.randint(1, 20000)
                    mx(wm, 'UPDATE %s.k SET v = v + 1 WHERE id = %d' % (DB, x))
                    time.sleep(0.01)
                    mx(wm, 'UPDATE %s.o SET v = v + 1 WHERE id = %d' % (DB, x % 100 + 1))
                    mx(wm, 'COMMIT')
                except pymysql.err.OperationalError as e:
                    # the two writers' row locks: InnoDB rolled one back
                    if e.args[0] != 1213:
                        raise
                    mx(wm, 'ROLLBACK')
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            wm.close()

    locks0 = com_counter(m, 'Com_lock_tables')
    flush0 = com_counter(m, 'Com_flush')
    ths = [threading.Thread(target=writer, args=(s,), daemon=True) for s in (5501, 5502)]
    try:
        src.start()
        wait_for('the apply worker of ac_loadl', lambda: (status(conn, 'ac_loadl') or {}).get('apply_pid'), 30)
        for t in ths:
            t.start()
        t0 = time.monotonic()
        q(conn, 'CALL binlog_fdw.load(%s, %s, 1000, parallel => 2)', ('ac_loadl', tables))
        elapsed = time.monotonic() - t0
        n = chunks(conn, 'ac_loadl', 'k')
        check(n >= 15, 'k was loaded in %d chunks' % n)
        # snapshot() of the three at once, again, while the writers go on:
        # one LOCK TABLES of all three
        locks1 = com_counter(m, 'Com_lock_tables')
        got = src.snapshot(tables, truncate=True)
        check(sorted(r[0] for r in got) == sorted(tables), 'snapshot() returned %s' % (got,))
        check(com_counter(m, 'Com_lock_tables') - locks1 == 1,
              'snapshot() of 3 tables locked %d times' % (com_counter(m, 'Com_lock_tables') - locks1))
        time.sleep(0.5)
        halt.set()
        for t in ths:
            t.join(30)
        check(not errors, 'a writer failed: %s' % errors)
        locks = com_counter(m, 'Com_lock_tables') - locks0
        flushes = com_counter(m, 'Com_flush') - flush0
        log('k in %d chunks in %.1fs; LOCK TABLES %d times, FLUSH %d times' % (n, elapsed, locks, flushes))
        check(locks >= n + 3, 'MariaDB counted %d LOCK TABLES for %d chunks of k, nk, o and a snapshot()' % (locks, n))
        check(flushes == 0, 'MariaDB counted %d FLUSH statements during the load' % flushes)
        mx(m, 'INSERT INTO %s.o VALUES (999999, 0)' % DB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn, 'SELECT count(*) FROM %s.o WHERE id = 999999' % DB), 60, 0.1)
        st = status(conn, 'ac_loadl')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        same_all(conn, m, 'load() with snapshot_lock tables')
        moved = q1(conn, 'SELECT count(*) FROM %s.k WHERE id < 0 OR id >= 1000000' % DB)
        log('%d rows of k moved between chunks' % moved)
    finally:
        halt.set()
        for t in ths:
            if t.is_alive():
                t.join(30)
        src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
